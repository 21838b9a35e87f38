/* stats.c - statistics of measured values: order statistics, bootstrap confidence intervals, the
 * spike filter, the choice of the fast state's pass, the overlap knee
 * (analysis.h; no MPI). */
#include "analysis.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "robust.h"

/* ------------------------------------------------------------------------------------------ */
/* Order statistics                                                                            */
/* ------------------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    /* NaN sorts last so that it never lands between finite values. */
    if (isnan(x))
        return isnan(y) ? 0 : 1;
    if (isnan(y))
        return -1;
    return (x > y) - (x < y);
}

/* A sorted copy of values[0..n-1]; NULL on n == 0 or allocation failure. */
static double *sorted_copy(const double *values, size_t n)
{
    if (values == NULL || n == 0)
        return NULL;
    double *copy = malloc(n * sizeof *copy);
    if (copy == NULL)
        return NULL;
    memcpy(copy, values, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, cmp_double);
    return copy;
}

size_t nb_gcd(size_t a, size_t b)
{
    while (b != 0) {
        size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* The smallest value (sign 1) or the largest (sign -1); NAN for none. */
static double extreme(const double *values, size_t n, double sign)
{
    if (values == NULL || n == 0)
        return NAN;
    double m = values[0];
    for (size_t i = 1; i < n; i++)
        if (sign * values[i] < sign * m)
            m = values[i];
    return m;
}

double nb_min(const double *values, size_t n)
{
    return extreme(values, n, 1.0);
}

double nb_max(const double *values, size_t n)
{
    return extreme(values, n, -1.0);
}

/* Type-7 quantile of an already sorted array. */
static double quantile_sorted(const double *sorted, size_t n, double q)
{
    if (q <= 0.0)
        return sorted[0];
    if (q >= 1.0)
        return sorted[n - 1];
    double h = (double)(n - 1) * q;
    size_t lo = (size_t)floor(h);
    if (lo >= n - 1)
        return sorted[n - 1];
    double frac = h - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

double nb_quantile(const double *values, size_t n, double q)
{
    if (isnan(q))
        return NAN;
    double *s = sorted_copy(values, n);
    if (s == NULL)
        return NAN;
    double r = quantile_sorted(s, n, q);
    free(s);
    return r;
}

double nb_median(const double *values, size_t n)
{
    return nb_quantile(values, n, 0.5);
}

double nb_mad(const double *values, size_t n)
{
    double *s = sorted_copy(values, n);
    if (s == NULL)
        return NAN;
    double med = quantile_sorted(s, n, 0.5);
    for (size_t i = 0; i < n; i++)
        s[i] = fabs(s[i] - med);
    qsort(s, n, sizeof *s, cmp_double);
    double r = quantile_sorted(s, n, 0.5);
    free(s);
    return r;
}

/* ------------------------------------------------------------------------------------------ */
/* Bootstrap confidence intervals                                                              */
/* ------------------------------------------------------------------------------------------ */

static unsigned long long xorshift64star(unsigned long long *state)
{
    unsigned long long s = *state;
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    *state = s;
    return s * 0x2545F4914F6CDD1DULL;
}

size_t nb_draw_index(unsigned long long *state, size_t n)
{
    return (size_t)((xorshift64star(state) >> 11) % n);
}

void nb_bootstrap_median_ci(const double *v, size_t first, size_t last, size_t resamples,
                            unsigned long long seed, double level, double *low, double *high)
{
    *low = *high = NAN;
    if (v == NULL || last < first || resamples == 0)
        return;
    size_t m = 0;
    double *kept = malloc((last - first + 1) * sizeof *kept);
    double *sample = malloc((last - first + 1) * sizeof *sample);
    double *medians = malloc(resamples * sizeof *medians);
    if (kept == NULL || sample == NULL || medians == NULL) {
        free(kept);
        free(sample);
        free(medians);
        return;
    }
    for (size_t i = first; i <= last; i++)
        if (isfinite(v[i]))
            kept[m++] = v[i];
    if (m >= 2) {
        unsigned long long state = seed ? seed : 0x9E3779B97F4A7C15ULL;
        for (size_t r = 0; r < resamples; r++) {
            for (size_t k = 0; k < m; k++)
                sample[k] = kept[nb_draw_index(&state, m)];
            medians[r] = nb_median(sample, m);
        }
        double tail = (1.0 - level) / 2.0;
        *low = nb_quantile(medians, resamples, tail);
        *high = nb_quantile(medians, resamples, 1.0 - tail);
    }
    free(kept);
    free(sample);
    free(medians);
}

/* ------------------------------------------------------------------------------------------ */
/* Spike filter before protocol-change detection                                              */
/* ------------------------------------------------------------------------------------------ */

size_t nb_despike(const double *y, size_t n, size_t half_window, double z, double floor_relative,
                  double *out)
{
    if (y == NULL || out == NULL || n == 0)
        return 0;
    memcpy(out, y, n * sizeof *out);
    if (half_window == 0 || n < 2)
        return 0;
    double *neighbours = malloc(2 * half_window * sizeof *neighbours);
    if (neighbours == NULL)
        return 0;
    size_t replaced = 0;
    for (size_t i = 0; i < n; i++) {
        size_t left_first = i >= half_window ? i - half_window : 0;
        size_t right_last = i + half_window < n ? i + half_window : n - 1;
        size_t n_left = i - left_first, n_right = right_last - i;
        for (size_t k = 0; k < n_left; k++)
            neighbours[k] = y[left_first + k];
        for (size_t k = 0; k < n_right; k++)
            neighbours[n_left + k] = y[i + 1 + k];
        size_t count = n_left + n_right;
        double centre = nb_median(neighbours, count);
        double sigma = MAD_SCALE * nb_mad(neighbours, count);
        double floor_sigma = floor_relative * fabs(centre);
        double threshold = z * (sigma > floor_sigma ? sigma : floor_sigma);
        double left = n_left ? nb_median(neighbours, n_left) : NAN;
        double right = n_right ? nb_median(neighbours + n_left, n_right) : NAN;
        double d_left = y[i] - left, d_right = y[i] - right;
        int off_left = n_left == 0 || fabs(d_left) > threshold;
        int off_right = n_right == 0 || fabs(d_right) > threshold;
        int same_side = n_left == 0 || n_right == 0 || d_left * d_right > 0.0;
        if (off_left && off_right && same_side && threshold > 0.0) {
            out[i] = n_left && n_right ? 0.5 * (left + right) : (n_left ? left : right);
            replaced++;
        }
    }
    free(neighbours);
    return replaced;
}

size_t nb_recheck_flags(const double *y, size_t n, size_t half_window, double excess,
                        unsigned char *flag)
{
    if (y == NULL || flag == NULL || n < 2 || half_window == 0)
        return 0;
    double *neighbours = malloc(2 * half_window * sizeof *neighbours);
    if (neighbours == NULL)
        return 0;
    size_t flagged = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(y[i]))
            continue;
        int above = 1, sides = 0;
        for (int side = 0; side < 2 && above; side++) {
            size_t count = 0;
            for (size_t d = 1; d <= half_window; d++) {
                if (side == 0 ? i < d : i + d >= n)
                    break;
                double v = y[side == 0 ? i - d : i + d];
                if (isfinite(v))
                    neighbours[count++] = v;
            }
            if (count == 0)
                continue;
            sides++;
            above = y[i] > (1.0 + excess) * nb_median(neighbours, count);
        }
        if (above && sides > 0) {
            flag[i] = 1;
            flagged++;
        }
    }
    free(neighbours);
    return flagged;
}

/* ------------------------------------------------------------------------------------------ */
/* Which pass to keep when the machine switches between a fast and a slow state                */
/* ------------------------------------------------------------------------------------------ */

size_t nb_keep_fast_state(const double *probe, const double *key, size_t made, size_t count,
                          double ratio, size_t *kept, double *fast_probe,
                          size_t *slow_state_passes)
{
    double lowest = INFINITY;
    size_t slow_passes = 0, slow_sizes = 0, finite = 0;
    double *sorted = probe != NULL ? malloc(made * count * sizeof *sorted) : NULL;
    for (size_t j = 0; sorted != NULL && j < made * count; j++)
        if (isfinite(probe[j]))
            sorted[finite++] = probe[j];
    if (finite > 0) {
        /* The fast state's level: the k-th lowest probe, k = 1 + finite / 64, so that one
         * freak low timing does not make the whole run look slow. */
        qsort(sorted, finite, sizeof *sorted, cmp_double);
        lowest = sorted[finite / 64];
    }
    free(sorted);
    double limit = ratio * lowest;
    for (size_t i = 0; i < count && made > 0; i++) {
        size_t best = made, best_any = 0;
        for (size_t p = 0; p < made; p++) {
            size_t j = p * count + i;
            if (key[j] < key[best_any * count + i])
                best_any = p;
            if (probe != NULL && probe[j] > limit) {
                slow_passes++;
                continue;
            }
            if (best == made || key[j] < key[best * count + i])
                best = p;
        }
        if (best == made) {
            slow_sizes++;
            best = best_any;
        }
        if (kept != NULL)
            kept[i] = best;
    }
    if (fast_probe != NULL)
        *fast_probe = lowest;
    if (slow_state_passes != NULL)
        *slow_state_passes = slow_passes;
    return slow_sizes;
}

/* ------------------------------------------------------------------------------------------ */
/* Overhead by CPU overlap (Bell et al. §4.3)                                                   */
/* ------------------------------------------------------------------------------------------ */

/* n == 0 (or NULL arrays) gives NAN: there is no knee to report. */
double nb_overlap_knee(const double *compute, const double *time, size_t n, double time0,
                       double tolerance)
{
    if (compute == NULL || time == NULL || n == 0)
        return NAN;
    double limit = time0 * (1.0 + tolerance);
    size_t i = 0;
    while (i < n && time[i] <= limit)
        i++;
    if (i == n)
        return compute[n - 1];
    if (i == 0)
        return 0.0;
    double c0 = compute[i - 1], t0 = time[i - 1];
    double c1 = compute[i], t1 = time[i];
    if (!(t1 > t0))
        return c0;
    return c0 + (limit - t0) * (c1 - c0) / (t1 - t0);
}
