/* multipair.c - two methods in which more ranks than one pair take part:
 *
 *   connections  ping-pong latency of ranks 0 and 1 after rank 0 has exchanged messages with k
 *                other peers (k = 0, 1, 2, 4, ..., P-2): the cost of many open connections
 *                (Kutlug §3.2.5 and §4.2.4)
 *   loaded       (a) ping-pong latency of pair (0,1) while k other pairs (2,3), (4,5), ...
 *                stream (Zamani et al. §5.1, Fig. 6); (b) aggregate bandwidth and message rate
 *                of k pairs sending windows of non-blocking messages at once (Zamani §5.2,
 *                Fig. 9; the message rate as OSU's osu_mbw_mr counts it)
 *
 * A cost is a latency minus the latency of the same size at k = 0 (the baseline), measured in
 * the same run. Its noise floor is the larger spread (max - min over the repetitions) of the two
 * latencies: a cost less than 0 but within it is reported as 0 (noise), further below it means a
 * disturbed baseline and is null and flagged (netbench prints no negative figure).
 * Ranks that have nothing to do wait at a barrier without busy polling, so that on shared or
 * oversubscribed cores they do not take the measuring ranks' CPU.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "multipair_catalogue.h"
#include "methods.h"

/* Fewest round trips / windows in one timed loop, however slow a size is. */
#define MP_MIN_ITERATIONS 5
#define MP_MIN_WINDOWS 2
/* Own tags: rank 0 tells a streaming sender to stop; the sender tells its receiver whether
 * another window follows; a receiver acknowledges a window; connection set-up messages. */
#define MP_TAG_STOP 31
#define MP_TAG_CONTROL 32
#define MP_TAG_ACK 33
#define MP_TAG_SETUP 34
/* k values of `connections` (1, 2, 4, ... up to P-2, and 0): far fewer than 64 for any job. */
#define MP_MAX_STEPS 64

/* ------------------------------------------------------------------------------------------ */
/* Shared by both methods                                                                       */
/* ------------------------------------------------------------------------------------------ */


/* A communicator of the ranks below `first_idle` (MPI_COMM_NULL elsewhere); collective. */
static MPI_Comm ranks_below(const nb_context *ctx, int first_idle)
{
    MPI_Comm comm;
    MPI_Comm_split(ctx->pair, ctx->rank < first_idle ? 0 : MPI_UNDEFINED, ctx->rank, &comm);
    return comm;
}


/* One-way latency of a size, from a measurement of round trips. */
typedef struct {
    long iterations;
    double min_us, median_us, max_us;
} latency;

/* Ranks 0 and 1 of s->comm ping-pong `size` bytes; rank 0 of ctx gets the figures (others:
 * undefined). Checks the timer resolution on rank 0. */
static latency measure_latency(const nb_context *ctx, nb_pingpong *s, size_t size,
                               const char *quantity)
{
    nb_measurement m;
    nb_pingpong_measure(ctx, s, size, MP_MIN_ITERATIONS, &m);
    nb_check_timer_resolution(ctx, &m, quantity);
    latency l = {m.iterations, m.min_us / 2.0, m.median_us / 2.0, m.max_us / 2.0};
    return l;
}

/* The noise floor of a difference of two medians: the larger spread of the two measurements
 * (at least 2 x MPI_Wtick). */
static double noise_floor_us(const nb_context *ctx, latency baseline, latency row)
{
    double spread = fmax(baseline.max_us - baseline.min_us, row.max_us - row.min_us);
    return fmax(spread, 2.0 * ctx->timer_tick_s * 1e6);
}

/* A cost as reported: a latency cannot fall because of connections or load, so a difference
 * within the noise floor below 0 is noise and reported as 0; further below it is no figure (NaN,
 * null in the output; the caller flags it). */
static double reported_cost(double cost_us, double noise_us)
{
    if (cost_us >= 0.0)
        return cost_us;
    return cost_us >= -noise_us ? 0.0 : NAN;
}

/* Rank 0: one latency row with its cost against `baseline`; a cost below minus the noise floor
 * is null and flagged (the baseline was disturbed). `key` names the k column. */
static void add_latency_row(const nb_context *ctx, nb_table *table, const char *key, int k,
                            size_t size, latency row, latency baseline)
{
    double cost = row.median_us - baseline.median_us;
    double noise = noise_floor_us(ctx, baseline, row);
    nb_table_add_row(table);
    nb_cell_int(table, key, k);
    nb_cell_int(table, "size_bytes", (long long)size);
    nb_cell_int(table, "iterations", row.iterations);
    nb_cell_real(table, "latency_min_us", row.min_us);
    nb_cell_real(table, "latency_median_us", row.median_us);
    nb_cell_real(table, "latency_max_us", row.max_us);
    nb_cell_real(table, "cost_us", reported_cost(cost, noise));
    nb_cell_real(table, "noise_floor_us", noise);
    if (cost < -noise) {
        char quantity[96];
        snprintf(quantity, sizeof quantity, "cost_us[%s=%d,size_bytes=%zu]", key, k, size);
        nb_unreliable(ctx->result, quantity,
                      "latency %.3f us is %.3f us below the baseline's %.3f us, beyond the "
                      "noise floor %.3f us: the baseline (k = 0) was disturbed",
                      row.median_us, -cost, baseline.median_us, noise);
    }
}

/* Rank 0: a summary cost (the largest k against k = 0), null and flagged below the noise. */
static void summary_cost(const nb_context *ctx, const char *key, latency baseline, latency last)
{
    double cost = last.median_us - baseline.median_us;
    double noise = noise_floor_us(ctx, baseline, last);
    nb_summary_real(ctx->result, key, reported_cost(cost, noise));
    if (cost < -noise)
        nb_unreliable(ctx->result, key, "latency %.3f us is %.3f us below the baseline's "
                      "%.3f us, beyond the noise floor %.3f us: the baseline was disturbed",
                      last.median_us, -cost, baseline.median_us, noise);
}

/* ------------------------------------------------------------------------------------------ */
/* connections: latency with multiple connections (Kutlug §3.2.5, §4.2.4)                       */
/* ------------------------------------------------------------------------------------------ */

/* The k values: 0, then 1, 2, 4, ... below P-2, then P-2 (every other rank but 1). */
static int connection_steps(int ranks, int *steps)
{
    int count = 0;
    steps[count++] = 0;
    for (int k = 1; k < ranks - 2 && count < MP_MAX_STEPS - 1; k *= 2)
        steps[count++] = k;
    if (ranks - 2 > 0)
        steps[count++] = ranks - 2;
    return count;
}

/* Rank 0 opens connections to ranks first .. last (Kutlug §4.2.4: "we make sure that the
 * connections are established by sending messages to different nodes"): a few round trips of
 * every measured size with each of them, so that whatever a size needs (eager buffers, a
 * rendezvous path, registered memory) exists. Only rank 0 and those peers take part. */
static void open_connections(const nb_context *ctx, int first, int last, void *send, void *recv)
{
    const nb_options *o = ctx->options;
    const connections_settings *cs = o->settings;
    int me = ctx->rank;
    if (me != 0 && (me < first || me > last))
        return;
    for (int peer = first; peer <= last; peer++) {
        if (me != 0 && me != peer)
            continue;
        for (size_t i = 0; i < o->size_count; i++) {
            int count = (int)o->sizes[i];
            for (int t = 0; t < cs->setup_round_trips; t++) {
                if (me == 0) {
                    MPI_Send(send, count, MPI_BYTE, peer, MP_TAG_SETUP, ctx->pair);
                    MPI_Recv(recv, count, MPI_BYTE, peer, MP_TAG_SETUP, ctx->pair,
                             MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(recv, count, MPI_BYTE, 0, MP_TAG_SETUP, ctx->pair,
                             MPI_STATUS_IGNORE);
                    MPI_Send(send, count, MPI_BYTE, 0, MP_TAG_SETUP, ctx->pair);
                }
            }
        }
    }
}

void run_connections(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const connections_settings *cs = o->settings;
    size_t largest = o->sizes[o->size_count - 1];
    void *send = nb_buffer_new(largest > 0 ? largest : 1);
    void *recv = nb_buffer_new(largest > 0 ? largest : 1);
    nb_pingpong pair = {.comm = ranks_below(ctx, 2), .rank = ctx->rank,
                        .tag = NB_TAG_DATA, .send = send, .recv = recv};
    int steps[MP_MAX_STEPS];
    int step_count = connection_steps(ctx->size, steps);

    nb_table *table = NULL;
    nb_result *r = ctx->result;
    if (r != NULL) {
        nb_param_int(r, "ranks", ctx->size);
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        long long ks[MP_MAX_STEPS];
        for (int i = 0; i < step_count; i++)
            ks[i] = steps[i];
        nb_param_int_list(r, "peers", ks, (size_t)step_count);
        nb_param_int(r, "setup_round_trips", cs->setup_round_trips);
        nb_param_common(ctx);
        table = nb_result_add_declared_table(r, &connections_table);
    }

    latency baseline[2] = {{0}}, last[2] = {{0}};
    int opened = 1; /* ranks 2 .. opened+1 have exchanged with rank 0 */
    for (int s = 0; s < step_count; s++) {
        int k = steps[s];
        if (k + 1 > opened) {
            open_connections(ctx, opened + 1, k + 1, send, recv);
            opened = k + 1;
        }
        nb_quiet_barrier(ctx->pair);
        if (ctx->rank < 2) {
            for (size_t i = 0; i < o->size_count; i++) {
                char quantity[96];
                snprintf(quantity, sizeof quantity, "latency_median_us[peers=%d,size_bytes=%zu]",
                         k, o->sizes[i]);
                latency l = measure_latency(ctx, &pair, o->sizes[i], quantity);
                if (k == 0)
                    baseline[i] = l;
                last[i] = l;
                if (r != NULL)
                    add_latency_row(ctx, table, "peers", k, o->sizes[i], l, baseline[i]);
            }
        }
        nb_quiet_barrier(ctx->pair);
    }

    if (r != NULL) {
        int max_k = steps[step_count - 1];
        /* One size given twice collapses to one: the large figures are then the small ones. */
        size_t large = o->size_count - 1;
        nb_summary_int(r, "max_k", max_k);
        nb_summary_int(r, "small_size_bytes", (long long)o->sizes[0]);
        nb_summary_int(r, "large_size_bytes", (long long)o->sizes[large]);
        nb_summary_real(r, "latency_small_k0_us", baseline[0].median_us);
        nb_summary_real(r, "latency_small_max_k_us", last[0].median_us);
        nb_summary_real(r, "latency_large_k0_us", baseline[large].median_us);
        nb_summary_real(r, "latency_large_max_k_us", last[large].median_us);
        if (max_k > 0) {
            summary_cost(ctx, "cost_small_max_k_us", baseline[0], last[0]);
            summary_cost(ctx, "cost_large_max_k_us", baseline[large], last[large]);
            nb_summary_real(r, "noise_floor_small_max_k_us",
                            noise_floor_us(ctx, baseline[0], last[0]));
            nb_summary_real(r, "noise_floor_large_max_k_us",
                            noise_floor_us(ctx, baseline[large], last[large]));
        } else {
            static const char *const costs[] = {"cost_small_max_k_us", "cost_large_max_k_us",
                                                "noise_floor_small_max_k_us",
                                                "noise_floor_large_max_k_us"};
            for (size_t c = 0; c < NB_COUNT_OF(costs); c++)
                nb_summary_null(r, costs[c]);
            nb_unreliable(r, "cost_small_max_k_us",
                          "with %d ranks rank 0 has no peer besides rank 1: only k = 0 (the "
                          "baseline) was measured; run with at least 3 ranks", ctx->size);
            nb_unreliable(r, "cost_large_max_k_us", "with %d ranks only k = 0 exists; run "
                          "with at least 3 ranks", ctx->size);
        }
    }
    if (pair.comm != MPI_COMM_NULL)
        MPI_Comm_free(&pair.comm);
    free(send);
    free(recv);
}

int connections_finish(nb_options *o, void *settings)
{
    const connections_settings *cs = settings;
    if (nb_size_order_error("connections: ", "--small-size", cs->small_size, "--large-size",
                            cs->large_size) != 0)
        return NB_EXIT_USAGE;
    o->sizes[0] = cs->small_size;
    o->sizes[1] = cs->large_size;
    o->size_count = nb_sort_unique_sizes(o->sizes, 2);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* loaded: latency under load, aggregate bandwidth, message rate (Zamani §5.1, §5.2)            */
/* ------------------------------------------------------------------------------------------ */

/* One rank's side of a pair that sends windows: the even rank sends, the odd one receives. */
typedef struct {
    MPI_Comm comm;
    int partner;
    int sender;
    int size;
    int window;
    char *slots;                  /* `window` receive slots of `stride` bytes (sender: one) */
    size_t stride;
    MPI_Request *requests;
    char ack;
} window_state;

/* One window (OSU's osu_bw / osu_mbw_mr): `window` non-blocking messages, all completed, then
 * the receiver's 1-byte acknowledgement, so that at most one window is ever in flight. */
static void one_window(window_state *s)
{
    for (int i = 0; i < s->window; i++) {
        if (s->sender)
            MPI_Isend(s->slots, s->size, MPI_BYTE, s->partner, NB_TAG_DATA, s->comm,
                      &s->requests[i]);
        else
            MPI_Irecv(s->slots + (size_t)i * s->stride, s->size, MPI_BYTE, s->partner,
                      NB_TAG_DATA, s->comm, &s->requests[i]);
    }
    nb_waitall(s->window, s->requests);
    if (s->sender)
        MPI_Recv(&s->ack, 1, MPI_BYTE, s->partner, MP_TAG_ACK, s->comm, MPI_STATUS_IGNORE);
    else
        MPI_Send(&s->ack, 1, MPI_BYTE, s->partner, MP_TAG_ACK, s->comm);
}

/* The timed loop: one window per iteration. */
NB_STEP_LOOP(window_loop, window_state, one_window)

/* A loading pair of (a): windows until rank 0 says stop. Before every window the sender tells
 * its receiver whether one follows. Returns the bytes per us the sender moved (0 on the
 * receiver). */
static double stream_until_stopped(window_state *s, MPI_Comm world)
{
    MPI_Request stop_request = MPI_REQUEST_NULL;
    int stop = 0, more = 1;
    long windows = 0;
    if (s->sender)
        MPI_Irecv(&stop, 1, MPI_INT, 0, MP_TAG_STOP, world, &stop_request);
    double start = MPI_Wtime();
    for (;;) {
        if (s->sender) {
            int stopped = 0;
            MPI_Test(&stop_request, &stopped, MPI_STATUS_IGNORE);
            more = !stopped;
            MPI_Send(&more, 1, MPI_INT, s->partner, MP_TAG_CONTROL, s->comm);
        } else {
            MPI_Recv(&more, 1, MPI_INT, s->partner, MP_TAG_CONTROL, s->comm, MPI_STATUS_IGNORE);
        }
        if (!more)
            break;
        one_window(s);
        windows++;
    }
    double elapsed_us = (MPI_Wtime() - start) * 1e6;
    if (!s->sender || elapsed_us <= 0.0)
        return 0.0;
    return (double)windows * s->window * (double)s->size / elapsed_us;
}

/* Rank 0's (and every rank's) part of one step of (a): pair 0 measures while pairs 1..k
 * stream. Returns on rank 0 the latency and in *load_MBps the streams' total bandwidth. */
static latency latency_under_load(const nb_context *ctx, nb_pingpong *pair, window_state *ws,
                                  int k, double *load_MBps)
{
    const loaded_settings *ls = ctx->options->settings;
    int my_pair = ctx->rank / 2;
    latency l = {0};
    double mine = 0.0;
    nb_quiet_barrier(ctx->pair);
    if (my_pair == 0 && ctx->rank < 2) {
        char quantity[96];
        snprintf(quantity, sizeof quantity,
                 "latency_median_us[loading_pairs=%d,size_bytes=%zu]", k, ls->latency_size);
        l = measure_latency(ctx, pair, ls->latency_size, quantity);
        if (ctx->rank == 0 && k > 0) {
            MPI_Request *stops = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)k, sizeof *stops);
            int go = 0;
            for (int j = 1; j <= k; j++)
                MPI_Isend(&go, 1, MPI_INT, 2 * j, MP_TAG_STOP, ctx->pair, &stops[j - 1]);
            nb_waitall(k, stops);
            free(stops);
        }
    } else if (my_pair >= 1 && my_pair <= k && ws->partner < ctx->size) {
        ws->size = (int)ls->bandwidth_size;
        mine = stream_until_stopped(ws, ctx->pair);
    }
    nb_quiet_barrier(ctx->pair);
    double total = 0.0;
    MPI_Reduce(&mine, &total, 1, MPI_DOUBLE, MPI_SUM, 0, ctx->pair);
    *load_MBps = total;
    return l;
}

typedef struct {
    long windows;
    double sum, min;              /* over the pairs, per pair: bytes/us or messages/us */
} pair_figures;

/* Step k of (b): pairs 0..k-1 send windows of `size` bytes at once, started together by the
 * driver's barriers; every sender's median time per window goes to rank 0. Returns on rank 0
 * the sum and the minimum over the pairs of messages (or bytes, `per_byte`) per us. */
static pair_figures pairs_at_once(const nb_context *ctx, window_state *ws, int k, size_t size,
                                  int per_byte)
{
    const nb_options *o = ctx->options;
    MPI_Comm active = ranks_below(ctx, 2 * k);
    double mine = 0.0;
    long windows = 0;
    if (active != MPI_COMM_NULL) {
        window_state s = *ws;
        s.comm = active;
        s.size = (int)size;
        nb_loop loop = nb_options_loop(o, active, window_loop, &s, MP_MIN_WINDOWS,
                                       NB_PACE_BY_SLOWEST);
        nb_measurement m;
        nb_drive(&loop, &m);
        windows = m.iterations;
        if (s.sender && m.median_us > 0.0)
            mine = (double)s.window * (per_byte ? (double)size : 1.0) / m.median_us;
        if (ctx->rank == 0) {
            char quantity[96];
            snprintf(quantity, sizeof quantity, "%s[pairs=%d,size_bytes=%zu]",
                     per_byte ? "aggregate_bandwidth_MBps" : "message_rate_per_s", k, size);
            nb_check_timer_resolution(ctx, &m, quantity);
        }
        MPI_Comm_free(&active);
    }
    nb_quiet_barrier(ctx->pair);
    double *all =
        ctx->rank == 0 ? nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)ctx->size, sizeof *all) : NULL;
    MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, ctx->pair);
    pair_figures f = {windows, 0.0, INFINITY};
    if (ctx->rank == 0) {
        for (int j = 0; j < k; j++) {
            f.sum += all[2 * j];
            f.min = fmin(f.min, all[2 * j]);
        }
        free(all);
    }
    return f;
}

/* Rank 0 and each loading pair's sender (rank 2j) exchange a token: the connection by which
 * rank 0 stops them later is made before any load. */
static void connect_senders(const nb_context *ctx, int pairs)
{
    int token = 0;
    for (int j = 1; j < pairs; j++) {
        if (ctx->rank == 0) {
            MPI_Send(&token, 1, MPI_INT, 2 * j, MP_TAG_SETUP, ctx->pair);
            MPI_Recv(&token, 1, MPI_INT, 2 * j, MP_TAG_SETUP, ctx->pair, MPI_STATUS_IGNORE);
        } else if (ctx->rank == 2 * j) {
            MPI_Recv(&token, 1, MPI_INT, 0, MP_TAG_SETUP, ctx->pair, MPI_STATUS_IGNORE);
            MPI_Send(&token, 1, MPI_INT, 0, MP_TAG_SETUP, ctx->pair);
        }
    }
}

/* Rank 0: the row of the table aggregate for k pairs at once. */
static void add_aggregate_row(nb_table *aggregate, int k, pair_figures bandwidth,
                              pair_figures rate)
{
    nb_table_add_row(aggregate);
    nb_cell_int(aggregate, "pairs", k);
    nb_cell_int(aggregate, "bandwidth_windows", bandwidth.windows);
    nb_cell_real(aggregate, "aggregate_bandwidth_MBps", bandwidth.sum);
    nb_cell_real(aggregate, "bandwidth_per_pair_min_MBps", bandwidth.min);
    nb_cell_real(aggregate, "bandwidth_per_pair_mean_MBps", bandwidth.sum / k);
    nb_cell_int(aggregate, "rate_windows", rate.windows);
    nb_cell_real(aggregate, "message_rate_per_s", rate.sum * 1e6);
    nb_cell_real(aggregate, "message_rate_per_pair_min_per_s", rate.min * 1e6);
}

/* Rank 0: loaded's parameters (and that an odd rank only waits). */
static void loaded_parameters(const nb_context *ctx, int pairs)
{
    const loaded_settings *ls = ctx->options->settings;
    nb_result *r = ctx->result;
    nb_param_int(r, "ranks", ctx->size);
    nb_param_int(r, "pairs", pairs);
    nb_param_int(r, "latency_size_bytes", (long long)ls->latency_size);
    nb_param_int(r, "bandwidth_size_bytes", (long long)ls->bandwidth_size);
    nb_param_int(r, "rate_size_bytes", (long long)ls->rate_size);
    nb_param_int(r, "window", ls->window);
    nb_param_common(ctx);
    if (ctx->size % 2 != 0)
        nb_warning(r, "%d ranks: rank %d has no partner and only waits", ctx->size,
                   ctx->size - 1);
}

void run_loaded(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const loaded_settings *ls = o->settings;
    nb_result *r = ctx->result;
    int pairs = ctx->size / 2;
    size_t largest = o->sizes[o->size_count - 1];
    size_t stride = (largest + 63) / 64 * 64;
    void *send = nb_buffer_new(largest > 0 ? largest : 1);
    void *recv = nb_buffer_new(largest > 0 ? largest : 1);
    nb_pingpong pair = {.comm = ranks_below(ctx, 2), .rank = ctx->rank,
                        .tag = NB_TAG_DATA, .send = send, .recv = recv};
    window_state ws = {.comm = ctx->pair, .partner = ctx->rank ^ 1, .sender = ctx->rank % 2 == 0,
                       .window = ls->window, .stride = stride > 0 ? stride : 64};
    /* The sender sends every message of a window from one buffer; the receiver needs one slot
     * per message in flight (concurrent receives must not share a buffer). */
    ws.slots = nb_buffer_new(ws.sender ? ws.stride : ws.stride * (size_t)ls->window);
    ws.requests = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)ls->window, sizeof *ws.requests);

    nb_table *latency_table = NULL, *aggregate = NULL;
    if (r != NULL) {
        loaded_parameters(ctx, pairs);
        latency_table = nb_result_add_declared_table(r, &loaded_latency_table);
        aggregate = nb_result_add_declared_table(r, &aggregate_table);
    }

    /* Rank 0 stops the loading pairs' senders with a message: its connection to each of them
     * is made now, not under load (over a saturated link a connection request can be dropped
     * and retried for seconds, or fail). */
    connect_senders(ctx, pairs);

    /* (a) latency of pair 0 while k = 0 .. pairs-1 other pairs stream */
    latency baseline = {0}, last = {0};
    for (int k = 0; k < pairs; k++) {
        double load = 0.0;
        latency l = latency_under_load(ctx, &pair, &ws, k, &load);
        if (k == 0)
            baseline = l;
        last = l;
        if (r != NULL) {
            add_latency_row(ctx, latency_table, "loading_pairs", k, ls->latency_size, l,
                            baseline);
            nb_cell_real(latency_table, "load_bandwidth_MBps", load);
        }
    }

    /* (b) k = 1 .. pairs pairs at once: bandwidth, then message rate */
    pair_figures bandwidth_one = {0}, bandwidth_all = {0}, rate_one = {0}, rate_all = {0};
    for (int k = 1; k <= pairs; k++) {
        pair_figures bandwidth = pairs_at_once(ctx, &ws, k, ls->bandwidth_size, 1);
        pair_figures rate = pairs_at_once(ctx, &ws, k, ls->rate_size, 0);
        if (k == 1) {
            bandwidth_one = bandwidth;
            rate_one = rate;
        }
        bandwidth_all = bandwidth;
        rate_all = rate;
        if (r != NULL)
            add_aggregate_row(aggregate, k, bandwidth, rate);
    }

    if (r != NULL) {
        nb_summary_int(r, "pairs", pairs);
        nb_summary_int(r, "loading_pairs_max", pairs - 1);
        nb_summary_real(r, "loaded_latency_k0_us", baseline.median_us);
        nb_summary_real(r, "loaded_latency_max_k_us", last.median_us);
        if (pairs > 1) {
            summary_cost(ctx, "loaded_latency_cost_max_k_us", baseline, last);
            nb_summary_real(r, "loaded_latency_noise_floor_max_k_us",
                            noise_floor_us(ctx, baseline, last));
        } else {
            nb_summary_null(r, "loaded_latency_cost_max_k_us");
            nb_summary_null(r, "loaded_latency_noise_floor_max_k_us");
            nb_unreliable(r, "loaded_latency_cost_max_k_us",
                          "with %d ranks (1 pair) no other pair can load pair 0: only k = 0 was "
                          "measured; run with at least 4 ranks", ctx->size);
        }
        nb_summary_real(r, "aggregate_bandwidth_MBps", bandwidth_all.sum);
        nb_summary_real(r, "bandwidth_per_pair_min_MBps", bandwidth_all.min);
        nb_summary_real(r, "aggregate_bandwidth_one_pair_MBps", bandwidth_one.sum);
        /* 1.0: k pairs move k times what one pair moves alone */
        nb_summary_real(r, "aggregate_bandwidth_scaling",
                        bandwidth_all.sum / (pairs * bandwidth_one.sum));
        nb_summary_real(r, "message_rate_per_s", rate_all.sum * 1e6);
        nb_summary_real(r, "message_rate_one_pair_per_s", rate_one.sum * 1e6);
    }
    if (pair.comm != MPI_COMM_NULL)
        MPI_Comm_free(&pair.comm);
    free(ws.slots);
    free(ws.requests);
    free(send);
    free(recv);
}

int loaded_finish(nb_options *o, void *settings)
{
    const loaded_settings *ls = settings;
    o->sizes[0] = ls->latency_size;
    o->sizes[1] = ls->bandwidth_size;
    o->sizes[2] = ls->rate_size;
    o->size_count = nb_sort_unique_sizes(o->sizes, 3);
    return 0;
}

/* Before MPI: a receiver's `window` slots of the largest size (rounded up to 64 bytes). */
unsigned long long loaded_buffer_bytes(const nb_options *o, char *how, size_t length,
                                       const char **hint)
{
    const loaded_settings *ls = o->settings;
    unsigned long long largest = o->size_count > 0 ? o->sizes[o->size_count - 1] : 0;
    unsigned long long stride = (largest + 63) / 64 * 64;
    if (stride == 0)
        stride = 64;
    char text[32];
    nb_format_size((size_t)largest, text, sizeof text);
    snprintf(how, length, "message size %s x --window %d = %llu bytes", text, ls->window,
             stride * (unsigned long long)ls->window);
    *hint = " or --window";
    return stride * (unsigned long long)ls->window + 2 * largest;
}
