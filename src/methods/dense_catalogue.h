/* dense_catalogue.h - what dense.c's methods declare (docs/adding-a-method.md); included once, by
 * dense.c. */
#ifndef NETBENCH_DENSE_CATALOGUE_H
#define NETBENCH_DENSE_CATALOGUE_H

#include "methods.h"
#include "patterns.h"

/* dense's own options (nb_options.settings). */
typedef struct {
    unsigned algorithms;          /* --algorithms: bit (1 << nb_dense_algorithm) per algorithm */
    int phases;                   /* --phases: phases of the random pairwise algorithm */
    long min_iterations;          /* --min-iterations: fewest exchanges in one timed loop */
} dense_settings;

/* Defined in dense.c. */
nb_run_function run_dense;
nb_name_of_function dense_algorithm_name;

static const nb_option dense_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--algorithms", .type = NB_OPTION_ENUM_LIST, NB_SETTING(dense_settings, algorithms),
     .name_of = dense_algorithm_name, .name_count = NB_DENSE_ALGORITHM_COUNT, .value_name = "LIST",
     .default_value = "aapc,pairwise,cumulative,random", .example = "aapc,random",
     .help = "dense algorithms to run, comma separated: aapc (congestion-controlled "
             "all-to-all), pairwise (simple pairwise), cumulative (cumulative pairwise), random "
             "(random pairwise)"},
    {.name = "--phases", .type = NB_OPTION_INT, NB_SETTING(dense_settings, phases), .min = 1,
     .max = 100000, .value_name = "N", .default_value = "16", .example = "16",
     .help = "phases of the random pairwise algorithm (new random pairs in each)"},
    NB_USE(NB_COMMON_SEED, "1"),
    NB_USE(NB_COMMON_VALIDATE, NULL),
    NB_USE_REPEATS("5", "10000", "2"),
    {.name = "--min-iterations", .type = NB_OPTION_LONG,
     NB_SETTING(dense_settings, min_iterations), .min = 1, .max = 1000000, .value_name = "N",
     .default_value = "2", .example = "16",
     .help = "fewest exchanges in one timed loop, however long they take: on a slow link "
             "(1 Gbit: 1 MiB takes 8 ms) --time-cap-ms alone would time one or two, whose "
             "luck (TCP's window, a shaper's bucket) then decides the figure"},
};

NB_TABLE(phases, "phases",
    NB_KEY("algorithm", ""),
    NB_KEY("phase", "count"),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("active_ranks", "count"),
    NB_KEY("iterations", "count"),
    NB_LOWER("time_max_us", "us"),
    NB_HIGHER("bandwidth_min_MBps", "MBps"),
    NB_HIGHER("bandwidth_mean_MBps", "MBps"));

NB_TABLE(algorithms, "algorithms",
    NB_KEY("algorithm", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("phases", "count"),
    NB_HIGHER("bandwidth_first_MBps", "MBps"),
    NB_HIGHER("bandwidth_worst_MBps", "MBps"),
    NB_KEY("worst_phase", "count"),
    NB_HIGHER("worst_to_first", "ratio"),
    NB_HIGHER("bandwidth_mean_MBps", "MBps"));

NB_TABLE(dense_validation, "validation",
    NB_KEY("algorithm", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("messages_checked", "count"),
    NB_LOWER("bytes_wrong", "count"));

NB_TABLES(dense, &phases_table, &algorithms_table, &dense_validation_table);

NB_FIGURES(dense,
    NB_KEY("phases_measured", "count"),
    NB_KEY("validated_messages", "count"),
    NB_LOWER("validation_errors", "count"));

const nb_method nb_method_dense = {
    NB_METHOD(dense, NB_ON_ALL_RANKS, NB_SIZES_POWERS_OF_4),
    .summary = "dense patterns: all-to-all, pairwise, cumulative, random pairs (Altix 3.3)",
    .description =
        "Dense communication, the Altix study section 3.3: every rank communicates, in phases.\n"
        "  aapc        congestion-controlled all-to-all personalized exchange: in phase k\n"
        "              rank r sends to (r+k) mod P and receives from (r-k) mod P, k=1..P-1\n"
        "  pairwise    simple pairwise: in phase k pairs at cyclic distance k exchange full\n"
        "              duplex (the ranks r, r+k, r+2k, ... mod P pair up in order; in a cycle\n"
        "              of odd length the last rank is idle), k=1..P-1\n"
        "  cumulative  cumulative pairwise: the pairs (i, i+P/2) cross the middle of the rank\n"
        "              space; phase j has the first j of them, growing to all P/2\n"
        "  random      random pairwise: a new seeded random pairing in every phase (--phases,\n"
        "              --seed; the same seed gives the same pairings)\n"
        "An exchange is MPI_Irecv + MPI_Isend + MPI_Waitall of one message each way. Each phase\n"
        "is timed alone: after a barrier every rank runs the exchange in a loop (as many\n"
        "iterations as fit in --time-cap-ms, the same count on all ranks) and times it;\n"
        "--repetitions loops, the median per rank. Bandwidth of a rank = bytes it sends per\n"
        "exchange / time per exchange (MB/s = 10^6 B/s); per phase the min and the mean over\n"
        "the active ranks. Per algorithm and size, worst_to_first = the worst phase's mean\n"
        "bandwidth / the first phase's (the study's 'drop in the middle phases').\n"
        "--validate checks every received byte of every phase instead of timing.",
    .settings_size = sizeof(dense_settings),
};

#endif
