/* pairs_catalogue.h - what pairs.c's method declares (docs/adding-a-method.md); included once, by
 * pairs.c. */
#ifndef NETBENCH_PAIRS_CATALOGUE_H
#define NETBENCH_PAIRS_CATALOGUE_H

#include "methods.h"

/* rankdist's own options. */
typedef struct {
    double tolerance;             /* --tolerance: flagged below (1 - tolerance) x the best */
} rankdist_settings;

/* Defined in pairs.c. */
nb_run_function run_rankdist;

/* It declares, in this order: its options, its output tables (docs/output-format.md) and
 * their list, its summary figures, and the method. */

static const nb_option rankdist_options[] = {
    NB_USE(NB_COMMON_MIN_SIZE, "8"),
    NB_USE(NB_COMMON_MAX_SIZE, "1M"),
    {.name = "--tolerance", .type = NB_OPTION_DOUBLE, NB_SETTING(rankdist_settings, tolerance),
     .min = 0.001, .max = 1.0, .value_name = "X", .default_value = "0.2", .example = "0.2",
     .range_note = "0.2 = 20%",
     .help = "a distance whose bandwidth is below (1 - X) x the best distance's is flagged "
             "(0.2 = 20%)"},
    NB_USE_REPEATS("5", "10000", "5"),
};

NB_TABLE(distances, "distances",
    NB_KEY("distance", "count"),
    NB_KEY("rank", ""),
    NB_KEY("host", ""),
    NB_LOWER("latency_us", "us"),
    NB_HIGHER("bandwidth_MBps", "MBps"),
    NB_KEY("flagged", ""));

NB_TABLES(rankdist, &distances_table);

NB_FIGURES(rankdist,
    NB_KEY("distances", "count"),
    NB_LOWER("latency_nearest_us", "us"),
    NB_LOWER("latency_farthest_us", "us"),
    NB_HIGHER("bandwidth_nearest_MBps", "MBps"),
    NB_HIGHER("bandwidth_farthest_MBps", "MBps"),
    NB_LOWER("flagged_distances", "count"));

const nb_method nb_method_rankdist = {
    NB_METHOD(rankdist, NB_ON_ALL_RANKS, NB_SIZES_POWERS_OF_2),
    .summary = "latency and bandwidth from rank 0 to rank d = 1, 2, 4, ... (Altix 3.2)",
    .description =
        "Distance sweep in rank space, the Altix study section 3.2 (Fig. 2 and 3): ping-pong\n"
        "between rank 0 and rank d for d = 1, 2, 4, ... < P, one pair at a time while the\n"
        "others wait without polling: the latency at --min-size bytes (default 8) and the\n"
        "bandwidth at --max-size bytes (default 1M), each the median of --repetitions loops of\n"
        "as many round trips as fit in --time-cap-ms. Where ranks are placed by node, the\n"
        "distances cross the machine's levels (same node, neighbouring nodes, far nodes). A\n"
        "distance whose bandwidth is below (1 - --tolerance) x the best one is flagged.",
    .settings_size = sizeof(rankdist_settings),
};

#endif
