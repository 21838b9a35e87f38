/* paired.h - variants of one ping-pong measured side by side (methods_paired.c), for the
 * methods that ask "what does this variant cost against that one": polling (blocking against
 * polling completion), anysource (a wildcard receive against a named one) and sendmodes
 * (MPI_Ssend/Bsend/Rsend against MPI_Send).
 *
 * Why not one nb_measure per variant: on a shared machine a slow phase lasts seconds, longer
 * than all repetitions of one variant, so a difference of two separately measured medians
 * shows the phase, not the variant. Here the variants take turns: every round runs each
 * variant once (the order rotated from round to round), and a cost is
 * the median over the rounds of the paired difference (variant - baseline) of one round. The
 * spread of these differences gives the noise floor that every cost is reported with.
 */
#ifndef NETBENCH_PAIRED_H
#define NETBENCH_PAIRED_H

#include "methods.h"

#define NB_PAIRED_MAX_VARIANTS 4

/* The noise floor of a cost: the largest of NB_PAIRED_NOISE_SE_FACTOR standard errors of the
 * median paired difference (1.2533 x 1.4826 x MAD / sqrt(rounds)),
 * NB_PAIRED_NOISE_FLOOR_RELATIVE of the baseline's median latency (what the rotation cannot
 * remove: a phase that changes within a round) and the baseline's resolution (below). */
#define NB_PAIRED_NOISE_SE_FACTOR 3.0
#define NB_PAIRED_NOISE_FLOOR_RELATIVE 0.03

typedef struct {
    const char *name;           /* "blocking", "any_source", "synchronous" */
    nb_timed_loop loop;         /* one iteration = one round trip of one message each way */
} nb_paired_variant;

typedef struct {
    long iterations[NB_PAIRED_MAX_VARIANTS]; /* per round, of each variant */
    int rounds;
    size_t variant_count;
    /* round trip / 2 of each round, per variant */
    double latency_us[NB_PAIRED_MAX_VARIANTS][NB_MAX_REPETITIONS];
    double min_us[NB_PAIRED_MAX_VARIANTS];
    double median_us[NB_PAIRED_MAX_VARIANTS];
    double max_us[NB_PAIRED_MAX_VARIANTS];
    /* The smallest difference the baseline can resolve, which the method may set after
     * nb_paired_measure (0 there): a cost's noise floor is never below it. */
    double baseline_resolution_us;
} nb_paired_measurement;

/* A variant against the baseline, from the paired rounds. */
typedef struct {
    double difference_us;       /* median over rounds of (variant - baseline), may be < 0 */
    double ratio;               /* median over rounds of variant / baseline */
    double noise_floor_us;      /* see NB_PAIRED_NOISE_* */
} nb_paired_cost;

/* Measures every variant on ctx->pair: each variant's iteration count from the driver's probe
 * and warm-up of it (aiming at time_cap_s per round, within [min_iterations,
 * max_iterations]), then `rounds` rounds. Collective over the pair; the figures are rank 0's. */
void nb_paired_measure(const nb_context *ctx, const nb_paired_variant *variants, size_t count,
                       void *state, long min_iterations, long max_iterations, double time_cap_s,
                       int rounds, nb_paired_measurement *m);

/* Variant `variant` against variant `baseline`. */
void nb_paired_cost_of(const nb_paired_measurement *m, size_t variant, size_t baseline,
                       nb_paired_cost *cost);

/* Rank 0: one row per variant of `size` in `table` (columns size_bytes, KEY, iterations,
 * latency_min_us, latency_median_us, latency_max_us), and an `unreliable` entry for a latency
 * whose round trip is below 10 x MPI_Wtick. */
void nb_paired_add_latency_rows(const nb_context *ctx, nb_table *table, const char *key,
                                const nb_paired_variant *variants,
                                const nb_paired_measurement *m, size_t size);

/* Rank 0: one row per variant but the baseline of `size` in `table` (columns size_bytes, KEY,
 * against, cost_us, cost_ratio, noise_floor_us), the cost as nb_paired_reported_cost gives
 * it. */
void nb_paired_add_cost_rows(const nb_context *ctx, nb_table *table, const char *key,
                             const nb_paired_variant *variants, const nb_paired_measurement *m,
                             size_t size, size_t baseline);

/* The parameters every paired method records: sizes, rounds, iterations, time cap, tick and
 * the noise floor's constants. */
void nb_paired_parameters(const nb_context *ctx);

/* The cost as reported: the difference when >= 0; 0 when below 0 by no more than the noise
 * floor; NaN (null in the output) when below 0 by more. */
double nb_paired_reported_cost(const nb_paired_cost *cost);

/* Rank 0: the summary values `<prefix>_us` (the reported cost) and `<prefix>_ratio` of variant
 * `variant` against `baseline`; a null cost gets an `unreliable` entry under its key. */
void nb_paired_summary_cost(const nb_context *ctx, const char *prefix,
                            const nb_paired_variant *variants, const nb_paired_measurement *m,
                            size_t variant, size_t baseline);

#endif
