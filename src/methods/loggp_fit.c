/* loggp_fit.c - the analysis of loggp's kept per-size figures (loggp_fit.h). */
#include "loggp_fit.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const loggp_summary_figure_names[S_count] = {
    "g_small_us", "o_s_small_us", "o_r_small_us", "G_large_ns_per_byte", "M_bytes",
    "threshold_small_bytes", "threshold_large_bytes"};

const loggp_headline_figure loggp_headline[LOGGP_HEADLINE_COUNT] = {
    {"g_small", "us", P_g, 0},
    {"o_s_small", "us", P_o_s, 0},
    {"o_r_small", "us", P_o_r, 0},
    {"G_large", "ns_per_byte", P_G, 1},
};

/* Median of the finite values of v[first..last]. */
static double finite_median(const double *v, size_t first, size_t last)
{
    double kept[NB_MAX_SIZES];
    size_t count = 0;
    for (size_t i = first; i <= last; i++)
        if (isfinite(v[i]))
            kept[count++] = v[i];
    return nb_median(kept, count);
}

double loggp_non_negative_or_nan(double v)
{
    return v >= 0.0 ? v : NAN;
}

/* Rank 0: analyses `figures` (one per size) into *a. */
void loggp_analyse(const size_t *sizes, size_t count, int lookahead, double pfact,
                   const size_figures *figures, loggp_analysis *a)
{
    for (size_t i = 0; i < count; i++) {
        a->x[i] = (double)sizes[i] - 1.0;
        a->G_all[i] = figures[i].G_all_us;
        a->noise[i] = figures[i].G_all_noise_var;
        a->o_s[i] = figures[i].o_s_us;
        a->o_r[i] = figures[i].o_r_us;
    }

    /* A single disturbed timing (another process on the core) looks like a protocol change to
     * the look-ahead test; the ranges are detected on G_all with such spikes replaced by their
     * neighbours. The tables keep the measured values; the fits use the despiked series too:
     * on a busy node a third of a short range can be disturbed, more than the robust fit's own
     * outlier rejection may drop before it (rightly) calls the fit unreliable. */
    a->spikes = nb_despike(a->G_all, count, DESPIKE_HALF_WINDOW, DESPIKE_Z,
                           DESPIKE_FLOOR_RELATIVE, a->G_all_despiked);
    size_t range_count = nb_detect_ranges(a->x, a->G_all_despiked, a->noise, count,
                                          lookahead, pfact, RANGE_MIN_POINTS, a->ranges,
                                          NB_MAX_SIZES);
    if (range_count > NB_MAX_SIZES)
        range_count = NB_MAX_SIZES;
    a->detected_count = range_count;
    a->range_count = nb_segment_optimal(a->x, a->G_all_despiked, count, RANGE_MIN_POINTS,
                                        RANGE_REL_FLOOR, RANGE_SEGMENT_MARGIN,
                                        RANGE_MAX_SEGMENTS, a->ranges, NB_MAX_SIZES);
    range_count = a->range_count;

    for (int j = 0; j < P_count; j++)
        a->first_range[j] = a->last_range[j] = (loggp_param){NAN, NAN, NAN, 0};
    for (size_t k = 0; k < range_count; k++) {
        size_t first = a->ranges[k].first, last = a->ranges[k].last;
        range_fit *rf = &a->fits[k];
        loggp_param *p = rf->p;
        for (int j = 0; j < P_count; j++)
            p[j] = (loggp_param){NAN, NAN, NAN, 0};
        rf->fitted = nb_fit_robust_nonneg(a->x, a->G_all_despiked, first, last,
                                          NB_FIT_MAX_RMS_RELATIVE, &rf->fit) == 0;
        if (rf->fitted) {
            nb_bootstrap_fit_ci(a->x, a->G_all_despiked, first, last, NB_FIT_MAX_RMS_RELATIVE,
                                CI_RESAMPLES, CI_SEED + k, CI_LEVEL, &rf->ci);
            /* A parameter held at its bound 0 by the non-negative fit is no measurement: the
             * unconstrained fit wanted it negative, i.e. it is below the noise of the range. */
            const nb_linfit *fit = &rf->fit;
            int g_clamped = fit->intercept_clamped, G_clamped = fit->slope_clamped;
            p[P_g] = (loggp_param){g_clamped ? NAN : fit->intercept, rf->ci.intercept_low,
                                   rf->ci.intercept_high, fit->reliable && !g_clamped};
            /* us/byte -> ns/byte */
            p[P_G] = (loggp_param){G_clamped ? NAN : fit->slope * 1000.0,
                                   rf->ci.slope_low * 1000.0, rf->ci.slope_high * 1000.0,
                                   fit->reliable && !G_clamped};
        }
        rf->median_o_s = finite_median(a->o_s, first, last);
        rf->median_o_r = finite_median(a->o_r, first, last);
        p[P_o_s].value = loggp_non_negative_or_nan(rf->median_o_s);
        p[P_o_r].value = loggp_non_negative_or_nan(rf->median_o_r);
        p[P_o_s].sound = isfinite(p[P_o_s].value);
        p[P_o_r].sound = isfinite(p[P_o_r].value);
        nb_bootstrap_median_ci(a->o_s, first, last, CI_RESAMPLES, CI_SEED + k, CI_LEVEL,
                               &p[P_o_s].low, &p[P_o_s].high);
        nb_bootstrap_median_ci(a->o_r, first, last, CI_RESAMPLES, CI_SEED + k, CI_LEVEL,
                               &p[P_o_r].low, &p[P_o_r].high);
        if (k == 0)
            memcpy(a->first_range, p, sizeof a->first_range);
        if (k + 1 == range_count)
            memcpy(a->last_range, p, sizeof a->last_range);
    }

    for (size_t h = 0; h < LOGGP_HEADLINE_COUNT; h++) {
        const loggp_param *range = loggp_headline[h].last ? a->last_range : a->first_range;
        a->sound[S_g_small + h] = range[loggp_headline[h].param].sound;
    }
    /* M = g / G in bytes (g in us, G in ns/B); its interval from the ends of both intervals. */
    const loggp_param *g_small = &a->first_range[P_g], *G_large = &a->last_range[P_G];
    a->M = g_small->value * 1000.0 / G_large->value;
    a->sound[S_M] = g_small->sound && G_large->sound && isfinite(a->M) && a->M > 0.0;
    a->M_low = g_small->low * 1000.0 / G_large->high;
    a->M_high = g_small->high * 1000.0 / G_large->low;
    /* Thresholds: resolved with at least two ranges. */
    a->sound[S_threshold_small] = a->sound[S_threshold_large] = range_count >= 2;
}

size_t loggp_unsound_summary(const loggp_analysis *a, char *names, size_t size)
{
    size_t unsound = 0, used = 0;
    if (names != NULL && size > 0)
        names[0] = '\0';
    for (int s = 0; s < S_count; s++) {
        if (a->sound[s] || s == S_threshold_small || s == S_threshold_large)
            continue;
        if (names != NULL && used < size) {
            int n = snprintf(names + used, size - used, "%s%s", unsound > 0 ? ", " : "",
                             loggp_summary_figure_names[s]);
            used += n > 0 ? (size_t)n : 0;
        }
        unsound++;
    }
    return unsound;
}

