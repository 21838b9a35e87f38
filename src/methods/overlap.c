/* overlap.c - send/receive overhead by CPU overlap (Bell et al. §4.3) and the overlap
 * potential of a non-blocking ping-pong per size (Zamani et al. §5.6). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"
#include "overlap_catalogue.h"
#include "methods.h"

/* Sweeps run from 0 to SPAN_FACTOR x T(0); when no point is slower than the tolerance allows,
 * the sweep goes on to twice the span, at most MAX_EXTENSIONS times. */
#define SPAN_FACTOR 3.0
#define MAX_EXTENSIONS 2
#define OVERLAP_MIN_ITERATIONS 5
#define REPLY_BYTES 8

/* ------------------------------------------------------------------------------------------ */
/* Timed loops                                                                                  */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    MPI_Comm pair;
    int rank;
    int size;
    void *send;
    void *recv;
    char reply[REPLY_BYTES];
    double ns_per_unit;           /* this rank's compute calibration */
    unsigned long send_units;     /* computation between MPI_Isend and MPI_Wait (rank 0) */
    unsigned long recv_units;     /* computation between MPI_Irecv and MPI_Wait (rank 1) */
    unsigned long pingpong_units; /* computation inside the non-blocking ping-pong (rank 0) */
} overlap_state;

/* Bell §4.3: the flood test at q = 1 with computation between initiation and completion.
 * One iteration = one message; rank 1's reply after the last message closes the timing. */
static double overhead_loop(void *state, long messages)
{
    overlap_state *s = state;
    MPI_Comm comm = s->pair;
    int count = s->size;
    MPI_Request request;
    double start = MPI_Wtime();
    if (s->rank == 0) {
        unsigned long units = s->send_units;
        for (long i = 0; i < messages; i++) {
            MPI_Isend(s->send, count, MPI_BYTE, 1, NB_TAG_DATA, comm, &request);
            nb_compute(units);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
        }
        MPI_Recv(s->reply, REPLY_BYTES, MPI_BYTE, 1, NB_TAG_REPLY, comm,
                 MPI_STATUS_IGNORE);
    } else {
        unsigned long units = s->recv_units;
        for (long i = 0; i < messages; i++) {
            MPI_Irecv(s->recv, count, MPI_BYTE, 0, NB_TAG_DATA, comm, &request);
            nb_compute(units);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
        }
        MPI_Send(s->reply, REPLY_BYTES, MPI_BYTE, 0, NB_TAG_REPLY, comm);
    }
    return MPI_Wtime() - start;
}

/* Zamani §5.6: non-blocking ping-pong with computation between posting and waiting (rank 0).
 * One iteration = one round trip. */
static double pingpong_overlap_loop(void *state, long iterations)
{
    const overlap_state *s = state;
    MPI_Comm comm = s->pair;
    int count = s->size;
    MPI_Request requests[2];
    double start = MPI_Wtime();
    if (s->rank == 0) {
        unsigned long units = s->pingpong_units;
        for (long i = 0; i < iterations; i++) {
            MPI_Irecv(s->recv, count, MPI_BYTE, 1, NB_TAG_DATA, comm, &requests[0]);
            MPI_Isend(s->send, count, MPI_BYTE, 1, NB_TAG_DATA, comm, &requests[1]);
            nb_compute(units);
            nb_waitall(2, requests);
        }
    } else {
        for (long i = 0; i < iterations; i++) {
            MPI_Irecv(s->recv, count, MPI_BYTE, 0, NB_TAG_DATA, comm, &requests[0]);
            MPI_Wait(&requests[0], MPI_STATUS_IGNORE);
            MPI_Isend(s->send, count, MPI_BYTE, 0, NB_TAG_DATA, comm, &requests[1]);
            MPI_Wait(&requests[1], MPI_STATUS_IGNORE);
        }
    }
    return MPI_Wtime() - start;
}

/* Where the computation of a sweep goes. */
typedef enum { COMPUTE_SEND, COMPUTE_RECV, COMPUTE_PINGPONG } compute_place;

static void set_compute(overlap_state *s, compute_place place, double compute_us)
{
    unsigned long units = nb_compute_units_for(compute_us, s->ns_per_unit);
    s->send_units = place == COMPUTE_SEND && s->rank == 0 ? units : 0;
    s->recv_units = place == COMPUTE_RECV && s->rank == 1 ? units : 0;
    s->pingpong_units = place == COMPUTE_PINGPONG && s->rank == 0 ? units : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Sweeps                                                                                       */
/* ------------------------------------------------------------------------------------------ */

typedef struct {
    size_t count;
    double *compute_us;        /* ascending, compute_us[0] = 0 */
    double *time_us;           /* rank 0: median time per iteration */
    double time0_us;           /* T(0) */
    int knee_found;            /* some point is slower than T(0) x (1 + tolerance) */
    double knee_us;            /* nb_overlap_knee, when found */
} sweep_result;

/* Measures T(c) from c = 0 upward (both ranks); T(0) and the extension decisions are made on
 * rank 0 and broadcast, so both ranks run the same points. */
static void run_sweep(const nb_context *ctx, overlap_state *state, compute_place place,
                      nb_timed_loop loop, sweep_result *sweep)
{
    const nb_options *o = ctx->options;
    const overlap_settings *os = o->settings;
    size_t capacity = 1 + (size_t)os->compute_steps * (MAX_EXTENSIONS + 1);
    sweep->compute_us = nb_calloc_or_abort(MPI_COMM_WORLD, capacity, sizeof *sweep->compute_us);
    sweep->time_us = nb_calloc_or_abort(MPI_COMM_WORLD, capacity, sizeof *sweep->time_us);
    nb_measurement m;
    set_compute(state, place, 0.0);
    nb_measure(ctx, loop, state, OVERLAP_MIN_ITERATIONS, o->iterations, o->time_cap_ms * 1e-3,
               o->repetitions, &m);
    double time0 = ctx->rank == 0 ? m.median_us : 0.0;
    MPI_Bcast(&time0, 1, MPI_DOUBLE, 0, ctx->pair);
    sweep->time0_us = time0;
    sweep->compute_us[0] = 0.0;
    sweep->time_us[0] = time0;
    sweep->count = 1;
    if (ctx->rank == 0) {
        char quantity[96];
        snprintf(quantity, sizeof quantity, "T0_us[side=%s,size_bytes=%d]",
                 place == COMPUTE_SEND ? "send" : place == COMPUTE_RECV ? "recv" : "pingpong",
                 state->size);
        nb_check_timer_resolution(ctx, &m, quantity);
    }

    double from = 0.0, to = SPAN_FACTOR * time0;
    int found = 0;
    for (int extension = 0; extension <= MAX_EXTENSIONS && !found; extension++) {
        for (int k = 1; k <= os->compute_steps; k++) {
            double c = from + (to - from) * k / os->compute_steps;
            set_compute(state, place, c);
            nb_measure(ctx, loop, state, OVERLAP_MIN_ITERATIONS, o->iterations,
                       o->time_cap_ms * 1e-3, o->repetitions, &m);
            sweep->compute_us[sweep->count] = c;
            sweep->time_us[sweep->count] = ctx->rank == 0 ? m.median_us : 0.0;
            sweep->count++;
        }
        if (ctx->rank == 0)
            for (size_t i = 1; i < sweep->count; i++)
                if (sweep->time_us[i] > time0 * (1.0 + os->tolerance))
                    found = 1;
        MPI_Bcast(&found, 1, MPI_INT, 0, ctx->pair);
        from = to;
        to *= 2.0;
    }
    set_compute(state, place, 0.0);
    sweep->knee_found = found;
    sweep->knee_us = NAN;
    if (ctx->rank == 0 && found)
        sweep->knee_us = nb_overlap_knee(sweep->compute_us, sweep->time_us, sweep->count, time0,
                                         os->tolerance);
}

static void free_sweep(sweep_result *sweep)
{
    free(sweep->compute_us);
    free(sweep->time_us);
}

/* Rank 0: o = T(0) - c_max (Bell §4.3), with the rules for noise described in the help. */
static double overhead_from_sweep(const nb_context *ctx, const sweep_result *sweep,
                                  const char *quantity)
{
    const overlap_settings *os = ctx->options->settings;
    if (!sweep->knee_found) {
        nb_unreliable(ctx->result, quantity, "no knee: T(c) stayed within %.0f%% of T(0) = %.4g "
                      "us up to c = %.4g us", 100.0 * os->tolerance, sweep->time0_us,
                      sweep->compute_us[sweep->count - 1]);
        return NAN;
    }
    double overhead = sweep->time0_us - sweep->knee_us;
    if (overhead >= 0.0)
        return overhead;
    if (overhead >= -os->tolerance * sweep->time0_us)
        return 0.0; /* below the resolution of the sweep */
    nb_unreliable(ctx->result, quantity, "knee at c = %.4g us lies beyond T(0) = %.4g us by more "
                  "than the tolerance: the computation did not gate the time per message",
                  sweep->knee_us, sweep->time0_us);
    return NAN;
}

/* ------------------------------------------------------------------------------------------ */
/* The method                                                                                   */
/* ------------------------------------------------------------------------------------------ */

void run_overlap(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const overlap_settings *os = o->settings;
    size_t largest = o->sizes[o->size_count - 1];
    if (os->overhead_size > largest)
        largest = os->overhead_size;
    overlap_state state = {.pair = ctx->pair, .rank = ctx->rank};
    state.send = nb_buffer_new(largest);
    state.recv = nb_buffer_new(largest);

    /* Calibrate the computation on each rank, on its own core. */
    state.ns_per_unit = nb_compute_calibrate();
    double calibration[2] = {state.ns_per_unit, state.ns_per_unit};
    MPI_Gather(&state.ns_per_unit, 1, MPI_DOUBLE, calibration, 1, MPI_DOUBLE, 0, ctx->pair);

    nb_result *r = ctx->result;
    nb_table *sweep_table = NULL, *potential_table = NULL, *potential_sweep_table = NULL;
    if (r != NULL) {
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        nb_param_common(ctx);
        nb_param_int(r, "overhead_size_bytes", (long long)os->overhead_size);
        nb_param_real(r, "tolerance", os->tolerance);
        nb_param_int(r, "compute_steps", os->compute_steps);
        sweep_table = nb_result_add_declared_table(r, &overhead_sweep_table);
    }

    /* o_s and o_r: Bell §4.3 */
    double overhead[2] = {NAN, NAN}, time0[2] = {NAN, NAN};
    static const char *const sides[2] = {"send", "recv"};
    static const compute_place places[2] = {COMPUTE_SEND, COMPUTE_RECV};
    static const char *const quantities[2] = {"o_s_us", "o_r_us"};
    state.size = (int)os->overhead_size;
    for (int side = 0; side < 2; side++) {
        sweep_result sweep;
        run_sweep(ctx, &state, places[side], overhead_loop, &sweep);
        if (r != NULL) {
            for (size_t i = 0; i < sweep.count; i++) {
                nb_table_add_row(sweep_table);
                nb_cell_text(sweep_table, "side", sides[side]);
                nb_cell_real(sweep_table, "compute_us", sweep.compute_us[i]);
                nb_cell_real(sweep_table, "time_per_message_median_us", sweep.time_us[i]);
            }
            time0[side] = sweep.time0_us;
            overhead[side] = overhead_from_sweep(ctx, &sweep, quantities[side]);
        }
        free_sweep(&sweep);
    }

    /* Overlap potential per size: Zamani §5.6 */
    if (r != NULL) {
        potential_table = nb_result_add_declared_table(r, &overlap_potential_table);
        potential_sweep_table = nb_result_add_declared_table(r, &overlap_potential_sweep_table);
    }
    for (size_t i = 0; i < o->size_count; i++) {
        size_t size = o->sizes[i];
        state.size = (int)size;
        sweep_result sweep;
        run_sweep(ctx, &state, COMPUTE_PINGPONG, pingpong_overlap_loop, &sweep);
        if (r != NULL) {
            /* one iteration = one round trip; latency = half of it */
            double latency = sweep.time0_us / 2.0;
            double overlap = sweep.knee_found ? sweep.knee_us : NAN;
            if (!sweep.knee_found) {
                char quantity[64];
                snprintf(quantity, sizeof quantity, "overlap_us[size_bytes=%zu]", size);
                nb_unreliable(r, quantity, "no knee: the latency stayed within %.0f%% of %.4g us "
                              "up to c = %.4g us", 100.0 * os->tolerance, latency,
                              sweep.compute_us[sweep.count - 1]);
            }
            nb_table_add_row(potential_table);
            nb_cell_int(potential_table, "size_bytes", (long long)size);
            nb_cell_real(potential_table, "latency_median_us", latency);
            nb_cell_real(potential_table, "overlap_us", overlap);
            nb_cell_real(potential_table, "overlap_percent", 100.0 * overlap / latency);
            for (size_t k = 0; k < sweep.count; k++) {
                nb_table_add_row(potential_sweep_table);
                nb_cell_int(potential_sweep_table, "size_bytes", (long long)size);
                nb_cell_real(potential_sweep_table, "compute_us", sweep.compute_us[k]);
                nb_cell_real(potential_sweep_table, "latency_median_us", sweep.time_us[k] / 2.0);
            }
        }
        free_sweep(&sweep);
    }

    if (r != NULL) {
        nb_summary_real(r, "o_s_us", overhead[0]);
        nb_summary_real(r, "o_r_us", overhead[1]);
        nb_summary_real(r, "g_send_q1_us", time0[0]);
        nb_summary_real(r, "g_recv_q1_us", time0[1]);
        nb_summary_int(r, "overhead_size_bytes", (long long)os->overhead_size);
        nb_summary_real(r, "tolerance", os->tolerance);
        nb_summary_real(r, "compute_calibration_ns_per_unit", calibration[0]);
        nb_summary_real(r, "compute_calibration_rank1_ns_per_unit", calibration[1]);
    }
    free(state.send);
    free(state.recv);
}

/* Before MPI: a send and a receive buffer of the largest size or --overhead-size. */
unsigned long long overlap_buffer_bytes(const nb_options *o, char *how, size_t length,
                                        const char **hint)
{
    const overlap_settings *os = o->settings;
    size_t largest = nb_largest_size(o);
    return nb_send_receive_bytes(os->overhead_size > largest ? os->overhead_size : largest, how,
                                 length, hint);
}
