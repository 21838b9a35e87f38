/* window.h - every call timed alone in a synchronised time window (Hoefler et al. section 4;
 * Altix study section 3.2): the timing core of the collective methods (collectives, models,
 * consistency).
 *
 * Rank 0 estimates every rank's clock offset with ping-pongs, then schedules call i of a block
 * at T0 + i * window on its own clock. Every rank waits until that moment (on its own clock,
 * through its offset), makes the call and records its end. A call's time is the latest end over
 * all ranks (in rank 0's time) minus its scheduled start, so no call can overlap or pipeline
 * with the one before, which is what makes loop/n underestimate a collective.
 */
#ifndef NETBENCH_WINDOW_H
#define NETBENCH_WINDOW_H

#include <mpi.h>

/* window = max(NB_WINDOW_FACTOR * estimated call time + 2 * clock error bound, minimum) */
#define NB_WINDOW_FACTOR 2.0
#define NB_WINDOW_MIN_S 5e-6
/* Calls (each after a barrier) that estimate the window; the slowest rank's median counts. */
#define NB_WINDOW_ESTIMATE_CALLS 5
/* T0 lies this far in the future when rank 0 broadcasts it. */
#define NB_WINDOW_START_DELAY_S 1e-3
/* More late calls than this share: the window is doubled and the block redone, at most
 * NB_WINDOW_MAX_RETRIES times; the attempt with the fewest late calls counts. */
#define NB_WINDOW_MAX_LATE_SHARE 0.10
#define NB_WINDOW_MAX_RETRIES 3

/* Collective over comm: rank 0 ping-pongs `exchanges` times with every other rank in turn (tag
 * `tag`). Returns this rank's clock offset (local MPI_Wtime - rank 0's, 0 on rank 0), from the
 * shortest round trip; on rank 0 *error_max is the largest error bound (half that round trip)
 * over the ranks. */
double nb_sync_clocks(MPI_Comm comm, int exchanges, int tag, double *error_max);

/* How a method times its calls (a constant of the method). */
typedef struct {
    int warmup_calls;                  /* untimed calls before the block */
    int sync_exchanges;                /* ping-pongs per rank of one clock synchronisation */
    int tag_clock;                     /* the synchronisation's tag on the communicator */
    /* Wait for a call's start inside MPI (MPI_Iprobe on tag_clock + 1, never sent) instead of
     * on the clock alone: with MPICH a peer's rendezvous transfer of the previous call completes
     * only while this rank is inside MPI, so a rank merely spinning on the clock made every
     * other call of a mock-up late (reduce at 64 KiB). Costs up to one MPI_Iprobe per call. */
    int wait_in_mpi;
} nb_window;

/* One call of what is timed, on every rank. */
typedef void (*nb_window_call)(const void *state);

typedef struct {
    int calls_valid;
    int late_calls;            /* calls some rank reached after their start */
    int attempts;              /* 1 + retries with a doubled window */
    double window_s;
    double sync_error_s;       /* largest error bound of the block's synchronisations */
} nb_window_timing;

/* One block of `calls` calls of call(state), collective over comm. On rank 0
 * times_us[0..calls_valid-1] gets the times of the valid calls (those no rank reached late) of
 * the attempt that counts; times_us holds `calls` values. */
void nb_window_time_block(MPI_Comm comm, nb_window_call call, const void *state,
                          const nb_window *w, int calls, double *times_us, nb_window_timing *t);

#endif
