/* matrix_record.h - what matrix.c (the map's measurement and verdict) and matrix_maps.c (the
 * files beside its result, the schedule's dry run) share: rank 0's record of the pairs. */
#ifndef NETBENCH_MATRIX_RECORD_H
#define NETBENCH_MATRIX_RECORD_H

#include <mpi.h>
#include <stddef.h>

#include "methods.h"
#include "pairs.h"

/* Rank 0's record of the run, one entry per pair of the upper triangle. */
typedef struct {
    int P;
    size_t pairs;                 /* P (P-1) / 2 */
    double *latency, *bandwidth;  /* NaN: not measured */
    double *retest_latency, *retest_bandwidth;
    double *spread, *retest_spread; /* relative robust sd of the bandwidth over the repetitions */
    int *round;                   /* 1-based round that measured the pair, 0: not measured */
    unsigned char *suspect, *bad;
    unsigned char *reference;     /* a healthy pair re-tested alone as the re-tests' reference */
    double *local_reference;      /* a suspect's references alone, around its re-test (mean) */
    double *confirm_bandwidth;    /* a pair bad alone, alone once more: confirmed or cleared */
} matrix_record;

/* Index of pair (a, b), a < b, in the upper triangle of P ranks, row by row. */
static inline size_t pair_index(int P, int a, int b)
{
    return (size_t)a * (size_t)(2 * P - a - 1) / 2 + (size_t)(b - a - 1);
}

/* The name of `rank`'s host in gather_hosts' list (pairs.h). */
static inline const char *host_of(const char *hosts, int rank)
{
    return hosts + (size_t)rank * (MPI_MAX_PROCESSOR_NAME + 1);
}

/* Rank 0: one progress line on stderr when `every` seconds have passed since the last one
 * (every = 0: each time), and always for the last step (matrix_measure.c). */
typedef struct {
    double start, last, every;
} progress_clock;
void matrix_progress(progress_clock *clock, const char *what, int done, int total,
                     const char *detail);
/* The pairs of the `count` rounds `chosen` of the tournament into rank 0's record: concurrently
 * (every round's disjoint pairs at once) or one pair at a time. Collective over ctx->pair. */
void matrix_measure_concurrently(const nb_context *ctx, const int *chosen, int count,
                                 void *send, void *recv, matrix_record *m, progress_clock *clock);
void matrix_measure_sequentially(const nb_context *ctx, const int *chosen, int count,
                                 void *send, void *recv, matrix_record *m, progress_clock *clock);
/* Every pair of `list` (list[2 i], list[2 i + 1]: the ranks of the i-th; count of them, the same
 * on every rank) measured alone in order, the i-th's figures to rank 0's steps[i], a progress
 * line `what` every `every_s` seconds. Collective over ctx->pair. */
void matrix_measure_alone(const nb_context *ctx, const int *list, int count, void *send,
                          void *recv, pair_figures *steps, const char *what, double every_s);
/* Rank 0's list (its count in *count) to every rank: each rank's copy (the others allocate
 * theirs; every rank frees its own). Collective over ctx->pair. */
int *matrix_share_list(const nb_context *ctx, int *list, int *count);

/* The N x N maps beside the JSON result `json_file` (matrix_maps.c); 0 or -1. */
int matrix_write_maps(const char *json_file, const char *schedule, const matrix_record *m,
                      const char *hosts);
/* `netbench matrix --print-schedule P`: the rounds (`rounds`, 0: all, drawn with `seed`),
 * before and without MPI, as JSON or text on stdout; the exit status. */
int matrix_print_schedule(int P, int rounds, long seed, int json);

#endif
