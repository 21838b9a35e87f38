/* loggp.c - LogGP parameters from parametrized round trips PRTT(n, d, s) with
 * protocol-range detection (Hoefler, Schneider, Lumsdaine, "LogGP in Theory and Practice",
 * §2.2-2.6). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "loggp_catalogue.h"
#include "loggp_fit.h"
#include "methods.h"

#define LOGGP_MIN_ROUNDS 3
/* A pass of a size whose PRTT(n,0,s) exceeds the kept (lowest) pass's by more than this share
 * was disturbed (summary slow_passes): how much of the run a slow phase hit. */
#define SLOW_PASS_EXCESS 0.25
/* The state of the machine while a size is measured: right before it, the lowest of
 * STATE_PROBE_REPS timings of STATE_PROBE_ROUNDS 1-byte round trips (after as many for warm-up).
 * The 2-core development VM switches, for seconds to minutes, between two states of its
 * core-to-core path: a 1-byte round trip of 0.27 us or of 0.78 us (2026-11-24, 36000 probes over
 * 2 minutes, bimodal, with the same CPU speed in both: it is the path between the cores, not the
 * CPU). A run that meets both measures some sizes only in the slow one, and its G_all curve then
 * mixes two curves: steps vanish or appear (a 1-range and a 3-range MPICH run where 4 is the
 * rule). A size pass is in the fast state when its probe is within STATE_RATIO of the fast
 * state's level (nb_keep_fast_state: about the lowest probe of the run). The states differ
 * 2.7x (Open MPI, 0.26 against 0.70 us) to 3.5-4x (MPICH, 0.30 against 1.1-1.3 us); the fast
 * state's own probes vary by up to 1.4x, and a freak low one (0.215 us among MPICH's 0.28-0.35)
 * made a whole run look slow at 1.7. */
#define STATE_PROBE_ROUNDS 20
#define STATE_PROBE_REPS 5
#define STATE_RATIO 2.0
/* Waiting out a slow phase: when a size's probe is over STATE_RATIO times the lowest probe of the
 * run so far, netbench probes again every STATE_WAIT_STEP_S until the probe is back in the fast
 * state or the run has waited --state-wait-s in all, and only then measures the size. Extra
 * passes alone cannot help a run whose slow phase outlasts them (a quiet Open MPI run spent 98 %
 * of its 9 passes in the slow state and found 4 ranges where 3 is the rule). On a machine
 * without slow phases no probe is slow and nothing waits. */
#define STATE_WAIT_STEP_S 0.02
/* Besides the two states, the VM has noisy stretches in which a size's PRTT(n,0,s) comes out
 * 10-40 % high in every repetition while the probe stays near the fast level; with 3 passes some
 * sizes are then high in all of them, and the scattered high points hid MPICH's 1.2 KiB break
 * (development VM, 2026-11-24: 4 ranges in 16 of 20 quiet MPICH runs before the rechecks, the
 * misses found 1-2). So after the passes, a size whose kept PRTT(n,0,s) or G_all lies more than
 * RECHECK_EXCESS above the medians of both its left and its right RECHECK_HALF_WINDOW
 * neighbours (nb_recheck_flags: no point of a step or of a rising curve is above both sides),
 * or that still has no pass in the fast state, is measured again, up to --rechecks rounds; the
 * new figures replace the kept ones by the rule by which passes are kept (see recheck()). */
#define RECHECK_EXCESS 0.10
#define RECHECK_HALF_WINDOW 2

static const loggp_settings *settings_of(const nb_options *o)
{
    return o->settings;
}

typedef struct {
    nb_prtt prtt;              /* PRTT(n, d, s) between the pair (measure.h) */
    double lowest_probe_us;    /* rank 0: the lowest state probe of the run so far */
    double wait_budget_s;      /* --state-wait-s */
    double waited_s;           /* time spent waiting for the fast state (see STATE_WAIT_STEP_S) */
    long waits;                /* size measurements that waited */
} prtt_state;

/* Rank 0: the machine state probe, the lowest of STATE_PROBE_REPS timings of
 * STATE_PROBE_ROUNDS 1-byte round trips, in us per round trip; rank 1 answers (returns NAN). */
static double state_probe_once(const prtt_state *s)
{
    char byte = 0;
    double lowest = INFINITY;
    for (int rep = -1; rep < STATE_PROBE_REPS; rep++) { /* rep -1: warm-up, not timed */
        double start = MPI_Wtime();
        for (int i = 0; i < STATE_PROBE_ROUNDS; i++) {
            if (s->prtt.rank == 0) {
                MPI_Send(&byte, 1, MPI_BYTE, 1, NB_TAG_DATA, s->prtt.comm);
                MPI_Recv(&byte, 1, MPI_BYTE, 1, NB_TAG_DATA, s->prtt.comm, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&byte, 1, MPI_BYTE, 0, NB_TAG_DATA, s->prtt.comm, MPI_STATUS_IGNORE);
                MPI_Send(&byte, 1, MPI_BYTE, 0, NB_TAG_DATA, s->prtt.comm);
            }
        }
        double per_round_us = (MPI_Wtime() - start) * 1e6 / STATE_PROBE_ROUNDS;
        if (rep >= 0 && per_round_us < lowest)
            lowest = per_round_us;
    }
    return s->prtt.rank == 0 ? lowest : NAN;
}

/* The state probe, after waiting out a slow phase within the run's budget (STATE_WAIT_STEP_S):
 * both ranks probe again while rank 0 finds the probe slow against the run's lowest so far. */
static double state_probe(prtt_state *s)
{
    double probe = state_probe_once(s);
    int waited = 0;
    for (;;) {
        int slow = 0;
        if (s->prtt.rank == 0) {
            if (probe < s->lowest_probe_us)
                s->lowest_probe_us = probe;
            slow = probe > STATE_RATIO * s->lowest_probe_us;
            if (s->waited_s >= s->wait_budget_s)
                slow = 0; /* the budget is spent: measure in the state there is */
        }
        MPI_Bcast(&slow, 1, MPI_INT, 0, s->prtt.comm);
        if (!slow)
            break;
        if (!waited && s->prtt.rank == 0)
            s->waits++;
        waited = 1;
        double start = MPI_Wtime();
        const struct timespec pause = {.tv_sec = 0,
                                       .tv_nsec = (long)(STATE_WAIT_STEP_S * 1e9)};
        nanosleep(&pause, NULL);
        probe = state_probe_once(s);
        s->waited_s += MPI_Wtime() - start;
    }
    return probe;
}

static void measure_size(const nb_context *ctx, prtt_state *state, size_figures *f)
{
    const nb_options *o = ctx->options;
    int n = settings_of(o)->messages;
    nb_measurement one, many, delayed, receive;
    f->state_probe_us = state_probe(state);
    nb_prtt_measure(ctx, &state->prtt, 1, 0.0, nb_prtt_loop, LOGGP_MIN_ROUNDS, &one);
    nb_prtt_measure(ctx, &state->prtt, n, 0.0, nb_prtt_loop, LOGGP_MIN_ROUNDS, &many);

    /* §2.3: d_G = PRTT(1,0,s) must exceed G_all; otherwise fall back to PRTT(2,0,s). */
    double d_G = 0.0;
    int fallback = 0;
    if (ctx->rank == 0) {
        f->prtt_1_0_us = one.median_us;
        f->prtt_n_0_us = many.median_us;
        f->G_all_us = (many.median_us - one.median_us) / (n - 1);
        double sigma_one = NB_MAD_TO_SD * one.mad_us, sigma_many = NB_MAD_TO_SD * many.mad_us;
        f->G_all_noise_var = (sigma_one * sigma_one + sigma_many * sigma_many) /
                             o->repetitions / ((double)(n - 1) * (n - 1));
        d_G = one.median_us;
        fallback = f->G_all_us > d_G;
    }
    MPI_Bcast(&fallback, 1, MPI_INT, 0, ctx->pair);
    if (fallback) {
        nb_measurement two;
        nb_prtt_measure(ctx, &state->prtt, 2, 0.0, nb_prtt_loop, LOGGP_MIN_ROUNDS, &two);
        if (ctx->rank == 0)
            d_G = two.median_us;
    }
    MPI_Bcast(&d_G, 1, MPI_DOUBLE, 0, ctx->pair);
    nb_prtt_measure(ctx, &state->prtt, n, d_G, nb_prtt_loop, LOGGP_MIN_ROUNDS, &delayed);
    nb_prtt_measure(ctx, &state->prtt, 1, d_G, nb_prtt_receive_loop, LOGGP_MIN_ROUNDS, &receive);
    if (ctx->rank == 0) {
        f->d_G_us = d_G;
        f->d_G_is_prtt_2_0 = fallback;
        f->prtt_n_dG_us = delayed.median_us;
        f->o_s_us = (delayed.median_us - one.median_us) / (n - 1) - d_G;
        f->o_r_us = receive.median_us;
        char quantity[64];
        snprintf(quantity, sizeof quantity, "prtt_1_0_us[size_bytes=%d]", state->prtt.size);
        nb_check_timer_resolution(ctx, &one, quantity);
    }
}

/* Rank 0: the table prtt (one row per size, with its protocol range) and what it flags. */
static void report_prtt(const nb_context *ctx, const size_figures *figures,
                        const loggp_analysis *a)
{
    const nb_options *o = ctx->options;
    nb_result *r = ctx->result;
    size_t count = o->size_count;
    int range_of[NB_MAX_SIZES];
    for (size_t i = 0; i < count; i++)
        range_of[i] = -1;
    for (size_t k = 0; k < a->range_count; k++)
        for (size_t i = a->ranges[k].first; i <= a->ranges[k].last && i < count; i++)
            range_of[i] = (int)k;

    nb_table *prtt = nb_result_add_declared_table(r, &prtt_table);
    size_t negative_o_s = 0, negative_G_all = 0, fallbacks = 0;
    size_t first_fallback = 0;
    for (size_t i = 0; i < count; i++) {
        const size_figures *f = &figures[i];
        nb_table_add_row(prtt);
        nb_cell_int(prtt, "size_bytes", (long long)o->sizes[i]);
        nb_cell_real(prtt, "prtt_1_0_us", f->prtt_1_0_us);
        nb_cell_real(prtt, "prtt_n_0_us", f->prtt_n_0_us);
        nb_cell_real(prtt, "prtt_n_dG_us", f->prtt_n_dG_us);
        nb_cell_real(prtt, "d_G_us", f->d_G_us);
        nb_cell_real(prtt, "G_all_us", loggp_non_negative_or_nan(f->G_all_us));
        nb_cell_real(prtt, "o_s_us", loggp_non_negative_or_nan(f->o_s_us));
        nb_cell_real(prtt, "o_r_us", loggp_non_negative_or_nan(f->o_r_us));
        if (range_of[i] >= 0)
            nb_cell_int(prtt, "range", range_of[i]);
        nb_cell_bool(prtt, "G_all_spike", a->G_all_despiked[i] != a->G_all[i]);
        negative_o_s += f->o_s_us < 0.0;
        negative_G_all += f->G_all_us < 0.0;
        if (f->d_G_is_prtt_2_0 && fallbacks++ == 0)
            first_fallback = i;
    }
    if (negative_o_s > 0)
        nb_unreliable(r, "o_s_us", "negative at %zu of %zu sizes (the noise of the round trips "
                      "exceeds o_s there); shown as null", negative_o_s, count);
    if (negative_G_all > 0)
        nb_unreliable(r, "G_all_us", "negative at %zu of %zu sizes (PRTT(n,0,s) < PRTT(1,0,s): "
                      "noise); shown as null", negative_G_all, count);
    if (fallbacks > 0) {
        const size_figures *f = &figures[first_fallback];
        nb_warning(r, "G_all > d_G = PRTT(1,0,s) at %zu size(s), first at %zu B (G_all %.4g us, "
                   "PRTT(1,0,s) %.4g us): o_s re-measured there with d_G = PRTT(2,0,s) (Hoefler "
                   "et al. section 2.3)", fallbacks, o->sizes[first_fallback], f->G_all_us,
                   f->prtt_1_0_us);
    }

}

/* Rank 0: row k of the table ranges, the fit of one protocol range (§2.4, §2.6) with its
 * bootstrap intervals, and why a figure of it is unresolved or unreliable. */
static void report_range(const nb_context *ctx, nb_table *table, const loggp_analysis *a,
                         size_t k)
{
    const nb_options *o = ctx->options;
    nb_result *r = ctx->result;
    const nb_range *ranges = a->ranges;
    size_t first = ranges[k].first, last = ranges[k].last;
    const range_fit *rf = &a->fits[k];
    const loggp_param *p = rf->p;
    nb_table_add_row(table);
    nb_cell_int(table, "range", (long long)k);
    nb_cell_int(table, "first_size_bytes", (long long)o->sizes[first]);
    nb_cell_int(table, "last_size_bytes", (long long)o->sizes[last]);
    nb_cell_int(table, "points", (long long)(last - first + 1));
    if (k > 0)
        nb_cell_real(table, "split_bic_gain",
                     nb_split_gain(a->x, a->G_all_despiked, a->noise, ranges[k - 1].first,
                                   ranges[k - 1].last, last, RANGE_REL_FLOOR));
    else
        nb_cell_real(table, "split_bic_gain", NAN);
    char quantity[64];
    if (rf->fitted) {
        const nb_linfit *fit = &rf->fit;
        int g_clamped = fit->intercept_clamped, G_clamped = fit->slope_clamped;
        nb_cell_real(table, "g_us", p[P_g].value);
        nb_cell_real(table, "G_ns_per_byte", p[P_G].value);
        nb_cell_real(table, "fit_rms_relative", fit->rms_relative);
        nb_cell_bool(table, "fit_reliable", fit->reliable);
        nb_cell_bool(table, "fit_clamped", g_clamped || G_clamped);
        if (g_clamped) {
            snprintf(quantity, sizeof quantity, "g_us[range=%zu]", k);
            nb_unreliable(r, quantity, "unresolved: the non-negative fit of G_all over "
                          "%zu-%zu B clamped g at 0 (below the noise of the range; 95%% "
                          "interval up to %.4g us)", o->sizes[first], o->sizes[last],
                          rf->ci.intercept_high);
        }
        if (G_clamped) {
            snprintf(quantity, sizeof quantity, "G_ns_per_byte[range=%zu]", k);
            nb_unreliable(r, quantity, "unresolved: the non-negative fit of G_all over "
                          "%zu-%zu B clamped G at 0 (below the noise of the range; 95%% "
                          "interval up to %.4g ns/B)", o->sizes[first], o->sizes[last],
                          1000.0 * rf->ci.slope_high);
        }
        if (!fit->reliable) {
            snprintf(quantity, sizeof quantity, "ranges[%zu]", k);
            nb_unreliable(r, quantity, "fit of G_all over %zu-%zu B: rms residual %.1f%% of "
                          "the mean (limit %.0f%%), %zu of %zu points rejected as outliers",
                          o->sizes[first], o->sizes[last], 100.0 * fit->rms_relative,
                          100.0 * NB_FIT_MAX_RMS_RELATIVE, fit->outliers, last - first + 1);
        }
    } else {
        nb_cell_real(table, "g_us", NAN);
        nb_cell_real(table, "G_ns_per_byte", NAN);
        nb_cell_real(table, "fit_rms_relative", NAN);
        nb_cell_bool(table, "fit_reliable", 0);
        nb_cell_bool(table, "fit_clamped", 0);
        snprintf(quantity, sizeof quantity, "ranges[%zu]", k);
        nb_unreliable(r, quantity, "no fit over %zu-%zu B: fewer than 2 distinct sizes",
                      o->sizes[first], o->sizes[last]);
    }
    if (rf->median_o_s < 0.0) {
        snprintf(quantity, sizeof quantity, "ranges[%zu].o_s_us", k);
        nb_unreliable(r, quantity, "median o_s over the range is negative (%.3g us): below "
                      "the noise", rf->median_o_s);
    }
    nb_cell_real(table, "o_s_us", p[P_o_s].value);
    nb_cell_real(table, "o_r_us", p[P_o_r].value);
    /* An interval bound below 0 (o_s: noise) is shown as null, as the figures are. */
    nb_cell_real(table, "g_ci95_low_us", loggp_non_negative_or_nan(p[P_g].low));
    nb_cell_real(table, "g_ci95_high_us", loggp_non_negative_or_nan(p[P_g].high));
    nb_cell_real(table, "G_ci95_low_ns_per_byte", loggp_non_negative_or_nan(p[P_G].low));
    nb_cell_real(table, "G_ci95_high_ns_per_byte", loggp_non_negative_or_nan(p[P_G].high));
    nb_cell_real(table, "o_s_ci95_low_us", loggp_non_negative_or_nan(p[P_o_s].low));
    nb_cell_real(table, "o_s_ci95_high_us", loggp_non_negative_or_nan(p[P_o_s].high));
    nb_cell_real(table, "o_r_ci95_low_us", loggp_non_negative_or_nan(p[P_o_r].low));
    nb_cell_real(table, "o_r_ci95_high_us", loggp_non_negative_or_nan(p[P_o_r].high));
}

/* Rank 0: the summary: L, the range counts, what the check asserts, M and the thresholds. */
static void report_summary(const nb_context *ctx, const size_figures *figures,
                           const loggp_analysis *a)
{
    const nb_options *o = ctx->options;
    nb_result *r = ctx->result;
    size_t count = o->size_count, range_count = a->range_count;
    const nb_range *ranges = a->ranges;
    nb_summary_real(r, "L_us", figures[0].prtt_1_0_us / 2.0); /* sizes[0] == 1 */
    nb_summary_int(r, "protocol_ranges", (long long)range_count);
    nb_summary_int(r, "protocol_ranges_detected", (long long)a->detected_count);

    /* What the check asserts: small-message g, o_s, o_r (first range), large-message G (last
     * range), M = g / G (Bell et al. 5.5) and the thresholds, each with its interval. */
    for (size_t h = 0; h < LOGGP_HEADLINE_COUNT; h++) {
        const loggp_headline_figure *figure = &loggp_headline[h];
        const loggp_param *p = &(figure->last ? a->last_range : a->first_range)[figure->param];
        char key[64];
        snprintf(key, sizeof key, "%s_%s", figure->name, figure->unit);
        nb_summary_real(r, key, p->value);
        if (!a->sound[S_g_small + h])
            nb_unreliable(r, key, "taken from ranges[%zu], whose figure is unresolved, "
                          "unreliable or below the noise (see that range)",
                          figure->last ? range_count - 1 : (size_t)0);
        snprintf(key, sizeof key, "%s_ci95_low_%s", figure->name, figure->unit);
        nb_summary_real(r, key, loggp_non_negative_or_nan(p->low));
        snprintf(key, sizeof key, "%s_ci95_high_%s", figure->name, figure->unit);
        nb_summary_real(r, key, loggp_non_negative_or_nan(p->high));
    }
    int M_sound = a->sound[S_M];
    nb_summary_real(r, "M_bytes", M_sound ? a->M : NAN);
    if (!M_sound)
        nb_unreliable(r, "M_bytes", "g_small_us or G_large_ns_per_byte is unresolved or "
                      "unreliable");
    nb_summary_real(r, "M_ci95_low_bytes", M_sound && isfinite(a->M_low) ? a->M_low : NAN);
    nb_summary_real(r, "M_ci95_high_bytes", M_sound && isfinite(a->M_high) ? a->M_high : NAN);
    /* Thresholds: the first size of the range after the small-message range and of the last
     * range (the same when there are two ranges). */
    if (a->sound[S_threshold_small]) {
        nb_summary_int(r, "threshold_small_bytes", (long long)o->sizes[ranges[1].first]);
        nb_summary_int(r, "threshold_large_bytes",
                       (long long)o->sizes[ranges[range_count - 1].first]);
    } else {
        nb_summary_null(r, "threshold_small_bytes");
        nb_summary_null(r, "threshold_large_bytes");
        nb_unreliable(r, "threshold_small_bytes", "unresolved: one protocol range, no "
                      "threshold between %zu and %zu B", o->sizes[0], o->sizes[count - 1]);
        nb_unreliable(r, "threshold_large_bytes", "unresolved: one protocol range, no "
                      "threshold between %zu and %zu B", o->sizes[0], o->sizes[count - 1]);
    }
    nb_summary_int(r, "G_all_spikes", (long long)a->spikes);
    nb_summary_int(r, "n", settings_of(o)->messages);
    nb_summary_int(r, "lookahead", settings_of(o)->lookahead);
    nb_summary_real(r, "pfact", settings_of(o)->pfact);
}

/* Rank 0: tables, ranges, summary, from `figures` and their analysis `a`. */
static void report_loggp(const nb_context *ctx, const size_figures *figures,
                         const loggp_analysis *a)
{
    report_prtt(ctx, figures, a);
    nb_table *table = nb_result_add_declared_table(ctx->result, &ranges_table);
    for (size_t k = 0; k < a->range_count; k++)
        report_range(ctx, table, a, k);
    report_summary(ctx, figures, a);
}

/* Where in the scattered order pass p starts. The --passes passes start step = count / passes
 * + 1 positions apart (pass p at p * step); a pass beyond them (p >= passes) starts within the
 * gap after pass p mod passes, at the van der Corput fraction (1/2, 1/4, 3/4, 1/8, ...) of the
 * gap for its round p / passes, so that extra passes start at yet other points while the gaps
 * allow. */
static size_t pass_start(size_t p, size_t passes, size_t count)
{
    size_t step = count / passes + 1;
    double fraction = 0.0, unit = 0.5;
    for (size_t round = p / passes; round > 0; round >>= 1, unit /= 2.0)
        if (round & 1)
            fraction += unit;
    return ((p % passes) * step + (size_t)(fraction * (double)step)) % count;
}

/* One sweep over all sizes in the scattered order (j * stride mod count), starting at
 * pass_start; the figures of size i go to pass_figures[i]. */
static void measure_pass(const nb_context *ctx, prtt_state *state, size_t start, size_t stride,
                         size_figures *pass_figures)
{
    const nb_options *o = ctx->options;
    size_t count = o->size_count;
    for (size_t j = 0; j < count; j++) {
        size_t i = (((j + start) % count) * stride) % count;
        state->prtt.size = (int)o->sizes[i];
        measure_size(ctx, state, &pass_figures[i]);
    }
}

/* How the kept passes stand: passes more than SLOW_PASS_EXCESS above their size's kept one, the
 * fast state's probe level (about the lowest probe of the run), the size passes in a slower
 * state, and the sizes none of whose passes was in the fast state. */
typedef struct {
    size_t slow_passes;
    double fast_probe_us;
    size_t slow_state_passes;
    size_t slow_state_sizes;
} kept_passes;

/* Per size the pass (of the `made` passes in measured[pass * count + size]) with the lowest
 * PRTT(n,0,s) among those measured in the run's fast state (nb_keep_fast_state: its probe within
 * STATE_RATIO of the fast state's level; all passes when none was) into figures. */
static kept_passes keep_lowest(const size_figures *measured, size_t made, size_t count,
                               size_figures *figures)
{
    kept_passes k = {0, INFINITY, 0, 0};
    double *probe = nb_calloc_or_abort(MPI_COMM_WORLD, made * count, sizeof *probe);
    double *key = nb_calloc_or_abort(MPI_COMM_WORLD, made * count, sizeof *key);
    size_t *kept = nb_calloc_or_abort(MPI_COMM_WORLD, count, sizeof *kept);
    for (size_t j = 0; j < made * count; j++) {
        probe[j] = measured[j].state_probe_us;
        key[j] = measured[j].prtt_n_0_us;
    }
    k.slow_state_sizes = nb_keep_fast_state(probe, key, made, count, STATE_RATIO, kept,
                                            &k.fast_probe_us, &k.slow_state_passes);
    for (size_t i = 0; i < count; i++) {
        figures[i] = measured[kept[i] * count + i];
        for (size_t p = 0; p < made; p++)
            k.slow_passes += measured[p * count + i].prtt_n_0_us >
                             (1.0 + SLOW_PASS_EXCESS) * figures[i].prtt_n_0_us;
    }
    free(probe);
    free(key);
    free(kept);
    return k;
}

typedef struct {
    size_t measurements;     /* sizes measured again */
    size_t lowered;          /* of them, those whose new figures replaced the kept ones */
    size_t slow_state_sizes; /* afterwards, the sizes whose kept figures are not in the fast
                                state (rank 0) */
} recheck_counts;

/* Up to --rechecks rounds: the sizes whose kept PRTT(n,0,s) or G_all stands out above their
 * neighbours (RECHECK_EXCESS), and those whose kept figures were not measured in the fast state
 * (--max-passes ran out), are measured once more each, in the scattered order; the new figures
 * replace the kept ones when their probe is in the fast state (within STATE_RATIO of
 * fast_probe_us) and their PRTT(n,0,s) is lower, or when the kept ones were not in the fast
 * state. Rank 0 decides, both ranks measure. */
static recheck_counts recheck(const nb_context *ctx, prtt_state *state, size_figures *figures,
                              double fast_probe_us, size_t stride)
{
    const nb_options *o = ctx->options;
    size_t count = o->size_count;
    recheck_counts c = {0, 0, 0};
    double fast_limit = STATE_RATIO * fast_probe_us;
    for (int round = 0; round < settings_of(o)->rechecks; round++) {
        int chosen[NB_MAX_SIZES];
        int chosen_count = 0;
        if (ctx->rank == 0) {
            double prtt[NB_MAX_SIZES], G_all[NB_MAX_SIZES];
            unsigned char flag[NB_MAX_SIZES] = {0};
            for (size_t i = 0; i < count; i++) {
                prtt[i] = figures[i].prtt_n_0_us;
                G_all[i] = figures[i].G_all_us;
            }
            nb_recheck_flags(prtt, count, RECHECK_HALF_WINDOW, RECHECK_EXCESS, flag);
            nb_recheck_flags(G_all, count, RECHECK_HALF_WINDOW, RECHECK_EXCESS, flag);
            for (size_t i = 0; i < count; i++)
                if (figures[i].state_probe_us > fast_limit)
                    flag[i] = 1;
            for (size_t j = 0; j < count; j++) {
                size_t i = (j * stride) % count;
                if (flag[i])
                    chosen[chosen_count++] = (int)i;
            }
        }
        MPI_Bcast(&chosen_count, 1, MPI_INT, 0, ctx->pair);
        if (chosen_count == 0)
            break;
        MPI_Bcast(chosen, chosen_count, MPI_INT, 0, ctx->pair);
        for (int k = 0; k < chosen_count; k++) {
            size_t i = (size_t)chosen[k];
            size_figures again;
            state->prtt.size = (int)o->sizes[i];
            measure_size(ctx, state, &again);
            if (ctx->rank != 0)
                continue;
            c.measurements++;
            int fast_again = !(again.state_probe_us > fast_limit);
            int fast_kept = !(figures[i].state_probe_us > fast_limit);
            if (fast_again && (!fast_kept || again.prtt_n_0_us < figures[i].prtt_n_0_us)) {
                figures[i] = again;
                c.lowered++;
            }
        }
    }
    if (ctx->rank == 0)
        for (size_t i = 0; i < count; i++)
            c.slow_state_sizes += figures[i].state_probe_us > fast_limit;
    return c;
}

/* Rank 0, after more than --passes passes: why the extra passes were made (`unsound_first`,
 * `slow_state_first`: after the first --passes) and whether they helped. */
static void report_extra_passes(const nb_context *ctx, const loggp_analysis *analysis,
                                const char *unsound_first, size_t slow_state_first,
                                size_t passes, size_t made, kept_passes kept,
                                recheck_counts rechecked)
{
        char why[384], still[384];
    char unsound_last[256];
    size_t unsound_now = loggp_unsound_summary(analysis, unsound_last, sizeof unsound_last);
    snprintf(why, sizeof why, "%s%s%s", unsound_first[0] ? "summary " : "",
             unsound_first[0] ? unsound_first : "",
             unsound_first[0] ? " unreliable" : "");
    if (slow_state_first > 0)
        snprintf(why + strlen(why), sizeof why - strlen(why),
                 "%s%zu sizes measured only in a slow state of the machine",
                 why[0] ? ", " : "", slow_state_first);
    still[0] = '\0';
    if (unsound_now > 0)
        snprintf(still, sizeof still, "still unreliable: %s", unsound_last);
    if (kept.slow_state_sizes > 0)
        snprintf(still + strlen(still), sizeof still - strlen(still),
                 "%s%zu sizes still only in a slow state (probe over %.1fx the "
                 "fast state's %.3f us)", still[0] ? "; " : "",
                 kept.slow_state_sizes, STATE_RATIO, kept.fast_probe_us);
    if (still[0] == '\0')
        nb_warning(ctx->result, "%s after %zu pass%s; %zu passes made and %zu sizes "
                   "rechecked, after which all fitted summary figures are sound and "
                   "every size has a pass in the fast state", why, passes,
                   passes == 1 ? "" : "es", made, rechecked.measurements);
    else
        nb_warning(ctx->result, "%s after %zu pass%s; %zu passes made (--max-passes) "
                   "and %zu sizes rechecked, %s", why, passes, passes == 1 ? "" : "es",
                   made, rechecked.measurements, still);
}

/* Rank 0: the run's parameters, its settings and the analysis' rules (docs/output-format.md). */
static void report_parameters(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
    nb_param_common(ctx);
    nb_param_int(ctx->result, "n", settings_of(o)->messages);
    nb_param_int(ctx->result, "lookahead", settings_of(o)->lookahead);
    nb_param_real(ctx->result, "pfact", settings_of(o)->pfact);
    nb_param_int(ctx->result, "range_min_points", RANGE_MIN_POINTS);
    nb_param_int(ctx->result, "despike_half_window", DESPIKE_HALF_WINDOW);
    nb_param_real(ctx->result, "despike_z", DESPIKE_Z);
    nb_param_real(ctx->result, "despike_floor_relative", DESPIKE_FLOOR_RELATIVE);
    nb_param_real(ctx->result, "fit_max_rms_relative", NB_FIT_MAX_RMS_RELATIVE);
    nb_param_real(ctx->result, "range_segment_bic_margin", RANGE_SEGMENT_MARGIN);
    nb_param_int(ctx->result, "range_max_segments", RANGE_MAX_SEGMENTS);
    nb_param_real(ctx->result, "range_noise_floor_relative", RANGE_REL_FLOOR);
    nb_param_real(ctx->result, "ci_level", CI_LEVEL);
    nb_param_int(ctx->result, "ci_resamples", CI_RESAMPLES);
    nb_param_text(ctx->result, "size_order", "scattered");
    nb_param_int(ctx->result, "passes", settings_of(o)->passes);
    nb_param_int(ctx->result, "max_passes", settings_of(o)->max_passes);
    nb_param_text(ctx->result, "pass_kept", "lowest PRTT(n,0,s) in the fast state");
    nb_param_real(ctx->result, "state_ratio", STATE_RATIO);
    nb_param_int(ctx->result, "state_probe_round_trips", STATE_PROBE_ROUNDS);
    nb_param_int(ctx->result, "rechecks", settings_of(o)->rechecks);
    nb_param_real(ctx->result, "state_wait_s", settings_of(o)->state_wait_s);
    nb_param_real(ctx->result, "state_wait_step_s", STATE_WAIT_STEP_S);
    nb_param_real(ctx->result, "recheck_excess", RECHECK_EXCESS);
    nb_param_int(ctx->result, "recheck_half_window", RECHECK_HALF_WINDOW);
}

void run_loggp(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    size_t largest = o->sizes[o->size_count - 1];
    prtt_state state = {.prtt = {.comm = ctx->pair, .rank = ctx->rank},
                        .lowest_probe_us = INFINITY, .wait_budget_s = settings_of(o)->state_wait_s};
    state.prtt.send = nb_buffer_new(largest);
    state.prtt.recv = nb_buffer_new(largest);
    if (ctx->result != NULL)
        report_parameters(ctx);
    size_t passes = (size_t)settings_of(o)->passes;
    size_t max_passes = (size_t)settings_of(o)->max_passes;
    size_t capacity = max_passes > passes ? max_passes : passes;
    size_t count = o->size_count;
    size_figures *figures = nb_calloc_or_abort(MPI_COMM_WORLD, count, sizeof *figures);
    size_figures *measured = nb_calloc_or_abort(MPI_COMM_WORLD, count * capacity,
                                                sizeof *measured);
    loggp_analysis *analysis =
        ctx->rank == 0 ? nb_calloc_or_abort(MPI_COMM_WORLD, 1, sizeof *analysis) : NULL;
    /* Sizes in a scattered order: j * stride mod count, stride coprime to count and near
     * 0.618 count. A slow phase of the machine (shared-memory latency 2-3x for tens of seconds)
     * then disturbs sizes spread over the sweep, isolated points that the spike filter and the
     * robust fits handle, instead of a block of adjacent sizes that looks like a protocol range.
     * Both ranks compute the same order. */
    size_t stride = 1;
    for (size_t candidate = (size_t)(0.618 * (double)count); candidate > 1; candidate--)
        if (nb_gcd(candidate, count) == 1) {
            stride = candidate;
            break;
        }
    /* --passes sweeps, each starting at another point of the order, so that a size's passes lie
     * seconds apart. This VM's slow phases (a 2-3x shared-memory latency, switching within a
     * sweep) then hit a size in some passes, not all: per size the pass with the lowest
     * PRTT(n,0,s) is kept, with all its figures (they come from the same seconds). The range
     * count and the thresholds then no longer follow which sizes a slow phase hit. */
    size_t made = 0;
    for (; made < passes; made++)
        measure_pass(ctx, &state, pass_start(made, passes, count), stride,
                     &measured[made * count]);
    kept_passes kept = keep_lowest(measured, made, count, figures);
    if (ctx->rank == 0)
        loggp_analyse(o->sizes, o->size_count, settings_of(o)->lookahead,
                          settings_of(o)->pfact, figures, analysis);
    /* A slow phase can outlast all --passes passes (a whole run is about 12 s): while a fitted
     * figure of the summary is unreliable, or a size was measured only in a slower state of the
     * machine than the run's fast one (its figures would mix two curves), one more pass, up to
     * --max-passes, each at yet another start; the kept figures are taken again over all passes
     * made. Rank 0 decides, both ranks measure. */
    char unsound_first[256] = "";
    size_t slow_state_first = kept.slow_state_sizes;
    if (ctx->rank == 0)
        loggp_unsound_summary(analysis, unsound_first, sizeof unsound_first);
    while (made < max_passes) {
        int more = ctx->rank == 0 &&
                   (loggp_unsound_summary(analysis, NULL, 0) > 0 || kept.slow_state_sizes > 0);
        MPI_Bcast(&more, 1, MPI_INT, 0, ctx->pair);
        if (!more)
            break;
        measure_pass(ctx, &state, pass_start(made, passes, count), stride,
                     &measured[made * count]);
        made++;
        kept = keep_lowest(measured, made, count, figures);
        if (ctx->rank == 0)
            loggp_analyse(o->sizes, o->size_count, settings_of(o)->lookahead,
                          settings_of(o)->pfact, figures, analysis);
    }
    recheck_counts rechecked = recheck(ctx, &state, figures, kept.fast_probe_us, stride);
    if (ctx->rank == 0 && rechecked.lowered > 0)
        loggp_analyse(o->sizes, o->size_count, settings_of(o)->lookahead, settings_of(o)->pfact,
                      figures, analysis);
    kept.slow_state_sizes = rechecked.slow_state_sizes;
    if (ctx->result != NULL) {
        report_loggp(ctx, figures, analysis);
        nb_summary_int(ctx->result, "slow_passes", (long long)kept.slow_passes);
        nb_summary_int(ctx->result, "passes_made", (long long)made);
        nb_summary_real(ctx->result, "state_probe_fast_us", kept.fast_probe_us);
        nb_summary_real(ctx->result, "slow_state_share",
                        (double)kept.slow_state_passes / (double)(made * count));
        nb_summary_int(ctx->result, "slow_state_sizes", (long long)kept.slow_state_sizes);
        nb_summary_int(ctx->result, "recheck_measurements", (long long)rechecked.measurements);
        nb_summary_int(ctx->result, "recheck_lowered", (long long)rechecked.lowered);
        nb_summary_real(ctx->result, "state_waited_s", state.waited_s);
        nb_summary_int(ctx->result, "state_waits", (long long)state.waits);
        if (state.wait_budget_s > 0.0 && state.waited_s >= state.wait_budget_s)
            nb_warning(ctx->result, "the machine stayed in a slower state than the run's fast "
                       "one (probe over %.1fx %.3f us) through the %g s of --state-wait-s; "
                       "the sizes measured after that may mix two curves", STATE_RATIO,
                       state.lowest_probe_us, state.wait_budget_s);
        if (made > passes)
            report_extra_passes(ctx, analysis, unsound_first, slow_state_first, passes,
                                made, kept, rechecked);
    }
    free(analysis);
    free(measured);
    free(figures);
    free(state.prtt.send);
    free(state.prtt.recv);
}

/* Before MPI: the size list. L = PRTT(1,0,1)/2 always needs the 1-byte point; without --sizes,
 * 1 byte and round(2^(k/K)) for K = --sizes-per-doubling steps per doubling up to --max-size. */
int loggp_finish(nb_options *o, void *settings)
{
    const loggp_settings *ls = settings;
    if (o->max_size < 2)
        return nb_usage_error("--max-size %zu: too small for a fit; use at least 2", o->max_size);
    if (!o->sizes_given) {
        o->size_count = 0;
        for (int k = 1; o->size_count < NB_MAX_SIZES - 1; k++) {
            double s = round(pow(2.0, (double)k / ls->sizes_per_doubling));
            if (s >= (double)o->max_size)
                break;
            o->sizes[o->size_count++] = (size_t)s;
        }
        o->sizes[o->size_count++] = o->max_size;
    }
    if (o->size_count < NB_MAX_SIZES)
        o->sizes[o->size_count++] = 1;
    o->size_count = nb_sort_unique_sizes(o->sizes, o->size_count);
    return 0;
}
