/* matrix_measure.c - how the map measures (matrix.c judges): the rounds of the tournament
 * concurrently or one pair at a time, a list of pairs alone, and the progress lines. Collective
 * as each says (matrix_record.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "matrix_record.h"
#include "pairmap.h"

void matrix_progress(progress_clock *clock, const char *what, int done, int total,
                     const char *detail)
{
    double now = MPI_Wtime();
    if (done < total && now - clock->last < clock->every)
        return;
    clock->last = now;
    double elapsed = now - clock->start;
    double left = done > 0 ? elapsed / done * (total - done) : NAN;
    fprintf(stderr, "netbench matrix: %s %d of %d (%s), %.1f s elapsed, about %.1f s left\n",
            what, done, total, detail, elapsed, left);
    fflush(stderr);
}

enum { ROUND_FIELDS = 4 }; /* partner, latency, bandwidth, its spread */

/* One round: a barrier, the latency phase of all its pairs, a barrier, the bandwidth phase, then
 * each measuring rank a reports to rank 0, which records the pairs as round `round_id`
 * (`all`: rank 0's room for every rank's report). */
static void measure_round(const nb_context *ctx, int partner, int round_id, void *send,
                          void *recv, matrix_record *m, double *all)
{
    const nb_options *o = ctx->options;
    int P = ctx->size;
    double mine[ROUND_FIELDS];
    nb_pingpong pair;
    pair_open(ctx, partner, send, recv, &pair);
    nb_quiet_barrier(ctx->pair);
    double latency_spread;
    double latency = pair_one_way_local(ctx, &pair, o->min_size, &latency_spread);
    nb_quiet_barrier(ctx->pair);
    double time = pair_one_way_local(ctx, &pair, o->max_size, &mine[3]);
    pair_close(&pair);
    mine[0] = partner;
    mine[1] = latency;
    mine[2] = (double)o->max_size / time; /* bytes/us = MB/s; NaN on rank b */
    MPI_Gather(mine, ROUND_FIELDS, MPI_DOUBLE, all, ROUND_FIELDS, MPI_DOUBLE, 0, ctx->pair);
    if (ctx->rank != 0)
        return;
    for (int r = 0; r < P; r++) {
        const double *theirs = all + (size_t)ROUND_FIELDS * (size_t)r;
        int p = (int)theirs[0];
        if (p <= r)
            continue; /* sits out (-1), or rank b of its pair */
        size_t k = pair_index(P, r, p);
        m->latency[k] = theirs[1];
        m->bandwidth[k] = theirs[2];
        m->spread[k] = theirs[3];
        m->round[k] = round_id;
    }
}

static double *round_reports(const nb_context *ctx)
{
    return ctx->rank == 0 ? nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)ctx->size * ROUND_FIELDS,
                                               sizeof(double))
                          : NULL;
}

void matrix_measure_concurrently(const nb_context *ctx, const int *chosen, int count,
                                 void *send, void *recv, matrix_record *m, progress_clock *clock)
{
    double *all = round_reports(ctx);
    char detail[64];
    snprintf(detail, sizeof detail, "concurrent, %d ranks", ctx->size);
    for (int i = 0; i < count; i++) {
        measure_round(ctx, nb_tournament_partner(ctx->size, chosen[i], ctx->rank),
                      chosen[i] + 1, send, recv, m, all);
        if (ctx->rank == 0)
            matrix_progress(clock, "round", i + 1, count, detail);
    }
    free(all);
}

int matrix_measure_local(const nb_context *ctx, int sequential, int first_id, void *send,
                         void *recv, matrix_record *m, progress_clock *clock)
{
    int P = ctx->size, rounds = ctx->rank == 0 ? m->local_rounds : 0;
    MPI_Bcast(&rounds, 1, MPI_INT, 0, ctx->pair);
    int *partner = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)P, sizeof *partner);
    double *all = round_reports(ctx);
    for (int j = 0; j < rounds; j++) {
        if (ctx->rank == 0)
            for (int r = 0; r < P; r++) {
                int p = m->local_partner[(size_t)j * (size_t)P + (size_t)r];
                /* a pair measured already (a tournament round, a lower level) sits out */
                partner[r] = p < 0 || m->round[r < p ? pair_index(P, r, p) : pair_index(P, p, r)]
                                 ? -1 : p;
            }
        MPI_Bcast(partner, P, MPI_INT, 0, ctx->pair);
        if (!sequential)
            measure_round(ctx, partner[ctx->rank], first_id + j, send, recv, m, all);
        for (int a = 0; sequential && a < P; a++) {
            if (partner[a] <= a)
                continue;
            pair_figures f = measure_pair(ctx, a, partner[a], send, recv);
            if (ctx->rank == 0) {
                size_t k = pair_index(P, a, partner[a]);
                m->latency[k] = f.latency_us;
                m->bandwidth[k] = f.bandwidth_MBps;
                m->spread[k] = f.bandwidth_spread;
                m->round[k] = first_id + j;
            }
        }
        if (ctx->rank == 0)
            matrix_progress(clock, "round inside the switches", j + 1, rounds,
                            sequential ? "sequential" : "concurrent");
    }
    free(partner);
    free(all);
    return rounds;
}

/* The same pairs one at a time, in the order (0,1), (0,2), ..., (1,2), ... */
void matrix_measure_sequentially(const nb_context *ctx, const int *chosen, int count,
                                 void *send, void *recv, matrix_record *m, progress_clock *clock)
{
    int P = ctx->size;
    size_t pairs = (size_t)P * (size_t)(P - 1) / 2;
    /* every rank walks the same list: which pairs belong to the chosen rounds */
    int *round_of = nb_calloc_or_abort(MPI_COMM_WORLD, pairs, sizeof *round_of);
    int selected = 0;
    for (int i = 0; i < count; i++)
        for (int a = 0; a < P; a++) {
            int b = nb_tournament_partner(P, chosen[i], a);
            if (b > a) {
                round_of[pair_index(P, a, b)] = chosen[i] + 1;
                selected++;
            }
        }
    char detail[64];
    snprintf(detail, sizeof detail, "sequential, %d ranks", P);
    int done = 0;
    for (int a = 0; a < P; a++)
        for (int b = a + 1; b < P; b++) {
            size_t k = pair_index(P, a, b);
            if (round_of[k] == 0)
                continue;
            pair_figures f = measure_pair(ctx, a, b, send, recv);
            done++;
            if (ctx->rank == 0) {
                m->latency[k] = f.latency_us;
                m->bandwidth[k] = f.bandwidth_MBps;
                m->spread[k] = f.bandwidth_spread;
                m->round[k] = round_of[k];
                matrix_progress(clock, "pair", done, selected, detail);
            }
        }
    free(round_of);
}

void matrix_measure_alone(const nb_context *ctx, const int *list, int count, void *send,
                          void *recv, pair_figures *steps, const char *what, double every_s)
{
    double start = MPI_Wtime();
    progress_clock clock = {start, start, every_s};
    for (int s = 0; s < count; s++) {
        pair_figures f = measure_pair(ctx, list[2 * s], list[2 * s + 1], send, recv);
        if (ctx->rank == 0) {
            steps[s] = f;
            matrix_progress(&clock, what, s + 1, count, "sequential");
        }
    }
}

int *matrix_share_list(const nb_context *ctx, int *list, int *count)
{
    MPI_Bcast(count, 1, MPI_INT, 0, ctx->pair);
    if (ctx->rank != 0)
        list = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)*count * 2 + 2, sizeof *list);
    MPI_Bcast(list, 2 * *count, MPI_INT, 0, ctx->pair);
    return list;
}
