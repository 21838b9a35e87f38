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

void nb_class_bests(const double *values, const int *pair_class, size_t count, int classes,
                    int higher_is_better, double *best)
{
    double *of_class = malloc((count > 0 ? count : 1) * sizeof *of_class);
    for (int c = 0; c < classes; c++) {
        size_t n = 0;
        for (size_t i = 0; of_class != NULL && i < count; i++)
            if (pair_class[i] == c)
                of_class[n++] = values[i];
        best[c] = of_class != NULL ? robust_best(of_class, n, higher_is_better) : NAN;
    }
    free(of_class);
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
    t.bandwidth_floor = nb_bandwidth_floor(t.suspect_slowdown, t.best_bandwidth);
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

/* How much a healthy pair alone moves from one re-test to the next: `states` are the references'
 * re-tests in time order, each over its own pair's level (so that consecutive ones compare the
 * machine's state, not two placements). A suspect is compared with the mean of the reference just
 * before and just after it; with s the sd of one figure, consecutive states differ by sqrt(2) s
 * and that comparison by sqrt(1.5) s, so the noise of the comparison is the robust sd of
 * consecutive ratios x sqrt(0.75). NaN below 3 ratios. */
static double reference_drift(const double *states, size_t count)
{
    if (count < 4)
        return NAN;
    double *ratios = malloc((count - 1) * sizeof *ratios);
    if (ratios == NULL)
        return NAN;
    size_t n = 0;
    for (size_t i = 1; i < count; i++)
        if (isfinite(states[i]) && isfinite(states[i - 1]) && states[i - 1] > 0)
            ratios[n++] = states[i] / states[i - 1] - 1.0;
    double drift = n >= 3 ? NB_MAD_TO_SD * nb_mad(ratios, n) * sqrt(0.75) : NAN;
    free(ratios);
    return drift;
}

/* level[j] := the median of the re-tests of the j-th distinct pair of `pair` (in order of first
 * appearance), of_pair[i] := the j of the i-th re-test; returns how many distinct pairs. */
static size_t reference_levels(const double *bandwidth, const int *pair, size_t count,
                               double *level, size_t *of_pair, double *scratch)
{
    size_t distinct = 0;
    for (size_t i = 0; i < count; i++) {
        size_t j = 0;
        while (j < i && pair[j] != pair[i])
            j++;
        of_pair[i] = j < i ? of_pair[j] : distinct++;
    }
    for (size_t j = 0; j < distinct; j++) {
        size_t n = 0;
        for (size_t i = 0; i < count; i++)
            if (of_pair[i] == j)
                scratch[n++] = bandwidth[i];
        level[j] = finite_median(scratch, n);
    }
    return distinct;
}

nb_alone_rule nb_alone_rule_of(const double *reference_bandwidth, const int *reference_pair,
                               size_t reference_count, const double *retest_bandwidth,
                               const double *retest_spread, size_t retest_count,
                               double smallest_fault, double *state)
{
    nb_alone_rule r = {NAN, NAN, NAN, NAN, 0};
    double noise = finite_median(retest_spread, retest_count);
    size_t n = reference_count > 0 ? reference_count : 1;
    double *level = malloc(n * sizeof *level), *states = malloc(n * sizeof *states);
    double *scratch = malloc(n * sizeof *scratch);
    size_t *of_pair = malloc(n * sizeof *of_pair);
    size_t distinct = 0;
    if (level != NULL && states != NULL && scratch != NULL && of_pair != NULL)
        distinct = reference_levels(reference_bandwidth, reference_pair, reference_count, level,
                                    of_pair, scratch);
    for (size_t i = 0; distinct > 0 && i < reference_count; i++)
        states[i] = reference_bandwidth[i] / level[of_pair[i]];
    double drift = distinct > 0 ? reference_drift(states, reference_count) : NAN;
    if (isfinite(drift) && !(drift <= noise))
        noise = drift;
    /* a reference alone below the best healthy figure alone (the best reference, or the 90th
     * percentile of all re-tests) by more than the threshold from the fault and the drift (before
     * the kept references' own spread can raise it) is not a healthy pair: a pair of a
     * slow leaf can look healthy among the others in a noisy map, and when most pairs cross
     * that leaf every reference may be one. Left out; with none left, that best figure. */
    double best_alone = robust_best(retest_bandwidth, retest_count, 1), top = best_alone;
    for (size_t j = 0; j < distinct; j++)
        if (isfinite(level[j]) && !(level[j] <= top))
            top = level[j];
    double cut = nb_bandwidth_floor(slowdown_threshold(smallest_fault, noise), top);
    size_t kept = 0;
    for (size_t j = 0; j < distinct; j++)
        if (level[j] >= cut)
            scratch[kept++] = level[j];
    r.slow_references = (int)(distinct - kept);
    r.reference_bandwidth = finite_median(scratch, kept);
    if (!isfinite(r.reference_bandwidth))
        r.reference_bandwidth = best_alone;
    if (kept >= 3) {
        /* the healthy references differ among themselves by their placement too */
        double among = NB_MAD_TO_SD * nb_mad(scratch, kept) / r.reference_bandwidth;
        if (isfinite(among) && !(among <= noise))
            noise = among;
    }
    for (size_t i = 0; state != NULL && i < reference_count; i++)
        state[i] = distinct > 0 ? states[i] : NAN;
    free(level);
    free(states);
    free(scratch);
    free(of_pair);
    r.noise = noise;
    r.bad_slowdown = slowdown_threshold(smallest_fault, noise);
    r.bandwidth_floor = nb_bandwidth_floor(r.bad_slowdown, r.reference_bandwidth);
    return r;
}

double nb_bandwidth_floor(double slowdown, double reference)
{
    double fraction = 1.0 - slowdown; /* NaN stays NaN: the comparison below is false */
    return (fraction < 0.0 ? 0.0 : fraction) * reference;
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

double nb_group_gate(size_t group, size_t healthy, double noise)
{
    if (group == 0 || healthy == 0 || !isfinite(noise))
        return NAN;
    return NB_NOISE_SIGMAS * NB_MEDIAN_EFFICIENCY * noise *
           sqrt(1.0 / (double)group + 1.0 / (double)healthy);
}

/* The median of the finite bandwidths of the pairs that `select` (1: with rank r; 0: not bad). */
static double median_of_pairs(size_t count, const int *rank_a, const int *rank_b, const int *bad,
                              const double *bandwidth, int r, double *scratch, size_t *n)
{
    *n = 0;
    for (size_t i = 0; i < count; i++) {
        int chosen = r >= 0 ? rank_a[i] == r || rank_b[i] == r : !bad[i];
        if (chosen && isfinite(bandwidth[i]))
            scratch[(*n)++] = bandwidth[i];
    }
    return finite_median(scratch, *n);
}

int nb_bad_nodes(int ranks, size_t count, const int *rank_a, const int *rank_b, const int *bad,
                 const double *bandwidth, double noise, int *node_bad)
{
    int *measured = calloc((size_t)ranks, sizeof *measured);
    int *failed = calloc((size_t)ranks, sizeof *failed);
    double *scratch = malloc((count > 0 ? count : 1) * sizeof *scratch);
    int found = 0;
    if (measured == NULL || failed == NULL || scratch == NULL) {
        free(measured);
        free(failed);
        free(scratch);
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
    size_t healthy = 0;
    double healthy_median = bandwidth == NULL ? NAN
                                              : median_of_pairs(count, rank_a, rank_b, bad,
                                                                bandwidth, -1, scratch, &healthy);
    for (int r = 0; r < ranks; r++) {
        node_bad[r] = measured[r] >= 2 && failed[r] == measured[r] ? NB_NODE_BAD : 0;
        if (node_bad[r] && isfinite(healthy_median)) {
            size_t own = 0;
            double median = median_of_pairs(count, rank_a, rank_b, bad, bandwidth, r, scratch,
                                            &own);
            double gate = nb_group_gate(own, healthy, noise);
            if (isfinite(gate) && 1.0 - median / healthy_median < gate)
                node_bad[r] = NB_NODE_WITHIN_NOISE;
        }
        found += node_bad[r] == NB_NODE_BAD;
    }
    free(measured);
    free(failed);
    free(scratch);
    return found;
}
