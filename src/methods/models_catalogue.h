/* models_catalogue.h - what models.c's methods declare (docs/adding-a-method.md); included once, by
 * models.c. */
#ifndef NETBENCH_MODELS_CATALOGUE_H
#define NETBENCH_MODELS_CATALOGUE_H

#include "methods.h"
#include "operations.h"

#define MODELS_MAX_RANGES 64
#define MODELS_LIBRARY_LENGTH 256

/* One protocol range of a loggp result (its `ranges` table), as models reads it. */
typedef struct {
    double first_size, last_size;
    double g_us, G_us_per_byte, o_s_us, o_r_us;
} loggp_range;

typedef struct {
    const char *loggp_json;           /* --loggp-json */
    int calls;                        /* --calls */
    /* filled by models_finish from the file */
    double L_us;
    loggp_range ranges[MODELS_MAX_RANGES];
    size_t range_count;
    char file_library[MODELS_LIBRARY_LENGTH];   /* first line of its mpi.library */
    int nulls_taken_as_zero;          /* unresolved parameters of the file read as 0 */
} models_settings;

/* Defined in models.c. */
nb_run_function run_models;
nb_finish_hook models_finish;

static const nb_option models_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--loggp-json", .type = NB_OPTION_STRING, NB_SETTING(models_settings, loggp_json),
     .value_name = "PATH", .example = "loggp.json",
     .default_text = "none: a quick PRTT measurement at 1 byte and the sizes",
     .help = "LogGP parameters from a `netbench loggp --json-file FILE` result of the same "
             "partition and MPI (summary L_us; per protocol range g_us, G_ns_per_byte, "
             "o_s_us, o_r_us)"},
    {.name = "--calls", .type = NB_OPTION_INT, NB_SETTING(models_settings, calls), .min = 3,
     .max = 100000, .value_name = "N", .default_value = "30", .example = "30",
     .help = "individually timed calls per collective, size and repetition"},
    NB_USE_REPEATS("3", "1000", "2"),
};

NB_TABLE(models, "models",
    NB_KEY("collective", ""),
    NB_KEY("algorithm", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("predicted_us", "us"),
    NB_KEY("combine_us", "us"),
    NB_LOWER("measured_median_us", "us"),
    NB_LOWER("measured_spread_us", "us"),
    NB_LOWER("measured_to_predicted", "ratio"));

NB_TABLE(loggp_ranges, "loggp_ranges",
    NB_KEY("range", "count"),
    NB_KEY("first_size_bytes", "bytes"),
    NB_KEY("last_size_bytes", "bytes"),
    NB_KEY("g_us", "us"),
    NB_KEY("G_ns_per_byte", "ns_per_byte"),
    NB_KEY("o_s_us", "us"),
    NB_KEY("o_r_us", "us"));

NB_TABLE(loggp_quick, "loggp_quick",
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("prtt_1_0_us", "us"),
    NB_KEY("one_message_us", "us"),
    NB_KEY("G_all_us", "us"),
    NB_KEY("o_s_us", "us"),
    NB_KEY("o_r_us", "us"));

NB_TABLES(models, &models_table, &nb_operation_timings_table, &loggp_ranges_table, &loggp_quick_table);

NB_FIGURES(models,
    NB_LOWER("L_us", "us"),
    NB_LOWER("g_small_us", "us"),
    NB_LOWER("o_s_small_us", "us"),
    NB_LOWER("o_r_small_us", "us"),
    NB_LOWER("G_large_ns_per_byte", "ns_per_byte"),
    NB_SAME("measured_to_predicted_median", "ratio"),
    NB_LOWER("measured_to_predicted_max", "ratio"),
    NB_KEY("clock_sync_error_max_us", "us"),
    NB_KEY("models_compared", "count"));

const nb_method nb_method_models = {
    NB_METHOD(models, NB_ON_ALL_RANKS, NB_SIZES_POWERS_OF_4),
    .summary = "collectives measured / predicted by LogGP models of their algorithms (Hoefler 4)",
    .description =
        "LogGP models of the common collective algorithms against the same collectives timed\n"
        "call by call (Hoefler, Schneider, Lumsdaine, \"LogGP in Theory and Practice\",\n"
        "section 4: LogGP predicts the time of a collective algorithm; sections 2.2-2.6: the\n"
        "parameters). Every rank takes part.\n"
        "Parameters: --loggp-json FILE reads L (summary L_us) and per protocol range g, G,\n"
        "o_s, o_r from a `netbench loggp` result (the range whose first size is the largest\n"
        "<= m serves a message of m bytes; a null parameter is taken as 0, with a warning).\n"
        "Without it ranks 0 and 1 measure them quickly (the others wait): at 1 byte and each\n"
        "size, PRTT(1,0,s), PRTT(10,0,s), PRTT(10,d_G,s) with d_G = PRTT(1,0,s), and o_r by\n"
        "Kielmann's method, as `netbench loggp` does (the fastest of --repetitions loops of\n"
        "--time-cap-ms: preemption only lengthens a loop, and the timed collectives leave\n"
        "preempted calls out); between the sizes linear interpolation, beyond them the last\n"
        "slope.\n"
        "Terms of a message of m bytes (L = PRTT(1,0,1)/2 holds o_s + o_r, eq. (1), 2.5):\n"
        "  T(m) = L + (m - 1) G              one message, from the send to received\n"
        "                                    (quick: PRTT(1,0,m) / 2)\n"
        "  S(m) = max(o_s, g + (m - 1) G)    between two sends of one rank (G_all, eq. (5))\n"
        "  C(m) = MPI_Reduce_local of m bytes of MPI_FLOAT (measured on rank 0): the\n"
        "         combining step, which LogGP leaves out\n"
        "Models, P ranks, root 0 (the sizes as `netbench collectives`):\n"
        "  bcast     binomial tree: a rank with the data at t sends to its children, farthest\n"
        "            first, the j-th at t + j S(m), which has it at + T(m); the latest rank.\n"
        "            (Closed forms are hard, section 4; this is its recurrence.) P = 2: T(m)\n"
        "  reduce    binomial tree, mirrored: a parent takes its children's results nearest\n"
        "            first, each arriving T(m) after the child was done, at least o_r after\n"
        "            the previous receive, plus C(m).  P = 2: T(m) + C(m)\n"
        "  allreduce recursive doubling: log2(P') (T(m) + C(m)), P' the largest power of 2\n"
        "            <= P; P not a power of 2: + 2 T(m) + C(m) (the extra ranks in and out)\n"
        "  allgather m bytes per rank: recursive doubling sum_{k<log2 P} T(2^k m) for P a power\n"
        "            of 2, else the ring (P - 1) T(m)\n"
        "  alltoall  m bytes per peer: pairwise exchange (P - 1) T(m)\n"
        "Timing: each call alone in a time window against clocks synchronised to rank 0 (the\n"
        "approach of `netbench collectives`: window = max(2 x estimated call + 2 x clock\n"
        "error, 5 us); late calls left out; more than 10% late doubles the window, at most 3\n"
        "times); --calls calls per block, --repetitions rounds that interleave the\n"
        "collectives; the median of the rounds' medians and their spread (max - min); a\n"
        "round with fewer than half of its calls valid is left out, and a figure with fewer\n"
        "than 2 such rounds, or than half of the rounds, is unreliable.\n"
        "measured_to_predicted = measured median / predicted: 1 is the model exactly; above 1\n"
        "the library is slower than the algorithm on this network (another algorithm,\n"
        "copies, synchronisation); below 1 it beats the model (e.g. shared memory\n"
        "collectives). Default sizes: 8 B to 1 MiB in powers of 4.",
    .settings_size = sizeof(models_settings),
    .finish = models_finish,
    .buffer_bytes = nb_buffer_bytes_after_mpi,
};

#endif
