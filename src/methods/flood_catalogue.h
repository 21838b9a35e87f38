/* flood_catalogue.h - what flood.c's methods declare (docs/adding-a-method.md); included once, by
 * flood.c. */
#ifndef NETBENCH_FLOOD_CATALOGUE_H
#define NETBENCH_FLOOD_CATALOGUE_H

#include "methods.h"

#define FLOOD_MAX_QUEUE_DEPTHS 16

/* flood's own options (nb_options.settings). */
typedef struct {
    int queue_depths[FLOOD_MAX_QUEUE_DEPTHS]; /* --queue-depths, ascending */
    size_t queue_depth_count;
    size_t G_fit_min_size;        /* --G-fit-min-size */
    size_t G_fit_max_size;        /* --G-fit-max-size */
} flood_settings;

/* Defined in flood.c. */
nb_run_function run_flood;
nb_buffer_bytes_hook flood_buffer_bytes;

static const nb_option flood_options[] = {
    NB_USE_SIZES("8", "4M"),
    {.name = "--queue-depths", .type = NB_OPTION_INT_LIST,
     NB_SETTING_LIST(flood_settings, queue_depths, queue_depth_count), .min = 1, .max = 1024,
     .value_name = "LIST", .default_value = "1,2,4,8,16,32,64", .example = "1,8,64",
     .help = "queue depths q (sends in flight), comma separated"},
    {.name = "--G-fit-min-size", .type = NB_OPTION_SIZE,
     NB_SETTING(flood_settings, G_fit_min_size), .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE,
     .value_name = "SIZE", .default_value = "64K", .example = "64K",
     .help = "smallest size used in the fit for G"},
    {.name = "--G-fit-max-size", .type = NB_OPTION_SIZE,
     NB_SETTING(flood_settings, G_fit_max_size), .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE,
     .value_name = "SIZE", .default_value = "1M", .example = "1M",
     .help = "largest size used in the fit for G"},
    NB_USE_REPEATS("5", "10000", "8"),
};

NB_TABLE(flood, "flood",
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("queue_depth", "count"),
    NB_KEY("messages", "count"),
    NB_LOWER("time_per_message_min_us", "us"),
    NB_LOWER("time_per_message_median_us", "us"),
    NB_LOWER("time_per_message_max_us", "us"),
    NB_HIGHER("bandwidth_median_MBps", "MBps"));

NB_TABLE(flood_best, "flood_best",
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("best_queue_depth", "count"),
    NB_LOWER("time_per_message_us", "us"),
    NB_HIGHER("bandwidth_MBps", "MBps"));

NB_TABLES(flood, &flood_table, &flood_best_table);

NB_FIGURES(flood,
    NB_LOWER("g_us", "us"),
    NB_KEY("g_queue_depth", "count"),
    NB_LOWER("G_ns_per_byte", "ns_per_byte"),
    NB_KEY("G_fit_min_size_bytes", "bytes"),
    NB_KEY("G_fit_max_size_bytes", "bytes"),
    NB_KEY("G_fit_points", "count"),
    NB_KEY("G_fit_rms_relative", "ratio"),
    NB_KEY("G_fit_outliers", "count"),
    NB_HIGHER("bandwidth_unidirectional_peak_MBps", "MBps"),
    NB_KEY("bandwidth_unidirectional_peak_size_bytes", "bytes"));

const nb_method nb_method_flood = {
    NB_METHOD(flood, NB_ON_PAIR, NB_SIZES_POWERS_OF_2),
    .summary = "sustained injection with q sends in flight: g, G, bandwidth (Bell 4.2)",
    .description =
        "Flood test, Bell et al. section 4.2 (Kutlug section 3.2.2 for the bandwidth): rank 0\n"
        "keeps q non-blocking MPI_Isend in flight - it starts q, waits for the oldest q/2\n"
        "(at least 1) to complete, starts as many new ones, and so on, then completes the\n"
        "last ones. Rank 1 keeps q MPI_Irecv posted the same way into q distinct buffers and,\n"
        "after the last message, sends an 8-byte reply that closes the timing on rank 0.\n"
        "Time per message = total / messages; bandwidth = size / time per message (MB/s).\n"
        "For every size and queue depth: a warm-up, then as many messages as fit in\n"
        "--time-cap-ms (at most --iterations, at least 2q), repeated --repetitions times.\n"
        "Per size the queue depth with the lowest median is the best (table flood_best).\n"
        "g = best time per message at the smallest size; G = slope of a robust, non-negative\n"
        "least-squares fit of the best time per message against the size over the sizes from\n"
        "--G-fit-min-size to --G-fit-max-size, in ns/byte (Bell: 'the difference between g and\n"
        "the average times for larger message sizes'). The fit stops at 1 MiB by default:\n"
        "beyond the caches, shared-memory transfers turn non-linear and G would measure\n"
        "memory, not the transport; over a network raise it with --G-fit-max-size.",
    .settings_size = sizeof(flood_settings),
    .buffer_bytes = flood_buffer_bytes,
};

#endif
