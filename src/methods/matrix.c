/* matrix.c - every pair (i, j) of a whole allocation: latency and bandwidth, an N x N map that
 * points at a bad link or node (one rank per node gives node-to-node figures). Concurrent by
 * default: the disjoint pairs of one round of a round-robin tournament at once (pairmap.h), as
 * NVIDIA ClusterKit does, so N nodes take N-1 rounds instead of N (N-1) / 2 steps; a pair that
 * fails the run's own thresholds is re-measured alone (pairs.h) before it is called bad.
 * Sequential (one pair at a time) on request.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "matrix_catalogue.h"
#include "matrix_record.h"
#include "methods.h"
#include "pairmap.h"
#include "pairs.h"
#include "pathclass.h"


/* --schedule of the matrix method */
enum { SCHEDULE_CONCURRENT = 0, SCHEDULE_SEQUENTIAL = 1 };

const char *matrix_schedule_name(int schedule)
{
    return schedule == SCHEDULE_SEQUENTIAL ? "sequential" : "concurrent";
}

static double *not_measured(size_t count)
{
    double *values = nb_calloc_or_abort(MPI_COMM_WORLD, count, sizeof *values);
    for (size_t i = 0; i < count; i++)
        values[i] = NAN;
    return values;
}

static void record_new(matrix_record *m, int P)
{
    m->P = P;
    m->pairs = (size_t)P * (size_t)(P - 1) / 2;
    m->latency = not_measured(m->pairs);
    m->bandwidth = not_measured(m->pairs);
    m->retest_latency = not_measured(m->pairs);
    m->retest_bandwidth = not_measured(m->pairs);
    m->spread = not_measured(m->pairs);
    m->retest_spread = not_measured(m->pairs);
    m->reference = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, 1);
    m->local_reference = not_measured(m->pairs);
    m->confirm_bandwidth = not_measured(m->pairs);
    m->round = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, sizeof *m->round);
    m->suspect = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, 1);
    m->bad = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, 1);
}

static void record_free(matrix_record *m)
{
    free(m->latency);
    free(m->bandwidth);
    free(m->retest_latency);
    free(m->retest_bandwidth);
    free(m->spread);
    free(m->retest_spread);
    free(m->reference);
    free(m->local_reference);
    free(m->confirm_bandwidth);
    free(m->round);
    free(m->suspect);
    free(m->bad);
    matrix_classes_free(m);
}

/* At most this many warnings name single bad pairs; a bad node has N-1 of them. */
#define MATRIX_PAIR_WARNINGS 20

/* Rank 0: the row of the table pairs for the pair k = (a, b). */
static void add_pair_row(nb_table *table, const matrix_record *m, size_t k, int a, int b,
                         const char *hosts)
{
    nb_table_add_row(table);
    nb_cell_int(table, "rank_a", a);
    nb_cell_int(table, "rank_b", b);
    nb_cell_text(table, "host_a", host_of(hosts, a));
    nb_cell_text(table, "host_b", host_of(hosts, b));
    nb_cell_real(table, "latency_us", m->latency[k]);
    nb_cell_real(table, "bandwidth_MBps", m->bandwidth[k]);
    nb_cell_bool(table, "flagged", m->bad[k]);
    nb_cell_int(table, "round", m->round[k]);
    nb_cell_bool(table, "suspect", m->suspect[k]);
    nb_cell_real(table, "retest_latency_us", m->retest_latency[k]);
    nb_cell_real(table, "retest_bandwidth_MBps", m->retest_bandwidth[k]);
}

/* Rank 0: the nodes all of whose `measured` pairs (rank_a[i], rank_b[i], bad[i], bandwidth[i]
 * in the map) are bad, beyond the map's noise (pairmap.h), in the table bad_nodes with a warning
 * each, and a warning for each one within that noise; returns how many were named. */
static int report_bad_nodes(nb_result *result, int P, size_t measured, const int *rank_a,
                            const int *rank_b, const int *bad, const double *bandwidth,
                            double noise, const char *hosts)
{
    int *node_bad = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)P, sizeof *node_bad);
    int bad_nodes = nb_bad_nodes(P, measured, rank_a, rank_b, bad, bandwidth, noise, node_bad);
    nb_table *nodes = nb_result_add_declared_table(result, &bad_nodes_table);
    size_t healthy = 0;
    for (size_t i = 0; i < measured; i++)
        healthy += !bad[i] && isfinite(bandwidth[i]);
    for (int r = 0; r < P; r++) {
        if (!node_bad[r])
            continue;
        long long pairs_of_node = 0;
        for (size_t i = 0; i < measured; i++)
            pairs_of_node += rank_a[i] == r || rank_b[i] == r;
        if (node_bad[r] == NB_NODE_WITHIN_NOISE) {
            nb_warning(result, "node %s (rank %d) not named: all its %lld measured pairs are "
                       "bad alone, but in the map they lie within its noise of the %zu others "
                       "(%.0f %%)", host_of(hosts, r), r, pairs_of_node, healthy,
                       100.0 * nb_group_gate((size_t)pairs_of_node, healthy, noise));
            continue;
        }
        nb_table_add_row(nodes);
        nb_cell_int(nodes, "rank", r);
        nb_cell_text(nodes, "host", host_of(hosts, r));
        nb_cell_int(nodes, "pairs", pairs_of_node);
        nb_cell_int(nodes, "bad_pairs", pairs_of_node);
        nb_warning(result, "bad node %s (rank %d): all its %lld measured pairs are bad, also "
                   "alone", host_of(hosts, r), r, pairs_of_node);
    }
    free(node_bad);
    return bad_nodes;
}

static int from_noise(const matrix_settings *ms)
{
    return !(ms->bandwidth_fraction > 0.0);
}

/* The bound on the suspects re-tested alone for P ranks (--max-retests, else the default). */
static long retest_bound(const matrix_settings *ms, int P)
{
    if (ms->max_retests > 0)
        return ms->max_retests;
    long bound = (long)MATRIX_RETESTS_PER_RANK * P;
    return bound > MATRIX_MIN_RETESTS ? bound : MATRIX_MIN_RETESTS;
}

/* Rank 0: the run's parameters. */
static void report_parameters(const nb_context *ctx, const matrix_verdict *v, int total_rounds,
                              int rounds)
{
    const nb_options *o = ctx->options;
    const matrix_settings *ms = o->settings;
    nb_result *result = ctx->result;
    nb_param_int(result, "ranks", ctx->size);
    nb_param_int(result, "latency_size_bytes", (long long)o->min_size);
    nb_param_int(result, "bandwidth_size_bytes", (long long)o->max_size);
    /* kept from the first matrix: the share below which a pair is flagged, now of the best */
    nb_param_real(result, "flag_tolerance", v->map.suspect_slowdown);
    nb_param_text(result, "schedule", matrix_schedule_name(ms->schedule));
    nb_param_text(result, "thresholds", from_noise(ms) ? "noise" : "fraction");
    if (from_noise(ms))
        nb_param_real(result, "smallest_fault", ms->smallest_fault);
    else
        nb_param_real(result, "bandwidth_fraction", ms->bandwidth_fraction);
    nb_param_real(result, "latency_factor", ms->latency_factor);
    nb_param_int(result, "rounds_total", total_rounds);
    nb_param_int(result, "rounds", rounds);
    nb_param_int(result, "seed", (long long)o->seed);
    nb_param_real(result, "progress_every_s", ms->progress_every_s);
    nb_param_int(result, "max_retests", retest_bound(ms, ctx->size));
    nb_param_text(result, "path_classes", ms->path_classes != NULL ? ms->path_classes : "");
    if (ms->path_classes != NULL) {
        /* "class:best" for each class with pairs, e.g. "0:24602.9,2:14684.2" */
        char bests[NB_PATH_CLASSES * 24] = "";
        size_t used = 0;
        for (int c = 0; c < NB_PATH_CLASSES && used < sizeof bests; c++)
            if (isfinite(v->class_best[c]))
                used += (size_t)snprintf(bests + used, sizeof bests - used, "%s%d:%.1f",
                                         used > 0 ? "," : "", c, v->class_best[c]);
        nb_param_text(result, "class_best_MBps", bests);
        nb_param_int(result, "class_suspect_pairs", v->class_suspects);
        nb_param_int(result, "local_rounds", v->local_rounds);
        if (v->missing_hosts > 0)
            nb_warning(result, "%d rank(s) on hosts that --path-classes %s lacks: their pairs "
                       "judged against the whole map only", v->missing_hosts, ms->path_classes);
    }
    nb_param_common(ctx);
}

/* Rank 0: the warning that names a bad pair, with the rule it failed. */
static void warn_bad_pair(nb_result *result, const matrix_record *m, const matrix_verdict *v,
                          const matrix_settings *ms, size_t k, int a, int b, const char *hosts)
{
    const nb_pair_thresholds *t = &v->map;
    if (from_noise(ms))
        nb_warning(result, "bad pair %d-%d (%s-%s): %.1f MB/s, %.2f us measured with the "
                   "others, %.1f MB/s, %.2f us alone: %.0f %% below the healthy pairs re-tested "
                   "around it (%.1f MB/s), %.1f MB/s alone again; bad beyond %.0f %% (the noise "
                   "alone %.1f %%) or above %.2f us",
                   a, b, host_of(hosts, a), host_of(hosts, b), m->bandwidth[k], m->latency[k],
                   m->retest_bandwidth[k], m->retest_latency[k],
                   100.0 * (1.0 - m->retest_bandwidth[k] / m->local_reference[k]),
                   m->local_reference[k], m->confirm_bandwidth[k], 100.0 * v->alone.bad_slowdown,
                   100.0 * v->alone.noise, t->latency_ceiling);
    else
        nb_warning(result, "bad pair %d-%d (%s-%s): %.1f MB/s, %.2f us measured with "
                   "the others, %.1f MB/s, %.2f us alone (%.1f MB/s again); a pair below %.1f MB/s (%g x "
                   "the best %.1f) or above %.2f us (%g x the lowest %.2f) is suspect",
                   a, b, host_of(hosts, a), host_of(hosts, b), m->bandwidth[k],
                   m->latency[k], m->retest_bandwidth[k], m->retest_latency[k],
                   m->confirm_bandwidth[k], t->bandwidth_floor, ms->bandwidth_fraction, t->best_bandwidth,
                   t->latency_ceiling, ms->latency_factor, t->lowest_latency);
}

/* Rank 0: the figures of the verdict from the noise, and the warning when the map could not
 * resolve the fault it looks for. */
static void report_resolution(nb_result *result, const matrix_verdict *v,
                              const matrix_settings *ms)
{
    nb_summary_real(result, "bandwidth_noise", v->map.noise);
    nb_summary_real(result, "suspect_slowdown", v->map.suspect_slowdown);
    nb_summary_int(result, "reference_pairs", v->references);
    nb_summary_int(result, "slow_reference_pairs", v->alone.slow_references);
    nb_summary_real(result, "reference_alone_MBps", v->alone.reference_bandwidth);
    nb_summary_real(result, "alone_noise", v->alone.noise);
    nb_summary_real(result, "bad_slowdown", v->alone.bad_slowdown);
    nb_summary_real(result, "resolvable_slowdown", v->resolvable_slowdown);
    if (v->alone.slow_references > 0)
        nb_warning(result, "%d of the %d reference pairs measured alone below the best healthy "
                   "figure alone by more than half the fault or 3 x the drift: left out of the "
                   "healthy level (a slow link, or a placement of its own)",
                   v->alone.slow_references, v->references);
    if (!from_noise(ms) || !(v->resolvable_slowdown > ms->smallest_fault))
        return;
    char resolves[64];
    if (v->resolvable_slowdown < 1.0)
        snprintf(resolves, sizeof resolves, "resolves %.0f %% or more",
                 100.0 * v->resolvable_slowdown);
    else
        snprintf(resolves, sizeof resolves, "resolves no slow link at all");
    nb_warning(result, "this map cannot resolve a link %.0f %% slow (--smallest-fault): its "
               "noise (%.1f %% with the others, %.1f %% alone) %s; measure on a quieter "
               "machine or with more --repetitions",
               100.0 * ms->smallest_fault, 100.0 * v->map.noise, 100.0 * v->alone.noise,
               resolves);
}

/* Rank 0: parameters, the pairs table, the bad nodes, the summary. */
static void report_matrix(const nb_context *ctx, const matrix_record *m, const matrix_verdict *v,
                          const char *hosts, int total_rounds, int rounds, double measured_s,
                          double retest_s)
{
    const nb_options *o = ctx->options;
    const matrix_settings *ms = o->settings;
    const nb_pair_thresholds *t = &v->map;
    nb_result *result = ctx->result;
    int P = m->P;
    report_parameters(ctx, v, total_rounds, rounds);

    nb_table *table = nb_result_add_declared_table(result, &pairs_table);
    size_t measured = 0;
    double *latencies = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, sizeof *latencies);
    double *bandwidths = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, sizeof *bandwidths);
    int *rank_a = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, sizeof *rank_a);
    int *rank_b = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, sizeof *rank_b);
    int *bad = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs, sizeof *bad);
    double *decided_bandwidths = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs,
                                                    sizeof *decided_bandwidths);
    size_t decided = 0; /* the pairs a node's verdict reads: all but the undecided suspects */
    long long bad_pairs = 0;
    for (int a = 0; a < P; a++)
        for (int b = a + 1; b < P; b++) {
            size_t k = pair_index(P, a, b);
            if (m->round[k] == 0)
                continue;
            latencies[measured] = m->latency[k];
            bandwidths[measured] = m->bandwidth[k];
            measured++;
            /* an undecided suspect (--max-retests) is no evidence for or against its nodes */
            if (!m->suspect[k] || isfinite(m->retest_bandwidth[k])) {
                rank_a[decided] = a;
                rank_b[decided] = b;
                bad[decided] = m->bad[k];
                decided_bandwidths[decided] = m->bandwidth[k];
                decided++;
            }
            add_pair_row(table, m, k, a, b, hosts);
            if (m->bad[k] && bad_pairs < MATRIX_PAIR_WARNINGS)
                warn_bad_pair(result, m, v, ms, k, a, b, hosts);
            bad_pairs += m->bad[k];
        }
    if (bad_pairs > MATRIX_PAIR_WARNINGS)
        nb_warning(result, "%lld more bad pairs (table pairs, flagged)",
                   bad_pairs - MATRIX_PAIR_WARNINGS);

    int bad_nodes = report_bad_nodes(result, P, decided, rank_a, rank_b, bad,
                                     decided_bandwidths, t->noise, hosts);

    nb_summary_int(result, "pairs", (long long)measured);
    nb_summary_int(result, "pairs_total", (long long)m->pairs);
    nb_summary_int(result, "rounds", rounds);
    nb_summary_int(result, "rounds_total", total_rounds);
    nb_summary_real(result, "latency_median_us", nb_median(latencies, measured));
    nb_summary_real(result, "latency_max_us", nb_max(latencies, measured));
    nb_summary_real(result, "bandwidth_median_MBps", nb_median(bandwidths, measured));
    nb_summary_real(result, "bandwidth_min_MBps", nb_min(bandwidths, measured));
    nb_summary_int(result, "flagged_pairs", bad_pairs);
    nb_summary_real(result, "bandwidth_best_MBps", t->best_bandwidth);
    nb_summary_real(result, "bandwidth_floor_MBps", t->bandwidth_floor);
    nb_summary_real(result, "latency_lowest_us", t->lowest_latency);
    nb_summary_real(result, "latency_ceiling_us", t->latency_ceiling);
    nb_summary_int(result, "suspect_pairs", v->suspects);
    nb_summary_int(result, "bad_pairs", bad_pairs);
    nb_summary_int(result, "cleared_pairs", v->suspects - v->undecided - bad_pairs);
    nb_summary_int(result, "unconfirmed_pairs", v->unconfirmed);
    if (v->unconfirmed > 0)
        nb_warning(result, "%d pair(s) bad alone once were cleared by a second re-test alone "
                   "(a slow phase of the machine, not the pair: table pairs, retest_bandwidth_MBps "
                   "of the first)", v->unconfirmed);
    nb_summary_int(result, "undecided_pairs", v->undecided);
    if (v->undecided > 0)
        nb_warning(result, "%d of %d suspect pairs not re-tested alone (--max-retests %ld): "
                   "undecided, neither bad nor cleared; the %d re-tested were drawn in turn "
                   "over the ranks", v->undecided, v->suspects, retest_bound(ms, P),
                   v->suspects - v->undecided);
    nb_summary_int(result, "bad_nodes", bad_nodes);
    nb_summary_real(result, "measure_s", measured_s);
    nb_summary_real(result, "round_mean_s", ms->schedule == SCHEDULE_CONCURRENT && rounds > 0
                                                ? measured_s / (rounds + v->local_rounds) : NAN);
    nb_summary_real(result, "pair_mean_s", ms->schedule == SCHEDULE_SEQUENTIAL && measured > 0
                                               ? measured_s / (double)measured : NAN);
    nb_summary_real(result, "retest_s", retest_s);
    nb_summary_real(result, "retest_pair_mean_s",
                    v->retests > 0 ? retest_s / v->retests : NAN);
    report_resolution(result, v, ms);
    const char *schedule = matrix_schedule_name(ms->schedule);
    if (o->json_file != NULL && matrix_write_maps(o->json_file, schedule, m, hosts) != 0)
        nb_warning(result, "the N x N maps could not be written beside %s (see stderr)",
                   o->json_file);
    free(latencies);
    free(bandwidths);
    free(rank_a);
    free(rank_b);
    free(bad);
    free(decided_bandwidths);
}

/* retest[2 n], retest[2 n + 1] := a, b; the new n. */
static int list_pair(int a, int b, int *retest, int n)
{
    retest[2 * n] = a;
    retest[2 * n + 1] = b;
    return n + 1;
}

/* choose_suspects' order of the ranks: each by its first suspect (`sooner`), a suspect in the
 * lowest path class first (a pair under one leaf shares no link with other pairs: no
 * congestion makes it slow), then the furthest below its class's best for the share of its
 * link it had (matrix_retest_key), then more suspect pairs, then the lower rank (rank 0 alone
 * runs it; qsort takes no context). */
static int *suspects_of_rank, *lowest_class_of_rank;
static double *lowest_of_rank;

static int by_suspects(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    if (lowest_class_of_rank[a] != lowest_class_of_rank[b])
        return lowest_class_of_rank[a] < lowest_class_of_rank[b] ? -1 : 1;
    if (lowest_of_rank[a] != lowest_of_rank[b])
        return lowest_of_rank[a] < lowest_of_rank[b] ? -1 : 1;
    if (suspects_of_rank[a] != suspects_of_rank[b])
        return suspects_of_rank[a] > suspects_of_rank[b] ? -1 : 1;
    return (a > b) - (a < b);
}

/* Whether suspect k goes before suspect `than` in a rank's turn: its path class lower, or the
 * same and further below its class's best for its share of its link (matrix_retest_key). */
static int sooner(const matrix_record *m, const matrix_verdict *v, size_t k, size_t than)
{
    int a = matrix_class_order(m, k), b = matrix_class_order(m, than);
    return a != b ? a < b : matrix_retest_key(m, v, k) < matrix_retest_key(m, v, than);
}

/* Rank 0: chosen[k] := 1 for the suspects to re-test alone: all of them within the bound, else
 * the bound's worth drawn in turn over the ranks (by_suspects' order), each rank's suspect in
 * its lowest path class first, the furthest below its class's best (a congested pair across a
 * tapered core is slow, but no slower than its class), so that every node, leaf or uplink
 * whose pairs are suspect has some re-tested. v->undecided := the others (they stay suspect,
 * neither bad nor cleared). The caller frees. */
static unsigned char *choose_suspects(const matrix_settings *ms, matrix_record *m,
                                      matrix_verdict *v)
{
    unsigned char *chosen = nb_calloc_or_abort(MPI_COMM_WORLD, m->pairs + 1, sizeof *chosen);
    long bound = retest_bound(ms, m->P);
    if (v->suspects <= bound) {
        for (size_t k = 0; k < m->pairs; k++)
            chosen[k] = m->suspect[k];
        return chosen;
    }
    /* the ranks with the most suspect pairs first (a bad node, the nodes under a bad leaf),
     * so that a bound below the ranks with suspects still re-tests those */
    matrix_round_loads(m);
    int *order = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)m->P, sizeof *order);
    suspects_of_rank = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)m->P,
                                          sizeof *suspects_of_rank);
    lowest_class_of_rank = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)m->P,
                                              sizeof *lowest_class_of_rank);
    lowest_of_rank = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)m->P, sizeof *lowest_of_rank);
    size_t *first = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)m->P, sizeof *first);
    for (int a = 0; a < m->P; a++)
        first[a] = m->pairs;
    for (int a = 0; a < m->P; a++) {
        order[a] = a;
        for (int b = a + 1; b < m->P; b++) {
            size_t k = pair_index(m->P, a, b);
            if (!m->suspect[k])
                continue;
            suspects_of_rank[a]++;
            suspects_of_rank[b]++;
            if (first[a] == m->pairs || sooner(m, v, k, first[a]))
                first[a] = k;
            if (first[b] == m->pairs || sooner(m, v, k, first[b]))
                first[b] = k;
        }
    }
    for (int a = 0; a < m->P; a++) {
        int none = first[a] == m->pairs;
        lowest_class_of_rank[a] = none ? NB_PATH_CLASSES + 1 : matrix_class_order(m, first[a]);
        lowest_of_rank[a] = none ? INFINITY : matrix_retest_key(m, v, first[a]);
        if (isnan(lowest_of_rank[a]))
            lowest_of_rank[a] = INFINITY; /* a latency suspect without a bandwidth */
    }
    free(first);
    qsort(order, (size_t)m->P, sizeof *order, by_suspects);
    long picked = 0;
    int progress = 1;
    while (picked < bound && progress) {
        progress = 0;
        for (int i = 0; i < m->P && picked < bound; i++) {
            int r = order[i];
            /* rank r's slowest suspect not chosen yet */
            size_t best = m->pairs;
            for (int o = 0; o < m->P; o++) {
                if (o == r)
                    continue;
                size_t k = r < o ? pair_index(m->P, r, o) : pair_index(m->P, o, r);
                if (m->suspect[k] && !chosen[k] && (best == m->pairs || sooner(m, v, k, best)))
                    best = k;
            }
            if (best < m->pairs) {
                chosen[best] = 1;
                picked++;
                progress = 1;
            }
        }
    }
    v->undecided = v->suspects - (int)picked;
    free(order);
    free(suspects_of_rank);
    free(lowest_class_of_rank);
    free(lowest_of_rank);
    suspects_of_rank = lowest_class_of_rank = NULL;
    lowest_of_rank = NULL;
    return chosen;
}

/* Rank 0: the map's thresholds, its suspects and (from the noise) the reference pairs;
 * retest[2 i], retest[2 i + 1] := the ranks of the i-th pair to re-test alone. From the noise,
 * the references in turn around every suspect (R S R S ... S R), so that each suspect is
 * compared with healthy pairs measured alone just before and after it: a loaded machine's slow
 * phase hits both (the pairing of paired.h); without suspects, each reference once. Returns how
 * many. */
static int choose_retests(const matrix_settings *ms, matrix_record *m, matrix_verdict *v,
                          int *retest)
{
    if (from_noise(ms))
        v->map = nb_pair_thresholds_from_noise(m->latency, m->bandwidth, m->spread, m->pairs,
                                               ms->smallest_fault, ms->latency_factor);
    else
        v->map = nb_pair_thresholds_of(m->latency, m->bandwidth, m->pairs,
                                       ms->bandwidth_fraction, ms->latency_factor);
    matrix_class_thresholds(m, ms->latency_factor, v);
    for (size_t k = 0; k < m->pairs; k++) {
        nb_pair_thresholds t = matrix_pair_thresholds(m, v, k);
        m->suspect[k] = (unsigned char)nb_pair_is_suspect(&t, m->latency[k], m->bandwidth[k]);
        v->suspects += m->suspect[k];
        v->class_suspects +=
            m->suspect[k] && !nb_pair_is_suspect(&v->map, m->latency[k], m->bandwidth[k]);
    }
    size_t references[NB_REFERENCE_PAIRS];
    size_t found = 0;
    if (from_noise(ms))
        found = nb_reference_pairs(m->bandwidth, m->suspect, m->pairs, NB_REFERENCE_PAIRS,
                                   references);
    for (size_t i = 0; i < found; i++)
        m->reference[references[i]] = 1;
    v->references = (int)found;
    int reference_ranks[2 * NB_REFERENCE_PAIRS]; /* a, b of each reference */
    int known = 0;
    for (int a = 0; a < m->P; a++)
        for (int b = a + 1; b < m->P; b++)
            if (m->reference[pair_index(m->P, a, b)])
                known = list_pair(a, b, reference_ranks, known);
    unsigned char *chosen = choose_suspects(ms, m, v);
    int n = 0, turn = 0;
    for (int a = 0; a < m->P; a++)
        for (int b = a + 1; b < m->P; b++) {
            if (!chosen[pair_index(m->P, a, b)])
                continue;
            if (known > 0) {
                const int *r = reference_ranks + 2 * (turn++ % known);
                n = list_pair(r[0], r[1], retest, n);
            }
            n = list_pair(a, b, retest, n);
        }
    if (known > 0 && n > 0) {
        const int *r = reference_ranks + 2 * (turn % known);
        n = list_pair(r[0], r[1], retest, n);
    }
    for (int i = 0; i < known && n == 0; i++)
        n = list_pair(reference_ranks[2 * i], reference_ranks[2 * i + 1], retest, n);
    free(chosen);
    return n;
}

/* The mean of the finite values, NaN without any. */
static double mean_of_finite(const double *values, size_t count)
{
    double sum = 0.0;
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (isfinite(values[i])) {
            sum += values[i];
            n++;
        }
    return n > 0 ? sum / (double)n : NAN;
}

/* Rank 0: the rule for the re-tests from the references among them (pairmap.h); state[s] := at
 * a reference's step, its re-test over its own pair's level, the machine's state (else NaN). */
static nb_alone_rule alone_rule_of_retests(const matrix_settings *ms, const matrix_record *m,
                                           const int *retest, const double *steps, int count,
                                           double *state)
{
    double *in_turn = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)count + 1, sizeof *in_turn);
    int *pair_of = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)count + 1, sizeof *pair_of);
    double *state_in_turn = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)count + 1,
                                               sizeof *state_in_turn);
    size_t references = 0;
    for (int s = 0; s < count; s++) {
        size_t k = pair_index(m->P, retest[2 * s], retest[2 * s + 1]);
        if (m->reference[k]) {
            pair_of[references] = (int)k;
            in_turn[references++] = steps[s];
        }
    }
    nb_alone_rule rule = nb_alone_rule_of(in_turn, pair_of, references, m->retest_bandwidth,
                                          m->retest_spread, m->pairs, ms->smallest_fault,
                                          state_in_turn);
    for (int s = 0, i = 0; s < count; s++)
        state[s] = m->reference[pair_index(m->P, retest[2 * s], retest[2 * s + 1])]
                       ? state_in_turn[i++]
                       : NAN;
    free(in_turn);
    free(pair_of);
    free(state_in_turn);
    return rule;
}

/* Rank 0: whether a pair's figures alone at step s of a re-test list (count steps) are bad. From
 * the noise: below the references' level x the machine's state in the reference steps around
 * it (pairmap.h) by more than the map's threshold alone, or its latency above its ceiling in
 * the map (*local_reference := that level x state); with --bandwidth-fraction, still failing
 * its thresholds in the map, `t` (*local_reference := NaN). */
static int bad_alone(const matrix_settings *ms, const matrix_verdict *v, const nb_alone_rule *rule,
                     const double *state, int count, int s, pair_figures f,
                     const nb_pair_thresholds *t, double *local_reference)
{
    *local_reference = NAN;
    if (!from_noise(ms))
        return nb_pair_is_suspect(t, f.latency_us, f.bandwidth_MBps);
    double around[2] = {s > 0 ? state[s - 1] : NAN, s + 1 < count ? state[s + 1] : NAN};
    double local = mean_of_finite(around, 2);
    *local_reference = rule->reference_bandwidth * (isfinite(local) ? local : 1.0);
    return f.bandwidth_MBps < nb_bandwidth_floor(v->alone.bad_slowdown, *local_reference) ||
           f.latency_us > t->latency_ceiling;
}

/* Rank 0: the rule of a re-test list from its reference steps, state[s] := the machine's state
 * at each (NaN elsewhere, and everywhere with --bandwidth-fraction). */
static nb_alone_rule rule_of_list(const matrix_settings *ms, const matrix_record *m,
                                  const int *list, const pair_figures *steps, int count,
                                  double *state)
{
    for (int s = 0; s < count; s++)
        state[s] = NAN;
    if (!from_noise(ms))
        return (nb_alone_rule){NAN, NAN, NAN, NAN, 0};
    double *bandwidth = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)count + 1, sizeof *bandwidth);
    for (int s = 0; s < count; s++)
        bandwidth[s] = steps[s].bandwidth_MBps;
    nb_alone_rule rule = alone_rule_of_retests(ms, m, list, bandwidth, count, state);
    free(bandwidth);
    return rule;
}

/* Rank 0, after the re-tests (steps[i]: the figures of the i-th, in order): which suspects are
 * bad alone (bad_alone). */
static void judge_retests(const matrix_settings *ms, matrix_record *m, matrix_verdict *v,
                          const int *retest, const pair_figures *steps)
{
    v->resolvable_slowdown = NAN;
    int count = v->retests;
    double *state = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)count + 1, sizeof *state);
    v->alone = rule_of_list(ms, m, retest, steps, count, state);
    if (from_noise(ms))
        v->resolvable_slowdown = nb_resolvable_slowdown(&v->map, &v->alone);
    for (int s = 0; s < count; s++) {
        size_t k = pair_index(m->P, retest[2 * s], retest[2 * s + 1]);
        nb_pair_thresholds t = matrix_pair_thresholds(m, v, k);
        if (m->suspect[k])
            m->bad[k] = (unsigned char)bad_alone(ms, v, &v->alone, state, count, s, steps[s], &t,
                                                 &m->local_reference[k]);
    }
    free(state);
}

/* Rank 0: list[2 i], list[2 i + 1] := the ranks of the i-th step of the second re-test alone:
 * every pair bad alone once more, each after a reference in turn and one reference last
 * (R B R ... B R), as the first; returns how many steps (0: no pair bad). */
static int choose_confirmations(const matrix_settings *ms, matrix_record *m, matrix_verdict *v,
                                int *list)
{
    (void)ms;
    (void)v;
    int references[2 * NB_REFERENCE_PAIRS], known = 0, n = 0, turn = 0;
    for (int a = 0; a < m->P; a++)
        for (int b = a + 1; b < m->P; b++)
            if (m->reference[pair_index(m->P, a, b)] && known < NB_REFERENCE_PAIRS)
                known = list_pair(a, b, references, known);
    for (int a = 0; a < m->P; a++)
        for (int b = a + 1; b < m->P; b++) {
            if (!m->bad[pair_index(m->P, a, b)])
                continue;
            if (known > 0) {
                const int *r = references + 2 * (turn++ % known);
                n = list_pair(r[0], r[1], list, n);
            }
            n = list_pair(a, b, list, n);
        }
    if (known > 0 && n > 0)
        n = list_pair(references[2 * (turn % known)], references[2 * (turn % known) + 1], list,
                      n);
    return n;
}

/* Rank 0 chooses a list of pairs to measure alone (list[2 i], list[2 i + 1]; at most every pair
 * after a reference, and one reference last), every rank gets it (*list, *count: to free), and
 * every pair of it is measured alone in order: rank 0's figures of each step (to free). */
typedef int (*list_chooser)(const matrix_settings *ms, matrix_record *m, matrix_verdict *v,
                            int *list);
static pair_figures *measure_chosen(const nb_context *ctx, const matrix_settings *ms,
                                    matrix_record *m, matrix_verdict *v, list_chooser choose,
                                    void *send, void *recv, const char *what, int **list,
                                    int *count)
{
    *list = NULL;
    if (ctx->rank == 0) {
        /* rank 0 holds O(pairs) anyway; the others get the list's own size */
        *list = nb_calloc_or_abort(MPI_COMM_WORLD, (2 * m->pairs + NB_REFERENCE_PAIRS) * 2,
                                   sizeof **list);
        *count = choose(ms, m, v, *list);
    }
    *list = matrix_share_list(ctx, *list, count);
    pair_figures *steps = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)*count + 1, sizeof *steps);
    matrix_measure_alone(ctx, *list, *count, send, recv, steps, what, ms->progress_every_s);
    return steps;
}

/* The suspects (and references) again, each alone, then judged (judge_retests); rank 0's record
 * keeps each pair's first figures alone. */
static void retest_suspects(const nb_context *ctx, const matrix_settings *ms, matrix_record *m,
                            matrix_verdict *v, void *send, void *recv)
{
    int *retest;
    pair_figures *steps = measure_chosen(ctx, ms, m, v, choose_retests, send, recv,
                                         "re-test of a pair alone", &retest, &v->retests);
    if (ctx->rank == 0) {
        for (int s = 0; s < v->retests; s++) {
            size_t k = pair_index(m->P, retest[2 * s], retest[2 * s + 1]);
            if (!isfinite(m->retest_bandwidth[k])) {
                m->retest_latency[k] = steps[s].latency_us;
                m->retest_bandwidth[k] = steps[s].bandwidth_MBps;
                m->retest_spread[k] = steps[s].bandwidth_spread;
            }
        }
        judge_retests(ms, m, v, retest, steps);
    }
    free(retest);
    free(steps);
}

/* Every pair bad alone, alone once more between the references (choose_confirmations): bad only
 * where this re-test is bad too (bad_alone against its own references' level and state, the
 * first re-tests' threshold). One slow transfer alone (a host's slow phase, a burst through
 * shapers in series: pairs across two leaves of the emulated tree alone measured 21.8-25.0 MB/s
 * against 24.6-25.0 within a leaf, 2026-12-07) rarely hits one pair twice; a slow link always. */
static void confirm_bad(const nb_context *ctx, const matrix_settings *ms, matrix_record *m,
                        matrix_verdict *v, void *send, void *recv)
{
    int *list;
    pair_figures *steps = measure_chosen(ctx, ms, m, v, choose_confirmations, send, recv,
                                         "second re-test of a bad pair alone", &list,
                                         &v->confirmations);
    int count = v->confirmations;
    if (ctx->rank == 0 && count > 0) {
        double *state = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)count + 1, sizeof *state);
        nb_alone_rule rule = rule_of_list(ms, m, list, steps, count, state);
        for (int s = 0; s < count; s++) {
            size_t k = pair_index(m->P, list[2 * s], list[2 * s + 1]);
            if (!m->bad[k] || m->reference[k])
                continue;
            double local;
            m->confirm_bandwidth[k] = steps[s].bandwidth_MBps;
            nb_pair_thresholds t = matrix_pair_thresholds(m, v, k);
            if (!bad_alone(ms, v, &rule, state, count, s, steps[s], &t, &local)) {
                m->bad[k] = 0;
                v->unconfirmed++;
            }
        }
        free(state);
    }
    free(list);
    free(steps);
}

void run_matrix(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const matrix_settings *ms = o->settings;
    int P = ctx->size;
    void *send = nb_buffer_new(o->max_size > 0 ? o->max_size : 1);
    void *recv = nb_buffer_new(o->max_size > 0 ? o->max_size : 1);
    char *hosts = gather_hosts(ctx);
    int total_rounds = nb_tournament_rounds(P);
    int *chosen = nb_calloc_or_abort(MPI_COMM_WORLD, (size_t)total_rounds, sizeof *chosen);
    int count = nb_tournament_pick_rounds(P, ms->rounds > 0 ? ms->rounds : total_rounds, o->seed,
                                          chosen);
    matrix_record m = {0};
    if (ctx->rank == 0)
        record_new(&m, P);
    matrix_verdict verdict = {0};
    matrix_class_thresholds(&m, 0.0, &verdict); /* none yet: NaN */
    if (ms->path_classes != NULL)
        verdict.missing_hosts = matrix_read_path_classes(ctx, ms->path_classes, hosts,
                                                         ms->local_rounds &&
                                                             count < total_rounds,
                                                         o->seed, &m);

    nb_quiet_barrier(ctx->pair);
    double start = MPI_Wtime();
    progress_clock clock = {start, start, ms->progress_every_s};
    if (ms->schedule == SCHEDULE_SEQUENTIAL)
        matrix_measure_sequentially(ctx, chosen, count, send, recv, &m, &clock);
    else
        matrix_measure_concurrently(ctx, chosen, count, send, recv, &m, &clock);
    if (ms->path_classes != NULL)
        verdict.local_rounds = matrix_measure_local(ctx, ms->schedule == SCHEDULE_SEQUENTIAL,
                                            total_rounds + 1, send, recv, &m, &clock);
    double measured_s = MPI_Wtime() - start;

    /* The verdict: the suspects (and references) again, each alone, then judged; the pairs bad
     * alone once more. */
    double retest_start = MPI_Wtime();
    retest_suspects(ctx, ms, &m, &verdict, send, recv);
    confirm_bad(ctx, ms, &m, &verdict, send, recv);
    double retest_s = MPI_Wtime() - retest_start;

    if (ctx->result != NULL)
        report_matrix(ctx, &m, &verdict, hosts, total_rounds, count, measured_s, retest_s);
    if (ctx->rank == 0)
        record_free(&m);
    free(chosen);
    free(hosts);
    free(send);
    free(recv);
}

/* `matrix --print-schedule N`: a dry run before and without MPI. */
int matrix_without_mpi(const nb_options *o)
{
    const matrix_settings *ms = o->settings;
    if (ms->print_schedule_ranks <= 0)
        return -1;
    return matrix_print_schedule(ms->print_schedule_ranks, ms->rounds, o->seed, o->json_to_stdout);
}
