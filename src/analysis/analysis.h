/* analysis.h - statistics, robust fits and protocol-change detection for netbench.
 *
 * Defined in stats.c (order statistics, the median's bootstrap and its generator, spike filter,
 * fast state, overlap knee), fits.c (straight-line fits and their bootstrap, on stats.c) and
 * ranges.c (protocol ranges, on both); no file calls one that calls it back. No MPI in here: analysis/ also
 * builds into libnbanalysis.so, which the Python tests load with ctypes to check these
 * functions on synthetic and captured data. Everything is plain C11, and allocation failures
 * are reported as NAN / -1 / "no change" rather than by aborting.
 */
#ifndef NETBENCH_ANALYSIS_H
#define NETBENCH_ANALYSIS_H

#include <stddef.h>

/* The greatest common divisor (gcd(a, 0) = a). */
size_t nb_gcd(size_t a, size_t b);

/* Order statistics; none of them modifies its input. n == 0 gives NAN. */
double nb_min(const double *values, size_t n);
double nb_max(const double *values, size_t n);
double nb_median(const double *values, size_t n);
/* q in [0, 1], linear interpolation between order statistics (type 7). */
double nb_quantile(const double *values, size_t n, double q);
/* Median absolute deviation from the median (unscaled). */
double nb_mad(const double *values, size_t n);
/* The normal-consistency factor of the MAD: a robust standard deviation is NB_MAD_TO_SD x MAD. */
#define NB_MAD_TO_SD 1.4826

/* A straight-line fit y = intercept + slope * x. */
typedef struct {
    double intercept;
    double slope;
    double rms_residual;       /* sqrt(mean squared residual) over the points used */
    double rms_relative;       /* rms_residual / mean(|y|) over the points used */
    size_t points_used;        /* points left after outlier rejection */
    size_t outliers;           /* points rejected as outliers */
    int constrained;           /* 1 if a non-negativity bound was active */
    int reliable;              /* 0 if the fit should not be trusted (see nb_fit_robust_nonneg) */
    int intercept_clamped;     /* 1 if the intercept is 0 because its bound was active */
    int slope_clamped;         /* 1 if the slope is 0 because its bound was active */
} nb_linfit;

/* Ordinary least squares over points [first, last] (inclusive). Returns 0, or -1 when fewer than
 * 2 points or all x equal. */
int nb_fit_ls(const double *x, const double *y, size_t first, size_t last, nb_linfit *fit);

/* Mean least-squares deviation of points [first, last] from `fit`, as Hoefler et al. eq. (6):
 * sum of squared residuals / (number of points - 2); NAN when there are fewer than 3 points. */
double nb_lsq_deviation(const double *x, const double *y, size_t first, size_t last,
                        const nb_linfit *fit);

/* Robust, non-negative fit over [first, last]: least squares, then points whose residual exceeds
 * 3.5 robust standard deviations (1.4826 * MAD of the residuals, floored at 1 % of mean |y|) are
 * rejected and the fit repeated (at most 3 rounds, never below 3 points). If the slope or intercept comes out negative, the fit is
 * redone with that parameter fixed at 0 (constrained = 1; intercept_clamped or slope_clamped
 * names the parameter held at 0: a figure below the noise, not a measured 0). reliable = 0 when rms_relative exceeds
 * max_rms_relative, when fewer than 3 points remain, or when more than a third were rejected.
 * Returns 0, or -1 when fewer than 2 points. */
int nb_fit_robust_nonneg(const double *x, const double *y, size_t first, size_t last,
                         double max_rms_relative, nb_linfit *fit);

/* A protocol range: points [first, last] inclusive. */
typedef struct {
    size_t first;
    size_t last;
} nb_range;

/* Protocol-change detection, Hoefler et al. §2.6: x-point look-ahead (`lookahead` = x) with
 * sensitivity `pfact`. Points must be sorted by x. A change is declared after point `current` when
 * lsq(lastchange, current + j) > pfact * base_j for all 1 <= j <= lookahead, where
 * base_j = max(lsq(lastchange, current), mean of noise_var[lastchange..current + j]) (noise_var
 * may be NULL: then base_j = lsq). The noise floor includes the look-ahead points because noise
 * grows with message size. lsq(k, l) is eq. (6) of an unweighted least-squares fit over [k, l].
 * base is further floored at (1e-9 * mean |y[lastchange..current]|)^2 so that floating-point
 * rounding on an exact line is not taken for a change. Each range has at least `min_points` points
 * (values below 3 count as 3); a change after `current` needs max(min_points, lookahead) points
 * after it, otherwise the remaining points join the last range. Writes at most max_ranges ranges
 * and returns how many were found (>= 1 when n >= 1; may exceed max_ranges). */
size_t nb_detect_ranges(const double *x, const double *y, const double *noise_var, size_t n,
                        int lookahead, double pfact, size_t min_points,
                        nb_range *ranges, size_t max_ranges);

/* Model selection over every segmentation: the ranges that tile [0, n-1] into at most
 * max_segments (0: no limit but n / min_points) lines of at least min_points (at least 3) points
 * each, with the lowest cost for their count (dynamic programming over all break positions,
 * Bellman's optimal segmentation), and of those counts the one with the lowest BIC. A line's cost
 * is the sum over its points of min(z^2, 3.5^2), z the point's residual from the robust weighted
 * line of nb_split_gain in units of sigma_i = rel_floor * max(|y_i|, 0.1 * mean |y|) (the
 * repetitions' noise is not used: see the caller); each segment beyond the first must lower the
 * cost by margin + 3 ln n (3 parameters: a line and its break). Unlike the look-ahead detection
 * followed by greedy merging (which an earlier netbench did), no break depends on where an earlier one was put, and a curved
 * range next to a step does not hide the step. Writes min(count, max_ranges) ranges in order;
 * returns the count (1 when n < 2 min_points, 0 when there are no points). */
size_t nb_segment_optimal(const double *x, const double *y, size_t n, size_t min_points,
                          double rel_floor, double margin, size_t max_segments,
                          nb_range *ranges, size_t max_ranges);

/* The BIC gain of keeping ranges A = [first, split] and B = [split + 1, last] apart rather than
 * one range; NAN when either side has fewer than 2 points. Per point the noise is sigma_i^2 =
 * max(noise_var[i] (may be NULL), (rel_floor * max(|y_i|, 0.1 * mean |y| of the pair))^2). With
 * weighted residual sums W_AB of one line over both (m points) and W_A + W_B of a line each,
 *   gain = (W_AB - W_A - W_B) / s^2 - 3 ln m,   s^2 = max((W_A + W_B) / (m - 4), 1)
 * (3 more parameters: a second line and the break; the residual variance of the split model in
 * noise units, never below the noise model). The sums are taken over the points that robust
 * weighted lines of A and of B keep (standardized residuals beyond 3.5 robust standard deviations
 * dropped, as in nb_fit_robust_nonneg): a run of disturbed timings is no evidence for a split,
 * nor does it hide one. */
double nb_split_gain(const double *x, const double *y, const double *noise_var, size_t first,
                     size_t split, size_t last, double rel_floor);

/* Percentile bootstrap confidence intervals for the robust non-negative fit over [first, last]
 * (pairs bootstrap: `resamples` resamples of the points with replacement, each fitted by
 * nb_fit_robust_nonneg; resamples with fewer than 2 distinct x are skipped). level e.g. 0.95.
 * The generator is a fixed-seed xorshift64*, so a given input always gives the same interval.
 * Bounds are NAN when fewer than NB_BOOTSTRAP_MIN_USABLE resamples were usable. Returns the
 * number of usable fit resamples. Defined in fits.c. */
#define NB_BOOTSTRAP_MIN_USABLE 20
typedef struct {
    double intercept_low, intercept_high;
    double slope_low, slope_high;
    size_t resamples_used;
} nb_bootstrap_ci;

size_t nb_bootstrap_fit_ci(const double *x, const double *y, size_t first, size_t last,
                           double max_rms_relative, size_t resamples, unsigned long long seed,
                           double level, nb_bootstrap_ci *ci);

/* The bootstraps' generator: the next of a fixed-seed xorshift64* sequence in `state`, as an
 * index below n (n > 0). */
size_t nb_draw_index(unsigned long long *state, size_t n);

/* Percentile bootstrap interval of the median of the finite values of v[first..last] (same
 * generator); NAN bounds when fewer than 2 finite values. */
void nb_bootstrap_median_ci(const double *v, size_t first, size_t last, size_t resamples,
                            unsigned long long seed, double level, double *low, double *high);

/* Spike filter applied before protocol-change detection. y[i] is a spike when it deviates from
 * the median of its left neighbours y[i-h..i-1] AND from the median of its right neighbours
 * y[i+1..i+h], in the same direction, by more than z * max(1.4826 * MAD of those neighbours,
 * floor_relative * |their median|); at the ends the one existing side decides. A step (a protocol
 * change) sits close to the neighbours on one side and is never taken for a spike; a single
 * disturbed timing is. Spikes are replaced by the mean of the two side medians (or the one side's
 * median) in out, which must not alias y. Returns the number of points replaced. */
size_t nb_despike(const double *y, size_t n, size_t half_window, double z, double floor_relative,
                  double *out);

/* Points to measure again: y[i] is flagged (flag[i] = 1; other entries are left as they are,
 * so that the flags of several series can be combined) when it exceeds by more than `excess`
 * (relative) both the median of its left neighbours y[i-h..i-1] and that of its right
 * neighbours y[i+1..i+h] (NaNs skipped; at an end the one existing side decides, so the last
 * point of a steep curve is flagged). A timing disturbed upward in every pass that measured it
 * stands out so; a point on a rising curve or on either side of a step does not. Returns the
 * number of points of y flagged. */
size_t nb_recheck_flags(const double *y, size_t n, size_t half_window, double excess,
                        unsigned char *flag);

/* The pass to keep per size of a sweep made `made` times over `count` sizes (values of pass p,
 * size i at [p * count + i]), when the machine may switch between a fast and a slow state:
 * probe[] is a measure of the state taken right before each size pass (lower is faster), key[]
 * the figure that ranks passes (lower is better). A pass is in the fast state when its probe is
 * at most `ratio` times the fast state's level, the k-th lowest finite probe of all passes with
 * k = 1 + (their number) / 64 (the lowest, up to 63 probes: one freak low timing must not make a
 * whole run look slow); a NaN probe counts as fast (no evidence of a slow state). kept[i] gets
 * the fast-state pass of size i with the lowest key, or, for a size none of whose passes was in
 * the fast state, its pass with the lowest key over all.
 * *fast_probe (may be NULL) gets that level (INFINITY when there is no probe), and
 * *slow_state_passes (may be NULL) the number of passes not in the fast state. Returns the
 * number of sizes none of whose passes was in the fast state. */
size_t nb_keep_fast_state(const double *probe, const double *key, size_t made, size_t count,
                          double ratio, size_t *kept, double *fast_probe,
                          size_t *slow_state_passes);

/* Knee of an overhead sweep (Bell et al. §4.3): compute[i] ascending, time[i] the time per message
 * with compute[i] inserted, time0 the time without. Returns the largest compute c such that all
 * points up to c satisfy time <= time0 * (1 + tolerance), linearly interpolated to the crossing
 * with the first point beyond; returns the last compute if none is beyond, 0 if the first is,
 * NAN when n == 0. */
double nb_overlap_knee(const double *compute, const double *time, size_t n, double time0,
                       double tolerance);

#endif
