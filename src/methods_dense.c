/* methods_dense.c - dense communication: every rank exchanges in phases (Altix study §3.3).
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
#include "methods.h"
#include "patterns.h"

/* Fewest iterations of one timed loop, however slow a size is. */
#define DENSE_MIN_ITERATIONS 2

const nb_command nb_command_dense = {
    .name = "dense",
    .summary = "dense patterns: all-to-all, pairwise, cumulative, random pairs (Altix 3.3)",
    .description =
        "Dense communication, the Altix study section 3.3: every rank communicates, in phases.\n"
        "  aapc        congestion-controlled all-to-all personalized exchange: in phase k\n"
        "              rank r sends to (r+k) mod P and receives from (r-k) mod P, k=1..P-1\n"
        "  pairwise    simple pairwise: in phase k pairs at cyclic distance k exchange full\n"
        "              duplex (the ranks r, r+k, r+2k, ... mod P pair up in order; in a cycle\n"
        "              of odd length the last rank is idle), k=1..P-1\n"
        "  cumulative  cumulative pairwise: the pairs (i, i+P/2) cross the middle of the rank\n"
        "              space; phase j has the first j of them, growing to all P/2\n"
        "  random      random pairwise: a new seeded random pairing in every phase (--phases,\n"
        "              --seed; the same seed gives the same pairings)\n"
        "An exchange is MPI_Irecv + MPI_Isend + MPI_Waitall of one message each way. Each phase\n"
        "is timed alone: after a barrier every rank runs the exchange in a loop (as many\n"
        "iterations as fit in --time-cap-ms, the same count on all ranks) and times it;\n"
        "--repetitions loops, the median per rank. Bandwidth of a rank = bytes it sends per\n"
        "exchange / time per exchange (MB/s = 10^6 B/s); per phase the min and the mean over\n"
        "the active ranks. Per algorithm and size, worst_to_first = the worst phase's mean\n"
        "bandwidth / the first phase's (the study's 'drop in the middle phases').\n"
        "--validate checks every received byte of every phase instead of timing.",
    .accepted_options = NB_OPT_JSON | NB_OPT_JSON_FILE | NB_OPT_REPETITIONS | NB_OPT_ITERATIONS |
                        NB_OPT_TIME_CAP | NB_OPT_SIZES | NB_OPT_MIN_SIZE | NB_OPT_MAX_SIZE |
                        NB_OPT_ALGORITHMS | NB_OPT_PHASES | NB_OPT_SEED | NB_OPT_VALIDATE,
    .all_ranks = 1,
    .progression = NB_SIZES_POWERS_OF_4,
    .defaults =
        {
            .repetitions = 5,
            .iterations = 10000,
            .time_cap_ms = 2.0,
            .min_size = 8,
            .max_size = 1024 * 1024,
            .algorithms = (1u << NB_DENSE_ALGORITHM_COUNT) - 1,
            .phases = 16,
            .seed = 1,
        },
};

typedef struct {
    MPI_Comm comm;
    int send_to, recv_from;    /* -1: idle in this phase */
    int count;                 /* bytes */
    void *send, *recv;
} phase_state;

static double exchange_loop(const phase_state *s, long iterations)
{
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

static long clamp_iterations(double wanted, long high)
{
    if (!(wanted >= DENSE_MIN_ITERATIONS))
        return DENSE_MIN_ITERATIONS;
    return wanted >= (double)high ? high : (long)wanted;
}

/* Times one phase on every rank. The iteration count comes from the slowest rank's probe (an
 * idle rank's loop takes no time, so rank 0 alone cannot choose). Returns this rank's median
 * seconds per exchange (0 when idle) and sets *iterations_out. */
static double time_phase(const nb_context *ctx, const phase_state *s, long *iterations_out)
{
    const nb_options *o = ctx->options;
    double cap_s = o->time_cap_ms * 1e-3, slowest = 0.0;
    /* A probe (the first contact of a pair, connection set-up and first touch, is slow), then a
     * warm-up of about 15 % of the cap that sizes the timed loops. */
    long probe = DENSE_MIN_ITERATIONS;
    MPI_Barrier(ctx->pair);
    double t = exchange_loop(s, probe);
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, ctx->pair);
    long warmup = clamp_iterations(0.15 * cap_s / (slowest / (double)probe), o->iterations);
    MPI_Barrier(ctx->pair);
    t = exchange_loop(s, warmup);
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, ctx->pair);
    long iterations = clamp_iterations(cap_s / (slowest / (double)warmup), o->iterations);
    double per_rep[NB_MAX_REPETITIONS];
    for (int r = 0; r < o->repetitions; r++) {
        MPI_Barrier(ctx->pair);
        per_rep[r] = exchange_loop(s, iterations) / (double)iterations;
    }
    *iterations_out = iterations;
    return s->send_to < 0 ? 0.0 : nb_median(per_rep, (size_t)o->repetitions);
}

typedef struct {
    nb_table *phases;
    nb_table *algorithms;
} dense_tables;

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
    if (active > 0 && slowest_us < 10.0 * ctx->timer_tick_s * 1e6) {
        char quantity[128];
        snprintf(quantity, sizeof quantity, "phases[%s,%d,%zu]",
                 nb_dense_algorithm_name(algorithm), phase + 1, size);
        nb_unreliable(ctx->result, quantity, "time per exchange %.3g us is below 10 x MPI_Wtick",
                      slowest_us);
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
    dense_tables tables = {NULL, NULL};
    if (ctx->result != NULL) {
        static const char *const phase_columns[] = {
            "algorithm", "phase", "size_bytes", "active_ranks", "iterations", "time_max_us",
            "bandwidth_min_MBps", "bandwidth_mean_MBps"};
        static const char *const algorithm_columns[] = {
            "algorithm", "size_bytes", "phases", "bandwidth_first_MBps", "bandwidth_worst_MBps",
            "worst_phase", "worst_to_first", "bandwidth_mean_MBps"};
        tables.phases = nb_result_add_table(ctx->result, "phases", phase_columns, 8);
        tables.algorithms = nb_result_add_table(ctx->result, "algorithms", algorithm_columns, 8);
    }
    double *seconds = ctx->rank == 0 ? malloc((size_t)ctx->size * sizeof *seconds) : NULL;
    long measured = 0;
    for (int a = 0; a < NB_DENSE_ALGORITHM_COUNT; a++) {
        if (!(o->algorithms & (1u << a)))
            continue;
        nb_dense_algorithm algorithm = (nb_dense_algorithm)a;
        int phases = nb_dense_phase_count(algorithm, ctx->size, random_phases);
        double *means = malloc((size_t)phases * sizeof *means);
        if ((ctx->rank == 0 && seconds == NULL) || means == NULL) {
            fprintf(stderr, "netbench: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
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
    nb_table *table = NULL;
    if (ctx->result != NULL) {
        static const char *const columns[] = {"algorithm", "size_bytes", "messages_checked",
                                              "bytes_wrong"};
        table = nb_result_add_table(ctx->result, "validation", columns, 4);
    }
    long long total_messages = 0, total_wrong = 0;
    for (int a = 0; a < NB_DENSE_ALGORITHM_COUNT; a++) {
        if (!(o->algorithms & (1u << a)))
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

void nb_run_dense(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    size_t largest = o->sizes[o->size_count - 1];
    phase_state state = {.comm = ctx->pair};
    /* A zero-byte message still needs a valid buffer address. */
    state.send = nb_buffer_new(largest > 0 ? largest : 1);
    state.recv = nb_buffer_new(largest > 0 ? largest : 1);

    if (ctx->result != NULL) {
        char names[128] = "";
        for (int a = 0; a < NB_DENSE_ALGORITHM_COUNT; a++)
            if (o->algorithms & (1u << a))
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         names[0] ? "," : "", nb_dense_algorithm_name((nb_dense_algorithm)a));
        nb_param_int(ctx->result, "ranks", ctx->size);
        nb_param_text(ctx->result, "algorithms", names);
        nb_param_int(ctx->result, "random_phases", o->phases);
        nb_param_int(ctx->result, "seed", (long long)o->seed);
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        nb_param_int(ctx->result, "validate", o->validate);
        if (!o->validate)
            nb_param_common(ctx);
    }
    if (o->validate)
        run_validation(ctx, &state, o->phases);
    else
        run_timed(ctx, &state, o->phases);
    free(state.send);
    free(state.recv);
}
