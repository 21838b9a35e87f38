/* methods_anysource.c - the cost of a wildcard receive (Kutlug §4.2.6, "Effect of Completion
 * Queues"): the same blocking ping-pong receiving with the source named, with MPI_ANY_SOURCE,
 * and with MPI_ANY_SOURCE and MPI_ANY_TAG. */
#include <stdlib.h>

#include "paired.h"

/* Output tables (docs/output-format.md). */
static const nb_column anysource_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("receive", ""),
    NB_LATENCY_COLUMNS,
};
static const nb_table_spec anysource_table = NB_TABLE_SPEC("anysource", anysource_columns);

static const nb_column anysource_cost_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("receive", ""),
    NB_KEY("against", ""),
    NB_LOWER("cost_us", "us"),
    NB_LOWER("cost_ratio", "ratio"),
    NB_KEY("noise_floor_us", "us"),
};
static const nb_table_spec anysource_cost_table =
    NB_TABLE_SPEC("anysource_cost", anysource_cost_columns);

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

typedef struct {
    nb_table *latency, *cost;
} anysource_tables_out;

static void write_anysource_size(const nb_context *ctx, size_t index, size_t size,
                                 nb_paired_measurement *m, void *user)
{
    const anysource_tables_out *out = user;
    nb_paired_add_latency_rows(ctx, out->latency, "receive", anysource_variants, m, size);
    nb_paired_add_cost_rows(ctx, out->cost, "receive", anysource_variants, m, size, NAMED);
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

static void run_anysource(const nb_context *ctx)
{
    nb_pingpong state = nb_paired_pair(ctx);

    anysource_tables_out out = {NULL, NULL};
    if (ctx->result != NULL) {
        nb_paired_parameters(ctx);
        out.latency = nb_result_add_declared_table(ctx->result, &anysource_table);
        out.cost = nb_result_add_declared_table(ctx->result, &anysource_cost_table);
    }
    nb_paired_sweep(ctx, anysource_variants, RECEIVE_COUNT, &state, &state.size,
                    write_anysource_size, &out);
    nb_paired_release(&state);
}

/* ------------------------------------------------------------------------------------------ */
/* The declaration                                                                              */
/* ------------------------------------------------------------------------------------------ */

static const nb_option anysource_options[] = {
    NB_USE_SIZES("8", "64K"),
    NB_USE_REPEATS("11", "10000", "2"),
};

static const nb_table_spec *const anysource_tables[] = {&anysource_table, &anysource_cost_table,
                                                        NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column anysource_figures[] = {
    NB_KEY("small_size_bytes", "bytes"),
    NB_LOWER("named_latency_small_us", "us"),
    NB_LOWER("any_source_latency_small_us", "us"),
    NB_LOWER("any_source_any_tag_latency_small_us", "us"),
    NB_LOWER("any_source_cost_small_us", "us"),
    NB_LOWER("any_source_cost_small_ratio", "ratio"),
    NB_LOWER("any_source_any_tag_cost_small_us", "us"),
    NB_LOWER("any_source_any_tag_cost_small_ratio", "ratio"),
};

const nb_method nb_method_anysource = {
    .name = "anysource",
    .summary = "receive from MPI_ANY_SOURCE (/ANY_TAG) vs a named source (Kutlug 4.2.6)",
    .description =
        "Effect of completion queues, Kutlug section 4.2.6: 'we modify the latency test and in\n"
        "the receive primitive, we specify MPI_ANY instead of a specific node ... The\n"
        "difference between the measured latency and the standard latency gives us the\n"
        "effect'. The blocking ping-pong of pingpong (MPI_Send, MPI_Recv; latency = round trip\n"
        "/ 2) with the MPI_Recv of both ranks receiving three ways: 'named' (source = the peer,\n"
        "tag given), 'any_source' (MPI_ANY_SOURCE, tag given) and 'any_source_any_tag'\n"
        "(MPI_ANY_SOURCE and MPI_ANY_TAG). The cost of a wildcard = its latency - named's;\n"
        "cost_ratio = its latency / named's.\n"
        "Per size the receives take turns: each receive's iteration count from a probe and a\n"
        "warm-up of it (as many round trips as fit in --time-cap-ms, at most --iterations),\n"
        "then --repetitions rounds, each running every receive once in a rotated order.\n"
        "Latencies: min/median/max over the rounds. A cost is the\n"
        "median over the rounds of the paired difference within a round, so a slow phase of\n"
        "the machine hits both sides; its noise_floor_us is the largest of 3 standard errors\n"
        "of that median (from the MAD of the differences), 3% of named's median latency and\n"
        "the timer's resolution of the difference. A\n"
        "cost below 0 by less than its noise floor is reported as 0; by more, as null with an\n"
        "'unreliable' entry.",
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_POWERS_OF_4,
    NB_DECLARES(anysource_options, anysource_tables, anysource_figures),
    .run = run_anysource,
};
