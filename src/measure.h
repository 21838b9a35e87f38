/* measure.h - what all measurement methods share: the run context, the repetition driver
 * (warm-up, iteration count agreed by both ranks, timed repetitions), busy waits, the calibrated
 * computation loop, and message buffers.
 */
#ifndef NETBENCH_MEASURE_H
#define NETBENCH_MEASURE_H

#include <mpi.h>
#include <stddef.h>

#include "cli.h"
#include "output.h"

/* Message tags: data, and the reply that closes a flood (Bell §4.2). The driver's own traffic
 * (iteration counts, barriers) uses collectives on the pair communicator. */
#define NB_TAG_DATA 1
#define NB_TAG_REPLY 2

/* A straight-line fit (flood G, loggp ranges) whose rms residual exceeds this share of the mean
 * of the fitted values is reported as unreliable. */
/* A fit whose rms residual exceeds 20 % of the mean value is unreliable. On a busy 2-core VM the
 * per-point noise of sound data gives 5-13 %; disturbed runs and curved data give 15-26 %. */
#define NB_FIT_MAX_RMS_RELATIVE 0.20

typedef struct {
    MPI_Comm pair;              /* point-to-point methods: ranks 0 and 1 of MPI_COMM_WORLD;
                                   multi-rank methods (all_ranks): a duplicate of
                                   MPI_COMM_WORLD. Rank 0 is the timer and writes the result. */
    int rank;                   /* rank in `pair` (0 or 1 for point-to-point methods) */
    int size;                   /* ranks in `pair` */
    const nb_options *options;
    nb_result *result;          /* rank 0: the result being built; rank 1: NULL */
    double timer_tick_s;        /* MPI_Wtick() */
} nb_context;

/* MPI_Waitall without statuses. MPICH defines MPI_STATUSES_IGNORE as (MPI_Status *)1, which
 * gcc 12's access analysis (-Wstringop-overflow) takes for an array of size 0; the warning is
 * silenced here only, where the call is known to be right. */
static inline int nb_waitall(int count, MPI_Request *requests)
{
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
    return MPI_Waitall(count, requests, MPI_STATUSES_IGNORE);
#pragma GCC diagnostic pop
}

/* One side of a timed loop: runs `iterations` iterations and returns the seconds it measured.
 * Both ranks call it with the same count; rank 0's return value is the measurement. */
typedef double (*nb_timed_loop)(void *state, long iterations);

typedef struct {
    long iterations;            /* per repetition, the same on both ranks */
    int repetitions;
    double per_iteration_us[NB_MAX_REPETITIONS]; /* rank 0: measured seconds / iterations */
    double min_us, median_us, max_us, mad_us;    /* rank 0, over the repetitions */
} nb_measurement;

/* The driver: a short probe, a warm-up of about 15% of the time cap, then rank 0 chooses
 * iterations = time_cap / (time per iteration in the warm-up), clamped to [min_iterations,
 * max_iterations], and sends it to rank 1; then `repetitions` timed runs, each started by a
 * barrier. Collective over ctx->pair. */
void nb_measure(const nb_context *ctx, nb_timed_loop loop, void *state, long min_iterations,
                long max_iterations, double time_cap_s, int repetitions, nb_measurement *m);

/* Rank 0: adds an `unreliable` entry when the per-iteration average is below 10 x MPI_Wtick. */
void nb_check_timer_resolution(const nb_context *ctx, const nb_measurement *m,
                               const char *quantity);

/* Spins on MPI_Wtime for `seconds` (no sleep: the core stays busy, as Hoefler's delay d). */
void nb_busy_wait(double seconds);

/* The computation of the overlap tests: a loop over a volatile counter, which the compiler can
 * neither remove nor shorten. nb_compute_calibrate returns its cost in ns per unit on this core
 * (the fastest of several trials, so that preemption does not inflate it). */
void nb_compute(unsigned long units);
double nb_compute_calibrate(void);
unsigned long nb_compute_units_for(double microseconds, double ns_per_unit);

/* Page-aligned, zero-filled (touched) buffer of at least `bytes`; aborts with status 1 when
 * there is no memory. */
void *nb_buffer_new(size_t bytes);

/* Validation mode of the multi-rank methods: nb_fill_message writes a byte pattern that depends
 * on the sender, a tag (phase, pattern, call) and the byte's position; nb_check_message returns
 * how many bytes of a received message differ from what that sender wrote with that tag. Never
 * called inside a timed loop. */
void nb_fill_message(unsigned char *buffer, size_t bytes, int sender, unsigned tag);
size_t nb_check_message(const unsigned char *buffer, size_t bytes, int sender, unsigned tag);

/* Physical memory of this host divided by the ranks on it (MPI_Comm_split_type shared), in
 * bytes; collective over `comm`. */
size_t nb_memory_per_process(MPI_Comm comm);

/* Rank 0: min, median, max and MAD of m->per_iteration_us[0..repetitions-1]. */
void nb_fill_statistics(nb_measurement *m);

/* Rank 0: records a size list as an integer-list parameter. */
void nb_param_sizes(const nb_context *ctx, const char *key, const size_t *sizes, size_t count);

/* The common parameters of the timed-loop methods: repetitions, iterations, time cap, tick. */
void nb_param_common(const nb_context *ctx);

#endif
