/* matrix_classes.c - the map's path classes (--path-classes, pathclass.h): each pair's class,
 * from the file and the ranks' hosts, for matrix.c's verdict. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"
#include "matrix_record.h"
#include "pairmap.h"
#include "pathclass.h"

/* Rank 0: m->local_partner's round j := inside the switches of `level` (the level-th of each
 * host's line): the ranks under one such switch, in rank order, paired by one round of their
 * own tournament (pairmap.h), drawn from `seed`; a rank whose host is missing or has no switch
 * above that level sits out. */
static void local_round(const nb_path_table *t, const long *row, int level, long seed, int j,
                        matrix_record *m)
{
    int P = m->P;
    int *partner = m->local_partner + (size_t)j * (size_t)P;
    int *members = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)P, sizeof *members);
    unsigned char *done = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)P, 1);
    for (int r = 0; r < P; r++)
        partner[r] = -1;
    for (int first = 0; first < P; first++) {
        if (done[first] || row[first] < 0 || t->levels[row[first]] <= level + 1)
            continue;
        int id = t->chain[row[first] * NB_PATH_MAX_LEVELS + level], n = 0;
        for (int r = first; r < P; r++)
            if (!done[r] && row[r] >= 0 && t->levels[row[r]] > level + 1 &&
                t->chain[row[r] * NB_PATH_MAX_LEVELS + level] == id) {
                members[n++] = r;
                done[r] = 1;
            }
        int rounds = nb_tournament_rounds(n);
        if (rounds == 0)
            continue;
        /* the same seed, the same round for every switch of that size */
        int round = (int)(((unsigned long)seed * 2654435761UL + (unsigned long)level) %
                          (unsigned long)rounds);
        for (int i = 0; i < n; i++) {
            int other = nb_tournament_partner(n, round, i);
            partner[members[i]] = other >= 0 ? members[other] : -1;
        }
    }
    free(members);
    free(done);
}

/* Rank 0: the local rounds, one a level below the top of the deepest host's line. */
static void local_rounds(const nb_path_table *t, const long *row, long seed, matrix_record *m)
{
    int deepest = 0;
    for (int r = 0; r < m->P; r++)
        if (row[r] >= 0 && t->levels[row[r]] > deepest)
            deepest = t->levels[row[r]];
    m->local_rounds = deepest > 1 ? deepest - 1 : 0;
    if (m->local_rounds == 0)
        return;
    m->local_partner = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)m->local_rounds * (size_t)m->P,
                                          sizeof *m->local_partner);
    for (int level = 0; level < m->local_rounds; level++)
        local_round(t, row, level, seed, level, m);
}

int matrix_read_path_classes(const nb_context *ctx, const char *path, const char *hosts,
                             int quick, long seed, matrix_record *m)
{
    int missing = 0, failed = 0;
    if (ctx->rank == 0) {
        const char *why = NULL;
        char reason[256] = "";
        char *text = nb_read_whole_file(path, &why);
        nb_path_table table;
        if (text == NULL)
            snprintf(reason, sizeof reason, "the file %s", why);
        else if (nb_path_table_parse(text, &table, reason, sizeof reason) == 0) {
            long *row = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)m->P, sizeof *row);
            for (int r = 0; r < m->P; r++)
                missing += (row[r] = nb_path_table_host(&table, host_of(hosts, r))) < 0;
            m->pair_class = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, sizeof *m->pair_class);
            m->pair_segment = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs,
                                                 sizeof *m->pair_segment);
            for (int a = 0; a < m->P; a++)
                for (int b = a + 1; b < m->P; b++) {
                    size_t k = pair_index(m->P, a, b);
                    const int *ca = table.chain + row[a] * NB_PATH_MAX_LEVELS,
                              *cb = table.chain + row[b] * NB_PATH_MAX_LEVELS;
                    int known = row[a] >= 0 && row[b] >= 0;
                    m->pair_class[k] = known ? nb_path_class(ca, table.levels[row[a]], cb,
                                                             table.levels[row[b]]) : -1;
                    m->pair_segment[k] = known ? nb_path_segment(
                        &table, ca, table.levels[row[a]], cb, table.levels[row[b]]) : -1;
                }
            if (quick)
                local_rounds(&table, row, seed, m);
            free(row);
            nb_path_table_free(&table);
        }
        free(text);
        failed = m->pair_class == NULL;
        if (failed)
            fprintf(stderr, "netbench: matrix: --path-classes %s: %s; give a file of one line a "
                    "host (its name, then its switches from its leaf up) or leave the option "
                    "out\n", path, reason);
    }
    MPI_Bcast(&failed, 1, MPI_INT, 0, ctx->pair);
    if (failed)
        MPI_Abort(ctx->pair, 2);
    return missing;
}

void matrix_class_thresholds(const matrix_record *m, double latency_factor, matrix_verdict *v)
{
    for (int c = 0; c < NB_PATH_CLASSES; c++)
        v->class_best[c] = v->class_ceiling[c] = NAN;
    if (m->pair_class == NULL)
        return;
    nb_class_bests(m->bandwidth, m->pair_class, m->pairs, NB_PATH_CLASSES, 1, v->class_best);
    nb_class_bests(m->latency, m->pair_class, m->pairs, NB_PATH_CLASSES, 0, v->class_ceiling);
    for (int c = 0; c < NB_PATH_CLASSES; c++)
        v->class_ceiling[c] *= latency_factor;
}

nb_pair_thresholds matrix_pair_thresholds(const matrix_record *m, const matrix_verdict *v,
                                          size_t k)
{
    nb_pair_thresholds t = v->map;
    int c = m->pair_class != NULL ? m->pair_class[k] : -1;
    if (c < 0)
        return t;
    /* below the whole map's floor or its class's: a class slow as a whole (the core of a
     * 2-leaf tree with a slow uplink) stays suspect */
    double floor = nb_bandwidth_floor(t.suspect_slowdown, v->class_best[c]);
    if (floor > t.bandwidth_floor)
        t.bandwidth_floor = floor;
    if (isfinite(v->class_ceiling[c]))
        t.latency_ceiling = v->class_ceiling[c];
    return t;
}

double matrix_of_its_best(const matrix_record *m, const matrix_verdict *v, size_t k)
{
    int c = m->pair_class != NULL ? m->pair_class[k] : -1;
    double best = c >= 0 && isfinite(v->class_best[c]) ? v->class_best[c] : v->map.best_bandwidth;
    return m->bandwidth[k] / best;
}

/* matrix_round_loads' sort: by round, then segment (qsort takes no context). */
static const matrix_record *loads_of;

static int by_round_and_segment(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    if (loads_of->round[a] != loads_of->round[b])
        return loads_of->round[a] < loads_of->round[b] ? -1 : 1;
    long sa = loads_of->pair_segment[a], sb = loads_of->pair_segment[b];
    return (sa > sb) - (sa < sb);
}

void matrix_round_loads(matrix_record *m)
{
    if (m->pair_segment == NULL || m->round_load != NULL)
        return;
    m->round_load = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, sizeof *m->round_load);
    size_t *on = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs + 1, sizeof *on), n = 0;
    for (size_t k = 0; k < m->pairs; k++) {
        m->round_load[k] = 1;
        if (m->round[k] > 0 && m->pair_segment[k] >= 0)
            on[n++] = k;
    }
    loads_of = m;
    qsort(on, n, sizeof *on, by_round_and_segment);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && by_round_and_segment(&on[i], &on[j]) == 0; j++) {
        }
        for (size_t x = i; x < j; x++)
            m->round_load[on[x]] = (int)(j - i);
    }
    loads_of = NULL;
    free(on);
}

double matrix_retest_key(const matrix_record *m, const matrix_verdict *v, size_t k)
{
    double below = matrix_of_its_best(m, v, k);
    return m->round_load != NULL ? below * m->round_load[k] : below;
}

void matrix_classes_free(matrix_record *m)
{
    free(m->pair_class);
    free(m->pair_segment);
    free(m->round_load);
    free(m->local_partner);
}

int matrix_class_order(const matrix_record *m, size_t k)
{
    if (m->pair_class == NULL)
        return 0;
    return m->pair_class[k] >= 0 ? m->pair_class[k] : NB_PATH_CLASSES;
}

const char *matrix_check_path_classes(const void *value)
{
    static char problem[512];
    const char *path = *(const char *const *)value;
    FILE *file = fopen(path, "r");
    if (file != NULL) {
        fclose(file);
        return NULL;
    }
    /* every rank checks before MPI; rank 0 alone reads and parses it (matrix_read_path_classes) */
    snprintf(problem, sizeof problem, "cannot be read (%s); give the file of each host's "
             "switches (python -m fabricsuite.data.pathclasses writes it)", strerror(errno));
    return problem;
}
