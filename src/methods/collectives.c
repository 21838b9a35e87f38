/* collectives.c - MPI collectives, each call timed alone in a synchronised time window
 * (window.h: Hoefler et al. section 4; Altix study section 3.2), beside the naive loop/n figure.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "collectives_catalogue.h"
#include "methods.h"
#include "window.h"

/* Late calls are left out, so the figure stays sound while enough calls remain: only when more
 * than this share is late after the retries is the row unreliable. (On a shared VM a rank is
 * descheduled for milliseconds now and then, which makes single calls late at any window.) */
#define COLL_MAX_LATE_SHARE_REPORTED 0.5
/* The window timing (window.h); tag 7 on ctx->pair, a private duplicate. */
static const nb_window coll_window = {.warmup_calls = 5, .sync_exchanges = 30, .tag_clock = 7};
/* Validation: bytes behind the received data that must stay untouched. */
#define COLL_GUARD_BYTES 64

#define COLL_ALL_MASK ((1u << NB_COLL_COUNT) - 1u)

static const char *const collective_names[NB_COLL_COUNT] = {
    "barrier", "bcast", "reduce", "allreduce", "alltoall", "alltoallv", "gather", "scatter",
    "allgather",
};

static const char *nb_collective_name(nb_collective collective)
{
    return (unsigned)collective < NB_COLL_COUNT ? collective_names[collective] : "?";
}

/* One collective at one size, with everything a call needs prepared beforehand. */
typedef struct {
    MPI_Comm comm;
    int rank;
    int ranks;
    nb_collective collective;
    int bytes;                 /* s: per peer / per rank / whole message, as the collective */
    int floats;                /* reduce, allreduce: max(s / 4, 1) */
    unsigned char *send;
    unsigned char *recv;
    size_t buffer_bytes;       /* capacity of send and recv */
    int *counts;               /* alltoallv: s for every peer */
    int *displacements;        /* alltoallv: peers in reverse order, so displacements matter */
} coll_state;

static void coll_call(const coll_state *s)
{
    MPI_Comm comm = s->comm;
    switch (s->collective) {
    case NB_COLL_BARRIER:
        MPI_Barrier(comm);
        break;
    case NB_COLL_BCAST:
        MPI_Bcast(s->send, s->bytes, MPI_BYTE, 0, comm);
        break;
    case NB_COLL_REDUCE:
        MPI_Reduce(s->send, s->recv, s->floats, MPI_FLOAT, MPI_SUM, 0, comm);
        break;
    case NB_COLL_ALLREDUCE:
        MPI_Allreduce(s->send, s->recv, s->floats, MPI_FLOAT, MPI_SUM, comm);
        break;
    case NB_COLL_ALLTOALL:
        MPI_Alltoall(s->send, s->bytes, MPI_BYTE, s->recv, s->bytes, MPI_BYTE, comm);
        break;
    case NB_COLL_ALLTOALLV:
        MPI_Alltoallv(s->send, s->counts, s->displacements, MPI_BYTE, s->recv, s->counts,
                      s->displacements, MPI_BYTE, comm);
        break;
    case NB_COLL_GATHER:
        MPI_Gather(s->send, s->bytes, MPI_BYTE, s->recv, s->bytes, MPI_BYTE, 0, comm);
        break;
    case NB_COLL_SCATTER:
        MPI_Scatter(s->send, s->bytes, MPI_BYTE, s->recv, s->bytes, MPI_BYTE, 0, comm);
        break;
    case NB_COLL_ALLGATHER:
        MPI_Allgather(s->send, s->bytes, MPI_BYTE, s->recv, s->bytes, MPI_BYTE, comm);
        break;
    default:
        break;
    }
}

/* Bytes that the send and the receive buffer must hold for one collective at one size. */
static size_t coll_buffer_bytes(nb_collective collective, size_t size, int ranks)
{
    switch (collective) {
    case NB_COLL_BARRIER:
        return 0;
    case NB_COLL_BCAST:
        return size;
    case NB_COLL_REDUCE:
    case NB_COLL_ALLREDUCE:
        return size >= sizeof(float) ? size : sizeof(float);
    default:
        return size * (size_t)ranks;
    }
}

/* 0 when alltoallv's int displacements cannot reach the last peer's block. */
static int coll_size_fits(nb_collective collective, size_t size, int ranks)
{
    return collective != NB_COLL_ALLTOALLV || size <= (size_t)INT_MAX / (size_t)ranks;
}

static void coll_prepare(coll_state *s, nb_collective collective, size_t size)
{
    s->collective = collective;
    s->bytes = collective == NB_COLL_BARRIER ? 0 : (int)size;
    s->floats = (int)(size / sizeof(float));
    if (s->floats < 1)
        s->floats = 1;
    for (int p = 0; p < s->ranks; p++) {
        s->counts[p] = s->bytes;
        s->displacements[p] = (s->ranks - 1 - p) * s->bytes;
    }
}

/* ---- timed mode --------------------------------------------------------------------------- */

typedef struct {
    nb_window_timing window;
    double time_us[5];         /* min, q25, median, q75, max over the valid calls */
    double loop_average_us;
} coll_timing;

static void coll_call_in_window(const void *state)
{
    coll_call(state);
}

/* The naive loop's timed side: `calls` calls back to back. */
NB_STEP_LOOP(coll_loop, const coll_state, coll_call)

/* One (collective, size) block, collective over s->comm; figures valid on rank 0. */
static void coll_time_block(const coll_state *s, int calls, int repetitions, coll_timing *t)
{
    double *times = nb_calloc_or_abort(s->comm, (size_t)calls, sizeof *times);
    memset(t, 0, sizeof *t);
    nb_window_time_block(s->comm, coll_call_in_window, s, &coll_window, calls, times, &t->window);
    if (s->rank == 0) {
        size_t valid = (size_t)t->window.calls_valid;
        t->time_us[0] = nb_min(times, valid);
        t->time_us[1] = nb_quantile(times, valid, 0.25);
        t->time_us[2] = nb_median(times, valid);
        t->time_us[3] = nb_quantile(times, valid, 0.75);
        t->time_us[4] = nb_max(times, valid);
    }

    /* The naive loop: calls back-to-back after a barrier, divided by calls, the slowest rank,
     * the median over the repetitions (the shared driver with a fixed count). */
    nb_loop loop = {
        .comm = s->comm,
        .loop = coll_loop,
        .state = (void *)s,
        .fixed_iterations = calls,
        .repetitions = repetitions,
        .pacing = NB_PACE_BY_ROOT,
        .figure = NB_FIGURE_SLOWEST,
    };
    nb_measurement m;
    nb_drive(&loop, &m);
    t->loop_average_us = s->rank == 0 ? m.median_us : NAN;
    free(times);
}

/* ---- validation mode ---------------------------------------------------------------------- */

/* Exact small integers: every partial sum over up to a few hundred thousand ranks is exact. */
static float coll_value(int rank, int index)
{
    return (float)((rank * 31 + index) % 97 - 48);
}

static unsigned coll_tag(nb_collective collective, size_t size_index)
{
    return (unsigned)collective * 41u + (unsigned)size_index * 13u;
}

/* Runs the collective once on known data and checks what this rank received. Returns the
 * number of wrong values; *checked gets the number of values checked here. */
static long long coll_validate_once(const coll_state *s, size_t size_index, long long *checked)
{
    unsigned tag = coll_tag(s->collective, size_index);
    size_t bytes = (size_t)s->bytes, ranks = (size_t)s->ranks;
    size_t span = bytes * ranks;
    int rank = s->rank;
    long long wrong = 0;
    *checked = 0;
    memset(s->recv, 0, s->buffer_bytes);

    switch (s->collective) {
    case NB_COLL_BARRIER:
        coll_call(s);
        break;
    case NB_COLL_BCAST:
        if (rank == 0)
            nb_fill_message(s->send, bytes, 0, tag);
        else
            memset(s->send, 0, bytes);
        coll_call(s);
        wrong = (long long)nb_check_message(s->send, bytes, 0, tag);
        *checked = (long long)bytes;
        break;
    case NB_COLL_REDUCE:
    case NB_COLL_ALLREDUCE: {
        float *in = (float *)(void *)s->send, *out = (float *)(void *)s->recv;
        for (int i = 0; i < s->floats; i++)
            in[i] = coll_value(rank, i);
        coll_call(s);
        if (s->collective == NB_COLL_REDUCE && rank != 0)
            break;
        for (int i = 0; i < s->floats; i++) {
            double expected = 0.0;
            for (int r = 0; r < s->ranks; r++)
                expected += coll_value(r, i);
            wrong += out[i] != (float)expected;
        }
        *checked = s->floats;
        break;
    }
    case NB_COLL_ALLTOALL:
    case NB_COLL_ALLTOALLV:
        /* The block for peer p goes where this collective takes it from. */
        for (int p = 0; p < s->ranks; p++) {
            size_t at = s->collective == NB_COLL_ALLTOALL ? (size_t)p * bytes
                                                           : (size_t)s->displacements[p];
            nb_fill_message(s->send + at, bytes, rank, tag + (unsigned)p);
        }
        coll_call(s);
        for (int q = 0; q < s->ranks; q++) {
            size_t at = s->collective == NB_COLL_ALLTOALL ? (size_t)q * bytes
                                                           : (size_t)s->displacements[q];
            wrong += (long long)nb_check_message(s->recv + at, bytes, q, tag + (unsigned)rank);
        }
        *checked = (long long)span;
        break;
    case NB_COLL_GATHER:
    case NB_COLL_ALLGATHER:
        nb_fill_message(s->send, bytes, rank, tag);
        coll_call(s);
        if (s->collective == NB_COLL_GATHER && rank != 0)
            break;
        for (int q = 0; q < s->ranks; q++)
            wrong += (long long)nb_check_message(s->recv + (size_t)q * bytes, bytes, q, tag);
        *checked = (long long)span;
        break;
    case NB_COLL_SCATTER:
        if (rank == 0)
            for (int p = 0; p < s->ranks; p++)
                nb_fill_message(s->send + (size_t)p * bytes, bytes, 0, tag + (unsigned)p);
        coll_call(s);
        wrong = (long long)nb_check_message(s->recv, bytes, 0, tag + (unsigned)rank);
        *checked = (long long)bytes;
        break;
    default:
        break;
    }
    /* Nothing may be written past what this rank receives (a guard of zeros behind it). */
    size_t received = s->collective == NB_COLL_REDUCE || s->collective == NB_COLL_ALLREDUCE
                          ? (size_t)s->floats * sizeof(float)
                      : s->collective == NB_COLL_BCAST || s->collective == NB_COLL_BARRIER ? 0
                      : s->collective == NB_COLL_SCATTER ? bytes
                                                          : span;
    for (size_t i = received; i < received + COLL_GUARD_BYTES && i < s->buffer_bytes; i++)
        wrong += s->recv[i] != 0;
    return wrong;
}

/* ---- driver ------------------------------------------------------------------------------- */

static void coll_names(unsigned mask, char *text, size_t length)
{
    size_t used = 0;
    text[0] = '\0';
    for (int c = 0; c < NB_COLL_COUNT && used < length; c++)
        if (mask & (1u << c))
            used += (size_t)snprintf(text + used, length - used, "%s%s", used ? "," : "",
                                     nb_collective_name((nb_collective)c));
}

/* Bytes of the send and of the receive buffer: the most any chosen collective needs at any
 * size it can run. */
static size_t largest_buffer(unsigned mask, const nb_options *o, int ranks)
{
    size_t buffer_bytes = sizeof(float);
    for (int c = 0; c < NB_COLL_COUNT; c++)
        for (size_t i = 0; (mask & (1u << c)) && i < o->size_count; i++) {
            size_t need = coll_buffer_bytes((nb_collective)c, o->sizes[i], ranks);
            if (coll_size_fits((nb_collective)c, o->sizes[i], ranks) && need > buffer_bytes)
                buffer_bytes = need;
        }
    return buffer_bytes;
}

/* Rank 0: the parameters of the run, and its table (collectives, or validation with
 * --validate). */
static nb_table *start_output(const nb_context *ctx, const char *names)
{
    const nb_options *o = ctx->options;
    const collectives_settings *cs = o->settings;
    nb_result *result = ctx->result;
    nb_param_int(result, "ranks", ctx->size);
    nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
    nb_param_text(result, "collectives", names);
    if (o->validate) {
        nb_param_int(result, "validate", 1);
        return nb_result_add_declared_table(result, &collectives_validation_table);
    }
    nb_param_int(result, "calls", cs->calls);
    nb_param_text(result, "synchronisation", "window");
    nb_param_real(result, "window_factor", NB_WINDOW_FACTOR);
    nb_param_int(result, "repetitions", o->repetitions);
    return nb_result_add_declared_table(result, &collectives_table);
}

/* Rank 0: one row of the table collectives from the timing `t` of `calls` calls of one
 * collective at one size, flagged where it is below the timer or too many calls were late;
 * returns the loop average over the median of the individual calls (NAN: no median). */
static double report_timing(const nb_context *ctx, nb_table *table, const char *name,
                            size_t size, const coll_timing *t, int calls)
{
    double median = t->time_us[2];
    double ratio = median > 0.0 ? t->loop_average_us / median : NAN;
    nb_table_add_row(table);
    nb_cell_text(table, "collective", name);
    nb_cell_int(table, "size_bytes", (long long)size);
    nb_cell_int(table, "calls_valid", t->window.calls_valid);
    nb_cell_int(table, "late_calls", t->window.late_calls);
    nb_cell_real(table, "window_us", t->window.window_s * 1e6);
    nb_cell_real(table, "time_min_us", t->time_us[0]);
    nb_cell_real(table, "time_q25_us", t->time_us[1]);
    nb_cell_real(table, "time_median_us", median);
    nb_cell_real(table, "time_q75_us", t->time_us[3]);
    nb_cell_real(table, "time_max_us", t->time_us[4]);
    nb_cell_real(table, "loop_average_us", t->loop_average_us);
    nb_cell_real(table, "loop_to_individual", ratio);
    char quantity[96];
    snprintf(quantity, sizeof quantity, "%s[%zu]", name, size);
    nb_flag_below_timer(ctx, ctx->result, quantity, "median time", median);
    if ((double)t->window.late_calls > COLL_MAX_LATE_SHARE_REPORTED * (double)calls)
        nb_unreliable(ctx->result, quantity,
                      "%d of %d calls late (a rank reached the start after it) with a window "
                      "of %.1f us, the best of %d attempts (the window doubled each time)",
                      t->window.late_calls, calls, t->window.window_s * 1e6,
                      t->window.attempts);
    return ratio;
}

void run_collectives(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const collectives_settings *cs = o->settings;
    nb_result *result = ctx->result;
    int ranks = ctx->size, validate = o->validate;
    unsigned mask = cs->collectives & COLL_ALL_MASK;

    size_t buffer_bytes = largest_buffer(mask, o, ranks);

    coll_state s = {.comm = ctx->pair, .rank = ctx->rank, .ranks = ranks};
    s.send = nb_buffer_new(buffer_bytes);
    s.recv = nb_buffer_new(buffer_bytes);
    s.buffer_bytes = buffer_bytes;
    s.counts = nb_calloc_or_abort(ctx->pair, (size_t)ranks, sizeof *s.counts);
    s.displacements = nb_calloc_or_abort(ctx->pair, (size_t)ranks, sizeof *s.displacements);

    char names[256];
    coll_names(mask, names, sizeof names);
    nb_table *table = result != NULL ? start_output(ctx, names) : NULL;

    size_t row_capacity = (size_t)NB_COLL_COUNT * o->size_count;
    double *ratios = nb_calloc_or_abort(ctx->pair, row_capacity, sizeof *ratios);
    size_t rows = 0, ratio_count = 0;
    long long validated = 0, errors_total = 0;
    double sync_error_max = 0.0;

    for (int c = 0; c < NB_COLL_COUNT; c++) {
        if (!(mask & (1u << c)))
            continue;
        nb_collective collective = (nb_collective)c;
        const char *name = nb_collective_name(collective);
        size_t size_count = collective == NB_COLL_BARRIER ? 1 : o->size_count;
        if (ctx->rank == 0)
            fprintf(stderr, "netbench collectives: %s (%zu size%s)%s\n", name, size_count,
                    size_count == 1 ? "" : "s", validate ? ", validating" : "");
        for (size_t si = 0; si < size_count; si++) {
            size_t size = collective == NB_COLL_BARRIER ? 0 : o->sizes[si];
            if (!coll_size_fits(collective, size, ranks)) {
                if (result != NULL)
                    nb_warning(result, "%s at %zu bytes skipped: the displacement of the last "
                               "of %d ranks exceeds an MPI int", name, size, ranks);
                continue;
            }
            coll_prepare(&s, collective, size);
            rows++;
            if (validate) {
                long long checked = 0, sums[2] = {0, 0}, totals[2] = {0, 0};
                sums[1] = coll_validate_once(&s, si, &checked);
                sums[0] = checked;
                MPI_Reduce(sums, totals, 2, MPI_LONG_LONG, MPI_SUM, 0, ctx->pair);
                validated++;
                if (result == NULL)
                    continue;
                errors_total += totals[1];
                nb_table_add_row(table);
                nb_cell_text(table, "collective", name);
                nb_cell_int(table, "size_bytes", (long long)size);
                nb_cell_int(table, "values_checked", totals[0]);
                nb_cell_int(table, "errors", totals[1]);
                continue;
            }
            coll_timing t;
            coll_time_block(&s, cs->calls, o->repetitions, &t);
            if (result == NULL)
                continue;
            if (t.window.sync_error_s > sync_error_max)
                sync_error_max = t.window.sync_error_s;
            double ratio = report_timing(ctx, table, name, size, &t, cs->calls);
            if (!isnan(ratio))
                ratios[ratio_count++] = ratio;
        }
    }

    if (result != NULL) {
        if (validate) {
            nb_summary_int(result, "validated_calls", validated);
            nb_summary_int(result, "validation_errors", errors_total);
            if (errors_total != 0)
                nb_unreliable(result, "validation_errors",
                              "%lld received values differ from what was sent (or were written "
                              "past the received data); see table validation", errors_total);
        } else {
            nb_summary_real(result, "clock_sync_error_max_us", sync_error_max * 1e6);
            nb_summary_int(result, "collectives_measured", (long long)rows);
            nb_summary_real(result, "loop_to_individual_median",
                            nb_median(ratios, ratio_count));
        }
    }
    free(ratios);
    free(s.counts);
    free(s.displacements);
    free(s.send);
    free(s.recv);
}

const char *collective_name_of(int index)
{
    return nb_collective_name((nb_collective)index);
}
