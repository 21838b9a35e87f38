/* anysource.c - the cost of a wildcard receive (Kutlug §4.2.6, "Effect of Completion
 * Queues"): the same blocking ping-pong receiving with the source named, with MPI_ANY_SOURCE,
 * and with MPI_ANY_SOURCE and MPI_ANY_TAG. */
#include <stdlib.h>

#include "anysource_catalogue.h"
#include "paired.h"

/* The pingpong loop (Bell §4.1: MPI_Send, MPI_Recv) with the receive's source and tag as
 * given; one iteration = one round trip. */
static inline __attribute__((always_inline)) double pingpong(const nb_pingpong *s,
                                                             long iterations, int source,
                                                             int tag)
{
    MPI_Comm comm = s->comm;
    int count = s->size, peer = 1 - s->rank;
    void *send = s->send, *recv = s->recv;
    double start = MPI_Wtime();
    if (s->rank == 0) {
        for (long i = 0; i < iterations; i++) {
            MPI_Send(send, count, MPI_BYTE, peer, NB_TAG_DATA, comm);
            MPI_Recv(recv, count, MPI_BYTE, source, tag, comm, MPI_STATUS_IGNORE);
        }
    } else {
        for (long i = 0; i < iterations; i++) {
            MPI_Recv(recv, count, MPI_BYTE, source, tag, comm, MPI_STATUS_IGNORE);
            MPI_Send(send, count, MPI_BYTE, peer, NB_TAG_DATA, comm);
        }
    }
    return MPI_Wtime() - start;
}

static double named_loop(void *state, long iterations)
{
    const nb_pingpong *s = state;
    return pingpong(s, iterations, 1 - s->rank, NB_TAG_DATA);
}

NB_VARIANT_LOOP(any_source_loop, pingpong, MPI_ANY_SOURCE, NB_TAG_DATA)
NB_VARIANT_LOOP(any_source_any_tag_loop, pingpong, MPI_ANY_SOURCE, MPI_ANY_TAG)

/* The baseline, the named receive, first (nb_paired_measure sizes the rounds on it). */
enum { NAMED, ANY_SOURCE, ANY_SOURCE_ANY_TAG, RECEIVE_COUNT };
static const nb_paired_variant anysource_variants[RECEIVE_COUNT] = {
    {"named", named_loop},
    {"any_source", any_source_loop},
    {"any_source_any_tag", any_source_any_tag_loop},
};

static void write_anysource_size(const nb_context *ctx, size_t index, size_t size,
                                 nb_paired_measurement *m, void *user)
{
    const nb_paired_tables *out = user;
    nb_paired_add_latency_rows(ctx, out->latency, "receive", anysource_variants, m, size);
    nb_paired_add_cost_rows(ctx, out->comparison, "receive", anysource_variants, m, size, NAMED);
    if (index == 0) {
        /* The smallest size: the figures the summary carries. */
        nb_summary_int(ctx->result, "small_size_bytes", (long long)size);
        nb_summary_real(ctx->result, "named_latency_small_us", m->median_us[NAMED]);
        nb_summary_real(ctx->result, "any_source_latency_small_us", m->median_us[ANY_SOURCE]);
        nb_summary_real(ctx->result, "any_source_any_tag_latency_small_us",
                        m->median_us[ANY_SOURCE_ANY_TAG]);
        nb_paired_summary_cost(ctx, "any_source_cost_small", anysource_variants, m,
                               ANY_SOURCE, NAMED);
        nb_paired_summary_cost(ctx, "any_source_any_tag_cost_small", anysource_variants, m,
                               ANY_SOURCE_ANY_TAG, NAMED);
    }
}

void run_anysource(const nb_context *ctx)
{
    nb_pingpong state = nb_paired_pair(ctx);

    nb_paired_tables out = nb_paired_begin(ctx, &anysource_table, &anysource_cost_table);
    nb_paired_sweep(ctx, anysource_variants, RECEIVE_COUNT, &state, &state.size,
                    write_anysource_size, &out);
    nb_paired_release(&state);
}
