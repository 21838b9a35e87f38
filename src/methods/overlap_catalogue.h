/* overlap_catalogue.h - what overlap.c's methods declare (docs/adding-a-method.md); included once, by
 * overlap.c. */
#ifndef NETBENCH_OVERLAP_CATALOGUE_H
#define NETBENCH_OVERLAP_CATALOGUE_H

#include "methods.h"

/* overlap's own options (nb_options.settings). */
typedef struct {
    size_t overhead_size;         /* --overhead-size */
    double tolerance;             /* --tolerance */
    int compute_steps;            /* --compute-steps */
} overlap_settings;

/* Defined in overlap.c. */
nb_run_function run_overlap;
nb_buffer_bytes_hook overlap_buffer_bytes;

static const nb_option overlap_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--overhead-size", .type = NB_OPTION_SIZE,
     NB_SETTING(overlap_settings, overhead_size), .min = 0,
     .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .default_value = "8",
     .example = "8", .help = "message size of the o_s and o_r sweeps"},
    {.name = "--tolerance", .type = NB_OPTION_DOUBLE, NB_SETTING(overlap_settings, tolerance),
     .min = 0.001, .max = 1.0, .value_name = "X", .default_value = "0.1", .example = "0.1",
     .range_note = "0.1 = 10%",
     .help = "relative slow-down that counts as 'longer' (0.1 = 10%)"},
    {.name = "--compute-steps", .type = NB_OPTION_INT,
     NB_SETTING(overlap_settings, compute_steps), .min = 4, .max = 1000, .value_name = "N",
     .default_value = "24", .example = "24", .help = "steps of each computation sweep"},
    NB_USE_REPEATS("5", "10000", "4"),
};

NB_TABLE(overhead_sweep, "overhead_sweep",
    NB_KEY("side", ""),
    NB_KEY("compute_us", "us"),
    NB_LOWER("time_per_message_median_us", "us"));

NB_TABLE(overlap_potential, "overlap_potential",
    NB_KEY("size_bytes", "bytes"),
    NB_LOWER("latency_median_us", "us"),
    NB_HIGHER("overlap_us", "us"),
    NB_HIGHER("overlap_percent", "percent"));

NB_TABLE(overlap_potential_sweep, "overlap_potential_sweep",
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("compute_us", "us"),
    NB_LOWER("latency_median_us", "us"));

NB_TABLES(overlap, &overhead_sweep_table, &overlap_potential_table, &overlap_potential_sweep_table);

NB_FIGURES(overlap,
    NB_LOWER("o_s_us", "us"),
    NB_LOWER("o_r_us", "us"),
    NB_LOWER("g_send_q1_us", "us"),
    NB_LOWER("g_recv_q1_us", "us"),
    NB_KEY("overhead_size_bytes", "bytes"),
    NB_KEY("tolerance", "ratio"),
    NB_KEY("compute_calibration_ns_per_unit", "ns_per_unit"),
    NB_KEY("compute_calibration_rank1_ns_per_unit", "ns_per_unit"));

const nb_method nb_method_overlap = {
    NB_METHOD(overlap, NB_ON_PAIR, NB_SIZES_POWERS_OF_4),
    .summary = "o_s, o_r by CPU overlap (Bell 4.3) and overlap potential per size (Zamani 5.6)",
    .description =
        "Send and receive overhead by CPU overlap, Bell et al. section 4.3: the flood test at\n"
        "queue depth 1 and --overhead-size bytes, with c us of calibrated computation (a busy\n"
        "loop over a volatile counter, calibrated on each rank at start) between MPI_Isend and\n"
        "MPI_Wait on rank 0. T(c) is the time per message; the sweep runs c from 0 to 3 x T(0)\n"
        "in --compute-steps steps (extended to 6 and 12 x T(0) if no point is slower).\n"
        "c_max = the largest c with T(c) <= T(0) x (1 + --tolerance) (interpolated), and\n"
        "o_s = T(0) - c_max ('the maximum amount of CPU time that can be added without\n"
        "increasing the benchmark time, subtracted from g'). o_r likewise, with the\n"
        "computation between MPI_Irecv and MPI_Wait on rank 1: the time per message is\n"
        "closed by rank 1's reply after the last message, so the receiver's loop gates it.\n"
        "The resolution of o_s and o_r is about tolerance x T(0); a value below 0 by less\n"
        "than that is reported as 0, a larger one, or a sweep without a knee, as null with\n"
        "an 'unreliable' entry.\n"
        "Overlap potential, Zamani et al. section 5.6: a non-blocking ping-pong per size\n"
        "(rank 0: MPI_Irecv, MPI_Isend, c us of computation, MPI_Waitall; rank 1 echoes with\n"
        "MPI_Irecv/MPI_Wait, MPI_Isend/MPI_Wait); overlap = the largest c that does not\n"
        "lengthen the latency beyond the tolerance, swept like o_s. overlap_percent =\n"
        "overlap / latency x 100; it can exceed 100, since the computation may hide the\n"
        "whole round trip (2 x latency).\n"
        "Every sweep point is a warm-up plus --repetitions repetitions of as many iterations\n"
        "as fit in --time-cap-ms (at most --iterations); T is their median. The default\n"
        "tolerance, 0.1, is above the repetition-to-repetition scatter of the medians on a\n"
        "busy shared node; use 0.05 or less on a quiet one.",
    .settings_size = sizeof(overlap_settings),
    .buffer_bytes = overlap_buffer_bytes,
};

#endif
