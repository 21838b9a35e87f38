/* ranges.c - protocol ranges of a size sweep: change detection (Hoefler et al. 2.6) and the model
 * selection over the piecewise fit (merging by BIC, optimal segmentation)
 * (analysis.h; no MPI). */
#include "analysis.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "robust.h"

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

