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
/* Verdict, relative to the run's own distribution (ClusterKit's rule): a pair is suspect when  */
/* its bandwidth is below bandwidth_fraction x the best pair's, or its latency above            */
/* latency_factor x the lowest pair's. A NaN figure (not measured) is neither best nor suspect. */
/* ------------------------------------------------------------------------------------------ */

/* From this many measured pairs on, "best" and "lowest" are the 90th and 10th percentiles
 * (nearest rank), robust to one optimistic outlier; below it, the extremes. */
#define NB_ROBUST_BEST_MIN_PAIRS 10

typedef struct {
    double best_bandwidth;       /* the highest bandwidth of the run (see above) */
    double lowest_latency;       /* the lowest latency of the run (see above) */
    double bandwidth_floor;      /* bandwidth_fraction x best_bandwidth */
    double latency_ceiling;      /* latency_factor x lowest_latency */
} nb_pair_thresholds;

/* The thresholds of `count` pairs' figures. */
nb_pair_thresholds nb_pair_thresholds_of(const double *latency, const double *bandwidth,
                                         size_t count, double bandwidth_fraction,
                                         double latency_factor);

/* 1 when the figures of one pair fail a threshold (below the floor, above the ceiling). */
int nb_pair_is_suspect(const nb_pair_thresholds *t, double latency, double bandwidth);

/* Nodes whose every measured pair is bad: node_bad[r] := 1 for such a rank r that has at least
 * two measured pairs (with one pair, the other end is as likely to be the culprit), else 0.
 * pairs (rank_a[i], rank_b[i]), bad[i] 0 or 1. Returns the count of such nodes. */
int nb_bad_nodes(int ranks, size_t count, const int *rank_a, const int *rank_b, const int *bad,
                 int *node_bad);

#endif
