/* consistency_catalogue.h - what consistency.c's methods declare (docs/adding-a-method.md); included once, by
 * consistency.c. */
#ifndef NETBENCH_CONSISTENCY_CATALOGUE_H
#define NETBENCH_CONSISTENCY_CATALOGUE_H

#include "methods.h"
#include "operations.h"

#define CONS_RULE_COUNT 5

typedef struct {
    unsigned rules;            /* --rules: bit per rule */
    int calls;                 /* --calls */
    double margin;             /* --margin: a fraction of the right side beyond the noise */
} consistency_settings;

/* Defined in consistency.c. */
nb_run_function run_consistency;
nb_finish_hook consistency_finish;
nb_name_of_function consistency_rule_name_of;

static const nb_option consistency_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--rules", .type = NB_OPTION_ENUM_LIST, NB_SETTING(consistency_settings, rules),
     .name_of = consistency_rule_name_of, .name_count = CONS_RULE_COUNT, .value_name = "LIST",
     .default_value = "allreduce_le_reduce_bcast,reduce_le_allreduce,"
                      "bcast_le_scatter_allgather,allgather_le_gather_bcast,gather_le_allgather",
     .example = "reduce_le_allreduce",
     .help = "rules to check, comma separated (see above)"},
    {.name = "--calls", .type = NB_OPTION_INT, NB_SETTING(consistency_settings, calls),
     .min = 3, .max = 100000, .value_name = "N", .default_value = "20", .example = "20",
     .help = "individually timed calls per operation, size and repetition"},
    {.name = "--margin", .type = NB_OPTION_DOUBLE, NB_SETTING(consistency_settings, margin),
     .min = 0.0, .max = 10.0, .value_name = "X", .default_value = "0", .example = "0.5",
     .range_note = "0.5 = 50%",
     .help = "a rule is violated only when its left side exceeds the right by this fraction of "
             "the right side beyond the noise"},
    NB_USE(NB_COMMON_REPETITIONS, "5"),
};

NB_TABLE(rules, "rules",
    NB_KEY("rule", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("left", ""),
    NB_KEY("right", ""),
    NB_KEY("left_us", "us"),
    NB_KEY("right_us", "us"),
    NB_LOWER("left_to_right", "ratio"),
    NB_KEY("noise_us", "us"),
    NB_LOWER("excess_us", "us"),
    NB_LOWER("violations", "count"));

NB_TABLES(consistency, &rules_table, &nb_operation_timings_table);

NB_FIGURES(consistency,
    NB_LOWER("violations_allreduce_le_reduce_bcast", "count"),
    NB_LOWER("violations_reduce_le_allreduce", "count"),
    NB_LOWER("violations_bcast_le_scatter_allgather", "count"),
    NB_LOWER("violations_allgather_le_gather_bcast", "count"),
    NB_LOWER("violations_gather_le_allgather", "count"),
    NB_LOWER("violations", "count"),
    NB_KEY("rule_sizes_checked", "count"),
    NB_KEY("rule_sizes_not_judged", "count"),
    NB_KEY("clock_sync_error_max_us", "us"));

const nb_method nb_method_consistency = {
    NB_METHOD(consistency, NB_ON_ALL_RANKS, NB_SIZES_POWERS_OF_4),
    .summary = "self-consistency rules of MPI collectives, violations beyond the noise (Traff et al.)",
    .description =
        "Self-consistent performance guidelines for MPI collectives (Traff, Gropp, Thakur,\n"
        "\"Self-consistent MPI performance guidelines\", IEEE TPDS 2010): a collective should\n"
        "be no slower than a mock-up of it made of other collectives, nor than a more general\n"
        "collective. n is the whole data size: MPI_Bcast of n bytes, MPI_Reduce and\n"
        "MPI_Allreduce of n bytes of MPI_FLOAT summed, MPI_Gather, MPI_Scatter and\n"
        "MPI_Allgather of n / P bytes per rank (n rounded up to a multiple of P); root 0.\n"
        "Rules (--rules):\n"
        "  allreduce_le_reduce_bcast   MPI_Allreduce(n) <= MPI_Reduce(n) + MPI_Bcast(n)\n"
        "  reduce_le_allreduce         MPI_Reduce(n)    <= MPI_Allreduce(n)\n"
        "  bcast_le_scatter_allgather  MPI_Bcast(n)     <= MPI_Scatter(n) + MPI_Allgather(n)\n"
        "  allgather_le_gather_bcast   MPI_Allgather(n) <= MPI_Gather(n) + MPI_Bcast(n)\n"
        "  gather_le_allgather         MPI_Gather(n)    <= MPI_Allgather(n)\n"
        "A mock-up (the right side of a '+' rule) is timed as one operation: its two calls\n"
        "back to back, as a user would write it. Every operation is timed call by call in a\n"
        "time window against clocks synchronised to rank 0 (the approach of `netbench\n"
        "collectives`), --calls calls per block; --repetitions rounds interleave all\n"
        "operations of a size, so that a slow phase of the machine spreads over both sides.\n"
        "A side's time is the median of the rounds' medians, its spread their max - min (a\n"
        "round with fewer than half of its calls valid is left out).\n"
        "noise = max((spread left + spread right) / 2, 2 x MPI_Wtick); a rule is violated\n"
        "at a size when left - right > noise + --margin x right (a healthy library's sides\n"
        "move between sessions by more than one run's noise shows: a margin keeps such a rule\n"
        "from flipping; 0, the default, is the guideline as written); excess_us =\n"
        "max(left - right - noise - margin x right, 0) (> 0 only for a violation),\n"
        "left_to_right = left / right. A side needs at least 2 rounds, and half of them, with half of\n"
        "their calls valid; otherwise the rule is not judged at that size (violations null,\n"
        "an unreliable entry). A violation is a finding about the MPI library (its choice of\n"
        "algorithm at that size), not an error of the measurement; each one is also a\n"
        "warning naming the rule, the size and both times. Needs no reference: the count of\n"
        "violations should be 0 on any system. Default sizes: 8 B to 1 MiB in powers of 4.",
    .settings_size = sizeof(consistency_settings),
    .finish = consistency_finish,
    .buffer_bytes = nb_buffer_bytes_after_mpi,
};

#endif
