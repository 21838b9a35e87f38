/* matrix_record.h - what matrix.c (the map's measurement and verdict) and matrix_maps.c (the
 * files beside its result, the schedule's dry run) share: rank 0's record of the pairs. */
#ifndef NETBENCH_MATRIX_RECORD_H
#define NETBENCH_MATRIX_RECORD_H

#include <mpi.h>
#include <stddef.h>

#include "methods.h"
#include "pairmap.h"
#include "pairs.h"
#include "pathclass.h"

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
    int *pair_class;              /* --path-classes: each pair's class (pathclass.h), -1 for a
                                     host the file lacks; NULL without the option */
    long *pair_segment;           /* --path-classes: the link at the top of each pair's path
                                     where the file declares it (nb_path_segment), -1: none */
    int *round_load;              /* the pairs of each pair's round on its segment (itself
                                     included; 1 without one), matrix_round_loads */
    int local_rounds;             /* a quick map's rounds inside switches (matrix_classes.c) */
    int *local_partner;           /* local_rounds x P: each rank's partner there (-1: none) */
} matrix_record;

/* Rank 0's verdict on the map: its thresholds, the rule for the re-tests alone (from the noise),
 * and what they found. */
typedef struct {
    nb_pair_thresholds map;
    nb_alone_rule alone;          /* NaN with --bandwidth-fraction: the map's thresholds apply */
    double resolvable_slowdown;   /* NaN with --bandwidth-fraction */
    int suspects, references, retests;
    int undecided;                /* suspects left out of the re-tests by --max-retests */
    int confirmations;            /* the steps of the second re-test of the pairs bad alone */
    int unconfirmed;              /* bad alone once, cleared by the second re-test */
    /* --path-classes: each class's best bandwidth and latency ceiling (NaN: no pair) */
    double class_best[NB_PATH_CLASSES], class_ceiling[NB_PATH_CLASSES];
    int class_suspects;           /* suspect by their class's thresholds only */
    int missing_hosts;            /* ranks whose host --path-classes lacks */
    int local_rounds;             /* a quick map's rounds inside the switches (--path-classes) */
} matrix_verdict;

/* Rank 0, with --path-classes (matrix_classes.c): v->class_best and v->class_ceiling (the
 * latency factor x each class's lowest latency) from the map; NaN without classes. */
void matrix_class_thresholds(const matrix_record *m, double latency_factor, matrix_verdict *v);
/* The thresholds pair k is judged by: the whole map's (v->map), and with its path class also
 * below its class's floor (the same slowdown under its class's best) and its latency against
 * its class's ceiling instead of the whole map's (pairs across a dragonfly's groups take more
 * hops than pairs under one router, healthy). */
nb_pair_thresholds matrix_pair_thresholds(const matrix_record *m, const matrix_verdict *v,
                                          size_t k);
/* How far below its best a pair measured in the map: its bandwidth over its path class's best
 * (--path-classes), else the whole map's. */
double matrix_of_its_best(const matrix_record *m, const matrix_verdict *v, size_t k);
/* Rank 0: m->round_load from m->round and m->pair_segment (nothing without path classes). */
void matrix_round_loads(matrix_record *m);
/* The order of the re-tests alone: how far below its best a pair measured (matrix_of_its_best)
 * times the pairs of its round that crossed the same link at the top of its path (a link of
 * the path-classes file's `link:` lines, a dragonfly's global links; 1 for others). A pair
 * slowed only by sharing a link that carries a node link's rate or more measures at least its
 * class's best over the pairs sharing it: 1 or more here; a slow link's pairs measured with few
 * others stay below 1. A slow link measured only under heavy sharing can still come after
 * congested ones (a 64-node dragonfly with a bound of 4, one seed of three). */
double matrix_retest_key(const matrix_record *m, const matrix_verdict *v, size_t k);
/* Frees what matrix_classes.c allocated in the record. */
void matrix_classes_free(matrix_record *m);
/* Pair k's path class for ordering the re-tests: its class, NB_PATH_CLASSES for a host the
 * file lacks, 0 for every pair without --path-classes. */
int matrix_class_order(const matrix_record *m, size_t k);

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
/* The local rounds of rank 0's m (matrix_read_path_classes), each without the pairs measured
 * already, concurrently or (sequential) one pair at a time, recorded as rounds first_id,
 * first_id + 1, ...; returns how many rounds. Collective over ctx->pair. */
int matrix_measure_local(const nb_context *ctx, int sequential, int first_id, void *send,
                         void *recv, matrix_record *m, progress_clock *clock);
/* Every pair of `list` (list[2 i], list[2 i + 1]: the ranks of the i-th; count of them, the same
 * on every rank) measured alone in order, the i-th's figures to rank 0's steps[i], a progress
 * line `what` every `every_s` seconds. Collective over ctx->pair. */
void matrix_measure_alone(const nb_context *ctx, const int *list, int count, void *send,
                          void *recv, pair_figures *steps, const char *what, double every_s);
/* Rank 0's list (its count in *count) to every rank: each rank's copy (the others allocate
 * theirs; every rank frees its own). Collective over ctx->pair. */
int *matrix_share_list(const nb_context *ctx, int *list, int *count);

/* Rank 0 (collective: every rank returns or all abort): m->pair_class from the file `path`
 * (--path-classes) for the ranks' `hosts`; a file that cannot be read or parsed ends the run in
 * one line. With `quick` (a quick map), also m->local_rounds and m->local_partner: one round
 * inside the switches of each level below the top (a tree's leaves; a dragonfly's routers and
 * groups), drawn with `seed`, so that every node has a partner under its own leaf (a quick
 * map's tournament rounds pair nearly every node across the core, where a tapered tree's
 * congestion hides a slow node link). Returns how many ranks' hosts the file lacks (their pairs:
 * the whole map's rule). */
int matrix_read_path_classes(const nb_context *ctx, const char *path, const char *hosts,
                             int quick, long seed, matrix_record *m);

/* The N x N maps beside the JSON result `json_file` (matrix_maps.c); 0 or -1. */
int matrix_write_maps(const char *json_file, const char *schedule, const matrix_record *m,
                      const char *hosts);
/* `netbench matrix --print-schedule P`: the rounds (`rounds`, 0: all, drawn with `seed`),
 * before and without MPI, as JSON or text on stdout; the exit status. */
int matrix_print_schedule(int P, int rounds, long seed, int json);

#endif
