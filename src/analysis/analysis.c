/* analysis.c - statistics, robust fits and protocol-change detection for netbench.
 *
 * No MPI in here (see analysis.h). Everything is plain C11 and allocation failures are reported
 * as NAN / -1 / "no change" rather than by aborting.
 */
#include "analysis.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
/* Straight-line fits                                                                          */
/* ------------------------------------------------------------------------------------------ */

/* Fills rms_residual, rms_relative and points_used of `fit` from the points idx[0..m-1]
 * (or first..first+m-1 when idx is NULL). rms_relative is 0 for a perfect fit of all-zero data
 * and INFINITY when mean(|y|) is 0 but the residual is not. */
static void fill_residual_stats(const double *x, const double *y, const size_t *idx, size_t first,
                                size_t m, nb_linfit *fit)
{
    double ss = 0.0, sum_abs = 0.0;
    for (size_t k = 0; k < m; k++) {
        size_t i = idx ? idx[k] : first + k;
        double r = y[i] - (fit->intercept + fit->slope * x[i]);
        ss += r * r;
        sum_abs += fabs(y[i]);
    }
    fit->points_used = m;
    fit->rms_residual = m ? sqrt(ss / (double)m) : NAN;
    double mean_abs = m ? sum_abs / (double)m : NAN;
    if (m == 0)
        fit->rms_relative = NAN;
    else if (mean_abs > 0.0)
        fit->rms_relative = fit->rms_residual / mean_abs;
    else
        fit->rms_relative = fit->rms_residual > 0.0 ? INFINITY : 0.0;
}

/* Unconstrained least squares over the points idx[0..m-1] (or a contiguous block from `first`
 * when idx is NULL), with centred sums for accuracy. Returns -1 when m < 2 or all x are equal. */
static int ls_core(const double *x, const double *y, const size_t *idx, size_t first, size_t m,
                   double *intercept, double *slope)
{
    if (m < 2)
        return -1;
    double mx = 0.0, my = 0.0;
    for (size_t k = 0; k < m; k++) {
        size_t i = idx ? idx[k] : first + k;
        mx += x[i];
        my += y[i];
    }
    mx /= (double)m;
    my /= (double)m;
    double sxx = 0.0, sxy = 0.0;
    for (size_t k = 0; k < m; k++) {
        size_t i = idx ? idx[k] : first + k;
        double dx = x[i] - mx;
        sxx += dx * dx;
        sxy += dx * (y[i] - my);
    }
    if (!(sxx > 0.0))
        return -1;
    *slope = sxy / sxx;
    *intercept = my - *slope * mx;
    return 0;
}

int nb_fit_ls(const double *x, const double *y, size_t first, size_t last, nb_linfit *fit)
{
    if (x == NULL || y == NULL || fit == NULL || last < first)
        return -1;
    size_t m = last - first + 1;
    double a, b;
    if (ls_core(x, y, NULL, first, m, &a, &b) != 0)
        return -1;
    memset(fit, 0, sizeof *fit);
    fit->intercept = a;
    fit->slope = b;
    fill_residual_stats(x, y, NULL, first, m, fit);
    fit->outliers = 0;
    fit->constrained = 0;
    fit->reliable = 1;
    return 0;
}

double nb_lsq_deviation(const double *x, const double *y, size_t first, size_t last,
                        const nb_linfit *fit)
{
    if (x == NULL || y == NULL || fit == NULL || last < first)
        return NAN;
    size_t m = last - first + 1;
    if (m < 3)
        return NAN;
    double ss = 0.0;
    for (size_t i = first; i <= last; i++) {
        double r = fit->slope * x[i] + fit->intercept - y[i];
        ss += r * r;
    }
    return ss / (double)(m - 2);
}

static double ssr_of(const double *x, const double *y, const size_t *idx, size_t m, double a,
                     double b)
{
    double ss = 0.0;
    for (size_t k = 0; k < m; k++) {
        double r = y[idx[k]] - (a + b * x[idx[k]]);
        ss += r * r;
    }
    return ss;
}

/* Least squares with intercept >= 0 and slope >= 0 over idx[0..m-1] (m >= 1).
 * The objective is a convex quadratic, so when the unconstrained optimum lies outside the
 * quadrant the constrained optimum lies on one of its two edges: {slope = 0, intercept >= 0}
 * (best intercept: max(0, mean y)) or {intercept = 0, slope >= 0} (best slope: max(0,
 * sum xy / sum xx)). Both candidates are computed and the one with the smaller sum of squared
 * residuals wins. This is the "refit with slope = 0 / refit through the origin" rule of the
 * header, made exact for the case where both bounds interact.
 * Sets *constrained when a bound is active; *degenerate when all x are equal. */
static void fit_nonneg(const double *x, const double *y, const size_t *idx, size_t m,
                       double *intercept, double *slope, int *constrained, int *degenerate)
{
    double a, b;
    *constrained = 0;
    *degenerate = 0;
    if (ls_core(x, y, idx, 0, m, &a, &b) == 0) {
        if (a >= 0.0 && b >= 0.0) {
            *intercept = a;
            *slope = b;
            return;
        }
    } else {
        *degenerate = 1;
    }
    double sy = 0.0, sxx = 0.0, sxy = 0.0;
    for (size_t k = 0; k < m; k++) {
        size_t i = idx[k];
        sy += y[i];
        sxx += x[i] * x[i];
        sxy += x[i] * y[i];
    }
    /* Edge 1: slope fixed at 0. */
    double a1 = fmax(0.0, sy / (double)m), b1 = 0.0;
    double ss1 = ssr_of(x, y, idx, m, a1, b1);
    /* Edge 2: through the origin. */
    double a2 = 0.0, b2 = sxx > 0.0 ? fmax(0.0, sxy / sxx) : 0.0;
    double ss2 = ssr_of(x, y, idx, m, a2, b2);
    if (*degenerate || ss1 <= ss2) {
        *intercept = a1;
        *slope = b1;
    } else {
        *intercept = a2;
        *slope = b2;
    }
    /* A degenerate x set with mean y >= 0 needs no bound; anything else hit one. */
    *constrained = !(*degenerate && sy >= 0.0);
}

/* Modified z-score threshold (Iglewicz & Hoaglin) and the normal-consistency factor of the MAD. */
#define ROBUST_Z 3.5
#define MAD_SCALE 1.4826
#define MAX_ROUNDS 3
#define MIN_POINTS 3
#define SIGMA_FLOOR_RELATIVE 0.01 /* robust sigma never below 1 % of mean |y| */

struct scored {
    size_t index;
    double score;
};

static int cmp_scored_desc(const void *a, const void *b)
{
    double x = ((const struct scored *)a)->score;
    double y = ((const struct scored *)b)->score;
    return (x < y) - (x > y);
}

int nb_fit_robust_nonneg(const double *x, const double *y, size_t first, size_t last,
                         double max_rms_relative, nb_linfit *fit)
{
    if (x == NULL || y == NULL || fit == NULL || last < first)
        return -1;
    size_t total = last - first + 1;
    if (total < 2)
        return -1;

    size_t *idx = malloc(total * sizeof *idx);
    double *res = malloc(total * sizeof *res);
    struct scored *sc = malloc(total * sizeof *sc);
    if (idx == NULL || res == NULL || sc == NULL) {
        free(idx);
        free(res);
        free(sc);
        return -1;
    }
    size_t m = total;
    for (size_t k = 0; k < m; k++)
        idx[k] = first + k;

    double a = 0.0, b = 0.0;
    int constrained = 0, degenerate = 0;
    fit_nonneg(x, y, idx, m, &a, &b, &constrained, &degenerate);

    /* Outlier rejection: residuals of the (constrained) fit, robust sigma from their MAD,
     * reject |r - median(r)| > 3.5 sigma. Never go below 3 points: if a round would, only the
     * worst (m - 3) candidates go. The sigma is floored at 1 % of mean|y|: timings are never
     * more precise than that, and on a short range of tightly clustered points the MAD alone
     * can shrink until ordinary scatter is rejected round after round. */
    for (int round = 0; round < MAX_ROUNDS && m > MIN_POINTS && !degenerate; round++) {
        double sum_abs = 0.0;
        for (size_t k = 0; k < m; k++) {
            res[k] = y[idx[k]] - (a + b * x[idx[k]]);
            sum_abs += fabs(y[idx[k]]);
        }
        double med = nb_median(res, m);
        double sigma = MAD_SCALE * nb_mad(res, m);
        double floor_sigma = SIGMA_FLOOR_RELATIVE * (sum_abs / (double)m);
        if (!(sigma > floor_sigma))
            sigma = floor_sigma;
        if (!(sigma > 0.0))
            break; /* all-zero data fitted exactly */
        size_t ncand = 0;
        for (size_t k = 0; k < m; k++) {
            double z = fabs(res[k] - med) / sigma;
            if (z > ROBUST_Z) {
                sc[ncand].index = k;
                sc[ncand].score = z;
                ncand++;
            }
        }
        if (ncand == 0)
            break;
        if (m - ncand < MIN_POINTS) {
            qsort(sc, ncand, sizeof *sc, cmp_scored_desc);
            ncand = m - MIN_POINTS;
        }
        /* Mark the rejected positions, then compact idx. */
        for (size_t c = 0; c < ncand; c++)
            idx[sc[c].index] = (size_t)-1;
        size_t w = 0;
        for (size_t k = 0; k < m; k++)
            if (idx[k] != (size_t)-1)
                idx[w++] = idx[k];
        m = w;
        fit_nonneg(x, y, idx, m, &a, &b, &constrained, &degenerate);
    }

    memset(fit, 0, sizeof *fit);
    fit->intercept = a;
    fit->slope = b;
    fill_residual_stats(x, y, idx, 0, m, fit);
    fit->outliers = total - m;
    fit->constrained = constrained;
    fit->intercept_clamped = constrained && a == 0.0;
    fit->slope_clamped = constrained && b == 0.0;
    fit->reliable = 1;
    if (m < MIN_POINTS || degenerate || 3 * fit->outliers > total ||
        fit->rms_relative > max_rms_relative || isnan(fit->rms_relative))
        fit->reliable = 0;

    free(idx);
    free(res);
    free(sc);
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Protocol-change detection (Hoefler et al. §2.6)                                              */
/* ------------------------------------------------------------------------------------------ */

/* lsq(k, l): least-squares fit over [k, l], then its eq. (6) deviation. NAN when it cannot be
 * computed (fewer than 3 points, all x equal). */
static double lsq_range(const double *x, const double *y, size_t k, size_t l)
{
    nb_linfit f;
    if (nb_fit_ls(x, y, k, l, &f) != 0)
        return NAN;
    return nb_lsq_deviation(x, y, k, l, &f);
}

/* Choices beyond the header:
 * - min_points below 3 is treated as 3 (eq. (6) needs 3 points for one degree of freedom).
 * - The first candidate for a change is current = lastchange + min_points - 1, so the range being
 *   closed always has min_points points.
 * - A change after `current` is only considered when the points after it can both form a range of
 *   min_points points and supply the full look-ahead, i.e. n - 1 - current >= max(min_points,
 *   lookahead). Otherwise the remaining points belong to the last range (no short tail range).
 * - lookahead below 1 is treated as 1.
 * - The base deviation is max(lsq(lastchange, current), mean(noise_var[lastchange..current])):
 *   without the floor a nearly exact start makes any later wiggle look like a protocol change.
 *   NaN entries of noise_var are skipped in the mean.
 * - The base is also floored at (1e-9 * mean|y[lastchange..current]|)^2: a deviation that small
 *   is floating-point rounding, not measurement, and without this floor an exact line (lsq ~ 1e-30)
 *   is cut into pieces by its own rounding noise. Real timings are nowhere near 1e-9 relative.
 * - A NaN deviation (e.g. all x equal) never declares a change.
 * - The return value is the number of ranges found, which can exceed max_ranges (like snprintf);
 *   only the first max_ranges are written. */
/* Relative deviation below which two values are the same up to rounding (see below). */
#define RANGE_REL_RESOLUTION 1e-9

size_t nb_detect_ranges(const double *x, const double *y, const double *noise_var, size_t n,
                        int lookahead, double pfact, size_t min_points,
                        nb_range *ranges, size_t max_ranges)
{
    if (x == NULL || y == NULL || n == 0)
        return 0;
    size_t mp = min_points < 3 ? 3 : min_points;
    size_t la = lookahead < 1 ? 1 : (size_t)lookahead;
    size_t need_after = mp > la ? mp : la;
    size_t found = 0;
    size_t lastchange = 0;

    if (n > mp) {
        size_t current = lastchange + mp - 1;
        while (current < n && n - 1 - current >= need_after) {
            double base = lsq_range(x, y, lastchange, current);
            double sum_abs = 0.0;
            for (size_t i = lastchange; i <= current; i++)
                sum_abs += fabs(y[i]);
            double numeric = RANGE_REL_RESOLUTION * sum_abs / (double)(current - lastchange + 1);
            if (numeric * numeric > base)
                base = numeric * numeric;
            int change = !isnan(base);
            for (size_t j = 1; change && j <= la; j++) {
                /* The noise floor covers the look-ahead points too: with noise that grows with
                 * the message size, the points after `current` are noisier than those before,
                 * and a floor taken over [lastchange, current] alone mistakes that for a
                 * protocol change (about half of the noisy straight lines at pfact 2). */
                double floor = base;
                if (noise_var != NULL) {
                    double sum = 0.0;
                    size_t count = 0;
                    for (size_t i = lastchange; i <= current + j; i++)
                        if (!isnan(noise_var[i])) {
                            sum += noise_var[i];
                            count++;
                        }
                    if (count > 0 && sum / (double)count > floor)
                        floor = sum / (double)count;
                }
                double d = lsq_range(x, y, lastchange, current + j);
                if (!(d > pfact * floor))
                    change = 0;
            }
            if (change) {
                if (found < max_ranges && ranges != NULL) {
                    ranges[found].first = lastchange;
                    ranges[found].last = current;
                }
                found++;
                lastchange = current + 1;
                current = lastchange + mp - 1;
            } else {
                current++;
            }
        }
    }
    if (found < max_ranges && ranges != NULL) {
        ranges[found].first = lastchange;
        ranges[found].last = n - 1;
    }
    return found + 1;
}

/* ------------------------------------------------------------------------------------------ */
/* Model selection over the piecewise fit: merging ranges (BIC)                                */
/* ------------------------------------------------------------------------------------------ */

/* Residuals below this many noise widths are taken as exact (avoids log/division by 0). */
#define SIGMA_ABSOLUTE_FLOOR 1e-12

static double point_variance(const double *y, const double *noise_var, size_t i,
                             double rel_floor, double scale)
{
    double level = fabs(y[i]) > 0.1 * scale ? fabs(y[i]) : 0.1 * scale;
    double var = rel_floor * level * rel_floor * level;
    if (noise_var != NULL && isfinite(noise_var[i]) && noise_var[i] > var)
        var = noise_var[i];
    return var > SIGMA_ABSOLUTE_FLOOR ? var : SIGMA_ABSOLUTE_FLOOR;
}

/* Weighted least squares over the points of [first, last] with keep[i] != 0 (keep may be NULL:
 * all), weights 1 / sigma_i^2 (see nb_split_gain). Returns the weighted residual sum of
 * squares, NAN with fewer than 2 points or all x equal; *a, *b (may be NULL) get the line. */
static double weighted_fit(const double *x, const double *y, const double *noise_var,
                           const unsigned char *keep, size_t first, size_t last, double rel_floor,
                           double scale, double *a_out, double *b_out)
{
    double sw = 0.0, swx = 0.0, swy = 0.0;
    size_t m = 0;
    for (size_t i = first; i <= last; i++) {
        if (keep != NULL && !keep[i])
            continue;
        double w = 1.0 / point_variance(y, noise_var, i, rel_floor, scale);
        sw += w;
        swx += w * x[i];
        swy += w * y[i];
        m++;
    }
    if (m < 2)
        return NAN;
    double mx = swx / sw, my = swy / sw, sxx = 0.0, sxy = 0.0;
    for (size_t i = first; i <= last; i++) {
        if (keep != NULL && !keep[i])
            continue;
        double w = 1.0 / point_variance(y, noise_var, i, rel_floor, scale), dx = x[i] - mx;
        sxx += w * dx * dx;
        sxy += w * dx * (y[i] - my);
    }
    if (!(sxx > 0.0))
        return NAN;
    double b = sxy / sxx, a = my - b * mx, rss = 0.0;
    for (size_t i = first; i <= last; i++) {
        if (keep != NULL && !keep[i])
            continue;
        double r = y[i] - (a + b * x[i]);
        rss += r * r / point_variance(y, noise_var, i, rel_floor, scale);
    }
    if (a_out != NULL)
        *a_out = a;
    if (b_out != NULL)
        *b_out = b;
    return rss;
}

/* Marks in keep[first..last] the points a robust weighted line keeps: standardized residuals
 * more than ROBUST_Z robust standard deviations (1.4826 MAD, at least 1) from their median are
 * dropped, at most MAX_ROUNDS rounds, never below MIN_POINTS points (a disturbed timing, or a
 * run of them in a slow phase, is not evidence for or against a protocol change). */
static void robust_keep(const double *x, const double *y, const double *noise_var,
                        unsigned char *keep, size_t first, size_t last, double rel_floor,
                        double scale)
{
    size_t total = last - first + 1;
    for (size_t i = first; i <= last; i++)
        keep[i] = 1;
    double *z = malloc(total * sizeof *z);
    if (z == NULL)
        return;
    for (int round = 0; round < MAX_ROUNDS; round++) {
        double a, b;
        if (isnan(weighted_fit(x, y, noise_var, keep, first, last, rel_floor, scale, &a, &b)))
            break;
        size_t m = 0;
        for (size_t i = first; i <= last; i++)
            if (keep[i])
                z[m++] = (y[i] - (a + b * x[i])) /
                         sqrt(point_variance(y, noise_var, i, rel_floor, scale));
        double med = nb_median(z, m), sigma = MAD_SCALE * nb_mad(z, m);
        if (!(sigma > 1.0))
            sigma = 1.0;
        size_t dropped = 0, k = 0;
        for (size_t i = first; i <= last; i++) {
            if (!keep[i])
                continue;
            if (fabs(z[k++] - med) > ROBUST_Z * sigma && m - dropped > MIN_POINTS) {
                keep[i] = 0;
                dropped++;
            }
        }
        if (dropped == 0)
            break;
    }
    free(z);
}

static double mean_abs(const double *y, size_t first, size_t last)
{
    double sum = 0.0;
    for (size_t i = first; i <= last; i++)
        sum += fabs(y[i]);
    return sum / (double)(last - first + 1);
}

/* Residual sums of the split model over the points its robust fits keep, and of one line over
 * the same points; *m gets their number. Returns 0, or -1 when a fit is impossible. */
static int split_sums(const double *x, const double *y, const double *noise_var, size_t first,
                      size_t split, size_t last, double rel_floor, double *w_two, double *w_one,
                      size_t *m)
{
    double scale = mean_abs(y, first, last);
    unsigned char *keep = malloc(last + 1);
    if (keep == NULL)
        return -1;
    robust_keep(x, y, noise_var, keep, first, split, rel_floor, scale);
    robust_keep(x, y, noise_var, keep, split + 1, last, rel_floor, scale);
    double w_a = weighted_fit(x, y, noise_var, keep, first, split, rel_floor, scale, NULL, NULL);
    double w_b = weighted_fit(x, y, noise_var, keep, split + 1, last, rel_floor, scale, NULL,
                              NULL);
    *w_one = weighted_fit(x, y, noise_var, keep, first, last, rel_floor, scale, NULL, NULL);
    *w_two = w_a + w_b;
    *m = 0;
    for (size_t i = first; i <= last; i++)
        *m += keep[i];
    free(keep);
    return isnan(*w_two) || isnan(*w_one) ? -1 : 0;
}

double nb_split_gain(const double *x, const double *y, const double *noise_var, size_t first,
                     size_t split, size_t last, double rel_floor)
{
    if (x == NULL || y == NULL || split < first + 1 || last < split + 2)
        return NAN;
    double w_two, w_one;
    size_t kept;
    if (split_sums(x, y, noise_var, first, split, last, rel_floor, &w_two, &w_one, &kept) != 0)
        return NAN;
    double m = (double)kept;
    double s2 = m > 4.0 ? w_two / (m - 4.0) : 1.0;
    if (!(s2 > 1.0))
        s2 = 1.0;
    return (w_one - w_two) / s2 - 3.0 * log(m);
}


/* ------------------------------------------------------------------------------------------ */
/* Model selection over all segmentations (dynamic programming + BIC)                          */
/* ------------------------------------------------------------------------------------------ */

/* A standardized residual counts at most this much in a segment's cost (squared): a disturbed
 * timing costs the same in every segmentation, so it can neither make nor hide a break. */
#define SEGMENT_RESIDUAL_CAP 3.5

/* Cost of one line over [first, last]: the robust weighted line of robust_keep, then the sum over
 * all points of min(z^2, cap^2), z the standardized residual. NAN when no line can be fitted. */
static double segment_cost(const double *x, const double *y, unsigned char *keep, size_t first,
                           size_t last, double rel_floor, double scale)
{
    robust_keep(x, y, NULL, keep, first, last, rel_floor, scale);
    double a, b;
    if (isnan(weighted_fit(x, y, NULL, keep, first, last, rel_floor, scale, &a, &b)))
        return NAN;
    double cost = 0.0, cap = SEGMENT_RESIDUAL_CAP * SEGMENT_RESIDUAL_CAP;
    for (size_t i = first; i <= last; i++) {
        double r = y[i] - (a + b * x[i]);
        double z2 = r * r / point_variance(y, NULL, i, rel_floor, scale);
        cost += z2 < cap ? z2 : cap;
    }
    return cost;
}

size_t nb_segment_optimal(const double *x, const double *y, size_t n, size_t min_points,
                          double rel_floor, double margin, size_t max_segments,
                          nb_range *ranges, size_t max_ranges)
{
    if (x == NULL || y == NULL || n == 0 || ranges == NULL || max_ranges == 0)
        return 0;
    size_t mp = min_points < 3 ? 3 : min_points;
    size_t kmax = n / mp;
    if (max_segments > 0 && kmax > max_segments)
        kmax = max_segments;
    if (kmax > max_ranges)
        kmax = max_ranges;
    if (kmax <= 1) {
        ranges[0].first = 0;
        ranges[0].last = n - 1;
        return 1;
    }
    double scale = mean_abs(y, 0, n - 1);
    double *cost = malloc(n * n * sizeof *cost);
    double *best = malloc((kmax + 1) * n * sizeof *best);
    size_t *from = malloc((kmax + 1) * n * sizeof *from);
    unsigned char *keep = malloc(n);
    if (cost == NULL || best == NULL || from == NULL || keep == NULL) {
        free(cost);
        free(best);
        free(from);
        free(keep);
        ranges[0].first = 0;
        ranges[0].last = n - 1;
        return 1;
    }
    /* cost[i * n + j]: one line over [i, j] (INFINITY when shorter than mp points) */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) {
            double c = INFINITY;
            if (j >= i + mp - 1) {
                c = segment_cost(x, y, keep, i, j, rel_floor, scale);
                if (isnan(c))
                    c = INFINITY;
            }
            cost[i * n + j] = c;
        }
    /* best[k * n + j]: lowest cost of k segments tiling [0, j]; from: where the last one starts */
    for (size_t k = 0; k <= kmax; k++)
        for (size_t j = 0; j < n; j++) {
            best[k * n + j] = INFINITY;
            from[k * n + j] = 0;
        }
    for (size_t j = 0; j < n; j++)
        best[1 * n + j] = cost[j];
    for (size_t k = 2; k <= kmax; k++)
        for (size_t j = k * mp - 1; j < n; j++)
            for (size_t i = (k - 1) * mp; i + mp - 1 <= j; i++) {
                double c = best[(k - 1) * n + i - 1] + cost[i * n + j];
                if (c < best[k * n + j]) {
                    best[k * n + j] = c;
                    from[k * n + j] = i;
                }
            }
    /* BIC: each segment beyond the first adds 3 parameters (a line and its break); it must also
     * lower the cost by `margin`, as a split must in nb_split_gain. Ties go to fewer. */
    double per_segment = margin + 3.0 * log((double)n);
    size_t chosen = 1;
    double chosen_bic = best[1 * n + n - 1];
    for (size_t k = 2; k <= kmax; k++) {
        double bic = best[k * n + n - 1] + (double)(k - 1) * per_segment;
        if (bic < chosen_bic) {
            chosen_bic = bic;
            chosen = k;
        }
    }
    size_t end = n - 1;
    for (size_t k = chosen; k >= 1; k--) {
        size_t start = k == 1 ? 0 : from[k * n + end];
        ranges[k - 1].first = start;
        ranges[k - 1].last = end;
        if (k > 1)
            end = start - 1;
    }
    free(cost);
    free(best);
    free(from);
    free(keep);
    return chosen;
}

/* ------------------------------------------------------------------------------------------ */
/* Bootstrap confidence intervals                                                              */
/* ------------------------------------------------------------------------------------------ */

#define BOOTSTRAP_MIN_USABLE 20

static unsigned long long xorshift64star(unsigned long long *state)
{
    unsigned long long s = *state;
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    *state = s;
    return s * 0x2545F4914F6CDD1DULL;
}

static size_t draw(unsigned long long *state, size_t n)
{
    return (size_t)((xorshift64star(state) >> 11) % n);
}

size_t nb_bootstrap_fit_ci(const double *x, const double *y, size_t first, size_t last,
                           double max_rms_relative, size_t resamples, unsigned long long seed,
                           double level, nb_bootstrap_ci *ci)
{
    if (ci == NULL)
        return 0;
    ci->intercept_low = ci->intercept_high = ci->slope_low = ci->slope_high = NAN;
    ci->resamples_used = 0;
    if (x == NULL || y == NULL || last < first + 1 || resamples == 0)
        return 0;
    size_t m = last - first + 1;
    double *bx = malloc(m * sizeof *bx), *by = malloc(m * sizeof *by);
    double *a = malloc(resamples * sizeof *a), *b = malloc(resamples * sizeof *b);
    if (bx == NULL || by == NULL || a == NULL || b == NULL) {
        free(bx);
        free(by);
        free(a);
        free(b);
        return 0;
    }
    unsigned long long state = seed ? seed : 0x9E3779B97F4A7C15ULL;
    size_t used = 0;
    for (size_t r = 0; r < resamples; r++) {
        int distinct = 0;
        for (size_t k = 0; k < m; k++) {
            size_t i = first + draw(&state, m);
            bx[k] = x[i];
            by[k] = y[i];
            if (bx[k] != bx[0])
                distinct = 1;
        }
        nb_linfit fit;
        if (!distinct || nb_fit_robust_nonneg(bx, by, 0, m - 1, max_rms_relative, &fit) != 0)
            continue;
        a[used] = fit.intercept;
        b[used] = fit.slope;
        used++;
    }
    if (used >= BOOTSTRAP_MIN_USABLE) {
        double tail = (1.0 - level) / 2.0;
        ci->intercept_low = nb_quantile(a, used, tail);
        ci->intercept_high = nb_quantile(a, used, 1.0 - tail);
        ci->slope_low = nb_quantile(b, used, tail);
        ci->slope_high = nb_quantile(b, used, 1.0 - tail);
    }
    ci->resamples_used = used;
    free(bx);
    free(by);
    free(a);
    free(b);
    return used;
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
                sample[k] = kept[draw(&state, m)];
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
