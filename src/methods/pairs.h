/* pairs.h - measuring one pair of ranks of a whole allocation while the others wait, shared by
 * the pair methods (pairs.c: rankdist; matrix.c: the N x N map). Collective as each says. */
#ifndef NETBENCH_PAIRS_H
#define NETBENCH_PAIRS_H

#include <stddef.h>

#include "methods.h"

typedef struct {
    double latency_us;
    double bandwidth_MBps;
    double bandwidth_spread;  /* relative robust sd of the bandwidth over the repetitions */
} pair_figures;

/* Collective over ctx->pair: every rank names its partner (-1: none this time) and gets the
 * pair's own communicator, so that disjoint pairs can measure at once with the shared driver
 * (its barriers then involve the pair alone). */
void pair_open(const nb_context *ctx, int partner, void *send, void *recv, nb_pingpong *s);
void pair_close(nb_pingpong *s);
/* The pair ping-pongs `size` bytes; on its lower rank the median one-way time in us (half a
 * round trip) and, in *spread, its robust relative sd over the repetitions (NB_MAD_TO_SD MAD /
 * median), elsewhere NAN. Only the pair takes part. */
double pair_one_way_local(const nb_context *ctx, nb_pingpong *s, size_t size, double *spread);
/* Both figures of pair (a, b), a < b, measured alone (the others wait quietly), delivered to
 * rank 0. Collective over ctx->pair. */
pair_figures measure_pair(const nb_context *ctx, int a, int b, void *send, void *recv);
/* Rank 0: every rank's host name (MPI_MAX_PROCESSOR_NAME + 1 bytes each, to free). */
char *gather_hosts(const nb_context *ctx);

#endif
