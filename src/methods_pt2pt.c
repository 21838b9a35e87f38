/* methods_pt2pt.c - pingpong (latency), bibw (ping-pong bandwidth), bothway (both ranks send). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "analysis.h"
#include "methods.h"

/* Fewest iterations of one repetition, however slow a size is. */
#define PT2PT_MIN_ITERATIONS 5

/* Output tables (docs/output-format.md). */
static const nb_column pingpong_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_LATENCY_COLUMNS,
    NB_HIGHER("bandwidth_median_MBps", "MBps"),
};
static const nb_table_spec pingpong_table = NB_TABLE_SPEC("pingpong", pingpong_columns);

static const nb_column bibw_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("iterations", "count"),
    NB_HIGHER("bandwidth_min_MBps", "MBps"),
    NB_HIGHER("bandwidth_median_MBps", "MBps"),
    NB_HIGHER("bandwidth_max_MBps", "MBps"),
    NB_LOWER("latency_median_us", "us"),
};
static const nb_table_spec bibw_table = NB_TABLE_SPEC("bibw", bibw_columns);

static const nb_column bothway_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("iterations", "count"),
    NB_LOWER("time_median_us", "us"),
    NB_HIGHER("bandwidth_per_direction_min_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_direction_median_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_direction_max_MBps", "MBps"),
    NB_HIGHER("bandwidth_aggregate_median_MBps", "MBps"),
};
static const nb_table_spec bothway_table = NB_TABLE_SPEC("bothway", bothway_columns);

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

static void run_pingpong(const nb_context *ctx)
{
    run_exchange(ctx, nb_pingpong_loop, REPORT_LATENCY, &pingpong_table);
}

static void run_bibw(const nb_context *ctx)
{
    run_exchange(ctx, nb_pingpong_loop, REPORT_BANDWIDTH, &bibw_table);
}

static void run_bothway(const nb_context *ctx)
{
    run_exchange(ctx, bothway_loop, REPORT_BOTHWAY, &bothway_table);
}

/* ------------------------------------------------------------------------------------------ */
/* The declarations                                                                             */
/* ------------------------------------------------------------------------------------------ */

static const nb_option pt2pt_options[] = {
    NB_USE_SIZES("8", "4M"),
    NB_USE_REPEATS("11", "10000", "30"),
};

static const nb_table_spec *const pingpong_tables[] = {&pingpong_table, NULL};
static const nb_table_spec *const bibw_tables[] = {&bibw_table, NULL};
static const nb_table_spec *const bothway_tables[] = {&bothway_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column pingpong_figures[] = {
    NB_KEY("latency_small_size_bytes", "bytes"),
    NB_LOWER("latency_small_min_us", "us"),
    NB_LOWER("latency_small_median_us", "us"),
};

const nb_method nb_method_pingpong = {
    .name = "pingpong",
    .summary = "end-to-end latency: blocking ping-pong, half the round trip (Bell 4.1)",
    .description =
        "End-to-end latency (EEL), Bell et al. section 4.1 and Kutlug section 3.2.1: rank 0\n"
        "sends a message with MPI_Send, rank 1 receives it with MPI_Recv and sends one of the\n"
        "same size back; latency = round trip / 2. The timed loop holds nothing but these two\n"
        "calls on buffers allocated and touched beforehand.\n"
        "Per size: a warm-up, then as many iterations as fit in --time-cap-ms, at most\n"
        "--iterations (rank 0 chooses the count from the warm-up and sends it to rank 1, so\n"
        "both ranks run the same loop), repeated --repetitions times; the table gives the\n"
        "min, median and max over the repetitions (Bell et al. report the minimum of >= 10\n"
        "runs). Sizes are powers of two; 0 and 1 byte only when asked for (--sizes 0,1,8 or\n"
        "--min-size 0).",
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_POWERS_OF_2,
    NB_DECLARES(pt2pt_options, pingpong_tables, pingpong_figures),
    .run = run_pingpong,
};

/* Its summary figures (docs/output-format.md). */
static const nb_column bibw_figures[] = {
    NB_HIGHER("bandwidth_peak_MBps", "MBps"),
    NB_KEY("bandwidth_peak_size_bytes", "bytes"),
};

const nb_method nb_method_bibw = {
    .name = "bibw",
    .summary = "ping-pong bandwidth: size / (round trip / 2) (Zamani 4.1 'bidirectional')",
    .description =
        "Ping-pong bandwidth, Zamani et al. section 4.1 (their 'bidirectional' test: the\n"
        "receiver replies with a message of the same size): the same blocking MPI_Send /\n"
        "MPI_Recv exchange as pingpong, reported as bandwidth = size / (round trip / 2),\n"
        "in MB/s (1 MB = 10^6 bytes). Min/median/max are over --repetitions repetitions, each\n"
        "of as many iterations as fit in --time-cap-ms (at most --iterations).",
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_POWERS_OF_2,
    NB_DECLARES(pt2pt_options, bibw_tables, bibw_figures),
    .run = run_bibw,
};

/* Its summary figures (docs/output-format.md). */
static const nb_column bothway_figures[] = {
    NB_HIGHER("bandwidth_per_direction_peak_MBps", "MBps"),
    NB_HIGHER("bandwidth_aggregate_peak_MBps", "MBps"),
    NB_KEY("bandwidth_peak_size_bytes", "bytes"),
};

const nb_method nb_method_bothway = {
    .name = "bothway",
    .summary = "both ranks send at once: Isend+Irecv on both sides (Zamani 4.1, IMB PingPing)",
    .description =
        "Both-way bandwidth, Zamani et al. section 4.1 ('both the sender and receiver send\n"
        "data simultaneously'), like IMB PingPing: in every iteration both ranks post\n"
        "MPI_Irecv and MPI_Isend of the same size and wait for both with MPI_Waitall.\n"
        "Bandwidth per direction = size / time per iteration; the aggregate is twice that.\n"
        "Min/median/max are over --repetitions repetitions, each of as many iterations as fit\n"
        "in --time-cap-ms (at most --iterations).",
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_POWERS_OF_2,
    NB_DECLARES(pt2pt_options, bothway_tables, bothway_figures),
    .run = run_bothway,
};
