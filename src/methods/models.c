/* models.c - collectives against what the network can do.
 *
 * models: LogGP predictions of the common collective algorithms (binomial-tree broadcast and
 * reduce, recursive-doubling allreduce, recursive-doubling or ring allgather, pairwise-exchange
 * alltoall), from the LogGP parameters of a `netbench loggp` result or of a quick PRTT
 * measurement (Hoefler, Schneider, Lumsdaine, "LogGP in Theory and Practice", sections 2 and 4),
 * beside the same collectives timed call by call (operations.h); measured / predicted per
 * collective and size.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "models_catalogue.h"
#include "json_read.h"
#include "methods.h"
#include "operations.h"

#define MODELS_MAX_QUICK NB_MAX_SIZES
#define MODELS_PRTT_MESSAGES 10    /* n of PRTT(n, d, s), Hoefler's default */
#define MODELS_MIN_ROUNDS 3

/* The quick measurement: per size s, PRTT(1,0,s)/2 (one message end to end, eq. (1)), G_all
 * eq. (5), o_s eq. (4), o_r by Kielmann's method. */
typedef struct {
    double size;
    double prtt_1_0_us;
    double one_message_us;
    double G_all_us;
    double o_s_us;
    double o_r_us;
} quick_point;

/* The LogGP terms of a message of m bytes. */
typedef struct {
    double one_message_us;     /* T(m) = L + (m - 1) G: from the send's start to the received */
    double send_interval_us;   /* S(m) = max(o_s, g + (m - 1) G): between two sends of a rank */
    double o_r_us;
} loggp_terms;

typedef struct {
    const models_settings *file;      /* or NULL: the quick points */
    const quick_point *points;
    size_t point_count;
} loggp_source;

static double interpolate(const quick_point *p, size_t n, double m, size_t field)
{
    /* field: offset of a double in quick_point */
#define FIELD(i) (*(const double *)((const char *)&p[(i)] + field))
    if (n == 1)
        return FIELD(0);
    size_t i = 0;
    while (i + 2 < n && m > p[i + 1].size)
        i++;
    double x0 = p[i].size, x1 = p[i + 1].size;
    double y0 = FIELD(i), y1 = FIELD(i + 1);
#undef FIELD
    return y0 + (y1 - y0) * (m - x0) / (x1 - x0);
}

static loggp_terms terms_at(const loggp_source *src, double m)
{
    loggp_terms t;
    if (src->file != NULL) {
        const models_settings *f = src->file;
        size_t r = 0;
        while (r + 1 < f->range_count && m >= f->ranges[r + 1].first_size)
            r++;
        const loggp_range *range = &f->ranges[r];
        t.one_message_us = f->L_us + (m - 1.0) * range->G_us_per_byte;
        t.send_interval_us = fmax(range->o_s_us, range->g_us + (m - 1.0) * range->G_us_per_byte);
        t.o_r_us = range->o_r_us;
        return t;
    }
    const quick_point *p = src->points;
    size_t n = src->point_count;
    t.one_message_us = interpolate(p, n, m, offsetof(quick_point, one_message_us));
    double gall = interpolate(p, n, m, offsetof(quick_point, G_all_us));
    double os = interpolate(p, n, m, offsetof(quick_point, o_s_us));
    t.send_interval_us = fmax(fmax(os, gall), 0.0);
    t.o_r_us = fmax(interpolate(p, n, m, offsetof(quick_point, o_r_us)), 0.0);
    return t;
}

/* The collectives modelled, and their algorithms. */
typedef enum { MODEL_BCAST, MODEL_REDUCE, MODEL_ALLREDUCE, MODEL_ALLGATHER, MODEL_ALLTOALL,
               MODEL_COUNT } model_kind;

static const nb_operation model_ops[MODEL_COUNT] = {
    {"bcast", 1, {NB_PRIM_BCAST}},
    {"reduce", 1, {NB_PRIM_REDUCE}},
    {"allreduce", 1, {NB_PRIM_ALLREDUCE}},
    {"allgather", 1, {NB_PRIM_ALLGATHER}},
    {"alltoall", 1, {NB_PRIM_ALLTOALL}},
};

static int is_power_of_two(int p)
{
    return p > 0 && (p & (p - 1)) == 0;
}

static int floor_log2(int p)
{
    int k = 0;
    while ((2 << k) <= p)
        k++;
    return k;
}

/* Binomial-tree broadcast from rank 0 (the tree of MPICH and Open MPI): a rank that has the
 * data at time t sends to its children, the farthest first, the j-th at t + j S(m); a child has
 * it T(m) after that send started. The time is the latest rank's. */
static double model_bcast(int P, loggp_terms t)
{
    double *have = malloc((size_t)P * sizeof *have), latest = 0.0;
    if (have == NULL)
        return NAN;
    have[0] = 0.0;
    for (int r = 0; r < P; r++) {
        /* children of r: r + mask for the masks below r's lowest set bit (all, for rank 0) */
        int low = r == 0 ? 1 << (floor_log2(P) + 1) : r & -r;
        int j = 0;
        for (int mask = low >> 1; mask >= 1; mask >>= 1) {
            if (r + mask >= P)
                continue;
            have[r + mask] = have[r] + j * t.send_interval_us + t.one_message_us;
            j++;
        }
        if (have[r] > latest)
            latest = have[r];
    }
    free(have);
    return latest;
}

/* Binomial-tree reduce to rank 0, the mirror of the broadcast: a rank receives its children's
 * partial results, the nearest first; each arrives T(m) after the child was done, takes o_r after
 * the previous receive at the earliest, and costs C(m) (MPI_Reduce_local of m bytes) to combine;
 * then the rank sends its own. The time is when rank 0 is done. */
static double model_reduce(int P, loggp_terms t, double combine_us)
{
    double *done = malloc((size_t)P * sizeof *done), result = NAN;
    if (done == NULL)
        return NAN;
    /* children have higher ranks: go from the last rank down */
    for (int r = P - 1; r >= 0; r--) {
        int low = r == 0 ? 1 << (floor_log2(P) + 1) : r & -r;
        double at = 0.0;
        int first = 1;
        for (int mask = 1; mask < low; mask <<= 1) {
            if (r + mask >= P)
                break;
            double arrival = done[r + mask] + t.one_message_us;
            at = fmax(first ? arrival : at + t.o_r_us, arrival) + combine_us;
            first = 0;
        }
        done[r] = at;
    }
    result = done[0];
    free(done);
    return result;
}

/* Recursive doubling: log2 P' exchange steps of m bytes (P' the largest power of two <= P),
 * each T(m) + C(m); with P not a power of two, one step before (the extra ranks hand in their
 * data: T(m) + C(m)) and one after (they get the result: T(m)). */
static double model_allreduce(int P, loggp_terms t, double combine_us)
{
    int steps = floor_log2(P);
    double time = steps * (t.one_message_us + combine_us);
    if (!is_power_of_two(P))
        time += 2.0 * t.one_message_us + combine_us;
    return time;
}

/* Allgather of b bytes per rank: recursive doubling for P a power of two, step k exchanges
 * 2^k b bytes: sum over k < log2 P of T(2^k b); otherwise the ring: (P - 1) T(b). */
static double model_allgather(const loggp_source *src, int P, double block)
{
    double time = 0.0;
    if (is_power_of_two(P)) {
        for (int k = 0; (1 << k) < P; k++)
            time += terms_at(src, block * (double)(1 << k)).one_message_us;
    } else {
        time = (P - 1) * terms_at(src, block).one_message_us;
    }
    return time;
}

/* Pairwise exchange: P - 1 steps, each an exchange of b bytes with one peer: (P - 1) T(b). */
static double model_alltoall(const loggp_source *src, int P, double block)
{
    return (P - 1) * terms_at(src, block).one_message_us;
}

static const char *model_algorithm(model_kind kind, int P)
{
    switch (kind) {
    case MODEL_BCAST:
        return "binomial_tree";
    case MODEL_REDUCE:
        return "binomial_tree";
    case MODEL_ALLREDUCE:
        return "recursive_doubling";
    case MODEL_ALLGATHER:
        return is_power_of_two(P) ? "recursive_doubling" : "ring";
    default:
        return "pairwise_exchange";
    }
}

/* ---- the quick LogGP measurement (no --loggp-json) ------------------------------------------ */

static double prtt(const nb_context *pair_ctx, nb_prtt *s, int n, double delay_us,
                   nb_timed_loop loop)
{
    nb_measurement m;
    nb_prtt_measure(pair_ctx, s, n, delay_us, loop, MODELS_MIN_ROUNDS, &m);
    /* the fastest loop: on a shared node a loop is only ever lengthened (a preempted rank),
     * while the collectives' figures leave preempted calls out */
    double fastest = m.min_us;
    MPI_Bcast(&fastest, 1, MPI_DOUBLE, 0, pair_ctx->pair);
    return fastest;
}

/* Ranks 0 and 1 measure the sizes; the others wait at a barrier, sleeping between tests so
 * that they take no CPU time from a measuring rank on their core. */
static void quick_loggp(const nb_context *ctx, const size_t *sizes, size_t count,
                        quick_point *points)
{
    MPI_Comm pair = MPI_COMM_NULL;
    MPI_Comm_split(ctx->pair, ctx->rank < 2 ? 0 : MPI_UNDEFINED, ctx->rank, &pair);
    if (pair != MPI_COMM_NULL) {
        nb_context pair_ctx = *ctx;
        pair_ctx.pair = pair;
        pair_ctx.size = 2;
        size_t largest = sizes[count - 1];
        nb_prtt s = {.comm = pair, .rank = ctx->rank};
        s.send = nb_buffer_new(largest);
        s.recv = nb_buffer_new(largest);
        int n = MODELS_PRTT_MESSAGES;
        for (size_t i = 0; i < count; i++) {
            s.size = (int)sizes[i];
            quick_point *p = &points[i];
            p->size = (double)sizes[i];
            p->prtt_1_0_us = prtt(&pair_ctx, &s, 1, 0.0, nb_prtt_loop);
            double many = prtt(&pair_ctx, &s, n, 0.0, nb_prtt_loop);
            p->G_all_us = (many - p->prtt_1_0_us) / (n - 1);
            /* d_G = PRTT(1,0,s) > G_all (section 2.3); PRTT(2,0,s) where it is not */
            double d_G = p->prtt_1_0_us;
            if (p->G_all_us > d_G)
                d_G = prtt(&pair_ctx, &s, 2, 0.0, nb_prtt_loop);
            double delayed = prtt(&pair_ctx, &s, n, d_G, nb_prtt_loop);
            p->o_s_us = (delayed - p->prtt_1_0_us) / (n - 1) - d_G;
            p->o_r_us = prtt(&pair_ctx, &s, 1, d_G, nb_prtt_receive_loop);
            p->one_message_us = p->prtt_1_0_us / 2.0;
        }
        free(s.send);
        free(s.recv);
        MPI_Comm_free(&pair);
    }
    MPI_Request barrier;
    MPI_Ibarrier(ctx->pair, &barrier);
    int done = 0;
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
    while (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        if (ctx->rank >= 2)
            nanosleep(&pause, NULL);
    MPI_Bcast(points, (int)(count * sizeof *points), MPI_BYTE, 0, ctx->pair);
}

/* C(m): MPI_Reduce_local of m bytes of MPI_FLOAT (the combining step of a reduction), the
 * fastest of 5 loops of enough calls for 200 us, on rank 0. */
static double combine_time_us(size_t bytes)
{
    int floats = (int)(bytes / sizeof(float));
    if (floats < 1)
        floats = 1;
    float *in = nb_buffer_new((size_t)floats * sizeof(float));
    float *inout = nb_buffer_new((size_t)floats * sizeof(float));
    long calls = 1;
    double best = INFINITY;
    for (int trial = 0; trial < 8; trial++) {
        double start = MPI_Wtime();
        for (long i = 0; i < calls; i++)
            MPI_Reduce_local(in, inout, floats, MPI_FLOAT, MPI_SUM);
        double per_call = (MPI_Wtime() - start) / (double)calls;
        if (trial >= 3 && per_call < best)
            best = per_call;
        if ((double)calls * per_call < 200e-6 && calls < 1000000)
            calls *= 2;
    }
    free(in);
    free(inout);
    return best * 1e6;
}

/* ---- output ---------------------------------------------------------------------------------- */

/* A quick LogGP figure below 0 is noise larger than the quantity: null, flagged (the models
 * take it as 0). */
static void quick_cell(nb_result *r, nb_table *table, const char *column, double size,
                       double value)
{
    nb_cell_real(table, column, value >= 0.0 ? value : NAN);
    if (!(value >= 0.0)) {
        char quantity[96];
        snprintf(quantity, sizeof quantity, "%s[size_bytes=%.0f]", column, size);
        nb_unreliable(r, quantity, "measured %.3g: below the noise of the quick measurement "
                      "(taken as 0 by the models)", value);
    }
}

static void report_parameters(const nb_context *ctx, const loggp_source *src)
{
    nb_result *r = ctx->result;
    if (src->file != NULL) {
        const models_settings *f = src->file;
        nb_table *table = nb_result_add_declared_table(r, &loggp_ranges_table);
        for (size_t i = 0; i < f->range_count; i++) {
            const loggp_range *g = &f->ranges[i];
            nb_table_add_row(table);
            nb_cell_int(table, "range", (long long)i);
            nb_cell_int(table, "first_size_bytes", (long long)g->first_size);
            nb_cell_int(table, "last_size_bytes", (long long)g->last_size);
            nb_cell_real(table, "g_us", g->g_us);
            nb_cell_real(table, "G_ns_per_byte", g->G_us_per_byte * 1e3);
            nb_cell_real(table, "o_s_us", g->o_s_us);
            nb_cell_real(table, "o_r_us", g->o_r_us);
        }
        nb_summary_real(r, "L_us", f->L_us);
        nb_summary_real(r, "g_small_us", f->ranges[0].g_us);
        nb_summary_real(r, "o_s_small_us", f->ranges[0].o_s_us);
        nb_summary_real(r, "o_r_small_us", f->ranges[0].o_r_us);
        nb_summary_real(r, "G_large_ns_per_byte", f->ranges[f->range_count - 1].G_us_per_byte * 1e3);
        return;
    }
    const quick_point *p = src->points;
    size_t n = src->point_count;
    nb_table *table = nb_result_add_declared_table(r, &loggp_quick_table);
    for (size_t i = 0; i < n; i++) {
        nb_table_add_row(table);
        nb_cell_int(table, "size_bytes", (long long)p[i].size);
        nb_cell_real(table, "prtt_1_0_us", p[i].prtt_1_0_us);
        nb_cell_real(table, "one_message_us", p[i].one_message_us);
        quick_cell(r, table, "G_all_us", p[i].size, p[i].G_all_us);
        quick_cell(r, table, "o_s_us", p[i].size, p[i].o_s_us);
        quick_cell(r, table, "o_r_us", p[i].size, p[i].o_r_us);
    }
    double G = n >= 2 ? (p[n - 1].one_message_us - p[n - 2].one_message_us) /
                            (p[n - 1].size - p[n - 2].size)
                      : NAN;
    const char *keys[5] = {"L_us", "g_small_us", "o_s_small_us", "o_r_small_us",
                           "G_large_ns_per_byte"};
    double values[5] = {p[0].one_message_us, p[0].G_all_us, p[0].o_s_us, p[0].o_r_us, G * 1e3};
    for (int k = 0; k < 5; k++) {
        nb_summary_real(r, keys[k], values[k] >= 0.0 ? values[k] : NAN);
        if (!(values[k] >= 0.0))
            nb_unreliable(r, keys[k], "measured %.3g: below the noise of the quick measurement "
                          "(taken as 0 by the models)", values[k]);
    }
    for (size_t i = 0; i < n; i++) {
        char quantity[64];
        if (!(p[i].one_message_us > 0.0)) {
            snprintf(quantity, sizeof quantity, "one_message_us[size_bytes=%.0f]", p[i].size);
            nb_unreliable(r, quantity, "no positive round trip measured");
        }
    }
}

/* The model's prediction for collective k at m bytes on P ranks (c: the combine time C(m) of
 * a reduction, else 0). */
static double predict(model_kind k, const loggp_source *src, int P, double m, double c)
{
    loggp_terms t = terms_at(src, m);
    switch (k) {
    case MODEL_BCAST:
        return model_bcast(P, t);
    case MODEL_REDUCE:
        return model_reduce(P, t, c);
    case MODEL_ALLREDUCE:
        return model_allreduce(P, t, c);
    case MODEL_ALLGATHER:
        return model_allgather(src, P, m);
    default:
        return model_alltoall(src, P, m);
    }
}

/* Rank 0: what the LogGP file of --loggp-json says about its own figures: measured with
 * another MPI library, or with unresolved parameters taken as 0. */
static void warn_about_the_file(nb_result *result, const models_settings *ms)
{
    char library[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int length = 0;
    MPI_Get_library_version(library, &length);
    library[strcspn(library, "\r\n")] = '\0';
    if (strcmp(library, ms->file_library) != 0)
        nb_warning(result, "the LogGP parameters of %s were measured with \"%s\", this "
                   "run uses \"%s\": the predictions are for another library",
                   ms->loggp_json, ms->file_library, library);
    if (ms->nulls_taken_as_zero > 0)
        nb_warning(result, "%d LogGP parameter(s) of %s are null (unresolved: below "
                   "the noise of their range) and were taken as 0",
                   ms->nulls_taken_as_zero, ms->loggp_json);
}

/* Rank 0: one row of the table models. */
static void add_model_row(nb_table *table, model_kind k, int P, size_t size, double predicted,
                          double c, const nb_op_figures *f, double ratio)
{
    nb_table_add_row(table);
    nb_cell_text(table, "collective", model_ops[k].name);
    nb_cell_text(table, "algorithm", model_algorithm(k, P));
    nb_cell_int(table, "size_bytes", (long long)size);
    nb_cell_real(table, "predicted_us", predicted);
    nb_cell_real(table, "combine_us", c);
    nb_cell_real(table, "measured_median_us", f->median_us);
    nb_cell_real(table, "measured_spread_us", f->spread_us);
    nb_cell_real(table, "measured_to_predicted", ratio);
}

/* Without --loggp-json: the quick LogGP measurement at 1 byte and every size of the run, into
 * src's points (the caller frees them). */
static quick_point *measure_quick(const nb_context *ctx, loggp_source *src)
{
    const nb_options *o = ctx->options;
    size_t quick_sizes[NB_MAX_SIZES + 1];
    quick_sizes[0] = 1;
    for (size_t i = 0; i < o->size_count; i++)
        quick_sizes[i + 1] = o->sizes[i];
    size_t point_count = nb_sort_unique_sizes(quick_sizes, o->size_count + 1);
    quick_point *points = nb_calloc_or_abort(ctx->pair, point_count, sizeof *points);
    if (ctx->rank == 0)
        fprintf(stderr, "netbench models: quick LogGP measurement (%zu sizes)\n", point_count);
    quick_loggp(ctx, quick_sizes, point_count, points);
    src->points = points;
    src->point_count = point_count;
    return points;
}

void run_models(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const models_settings *ms = o->settings;
    nb_result *result = ctx->result;
    int P = ctx->size;

    /* buffers: allgather and alltoall move size x ranks bytes */
    size_t largest = o->sizes[o->size_count - 1], buffer = largest * (size_t)P;
    if (!nb_size_fits_int(buffer)) {
        if (ctx->rank == 0)
            fprintf(stderr, "netbench: models: %zu bytes x %d ranks exceed an MPI int count; "
                    "lower --max-size\n", largest, P);
        MPI_Abort(ctx->pair, 1);
    }

    /* the LogGP parameters */
    loggp_source src = {.file = ms->loggp_json != NULL ? ms : NULL};
    quick_point *points = ms->loggp_json == NULL ? measure_quick(ctx, &src) : NULL;

    /* C(m) for the reductions, rank 0's */
    double *combine = nb_calloc_or_abort(ctx->pair, o->size_count, sizeof *combine);
    if (ctx->rank == 0)
        for (size_t i = 0; i < o->size_count; i++)
            combine[i] = combine_time_us(o->sizes[i]);

    nb_op_state s = nb_op_state_new(ctx, buffer);
    const nb_operation *ops[MODEL_COUNT];
    for (int k = 0; k < MODEL_COUNT; k++)
        ops[k] = &model_ops[k];
    nb_op_figures *figures =
        nb_calloc_or_abort(ctx->pair, o->size_count * MODEL_COUNT, sizeof *figures);
    if (ctx->rank == 0)
        fprintf(stderr, "netbench models: timing %d collectives at %zu sizes\n", MODEL_COUNT,
                o->size_count);
    for (size_t i = 0; i < o->size_count; i++) {
        s.total = (int)o->sizes[i];
        s.block = (int)o->sizes[i];
        nb_time_operations(&s, ops, MODEL_COUNT, ms->calls, o->repetitions,
                        &figures[i * MODEL_COUNT]);
    }

    if (result != NULL) {
        nb_param_int(result, "ranks", P);
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        nb_param_int(result, "calls", ms->calls);
        nb_param_text(result, "synchronisation", "window");
        nb_param_text(result, "loggp_source", ms->loggp_json != NULL ? "file" : "quick");
        nb_param_common(ctx);
        if (ms->loggp_json == NULL)
            nb_param_int(result, "prtt_messages", MODELS_PRTT_MESSAGES);
        report_parameters(ctx, &src);
        if (ms->loggp_json != NULL)
            warn_about_the_file(result, ms);
        nb_table *table = nb_result_add_declared_table(result, &models_table);
        nb_table *timings = nb_result_add_declared_table(result, &nb_operation_timings_table);
        double ratios[NB_MAX_SIZES * MODEL_COUNT];
        size_t ratio_count = 0;
        double sync_error = 0.0;
        for (int k = 0; k < MODEL_COUNT; k++) {
            for (size_t i = 0; i < o->size_count; i++) {
                double m = (double)o->sizes[i];
                const nb_op_figures *f = &figures[i * MODEL_COUNT + (size_t)k];
                /* the combine time C(m) enters the reductions' models only */
                int reduces = (model_kind)k == MODEL_REDUCE || (model_kind)k == MODEL_ALLREDUCE;
                double c = reduces ? combine[i] : 0.0;
                double predicted = predict((model_kind)k, &src, P, m, c);
                double ratio = predicted > 0.0 ? f->median_us / predicted : NAN;
                if (isfinite(ratio))
                    ratios[ratio_count++] = ratio;
                if (f->sync_error_s > sync_error)
                    sync_error = f->sync_error_s;
                add_model_row(table, (model_kind)k, P, o->sizes[i], predicted, c, f, ratio);
                nb_add_timing_row(timings, model_ops[k].name, o->sizes[i], f);
                nb_check_operation(ctx, model_ops[k].name, o->sizes[i], f);
                if (!(predicted > 0.0)) {
                    char quantity[96];
                    snprintf(quantity, sizeof quantity,
                             "measured_to_predicted[collective=%s,size_bytes=%zu]",
                             model_ops[k].name, o->sizes[i]);
                    nb_unreliable(result, quantity, "the model predicts %.3g us (LogGP "
                                  "parameters at or below 0)", predicted);
                }
            }
        }
        nb_summary_real(result, "measured_to_predicted_median", nb_median(ratios, ratio_count));
        nb_summary_real(result, "measured_to_predicted_max", nb_max(ratios, ratio_count));
        nb_summary_real(result, "clock_sync_error_max_us", sync_error * 1e6);
        nb_summary_int(result, "models_compared", (long long)ratio_count);
    }
    free(figures);
    free(combine);
    free(points);
    free(s.send);
    free(s.recv);
}

/* A parameter of the file: a number, or null (an unresolved parameter: 0, counted). */
static int file_number(const nb_json_value *row, const char *key, double *value, int *nulls)
{
    const nb_json_value *v = nb_json_get(row, key);
    if (v != NULL && v->type == NB_JSON_NUMBER && isfinite(v->number)) {
        *value = v->number;
        return 0;
    }
    if (v != NULL && v->type == NB_JSON_NULL) {
        *value = 0.0;
        (*nulls)++;
        return 0;
    }
    return -1;
}

/* Reads L, and g, G, o_s, o_r per protocol range, from a `netbench loggp` JSON result. Returns
 * 0, or the exit status after one line on stderr. */
static int read_loggp_json(models_settings *ms)
{
    const char *path = ms->loggp_json, *why = NULL;
    char *text = nb_read_whole_file(path, &why);
    if (text == NULL)
        return nb_usage_error("--loggp-json %s: the file %s", path, why);
    nb_json_value *root = nb_json_parse(text);
    free(text);
    const nb_json_value *format = nb_json_get(root, "format");
    const nb_json_value *method = nb_json_get(root, "method");
    if (root == NULL || format == NULL || format->type != NB_JSON_STRING ||
        strcmp(format->string, "netbench-result") != 0) {
        nb_json_free(root);
        return nb_usage_error("--loggp-json %s: not a netbench JSON result (write one with "
                              "`netbench loggp --json-file %s`)", path, path);
    }
    if (method == NULL || method->type != NB_JSON_STRING || strcmp(method->string, "loggp") != 0) {
        char name[64];
        snprintf(name, sizeof name, "%s",
                 method != NULL && method->type == NB_JSON_STRING ? method->string : "?");
        nb_json_free(root);
        return nb_usage_error("--loggp-json %s: a result of netbench %s, not of netbench loggp",
                              path, name);
    }
    const nb_json_value *summary = nb_json_get(root, "summary");
    const nb_json_value *L = nb_json_get(summary, "L_us");
    const nb_json_value *ranges = nb_json_get(nb_json_get(root, "tables"), "ranges");
    if (L == NULL || L->type != NB_JSON_NUMBER || !(L->number > 0.0)) {
        nb_json_free(root);
        return nb_usage_error("--loggp-json %s: summary L_us is missing or not positive", path);
    }
    if (ranges == NULL || ranges->type != NB_JSON_ARRAY || ranges->count == 0) {
        nb_json_free(root);
        return nb_usage_error("--loggp-json %s: no table ranges (protocol ranges)", path);
    }
    if (ranges->count > MODELS_MAX_RANGES) {
        nb_json_free(root);
        return nb_usage_error("--loggp-json %s: %zu protocol ranges; at most %d are read", path,
                              ranges->count, MODELS_MAX_RANGES);
    }
    ms->L_us = L->number;
    for (size_t i = 0; i < ranges->count; i++) {
        const nb_json_value *row = ranges->items[i];
        loggp_range *g = &ms->ranges[i];
        double G_ns = 0.0;
        int nulls = 0;
        if (file_number(row, "first_size_bytes", &g->first_size, &nulls) != 0 ||
            file_number(row, "last_size_bytes", &g->last_size, &nulls) != 0 || nulls != 0 ||
            file_number(row, "g_us", &g->g_us, &nulls) != 0 ||
            file_number(row, "G_ns_per_byte", &G_ns, &nulls) != 0 ||
            file_number(row, "o_s_us", &g->o_s_us, &nulls) != 0 ||
            file_number(row, "o_r_us", &g->o_r_us, &nulls) != 0) {
            nb_json_free(root);
            return nb_usage_error("--loggp-json %s: range %zu lacks first_size_bytes, "
                                  "last_size_bytes, g_us, G_ns_per_byte, o_s_us or o_r_us", path,
                                  i);
        }
        if (g->g_us < 0.0 || G_ns < 0.0 || g->o_s_us < 0.0 || g->o_r_us < 0.0 ||
            (i > 0 && g->first_size <= ms->ranges[i - 1].first_size)) {
            nb_json_free(root);
            return nb_usage_error("--loggp-json %s: range %zu has a negative parameter or is "
                                  "out of order", path, i);
        }
        g->G_us_per_byte = G_ns * 1e-3;
        ms->nulls_taken_as_zero += nulls;
    }
    ms->range_count = ranges->count;
    const nb_json_value *library = nb_json_get(nb_json_get(root, "mpi"), "library");
    if (library != NULL && library->type == NB_JSON_STRING) {
        snprintf(ms->file_library, sizeof ms->file_library, "%s", library->string);
        ms->file_library[strcspn(ms->file_library, "\r\n")] = '\0';
    }
    nb_json_free(root);
    return 0;
}

int models_finish(nb_options *o, void *settings)
{
    models_settings *ms = settings;
    if (o->size_count == 0)
        return nb_usage_error("no sizes to measure");
    if (o->sizes[0] < 1)
        return nb_usage_error("--sizes/--min-size: size %zu; the models need messages of at "
                              "least 1 byte", o->sizes[0]);
    if (ms->loggp_json != NULL)
        return read_loggp_json(ms);
    return 0;
}
