/* pt2pt_catalogue.h - what pt2pt.c's methods declare (docs/adding-a-method.md); included once, by
 * pt2pt.c. */
#ifndef NETBENCH_PT2PT_CATALOGUE_H
#define NETBENCH_PT2PT_CATALOGUE_H

#include "floor.h"
#include "methods.h"

/* Defined in pt2pt.c. */
nb_run_function run_pingpong, run_bibw, run_bothway;

static const nb_option pt2pt_options[] = {
    NB_USE_SIZES("8", "4M"),
    NB_USE_REPEATS("11", "10000", "30"),
};

NB_TABLE(pingpong, "pingpong",
    NB_KEY("size_bytes", "bytes"),
    NB_LATENCY_COLUMNS,
    NB_HIGHER("bandwidth_median_MBps", "MBps"));

NB_TABLES(pingpong, &pingpong_table);

NB_FIGURES(pingpong,
    NB_KEY("latency_small_size_bytes", "bytes"),
    NB_LOWER("latency_small_min_us", "us"),
    NB_LOWER("latency_small_median_us", "us"),
    NB_FLOOR_FIGURES);

const nb_method nb_method_pingpong = {
    NB_METHOD_SHARING(pingpong, pt2pt_options, NB_ON_PAIR, NB_SIZES_POWERS_OF_2),
    .summary = "end-to-end latency: blocking ping-pong, half the round trip (Bell 4.1)",
    .description =
        "End-to-end latency (EEL), Bell et al. section 4.1 and Kutlug section 3.2.1: rank 0\n"
        "sends a message with MPI_Send, rank 1 receives it with MPI_Recv and sends one of the\n"
        "same size back; latency = round trip / 2. The timed loop holds nothing but these two\n"
        "calls on buffers allocated and touched beforehand.\n"
        "Per size: a warm-up, then as many iterations as fit in --time-cap-ms, at most\n"
        "--iterations (rank 0 chooses the count from the warm-up and sends it to rank 1, so\n"
        "both ranks run the same loop), repeated --repetitions times; the table gives the\n"
        "min, median and max over the repetitions (Bell et al. report the minimum of >= 10\n"
        "runs). Sizes are powers of two; 0 and 1 byte only when asked for (--sizes 0,1,8 or\n"
        "--min-size 0).\n"
        "Before the first size, in the same processes: the cache-line floor between the two\n"
        "cores (floor_oneway_*, as in the limits method; null across nodes), the floor this\n"
        "latency is a multiple of.",
};

NB_TABLE(bibw, "bibw",
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("iterations", "count"),
    NB_HIGHER("bandwidth_min_MBps", "MBps"),
    NB_HIGHER("bandwidth_median_MBps", "MBps"),
    NB_HIGHER("bandwidth_max_MBps", "MBps"),
    NB_LOWER("latency_median_us", "us"));

NB_TABLES(bibw, &bibw_table);

NB_FIGURES(bibw,
    NB_HIGHER("bandwidth_peak_MBps", "MBps"),
    NB_KEY("bandwidth_peak_size_bytes", "bytes"));

const nb_method nb_method_bibw = {
    NB_METHOD_SHARING(bibw, pt2pt_options, NB_ON_PAIR, NB_SIZES_POWERS_OF_2),
    .summary = "ping-pong bandwidth: size / (round trip / 2) (Zamani 4.1 'bidirectional')",
    .description =
        "Ping-pong bandwidth, Zamani et al. section 4.1 (their 'bidirectional' test: the\n"
        "receiver replies with a message of the same size): the same blocking MPI_Send /\n"
        "MPI_Recv exchange as pingpong, reported as bandwidth = size / (round trip / 2),\n"
        "in MB/s (1 MB = 10^6 bytes). Min/median/max are over --repetitions repetitions, each\n"
        "of as many iterations as fit in --time-cap-ms (at most --iterations).",
};

NB_TABLE(bothway, "bothway",
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("iterations", "count"),
    NB_LOWER("time_median_us", "us"),
    NB_HIGHER("bandwidth_per_direction_min_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_direction_median_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_direction_max_MBps", "MBps"),
    NB_HIGHER("bandwidth_aggregate_median_MBps", "MBps"));

NB_TABLES(bothway, &bothway_table);

NB_FIGURES(bothway,
    NB_HIGHER("bandwidth_per_direction_peak_MBps", "MBps"),
    NB_HIGHER("bandwidth_aggregate_peak_MBps", "MBps"),
    NB_KEY("bandwidth_peak_size_bytes", "bytes"));

const nb_method nb_method_bothway = {
    NB_METHOD_SHARING(bothway, pt2pt_options, NB_ON_PAIR, NB_SIZES_POWERS_OF_2),
    .summary = "both ranks send at once: Isend+Irecv on both sides (Zamani 4.1, IMB PingPing)",
    .description =
        "Both-way bandwidth, Zamani et al. section 4.1 ('both the sender and receiver send\n"
        "data simultaneously'), like IMB PingPing: in every iteration both ranks post\n"
        "MPI_Irecv and MPI_Isend of the same size and wait for both with MPI_Waitall.\n"
        "Bandwidth per direction = size / time per iteration; the aggregate is twice that.\n"
        "Min/median/max are over --repetitions repetitions, each of as many iterations as fit\n"
        "in --time-cap-ms (at most --iterations).",
};

#endif
