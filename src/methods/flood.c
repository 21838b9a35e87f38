/* flood.c - flood test at queue depth q: g, G and unidirectional bandwidth
 * (Bell et al. §4.2, Kutlug §3.2.2). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"
#include "flood_catalogue.h"
#include "methods.h"

/* Size of the closing reply (Bell: "the sender waits for a single reply from the receiver"). */
#define REPLY_BYTES 8

typedef struct {
    MPI_Comm pair;
    int rank;
    int size;                  /* message size in bytes */
    int queue_depth;           /* q */
    char *buffers;             /* q slots of `stride` bytes: sends on rank 0, receives on 1 */
    size_t stride;
    MPI_Request *requests;     /* q slots, used as a ring */
    char reply[REPLY_BYTES];
} flood_state;

/* Waits for `count` requests of the ring starting at slot `first`. */
static void wait_ring(MPI_Request *requests, int slots, int first, int count)
{
    int before_wrap = count < slots - first ? count : slots - first;
    nb_waitall(before_wrap, requests + first);
    if (count > before_wrap)
        nb_waitall(count - before_wrap, requests);
}

/* Message `index` of the flood: rank 0 sends it, rank 1 receives it, into ring slot index % q. */
static void post_message(const flood_state *s, long index, MPI_Request *request)
{
    char *buffer = s->buffers + (size_t)(index % s->queue_depth) * s->stride;
    if (s->rank == 0)
        MPI_Isend(buffer, s->size, MPI_BYTE, 1, NB_TAG_DATA, s->pair, request);
    else
        MPI_Irecv(buffer, s->size, MPI_BYTE, 0, NB_TAG_DATA, s->pair, request);
}

/* Bell §4.2: q operations in flight; wait for q/2, issue q/2 more; the receiver's reply after
 * the last message guarantees that everything arrived. Both ranks run the same window, rank 0
 * with sends and rank 1 with receives. One iteration = one message. */
static double flood_loop(void *state, long messages)
{
    flood_state *s = state;
    int q = s->queue_depth;
    int half = q / 2 > 0 ? q / 2 : 1;
    MPI_Request *requests = s->requests;
    long issued = 0, completed = 0;
    double start = MPI_Wtime();
    for (; issued < messages && issued < q; issued++)
        post_message(s, issued, &requests[issued % q]);
    while (completed < messages) {
        long batch = issued - completed < half ? issued - completed : half;
        wait_ring(requests, q, (int)(completed % q), (int)batch);
        completed += batch;
        for (; issued < messages && issued - completed < q; issued++)
            post_message(s, issued, &requests[issued % q]);
    }
    if (s->rank == 0)
        MPI_Recv(s->reply, REPLY_BYTES, MPI_BYTE, 1, NB_TAG_REPLY, s->pair, MPI_STATUS_IGNORE);
    else
        MPI_Send(s->reply, REPLY_BYTES, MPI_BYTE, 0, NB_TAG_REPLY, s->pair);
    return MPI_Wtime() - start;
}

static double bandwidth_MBps(size_t size, double time_us)
{
    if (size == 0)
        return 0.0;
    return time_us > 0.0 ? (double)size / time_us : NAN;
}

/* Rank 0: flood_best, g, the G fit and the peak bandwidth from the per-size best times. */
static void report_flood(const nb_context *ctx, const double *best_time_us, const int *best_q)
{
    const nb_options *o = ctx->options;
    const flood_settings *fs = o->settings;
    nb_result *r = ctx->result;
    nb_table *best = nb_result_add_declared_table(r, &flood_best_table);
    double peak = -1.0;
    size_t peak_size = 0;
    for (size_t i = 0; i < o->size_count; i++) {
        double bandwidth = bandwidth_MBps(o->sizes[i], best_time_us[i]);
        nb_table_add_row(best);
        nb_cell_int(best, "size_bytes", (long long)o->sizes[i]);
        nb_cell_int(best, "best_queue_depth", best_q[i]);
        nb_cell_real(best, "time_per_message_us", best_time_us[i]);
        nb_cell_real(best, "bandwidth_MBps", bandwidth);
        if (bandwidth > peak) {
            peak = bandwidth;
            peak_size = o->sizes[i];
        }
    }

    /* g: the gap at the smallest size (Bell §4.2: "provides the gap parameter g when minimum
     * sized messages are used"). */
    nb_summary_real(r, "g_us", best_time_us[0]);
    nb_summary_int(r, "g_queue_depth", best_q[0]);

    /* G: slope of the best time per message over the large sizes. */
    double x[NB_MAX_SIZES], y[NB_MAX_SIZES];
    size_t points = 0;
    for (size_t i = 0; i < o->size_count; i++)
        if (o->sizes[i] >= fs->G_fit_min_size && o->sizes[i] <= fs->G_fit_max_size &&
            isfinite(best_time_us[i])) {
            x[points] = (double)o->sizes[i];
            y[points] = best_time_us[i];
            points++;
        }
    nb_linfit fit;
    if (points >= 2 && nb_fit_robust_nonneg(x, y, 0, points - 1, NB_FIT_MAX_RMS_RELATIVE, &fit) == 0) {
        nb_summary_real(r, "G_ns_per_byte", fit.slope * 1000.0); /* us/byte -> ns/byte */
        nb_summary_int(r, "G_fit_min_size_bytes", (long long)fs->G_fit_min_size);
        nb_summary_int(r, "G_fit_max_size_bytes", (long long)fs->G_fit_max_size);
        nb_summary_int(r, "G_fit_points", (long long)fit.points_used);
        nb_summary_real(r, "G_fit_rms_relative", fit.rms_relative);
        nb_summary_int(r, "G_fit_outliers", (long long)fit.outliers);
        if (!fit.reliable)
            nb_unreliable(r, "G_ns_per_byte", "fit over %zu sizes in [%zu, %zu] B: rms residual %.1f%% of "
                          "the mean (limit %.0f%%), %zu of %zu points rejected as outliers",
                          points, fs->G_fit_min_size, fs->G_fit_max_size, 100.0 * fit.rms_relative,
                          100.0 * NB_FIT_MAX_RMS_RELATIVE, fit.outliers, points);
    } else {
        nb_summary_null(r, "G_ns_per_byte");
        nb_summary_int(r, "G_fit_min_size_bytes", (long long)fs->G_fit_min_size);
        nb_summary_int(r, "G_fit_max_size_bytes", (long long)fs->G_fit_max_size);
        nb_summary_int(r, "G_fit_points", (long long)points);
        nb_summary_null(r, "G_fit_rms_relative");
        nb_summary_int(r, "G_fit_outliers", 0);
        nb_unreliable(r, "G_ns_per_byte", "only %zu size(s) in [--G-fit-min-size %zu, --G-fit-max-size %zu] B; the fit "
                      "needs at least 2 (3 to be reliable): raise --max-size or lower "
                      "--G-fit-min-size", points, fs->G_fit_min_size, fs->G_fit_max_size);
    }
    nb_summary_real(r, "bandwidth_unidirectional_peak_MBps", peak);
    nb_summary_int(r, "bandwidth_unidirectional_peak_size_bytes", (long long)peak_size);
}

void run_flood(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const flood_settings *fs = o->settings;
    size_t largest = o->sizes[o->size_count - 1];
    int deepest = 1;
    for (size_t k = 0; k < fs->queue_depth_count; k++)
        if (fs->queue_depths[k] > deepest)
            deepest = fs->queue_depths[k];

    flood_state state = {.pair = ctx->pair, .rank = ctx->rank};
    /* One slot per message in flight, cache-line separated. */
    state.stride = (largest + 63) / 64 * 64;
    if (state.stride == 0)
        state.stride = 64;
    state.buffers = nb_buffer_new(state.stride * (size_t)deepest);
    state.requests = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)deepest, sizeof *state.requests);

    nb_table *table = NULL;
    if (ctx->result != NULL) {
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        long long depths[FLOOD_MAX_QUEUE_DEPTHS];
        for (size_t k = 0; k < fs->queue_depth_count; k++)
            depths[k] = fs->queue_depths[k];
        nb_param_int_list(ctx->result, "queue_depths", depths, fs->queue_depth_count);
        nb_param_common(ctx);
        nb_param_int(ctx->result, "G_fit_min_size_bytes", (long long)fs->G_fit_min_size);
        nb_param_int(ctx->result, "G_fit_max_size_bytes", (long long)fs->G_fit_max_size);
        nb_param_real(ctx->result, "fit_max_rms_relative", NB_FIT_MAX_RMS_RELATIVE);
        table = nb_result_add_declared_table(ctx->result, &flood_table);
    }

    double best_time_us[NB_MAX_SIZES];
    int best_q[NB_MAX_SIZES];
    nb_measurement m;
    for (size_t i = 0; i < o->size_count; i++) {
        size_t size = o->sizes[i];
        state.size = (int)size;
        best_time_us[i] = NAN;
        best_q[i] = 0;
        for (size_t k = 0; k < fs->queue_depth_count; k++) {
            int q = fs->queue_depths[k];
            state.queue_depth = q;
            nb_measure(ctx, flood_loop, &state, 2L * q, o->iterations, o->time_cap_ms * 1e-3,
                       o->repetitions, &m);
            if (ctx->rank != 0)
                continue;
            char quantity[96];
            snprintf(quantity, sizeof quantity,
                     "time_per_message_median_us[size_bytes=%zu,queue_depth=%d]", size, q);
            nb_check_timer_resolution(ctx, &m, quantity);
            nb_table_add_row(table);
            nb_cell_int(table, "size_bytes", (long long)size);
            nb_cell_int(table, "queue_depth", q);
            nb_cell_int(table, "messages", m.iterations);
            nb_cell_real(table, "time_per_message_min_us", m.min_us);
            nb_cell_real(table, "time_per_message_median_us", m.median_us);
            nb_cell_real(table, "time_per_message_max_us", m.max_us);
            nb_cell_real(table, "bandwidth_median_MBps", bandwidth_MBps(size, m.median_us));
            if (!(m.median_us >= best_time_us[i])) {
                best_time_us[i] = m.median_us;
                best_q[i] = q;
            }
        }
    }
    if (ctx->result != NULL)
        report_flood(ctx, best_time_us, best_q);
    free(state.buffers);
    free(state.requests);
}

/* Before MPI: one slot per message in flight, each rounded up to 64 bytes (as run_flood). */
unsigned long long flood_buffer_bytes(const nb_options *o, char *how, size_t length,
                                      const char **hint)
{
    const flood_settings *fs = o->settings;
    unsigned long long largest = nb_largest_size(o);
    unsigned long long deepest = 1, stride = (largest + 63) / 64 * 64;
    for (size_t k = 0; k < fs->queue_depth_count; k++)
        if ((unsigned long long)fs->queue_depths[k] > deepest)
            deepest = (unsigned long long)fs->queue_depths[k];
    if (stride == 0)
        stride = 64;
    char text[32];
    nb_format_size((size_t)largest, text, sizeof text);
    snprintf(how, length, "message size %s x queue depth %llu = %llu bytes", text, deepest,
             stride * deepest);
    *hint = " or --queue-depths";
    return stride * deepest;
}
