/* floor.h - the cache-line floor between two cores, defined in limits.c and shared with the
 * methods that measure it beside their own figures (pingpong: the floor of its latency, in the
 * same processes and seconds). */
#ifndef NETBENCH_FLOOR_H
#define NETBENCH_FLOOR_H

#include "methods.h"

/* The floor's figures in a method's summary (the same names wherever they appear). */
#define NB_FLOOR_FIGURES                                                                      \
    NB_LOWER("floor_oneway_min_us", "us"), NB_LOWER("floor_oneway_median_us", "us"),          \
        NB_LOWER("floor_noise_percent", "percent")

/* Collective over ctx->pair (two ranks): half a cache line's round trip between their cores
 * through an MPI-3 shared window, into rank 0's summary (NB_FLOOR_FIGURES). Where the ranks
 * share no memory the figures are null, with a warning when `warn_apart`. */
void nb_measure_floor(const nb_context *ctx, int warn_apart);

#endif
