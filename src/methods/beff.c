/* beff.c - b_eff, the effective bandwidth of Rabenseifner (Altix study §3.1): ring and
 * random patterns, 21 message lengths, 3 communication methods, every rank communicating. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "beff_catalogue.h"
#include "methods.h"
#include "patterns.h"

/* Bounds of the loop length chosen by nb_measure from --time-cap-ms. */
#define BEFF_MIN_LOOPLENGTH 1
#define BEFF_MAX_LOOPLENGTH 1000000L

/* MPI tags: a message to the next rank of the ring, and a message to the previous one. */
#define BEFF_TAG_TO_NEXT 11
#define BEFF_TAG_TO_PREV 12
#define BEFF_TAG_PINGPONG 13

/* Validation: bytes after every received message that must stay untouched. */
#define BEFF_GUARD_BYTES 64
#define BEFF_SENTINEL 0xa5

enum { METHOD_SENDRECV = 0, METHOD_ALLTOALLV = 1, METHOD_NONBLOCKING = 2, METHOD_COUNT = 3 };

static const char *const method_names[METHOD_COUNT] = {"sendrecv", "alltoallv", "nonblocking"};

/* Timed runs move through buffers of this many (L_max + 16)-byte slots, as the original b_eff
 * (its MAXSR): displacements stay below INT_MAX for L_max <= 256 MiB. */
#define BEFF_BUFFER_SLOTS 6

/* One exchange of a pattern: this rank's neighbours, the length and the method. */
typedef struct {
    MPI_Comm comm;
    int rank;
    int next, prev;
    int messages;              /* sr: 1 when next == prev, else 2 */
    int method;
    int length;                /* L in bytes */
    size_t slot;               /* validation: offset of the second message (= L_max) */
    int cycle;                 /* timed runs: 1 = messages move through the buffers */
    size_t buffer_bytes;       /* bytes of each buffer */
    size_t base;               /* next free offset when cycling */
    unsigned char *send, *recv;
    int *send_counts, *send_displs, *recv_counts, *recv_displs; /* alltoallv, P each */
    int ranks;
} beff_state;

/* Sets the alltoallv counts for the current neighbours and length. */
static void set_alltoallv(beff_state *s)
{
    for (int r = 0; r < s->ranks; r++)
        s->send_counts[r] = s->send_displs[r] = s->recv_counts[r] = s->recv_displs[r] = 0;
    s->send_counts[s->next] = s->length;
    s->recv_counts[s->prev] = s->length;
    if (s->messages == 2) {
        s->send_counts[s->prev] = s->length;
        s->send_displs[s->prev] = (int)s->slot;
        s->recv_counts[s->next] = s->length;
        s->recv_displs[s->next] = (int)s->slot;
    }
}

/* Where the next message sits in the send and receive buffers. Timed runs move through
 * buffers of BEFF_BUFFER_SLOTS x (L_max + 16) bytes, each message at the next 8-byte aligned
 * offset, wrapping around, as the original b_eff program does: consecutive messages do not
 * reuse the same (cached) memory, so large messages are not measured cache-hot. Validation uses
 * fixed slots (0 and L_max) so that it can check the bytes around each message. */
static size_t next_offset(beff_state *s, int which)
{
    if (!s->cycle)
        return which == 0 ? 0 : s->slot;
    size_t step = ((size_t)s->length + 7) / 8 * 8;
    if (step == 0)
        step = 8;
    if (s->base + step > s->buffer_bytes)
        s->base = 0;
    size_t offset = s->base;
    s->base += step;
    return offset;
}

/* The message to next is in send slot 0, the one to prev in send slot 1; the message from prev
 * arrives in receive slot 0, the one from next in receive slot 1. */
static void exchange(beff_state *s)
{
    int L = s->length;
    size_t first = next_offset(s, 0);
    size_t second = s->messages == 2 ? next_offset(s, 1) : first;
    unsigned char *send1 = s->send + first, *recv1 = s->recv + first;
    unsigned char *send2 = s->send + second, *recv2 = s->recv + second;
    switch (s->method) {
    case METHOD_SENDRECV:
        MPI_Sendrecv(send1, L, MPI_BYTE, s->next, BEFF_TAG_TO_NEXT, recv1, L, MPI_BYTE,
                     s->prev, BEFF_TAG_TO_NEXT, s->comm, MPI_STATUS_IGNORE);
        if (s->messages == 2)
            MPI_Sendrecv(send2, L, MPI_BYTE, s->prev, BEFF_TAG_TO_PREV, recv2, L, MPI_BYTE,
                         s->next, BEFF_TAG_TO_PREV, s->comm, MPI_STATUS_IGNORE);
        break;
    case METHOD_ALLTOALLV:
        /* counts are set per pattern and length (set_alltoallv), displacements per call */
        s->send_displs[s->next] = (int)first;
        s->recv_displs[s->prev] = (int)first;
        if (s->messages == 2) {
            s->send_displs[s->prev] = (int)second;
            s->recv_displs[s->next] = (int)second;
        }
        MPI_Alltoallv(s->send, s->send_counts, s->send_displs, MPI_BYTE, s->recv,
                      s->recv_counts, s->recv_displs, MPI_BYTE, s->comm);
        break;
    default: {
        MPI_Request requests[4];
        int n = 0;
        MPI_Irecv(recv1, L, MPI_BYTE, s->prev, BEFF_TAG_TO_NEXT, s->comm, &requests[n++]);
        if (s->messages == 2)
            MPI_Irecv(recv2, L, MPI_BYTE, s->next, BEFF_TAG_TO_PREV, s->comm, &requests[n++]);
        MPI_Isend(send1, L, MPI_BYTE, s->next, BEFF_TAG_TO_NEXT, s->comm, &requests[n++]);
        if (s->messages == 2)
            MPI_Isend(send2, L, MPI_BYTE, s->prev, BEFF_TAG_TO_PREV, s->comm, &requests[n++]);
        nb_waitall(n, requests);
        break;
    }
    }
}

/* The timed loop: looplength exchanges, timed by every rank for itself. */
NB_STEP_LOOP(beff_loop, beff_state, exchange)

/* Ping-pong between ranks 0 and 1; the other ranks return at once (and wait at the driver's
 * barrier). One iteration is one round trip. */
static double pingpong_loop(void *state, long iterations)
{
    beff_state *s = state;
    int L = s->length;
    double start = MPI_Wtime();
    if (s->rank == 0) {
        for (long i = 0; i < iterations; i++) {
            size_t offset = next_offset(s, 0);
            MPI_Send(s->send + offset, L, MPI_BYTE, 1, BEFF_TAG_PINGPONG, s->comm);
            MPI_Recv(s->recv + offset, L, MPI_BYTE, 1, BEFF_TAG_PINGPONG, s->comm,
                     MPI_STATUS_IGNORE);
        }
    } else if (s->rank == 1) {
        for (long i = 0; i < iterations; i++) {
            size_t offset = next_offset(s, 0);
            MPI_Recv(s->recv + offset, L, MPI_BYTE, 0, BEFF_TAG_PINGPONG, s->comm,
                     MPI_STATUS_IGNORE);
            MPI_Send(s->send + offset, L, MPI_BYTE, 0, BEFF_TAG_PINGPONG, s->comm);
        }
    }
    return MPI_Wtime() - start;
}

static void pattern_neighbours(const nb_context *ctx, int p, int rank, int *next, int *prev)
{
    if (p < NB_BEFF_RING_PATTERNS)
        nb_beff_ring(ctx->size, p, rank, next, prev);
    else
        nb_beff_random_ring(ctx->size, (uint64_t)ctx->options->seed, p - NB_BEFF_RING_PATTERNS,
                            rank, next, prev);
}

static void pattern_name(int p, char *text, size_t length)
{
    if (p < NB_BEFF_RING_PATTERNS)
        snprintf(text, length, "ring%d", p);
    else
        snprintf(text, length, "random%d", p - NB_BEFF_RING_PATTERNS);
}

/* Largest ring of pattern p and the most messages per rank in it (rank 0 only, no MPI). */
static void pattern_shape(const nb_context *ctx, int p, int *ring_size, int *messages)
{
    if (p >= NB_BEFF_RING_PATTERNS) {
        *ring_size = ctx->size;
        *messages = ctx->size == 2 ? 1 : 2;
        return;
    }
    int largest = 0;
    for (int r = 0; r < ctx->size; r++) {
        int next, prev;
        int size = nb_beff_ring(ctx->size, p, r, &next, &prev);
        if (size > largest)
            largest = size;
    }
    *ring_size = largest;
    *messages = largest == 2 ? 1 : 2;
}

/* logavg(logavg(rings), logavg(random)) of values[p * stride], p = 0 .. patterns-1. */
static double two_level_logavg(const double *values, size_t stride, int patterns, double *rings,
                               double *random)
{
    double *v = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)patterns, sizeof *v);
    for (int p = 0; p < patterns; p++)
        v[p] = values[(size_t)p * stride];
    double r = nb_logavg(v, NB_BEFF_RING_PATTERNS);
    double x = nb_logavg(v + NB_BEFF_RING_PATTERNS, (size_t)(patterns - NB_BEFF_RING_PATTERNS));
    free(v);
    if (rings != NULL)
        *rings = r;
    if (random != NULL)
        *random = x;
    double both[2] = {r, x};
    return nb_logavg(both, 2);
}


/* L_max: --lmax, or the memory per process (the smallest over the ranks) / 128. The same on
 * every rank. */
static size_t choose_lmax(const nb_context *ctx, size_t *memory, const char **source)
{
    unsigned long long mine = (unsigned long long)nb_memory_per_process(ctx->pair), least = 0;
    MPI_Allreduce(&mine, &least, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, ctx->pair);
    *memory = (size_t)least;
    const beff_settings *bs = ctx->options->settings;
    if (bs->lmax > 0) {
        *source = "option";
        return bs->lmax;
    }
    *source = "memory";
    size_t lmax = (size_t)least / BEFF_MEMORY_DIVISOR;
    if (lmax > BEFF_LMAX_CAP)
        lmax = BEFF_LMAX_CAP;
    if (lmax < BEFF_LMAX_FLOOR)
        lmax = BEFF_LMAX_FLOOR;
    return lmax;
}

static void set_pattern(beff_state *s, const nb_context *ctx, int p)
{
    pattern_neighbours(ctx, p, ctx->rank, &s->next, &s->prev);
    s->messages = s->next == s->prev ? 1 : 2;
}

/* ------------------------------------------------------------------------------------------ */
/* Validation: every exchange once, known contents, every byte checked; nothing timed.          */
/* ------------------------------------------------------------------------------------------ */

static unsigned validation_tag(int p, int li, int method, int which)
{
    return (((unsigned)p * NB_BEFF_LENGTHS + (unsigned)li) * METHOD_COUNT + (unsigned)method) *
               2u + (unsigned)which;
}

static size_t count_not_sentinel(const unsigned char *buffer, size_t from, size_t to)
{
    size_t wrong = 0;
    for (size_t i = from; i < to; i++)
        wrong += buffer[i] != BEFF_SENTINEL;
    return wrong;
}

/* Bytes of the guard area after a message of `length` bytes at `offset` that were written. */
static size_t check_guard(const beff_state *s, size_t offset, size_t length, size_t end)
{
    size_t from = offset + length, to = from + BEFF_GUARD_BYTES;
    if (to > end)
        to = end;
    return from < to ? count_not_sentinel(s->recv, from, to) : 0;
}

static void run_validation(const nb_context *ctx, beff_state *s, const size_t *lengths,
                           int patterns)
{
    size_t cells = (size_t)patterns * METHOD_COUNT;
    /* checked, wrong */
    long long *counts = nb_calloc_or_abort(MPI_COMM_WORLD, 2 * cells, sizeof *counts);
    long long *totals = nb_calloc_or_abort(MPI_COMM_WORLD, 2 * cells, sizeof *totals);
    size_t buffer_end = 2 * s->slot;

    for (int p = 0; p < patterns; p++) {
        set_pattern(s, ctx, p);
        for (int li = 0; li < NB_BEFF_LENGTHS; li++) {
            size_t L = lengths[li];
            s->length = (int)L;
            for (int m = 0; m < METHOD_COUNT; m++) {
                s->method = m;
                if (m == METHOD_ALLTOALLV)
                    set_alltoallv(s);
                nb_fill_message(s->send, L, ctx->rank, validation_tag(p, li, m, 0));
                if (s->messages == 2)
                    nb_fill_message(s->send + s->slot, L, ctx->rank,
                                    validation_tag(p, li, m, 1));
                /* The two received messages and their guard areas start as the sentinel. */
                size_t clear = L + BEFF_GUARD_BYTES < s->slot ? L + BEFF_GUARD_BYTES : s->slot;
                memset(s->recv, BEFF_SENTINEL, clear);
                memset(s->recv + s->slot, BEFF_SENTINEL,
                       L + BEFF_GUARD_BYTES < s->slot ? L + BEFF_GUARD_BYTES : s->slot);
                MPI_Barrier(ctx->pair);
                exchange(s);
                size_t wrong = nb_check_message(s->recv, L, s->prev, validation_tag(p, li, m, 0));
                wrong += check_guard(s, 0, L, s->slot);
                if (s->messages == 2) {
                    wrong += nb_check_message(s->recv + s->slot, L, s->next,
                                              validation_tag(p, li, m, 1));
                    wrong += check_guard(s, s->slot, L, buffer_end);
                } else {
                    /* One message each way: the second slot must stay untouched. */
                    size_t to = L + BEFF_GUARD_BYTES < s->slot ? L + BEFF_GUARD_BYTES : s->slot;
                    wrong += count_not_sentinel(s->recv + s->slot, 0, to);
                }
                size_t cell = (size_t)p * METHOD_COUNT + (size_t)m;
                counts[2 * cell] += s->messages;
                counts[2 * cell + 1] += (long long)wrong;
            }
        }
    }
    MPI_Reduce(counts, totals, (int)(2 * cells), MPI_LONG_LONG, MPI_SUM, 0, ctx->pair);

    if (ctx->result != NULL) {
        nb_table *table = nb_result_add_declared_table(ctx->result, &beff_validation_table);
        long long messages = 0, errors = 0;
        for (int p = 0; p < patterns; p++) {
            char name[32];
            pattern_name(p, name, sizeof name);
            for (int m = 0; m < METHOD_COUNT; m++) {
                size_t cell = (size_t)p * METHOD_COUNT + (size_t)m;
                nb_table_add_row(table);
                nb_cell_text(table, "pattern", name);
                nb_cell_text(table, "method", method_names[m]);
                nb_cell_int(table, "messages_checked", totals[2 * cell]);
                nb_cell_int(table, "bytes_wrong", totals[2 * cell + 1]);
                messages += totals[2 * cell];
                errors += totals[2 * cell + 1];
            }
        }
        nb_summary_int(ctx->result, "validated_messages", messages);
        nb_summary_int(ctx->result, "validation_errors", errors);
        if (errors != 0)
            nb_unreliable(ctx->result, "validation_errors",
                          "%lld received bytes differ from what the sender wrote (or were "
                          "written outside the expected message); see table validation",
                          errors);
    }
    free(counts);
    free(totals);
}

/* ------------------------------------------------------------------------------------------ */
/* Measurement                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* Rank 0: adds an unreliable entry when a summary value is not finite and positive. */
static void summary_value(nb_result *r, const char *key, double value, const char *reason)
{
    nb_summary_real(r, key, value);
    if (!(value > 0.0) || !isfinite(value))
        nb_unreliable(r, key, "%s", reason);
}

/* Rank 0: the table lengths: per message length, b_eff's average over the patterns (rings and
 * random, each logarithmically) of best[p][li] (the best method) and of b[p][li][m] (each). */
static void report_lengths(nb_result *r, const size_t *lengths, int patterns, const double *best,
                           const double *b)
{
    static const char *const method_columns[METHOD_COUNT] = {
        "sendrecv_per_process_MBps", "alltoallv_per_process_MBps",
        "nonblocking_per_process_MBps"};
    nb_table *by_length = nb_result_add_declared_table(r, &lengths_table);
    for (int li = 0; li < NB_BEFF_LENGTHS; li++) {
        double rings, random;
        double value = two_level_logavg(best + li, NB_BEFF_LENGTHS, patterns, &rings, &random);
        nb_table_add_row(by_length);
        nb_cell_int(by_length, "length_bytes", (long long)lengths[li]);
        nb_cell_real(by_length, "beff_per_process_MBps", value);
        nb_cell_real(by_length, "rings_per_process_MBps", rings);
        nb_cell_real(by_length, "random_per_process_MBps", random);
        for (int m = 0; m < METHOD_COUNT; m++)
            nb_cell_real(by_length, method_columns[m],
                         two_level_logavg(b + (size_t)li * METHOD_COUNT + (size_t)m,
                                          NB_BEFF_LENGTHS * METHOD_COUNT, patterns, NULL, NULL));
    }
}

/* Rank 0: tables patterns and lengths, and the summary, from time_us[p][li][m] (time per
 * message of the slowest rank, best repetition). */
static void report(const nb_context *ctx, const size_t *lengths, int patterns,
                   const double *time_us, double pingpong_rt_1_us, double pingpong_rt_lmax_us)
{
    nb_result *r = ctx->result;
    size_t lmax = lengths[NB_BEFF_LENGTHS - 1];
    double P = (double)ctx->size;
    size_t np = (size_t)patterns;
#define TIME(p, li, m) time_us[((size_t)(p) * NB_BEFF_LENGTHS + (size_t)(li)) * METHOD_COUNT + (m)]

    /* Per process bandwidth b[p][li][m] = L / time per message; best[p][li] over the methods. */
    double *b = nb_calloc_or_abort(MPI_COMM_WORLD, np * NB_BEFF_LENGTHS * METHOD_COUNT, sizeof *b);
    double *best = nb_calloc_or_abort(MPI_COMM_WORLD, np * NB_BEFF_LENGTHS, sizeof *best);
    double *avg_L = nb_calloc_or_abort(MPI_COMM_WORLD, np, sizeof *avg_L);
    double *at_lmax = nb_calloc_or_abort(MPI_COMM_WORLD, np, sizeof *at_lmax);
    double *latency = nb_calloc_or_abort(MPI_COMM_WORLD, np, sizeof *latency);
    int *best_method = nb_calloc_or_abort(MPI_COMM_WORLD, np, sizeof *best_method);
    for (int p = 0; p < patterns; p++) {
        double sum = 0.0;
        for (int li = 0; li < NB_BEFF_LENGTHS; li++) {
            double top = NAN;
            int top_method = -1;
            for (int m = 0; m < METHOD_COUNT; m++) {
                double t = TIME(p, li, m);
                double value = t > 0.0 ? (double)lengths[li] / t : NAN;
                b[((size_t)p * NB_BEFF_LENGTHS + (size_t)li) * METHOD_COUNT + (size_t)m] = value;
                if (value > top || (top_method < 0 && !isnan(value))) {
                    top = value;
                    top_method = m;
                }
            }
            best[(size_t)p * NB_BEFF_LENGTHS + (size_t)li] = top;
            sum += top;
            if (li == NB_BEFF_LENGTHS - 1)
                best_method[p] = top_method;
        }
        avg_L[p] = sum / NB_BEFF_LENGTHS;
        at_lmax[p] = best[(size_t)p * NB_BEFF_LENGTHS + NB_BEFF_LENGTHS - 1];
        double t1 = NAN;
        for (int m = 0; m < METHOD_COUNT; m++)
            if (TIME(p, 0, m) > 0.0 && !(TIME(p, 0, m) >= t1))
                t1 = TIME(p, 0, m);
        latency[p] = t1; /* lengths[0] == 1 byte: the time per message */
    }

    nb_table *table = nb_result_add_declared_table(r, &patterns_table);
    for (int p = 0; p < patterns; p++) {
        char name[32];
        int ring_size, messages;
        pattern_name(p, name, sizeof name);
        pattern_shape(ctx, p, &ring_size, &messages);
        nb_table_add_row(table);
        nb_cell_text(table, "pattern", name);
        nb_cell_text(table, "kind", p < NB_BEFF_RING_PATTERNS ? "ring" : "random");
        nb_cell_int(table, "ring_size", ring_size);
        nb_cell_int(table, "messages_per_rank", messages);
        nb_cell_real(table, "bandwidth_avg_L_per_process_MBps", avg_L[p]);
        nb_cell_real(table, "bandwidth_lmax_per_process_MBps", at_lmax[p]);
        if (best_method[p] >= 0)
            nb_cell_text(table, "best_method", method_names[best_method[p]]);
        nb_cell_real(table, "latency_us", latency[p]);
    }

    report_lengths(r, lengths, patterns, best, b);

    double beff = two_level_logavg(avg_L, 1, patterns, NULL, NULL);
    double lmax_rings;
    double beff_lmax = two_level_logavg(at_lmax, 1, patterns, &lmax_rings, NULL);
    double latency_rings;
    double latency_both = two_level_logavg(latency, 1, patterns, &latency_rings, NULL);
    double pp_latency = pingpong_rt_1_us / 2.0;
    double pp_bandwidth = pingpong_rt_lmax_us > 0.0 ? (double)lmax / (pingpong_rt_lmax_us / 2.0)
                                                    : NAN;
    const char *why = "a pattern, length or method gave no positive finite time (see the "
                      "tables)";
    summary_value(r, "b_eff_MBps", beff * P, why);
    summary_value(r, "b_eff_per_process_MBps", beff, why);
    nb_summary_int(r, "lmax_bytes", (long long)lmax);
    summary_value(r, "b_eff_at_lmax_MBps", beff_lmax * P, why);
    summary_value(r, "b_eff_at_lmax_per_process_MBps", beff_lmax, why);
    summary_value(r, "b_eff_at_lmax_rings_MBps", lmax_rings * P, why);
    summary_value(r, "b_eff_at_lmax_rings_per_process_MBps", lmax_rings, why);
    summary_value(r, "latency_rings_random_us", latency_both, why);
    summary_value(r, "latency_rings_us", latency_rings, why);
    summary_value(r, "pingpong_latency_us", pp_latency, "no positive finite ping-pong time");
    summary_value(r, "pingpong_bandwidth_lmax_MBps", pp_bandwidth,
                  "no positive finite ping-pong time");
#undef TIME
    free(b);
    free(best);
    free(avg_L);
    free(at_lmax);
    free(latency);
    free(best_method);
}

/* One (pattern, length, method): nb_measure on all ranks; rank 0 gets the time per message of
 * the slowest rank in the best repetition (min over repetitions of max over ranks of
 * loop time / (looplength x messages of that rank)). */
static double measure_one(const nb_context *ctx, beff_state *s)
{
    const nb_options *o = ctx->options;
    nb_measurement m;
    nb_measure(ctx, beff_loop, s, BEFF_MIN_LOOPLENGTH, BEFF_MAX_LOOPLENGTH, o->time_cap_ms * 1e-3,
               o->repetitions, &m);
    double mine[NB_MAX_REPETITIONS], slowest[NB_MAX_REPETITIONS];
    for (int r = 0; r < m.repetitions; r++)
        mine[r] = m.per_iteration_us[r] / (double)s->messages;
    MPI_Reduce(mine, slowest, m.repetitions, MPI_DOUBLE, MPI_MAX, 0, ctx->pair);
    if (ctx->rank != 0)
        return NAN;
    double best = NAN;
    for (int r = 0; r < m.repetitions; r++)
        if (slowest[r] > 0.0 && !(slowest[r] >= best))
            best = slowest[r];
    return best;
}

/* Ping-pong round trip (best repetition) between ranks 0 and 1, on rank 0. */
static double measure_pingpong(const nb_context *ctx, beff_state *s, size_t length)
{
    const nb_options *o = ctx->options;
    nb_measurement m;
    s->length = (int)length;
    nb_measure(ctx, pingpong_loop, s, BEFF_MIN_LOOPLENGTH, BEFF_MAX_LOOPLENGTH,
               o->time_cap_ms * 1e-3, o->repetitions, &m);
    return ctx->rank == 0 ? m.min_us : NAN;
}

static void run_measurement(const nb_context *ctx, beff_state *s, const size_t *lengths,
                            int patterns)
{
    size_t cells = (size_t)patterns * NB_BEFF_LENGTHS * METHOD_COUNT;
    double *time_us = nb_calloc_or_abort(MPI_COMM_WORLD, cells, sizeof *time_us);
    for (int p = 0; p < patterns; p++) {
        set_pattern(s, ctx, p);
        if (ctx->rank == 0) {
            char name[32];
            int ring_size, messages;
            pattern_name(p, name, sizeof name);
            pattern_shape(ctx, p, &ring_size, &messages);
            fprintf(stderr, "beff: pattern %d/%d %s (ring size %d)\n", p + 1, patterns, name,
                    ring_size);
        }
        for (int li = 0; li < NB_BEFF_LENGTHS; li++) {
            s->length = (int)lengths[li];
            for (int m = 0; m < METHOD_COUNT; m++) {
                s->method = m;
                if (m == METHOD_ALLTOALLV)
                    set_alltoallv(s);
                time_us[((size_t)p * NB_BEFF_LENGTHS + (size_t)li) * METHOD_COUNT + (size_t)m] =
                    measure_one(ctx, s);
            }
        }
    }
    if (ctx->rank == 0)
        fprintf(stderr, "beff: ping-pong\n");
    double rt_1 = measure_pingpong(ctx, s, 1);
    double rt_lmax = measure_pingpong(ctx, s, lengths[NB_BEFF_LENGTHS - 1]);
    if (ctx->result != NULL)
        report(ctx, lengths, patterns, time_us, rt_1, rt_lmax);
    free(time_us);
}

void run_beff(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const beff_settings *bs = o->settings;
    size_t memory = 0;
    const char *source = "memory";
    size_t lmax = choose_lmax(ctx, &memory, &source);
    size_t lengths[NB_BEFF_LENGTHS];
    if (nb_beff_message_lengths(lmax, lengths) != 0) {
        /* Cannot happen: --lmax is checked by the parser and the memory value is floored. */
        if (ctx->rank == 0)
            fprintf(stderr, "netbench: beff: L_max %zu is below 8K\n", lmax);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return;
    }
    int patterns = NB_BEFF_RING_PATTERNS + bs->random_patterns;

    if (ctx->result != NULL) {
        nb_result *r = ctx->result;
        nb_param_int(r, "ranks", ctx->size);
        nb_param_int(r, "lmax_bytes", (long long)lmax);
        nb_param_text(r, "lmax_source", source);
        nb_param_int(r, "memory_per_process_bytes", (long long)memory);
        nb_param_sizes(ctx, "lengths_bytes", lengths, NB_BEFF_LENGTHS);
        nb_param_int(r, "random_patterns", bs->random_patterns);
        nb_param_int(r, "seed", (long long)o->seed);
        nb_param_int(r, "repetitions", o->repetitions);
        nb_param_real(r, "time_cap_ms", o->time_cap_ms);
    }

    beff_state s = {.comm = ctx->pair, .rank = ctx->rank, .ranks = ctx->size, .slot = lmax};
    /* Validation: two messages of L_max each way in fixed slots. Timed runs: the original's
     * BEFF_BUFFER_SLOTS x (L_max + 16) bytes to move through (see next_offset). Allocated and
     * touched once. */
    s.cycle = !o->validate;
    s.buffer_bytes = s.cycle ? BEFF_BUFFER_SLOTS * (lmax + 16) : 2 * lmax;
    s.send = nb_buffer_new(s.buffer_bytes);
    s.recv = nb_buffer_new(s.buffer_bytes);
    s.send_counts = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)ctx->size, sizeof(int));
    s.send_displs = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)ctx->size, sizeof(int));
    s.recv_counts = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)ctx->size, sizeof(int));
    s.recv_displs = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)ctx->size, sizeof(int));

    if (o->validate)
        run_validation(ctx, &s, lengths, patterns);
    else
        run_measurement(ctx, &s, lengths, patterns);

    free(s.send);
    free(s.recv);
    free(s.send_counts);
    free(s.send_displs);
    free(s.recv_counts);
    free(s.recv_displs);
}

/* Before MPI: the buffers of an --lmax run (from the memory per process they fit by
 * construction, and the memory is only known after MPI_Init). */
unsigned long long beff_buffer_bytes(const nb_options *o, char *how, size_t length,
                                     const char **hint)
{
    const beff_settings *bs = o->settings;
    *hint = " (--lmax)";
    if (bs->lmax == 0)
        return 0;
    unsigned long long slots = o->validate ? 2 : BEFF_BUFFER_SLOTS;
    unsigned long long slot = o->validate ? bs->lmax : bs->lmax + 16;
    char text[32];
    nb_format_size(bs->lmax, text, sizeof text);
    snprintf(how, length, "2 buffers x %llu slots x L_max %s = %llu bytes", slots, text,
             2 * slots * slot);
    return 2 * slots * slot;
}
