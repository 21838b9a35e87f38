/* sendmodes.c - ping-pong latency of the four MPI send modes (Zamani et al. §5.1):
 * standard (MPI_Send), synchronous (MPI_Ssend), buffered (MPI_Bsend) and ready (MPI_Rsend). */
#include <stdio.h>
#include <stdlib.h>

#include "sendmodes_catalogue.h"
#include "paired.h"

/* The MPI_Bsend buffer holds this many messages of the largest size: one is in it at a time
 * (the reply to a message comes only after the message arrived), the second is room for a
 * buffered send whose space the MPI has not reclaimed yet. */
#define BSEND_MESSAGES 2
/* Its size is an int (MPI_Buffer_attach). */
#define SENDMODES_MAX_SIZE ((size_t)256 << 20)

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

static void write_sendmodes_size(const nb_context *ctx, size_t index, size_t size,
                                 nb_paired_measurement *m, void *user)
{
    const nb_paired_tables *out = user;
    nb_paired_add_latency_rows(ctx, out->latency, "send_mode", sendmodes_variants, m, size);
    for (size_t v = SYNCHRONOUS; v < MODE_COUNT; v++) {
        nb_paired_cost against;
        nb_paired_cost_of(m, v, STANDARD, &against);
        nb_table_add_row(out->comparison);
        nb_cell_int(out->comparison, "size_bytes", (long long)size);
        nb_cell_text(out->comparison, "send_mode", sendmodes_variants[v].name);
        nb_cell_text(out->comparison, "against", sendmodes_variants[STANDARD].name);
        nb_cell_real(out->comparison, "ratio_to_standard", against.ratio);
        nb_cell_real(out->comparison, "difference_noise_floor_us", against.noise_floor_us);
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

void run_sendmodes(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    nb_pingpong state = nb_paired_pair(ctx);
    int attached_bytes = bsend_buffer_bytes(o->sizes[o->size_count - 1]);
    void *attached = nb_buffer_new((size_t)attached_bytes);
    MPI_Buffer_attach(attached, attached_bytes);

    nb_paired_tables out = nb_paired_begin(ctx, &sendmodes_table, &sendmodes_ratio_table);
    if (ctx->result != NULL)
        nb_param_int(ctx->result, "bsend_buffer_bytes", attached_bytes);
    nb_paired_sweep(ctx, sendmodes_variants, MODE_COUNT, &state, &state.size,
                    write_sendmodes_size, &out);
    /* Waits until every buffered message is out, then hands the buffer back. */
    MPI_Buffer_detach(&attached, &attached_bytes);
    free(attached);
    nb_paired_release(&state);
}

/* Before MPI: the sizes fit the int of the MPI_Bsend buffer. */
int sendmodes_finish(nb_options *o, void *settings)
{
    (void)settings;
    size_t largest = nb_largest_size(o);
    if (largest > SENDMODES_MAX_SIZE)
        return nb_usage_error("sendmodes: largest size %zu bytes is above 256M: the MPI_Bsend "
                              "buffer (%d x (size + MPI_BSEND_OVERHEAD)) must fit an int; use "
                              "a smaller --max-size or --sizes", largest, BSEND_MESSAGES);
    return 0;
}

/* Before MPI: send and receive buffers and the MPI_Bsend buffer. */
unsigned long long sendmodes_buffer_bytes(const nb_options *o, char *how, size_t length,
                                          const char **hint)
{
    unsigned long long largest = nb_largest_size(o);
    unsigned long long bytes = 2 * largest + BSEND_MESSAGES * (largest + MPI_BSEND_OVERHEAD);
    char text[32];
    nb_format_size((size_t)largest, text, sizeof text);
    snprintf(how, length, "send and receive buffers of %s and an MPI_Bsend buffer of %d of "
             "them = %llu bytes", text, BSEND_MESSAGES, bytes);
    *hint = "";
    return bytes;
}
