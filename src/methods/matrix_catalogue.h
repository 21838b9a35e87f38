/* matrix_catalogue.h - what matrix.c's method declares (docs/adding-a-method.md); included
 * once, by matrix.c. */
#ifndef NETBENCH_MATRIX_CATALOGUE_H
#define NETBENCH_MATRIX_CATALOGUE_H

#include "methods.h"

/* Largest --print-schedule N (a dry run: no MPI, N x rounds lines of output). */
#define MATRIX_MAX_SCHEDULE_RANKS 100000
/* The default bound on the suspects re-tested alone, one at a time: 4 a rank, at least 64 (a
 * bad node's N-1 pairs all fit; a congested tapered tree's hundreds do not, and a sample of them
 * tells congestion from a fault as well). */
#define MATRIX_RETESTS_PER_RANK 4
#define MATRIX_MIN_RETESTS 64

/* matrix's own options (nb_options.settings). The bandwidth thresholds come from the map's own
 * noise and the fault it looks for (pairmap.h); ClusterKit's fixed fraction of the best pair
 * (NVIDIA's fabric checker: 0.93) on request. Latency is flagged only well above the best
 * (2.1 x, ClusterKit's): small-message latency varies with placement (switch hops) by tens of
 * per cent, never by 2 x. */
typedef struct {
    int schedule;                 /* --schedule: SCHEDULE_* */
    double bandwidth_fraction;    /* --bandwidth-fraction: suspect below this share of the best;
                                     0: the thresholds from the noise */
    double smallest_fault;        /* --smallest-fault: the slowdown of a link the map looks for */
    double latency_factor;        /* --latency-factor: suspect above this multiple of the lowest */
    int rounds;                   /* --rounds: tournament rounds to measure; 0 = all (full map) */
    int max_retests;              /* --max-retests: suspects re-tested alone at most; 0 = the
                                     default, MATRIX_RETESTS_PER_RANK a rank, at least
                                     MATRIX_MIN_RETESTS */
    double progress_every_s;      /* --progress-every: seconds between progress lines */
    int print_schedule_ranks;     /* --print-schedule N: print the schedule, no MPI; 0 = off */
    const char *path_classes;     /* --path-classes PATH: each host's switches; NULL = none */
    int local_rounds;             /* --local-rounds: a quick map's rounds inside the switches */
} matrix_settings;

/* Defined in matrix.c. */
nb_run_function run_matrix;
nb_without_mpi_hook matrix_without_mpi;
nb_name_of_function matrix_schedule_name;
/* Defined in matrix_classes.c: --path-classes names a file this process can read. */
const char *matrix_check_path_classes(const void *value);

/* It declares, in this order: its options, its output tables (docs/output-format.md) and
 * their list, its summary figures, and the method. */

static const nb_option matrix_options[] = {
    NB_USE(NB_COMMON_MIN_SIZE, "8"),
    NB_USE(NB_COMMON_MAX_SIZE, "1M"),
    NB_USE(NB_COMMON_SEED, "1"),
    {.name = "--schedule", .type = NB_OPTION_ENUM, NB_SETTING(matrix_settings, schedule),
     .name_of = matrix_schedule_name, .name_count = 2, .value_name = "NAME",
     .default_value = "concurrent", .example = "concurrent",
     .help = "concurrent: the disjoint pairs of one round of a round-robin tournament at once, "
             "round after round (N-1 rounds; N for an odd N); sequential: one pair at a time, "
             "the others waiting (isolates every pair; N (N-1) / 2 steps)"},
    {.name = "--bandwidth-fraction", .type = NB_OPTION_DOUBLE,
     NB_SETTING(matrix_settings, bandwidth_fraction), .min = 0.01, .max = 1.0, .value_name = "F",
     .default_text = "from the noise", .example = "0.93",
     .range_note = "0.93 = 93 % of the best pair", .excludes = "--smallest-fault",
     .help = "a fixed rule instead of the noise's: a pair whose bandwidth is below F x the best "
             "pair's of this run is suspect, and bad when alone it still is (ClusterKit: 0.93)"},
    {.name = "--smallest-fault", .type = NB_OPTION_DOUBLE,
     NB_SETTING(matrix_settings, smallest_fault), .min = 0.01, .max = 0.9, .value_name = "F",
     .default_value = "0.2", .example = "0.25", .range_note = "0.2 = a link 20 % slow",
     .help = "the slowdown of a link the map looks for: thresholds at half of it or 3 noise "
             "sigmas, whichever is more; the run warns when its noise cannot resolve it"},
    {.name = "--latency-factor", .type = NB_OPTION_DOUBLE,
     NB_SETTING(matrix_settings, latency_factor), .min = 1.0, .max = 1000.0, .value_name = "X",
     .default_value = "2.1", .example = "2.1", .range_note = "2.1 = 2.1 x the lowest pair",
     .help = "a pair whose latency is above X x the lowest pair's of this run is suspect"},
    {.name = "--rounds", .type = NB_OPTION_INT, NB_SETTING(matrix_settings, rounds), .min = 1,
     .max = 1000000, .value_name = "K", .default_text = "every round, the full map",
     .example = "4",
     .help = "quick mode: only K rounds of the tournament, drawn with --seed (the same seed, "
             "the same pairs); the nightly sample"},
    {.name = "--max-retests", .type = NB_OPTION_INT, NB_SETTING(matrix_settings, max_retests),
     .min = 1, .max = 100000000, .value_name = "N",
     .default_text = "4 a rank, at least 64", .example = "256",
     .help = "re-test at most N suspect pairs alone, drawn in turn over the ranks, each rank's "
             "slowest first; the others stay suspect, undecided (summary undecided_pairs, a "
             "warning): alone one at a time, the re-tests of N suspects grow with N"},
    {.name = "--progress-every", .type = NB_OPTION_DOUBLE,
     NB_SETTING(matrix_settings, progress_every_s), .min = 0.0, .max = 86400.0,
     .value_name = "SECONDS", .default_value = "60", .example = "60",
     .help = "a progress line on stderr (round r of R, elapsed, estimate) at most every "
             "SECONDS; 0: after every round"},
    {.name = "--path-classes", .type = NB_OPTION_STRING,
     NB_SETTING(matrix_settings, path_classes), .value_name = "PATH",
     .check = matrix_check_path_classes,
     .default_text = "none: every pair against the whole map", .example = "path-classes.txt",
     .help = "a file of one line a host: its name, then its switches from its leaf up, and "
             "a line `link: A B` for each link joining two switches directly, a dragonfly's "
             "global links (fabricsuite writes it from the switch tree); a pair is then also "
             "suspect below the best of "
             "its path class (the pairs whose hosts meet as far up the tree) by the same "
             "threshold: on a tapered tree or a dragonfly the pairs across the core are slower "
             "when healthy, and a slow node link shows only among its leaf's pairs"},
    {.name = "--local-rounds", .type = NB_OPTION_FLAG,
     NB_SETTING(matrix_settings, local_rounds),
     .help = "with --rounds K and --path-classes: one more round inside the switches of each "
             "level below the top (every node with a partner under its own leaf; a "
             "dragonfly's router and group too), its pairs not measured already: a quick map's "
             "tournament rounds pair nearly every node across the core, where a tapered "
             "tree's congestion hides a slow node link"},
    {.name = "--print-schedule", .type = NB_OPTION_INT,
     NB_SETTING(matrix_settings, print_schedule_ranks), .min = 2,
     .max = MATRIX_MAX_SCHEDULE_RANKS, .value_name = "N", .default_text = "off", .example = "6",
     .help = "print the rounds (with --rounds/--seed: the chosen ones) for N ranks and exit; "
             "needs no MPI (--json: as JSON)"},
    NB_USE_REPEATS("5", "10000", "5"),
};

NB_TABLE(pairs, "pairs",
    NB_KEY("rank_a", ""),
    NB_KEY("rank_b", ""),
    NB_KEY("host_a", ""),
    NB_KEY("host_b", ""),
    NB_LOWER("latency_us", "us"),
    NB_HIGHER("bandwidth_MBps", "MBps"),
    NB_KEY("flagged", ""),
    NB_KEY("round", "count"),
    NB_KEY("suspect", ""),
    NB_LOWER("retest_latency_us", "us"),
    NB_HIGHER("retest_bandwidth_MBps", "MBps"));

NB_TABLE(bad_nodes, "bad_nodes",
    NB_KEY("rank", ""),
    NB_KEY("host", ""),
    NB_KEY("pairs", "count"),
    NB_LOWER("bad_pairs", "count"));

NB_TABLES(matrix, &pairs_table, &bad_nodes_table);

NB_FIGURES(matrix,
    NB_KEY("pairs", "pairs"),
    NB_KEY("pairs_total", "pairs"),
    NB_KEY("rounds", "count"),
    NB_KEY("rounds_total", "count"),
    NB_LOWER("latency_median_us", "us"),
    NB_LOWER("latency_max_us", "us"),
    NB_HIGHER("bandwidth_median_MBps", "MBps"),
    NB_HIGHER("bandwidth_min_MBps", "MBps"),
    NB_LOWER("flagged_pairs", "pairs"),
    NB_KEY("bandwidth_best_MBps", "MBps"),
    NB_KEY("bandwidth_floor_MBps", "MBps"),
    NB_KEY("latency_lowest_us", "us"),
    NB_KEY("latency_ceiling_us", "us"),
    NB_LOWER("suspect_pairs", "pairs"),
    NB_LOWER("bad_pairs", "pairs"),
    NB_KEY("cleared_pairs", "pairs"),
    NB_KEY("unconfirmed_pairs", "pairs"),
    NB_KEY("undecided_pairs", "pairs"),
    NB_LOWER("bad_nodes", "nodes"),
    NB_KEY("measure_s", "s"),
    NB_KEY("round_mean_s", "s"),
    NB_KEY("pair_mean_s", "s"),
    NB_KEY("retest_s", "s"),
    NB_KEY("retest_pair_mean_s", "s"),
    NB_KEY("bandwidth_noise", "ratio"),
    NB_KEY("suspect_slowdown", "ratio"),
    NB_KEY("reference_pairs", "pairs"),
    NB_KEY("slow_reference_pairs", "pairs"),
    NB_KEY("reference_alone_MBps", "MBps"),
    NB_KEY("alone_noise", "ratio"),
    NB_KEY("bad_slowdown", "ratio"),
    NB_LOWER("resolvable_slowdown", "ratio"));

const nb_method nb_method_matrix = {
    NB_METHOD(matrix, NB_ON_ALL_RANKS, NB_SIZES_POWERS_OF_2),
    .summary = "all-pairs latency and bandwidth, an N x N map to find a bad link or node",
    .description =
        "All-pairs ping-pong: for every pair of ranks (i, j) the blocking ping-pong latency at\n"
        "--min-size bytes (default 8) and the bandwidth at --max-size bytes (default 1M), each\n"
        "the median of --repetitions loops of as many round trips as fit in --time-cap-ms. With\n"
        "one rank per node the table is the node-to-node map.\n"
        "Schedule (--schedule): concurrent (default) measures the disjoint pairs of one round of\n"
        "a round-robin tournament (circle method) at the same time, latency then bandwidth,\n"
        "each phase between barriers: N-1 rounds for an even N, N for an odd N (one rank sits\n"
        "each round out), every pair exactly once. sequential measures one pair at a time while\n"
        "the others wait without polling: N (N-1) / 2 steps. A step costs about\n"
        "2 x --repetitions x --time-cap-ms plus the probes (about 60 ms at the defaults):\n"
        "1000 nodes take about 1 minute concurrently, 8 hours sequentially.\n"
        "Verdict, relative to this run and its own noise: the map looks for a link\n"
        "--smallest-fault slow (0.2). A pair's noise is the robust sd of its bandwidth over\n"
        "its repetitions; the map's, the median over the pairs. A pair is suspect when its\n"
        "bandwidth is below the best pair's (the 90th percentile) by more than half the fault\n"
        "or 3 x the map's noise, whichever is more, or its latency above --latency-factor x\n"
        "the lowest pair's (2.1: placement moves latency by tens of per cent, never 2 x).\n"
        "With --path-classes PATH (each host's switches from its leaf up) a pair is also\n"
        "suspect below the best of its path class (pairs whose hosts meet as far up the\n"
        "tree) by the same threshold, and the re-tests take first the pairs furthest below\n"
        "their class's best times the pairs of their round across the same declared link\n"
        "(a dragonfly's global link: congestion, not a fault, when shared): on a tapered\n"
        "tree or a dragonfly the healthy pairs across the core are slower, and a slow node\n"
        "link shows only among its leaf's pairs.\n"
        "Every suspect pair is then measured again ALONE (all other ranks wait), each between\n"
        "two re-tests of healthy pairs (up to 3, those nearest the healthy median, in turn),\n"
        "the references: each one's level is its median alone; a reference below the best one\n"
        "or the 90th percentile of all re-tests by more than half the fault or 3 x the\n"
        "drift (below) is left out\n"
        "(slow_reference_pairs; with none left, that percentile), and each re-test of a\n"
        "reference over its level tells the machine's state at that moment. A suspect is bad\n"
        "(table pairs: flagged) when alone it is below the references' level x the state\n"
        "around it by more than half the fault or 3 x the noise of measuring alone (the\n"
        "largest of the re-tests' own spread, the state's drift from one re-test to the next:\n"
        "a loaded machine's phases, and the kept references' spread among them), or its\n"
        "latency still fails, and once more alone between the references it is again (one\n"
        "slow phase rarely hits one pair twice: unconfirmed_pairs, cleared); otherwise it\n"
        "was congestion. A node all of whose pairs are bad\n"
        "is named unless, in the map, they lie within the noise of the other pairs.\n"
        "resolvable_slowdown is the smallest slowdown of a link that clears both\n"
        "thresholds by 3 x its noise; above --smallest-fault the run warns that it could not\n"
        "resolve the fault it looks for. --bandwidth-fraction F instead applies ClusterKit's\n"
        "fixed rule (suspect below F x the best pair, bad when alone, twice, still below it). A rank\n"
        "whose every measured pair (at least 2) is bad is a bad node.\n"
        "Quick mode (nightly): --rounds K measures K rounds drawn with --seed; with\n"
        "--local-rounds and --path-classes also one round inside the switches of each level\n"
        "below the top (every node with a partner under its own leaf; a dragonfly's router and\n"
        "group too), its pairs not measured already (parameter local_rounds). Progress goes to\n"
        "stderr. With --json-file PATH the N x N maps are written beside it:\n"
        "matrix_bandwidth_MBps.csv, matrix_latency_us.csv, matrix_maps.json.",
    .settings_size = sizeof(matrix_settings),
    .without_mpi = matrix_without_mpi,
};

#endif
