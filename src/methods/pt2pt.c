/* pt2pt.c - pingpong (latency), bibw (ping-pong bandwidth), bothway (both ranks send). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"
#include "floor.h"
#include "pt2pt_catalogue.h"
#include "methods.h"

/* Fewest iterations of one repetition, however slow a size is. */
#define PT2PT_MIN_ITERATIONS 5

/* Zamani §4.1 both-way: both ranks send and receive at the same time. */
static double bothway_loop(void *state, long iterations)
{
    const nb_pingpong *s = state;
    MPI_Comm comm = s->comm;
    int count = s->size, peer = 1 - s->rank;
    void *send = s->send, *recv = s->recv;
    MPI_Request requests[2];
    double start = MPI_Wtime();
    for (long i = 0; i < iterations; i++) {
        MPI_Irecv(recv, count, MPI_BYTE, peer, NB_TAG_DATA, comm, &requests[0]);
        MPI_Isend(send, count, MPI_BYTE, peer, NB_TAG_DATA, comm, &requests[1]);
        nb_waitall(2, requests);
    }
    return MPI_Wtime() - start;
}

/* bytes per microsecond = MB/s (10^6 bytes per second) */
static double bandwidth_MBps(size_t size, double time_us)
{
    if (size == 0)
        return 0.0;
    return time_us > 0.0 ? (double)size / time_us : NAN;
}

typedef enum { REPORT_LATENCY, REPORT_BANDWIDTH, REPORT_BOTHWAY } report_kind;

static void run_exchange(const nb_context *ctx, nb_timed_loop loop, report_kind kind,
                         const nb_table_spec *spec)
{
    const nb_options *o = ctx->options;
    nb_pingpong state = {.comm = ctx->pair, .rank = ctx->rank, .tag = NB_TAG_DATA};
    size_t largest = o->sizes[o->size_count - 1];
    state.send = nb_buffer_new(largest);
    state.recv = nb_buffer_new(largest);

    nb_table *table = NULL;
    if (ctx->result != NULL) {
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        nb_param_common(ctx);
        table = nb_result_add_declared_table(ctx->result, spec);
    }

    /* The latency's own floor, in these processes just before its first size: a VM's host
     * places two idle vCPUs anew between programs (their floor 0.06 or 0.29 us between runs
     * a second apart here, each stable within 3 s of busy polling), so a prologue's floor may
     * be another placement's. */
    if (kind == REPORT_LATENCY)
        nb_measure_floor(ctx, 0);
    double peak = -1.0, first_min = NAN, first_median = NAN;
    size_t peak_size = 0;
    nb_measurement m;
    for (size_t i = 0; i < o->size_count; i++) {
        size_t size = o->sizes[i];
        state.size = (int)size;
        nb_measure(ctx, loop, &state, PT2PT_MIN_ITERATIONS, o->iterations,
                   o->time_cap_ms * 1e-3, o->repetitions, &m);
        if (ctx->rank != 0)
            continue;
        char quantity[96];
        nb_table_add_row(table);
        nb_cell_int(table, "size_bytes", (long long)size);
        nb_cell_int(table, "iterations", m.iterations);
        if (kind == REPORT_BOTHWAY) {
            /* one iteration = one message each way at the same time */
            snprintf(quantity, sizeof quantity, "time_median_us[size_bytes=%zu]", size);
            nb_check_timer_resolution(ctx, &m, quantity);
            double per_direction = bandwidth_MBps(size, m.median_us);
            nb_cell_real(table, "time_median_us", m.median_us);
            nb_cell_real(table, "bandwidth_per_direction_min_MBps", bandwidth_MBps(size, m.max_us));
            nb_cell_real(table, "bandwidth_per_direction_median_MBps", per_direction);
            nb_cell_real(table, "bandwidth_per_direction_max_MBps", bandwidth_MBps(size, m.min_us));
            nb_cell_real(table, "bandwidth_aggregate_median_MBps", 2.0 * per_direction);
            if (per_direction > peak) {
                peak = per_direction;
                peak_size = size;
            }
            continue;
        }
        /* one iteration = one round trip; latency = half of it */
        double min_us = m.min_us / 2, median_us = m.median_us / 2, max_us = m.max_us / 2;
        snprintf(quantity, sizeof quantity, "latency_median_us[size_bytes=%zu]", size);
        nb_check_timer_resolution(ctx, &m, quantity);
        if (kind == REPORT_LATENCY) {
            nb_cell_real(table, "latency_min_us", min_us);
            nb_cell_real(table, "latency_median_us", median_us);
            nb_cell_real(table, "latency_max_us", max_us);
            nb_cell_real(table, "bandwidth_median_MBps", bandwidth_MBps(size, median_us));
            if (i == 0) {
                first_min = min_us;
                first_median = median_us;
            }
        } else {
            double median_bw = bandwidth_MBps(size, median_us);
            nb_cell_real(table, "bandwidth_min_MBps", bandwidth_MBps(size, max_us));
            nb_cell_real(table, "bandwidth_median_MBps", median_bw);
            nb_cell_real(table, "bandwidth_max_MBps", bandwidth_MBps(size, min_us));
            nb_cell_real(table, "latency_median_us", median_us);
            if (median_bw > peak) {
                peak = median_bw;
                peak_size = size;
            }
        }
    }

    if (ctx->result != NULL) {
        nb_result *r = ctx->result;
        if (kind == REPORT_LATENCY) {
            nb_summary_int(r, "latency_small_size_bytes", (long long)o->sizes[0]);
            nb_summary_real(r, "latency_small_min_us", first_min);
            nb_summary_real(r, "latency_small_median_us", first_median);
        } else if (kind == REPORT_BANDWIDTH) {
            nb_summary_real(r, "bandwidth_peak_MBps", peak);
            nb_summary_int(r, "bandwidth_peak_size_bytes", (long long)peak_size);
        } else {
            nb_summary_real(r, "bandwidth_per_direction_peak_MBps", peak);
            nb_summary_real(r, "bandwidth_aggregate_peak_MBps", 2.0 * peak);
            nb_summary_int(r, "bandwidth_peak_size_bytes", (long long)peak_size);
        }
    }
    free(state.send);
    free(state.recv);
}

void run_pingpong(const nb_context *ctx)
{
    run_exchange(ctx, nb_pingpong_loop, REPORT_LATENCY, &pingpong_table);
}

void run_bibw(const nb_context *ctx)
{
    run_exchange(ctx, nb_pingpong_loop, REPORT_BANDWIDTH, &bibw_table);
}

void run_bothway(const nb_context *ctx)
{
    run_exchange(ctx, bothway_loop, REPORT_BOTHWAY, &bothway_table);
}
