/* methods_sendmodes.c - ping-pong latency of the four MPI send modes (Zamani et al. §5.1):
 * standard (MPI_Send), synchronous (MPI_Ssend), buffered (MPI_Bsend) and ready (MPI_Rsend). */
#include <stdio.h>
#include <stdlib.h>

#include "paired.h"

/* The MPI_Bsend buffer holds this many messages of the largest size: one is in it at a time
 * (the reply to a message comes only after the message arrived), the second is room for a
 * buffered send whose space the MPI has not reclaimed yet. */
#define BSEND_MESSAGES 2
/* Its size is an int (MPI_Buffer_attach). */
#define SENDMODES_MAX_SIZE ((size_t)256 << 20)

/* Output tables (docs/output-format.md). */
static const nb_column sendmodes_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("send_mode", ""),
    NB_LATENCY_COLUMNS,
};
static const nb_table_spec sendmodes_table = NB_TABLE_SPEC("sendmodes", sendmodes_columns);

static const nb_column sendmodes_ratio_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("send_mode", ""),
    NB_KEY("against", ""),
    NB_LOWER("ratio_to_standard", "ratio"),
    NB_KEY("difference_noise_floor_us", "us"),
};
static const nb_table_spec sendmodes_ratio_table =
    NB_TABLE_SPEC("sendmodes_ratio", sendmodes_ratio_columns);

typedef int (*send_call)(const void *, int, MPI_Datatype, int, int, MPI_Comm);

/* One loop for every mode; only the send call differs. Each rank has the receive of the next
 * incoming message posted before it sends, so MPI_Rsend is correct MPI: rank 1 posts its first
 * receive and tells rank 0 with a zero-byte message (before the timing starts); after that
 * every message is a reply to one that came after the peer posted the receive for it. Rank 0:
 * MPI_Irecv of the reply, send, MPI_Wait; rank 1: MPI_Wait, MPI_Irecv of the next message
 * (not after the last), send of the reply. One iteration = one round trip. */
static inline __attribute__((always_inline)) double pingpong(const nb_pingpong *s,
                                                             long iterations, send_call send)
{
    MPI_Comm comm = s->comm;
    int count = s->size;
    void *out = s->send, *in = s->recv;
    MPI_Request request;
    char handshake = 0;
    if (s->rank == 0) {
        MPI_Recv(&handshake, 0, MPI_BYTE, 1, NB_TAG_REPLY, comm, MPI_STATUS_IGNORE);
        double start = MPI_Wtime();
        for (long i = 0; i < iterations; i++) {
            MPI_Irecv(in, count, MPI_BYTE, 1, NB_TAG_DATA, comm, &request);
            send(out, count, MPI_BYTE, 1, NB_TAG_DATA, comm);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
        }
        return MPI_Wtime() - start;
    }
    double start = MPI_Wtime();
    MPI_Irecv(in, count, MPI_BYTE, 0, NB_TAG_DATA, comm, &request);
    MPI_Send(&handshake, 0, MPI_BYTE, 0, NB_TAG_REPLY, comm);
    for (long i = 0; i < iterations; i++) {
        MPI_Wait(&request, MPI_STATUS_IGNORE);
        if (i + 1 < iterations)
            MPI_Irecv(in, count, MPI_BYTE, 0, NB_TAG_DATA, comm, &request);
        send(out, count, MPI_BYTE, 0, NB_TAG_DATA, comm);
    }
    return MPI_Wtime() - start;
}

NB_VARIANT_LOOP(standard_loop, pingpong, MPI_Send)
NB_VARIANT_LOOP(synchronous_loop, pingpong, MPI_Ssend)
NB_VARIANT_LOOP(buffered_loop, pingpong, MPI_Bsend)
NB_VARIANT_LOOP(ready_loop, pingpong, MPI_Rsend)

/* The baseline, standard, first (nb_paired_measure sizes the rounds on it). */
enum { STANDARD, SYNCHRONOUS, BUFFERED, READY, MODE_COUNT };
static const nb_paired_variant sendmodes_variants[MODE_COUNT] = {
    {"standard", standard_loop},
    {"synchronous", synchronous_loop},
    {"buffered", buffered_loop},
    {"ready", ready_loop},
};

static int bsend_buffer_bytes(size_t largest)
{
    return (int)(BSEND_MESSAGES * (largest + MPI_BSEND_OVERHEAD));
}

typedef struct {
    nb_table *latency, *ratio;
} sendmodes_tables_out;

static void write_sendmodes_size(const nb_context *ctx, size_t index, size_t size,
                                 nb_paired_measurement *m, void *user)
{
    const sendmodes_tables_out *out = user;
    nb_paired_add_latency_rows(ctx, out->latency, "send_mode", sendmodes_variants, m, size);
    for (size_t v = SYNCHRONOUS; v < MODE_COUNT; v++) {
        nb_paired_cost against;
        nb_paired_cost_of(m, v, STANDARD, &against);
        nb_table_add_row(out->ratio);
        nb_cell_int(out->ratio, "size_bytes", (long long)size);
        nb_cell_text(out->ratio, "send_mode", sendmodes_variants[v].name);
        nb_cell_text(out->ratio, "against", sendmodes_variants[STANDARD].name);
        nb_cell_real(out->ratio, "ratio_to_standard", against.ratio);
        nb_cell_real(out->ratio, "difference_noise_floor_us", against.noise_floor_us);
        if (index == 0) {
            char key[64];
            snprintf(key, sizeof key, "%s_ratio_small", sendmodes_variants[v].name);
            nb_summary_real(ctx->result, key, against.ratio);
        }
    }
    if (index == 0) {
        nb_summary_int(ctx->result, "small_size_bytes", (long long)size);
        for (size_t v = 0; v < MODE_COUNT; v++) {
            char key[64];
            snprintf(key, sizeof key, "%s_latency_small_us", sendmodes_variants[v].name);
            nb_summary_real(ctx->result, key, m->median_us[v]);
        }
    }
}

static void run_sendmodes(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    nb_pingpong state = nb_paired_pair(ctx);
    int attached_bytes = bsend_buffer_bytes(o->sizes[o->size_count - 1]);
    void *attached = nb_buffer_new((size_t)attached_bytes);
    MPI_Buffer_attach(attached, attached_bytes);

    sendmodes_tables_out out = {NULL, NULL};
    if (ctx->result != NULL) {
        nb_paired_parameters(ctx);
        nb_param_int(ctx->result, "bsend_buffer_bytes", attached_bytes);
        out.latency = nb_result_add_declared_table(ctx->result, &sendmodes_table);
        out.ratio = nb_result_add_declared_table(ctx->result, &sendmodes_ratio_table);
    }
    nb_paired_sweep(ctx, sendmodes_variants, MODE_COUNT, &state, &state.size,
                    write_sendmodes_size, &out);
    /* Waits until every buffered message is out, then hands the buffer back. */
    MPI_Buffer_detach(&attached, &attached_bytes);
    free(attached);
    nb_paired_release(&state);
}

/* Before MPI: the sizes fit the int of the MPI_Bsend buffer. */
static int sendmodes_finish(nb_options *o, void *settings)
{
    (void)settings;
    size_t largest = o->size_count > 0 ? o->sizes[o->size_count - 1] : o->max_size;
    if (largest > SENDMODES_MAX_SIZE)
        return nb_usage_error("sendmodes: largest size %zu bytes is above 256M: the MPI_Bsend "
                              "buffer (%d x (size + MPI_BSEND_OVERHEAD)) must fit an int; use "
                              "a smaller --max-size or --sizes", largest, BSEND_MESSAGES);
    return 0;
}

/* Before MPI: send and receive buffers and the MPI_Bsend buffer. */
static unsigned long long sendmodes_buffer_bytes(const nb_options *o, char *how, size_t length,
                                                 const char **hint)
{
    unsigned long long largest = o->size_count > 0 ? o->sizes[o->size_count - 1] : o->max_size;
    unsigned long long bytes = 2 * largest + BSEND_MESSAGES * (largest + MPI_BSEND_OVERHEAD);
    char text[32];
    nb_format_size((size_t)largest, text, sizeof text);
    snprintf(how, length, "send and receive buffers of %s and an MPI_Bsend buffer of %d of "
             "them = %llu bytes", text, BSEND_MESSAGES, bytes);
    *hint = "";
    return bytes;
}

/* ------------------------------------------------------------------------------------------ */
/* The declaration                                                                              */
/* ------------------------------------------------------------------------------------------ */

static const nb_option sendmodes_options[] = {
    NB_USE_SIZES("8", "64K"),
    NB_USE_REPEATS("11", "10000", "2"),
};

static const nb_table_spec *const sendmodes_tables[] = {&sendmodes_table, &sendmodes_ratio_table,
                                                        NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column sendmodes_figures[] = {
    NB_KEY("small_size_bytes", "bytes"),
    NB_LOWER("standard_latency_small_us", "us"),
    NB_LOWER("synchronous_latency_small_us", "us"),
    NB_LOWER("buffered_latency_small_us", "us"),
    NB_LOWER("ready_latency_small_us", "us"),
    NB_LOWER("synchronous_ratio_small", "ratio"),
    NB_LOWER("buffered_ratio_small", "ratio"),
    NB_LOWER("ready_ratio_small", "ratio"),
};

const nb_method nb_method_sendmodes = {
    .name = "sendmodes",
    .summary = "ping-pong latency of MPI_Send, MPI_Ssend, MPI_Bsend and MPI_Rsend (Zamani 5.1)",
    .description =
        "Latency under the four MPI send modes, Zamani et al. section 5.1 ('matching pairs of\n"
        "sends and receives under different MPI send modes'): 'standard' (MPI_Send),\n"
        "'synchronous' (MPI_Ssend: returns when the receive has started), 'buffered'\n"
        "(MPI_Bsend, into a buffer attached with MPI_Buffer_attach for 2 messages of the\n"
        "largest size plus MPI_BSEND_OVERHEAD, detached at the end) and 'ready' (MPI_Rsend:\n"
        "the matching receive must already be posted). So that MPI_Rsend is correct MPI, every\n"
        "mode uses the same receive side: each rank has the receive for the next incoming\n"
        "message posted (MPI_Irecv) before it sends, and completes it with MPI_Wait; rank 1\n"
        "posts its first receive and tells rank 0 with a zero-byte message before the timing\n"
        "starts. Only the send call differs between the modes. Latency = round trip / 2;\n"
        "ratio_to_standard = a mode's latency / standard's.\n"
        "Per size the modes take turns: each mode's iteration count from a probe and a\n"
        "warm-up of it (as many round trips as fit in --time-cap-ms, at most --iterations),\n"
        "then --repetitions rounds, each running every mode once in a rotated order.\n"
        "Latencies: min/median/max over the rounds; the\n"
        "ratio is the median over the rounds of the ratio within a round, so a slow phase of\n"
        "the machine hits both sides. difference_noise_floor_us is the noise of the latency\n"
        "difference (the largest of 3 standard errors of its median, 3% of standard's\n"
        "median latency and the timer's resolution of the difference): a mode within it of\n"
        "standard is no different. Sizes up to 256M.",
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_POWERS_OF_4,
    NB_DECLARES(sendmodes_options, sendmodes_tables, sendmodes_figures),
    .run = run_sendmodes,
    .finish = sendmodes_finish,
    .buffer_bytes = sendmodes_buffer_bytes,
};
