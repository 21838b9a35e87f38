/* pairs.c - ping-pong between chosen pairs of ranks of a whole allocation: measuring one pair
 * while the others wait (pairs.h, also matrix.c's), and
 *
 *   rankdist  rank 0 with rank d, d = 1, 2, 4, ... (the distance sweep of the Altix study §3.2,
 *             Fig. 2 and 3)
 *
 * A pair measuring alone has the allocation to itself: the other ranks wait without polling
 * (a sleeping test of a non-blocking barrier), so that it has its cores to itself.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "pairs_catalogue.h"
#include "methods.h"
#include "pairs.h"

#define PAIRS_MIN_ITERATIONS 3
#define PAIRS_TAG 11

/* pairs.h: measuring one pair while the others wait */

void pair_open(const nb_context *ctx, int partner, void *send, void *recv, nb_pingpong *s)
{
    int lower = partner < ctx->rank ? partner : ctx->rank;
    *s = (nb_pingpong){.rank = partner < 0 ? -1 : (ctx->rank == lower ? 0 : 1),
                       .tag = PAIRS_TAG, .send = send, .recv = recv};
    MPI_Comm_split(ctx->pair, partner < 0 ? MPI_UNDEFINED : lower, ctx->rank, &s->comm);
}

void pair_close(nb_pingpong *s)
{
    if (s->comm != MPI_COMM_NULL)
        MPI_Comm_free(&s->comm);
}

double pair_one_way_local(const nb_context *ctx, nb_pingpong *s, size_t size, double *spread)
{
    *spread = NAN;
    if (s->comm == MPI_COMM_NULL)
        return NAN;
    nb_measurement m;
    nb_pingpong_measure(ctx, s, size, PAIRS_MIN_ITERATIONS, &m);
    if (s->rank != 0)
        return NAN;
    *spread = m.median_us > 0 ? NB_MAD_TO_SD * m.mad_us / m.median_us : NAN;
    return m.median_us / 2.0;
}

pair_figures measure_pair(const nb_context *ctx, int a, int b, void *send, void *recv)
{
    const nb_options *o = ctx->options;
    nb_pingpong s;
    int partner = ctx->rank == a ? b : ctx->rank == b ? a : -1;
    pair_open(ctx, partner, send, recv, &s);
    double latency_spread, bandwidth_spread;
    double latency = pair_one_way_local(ctx, &s, o->min_size, &latency_spread);
    nb_quiet_barrier(ctx->pair);
    double bandwidth_time = pair_one_way_local(ctx, &s, o->max_size, &bandwidth_spread);
    nb_quiet_barrier(ctx->pair);
    pair_close(&s);
    /* bytes/us = MB/s */
    double mine[3] = {latency, (double)o->max_size / bandwidth_time, bandwidth_spread};
    if (a != 0) {
        if (ctx->rank == a)
            MPI_Send(mine, 3, MPI_DOUBLE, 0, PAIRS_TAG, ctx->pair);
        if (ctx->rank == 0)
            MPI_Recv(mine, 3, MPI_DOUBLE, a, PAIRS_TAG, ctx->pair, MPI_STATUS_IGNORE);
    }
    return (pair_figures){mine[0], mine[1], mine[2]};
}

char *gather_hosts(const nb_context *ctx)
{
    char mine[MPI_MAX_PROCESSOR_NAME + 1] = "";
    int length = 0;
    MPI_Get_processor_name(mine, &length);
    char *all = NULL;
    if (ctx->rank == 0)
        all = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)ctx->size, sizeof mine);
    MPI_Gather(mine, (int)sizeof mine, MPI_CHAR, all, (int)sizeof mine, MPI_CHAR, 0, ctx->pair);
    return all;
}

static void rankdist_parameters(const nb_context *ctx)
{
    if (ctx->result == NULL)
        return;
    const rankdist_settings *rs = ctx->options->settings;
    nb_param_int(ctx->result, "ranks", ctx->size);
    nb_param_int(ctx->result, "latency_size_bytes", (long long)ctx->options->min_size);
    nb_param_int(ctx->result, "bandwidth_size_bytes", (long long)ctx->options->max_size);
    nb_param_real(ctx->result, "flag_tolerance", rs->tolerance);
    nb_param_common(ctx);
}

void run_rankdist(const nb_context *ctx)
{
    const rankdist_settings *rs = ctx->options->settings;
    const nb_options *o = ctx->options;
    void *send = nb_buffer_new(o->max_size > 0 ? o->max_size : 1);
    void *recv = nb_buffer_new(o->max_size > 0 ? o->max_size : 1);
    char *hosts = gather_hosts(ctx);
    rankdist_parameters(ctx);
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
        nb_table *table = nb_result_add_declared_table(ctx->result, &distances_table);
        long long flagged = 0;
        for (int i = 0; i < count; i++) {
            int bad = figures[i].bandwidth_MBps < (1.0 - rs->tolerance) * best;
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

