/* methods_paired.c - no method of its own: the side-by-side measurement of ping-pong variants
 * (paired.h) that polling, anysource and sendmodes share. It sits under the methods_ prefix so
 * that the Makefile's wildcard builds it with them. */
#include <math.h>
#include <stdio.h>

#include "analysis.h"
#include "paired.h"

/* Scale of the MAD to a standard deviation (normal data), and of a standard deviation to the
 * standard error of a median (sqrt(pi / 2)). */
#define MAD_TO_SIGMA 1.4826
#define MEDIAN_SE_FACTOR 1.2533

/* One timed run of `loop` with exactly `iterations`; returns round trip / 2 in us. */
static double run_fixed(const nb_context *ctx, nb_timed_loop loop, void *state, long iterations)
{
    nb_loop spec = {
        .comm = ctx->pair,
        .loop = loop,
        .state = state,
        .min_iterations = iterations,
        .max_iterations = iterations,
        .fixed_iterations = iterations,
        .repetitions = 1,
        .pacing = NB_PACE_BY_ROOT,
        .figure = NB_FIGURE_OWN,
    };
    nb_measurement once;
    nb_drive(&spec, &once);
    return once.per_iteration_us[0] / 2.0;
}

void nb_paired_measure(const nb_context *ctx, const nb_paired_variant *variants, size_t count,
                       void *state, long min_iterations, long max_iterations, double time_cap_s,
                       int rounds, nb_paired_measurement *m)
{
    if (count > NB_PAIRED_MAX_VARIANTS)
        count = NB_PAIRED_MAX_VARIANTS;
    if (rounds > NB_MAX_REPETITIONS)
        rounds = NB_MAX_REPETITIONS;
    /* Each variant's count from the driver's probe and warm-up (which are also its first
     * contact: an Ssend handshake, the Bsend buffer's first use, outside the rounds). Not one
     * count for all: a variant 100x slower (MPI_Bsend of 32 KiB) would run 100x the cap. */
    for (size_t v = 0; v < count; v++) {
        nb_measurement calibration;
        nb_measure(ctx, variants[v].loop, state, min_iterations, max_iterations, time_cap_s, 1,
                   &calibration);
        m->iterations[v] = calibration.iterations;
    }
    m->rounds = rounds;
    m->variant_count = count;
    m->baseline_resolution_us = 0.0;
    for (int r = 0; r < rounds; r++)
        for (size_t k = 0; k < count; k++) {
            /* Rotated order: no variant always runs first (after the barrier) or last. */
            size_t v = (k + (size_t)r) % count;
            m->latency_us[v][r] = run_fixed(ctx, variants[v].loop, state, m->iterations[v]);
        }
    for (size_t v = 0; v < count; v++) {
        m->min_us[v] = nb_min(m->latency_us[v], (size_t)rounds);
        m->median_us[v] = nb_median(m->latency_us[v], (size_t)rounds);
        m->max_us[v] = nb_max(m->latency_us[v], (size_t)rounds);
    }
}

void nb_paired_cost_of(const nb_paired_measurement *m, size_t variant, size_t baseline,
                       nb_paired_cost *cost)
{
    double difference[NB_MAX_REPETITIONS] = {0}, ratio[NB_MAX_REPETITIONS] = {0};
    size_t n = (size_t)m->rounds;
    for (size_t r = 0; r < n; r++) {
        difference[r] = m->latency_us[variant][r] - m->latency_us[baseline][r];
        ratio[r] = m->latency_us[baseline][r] > 0.0
                       ? m->latency_us[variant][r] / m->latency_us[baseline][r]
                       : NAN;
    }
    cost->difference_us = nb_median(difference, n);
    cost->ratio = nb_median(ratio, n);
    double standard_error = MEDIAN_SE_FACTOR * MAD_TO_SIGMA * nb_mad(difference, n) / sqrt((double)n);
    double relative = NB_PAIRED_NOISE_FLOOR_RELATIVE * m->median_us[baseline];
    double floor = NB_PAIRED_NOISE_SE_FACTOR * standard_error;
    cost->noise_floor_us = floor > relative ? floor : relative;
    if (m->baseline_resolution_us > cost->noise_floor_us)
        cost->noise_floor_us = m->baseline_resolution_us;
}

double nb_paired_reported_cost(const nb_paired_cost *cost)
{
    if (!isfinite(cost->difference_us) || cost->difference_us < -cost->noise_floor_us)
        return NAN;
    /* below 0 within the noise: no measurable cost */
    return cost->difference_us > 0.0 ? cost->difference_us : 0.0;
}

/* Rank 0: why a cost is null. */
static void flag_negative_cost(const nb_context *ctx, const nb_paired_cost *cost,
                               const char *quantity, const char *variant, const char *baseline)
{
    if (isfinite(cost->difference_us))
        nb_unreliable(ctx->result, quantity,
                      "%s was faster than %s by %.4g us, beyond the noise floor of %.4g us: a "
                      "negative cost is no cost figure (a disturbed run, or %s is the slower "
                      "variant on this system)",
                      variant, baseline, -cost->difference_us, cost->noise_floor_us, baseline);
    else
        nb_unreliable(ctx->result, quantity, "no finite difference of %s and %s", variant,
                      baseline);
}

void nb_paired_summary_cost(const nb_context *ctx, const char *prefix,
                            const nb_paired_variant *variants, const nb_paired_measurement *m,
                            size_t variant, size_t baseline)
{
    if (ctx->result == NULL)
        return;
    nb_paired_cost cost;
    nb_paired_cost_of(m, variant, baseline, &cost);
    char key[96];
    snprintf(key, sizeof key, "%s_us", prefix);
    double value = nb_paired_reported_cost(&cost);
    nb_summary_real(ctx->result, key, value);
    if (isnan(value))
        flag_negative_cost(ctx, &cost, key, variants[variant].name, variants[baseline].name);
    snprintf(key, sizeof key, "%s_ratio", prefix);
    nb_summary_real(ctx->result, key, cost.ratio);
}

void nb_paired_add_latency_rows(const nb_context *ctx, nb_table *table, const char *key,
                                const nb_paired_variant *variants,
                                const nb_paired_measurement *m, size_t size)
{
    if (ctx->result == NULL)
        return;
    for (size_t v = 0; v < m->variant_count; v++) {
        nb_table_add_row(table);
        nb_cell_int(table, "size_bytes", (long long)size);
        nb_cell_text(table, key, variants[v].name);
        nb_cell_int(table, "iterations", m->iterations[v]);
        nb_cell_real(table, "latency_min_us", m->min_us[v]);
        nb_cell_real(table, "latency_median_us", m->median_us[v]);
        nb_cell_real(table, "latency_max_us", m->max_us[v]);
        /* The timer check is on the per-iteration time: a round trip. */
        nb_measurement round_trip = {.iterations = m->iterations[v], .min_us = 2.0 * m->min_us[v]};
        char quantity[128];
        snprintf(quantity, sizeof quantity, "latency_median_us[size_bytes=%zu,%s=%s]", size, key,
                 variants[v].name);
        nb_check_timer_resolution(ctx, &round_trip, quantity);
    }
}

void nb_paired_add_cost_rows(const nb_context *ctx, nb_table *table, const char *key,
                             const nb_paired_variant *variants, const nb_paired_measurement *m,
                             size_t size, size_t baseline)
{
    if (ctx->result == NULL)
        return;
    for (size_t v = 0; v < m->variant_count; v++) {
        if (v == baseline)
            continue;
        nb_paired_cost cost;
        nb_paired_cost_of(m, v, baseline, &cost);
        char quantity[128];
        snprintf(quantity, sizeof quantity, "cost_us[size_bytes=%zu,%s=%s]", size, key,
                 variants[v].name);
        nb_table_add_row(table);
        nb_cell_int(table, "size_bytes", (long long)size);
        nb_cell_text(table, key, variants[v].name);
        nb_cell_text(table, "against", variants[baseline].name);
        double value = nb_paired_reported_cost(&cost);
        nb_cell_real(table, "cost_us", value);
        if (isnan(value))
            flag_negative_cost(ctx, &cost, quantity, variants[v].name, variants[baseline].name);
        nb_cell_real(table, "cost_ratio", cost.ratio);
        nb_cell_real(table, "noise_floor_us", cost.noise_floor_us);
    }
}

void nb_paired_parameters(const nb_context *ctx)
{
    if (ctx->result == NULL)
        return;
    const nb_options *o = ctx->options;
    nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
    nb_param_common(ctx);
    nb_param_text(ctx->result, "schedule", "rotated_rounds");
    nb_param_real(ctx->result, "noise_se_factor", NB_PAIRED_NOISE_SE_FACTOR);
    nb_param_real(ctx->result, "noise_floor_relative", NB_PAIRED_NOISE_FLOOR_RELATIVE);
}
