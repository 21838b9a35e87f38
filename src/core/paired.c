/* paired.c - no method of its own: the side-by-side measurement of ping-pong variants
 * (paired.h) that polling, anysource, sendmodes, reuse and vector share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"
#include "paired.h"

/* Scale of a standard deviation to the standard error of a median (sqrt(pi / 2)). */
#define MEDIAN_SE_FACTOR 1.2533
/* Calibration runs of the variant that sets a common count; the fastest sets it, so that one
 * disturbed run does not shrink every round of the size to a handful of iterations. */
#define COMMON_CALIBRATION_RUNS 3

/* One timed run of `loop` with exactly `iterations`, after a barrier; returns round trip / 2
 * in us. */
static double run_fixed(const nb_context *ctx, nb_timed_loop loop, void *state, long iterations)
{
    nb_loop spec = {
        .comm = ctx->pair,
        .loop = loop,
        .state = state,
        .fixed_iterations = iterations,
        .repetitions = 1,
        .pacing = NB_PACE_BY_ROOT,
        .figure = NB_FIGURE_OWN,
    };
    nb_measurement once;
    nb_drive(&spec, &once);
    return once.per_iteration_us[0] / 2.0;
}

/* One count for every variant (nb_paired_plan.common_count_from): time cap / the fastest
 * calibration run of variant `pace`, within the plan's bounds, rank 0's; then every variant
 * once untimed. */
static long common_count(const nb_context *ctx, const nb_paired_variant *variants, size_t count,
                         void *const *states, const nb_paired_plan *plan, size_t pace)
{
    nb_measurement calibration;
    nb_measure(ctx, variants[pace].loop, states[pace], plan->min_iterations,
               plan->max_iterations, plan->time_cap_s, COMMON_CALIBRATION_RUNS, &calibration);
    double wanted = calibration.min_us > 0.0 ? plan->time_cap_s * 1e6 / calibration.min_us
                                             : (double)plan->max_iterations;
    long iterations = wanted > (double)plan->max_iterations ? plan->max_iterations : (long)wanted;
    if (iterations < plan->min_iterations)
        iterations = plan->min_iterations;
    MPI_Bcast(&iterations, 1, MPI_LONG, 0, ctx->pair);
    for (size_t v = 0; v < count; v++)
        run_fixed(ctx, variants[v].loop, states[v], iterations);
    return iterations;
}

void nb_paired_measure(const nb_context *ctx, const nb_paired_variant *variants, size_t count,
                       void *const *states, const nb_paired_plan *plan,
                       nb_paired_measurement *m)
{
    if (count > NB_PAIRED_MAX_VARIANTS)
        count = NB_PAIRED_MAX_VARIANTS;
    int rounds = plan->rounds > NB_MAX_REPETITIONS ? NB_MAX_REPETITIONS : plan->rounds;
    if (plan->common_count_from >= 0 && (size_t)plan->common_count_from < count) {
        long iterations = common_count(ctx, variants, count, states, plan,
                                       (size_t)plan->common_count_from);
        for (size_t v = 0; v < count; v++)
            m->iterations[v] = iterations;
    } else {
        /* Each variant's count from the driver's probe and warm-up (which are also its first
         * contact: an Ssend handshake, the Bsend buffer's first use, outside the rounds). */
        for (size_t v = 0; v < count; v++) {
            nb_measurement calibration;
            nb_measure(ctx, variants[v].loop, states[v], plan->min_iterations,
                       plan->max_iterations, plan->time_cap_s, 1, &calibration);
            m->iterations[v] = calibration.iterations;
        }
    }
    m->rounds = rounds;
    m->variant_count = count;
    m->timer_tick_us = ctx->timer_tick_s * 1e6;
    m->baseline_resolution_us = 0.0;
    for (int r = 0; r < rounds; r++)
        for (size_t k = 0; k < count; k++) {
            /* Rotated order: no variant always runs first (after the barrier) or last. */
            size_t v = (k + (size_t)r) % count;
            m->latency_us[v][r] = run_fixed(ctx, variants[v].loop, states[v], m->iterations[v]);
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
    double standard_error = MEDIAN_SE_FACTOR * NB_MAD_TO_SD * nb_mad(difference, n) / sqrt((double)n);
    double relative = NB_PAIRED_NOISE_FLOOR_RELATIVE * m->median_us[baseline];
    double floor = NB_PAIRED_NOISE_SE_FACTOR * standard_error;
    /* Each latency is quantised to tick / (2 x iterations); their difference to the sum. */
    double timer = m->timer_tick_us / (2.0 * (double)m->iterations[variant]) +
                   m->timer_tick_us / (2.0 * (double)m->iterations[baseline]);
    cost->noise_floor_us = fmax(fmax(floor, relative), fmax(timer, m->baseline_resolution_us));
}

double nb_paired_reported_cost(const nb_paired_cost *cost)
{
    if (!isfinite(cost->difference_us) || cost->difference_us < -cost->noise_floor_us)
        return NAN;
    /* below 0 within the noise: no measurable cost */
    return cost->difference_us > 0.0 ? cost->difference_us : 0.0;
}

void nb_paired_flag_cost(const nb_context *ctx, const nb_paired_cost *cost, const char *quantity,
                         const char *variant, const char *baseline)
{
    if (ctx->result == NULL)
        return;
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
        nb_paired_flag_cost(ctx, &cost, key, variants[variant].name, variants[baseline].name);
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
        char quantity[128];
        snprintf(quantity, sizeof quantity, "latency_median_us[size_bytes=%zu,%s=%s]", size, key,
                 variants[v].name);
        nb_paired_check_timer(ctx, m, v, quantity);
    }
}

void nb_paired_check_timer(const nb_context *ctx, const nb_paired_measurement *m, size_t v,
                           const char *quantity)
{
    /* The timer check is on the per-iteration time: a round trip. */
    nb_measurement round_trip = {.iterations = m->iterations[v], .min_us = 2.0 * m->min_us[v]};
    nb_check_timer_resolution(ctx, &round_trip, quantity);
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
            nb_paired_flag_cost(ctx, &cost, quantity, variants[v].name, variants[baseline].name);
        nb_cell_real(table, "cost_ratio", cost.ratio);
        nb_cell_real(table, "noise_floor_us", cost.noise_floor_us);
    }
}

nb_paired_tables nb_paired_begin(const nb_context *ctx, const nb_table_spec *latency,
                                 const nb_table_spec *comparison)
{
    nb_paired_tables tables = {NULL, NULL};
    if (ctx->result == NULL)
        return tables;
    const nb_options *o = ctx->options;
    nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
    nb_param_common(ctx);
    nb_param_text(ctx->result, "schedule", "rotated_rounds");
    nb_paired_noise_parameters(ctx);
    tables.latency = nb_result_add_declared_table(ctx->result, latency);
    tables.comparison = nb_result_add_declared_table(ctx->result, comparison);
    return tables;
}

void nb_paired_noise_parameters(const nb_context *ctx)
{
    if (ctx->result == NULL)
        return;
    nb_param_real(ctx->result, "noise_se_factor", NB_PAIRED_NOISE_SE_FACTOR);
    nb_param_real(ctx->result, "noise_floor_relative", NB_PAIRED_NOISE_FLOOR_RELATIVE);
}

void nb_paired_sweep(const nb_context *ctx, const nb_paired_variant *variants, size_t count,
                     void *state, int *message_size, nb_paired_size_writer write_size,
                     void *user)
{
    const nb_options *o = ctx->options;
    nb_paired_plan plan = {.min_iterations = 5, .max_iterations = o->iterations,
                           .time_cap_s = o->time_cap_ms * 1e-3, .rounds = o->repetitions,
                           .common_count_from = NB_PAIRED_OWN_COUNTS};
    void *states[NB_PAIRED_MAX_VARIANTS];
    if (count > NB_PAIRED_MAX_VARIANTS)
        count = NB_PAIRED_MAX_VARIANTS;
    for (size_t v = 0; v < count; v++)
        states[v] = state; /* one state for every variant */
    nb_paired_measurement m;
    for (size_t i = 0; i < o->size_count; i++) {
        *message_size = (int)o->sizes[i];
        nb_paired_measure(ctx, variants, count, states, &plan, &m);
        if (ctx->result != NULL)
            write_size(ctx, i, o->sizes[i], &m, user);
    }
}

nb_pingpong nb_paired_pair(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    size_t largest = o->sizes[o->size_count - 1];
    return (nb_pingpong){.comm = ctx->pair, .rank = ctx->rank, .tag = NB_TAG_DATA,
                         .send = nb_buffer_new(largest), .recv = nb_buffer_new(largest)};
}

void nb_paired_release(nb_pingpong *pair)
{
    free(pair->send);
    free(pair->recv);
    pair->send = pair->recv = NULL;
}
