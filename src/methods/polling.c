/* polling.c - polling against blocking completion (Kutlug §3.2.6, Zamani et al. §5.4):
 * the same non-blocking ping-pong completed by MPI_Wait, by a busy MPI_Test loop, and by
 * MPI_Test then sched_yield(). */
#include <math.h>
#include <sched.h>
#include <stdlib.h>

#include "polling_catalogue.h"
#include "paired.h"

/* A tag no message carries: the receive whose MPI_Test calls are timed never completes. */
#define NEVER_SENT_TAG 77
/* MPI_Test calls per trial, and trials (the fastest counts: preemption only adds). */
#define TEST_CALLS 20000
#define TEST_TRIALS 5

typedef enum { MODE_BLOCKING, MODE_BUSY_POLL, MODE_TEST_YIELD, MODE_COUNT } polling_mode;

/* Completes `count` requests (1 or 2) by the mode's mechanism. MPICH defines
 * MPI_STATUSES_IGNORE as (MPI_Status *)1, which gcc's access analysis takes for an empty array
 * (see nb_waitall); silenced here only. */
static inline __attribute__((always_inline)) void complete(int count, MPI_Request *requests,
                                                           polling_mode mode)
{
    if (mode == MODE_BLOCKING) {
        nb_waitall(count, requests);
        return;
    }
    int done = 0;
    for (;;) {
        if (count == 1) {
            MPI_Test(requests, &done, MPI_STATUS_IGNORE);
        } else {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
            MPI_Testall(count, requests, &done, MPI_STATUSES_IGNORE);
#pragma GCC diagnostic pop
        }
        if (done)
            return;
        if (mode == MODE_TEST_YIELD)
            sched_yield();
    }
}

/* Rank 0: MPI_Irecv of the reply, MPI_Isend of the message, complete both; rank 1: MPI_Irecv,
 * complete, MPI_Isend of the reply, complete. One iteration = one round trip. The mode is a
 * constant in each caller, so every mode gets its own loop without a branch on it. */
static inline __attribute__((always_inline)) double pingpong(const nb_pingpong *s,
                                                             long iterations, polling_mode mode)
{
    MPI_Comm comm = s->comm;
    int count = s->size;
    void *send = s->send, *recv = s->recv;
    MPI_Request requests[2];
    double start = MPI_Wtime();
    if (s->rank == 0) {
        for (long i = 0; i < iterations; i++) {
            MPI_Irecv(recv, count, MPI_BYTE, 1, NB_TAG_DATA, comm, &requests[0]);
            MPI_Isend(send, count, MPI_BYTE, 1, NB_TAG_DATA, comm, &requests[1]);
            complete(2, requests, mode);
        }
    } else {
        for (long i = 0; i < iterations; i++) {
            MPI_Irecv(recv, count, MPI_BYTE, 0, NB_TAG_DATA, comm, &requests[0]);
            complete(1, requests, mode);
            MPI_Isend(send, count, MPI_BYTE, 0, NB_TAG_DATA, comm, &requests[0]);
            complete(1, requests, mode);
        }
    }
    return MPI_Wtime() - start;
}

NB_VARIANT_LOOP(blocking_loop, pingpong, MODE_BLOCKING)
NB_VARIANT_LOOP(busy_poll_loop, pingpong, MODE_BUSY_POLL)
NB_VARIANT_LOOP(test_yield_loop, pingpong, MODE_TEST_YIELD)

/* Periods of the busy-poll loop by which MPI_Wait may beat it: a message that arrives during an
 * MPI_Test call is seen at the next one, up to one period late per completion on the critical
 * path; a round trip has 3 polled loops (rank 1: receive, send; rank 0: both at once), plus
 * MPI_Testall's longer call, so up to 2 periods per latency (round trip / 2). */
#define POLL_PERIODS_RESOLVED 2.0

/* Microseconds per MPI_Test call on a pending receive (from this rank itself, with a tag
 * nothing sends; cancelled after), the slower rank's: the period of the busy-poll loop.
 * MPI_Wait, which polls inside the library without re-entering it, may beat the loop by
 * POLL_PERIODS_RESOLVED periods: not a negative cost of blocking. */
static double test_call_us(const nb_context *ctx)
{
    MPI_Request request;
    char byte;
    MPI_Irecv(&byte, 1, MPI_BYTE, ctx->rank, NEVER_SENT_TAG, ctx->pair, &request);
    double fastest = INFINITY;
    int done = 0;
    for (int trial = 0; trial < TEST_TRIALS; trial++) {
        double start = MPI_Wtime();
        for (long i = 0; i < TEST_CALLS; i++)
            MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        double seconds = (MPI_Wtime() - start) / TEST_CALLS;
        if (seconds < fastest)
            fastest = seconds;
    }
    MPI_Cancel(&request);
    MPI_Wait(&request, MPI_STATUS_IGNORE);
    double slower = 0.0;
    MPI_Allreduce(&fastest, &slower, 1, MPI_DOUBLE, MPI_MAX, ctx->pair);
    return slower * 1e6;
}

/* The baseline comes first (nb_paired_measure sizes the rounds on variants[0]): busy polling,
 * the fastest way to notice a completion, against which blocking is a cost (Kutlug: "the cost
 * of blocking by comparing the results ... to the latency results" of the polling test). */
static const nb_paired_variant polling_variants[MODE_COUNT] = {
    {"busy_poll", busy_poll_loop},
    {"blocking", blocking_loop},
    {"test_yield", test_yield_loop},
};
enum { BUSY_POLL = 0, BLOCKING = 1, TEST_YIELD = 2 };

typedef struct {
    nb_paired_tables tables;
    double poll_period_us;     /* one MPI_Test call, the busy-poll loop's period */
} polling_tables_out;

static void write_polling_size(const nb_context *ctx, size_t index, size_t size,
                               nb_paired_measurement *m, void *user)
{
    const polling_tables_out *out = user;
    m->baseline_resolution_us = POLL_PERIODS_RESOLVED * out->poll_period_us;
    nb_paired_add_latency_rows(ctx, out->tables.latency, "mode", polling_variants, m, size);
    nb_paired_add_cost_rows(ctx, out->tables.comparison, "mode", polling_variants, m, size,
                            BUSY_POLL);
    if (index == 0) {
        /* The smallest size: the figures the summary carries. */
        nb_result *r = ctx->result;
        nb_summary_int(r, "small_size_bytes", (long long)size);
        nb_summary_real(r, "busy_poll_latency_small_us", m->median_us[BUSY_POLL]);
        nb_summary_real(r, "blocking_latency_small_us", m->median_us[BLOCKING]);
        nb_summary_real(r, "test_yield_latency_small_us", m->median_us[TEST_YIELD]);
        nb_paired_summary_cost(ctx, "blocking_cost_small", polling_variants, m, BLOCKING,
                               BUSY_POLL);
        nb_paired_summary_cost(ctx, "test_yield_cost_small", polling_variants, m, TEST_YIELD,
                               BUSY_POLL);
    }
}

void run_polling(const nb_context *ctx)
{
    nb_pingpong state = nb_paired_pair(ctx);

    polling_tables_out out = {nb_paired_begin(ctx, &polling_table, &polling_cost_table), 0.0};
    out.poll_period_us = test_call_us(ctx);
    if (ctx->result != NULL)
        nb_summary_real(ctx->result, "test_call_us", out.poll_period_us);
    nb_paired_sweep(ctx, polling_variants, MODE_COUNT, &state, &state.size, write_polling_size,
                    &out);
    nb_paired_release(&state);
}
