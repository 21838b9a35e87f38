/* measure.c - repetition driver, busy waits, the calibrated computation loop, buffers. */
#include "measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Runs the loop on both ranks after a barrier; rank 0 gets its own wall time around the loop
 * (for choosing counts) and the loop's measured seconds. */
static double run_once(const nb_context *ctx, nb_timed_loop loop, void *state, long iterations,
                       double *wall_s)
{
    MPI_Barrier(ctx->pair);
    double start = MPI_Wtime();
    double measured = loop(state, iterations);
    *wall_s = MPI_Wtime() - start;
    return measured;
}

void nb_measure(const nb_context *ctx, nb_timed_loop loop, void *state, long min_iterations,
                long max_iterations, double time_cap_s, int repetitions, nb_measurement *m)
{
    if (max_iterations < 1)
        max_iterations = 1;
    if (min_iterations < 1)
        min_iterations = 1;
    if (min_iterations > max_iterations)
        min_iterations = max_iterations;
    if (repetitions > NB_MAX_REPETITIONS)
        repetitions = NB_MAX_REPETITIONS;

    /* Probe: first contact for this size (registration, first touch) costs extra; it only
     * sizes the warm-up. */
    double wall = 0.0;
    run_once(ctx, loop, state, min_iterations, &wall);
    long warmup = 0;
    if (ctx->rank == 0)
        warmup = clamp_count(WARMUP_FRACTION * time_cap_s / (wall / (double)min_iterations),
                             min_iterations, max_iterations);
    MPI_Bcast(&warmup, 1, MPI_LONG, 0, ctx->pair);

    /* Warm-up; rank 0 estimates the time per iteration and chooses the count for both ranks. */
    run_once(ctx, loop, state, warmup, &wall);
    long iterations = 0;
    if (ctx->rank == 0)
        iterations = clamp_count(time_cap_s / (wall / (double)warmup), min_iterations,
                                 max_iterations);
    MPI_Bcast(&iterations, 1, MPI_LONG, 0, ctx->pair);

    m->iterations = iterations;
    m->repetitions = repetitions;
    for (int r = 0; r < repetitions; r++) {
        double measured = run_once(ctx, loop, state, iterations, &wall);
        m->per_iteration_us[r] = measured / (double)iterations * 1e6;
    }
    if (ctx->rank == 0)
        nb_fill_statistics(m);
}

void nb_check_timer_resolution(const nb_context *ctx, const nb_measurement *m,
                               const char *quantity)
{
    if (ctx->rank != 0 || ctx->result == NULL)
        return;
    double floor_us = 10.0 * ctx->timer_tick_s * 1e6;
    if (m->min_us < floor_us)
        nb_unreliable(ctx->result, quantity, "per-iteration average %.4g us is below 10 x "
                      "MPI_Wtick (%.3g us)", m->min_us, ctx->timer_tick_s * 1e6);
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
