/* fits.c - straight-line fits: least squares and the robust non-negative fit
 * (analysis.h; no MPI). */
#include "analysis.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "robust.h"

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
/* Bootstrap confidence intervals of a fit                                                      */
/* ------------------------------------------------------------------------------------------ */

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
            size_t i = first + nb_draw_index(&state, m);
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
    if (used >= NB_BOOTSTRAP_MIN_USABLE) {
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
