/* paired.h - variants of one ping-pong measured side by side (paired.c), for every method that
 * asks "what does this variant cost against that one": polling (blocking against polling
 * completion), anysource (a wildcard receive against a named one), sendmodes
 * (MPI_Ssend/Bsend/Rsend against MPI_Send), reuse (fresh buffers against one reused buffer)
 * and vector (a vector datatype against the contiguous message).
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

/* reuse: up to 32 percentages; vector: up to 32 segment counts and the contiguous message. */
#define NB_PAIRED_MAX_VARIANTS 33

/* The noise floor of a cost, the one rule of every paired method: the largest of
 *   - NB_PAIRED_NOISE_SE_FACTOR standard errors of the median paired difference
 *     (1.2533 x 1.4826 x MAD / sqrt(rounds)),
 *   - NB_PAIRED_NOISE_FLOOR_RELATIVE of the baseline's median latency,
 *   - the resolution of the difference: the timer's (each latency is quantised to
 *     MPI_Wtick / (2 x iterations)), or the baseline's own where the method sets a coarser one.
 * Why this rule: the reported cost is a median over the rounds, so what decides whether it
 * differs from 0 is the uncertainty of that median, which shrinks with more rounds; a spread of
 * single differences or of the latencies themselves (3 x 1.4826 x MAD, reuse and vector
 * before) does not shrink, and counting the latencies' spread brings back the slow phases that
 * the pairing removes. The standard error alone trusts the rounds to be independent; a phase
 * that changes within a round is what the rotation cannot remove, hence the relative floor. */
#define NB_PAIRED_NOISE_SE_FACTOR 3.0
#define NB_PAIRED_NOISE_FLOOR_RELATIVE 0.03

/* nb_paired_plan.common_count_from: every variant its own iteration count. */
#define NB_PAIRED_OWN_COUNTS (-1)

typedef struct {
    const char *name;           /* "blocking", "any_source", "synchronous", "0 % reuse" */
    nb_timed_loop loop;         /* one iteration = one round trip of one message each way */
} nb_paired_variant;

/* How the variants are measured. */
typedef struct {
    long min_iterations;        /* per round, of each variant */
    long max_iterations;
    double time_cap_s;          /* what one variant's run in a round aims at */
    int rounds;
    /* NB_PAIRED_OWN_COUNTS: each variant's count from the driver's probe and warm-up of it
     * (also its first contact, outside the rounds); a variant 100x slower than another
     * (MPI_Bsend of 32 KiB) then does not run 100x the cap. A variant's index: one count for
     * all, time_cap_s over the fastest of a few calibration runs of that variant (the most
     * expensive one, so that no variant's run exceeds the cap by much), decided by rank 0;
     * then every variant runs once untimed before the rounds. One count suits variants that
     * share a state which advances with every iteration (reuse's pool of fresh buffers). */
    int common_count_from;
} nb_paired_plan;

typedef struct {
    long iterations[NB_PAIRED_MAX_VARIANTS]; /* per round, of each variant */
    int rounds;
    size_t variant_count;
    /* round trip / 2 of each round, per variant */
    double latency_us[NB_PAIRED_MAX_VARIANTS][NB_MAX_REPETITIONS];
    double min_us[NB_PAIRED_MAX_VARIANTS];
    double median_us[NB_PAIRED_MAX_VARIANTS];
    double max_us[NB_PAIRED_MAX_VARIANTS];
    double timer_tick_us;       /* MPI_Wtick */
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

/* Measures `count` variants on ctx->pair as `plan` says, variant v with states[v] (the same
 * pointer for all where they share one state): the iteration counts, then plan->rounds rounds.
 * Collective over the pair; the figures are rank 0's. */
void nb_paired_measure(const nb_context *ctx, const nb_paired_variant *variants, size_t count,
                       void *const *states, const nb_paired_plan *plan,
                       nb_paired_measurement *m);

/* Variant `variant` against variant `baseline`. */
void nb_paired_cost_of(const nb_paired_measurement *m, size_t variant, size_t baseline,
                       nb_paired_cost *cost);

/* The cost as reported: the difference when >= 0; 0 when below 0 by no more than the noise
 * floor; NaN (null in the output) when below 0 by more. */
double nb_paired_reported_cost(const nb_paired_cost *cost);

/* Rank 0: the `unreliable` entry `quantity` of a cost that nb_paired_reported_cost makes null. */
void nb_paired_flag_cost(const nb_context *ctx, const nb_paired_cost *cost, const char *quantity,
                         const char *variant, const char *baseline);

/* Rank 0: an `unreliable` entry `quantity` when variant v's round trip is below 10 x
 * MPI_Wtick. */
void nb_paired_check_timer(const nb_context *ctx, const nb_paired_measurement *m, size_t v,
                           const char *quantity);

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

/* The noise floor's constants as parameters (noise_se_factor, noise_floor_relative). */
void nb_paired_noise_parameters(const nb_context *ctx);

/* The two tables of polling, anysource and sendmodes: latency per variant, and each variant
 * against the baseline (a cost or a ratio table); NULL on ranks other than 0. */
typedef struct {
    nb_table *latency, *comparison;
} nb_paired_tables;

/* Records the parameters these methods share (sizes, rounds, iterations, time cap, tick,
 * schedule and the noise floor's constants) and adds their two tables (rank 0 only). */
nb_paired_tables nb_paired_begin(const nb_context *ctx, const nb_table_spec *latency,
                                 const nb_table_spec *comparison);

/* The ping-pong pair of a paired sweep (ctx->pair, tag NB_TAG_DATA) with send and receive
 * buffers of the options' largest size; nb_paired_release frees them. */
nb_pingpong nb_paired_pair(const nb_context *ctx);
void nb_paired_release(nb_pingpong *pair);

/* Rank 0: writes the rows of one size of a sweep (nb_paired_sweep); `index` counts the sizes
 * from 0 (the smallest size, the one the summary carries). */
typedef void (*nb_paired_size_writer)(const nb_context *ctx, size_t index, size_t size,
                                      nb_paired_measurement *m, void *user);

/* The sweep of polling, anysource and sendmodes, whose variants share one state that differs
 * per size only by its message size: for each of the options' sizes, `*message_size` is set, the
 * variants are measured in rotated rounds (each its own iteration count, at least 5; the
 * options' repetitions as rounds, their time cap and iteration cap), and on rank 0
 * `write_size(ctx, index, size, m, user)` writes that size's rows. Collective over the pair. */
void nb_paired_sweep(const nb_context *ctx, const nb_paired_variant *variants, size_t count,
                     void *state, int *message_size, nb_paired_size_writer write_size,
                     void *user);

/* Rank 0: the summary values `<prefix>_us` (the reported cost) and `<prefix>_ratio` of variant
 * `variant` against `baseline`; a null cost gets an `unreliable` entry under its key. */
void nb_paired_summary_cost(const nb_context *ctx, const char *prefix,
                            const nb_paired_variant *variants, const nb_paired_measurement *m,
                            size_t variant, size_t baseline);

/* The variants of one ping-pong measured side by side (paired.h: polling, anysource, sendmodes)
 * share their options and the layout of their tables: latency per variant (named in the column
 * `key`), and each variant's cost against the baseline. */
#define NB_PAIRED_LATENCY_COLUMNS(key)                                                         \
    NB_KEY("size_bytes", "bytes"), NB_KEY((key), ""), NB_LATENCY_COLUMNS
#define NB_PAIRED_COST_COLUMNS(key)                                                            \
    NB_KEY("size_bytes", "bytes"), NB_KEY((key), ""), NB_KEY("against", ""),                   \
        NB_LOWER("cost_us", "us"), NB_LOWER("cost_ratio", "ratio"),                            \
        NB_KEY("noise_floor_us", "us")

/* Their options (each declares `static const nb_option NAME_options[] = {NB_PAIRED_OPTIONS};`). */
#define NB_PAIRED_OPTIONS NB_USE_SIZES("8", "64K"), NB_USE_REPEATS("11", "10000", "2")

#endif
