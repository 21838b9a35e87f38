/* window.c - every call timed alone in a synchronised time window (window.h). */
#include "window.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "measure.h"

double nb_sync_clocks(MPI_Comm comm, int exchanges, int tag, double *error_max)
{
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    double *offsets = NULL;
    double local_offset = 0.0;
    *error_max = 0.0;
    if (rank == 0) {
        offsets = nb_calloc_or_abort(comm, (size_t)ranks, sizeof *offsets);
        for (int r = 1; r < ranks; r++) {
            double best_rtt = INFINITY, best_offset = 0.0;
            for (int k = 0; k < exchanges; k++) {
                double remote = 0.0, t0 = MPI_Wtime();
                MPI_Send(&t0, 1, MPI_DOUBLE, r, tag, comm);
                MPI_Recv(&remote, 1, MPI_DOUBLE, r, tag, comm, MPI_STATUS_IGNORE);
                double t1 = MPI_Wtime();
                if (t1 - t0 < best_rtt) {
                    best_rtt = t1 - t0;
                    best_offset = remote - (t0 + t1) / 2.0;
                }
            }
            offsets[r] = best_offset;
            if (best_rtt / 2.0 > *error_max)
                *error_max = best_rtt / 2.0;
        }
    } else {
        for (int k = 0; k < exchanges; k++) {
            double ping = 0.0;
            MPI_Recv(&ping, 1, MPI_DOUBLE, 0, tag, comm, MPI_STATUS_IGNORE);
            double now = MPI_Wtime();
            MPI_Send(&now, 1, MPI_DOUBLE, 0, tag, comm);
        }
    }
    MPI_Scatter(offsets, 1, MPI_DOUBLE, &local_offset, 1, MPI_DOUBLE, 0, comm);
    free(offsets);
    return local_offset;
}

/* The slowest rank's median time of a call, each after a barrier. */
static double estimate_call(MPI_Comm comm, nb_window_call call, const void *state)
{
    double durations[NB_WINDOW_ESTIMATE_CALLS];
    for (int k = 0; k < NB_WINDOW_ESTIMATE_CALLS; k++) {
        MPI_Barrier(comm);
        double start = MPI_Wtime();
        call(state);
        durations[k] = MPI_Wtime() - start;
    }
    double local = nb_median(durations, NB_WINDOW_ESTIMATE_CALLS), longest = 0.0;
    MPI_Allreduce(&local, &longest, 1, MPI_DOUBLE, MPI_MAX, comm);
    return longest;
}

void nb_window_time_block(MPI_Comm comm, nb_window_call call, const void *state,
                          const nb_window *w, int calls, double *times_us, nb_window_timing *t)
{
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    double *ends = nb_calloc_or_abort(comm, (size_t)calls, sizeof *ends);
    double *latest = nb_calloc_or_abort(comm, (size_t)calls, sizeof *latest);
    int *late = nb_calloc_or_abort(comm, (size_t)calls, sizeof *late);
    int *late_any = nb_calloc_or_abort(comm, (size_t)calls, sizeof *late_any);
    memset(t, 0, sizeof *t);

    for (int k = 0; k < w->warmup_calls; k++)
        call(state);
    double estimate = estimate_call(comm, call, state);

    double window = 0.0;
    for (int attempt = 0; attempt <= NB_WINDOW_MAX_RETRIES; attempt++) {
        double error = 0.0;
        double offset = nb_sync_clocks(comm, w->sync_exchanges, w->tag_clock, &error);
        if (error > t->sync_error_s)
            t->sync_error_s = error;
        double schedule[2] = {0.0, 0.0}; /* T0 and window, rank 0's clock */
        if (rank == 0) {
            window = attempt == 0 ? fmax(NB_WINDOW_FACTOR * estimate + 2.0 * error,
                                         NB_WINDOW_MIN_S)
                                  : 2.0 * window;
            schedule[0] = MPI_Wtime() + NB_WINDOW_START_DELAY_S + 2.0 * error;
            schedule[1] = window;
        }
        MPI_Bcast(schedule, 2, MPI_DOUBLE, 0, comm);
        window = schedule[1];

        /* The timed block: nothing but the wait, the call and one clock read per call. */
        double first_local = schedule[0] + offset;
        for (int i = 0; i < calls; i++) {
            double start = first_local + (double)i * window;
            double now = MPI_Wtime();
            late[i] = now > start;
            if (w->wait_in_mpi) {
                while (now < start) {
                    int flag = 0;
                    MPI_Iprobe(MPI_ANY_SOURCE, w->tag_clock + 1, comm, &flag,
                               MPI_STATUS_IGNORE);
                    now = MPI_Wtime();
                }
            } else {
                while (now < start)
                    now = MPI_Wtime();
            }
            call(state);
            ends[i] = MPI_Wtime();
        }
        for (int i = 0; i < calls; i++)
            ends[i] -= offset; /* into rank 0's time */

        MPI_Allreduce(late, late_any, calls, MPI_INT, MPI_MAX, comm);
        MPI_Reduce(ends, latest, calls, MPI_DOUBLE, MPI_MAX, 0, comm);
        int late_count = 0;
        for (int i = 0; i < calls; i++)
            late_count += late_any[i] != 0;
        t->attempts = attempt + 1;
        /* Keep the attempt with the fewest late calls (the last one of equals). */
        if (attempt == 0 || late_count <= t->late_calls) {
            t->late_calls = late_count;
            t->window_s = window;
            if (rank == 0) {
                int valid = 0;
                for (int i = 0; i < calls; i++)
                    if (!late_any[i])
                        times_us[valid++] = (latest[i] - (schedule[0] + (double)i * window)) * 1e6;
                t->calls_valid = valid;
            }
        }
        if ((double)late_count <= NB_WINDOW_MAX_LATE_SHARE * (double)calls)
            break;
    }
    free(ends);
    free(latest);
    free(late);
    free(late_any);
}
