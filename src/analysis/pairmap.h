/* pairmap.h - the all-pairs map at scale: which pairs measure together (a round-robin
 * tournament), and which pairs and nodes the run's own distribution marks as suspect or bad.
 *
 * No MPI in here: this file also builds into libnbanalysis.so for the Python unit tests, and
 * `netbench matrix --print-schedule N` prints the schedule before (and without) MPI_Init.
 */
#ifndef NETBENCH_PAIRMAP_H
#define NETBENCH_PAIRMAP_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------------------ */
/* Schedule: the circle method. Ranks 0..N-1 (a ghost rank N is added for an odd N: its partner */
/* sits the round out). Every round is a set of disjoint pairs; over all rounds every pair      */
/* meets exactly once. Rounds: N - 1 for an even N, N for an odd N (N (N-1) / 2 pairs of at     */
/* most (N-1) / 2 per round need N rounds).                                                     */
/* ------------------------------------------------------------------------------------------ */

/* Rounds of the whole tournament of `ranks` ranks (0 when ranks < 2). */
int nb_tournament_rounds(int ranks);

/* The partner of `rank` in round `round` (0 .. rounds-1), or -1 when it sits this round out. */
int nb_tournament_partner(int ranks, int round, int rank);

/* chosen[0..wanted-1] := `wanted` distinct rounds of the tournament, drawn with `seed` (the
 * same seed, the same rounds on every rank and host), ascending. wanted >= the rounds of the
 * tournament gives every round. Returns how many were written. */
int nb_tournament_pick_rounds(int ranks, int wanted, uint64_t seed, int *chosen);

/* ------------------------------------------------------------------------------------------ */
/* Verdict, relative to the run's own distribution: a pair is suspect when its bandwidth is     */
/* below a floor under the best pair's (a fixed fraction, ClusterKit's rule, or from the noise: */
/* below), or its latency above latency_factor x the lowest pair's. A NaN figure (not measured) */
/* is neither best nor suspect.                                                                 */
/* ------------------------------------------------------------------------------------------ */

/* From this many measured pairs on, "best" and "lowest" are the 90th and 10th percentiles
 * (nearest rank), robust to one optimistic outlier; below it, the extremes. */
#define NB_ROBUST_BEST_MIN_PAIRS 10

typedef struct {
    double best_bandwidth;       /* the highest bandwidth of the run (see above) */
    double lowest_latency;       /* the lowest latency of the run (see above) */
    double bandwidth_floor;      /* suspect below: bandwidth_fraction x best_bandwidth, or
                                    (1 - suspect_slowdown) x best_bandwidth (from the noise) */
    double latency_ceiling;      /* latency_factor x lowest_latency */
    double noise;                /* a pair's bandwidth noise in the map, relative: the median
                                    over the pairs of their robust sd over the repetitions */
    double suspect_slowdown;     /* 1 - bandwidth_floor / best_bandwidth */
} nb_pair_thresholds;

/* The thresholds of `count` pairs' figures, the bandwidth floor a fixed fraction of the best. */
nb_pair_thresholds nb_pair_thresholds_of(const double *latency, const double *bandwidth,
                                         size_t count, double bandwidth_fraction,
                                         double latency_factor);

/* best[c] := the robust best (as above: the highest bandwidth, or with higher_is_better 0 the
 * lowest latency) of the pairs of path class c (pathclass.h), c = 0 .. classes - 1, NaN where a
 * class has no measured pair; pair_class[i] < 0: in none. */
void nb_class_bests(const double *values, const int *pair_class, size_t count, int classes,
                    int higher_is_better, double *best);

/* ------------------------------------------------------------------------------------------ */
/* Thresholds from the map's own noise. The map looks for a link `smallest_fault` slow (0.2: a  */
/* fifth of its bandwidth lost). A pair is suspect when it measures below the best by more than */
/* half that fault or NB_NOISE_SIGMAS times its noise, whichever is more; it is bad when, re-   */
/* tested alone, it measures below healthy pairs re-tested alone (the references) by more than  */
/* half the fault or NB_NOISE_SIGMAS times the noise of measuring alone. A fault x is resolved  */
/* when it clears both thresholds by its own noise: x > threshold + NB_NOISE_SIGMAS x noise.    */
/* ------------------------------------------------------------------------------------------ */

#define NB_NOISE_SIGMAS 3.0
/* Healthy pairs re-tested alone, as the reference of the re-tests. */
#define NB_REFERENCE_PAIRS 3

/* spread[i]: pair i's robust relative sd of its bandwidth over its repetitions (NaN: not
 * measured). */
nb_pair_thresholds nb_pair_thresholds_from_noise(const double *latency, const double *bandwidth,
                                                 const double *spread, size_t count,
                                                 double smallest_fault, double latency_factor);

/* references[0..wanted-1] := the indexes of up to `wanted` measured pairs that are not suspect,
 * those nearest the median bandwidth of the pairs that are not; returns how many. */
size_t nb_reference_pairs(const double *bandwidth, const unsigned char *suspect, size_t count,
                          size_t wanted, size_t *references);

typedef struct {
    double reference_bandwidth;  /* a healthy pair alone: the median of the references' levels
                                    (each one's median re-test) but those left out below;
                                    without any, the 90th percentile of the re-tests */
    double noise;                /* relative: the largest of the re-tests' median spread over
                                    their repetitions, the references' drift from one re-test to
                                    the next (each over its own level: the machine's state; from
                                    3 ratios on) and the spread among the kept references' levels
                                    (1.4826 MAD / median, from 3 on) */
    double bad_slowdown;         /* bad below (1 - bad_slowdown) x the references around it */
    double bandwidth_floor;      /* that bandwidth */
    int slow_references;         /* references whose level is below the best healthy figure
                                    alone (the best reference's, or the 90th percentile of the
                                    re-tests) by more than half the fault or 3 x the
                                    drift (the threshold before the kept references'
                                    spread among them): left out */
} nb_alone_rule;

/* The rule for the re-tests: the references' bandwidths alone, in the order they were measured
 * (reference_count of them: the references in turn, one before every suspect and one after the
 * last, so that a suspect is compared with the references around it), which reference pair each
 * was (reference_pair: any id, equal for the same pair), every re-test's bandwidth and spread
 * (retest_count). state (reference_count, may be NULL) := each reference re-test over its pair's
 * level: the machine's state at that step, so that the references around a suspect say
 * reference_bandwidth x the mean of their states. */
nb_alone_rule nb_alone_rule_of(const double *reference_bandwidth, const int *reference_pair,
                               size_t reference_count, const double *retest_bandwidth,
                               const double *retest_spread, size_t retest_count,
                               double smallest_fault, double *state);

/* The smallest slowdown of a link the map resolves: through both thresholds by its noise. */
double nb_resolvable_slowdown(const nb_pair_thresholds *t, const nb_alone_rule *r);

/* The bandwidth a figure `slowdown` below `reference` lies at: 0 for a slowdown of 100 % or more
 * (a map that noisy resolves no slow link; a bandwidth is never negative), NaN for an unknown. */
double nb_bandwidth_floor(double slowdown, double reference);

/* 1 when the figures of one pair fail a threshold (below the floor, above the ceiling). */
int nb_pair_is_suspect(const nb_pair_thresholds *t, double latency, double bandwidth);

/* The noise of comparing the median map bandwidth of `group` pairs with that of `healthy` pairs,
 * each with the map's relative noise per pair: NB_NOISE_SIGMAS standard errors (x
 * NB_MEDIAN_EFFICIENCY for a median); NaN when either count is 0 or the noise is unknown. A
 * group of bad pairs (a node's) slower than the healthy pairs by less than this is, as a group,
 * within the map's noise: each was bad alone, against references that a loaded machine can make
 * unrepresentative (when nearly every pair is suspect). fabricsuite.data.switches applies the
 * same. */
#define NB_MEDIAN_EFFICIENCY 1.2533
double nb_group_gate(size_t group, size_t healthy, double noise);

/* Nodes whose every measured pair is bad: node_bad[r] := NB_NODE_BAD for such a rank r that has at
 * least two measured pairs (with one pair, the other end is as likely to be the culprit) and
 * whose pairs' median bandwidth in the map lies below the pairs that are not bad by more than
 * nb_group_gate (bandwidth NULL or noise NaN: no gate); NB_NODE_WITHIN_NOISE when only that
 * fails; else 0. pairs (rank_a[i], rank_b[i]), bad[i] 0 or 1, bandwidth[i] in the map. Returns
 * the count of NB_NODE_BAD nodes (-1: out of memory). */
#define NB_NODE_BAD 1
#define NB_NODE_WITHIN_NOISE 2
int nb_bad_nodes(int ranks, size_t count, const int *rank_a, const int *rank_b, const int *bad,
                 const double *bandwidth, double noise, int *node_bad);

#endif
