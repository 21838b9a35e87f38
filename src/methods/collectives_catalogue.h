/* collectives_catalogue.h - what collectives.c's methods declare (docs/adding-a-method.md); included once, by
 * collectives.c. */
#ifndef NETBENCH_COLLECTIVES_CATALOGUE_H
#define NETBENCH_COLLECTIVES_CATALOGUE_H

#include "methods.h"

/* The collectives of the method (names as in --collectives). */
typedef enum {
    NB_COLL_BARRIER,
    NB_COLL_BCAST,
    NB_COLL_REDUCE,
    NB_COLL_ALLREDUCE,
    NB_COLL_ALLTOALL,
    NB_COLL_ALLTOALLV,
    NB_COLL_GATHER,
    NB_COLL_SCATTER,
    NB_COLL_ALLGATHER,
    NB_COLL_COUNT,
} nb_collective;

/* collectives' own options (nb_options.settings). */
typedef struct {
    unsigned collectives;         /* --collectives: bit (1 << nb_collective) per collective */
    int calls;                    /* --calls: individually timed calls per collective and size */
} collectives_settings;

/* Defined in collectives.c. */
nb_run_function run_collectives;
nb_name_of_function collective_name_of;

static const nb_option collectives_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--collectives", .type = NB_OPTION_ENUM_LIST,
     NB_SETTING(collectives_settings, collectives), .name_of = collective_name_of,
     .name_count = NB_COLL_COUNT, .value_name = "LIST",
     .default_value = "barrier,bcast,reduce,allreduce,alltoall,alltoallv,gather,scatter,"
                      "allgather",
     .example = "barrier,allreduce",
     .help = "collectives to time, comma separated: barrier, bcast, reduce, allreduce, "
             "alltoall, alltoallv, gather, scatter, allgather"},
    {.name = "--calls", .type = NB_OPTION_INT, NB_SETTING(collectives_settings, calls),
     .min = 3, .max = 100000, .value_name = "N", .default_value = "100", .example = "100",
     .help = "individually timed calls per collective and size"},
    NB_USE(NB_COMMON_VALIDATE, NULL),
    NB_USE(NB_COMMON_REPETITIONS, "1"),
};

NB_TABLE(collectives, "collectives",
    NB_KEY("collective", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("calls_valid", "count"),
    NB_LOWER("late_calls", "count"),
    NB_KEY("window_us", "us"),
    NB_LOWER("time_min_us", "us"),
    NB_LOWER("time_q25_us", "us"),
    NB_LOWER("time_median_us", "us"),
    NB_LOWER("time_q75_us", "us"),
    NB_LOWER("time_max_us", "us"),
    NB_LOWER("loop_average_us", "us"),
    NB_KEY("loop_to_individual", "ratio"));

NB_TABLE(collectives_validation, "validation",
    NB_KEY("collective", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("values_checked", "count"),
    NB_LOWER("errors", "count"));

NB_TABLES(collectives, &collectives_table, &collectives_validation_table);

NB_FIGURES(collectives,
    NB_KEY("validated_calls", "count"),
    NB_LOWER("validation_errors", "count"),
    NB_KEY("clock_sync_error_max_us", "us"),
    NB_KEY("collectives_measured", "count"),
    NB_KEY("loop_to_individual_median", "ratio"));

const nb_method nb_method_collectives = {
    NB_METHOD(collectives, NB_ON_ALL_RANKS, NB_SIZES_POWERS_OF_2),
    .summary = "collectives, each call timed alone in a synchronised time window (Hoefler 4; "
               "Altix 3.2)",
    .description =
        "MPI collectives on all ranks (Altix study section 3.2: barrier, reduce, alltoall and\n"
        "more), each call timed alone (Hoefler et al. section 4). Timing n back-to-back calls\n"
        "and dividing by n underestimates a collective: consecutive calls overlap (a rank that\n"
        "is done early starts the next call while others still work), and rotating the root\n"
        "does not cure it. Here rank 0 first estimates every rank's clock offset with 30\n"
        "ping-pongs (the shortest round trip gives the offset; half of it bounds the error),\n"
        "again before every (collective, size) block. Call i then starts at T0 + i * window on\n"
        "rank 0's clock: every rank spins until that moment on its own clock, calls the\n"
        "collective and records its end. A call's time is the latest end over the ranks minus\n"
        "the scheduled start (output parameter synchronisation = window). window = max(2 x\n"
        "estimated call time (max over ranks) + 2 x clock error bound, 5 us). A rank that\n"
        "reaches a start already past is late: that call is left out (late_calls); with more\n"
        "than 10% late the window is doubled and the block redone (at most 3 times; the\n"
        "attempt with the fewest late calls is kept); a row with more than half of its calls\n"
        "late is reported unreliable.\n"
        "Beside min/quartiles/median/max over the valid calls, the table gives the naive\n"
        "figure most suites report: --calls back-to-back calls / calls (max over ranks,\n"
        "median of --repetitions loops) and loop_to_individual = that / individual median.\n"
        "Each block is warmed up by a few untimed calls.\n"
        "Sizes: bcast s bytes; reduce and allreduce s bytes of MPI_FLOAT summed (s/4 values,\n"
        "at least 1); alltoall and alltoallv s bytes per peer; gather, scatter and allgather\n"
        "s bytes per rank; root 0; barrier has no size (one row, size_bytes 0).\n"
        "--validate times nothing: each collective and size runs once on known data (small\n"
        "integer floats for the sums, which add exactly) and every rank checks every value.",
    .settings_size = sizeof(collectives_settings),
    .buffer_bytes = nb_buffer_bytes_after_mpi,
};

#endif
