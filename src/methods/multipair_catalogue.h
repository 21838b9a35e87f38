/* multipair_catalogue.h - what multipair.c's methods declare (docs/adding-a-method.md); included once, by
 * multipair.c. */
#ifndef NETBENCH_MULTIPAIR_CATALOGUE_H
#define NETBENCH_MULTIPAIR_CATALOGUE_H

#include "methods.h"

/* The columns of connections' and loaded's latency tables after their key columns. */
#define LATENCY_COLUMNS                                                                        \
    NB_KEY("size_bytes", "bytes"), NB_LATENCY_COLUMNS, NB_LOWER("cost_us", "us"),                \
        NB_KEY("noise_floor_us", "us")
/* Largest --window of loaded (messages in flight per pair). */
#define MP_MAX_WINDOW 1024

typedef struct {
    size_t small_size;            /* --small-size */
    size_t large_size;            /* --large-size */
    int setup_round_trips;        /* --setup-round-trips: per size and new peer */
} connections_settings;

typedef struct {
    size_t latency_size;          /* --latency-size */
    size_t bandwidth_size;        /* --bandwidth-size: the streams of (a), the bandwidth of (b) */
    size_t rate_size;             /* --rate-size */
    int window;                   /* --window */
} loaded_settings;

/* Defined in multipair.c. */
nb_run_function run_connections, run_loaded;
nb_finish_hook connections_finish, loaded_finish;
nb_buffer_bytes_hook loaded_buffer_bytes;

static const nb_option connections_options[] = {
    {.name = "--small-size", .type = NB_OPTION_SIZE, NB_SETTING(connections_settings, small_size),
     .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .default_value = "8",
     .example = "8", .help = "the small message size (latency-bound)"},
    {.name = "--large-size", .type = NB_OPTION_SIZE, NB_SETTING(connections_settings, large_size),
     .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .default_value = "64K",
     .example = "64K",
     .help = "the larger message size (beyond the eager limit of most transports)"},
    {.name = "--setup-round-trips", .type = NB_OPTION_INT,
     NB_SETTING(connections_settings, setup_round_trips), .min = 1, .max = 1000,
     .value_name = "N", .default_value = "2", .example = "2",
     .help = "round trips of each size rank 0 makes with each new peer to open the connection"},
    NB_USE_REPEATS("5", "10000", "5"),
};

NB_TABLE(connections, "connections", NB_KEY("peers", "count"), LATENCY_COLUMNS);

NB_TABLES(connections, &connections_table);

NB_FIGURES(connections,
    NB_KEY("max_k", "count"),
    NB_KEY("small_size_bytes", "bytes"),
    NB_KEY("large_size_bytes", "bytes"),
    NB_LOWER("latency_small_k0_us", "us"),
    NB_LOWER("latency_small_max_k_us", "us"),
    NB_LOWER("latency_large_k0_us", "us"),
    NB_LOWER("latency_large_max_k_us", "us"),
    NB_LOWER("cost_small_max_k_us", "us"),
    NB_LOWER("cost_large_max_k_us", "us"),
    NB_KEY("noise_floor_small_max_k_us", "us"),
    NB_KEY("noise_floor_large_max_k_us", "us"));

const nb_method nb_method_connections = {
    NB_METHOD(connections, NB_ON_ALL_RANKS, NB_SIZES_NONE),
    .summary = "latency of ranks 0-1 with k other connections open on rank 0 (Kutlug 3.2.5)",
    .description =
        "Latency with multiple connections, Kutlug section 3.2.5 and 4.2.4: a blocking\n"
        "ping-pong between ranks 0 and 1 (latency = round trip / 2) after rank 0 has exchanged\n"
        "messages with k other peers, ranks 2 .. k+1, for k = 0 (the baseline), 1, 2, 4, ...\n"
        "up to P-2 (every rank of the job). 'Since MPI does not provide explicit primitives\n"
        "for establishing communications, we make sure that the connections are established\n"
        "by sending messages to different nodes': before the measurement at k, rank 0 makes\n"
        "--setup-round-trips round trips of both sizes with every peer new at this k. The\n"
        "peers then wait at a barrier without busy polling: what is measured is the cost of\n"
        "the open connections in rank 0's communication subsystem, not contention. Sizes:\n"
        "--small-size and --large-size; each latency is the median of --repetitions loops of\n"
        "as many round trips as fit in --time-cap-ms. cost_us = latency at k - latency at\n"
        "k = 0 (same size); noise_floor_us = the larger spread (max - min over the\n"
        "repetitions) of the two latencies; a cost below 0 but within it is noise and\n"
        "reported as 0, one below -noise_floor_us is null and flagged unreliable (a\n"
        "disturbed baseline). With 2 ranks only k = 0 exists: the summary costs are\n"
        "null and flagged. Connection-less transports (shared memory) show no cost; over a\n"
        "network run one rank per node (mpirun --map-by node, srun --ntasks-per-node=1).",
    .settings_size = sizeof(connections_settings),
    .finish = connections_finish,
};

static const nb_option loaded_options[] = {
    {.name = "--latency-size", .type = NB_OPTION_SIZE, NB_SETTING(loaded_settings, latency_size),
     .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .default_value = "8",
     .example = "8", .help = "ping-pong size of pair 0 in (a)"},
    {.name = "--bandwidth-size", .type = NB_OPTION_SIZE,
     NB_SETTING(loaded_settings, bandwidth_size), .min = 1, .max = (double)NB_MAX_MESSAGE_SIZE,
     .value_name = "SIZE", .default_value = "64K", .example = "64K",
     .help = "message size of the loading streams in (a) and of the aggregate bandwidth in (b)"},
    {.name = "--rate-size", .type = NB_OPTION_SIZE, NB_SETTING(loaded_settings, rate_size),
     .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .default_value = "8",
     .example = "8", .help = "message size of the message rate in (b)"},
    {.name = "--window", .type = NB_OPTION_INT, NB_SETTING(loaded_settings, window), .min = 1,
     .max = MP_MAX_WINDOW, .value_name = "N", .default_value = "64", .example = "64",
     .help = "non-blocking messages in flight per window (then the receiver acknowledges)"},
    NB_USE_REPEATS("5", "100000", "5"),
};

NB_TABLE(loaded_latency, "loaded_latency",
    NB_KEY("loading_pairs", "count"),
    LATENCY_COLUMNS,
    NB_KEY("load_bandwidth_MBps", "MBps"));

NB_TABLE(aggregate, "aggregate",
    NB_KEY("pairs", "count"),
    NB_KEY("bandwidth_windows", "count"),
    NB_HIGHER("aggregate_bandwidth_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_pair_min_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_pair_mean_MBps", "MBps"),
    NB_KEY("rate_windows", "count"),
    NB_HIGHER("message_rate_per_s", "per_s"),
    NB_HIGHER("message_rate_per_pair_min_per_s", "per_s"));

NB_TABLES(loaded, &loaded_latency_table, &aggregate_table);

NB_FIGURES(loaded,
    NB_KEY("pairs", "pairs"),
    NB_KEY("loading_pairs_max", "pairs"),
    NB_LOWER("loaded_latency_k0_us", "us"),
    NB_LOWER("loaded_latency_max_k_us", "us"),
    NB_LOWER("loaded_latency_cost_max_k_us", "us"),
    NB_KEY("loaded_latency_noise_floor_max_k_us", "us"),
    NB_HIGHER("aggregate_bandwidth_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_pair_min_MBps", "MBps"),
    NB_HIGHER("aggregate_bandwidth_one_pair_MBps", "MBps"),
    NB_HIGHER("aggregate_bandwidth_scaling", "ratio"),
    NB_HIGHER("message_rate_per_s", "per_s"),
    NB_HIGHER("message_rate_one_pair_per_s", "per_s"));

const nb_method nb_method_loaded = {
    NB_METHOD(loaded, NB_ON_ALL_RANKS, NB_SIZES_NONE),
    .summary = "latency under load, aggregate bandwidth, message rate of pairs (Zamani 5.1-5.2)",
    .description =
        "Pairs (0,1), (2,3), ... (an odd last rank only waits), Zamani et al. sections 5.1\n"
        "(Fig. 6, latency under load) and 5.2 (Fig. 9, aggregate bandwidth):\n"
        "(a) ping-pong latency (round trip / 2, --latency-size) of pair 0 while k other pairs\n"
        "    stream, k = 0 .. pairs-1: each loading pair sends windows of --bandwidth-size\n"
        "    messages until pair 0 has measured (rank 0 then tells them to stop); the other\n"
        "    pairs wait without busy polling. cost_us = latency at k - latency at k = 0;\n"
        "    noise_floor_us = the larger spread (max - min over the repetitions) of the two;\n"
        "    a cost below 0 within it is noise, reported as 0; below -noise_floor_us it is\n"
        "    null and flagged unreliable. load_bandwidth_MBps: what the loading pairs moved\n"
        "    meanwhile, in total.\n"
        "(b) k = 1 .. pairs pairs at once, started together by barriers: the even rank of\n"
        "    each pair sends windows of --window non-blocking messages (MPI_Isend, all\n"
        "    completed, then a 1-byte acknowledgement from the receiver, as OSU's\n"
        "    osu_mbw_mr), as many windows as fit in --time-cap-ms, --repetitions times; per\n"
        "    pair the median time per window. aggregate_bandwidth_MBps = the sum over the\n"
        "    pairs of window x --bandwidth-size / time per window (Zamani: 'the sum of\n"
        "    individual bandwidths'); message_rate_per_s = the sum over the pairs of window /\n"
        "    time per window at --rate-size (messages per second, higher is better).\n"
        "With 2 ranks (1 pair) (a) has k = 0 only: the cost is null and flagged. Over a\n"
        "network put the two ranks of a pair on different nodes (one rank per node).",
    .settings_size = sizeof(loaded_settings),
    .finish = loaded_finish,
    .buffer_bytes = loaded_buffer_bytes,
};

#endif
