/* sendmodes_catalogue.h - what sendmodes.c's methods declare (docs/adding-a-method.md); included once, by
 * sendmodes.c. */
#ifndef NETBENCH_SENDMODES_CATALOGUE_H
#define NETBENCH_SENDMODES_CATALOGUE_H

#include "paired.h"

/* Defined in sendmodes.c. */
nb_run_function run_sendmodes;
nb_finish_hook sendmodes_finish;
nb_buffer_bytes_hook sendmodes_buffer_bytes;

/* The options every paired method shares (paired.h). */
static const nb_option sendmodes_options[] = {NB_PAIRED_OPTIONS};

NB_TABLE(sendmodes, "sendmodes", NB_PAIRED_LATENCY_COLUMNS("send_mode"));

NB_TABLE(sendmodes_ratio, "sendmodes_ratio",
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("send_mode", ""),
    NB_KEY("against", ""),
    NB_LOWER("ratio_to_standard", "ratio"),
    NB_KEY("difference_noise_floor_us", "us"));

NB_TABLES(sendmodes, &sendmodes_table, &sendmodes_ratio_table);

NB_FIGURES(sendmodes,
    NB_KEY("small_size_bytes", "bytes"),
    NB_LOWER("standard_latency_small_us", "us"),
    NB_LOWER("synchronous_latency_small_us", "us"),
    NB_LOWER("buffered_latency_small_us", "us"),
    NB_LOWER("ready_latency_small_us", "us"),
    NB_LOWER("synchronous_ratio_small", "ratio"),
    NB_LOWER("buffered_ratio_small", "ratio"),
    NB_LOWER("ready_ratio_small", "ratio"));

const nb_method nb_method_sendmodes = {
    NB_METHOD(sendmodes, NB_ON_PAIR, NB_SIZES_POWERS_OF_4),
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
    .finish = sendmodes_finish,
    .buffer_bytes = sendmodes_buffer_bytes,
};

#endif
