/* operations.c - collective operations timed call by call (operations.h, window.h). */
#include "operations.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "window.h"

/* The table `timings` of models and consistency, which this file fills (its declaration lives
 * here, beside its one writer, rather than in either method family). */
static const nb_column operation_timing_columns[] = {
    NB_KEY("operation", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("calls", "count"),
    NB_KEY("calls_valid", "count"),
    NB_LOWER("late_calls", "count"),
    NB_KEY("rounds_valid", "count"),
    NB_LOWER("time_median_us", "us"),
    NB_LOWER("time_spread_us", "us"),
};
const nb_table_spec nb_operation_timings_table = NB_TABLE_SPEC("timings", operation_timing_columns);

/* ---- the window timing (window.h) ---------------------------------------------------------- */

/* Tag 11 on ctx->pair, and 12 for the wait's progress (never sent). */
static const nb_window op_window = {
    .warmup_calls = 3, .sync_exchanges = 20, .tag_clock = 11, .wait_in_mpi = 1};

static void call_collective(const nb_op_state *s, nb_prim_collective c)
{
    int floats = s->total / (int)sizeof(float);
    if (floats < 1)
        floats = 1;
    switch (c) {
    case NB_PRIM_BCAST:
        MPI_Bcast(s->recv, s->total, MPI_BYTE, 0, s->comm);
        break;
    case NB_PRIM_REDUCE:
        MPI_Reduce(s->send, s->recv, floats, MPI_FLOAT, MPI_SUM, 0, s->comm);
        break;
    case NB_PRIM_ALLREDUCE:
        MPI_Allreduce(s->send, s->recv, floats, MPI_FLOAT, MPI_SUM, s->comm);
        break;
    case NB_PRIM_GATHER:
        MPI_Gather(s->send, s->block, MPI_BYTE, s->recv, s->block, MPI_BYTE, 0, s->comm);
        break;
    case NB_PRIM_SCATTER:
        /* the scattered block lands where the mock-up's allgather sends it from */
        MPI_Scatter(s->send, s->block, MPI_BYTE, s->recv, s->block, MPI_BYTE, 0, s->comm);
        break;
    case NB_PRIM_ALLGATHER:
        MPI_Allgather(s->send, s->block, MPI_BYTE, s->recv, s->block, MPI_BYTE, s->comm);
        break;
    case NB_PRIM_ALLTOALL:
        MPI_Alltoall(s->send, s->block, MPI_BYTE, s->recv, s->block, MPI_BYTE, s->comm);
        break;
    }
}

static void call_operation(const void *state)
{
    const nb_op_state *s = state;
    for (int i = 0; i < s->op->count; i++)
        call_collective(s, s->op->calls[i]);
}

/* One block: `calls` calls of the operation; returns their median time on rank 0. */
static double time_block(const nb_op_state *s, int calls, nb_window_timing *t)
{
    double *times = nb_calloc_or_abort(s->comm, (size_t)calls, sizeof *times);
    nb_window_time_block(s->comm, call_operation, s, &op_window, calls, times, t);
    double median_us = s->rank == 0 ? nb_median(times, (size_t)t->calls_valid) : NAN;
    free(times);
    return median_us;
}

/* Over the rounds that have a median (NaN: fewer than half of the round's calls were valid; a
 * median of the few calls a descheduled rank left is no figure). */
static void summarise(nb_op_figures *f, int rounds)
{
    double kept[NB_MAX_REPETITIONS] = {0};
    size_t count = 0;
    for (int r = 0; r < rounds; r++)
        if (isfinite(f->round_median_us[r]))
            kept[count++] = f->round_median_us[r];
    f->rounds_valid = (int)count;
    f->median_us = nb_median(kept, count);
    f->spread_us = count > 0 ? nb_max(kept, count) - nb_min(kept, count) : NAN;
}

void nb_time_operations(nb_op_state *s, const nb_operation *const *ops, size_t count, int calls,
                        int rounds, nb_op_figures *figures)
{
    memset(figures, 0, count * sizeof *figures);
    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < count; k++) {
            nb_window_timing t;
            s->op = ops[k];
            double median_us = time_block(s, calls, &t);
            figures[k].round_median_us[r] = 2 * t.calls_valid >= calls ? median_us : NAN;
            figures[k].calls_valid += t.calls_valid;
            figures[k].late_calls += t.late_calls;
            figures[k].calls += calls;
            figures[k].rounds++;
            if (t.sync_error_s > figures[k].sync_error_s)
                figures[k].sync_error_s = t.sync_error_s;
        }
    }
    for (size_t k = 0; k < count; k++)
        summarise(&figures[k], rounds);
}

void nb_check_operation(const nb_context *ctx, const char *name, size_t size,
                        const nb_op_figures *f)
{
    char quantity[96];
    snprintf(quantity, sizeof quantity, "%s[size_bytes=%zu]", name, size);
    /* A round's median counts when at least half of its calls were valid (late calls are left
     * out: one preemption of a rank makes every call of its time slice late, whatever the
     * window); the figure needs at least 2 such rounds and half of them. */
    if (f->rounds_valid < 2 || 2 * f->rounds_valid < f->rounds)
        nb_unreliable(ctx->result, quantity, "only %d of %d rounds had half of their calls "
                      "valid (%d of %d calls late: a rank reached the start after it, at the "
                      "largest window tried)", f->rounds_valid, f->rounds, f->late_calls,
                      f->calls);
    else if (!(f->median_us > 0.0))
        nb_unreliable(ctx->result, quantity, "median time %.3g us is not positive",
                      f->median_us);
    else
        nb_flag_below_timer(ctx, ctx->result, quantity, "median time", f->median_us);
}

void nb_add_timing_row(nb_table *table, const char *name, size_t size, const nb_op_figures *f)
{
    nb_table_add_row(table);
    nb_cell_text(table, "operation", name);
    nb_cell_int(table, "size_bytes", (long long)size);
    nb_cell_int(table, "calls", f->calls);
    nb_cell_int(table, "calls_valid", f->calls_valid);
    nb_cell_int(table, "late_calls", f->late_calls);
    nb_cell_int(table, "rounds_valid", f->rounds_valid);
    nb_cell_real(table, "time_median_us", f->median_us);
    nb_cell_real(table, "time_spread_us", f->spread_us);
}

nb_op_state nb_op_state_new(const nb_context *ctx, size_t buffer_bytes)
{
    nb_op_state s = {.comm = ctx->pair, .rank = ctx->rank, .ranks = ctx->size};
    s.send = nb_buffer_new(buffer_bytes);
    s.recv = nb_buffer_new(buffer_bytes);
    return s;
}

int nb_size_fits_int(size_t bytes)
{
    return bytes <= (size_t)INT_MAX;
}

