/* limits_catalogue.h - what limits.c's method declares (docs/adding-a-method.md); included once,
 * by limits.c. */
#ifndef NETBENCH_LIMITS_CATALOGUE_H
#define NETBENCH_LIMITS_CATALOGUE_H

#include "floor.h"
#include "methods.h"

/* Defined in limits.c. */
nb_run_function run_limits;

static const nb_option limits_options[] = {
    NB_USE_SIZES("8", "4M"),
    NB_USE_REPEATS("7", "1000000", "10"),
};

NB_TABLE(limits_copy, "limits_copy",
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("iterations", "count"),
    NB_HIGHER("copy_one_core_min_MBps", "MBps"),
    NB_HIGHER("copy_one_core_median_MBps", "MBps"),
    NB_HIGHER("copy_one_core_max_MBps", "MBps"),
    NB_LOWER("copy_one_core_noise_percent", "percent"),
    NB_HIGHER("copy_two_cores_median_MBps", "MBps"),
    NB_LOWER("copy_two_cores_noise_percent", "percent"),
    NB_HIGHER("copy_all_ranks_median_MBps", "MBps"),
    NB_LOWER("copy_all_ranks_noise_percent", "percent"));

NB_TABLES(limits, &limits_copy_table);

NB_FIGURES(limits,
    NB_FLOOR_FIGURES,
    NB_HIGHER("copy_one_core_peak_MBps", "MBps"),
    NB_KEY("copy_one_core_peak_size_bytes", "bytes"),
    NB_HIGHER("copy_two_cores_peak_MBps", "MBps"),
    NB_HIGHER("copy_all_ranks_peak_MBps", "MBps"));

const nb_method nb_method_limits = {
    NB_METHOD(limits, NB_ON_ALL_RANKS, NB_SIZES_POWERS_OF_2),
    .summary = "the limits of the job's cores: cache-line floor, copy ceiling per size",
    .description =
        "What the cores a job runs on can do at best, measured on those cores, so that a\n"
        "message figure can be read as a share of it. The floor: a cache line's transfer\n"
        "between the two cores through shared memory (an MPI-3 shared window of\n"
        "MPI_Win_allocate_shared): rank 0 writes a flag line, rank 1 spins on it and writes\n"
        "its own line back; floor_oneway = round trip / 2, the least any message between the\n"
        "two cores can take (a ping-pong latency is a multiple of it). Ranks on different\n"
        "nodes share no memory: the floor is null there, with a warning. The ceiling, per\n"
        "size: memcpy of size bytes between two buffers of rank 0, warm (copy_one_core: what\n"
        "a single-copy transfer can reach at best), and both ranks copying at once, each its\n"
        "own buffers (copy_two_cores, per core: the ceiling of bidirectional patterns,\n"
        "where both cores copy), and every rank of the job copying at once (copy_all_ranks,\n"
        "per core, the slowest: the ceiling of a dense pattern, whose cores share the\n"
        "node's memory; with 2 ranks it is copy_two_cores). Floor, one and two cores: ranks\n"
        "0 and 1. Bandwidth = size / time per copy, MB/s (10^6 bytes). Per size: as many\n"
        "copies as fit in --time-cap-ms (at most --iterations), --repetitions times;\n"
        "min/median/max over the repetitions; noise = 1.4826 MAD / median, in percent. The\n"
        "fabricsuite checks run it as a short prologue on the job's cores in the same job\n"
        "(--sizes of the check, fewer repetitions).",
};

#endif
