/* measure.c - repetition driver, busy waits, the calibrated computation loop, buffers. */
#include "measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis.h"

/* Share of the time cap spent warming up before the iteration count is chosen. */
#define WARMUP_FRACTION 0.15

static long clamp_count(double wanted, long low, long high)
{
    if (!(wanted >= (double)low))
        return low;
    if (wanted >= (double)high)
        return high;
    return (long)wanted;
}

void nb_fill_statistics(nb_measurement *m)
{
    size_t n = (size_t)m->repetitions;
    m->min_us = nb_min(m->per_iteration_us, n);
    m->median_us = nb_median(m->per_iteration_us, n);
    m->max_us = nb_max(m->per_iteration_us, n);
    m->mad_us = nb_mad(m->per_iteration_us, n);
}

/* Runs the loop on every rank after a barrier. Returns the loop's measured seconds, and in
 * *pace_s the time that sizes the next count: rank 0's wall time around the loop, or the
 * slowest rank's loop time (then on every rank). */
static double run_once(const nb_loop *spec, long iterations, double *pace_s)
{
    MPI_Barrier(spec->comm);
    double start = MPI_Wtime();
    double measured = spec->loop(spec->state, iterations);
    double wall = MPI_Wtime() - start;
    if (pace_s == NULL)
        return measured; /* a timed repetition: nothing to decide */
    if (spec->pacing == NB_PACE_BY_SLOWEST)
        MPI_Allreduce(&measured, pace_s, 1, MPI_DOUBLE, MPI_MAX, spec->comm);
    else
        *pace_s = wall;
    return measured;
}

/* The next count from a loop of `done` iterations that took `seconds`: rank 0's decision,
 * broadcast, or (paced by the slowest rank) the same computation on every rank. */
static long next_count(const nb_loop *spec, double share, double seconds, long done)
{
    long count = clamp_count(share * spec->time_cap_s / (seconds / (double)done),
                             spec->min_iterations, spec->max_iterations);
    if (spec->pacing == NB_PACE_BY_ROOT)
        MPI_Bcast(&count, 1, MPI_LONG, 0, spec->comm);
    return count;
}

void nb_drive(const nb_loop *spec, nb_measurement *m)
{
    nb_loop s = *spec;
    if (s.max_iterations < 1)
        s.max_iterations = 1;
    if (s.min_iterations < 1)
        s.min_iterations = 1;
    if (s.min_iterations > s.max_iterations)
        s.min_iterations = s.max_iterations;
    int repetitions = s.repetitions > NB_MAX_REPETITIONS ? NB_MAX_REPETITIONS : s.repetitions;
    int rank = 0;
    MPI_Comm_rank(s.comm, &rank);

    long iterations = s.fixed_iterations;
    if (iterations <= 0) {
        double pace = 0.0;
        /* Probe: first contact for this size (registration, first touch) costs extra; it only
         * sizes the warm-up. */
        run_once(&s, s.min_iterations, &pace);
        long warmup = next_count(&s, WARMUP_FRACTION, pace, s.min_iterations);
        /* Warm-up; its time per iteration chooses the count for every rank. */
        run_once(&s, warmup, &pace);
        iterations = next_count(&s, 1.0, pace, warmup);
    }

    m->iterations = iterations;
    m->repetitions = repetitions;
    for (int r = 0; r < repetitions; r++) {
        double measured = run_once(&s, iterations, NULL);
        m->per_iteration_us[r] = measured / (double)iterations * 1e6;
    }
    if (s.figure == NB_FIGURE_SLOWEST) {
        double slowest[NB_MAX_REPETITIONS];
        MPI_Reduce(m->per_iteration_us, slowest, repetitions, MPI_DOUBLE, MPI_MAX, 0, s.comm);
        if (rank == 0)
            memcpy(m->per_iteration_us, slowest, (size_t)repetitions * sizeof *slowest);
    }
    nb_fill_statistics(m);
}

void nb_measure(const nb_context *ctx, nb_timed_loop loop, void *state, long min_iterations,
                long max_iterations, double time_cap_s, int repetitions, nb_measurement *m)
{
    nb_loop spec = {
        .comm = ctx->pair,
        .loop = loop,
        .state = state,
        .min_iterations = min_iterations,
        .max_iterations = max_iterations,
        .time_cap_s = time_cap_s,
        .repetitions = repetitions,
        .pacing = NB_PACE_BY_ROOT,
        .figure = NB_FIGURE_OWN,
    };
    nb_drive(&spec, m);
}

int nb_flag_below_timer(const nb_context *ctx, nb_result *result, const char *quantity,
                        const char *what, double time_us)
{
    if (result == NULL || !(time_us < NB_TIMER_TICKS_RESOLVED * ctx->timer_tick_s * 1e6))
        return 0;
    nb_unreliable(result, quantity, "%s %.4g us is below %g x MPI_Wtick (%.3g us)", what,
                  time_us, NB_TIMER_TICKS_RESOLVED, ctx->timer_tick_s * 1e6);
    return 1;
}

void nb_check_timer_resolution(const nb_context *ctx, const nb_measurement *m,
                               const char *quantity)
{
    if (ctx->rank == 0)
        nb_flag_below_timer(ctx, ctx->result, quantity, "per-iteration average", m->min_us);
}

void nb_busy_wait(double seconds)
{
    if (seconds <= 0.0)
        return;
    double end = MPI_Wtime() + seconds;
    while (MPI_Wtime() < end) {
    }
}

void nb_compute(unsigned long units)
{
    volatile unsigned long counter = 0;
    for (unsigned long i = 0; i < units; i++)
        counter = counter + 1;
}

double nb_compute_calibrate(void)
{
    /* Grow the trial until it takes about 1 ms, then keep the fastest of 15 trials. */
    unsigned long units = 1000;
    double elapsed = 0.0;
    while (1) {
        double start = MPI_Wtime();
        nb_compute(units);
        elapsed = MPI_Wtime() - start;
        if (elapsed >= 1e-3 || units > (1ul << 40))
            break;
        units *= 2;
    }
    double best = elapsed;
    for (int trial = 0; trial < 15; trial++) {
        double start = MPI_Wtime();
        nb_compute(units);
        double t = MPI_Wtime() - start;
        if (t < best)
            best = t;
    }
    return best * 1e9 / (double)units;
}

unsigned long nb_compute_units_for(double microseconds, double ns_per_unit)
{
    if (!(microseconds > 0.0) || !(ns_per_unit > 0.0))
        return 0;
    return (unsigned long)llround(microseconds * 1000.0 / ns_per_unit);
}

void *nb_buffer_new(size_t bytes)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t alignment = page > 0 ? (size_t)page : 4096;
    size_t length = bytes > 0 ? bytes : 1;
    void *buffer = NULL;
    if (posix_memalign(&buffer, alignment, length) != 0 || buffer == NULL) {
        fprintf(stderr, "netbench: out of memory: cannot allocate a %zu-byte message buffer\n",
                bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return NULL;
    }
    memset(buffer, 0, length);
    return buffer;
}

void *nb_calloc_or_abort(MPI_Comm comm, size_t count, size_t size)
{
    void *memory = count > 0 && size > 0 ? calloc(count, size) : calloc(1, 1);
    if (memory == NULL) {
        fprintf(stderr, "netbench: out of memory\n");
        MPI_Abort(comm, 1);
    }
    return memory;
}

void nb_quiet_barrier(MPI_Comm comm)
{
#ifdef NB_SIMULATED
    /* In simulated time (SMPI) no rank takes a core from another, and SMPI's MPI_Ibarrier
     * tested between sleeps cost about 0.4 ms x N of simulated time a barrier (a round of the
     * map at 256 nodes: 107 ms, 1.4 ms with MPI_Barrier; 2026-12-07), where the real MPIs'
     * take a few tests: the blocking barrier keeps a simulated step's cost the network's. */
    MPI_Barrier(comm);
#else
    MPI_Request barrier;
    MPI_Ibarrier(comm, &barrier);
    int done = 0;
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 200000};
    while (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        nanosleep(&pause, NULL);
#endif
}

void nb_param_sizes(const nb_context *ctx, const char *key, const size_t *sizes, size_t count)
{
    if (ctx->result == NULL)
        return;
    long long list[NB_MAX_SIZES];
    if (count > NB_MAX_SIZES)
        count = NB_MAX_SIZES;
    for (size_t i = 0; i < count; i++)
        list[i] = (long long)sizes[i];
    nb_param_int_list(ctx->result, key, list, count);
}

void nb_param_common(const nb_context *ctx)
{
    if (ctx->result == NULL)
        return;
    const nb_options *o = ctx->options;
    nb_param_int(ctx->result, "repetitions", o->repetitions);
    nb_param_int(ctx->result, "iterations_max", o->iterations);
    nb_param_real(ctx->result, "time_cap_ms", o->time_cap_ms);
    nb_param_real(ctx->result, "timer_tick_us", ctx->timer_tick_s * 1e6);
}

static unsigned char pattern_byte(size_t i, int sender, unsigned tag)
{
    /* Position, sender and tag all change the value, so a message from the wrong sender, of
     * the wrong phase, or shifted by any offset is caught. */
    return (unsigned char)((i * 131u + (size_t)sender * 31u + (size_t)tag * 7u + 1u) & 0xffu);
}

void nb_fill_message(unsigned char *buffer, size_t bytes, int sender, unsigned tag)
{
    for (size_t i = 0; i < bytes; i++)
        buffer[i] = pattern_byte(i, sender, tag);
}

size_t nb_check_message(const unsigned char *buffer, size_t bytes, int sender, unsigned tag)
{
    size_t wrong = 0;
    for (size_t i = 0; i < bytes; i++)
        wrong += buffer[i] != pattern_byte(i, sender, tag);
    return wrong;
}

size_t nb_memory_per_process(MPI_Comm comm)
{
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int ranks_on_node = 1;
    MPI_Comm_size(node, &ranks_on_node);
    MPI_Comm_free(&node);
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0 || ranks_on_node < 1)
        return 0;
    return (size_t)pages * (size_t)page_size / (size_t)ranks_on_node;
}

double nb_pingpong_loop(void *state, long iterations)
{
    const nb_pingpong *s = state;
    MPI_Comm comm = s->comm;
    MPI_Datatype type = s->count > 0 ? s->type : MPI_BYTE;
    int count = s->count > 0 ? s->count : s->size, tag = s->tag;
    void *send = s->send, *recv = s->recv;
    double start = MPI_Wtime();
    if (s->rank == 0) {
        for (long i = 0; i < iterations; i++) {
            MPI_Send(send, count, type, 1, tag, comm);
            MPI_Recv(recv, count, type, 1, tag, comm, MPI_STATUS_IGNORE);
        }
    } else {
        for (long i = 0; i < iterations; i++) {
            MPI_Recv(recv, count, type, 0, tag, comm, MPI_STATUS_IGNORE);
            MPI_Send(send, count, type, 0, tag, comm);
        }
    }
    return MPI_Wtime() - start;
}

nb_loop nb_options_loop(const nb_options *o, MPI_Comm comm, nb_timed_loop loop, void *state,
                        long min_iterations, nb_pacing pacing)
{
    return (nb_loop){
        .comm = comm,
        .loop = loop,
        .state = state,
        .min_iterations = min_iterations,
        .max_iterations = o->iterations,
        .time_cap_s = o->time_cap_ms * 1e-3,
        .repetitions = o->repetitions,
        .pacing = pacing,
        .figure = NB_FIGURE_OWN,
    };
}

void nb_pingpong_measure(const nb_context *ctx, nb_pingpong *s, size_t size, long min_iterations,
                         nb_measurement *m)
{
    s->size = (int)size;
    nb_loop loop = nb_options_loop(ctx->options, s->comm, nb_pingpong_loop, s, min_iterations,
                                   NB_PACE_BY_ROOT);
    nb_drive(&loop, m);
}

double nb_prtt_loop(void *state, long rounds)
{
    const nb_prtt *s = state;
    MPI_Comm comm = s->comm;
    int count = s->size, n = s->messages;
    double delay = s->delay_s;
    double start = MPI_Wtime();
    if (s->rank == 0) {
        for (long r = 0; r < rounds; r++) {
            MPI_Send(s->send, count, MPI_BYTE, 1, NB_TAG_DATA, comm);
            for (int i = 1; i < n; i++) {
                nb_busy_wait(delay);
                MPI_Send(s->send, count, MPI_BYTE, 1, NB_TAG_DATA, comm);
            }
            MPI_Recv(s->recv, count, MPI_BYTE, 1, NB_TAG_DATA, comm, MPI_STATUS_IGNORE);
        }
    } else {
        for (long r = 0; r < rounds; r++) {
            for (int i = 0; i < n; i++)
                MPI_Recv(s->recv, count, MPI_BYTE, 0, NB_TAG_DATA, comm, MPI_STATUS_IGNORE);
            MPI_Send(s->send, count, MPI_BYTE, 0, NB_TAG_DATA, comm);
        }
    }
    return MPI_Wtime() - start;
}

double nb_prtt_receive_loop(void *state, long rounds)
{
    const nb_prtt *s = state;
    MPI_Comm comm = s->comm;
    int count = s->size;
    double delay = s->delay_s, receiving = 0.0;
    if (s->rank == 0) {
        for (long r = 0; r < rounds; r++) {
            MPI_Send(s->send, count, MPI_BYTE, 1, NB_TAG_DATA, comm);
            nb_busy_wait(delay);
            double start = MPI_Wtime();
            MPI_Recv(s->recv, count, MPI_BYTE, 1, NB_TAG_DATA, comm, MPI_STATUS_IGNORE);
            receiving += MPI_Wtime() - start;
        }
    } else {
        for (long r = 0; r < rounds; r++) {
            MPI_Recv(s->recv, count, MPI_BYTE, 0, NB_TAG_DATA, comm, MPI_STATUS_IGNORE);
            MPI_Send(s->send, count, MPI_BYTE, 0, NB_TAG_DATA, comm);
        }
    }
    return receiving;
}

void nb_prtt_measure(const nb_context *ctx, nb_prtt *s, int n, double delay_us,
                     nb_timed_loop loop, long min_rounds, nb_measurement *m)
{
    const nb_options *o = ctx->options;
    s->messages = n;
    s->delay_s = delay_us * 1e-6;
    nb_measure(ctx, loop, s, min_rounds, o->iterations, o->time_cap_ms * 1e-3, o->repetitions,
               m);
}
