/* methods_pairs.c - ping-pong between chosen pairs of ranks of a whole allocation.
 *
 *   matrix    every pair (i, j): latency and bandwidth, an N x N map that points at a bad link
 *             or node (one rank per node gives node-to-node figures)
 *   rankdist  rank 0 with rank d, d = 1, 2, 4, ... (the distance sweep of the Altix study §3.2,
 *             Fig. 2 and 3)
 *
 * One pair measures at a time; the other ranks wait without polling (a sleeping test of a
 * non-blocking barrier), so that a measuring pair has its cores to itself.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "methods.h"

#define PAIRS_MIN_ITERATIONS 3
#define PAIRS_TAG 11

#define PAIRS_OPTIONS                                                                          \
    (NB_OPT_JSON | NB_OPT_JSON_FILE | NB_OPT_REPETITIONS | NB_OPT_ITERATIONS | NB_OPT_TIME_CAP | \
     NB_OPT_MIN_SIZE | NB_OPT_MAX_SIZE | NB_OPT_TOLERANCE)

#define PAIRS_DEFAULTS                                                                         \
    {                                                                                          \
        .repetitions = 5, .iterations = 10000, .time_cap_ms = 5.0, .min_size = 8,             \
        .max_size = 1024 * 1024, .tolerance = 0.2,                                             \
    }

const nb_command nb_command_matrix = {
    .name = "matrix",
    .summary = "all-pairs latency and bandwidth, an N x N map to find a bad link or node",
    .description =
        "All-pairs ping-pong: for every pair of ranks (i, j), i < j, one pair at a time while\n"
        "the others wait without polling, the blocking ping-pong latency at --min-size bytes\n"
        "(default 8) and the ping-pong bandwidth at --max-size bytes (default 1M), each the\n"
        "median of --repetitions loops of as many round trips as fit in --time-cap-ms. With\n"
        "one rank per node the table is the node-to-node map. A pair whose bandwidth is below\n"
        "(1 - --tolerance) x the median of all pairs is flagged (default 0.2: 20 % below); the\n"
        "summary counts them. Pairs are measured one after the other: N (N-1) / 2 pairs, so\n"
        "about N^2 x --time-cap-ms x --repetitions (64 nodes at the defaults: about 1 minute).",
    .accepted_options = PAIRS_OPTIONS,
    .all_ranks = 1,
    .progression = NB_SIZES_POWERS_OF_2,
    .defaults = PAIRS_DEFAULTS,
};

const nb_command nb_command_rankdist = {
    .name = "rankdist",
    .summary = "latency and bandwidth from rank 0 to rank d = 1, 2, 4, ... (Altix 3.2)",
    .description =
        "Distance sweep in rank space, the Altix study section 3.2 (Fig. 2 and 3): ping-pong\n"
        "between rank 0 and rank d for d = 1, 2, 4, ... < P, one pair at a time while the\n"
        "others wait without polling: the latency at --min-size bytes (default 8) and the\n"
        "bandwidth at --max-size bytes (default 1M), each the median of --repetitions loops of\n"
        "as many round trips as fit in --time-cap-ms. Where ranks are placed by node, the\n"
        "distances cross the machine's levels (same node, neighbouring nodes, far nodes). A\n"
        "distance whose bandwidth is below (1 - --tolerance) x the best one is flagged.",
    .accepted_options = PAIRS_OPTIONS,
    .all_ranks = 1,
    .progression = NB_SIZES_POWERS_OF_2,
    .defaults = PAIRS_DEFAULTS,
};

/* Waits at a barrier of `comm` without polling the CPU busily. */
static void quiet_barrier(MPI_Comm comm)
{
    MPI_Request barrier;
    MPI_Ibarrier(comm, &barrier);
    int done = 0;
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 200000};
    while (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        nanosleep(&pause, NULL);
}

static double round_trips(MPI_Comm comm, int rank, int a, int b, void *send, void *recv,
                          int size, long iterations)
{
    double start = MPI_Wtime();
    for (long i = 0; i < iterations; i++) {
        if (rank == a) {
            MPI_Send(send, size, MPI_BYTE, b, PAIRS_TAG, comm);
            MPI_Recv(recv, size, MPI_BYTE, b, PAIRS_TAG, comm, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(recv, size, MPI_BYTE, a, PAIRS_TAG, comm, MPI_STATUS_IGNORE);
            MPI_Send(send, size, MPI_BYTE, a, PAIRS_TAG, comm);
        }
    }
    return MPI_Wtime() - start;
}

/* Ranks a and b ping-pong `size` bytes; on rank a the median one-way time in us (half a round
 * trip), elsewhere NAN. Collective over comm: the others wait quietly. */
static double pair_one_way_us(const nb_context *ctx, int a, int b, void *send, void *recv,
                              size_t size)
{
    const nb_options *o = ctx->options;
    MPI_Comm comm = ctx->pair;
    double result = NAN;
    if (ctx->rank == a || ctx->rank == b) {
        int n = (int)size;
        /* a probe (first contact), then rank a sizes the loops and tells b */
        round_trips(comm, ctx->rank, a, b, send, recv, n, PAIRS_MIN_ITERATIONS);
        double probe = round_trips(comm, ctx->rank, a, b, send, recv, n, PAIRS_MIN_ITERATIONS);
        long iterations = 0;
        if (ctx->rank == a) {
            double wanted = o->time_cap_ms * 1e-3 / (probe / PAIRS_MIN_ITERATIONS);
            iterations = wanted < PAIRS_MIN_ITERATIONS ? PAIRS_MIN_ITERATIONS
                         : wanted > (double)o->iterations ? o->iterations
                                                          : (long)wanted;
            MPI_Send(&iterations, 1, MPI_LONG, b, PAIRS_TAG, comm);
        } else {
            MPI_Recv(&iterations, 1, MPI_LONG, a, PAIRS_TAG, comm, MPI_STATUS_IGNORE);
        }
        double per_rep[NB_MAX_REPETITIONS];
        for (int r = 0; r < o->repetitions; r++)
            per_rep[r] = round_trips(comm, ctx->rank, a, b, send, recv, n, iterations) /
                         (double)iterations / 2.0 * 1e6;
        if (ctx->rank == a)
            result = nb_median(per_rep, (size_t)o->repetitions);
    }
    quiet_barrier(comm);
    return result;
}

typedef struct {
    double latency_us;
    double bandwidth_MBps;
} pair_figures;

/* Both figures of pair (a, b), delivered to rank 0. */
static pair_figures measure_pair(const nb_context *ctx, int a, int b, void *send, void *recv)
{
    const nb_options *o = ctx->options;
    double latency = pair_one_way_us(ctx, a, b, send, recv, o->min_size);
    double bandwidth_time = pair_one_way_us(ctx, a, b, send, recv, o->max_size);
    double mine[2] = {latency, (double)o->max_size / bandwidth_time}; /* bytes/us = MB/s */
    pair_figures figures = {mine[0], mine[1]};
    if (a != 0) {
        if (ctx->rank == a)
            MPI_Send(mine, 2, MPI_DOUBLE, 0, PAIRS_TAG, ctx->pair);
        if (ctx->rank == 0) {
            double theirs[2];
            MPI_Recv(theirs, 2, MPI_DOUBLE, a, PAIRS_TAG, ctx->pair, MPI_STATUS_IGNORE);
            figures.latency_us = theirs[0];
            figures.bandwidth_MBps = theirs[1];
        }
    }
    return figures;
}

/* Rank 0: every rank's host name (MPI_MAX_PROCESSOR_NAME + 1 bytes each, to free). */
static char *gather_hosts(const nb_context *ctx)
{
    char mine[MPI_MAX_PROCESSOR_NAME + 1] = "";
    int length = 0;
    MPI_Get_processor_name(mine, &length);
    char *all = NULL;
    if (ctx->rank == 0) {
        all = calloc((size_t)ctx->size, sizeof mine);
        if (all == NULL) {
            fprintf(stderr, "netbench: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    MPI_Gather(mine, (int)sizeof mine, MPI_CHAR, all, (int)sizeof mine, MPI_CHAR, 0, ctx->pair);
    return all;
}

static void common_parameters(const nb_context *ctx)
{
    if (ctx->result == NULL)
        return;
    nb_param_int(ctx->result, "ranks", ctx->size);
    nb_param_int(ctx->result, "latency_size_bytes", (long long)ctx->options->min_size);
    nb_param_int(ctx->result, "bandwidth_size_bytes", (long long)ctx->options->max_size);
    nb_param_real(ctx->result, "flag_tolerance", ctx->options->tolerance);
    nb_param_common(ctx);
}

void nb_run_matrix(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    void *send = nb_buffer_new(o->max_size > 0 ? o->max_size : 1);
    void *recv = nb_buffer_new(o->max_size > 0 ? o->max_size : 1);
    char *hosts = gather_hosts(ctx);
    common_parameters(ctx);
    int P = ctx->size;
    size_t pairs = (size_t)P * (size_t)(P - 1) / 2, k = 0;
    pair_figures *figures = ctx->rank == 0 ? calloc(pairs, sizeof *figures) : NULL;
    if (ctx->rank == 0 && figures == NULL) {
        fprintf(stderr, "netbench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int a = 0; a < P; a++)
        for (int b = a + 1; b < P; b++) {
            pair_figures f = measure_pair(ctx, a, b, send, recv);
            if (ctx->rank == 0)
                figures[k++] = f;
        }
    if (ctx->result != NULL) {
        double *bandwidths = malloc(pairs * sizeof *bandwidths);
        double *latencies = malloc(pairs * sizeof *latencies);
        for (size_t i = 0; i < pairs; i++) {
            bandwidths[i] = figures[i].bandwidth_MBps;
            latencies[i] = figures[i].latency_us;
        }
        double median_bandwidth = nb_median(bandwidths, pairs);
        double threshold = (1.0 - o->tolerance) * median_bandwidth;
        static const char *const columns[] = {"rank_a", "rank_b", "host_a", "host_b",
                                              "latency_us", "bandwidth_MBps", "flagged"};
        nb_table *table = nb_result_add_table(ctx->result, "pairs", columns, 7);
        long long flagged = 0;
        k = 0;
        for (int a = 0; a < P; a++)
            for (int b = a + 1; b < P; b++, k++) {
                int bad = figures[k].bandwidth_MBps < threshold;
                flagged += bad;
                nb_table_add_row(table);
                nb_cell_int(table, "rank_a", a);
                nb_cell_int(table, "rank_b", b);
                nb_cell_text(table, "host_a", hosts + (size_t)a * (MPI_MAX_PROCESSOR_NAME + 1));
                nb_cell_text(table, "host_b", hosts + (size_t)b * (MPI_MAX_PROCESSOR_NAME + 1));
                nb_cell_real(table, "latency_us", figures[k].latency_us);
                nb_cell_real(table, "bandwidth_MBps", figures[k].bandwidth_MBps);
                nb_cell_bool(table, "flagged", bad);
                if (bad)
                    nb_warning(ctx->result, "pair %d-%d (%s-%s): %.1f MB/s, below %.0f %% of the "
                               "median %.1f MB/s", a, b,
                               hosts + (size_t)a * (MPI_MAX_PROCESSOR_NAME + 1),
                               hosts + (size_t)b * (MPI_MAX_PROCESSOR_NAME + 1),
                               figures[k].bandwidth_MBps, (1.0 - o->tolerance) * 100.0,
                               median_bandwidth);
            }
        nb_summary_int(ctx->result, "pairs", (long long)pairs);
        nb_summary_real(ctx->result, "latency_median_us", nb_median(latencies, pairs));
        nb_summary_real(ctx->result, "latency_max_us", nb_max(latencies, pairs));
        nb_summary_real(ctx->result, "bandwidth_median_MBps", median_bandwidth);
        nb_summary_real(ctx->result, "bandwidth_min_MBps", nb_min(bandwidths, pairs));
        nb_summary_int(ctx->result, "flagged_pairs", flagged);
        free(bandwidths);
        free(latencies);
    }
    free(figures);
    free(hosts);
    free(send);
    free(recv);
}

void nb_run_rankdist(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    void *send = nb_buffer_new(o->max_size > 0 ? o->max_size : 1);
    void *recv = nb_buffer_new(o->max_size > 0 ? o->max_size : 1);
    char *hosts = gather_hosts(ctx);
    common_parameters(ctx);
    int distances[64], count = 0;
    for (int d = 1; d < ctx->size && count < 64; d *= 2)
        distances[count++] = d;
    pair_figures figures[64];
    for (int i = 0; i < count; i++)
        figures[i] = measure_pair(ctx, 0, distances[i], send, recv);
    if (ctx->result != NULL) {
        double best = 0.0;
        for (int i = 0; i < count; i++)
            best = figures[i].bandwidth_MBps > best ? figures[i].bandwidth_MBps : best;
        static const char *const columns[] = {"distance", "rank", "host", "latency_us",
                                              "bandwidth_MBps", "flagged"};
        nb_table *table = nb_result_add_table(ctx->result, "distances", columns, 6);
        long long flagged = 0;
        for (int i = 0; i < count; i++) {
            int bad = figures[i].bandwidth_MBps < (1.0 - o->tolerance) * best;
            flagged += bad;
            nb_table_add_row(table);
            nb_cell_int(table, "distance", distances[i]);
            nb_cell_int(table, "rank", distances[i]);
            nb_cell_text(table, "host", hosts + (size_t)distances[i] * (MPI_MAX_PROCESSOR_NAME + 1));
            nb_cell_real(table, "latency_us", figures[i].latency_us);
            nb_cell_real(table, "bandwidth_MBps", figures[i].bandwidth_MBps);
            nb_cell_bool(table, "flagged", bad);
        }
        nb_summary_int(ctx->result, "distances", count);
        nb_summary_real(ctx->result, "latency_nearest_us", figures[0].latency_us);
        nb_summary_real(ctx->result, "latency_farthest_us", figures[count - 1].latency_us);
        nb_summary_real(ctx->result, "bandwidth_nearest_MBps", figures[0].bandwidth_MBps);
        nb_summary_real(ctx->result, "bandwidth_farthest_MBps", figures[count - 1].bandwidth_MBps);
        nb_summary_int(ctx->result, "flagged_distances", flagged);
    }
    free(hosts);
    free(send);
    free(recv);
}
