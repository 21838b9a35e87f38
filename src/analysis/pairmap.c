/* pairmap.c - the all-pairs map's tournament schedule and its relative verdict (pairmap.h). */
#include "pairmap.h"

#include <math.h>
#include <stdlib.h>

#include "patterns.h"

int nb_tournament_rounds(int ranks)
{
    if (ranks < 2)
        return 0;
    return ranks % 2 == 0 ? ranks - 1 : ranks;
}

int nb_tournament_partner(int ranks, int round, int rank)
{
    int rounds = nb_tournament_rounds(ranks);
    if (rounds == 0 || round < 0 || round >= rounds || rank < 0 || rank >= ranks)
        return -1;
    /* players = ranks rounded up to even; the last player stays put, the others turn around a
     * circle of `rounds` places: in round r, r meets the fixed player and r + k meets r - k */
    int fixed = rounds;
    int partner;
    if (rank == fixed)
        partner = round;
    else if (rank == round)
        partner = fixed;
    else
        partner = ((2 * round - rank) % rounds + rounds) % rounds;
    return partner >= ranks ? -1 : partner; /* the ghost of an odd N: a bye */
}

static int compare_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int nb_tournament_pick_rounds(int ranks, int wanted, uint64_t seed, int *chosen)
{
    int rounds = nb_tournament_rounds(ranks);
    if (wanted <= 0 || rounds == 0)
        return 0;
    if (wanted >= rounds) {
        for (int r = 0; r < rounds; r++)
            chosen[r] = r;
        return rounds;
    }
    int *order = malloc((size_t)rounds * sizeof *order);
    if (order == NULL)
        return 0;
    /* a stream of its own: the same --seed in dense or beff draws unrelated patterns */
    uint64_t state = seed ^ 0x6d61747269780000ULL; /* "matrix" */
    nb_random_permutation(&state, order, rounds);
    for (int i = 0; i < wanted; i++)
        chosen[i] = order[i];
    free(order);
    qsort(chosen, (size_t)wanted, sizeof *chosen, compare_int);
    return wanted;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The finite values of v sorted ascending into out; returns their count. */
static size_t sorted_finite(const double *v, size_t count, double *out)
{
    size_t n = 0;
    for (size_t i = 0; i < count; i++)
        if (isfinite(v[i]))
            out[n++] = v[i];
    qsort(out, n, sizeof *out, compare_double);
    return n;
}

nb_pair_thresholds nb_pair_thresholds_of(const double *latency, const double *bandwidth,
                                         size_t count, double bandwidth_fraction,
                                         double latency_factor)
{
    nb_pair_thresholds t = {NAN, NAN, NAN, NAN};
    double *sorted = malloc((count > 0 ? count : 1) * sizeof *sorted);
    if (sorted == NULL)
        return t;
    /* The run's best pair, robust to one optimistic outlier: from NB_ROBUST_BEST_MIN_PAIRS
     * pairs on, the 90th percentile of the bandwidths (nearest rank) and the 10th of the
     * latencies instead of the extremes. One pair measured above the link rate (a shaper's
     * burst, a timer glitch) would otherwise make every other pair suspect, and, since a
     * re-test is judged against the same thresholds, bad. Below that count, the extremes. */
    size_t n = sorted_finite(bandwidth, count, sorted);
    if (n > 0) {
        size_t at = n >= NB_ROBUST_BEST_MIN_PAIRS ? (size_t)ceil(0.9 * (double)n) - 1 : n - 1;
        t.best_bandwidth = sorted[at];
    }
    n = sorted_finite(latency, count, sorted);
    if (n > 0) {
        size_t at = n >= NB_ROBUST_BEST_MIN_PAIRS ? (size_t)ceil(0.1 * (double)n) - 1 : 0;
        t.lowest_latency = sorted[at];
    }
    free(sorted);
    t.bandwidth_floor = bandwidth_fraction * t.best_bandwidth;
    t.latency_ceiling = latency_factor * t.lowest_latency;
    return t;
}

int nb_pair_is_suspect(const nb_pair_thresholds *t, double latency, double bandwidth)
{
    /* comparisons with NaN are false: an unmeasured figure is never suspect */
    return bandwidth < t->bandwidth_floor || latency > t->latency_ceiling;
}

int nb_bad_nodes(int ranks, size_t count, const int *rank_a, const int *rank_b, const int *bad,
                 int *node_bad)
{
    int *measured = calloc((size_t)ranks, sizeof *measured);
    int *failed = calloc((size_t)ranks, sizeof *failed);
    int found = 0;
    if (measured == NULL || failed == NULL) {
        free(measured);
        free(failed);
        return -1;
    }
    for (size_t i = 0; i < count; i++) {
        int ends[2] = {rank_a[i], rank_b[i]};
        for (int e = 0; e < 2; e++)
            if (ends[e] >= 0 && ends[e] < ranks) {
                measured[ends[e]]++;
                failed[ends[e]] += bad[i] != 0;
            }
    }
    for (int r = 0; r < ranks; r++) {
        node_bad[r] = measured[r] >= 2 && failed[r] == measured[r];
        found += node_bad[r];
    }
    free(measured);
    free(failed);
    return found;
}
