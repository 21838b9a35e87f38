/* dense.c - dense communication: every rank exchanges in phases (Altix study §3.3).
 *
 * Four algorithms (partners: patterns.c): congestion-controlled all-to-all personalized exchange,
 * simple pairwise, cumulative pairwise and random pairwise. Each phase is timed on its own: all
 * ranks run the phase's exchange in a loop between barriers, each rank times its own loop, and
 * rank 0 gathers the per-rank times. The paper's observation is the "drop in the middle phases":
 * per algorithm and size we report the ratio of the worst phase to the first.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "dense_catalogue.h"
#include "methods.h"
#include "patterns.h"

typedef struct {
    MPI_Comm comm;
    int send_to, recv_from;    /* -1: idle in this phase */
    int count;                 /* bytes */
    void *send, *recv;
} phase_state;

/* One rank's side of a phase: `iterations` exchanges with its partners; 0 s when idle. */
static double exchange_loop(void *state, long iterations)
{
    const phase_state *s = state;
    if (s->send_to < 0)
        return 0.0;
    MPI_Request requests[2];
    double start = MPI_Wtime();
    for (long i = 0; i < iterations; i++) {
        MPI_Irecv(s->recv, s->count, MPI_BYTE, s->recv_from, NB_TAG_DATA, s->comm, &requests[0]);
        MPI_Isend(s->send, s->count, MPI_BYTE, s->send_to, NB_TAG_DATA, s->comm, &requests[1]);
        nb_waitall(2, requests);
    }
    return MPI_Wtime() - start;
}

/* Times one phase on every rank with the shared driver: the iteration count comes from the
 * slowest rank (an idle rank's loop takes no time, so rank 0 alone cannot choose). Returns this
 * rank's median seconds per exchange (0 when idle) and sets *iterations_out. */
static double time_phase(const nb_context *ctx, phase_state *s, long *iterations_out)
{
    const nb_options *o = ctx->options;
    const dense_settings *ds = o->settings;
    nb_loop loop = nb_options_loop(o, ctx->pair, exchange_loop, s, ds->min_iterations,
                                   NB_PACE_BY_SLOWEST);
    nb_measurement m;
    nb_drive(&loop, &m);
    *iterations_out = m.iterations;
    return s->send_to < 0 ? 0.0 : m.median_us * 1e-6;
}

typedef struct {
    nb_table *phases;
    nb_table *algorithms;
} dense_output_tables;

/* Rank 0: one `phases` row from every rank's seconds per exchange (0 = idle). Returns the
 * phase's mean bandwidth over the active ranks. */
static double report_phase(const nb_context *ctx, nb_table *table, nb_dense_algorithm algorithm,
                           int phase, size_t size, long iterations, const double *seconds)
{
    double sum = 0.0, min = INFINITY, slowest_us = 0.0;
    int active = 0;
    for (int r = 0; r < ctx->size; r++) {
        if (!(seconds[r] > 0.0))
            continue;
        double us = seconds[r] * 1e6;
        double bandwidth = (double)size / us; /* bytes per us = MB/s */
        sum += bandwidth;
        min = bandwidth < min ? bandwidth : min;
        slowest_us = us > slowest_us ? us : slowest_us;
        active++;
    }
    double mean = active > 0 ? sum / active : NAN;
    nb_table_add_row(table);
    nb_cell_text(table, "algorithm", nb_dense_algorithm_name(algorithm));
    nb_cell_int(table, "phase", phase + 1);
    nb_cell_int(table, "size_bytes", (long long)size);
    nb_cell_int(table, "active_ranks", active);
    nb_cell_int(table, "iterations", iterations);
    nb_cell_real(table, "time_max_us", active > 0 ? slowest_us : NAN);
    nb_cell_real(table, "bandwidth_min_MBps", active > 0 && size > 0 ? min : NAN);
    nb_cell_real(table, "bandwidth_mean_MBps", size > 0 ? mean : NAN);
    if (active > 0) {
        char quantity[128];
        snprintf(quantity, sizeof quantity, "phases[%s,%d,%zu]",
                 nb_dense_algorithm_name(algorithm), phase + 1, size);
        nb_flag_below_timer(ctx, ctx->result, quantity, "time per exchange", slowest_us);
    }
    return mean;
}

static void report_algorithm(nb_table *table, nb_dense_algorithm algorithm, size_t size,
                             const double *phase_means, int phases)
{
    int worst = 0;
    double sum = 0.0;
    for (int p = 0; p < phases; p++) {
        if (phase_means[p] < phase_means[worst])
            worst = p;
        sum += phase_means[p];
    }
    nb_table_add_row(table);
    nb_cell_text(table, "algorithm", nb_dense_algorithm_name(algorithm));
    nb_cell_int(table, "size_bytes", (long long)size);
    nb_cell_int(table, "phases", phases);
    nb_cell_real(table, "bandwidth_first_MBps", phase_means[0]);
    nb_cell_real(table, "bandwidth_worst_MBps", phase_means[worst]);
    nb_cell_int(table, "worst_phase", worst + 1);
    nb_cell_real(table, "worst_to_first", phase_means[worst] / phase_means[0]);
    nb_cell_real(table, "bandwidth_mean_MBps", sum / phases);
}

static void run_timed(const nb_context *ctx, phase_state *state, int random_phases)
{
    const nb_options *o = ctx->options;
    const dense_settings *ds = o->settings;
    dense_output_tables tables = {NULL, NULL};
    if (ctx->result != NULL) {
        tables.phases = nb_result_add_declared_table(ctx->result, &phases_table);
        tables.algorithms = nb_result_add_declared_table(ctx->result, &algorithms_table);
    }
    double *seconds =
        ctx->rank == 0 ? nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)ctx->size, sizeof *seconds)
                       : NULL;
    long measured = 0;
    for (int a = 0; a < NB_DENSE_ALGORITHM_COUNT; a++) {
        if (!(ds->algorithms & (1u << a)))
            continue;
        nb_dense_algorithm algorithm = (nb_dense_algorithm)a;
        int phases = nb_dense_phase_count(algorithm, ctx->size, random_phases);
        double *means = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)phases, sizeof *means);
        for (size_t i = 0; i < o->size_count; i++) {
            size_t size = o->sizes[i];
            state->count = (int)size;
            for (int phase = 0; phase < phases; phase++) {
                nb_dense_partners(algorithm, ctx->size, phase, ctx->rank, o->seed,
                                  &state->send_to, &state->recv_from);
                long iterations = 0;
                double mine = time_phase(ctx, state, &iterations);
                MPI_Gather(&mine, 1, MPI_DOUBLE, seconds, 1, MPI_DOUBLE, 0, ctx->pair);
                if (ctx->rank == 0)
                    means[phase] = report_phase(ctx, tables.phases, algorithm, phase, size,
                                                iterations, seconds);
                measured++;
            }
            if (ctx->rank == 0)
                report_algorithm(tables.algorithms, algorithm, size, means, phases);
        }
        free(means);
    }
    free(seconds);
    if (ctx->result != NULL)
        nb_summary_int(ctx->result, "phases_measured", measured);
}

/* Validation: one exchange per phase and size with patterned data, every byte checked. */
static void run_validation(const nb_context *ctx, phase_state *state, int random_phases)
{
    const nb_options *o = ctx->options;
    const dense_settings *ds = o->settings;
    nb_table *table = NULL;
    if (ctx->result != NULL)
        table = nb_result_add_declared_table(ctx->result, &dense_validation_table);
    long long total_messages = 0, total_wrong = 0;
    for (int a = 0; a < NB_DENSE_ALGORITHM_COUNT; a++) {
        if (!(ds->algorithms & (1u << a)))
            continue;
        nb_dense_algorithm algorithm = (nb_dense_algorithm)a;
        int phases = nb_dense_phase_count(algorithm, ctx->size, random_phases);
        for (size_t i = 0; i < o->size_count; i++) {
            size_t size = o->sizes[i];
            state->count = (int)size;
            long long counts[2] = {0, 0}, totals[2] = {0, 0}; /* messages, wrong bytes */
            for (int phase = 0; phase < phases; phase++) {
                nb_dense_partners(algorithm, ctx->size, phase, ctx->rank, o->seed,
                                  &state->send_to, &state->recv_from);
                if (state->send_to < 0) {
                    MPI_Barrier(ctx->pair);
                    continue;
                }
                unsigned tag = (unsigned)(a * 100000 + phase);
                nb_fill_message(state->send, size, ctx->rank, tag);
                nb_fill_message(state->recv, size, ctx->rank, tag + 1); /* not what arrives */
                exchange_loop(state, 1);
                counts[0]++;
                counts[1] += (long long)nb_check_message(state->recv, size, state->recv_from,
                                                         tag);
                MPI_Barrier(ctx->pair);
            }
            MPI_Reduce(counts, totals, 2, MPI_LONG_LONG, MPI_SUM, 0, ctx->pair);
            if (ctx->rank == 0) {
                nb_table_add_row(table);
                nb_cell_text(table, "algorithm", nb_dense_algorithm_name(algorithm));
                nb_cell_int(table, "size_bytes", (long long)size);
                nb_cell_int(table, "messages_checked", totals[0]);
                nb_cell_int(table, "bytes_wrong", totals[1]);
                total_messages += totals[0];
                total_wrong += totals[1];
            }
        }
    }
    if (ctx->result != NULL) {
        nb_summary_int(ctx->result, "validated_messages", total_messages);
        nb_summary_int(ctx->result, "validation_errors", total_wrong);
        if (total_wrong > 0)
            nb_unreliable(ctx->result, "validation_errors",
                          "%lld received bytes differ from what was sent", total_wrong);
    }
}

void run_dense(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const dense_settings *ds = o->settings;
    size_t largest = o->sizes[o->size_count - 1];
    phase_state state = {.comm = ctx->pair};
    /* A zero-byte message still needs a valid buffer address. */
    state.send = nb_buffer_new(largest > 0 ? largest : 1);
    state.recv = nb_buffer_new(largest > 0 ? largest : 1);

    if (ctx->result != NULL) {
        char names[128] = "";
        for (int a = 0; a < NB_DENSE_ALGORITHM_COUNT; a++)
            if (ds->algorithms & (1u << a))
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         names[0] ? "," : "", nb_dense_algorithm_name((nb_dense_algorithm)a));
        nb_param_int(ctx->result, "ranks", ctx->size);
        nb_param_text(ctx->result, "algorithms", names);
        nb_param_int(ctx->result, "random_phases", ds->phases);
        nb_param_int(ctx->result, "min_iterations", ds->min_iterations);
        nb_param_int(ctx->result, "seed", (long long)o->seed);
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        nb_param_int(ctx->result, "validate", o->validate);
        if (!o->validate)
            nb_param_common(ctx);
    }
    if (o->validate)
        run_validation(ctx, &state, ds->phases);
    else
        run_timed(ctx, &state, ds->phases);
    free(state.send);
    free(state.recv);
}

const char *dense_algorithm_name(int index)
{
    return nb_dense_algorithm_name((nb_dense_algorithm)index);
}
