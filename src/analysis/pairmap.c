/* pairmap.c - the all-pairs map's tournament schedule and its relative verdict (pairmap.h). */
#include "pairmap.h"

#include <math.h>
#include <stdlib.h>

#include "analysis.h"
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

/* The best of the values, robust to one optimistic outlier: from NB_ROBUST_BEST_MIN_PAIRS
 * values on, the 90th percentile (nearest rank; the 10th where lower is better) instead of the
 * extreme. One pair measured above the link rate (a shaper's burst, a timer glitch) would
 * otherwise make every other pair suspect, and, since a re-test is judged against the same
 * thresholds, bad. Below that count, the extreme. NaN without a finite value. */
static double robust_best(const double *values, size_t count, int higher_is_better)
{
    double *sorted = malloc((count > 0 ? count : 1) * sizeof *sorted);
    if (sorted == NULL)
        return NAN;
    size_t n = sorted_finite(values, count, sorted);
    double best = NAN;
    if (n > 0) {
        size_t high = n >= NB_ROBUST_BEST_MIN_PAIRS ? (size_t)ceil(0.9 * (double)n) - 1 : n - 1;
        size_t low = n >= NB_ROBUST_BEST_MIN_PAIRS ? (size_t)ceil(0.1 * (double)n) - 1 : 0;
        best = sorted[higher_is_better ? high : low];
    }
    free(sorted);
    return best;
}

nb_pair_thresholds nb_pair_thresholds_of(const double *latency, const double *bandwidth,
                                         size_t count, double bandwidth_fraction,
                                         double latency_factor)
{
    nb_pair_thresholds t = {NAN, NAN, NAN, NAN, NAN, NAN};
    t.best_bandwidth = robust_best(bandwidth, count, 1);
    t.lowest_latency = robust_best(latency, count, 0);
    t.bandwidth_floor = bandwidth_fraction * t.best_bandwidth;
    t.latency_ceiling = latency_factor * t.lowest_latency;
    t.suspect_slowdown = 1.0 - bandwidth_fraction;
    return t;
}

/* The median of the finite values, NaN without any. */
static double finite_median(const double *v, size_t count)
{
    double *sorted = malloc((count > 0 ? count : 1) * sizeof *sorted);
    if (sorted == NULL)
        return NAN;
    size_t n = sorted_finite(v, count, sorted);
    double median = n > 0 ? nb_median(sorted, n) : NAN;
    free(sorted);
    return median;
}

/* Half the fault sought or NB_NOISE_SIGMAS x the noise, whichever is more (an unknown noise
 * counts as none). */
static double slowdown_threshold(double smallest_fault, double noise)
{
    double from_noise = isfinite(noise) ? NB_NOISE_SIGMAS * noise : 0.0;
    return fmax(0.5 * smallest_fault, from_noise);
}

nb_pair_thresholds nb_pair_thresholds_from_noise(const double *latency, const double *bandwidth,
                                                 const double *spread, size_t count,
                                                 double smallest_fault, double latency_factor)
{
    nb_pair_thresholds t = nb_pair_thresholds_of(latency, bandwidth, count, 1.0, latency_factor);
    t.noise = finite_median(spread, count);
    t.suspect_slowdown = slowdown_threshold(smallest_fault, t.noise);
    t.bandwidth_floor = (1.0 - t.suspect_slowdown) * t.best_bandwidth;
    return t;
}

size_t nb_reference_pairs(const double *bandwidth, const unsigned char *suspect, size_t count,
                          size_t wanted, size_t *references)
{
    double *healthy = malloc((count > 0 ? count : 1) * sizeof *healthy);
    if (healthy == NULL)
        return 0;
    for (size_t i = 0; i < count; i++)
        healthy[i] = suspect[i] ? NAN : bandwidth[i];
    double median = finite_median(healthy, count);
    size_t found = 0;
    /* selection by distance from the median, nearest first, ties to the lower index */
    while (found < wanted) {
        size_t nearest = count;
        for (size_t i = 0; i < count; i++)
            if (isfinite(healthy[i]) &&
                (nearest == count ||
                 fabs(healthy[i] - median) < fabs(healthy[nearest] - median)))
                nearest = i;
        if (nearest == count)
            break;
        references[found++] = nearest;
        healthy[nearest] = NAN;
    }
    free(healthy);
    return found;
}

/* How much a healthy pair alone moves from one re-test to the next: the references measured in
 * turn between the suspects, `steps` in time order. A suspect is compared with the mean of the
 * reference just before and just after it; with s the sd of one figure, consecutive references
 * differ by sqrt(2) s and that comparison by sqrt(1.5) s, so the noise of the comparison is the
 * robust sd of consecutive ratios x sqrt(0.75). NaN below 3 ratios. */
static double reference_drift(const double *steps, size_t count)
{
    if (count < 4)
        return NAN;
    double *ratios = malloc((count - 1) * sizeof *ratios);
    if (ratios == NULL)
        return NAN;
    size_t n = 0;
    for (size_t i = 1; i < count; i++)
        if (isfinite(steps[i]) && isfinite(steps[i - 1]) && steps[i - 1] > 0)
            ratios[n++] = steps[i] / steps[i - 1] - 1.0;
    double drift = n >= 3 ? NB_MAD_TO_SD * nb_mad(ratios, n) * sqrt(0.75) : NAN;
    free(ratios);
    return drift;
}

nb_alone_rule nb_alone_rule_of(const double *reference_bandwidth, size_t reference_count,
                               const double *retest_bandwidth, const double *retest_spread,
                               size_t retest_count, double smallest_fault)
{
    nb_alone_rule r = {NAN, NAN, NAN, NAN};
    r.reference_bandwidth = finite_median(reference_bandwidth, reference_count);
    if (!isfinite(r.reference_bandwidth))
        r.reference_bandwidth = robust_best(retest_bandwidth, retest_count, 1);
    double noise = finite_median(retest_spread, retest_count);
    if (reference_count >= 3) {
        /* the references differ among themselves by their placement as well as their noise */
        double *copy = malloc(reference_count * sizeof *copy);
        if (copy != NULL) {
            size_t n = sorted_finite(reference_bandwidth, reference_count, copy);
            double among = n >= 3 ? NB_MAD_TO_SD * nb_mad(copy, n) / r.reference_bandwidth : NAN;
            if (isfinite(among) && !(among <= noise))
                noise = among;
            free(copy);
        }
    }
    double drift = reference_drift(reference_bandwidth, reference_count);
    if (isfinite(drift) && !(drift <= noise))
        noise = drift;
    r.noise = noise;
    r.bad_slowdown = slowdown_threshold(smallest_fault, noise);
    r.bandwidth_floor = (1.0 - r.bad_slowdown) * r.reference_bandwidth;
    return r;
}

double nb_resolvable_slowdown(const nb_pair_thresholds *t, const nb_alone_rule *r)
{
    double map = t->suspect_slowdown + (isfinite(t->noise) ? NB_NOISE_SIGMAS * t->noise : 0.0);
    double alone = r->bad_slowdown + (isfinite(r->noise) ? NB_NOISE_SIGMAS * r->noise : 0.0);
    return fmax(map, isfinite(alone) ? alone : 0.0);
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
