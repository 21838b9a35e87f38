/* measure.h - what all measurement methods share: the run context, the repetition driver
 * (probe, warm-up, an iteration count the same on every rank, timed repetitions) for a pair or
 * for any group of ranks, busy waits, the calibrated computation loop, and message buffers.
 */
#ifndef NETBENCH_MEASURE_H
#define NETBENCH_MEASURE_H

#include <mpi.h>
#include <stddef.h>

#include "common.h"
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

typedef struct nb_context {
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

/* One rank's side of a timed loop: runs `iterations` iterations and returns the seconds it
 * measured (0 for a rank with nothing to do). Every rank of the driver's communicator calls it
 * with the same count. */
typedef double (*nb_timed_loop)(void *state, long iterations);

/* Blocking ping-pong between ranks 0 and 1 of `comm` (a pair's own communicator): one
 * iteration is one round trip of one message each way, MPI_Send then MPI_Recv on rank 0 (Bell
 * 4.1). The message is `size` bytes (MPI_BYTE), or `count` of `type` where count > 0 (a derived
 * datatype, Kutlug 4.2.5). The one blocking ping-pong of netbench: pingpong, bibw, vector,
 * connections, loaded, rankdist and matrix time this loop. */
typedef struct {
    MPI_Comm comm;             /* MPI_COMM_NULL on a rank outside every measuring pair */
    int rank;                  /* in comm: 0 or 1 */
    int tag;
    int size;                  /* message size in bytes */
    void *send, *recv;
    MPI_Datatype type;         /* with count > 0: the message is count x type */
    int count;
} nb_pingpong;

/* nb_timed_loop of an nb_pingpong; the rank's branch is taken once, outside the loop. */
double nb_pingpong_loop(void *state, long iterations);

/* PRTT(n, d, s), Hoefler et al. section 2.2, between ranks 0 and 1 of `comm`: one iteration is
 * one round of n messages of s bytes from rank 0, with a busy wait of d between them, and one
 * reply of s bytes (loggp, models). */
typedef struct {
    MPI_Comm comm;
    int rank;                  /* in comm: 0 or 1 */
    int size;                  /* s, bytes */
    int messages;              /* n */
    double delay_s;            /* d */
    void *send, *recv;
} nb_prtt;

/* nb_timed_loop of an nb_prtt: PRTT(n, d, s). */
double nb_prtt_loop(void *state, long rounds);

/* nb_timed_loop of an nb_prtt, o_r by Kielmann's method (Hoefler 2.3): rank 0 sends, waits d
 * so that the reply has arrived, and times only its MPI_Recv; returns that time (n is 1). */
double nb_prtt_receive_loop(void *state, long rounds);

typedef struct {
    long iterations;            /* per repetition, the same on every rank */
    int repetitions;
    double per_iteration_us[NB_MAX_REPETITIONS]; /* measured seconds / iterations (this rank's,
                                                    or on rank 0 the slowest rank's: below) */
    double min_us, median_us, max_us, mad_us;    /* over the repetitions, on every rank */
} nb_measurement;

/* Whose time chooses the iteration count. */
typedef enum {
    NB_PACE_BY_ROOT,     /* rank 0's wall time around the loop: a pair, where rank 0 times the
                            exchange, and b_eff ("rank 0 decides for all ranks") */
    NB_PACE_BY_SLOWEST,  /* the longest loop of any rank: where ranks have different work (an
                            idle rank in a dense phase takes no time, so rank 0 cannot choose) */
} nb_pacing;

/* Which per-repetition figure rank 0 keeps. */
typedef enum {
    NB_FIGURE_OWN,       /* every rank its own (rank 0's is the pair's measurement) */
    NB_FIGURE_SLOWEST,   /* rank 0: per repetition the slowest rank's (a collective loop) */
} nb_figure;

/* One measurement for the driver: which ranks, which loop, how long. */
typedef struct {
    MPI_Comm comm;              /* the ranks that run the loop; its rank 0 decides */
    nb_timed_loop loop;
    void *state;
    long min_iterations;        /* bounds of the chosen count */
    long max_iterations;
    long fixed_iterations;      /* > 0: exactly this count, no probe and no warm-up */
    double time_cap_s;          /* time one repetition aims at */
    int repetitions;
    nb_pacing pacing;
    nb_figure figure;
} nb_loop;

/* The driver, for pairs and multi-rank methods alike: a short probe (first contact costs extra;
 * it only sizes the warm-up), a warm-up of about 15% of the time cap, then iterations =
 * time_cap / (time per iteration in the warm-up), clamped to [min_iterations, max_iterations]
 * and the same on every rank; then `repetitions` timed runs, each started by a barrier.
 * Collective over loop->comm. */
void nb_drive(const nb_loop *loop, nb_measurement *m);

/* The loop the options ask for (--iterations at most, --time-cap-ms per repetition,
 * --repetitions), each rank's own figure; the caller names the ranks, the loop, its smallest
 * count and whose time chooses the count. */
nb_loop nb_options_loop(const nb_options *o, MPI_Comm comm, nb_timed_loop loop,
                        void *state, long min_iterations, nb_pacing pacing);

/* Defines the nb_timed_loop `name`: `iterations` calls of step(state), timed by this rank. The
 * step is a static function of the same file, inlined into the loop. */
#define NB_STEP_LOOP(name, state_type, step)                                                   \
    static double name(void *state, long iterations)                                           \
    {                                                                                          \
        state_type *s = state;                                                                 \
        double start = MPI_Wtime();                                                            \
        for (long i = 0; i < iterations; i++)                                                  \
            step(s);                                                                           \
        return MPI_Wtime() - start;                                                            \
    }

/* Defines the nb_timed_loop `name`: the always-inline `body(state, iterations, variant...)`
 * with the variant a constant, so that each variant is compiled without a branch on it. */
#define NB_VARIANT_LOOP(name, body, ...)                                                       \
    static double name(void *state, long iterations)                                           \
    {                                                                                          \
        return body(state, iterations, __VA_ARGS__);                                           \
    }

/* nb_drive for a pair method on ctx->pair, paced by rank 0, rank 0's own figures. */
void nb_measure(const nb_context *ctx, nb_timed_loop loop, void *state, long min_iterations,
                long max_iterations, double time_cap_s, int repetitions, nb_measurement *m);

/* nb_measure of `loop` (nb_prtt_loop or nb_prtt_receive_loop) with n messages and delay d, at
 * least min_rounds rounds; the options' iterations, time cap and repetitions. */
void nb_prtt_measure(const nb_context *ctx, nb_prtt *s, int n, double delay_us,
                     nb_timed_loop loop, long min_rounds, nb_measurement *m);

/* A ping-pong of `size` bytes each way on the pair's own communicator (s->comm), paced by its
 * rank 0, each rank's own figures (per round trip); counts and repetitions from the options.
 * Collective over s->comm. */
void nb_pingpong_measure(const nb_context *ctx, nb_pingpong *s, size_t size, long min_iterations,
                         nb_measurement *m);

/* A time shorter than this many ticks of MPI_Wtick is below the timer's resolution. */
#define NB_TIMER_TICKS_RESOLVED 10.0

/* The one timer-resolution rule: adds an `unreliable` entry for `quantity` to `result` (when
 * not NULL) when `time_us` is below NB_TIMER_TICKS_RESOLVED x MPI_Wtick, naming `what` ("median
 * time"); returns 1 when it did. */
int nb_flag_below_timer(const nb_context *ctx, nb_result *result, const char *quantity,
                        const char *what, double time_us);

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

/* calloc(count, size), at least one byte; out of memory, the job aborts with one line. */
void *nb_calloc_or_abort(MPI_Comm comm, size_t count, size_t size);

/* Waits at a barrier of `comm` without polling the CPU busily (a 0.2 ms sleep between tests),
 * so ranks that wait leave the cores to those that measure; the simulated flavour
 * (NB_SIMULATED) at MPI_Barrier. */
void nb_quiet_barrier(MPI_Comm comm);

/* Validation mode of the multi-rank methods: nb_fill_message writes a byte pattern that depends
 * on the sender, a tag (phase, pattern, call) and the byte's position; nb_check_message returns
 * how many bytes of a received message differ from what that sender wrote with that tag. Never
 * called inside a timed loop. */
void nb_fill_message(unsigned char *buffer, size_t bytes, int sender, unsigned tag);
size_t nb_check_message(const unsigned char *buffer, size_t bytes, int sender, unsigned tag);

/* Physical memory of this host divided by the ranks on it (MPI_Comm_split_type shared), in
 * bytes; collective over `comm`. */
size_t nb_memory_per_process(MPI_Comm comm);

/* Min, median, max and MAD of m->per_iteration_us[0..repetitions-1]. */
void nb_fill_statistics(nb_measurement *m);

/* Rank 0: records a size list as an integer-list parameter. */
void nb_param_sizes(const nb_context *ctx, const char *key, const size_t *sizes, size_t count);

/* The common parameters of the timed-loop methods: repetitions, iterations, time cap, tick. */
void nb_param_common(const nb_context *ctx);

#endif
