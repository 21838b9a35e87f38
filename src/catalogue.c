/* catalogue.c - every netbench method's declarations in one place: its options (with their
 * defaults, ranges and help), its output tables (every column with its unit and direction), its
 * summary figures, its help text, and the registry that orders `netbench --help`. The run code
 * of a method is in its methods_*.c file and writes only what is declared here (an undeclared
 * column or figure aborts), so `--describe`, docs/output-format.md and the checks derive from
 * this one file. A new column or figure is one line here (docs/adding-a-method.md). */
#include <stddef.h>

#include "analysis.h"
#include "catalogue.h"
#include "operations.h"
#include "paired.h"
#include "patterns.h"

/* The columns of connections' and loaded's latency tables after their key columns. */
#define LATENCY_COLUMNS                                                                        \
    NB_KEY("size_bytes", "bytes"), NB_LATENCY_COLUMNS, NB_LOWER("cost_us", "us"),                \
        NB_KEY("noise_floor_us", "us")

/* Largest --window of loaded (messages in flight per pair). */
#define MP_MAX_WINDOW 1024

/* Largest --print-schedule N (a dry run: no MPI, N x rounds lines of output). */
#define MATRIX_MAX_SCHEDULE_RANKS 100000

/* ========================================================================================== */
/* methods_pt2pt.c: pingpong, bibw, bothway                                                   */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column pingpong_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_LATENCY_COLUMNS,
    NB_HIGHER("bandwidth_median_MBps", "MBps"),
};

const nb_table_spec pingpong_table = NB_TABLE_SPEC("pingpong", pingpong_columns);

static const nb_column bibw_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("iterations", "count"),
    NB_HIGHER("bandwidth_min_MBps", "MBps"),
    NB_HIGHER("bandwidth_median_MBps", "MBps"),
    NB_HIGHER("bandwidth_max_MBps", "MBps"),
    NB_LOWER("latency_median_us", "us"),
};

const nb_table_spec bibw_table = NB_TABLE_SPEC("bibw", bibw_columns);

static const nb_column bothway_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("iterations", "count"),
    NB_LOWER("time_median_us", "us"),
    NB_HIGHER("bandwidth_per_direction_min_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_direction_median_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_direction_max_MBps", "MBps"),
    NB_HIGHER("bandwidth_aggregate_median_MBps", "MBps"),
};

const nb_table_spec bothway_table = NB_TABLE_SPEC("bothway", bothway_columns);

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

/* ========================================================================================== */
/* methods_flood.c: flood                                                                     */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column flood_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("queue_depth", "count"),
    NB_KEY("messages", "count"),
    NB_LOWER("time_per_message_min_us", "us"),
    NB_LOWER("time_per_message_median_us", "us"),
    NB_LOWER("time_per_message_max_us", "us"),
    NB_HIGHER("bandwidth_median_MBps", "MBps"),
};

const nb_table_spec flood_table = NB_TABLE_SPEC("flood", flood_columns);

static const nb_column flood_best_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("best_queue_depth", "count"),
    NB_LOWER("time_per_message_us", "us"),
    NB_HIGHER("bandwidth_MBps", "MBps"),
};

const nb_table_spec flood_best_table = NB_TABLE_SPEC("flood_best", flood_best_columns);

static const nb_option flood_options[] = {
    NB_USE_SIZES("8", "4M"),
    {.name = "--queue-depths", .type = NB_OPTION_INT_LIST,
     NB_SETTING_LIST(flood_settings, queue_depths, queue_depth_count), .min = 1, .max = 1024,
     .value_name = "LIST", .default_value = "1,2,4,8,16,32,64", .example = "1,8,64",
     .help = "queue depths q (sends in flight), comma separated"},
    {.name = "--G-fit-min-size", .type = NB_OPTION_SIZE,
     NB_SETTING(flood_settings, G_fit_min_size), .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE,
     .value_name = "SIZE", .default_value = "64K", .example = "64K",
     .help = "smallest size used in the fit for G"},
    {.name = "--G-fit-max-size", .type = NB_OPTION_SIZE,
     NB_SETTING(flood_settings, G_fit_max_size), .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE,
     .value_name = "SIZE", .default_value = "1M", .example = "1M",
     .help = "largest size used in the fit for G"},
    NB_USE_REPEATS("5", "10000", "8"),
};

static const nb_table_spec *const flood_tables[] = {&flood_table, &flood_best_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column flood_figures[] = {
    NB_LOWER("g_us", "us"),
    NB_KEY("g_queue_depth", "count"),
    NB_LOWER("G_ns_per_byte", "ns_per_byte"),
    NB_KEY("G_fit_min_size_bytes", "bytes"),
    NB_KEY("G_fit_max_size_bytes", "bytes"),
    NB_KEY("G_fit_points", "count"),
    NB_KEY("G_fit_rms_relative", "ratio"),
    NB_KEY("G_fit_outliers", "count"),
    NB_HIGHER("bandwidth_unidirectional_peak_MBps", "MBps"),
    NB_KEY("bandwidth_unidirectional_peak_size_bytes", "bytes"),
};

const nb_method nb_method_flood = {
    .name = "flood",
    .summary = "sustained injection with q sends in flight: g, G, bandwidth (Bell 4.2)",
    .description =
        "Flood test, Bell et al. section 4.2 (Kutlug section 3.2.2 for the bandwidth): rank 0\n"
        "keeps q non-blocking MPI_Isend in flight - it starts q, waits for the oldest q/2\n"
        "(at least 1) to complete, starts as many new ones, and so on, then completes the\n"
        "last ones. Rank 1 keeps q MPI_Irecv posted the same way into q distinct buffers and,\n"
        "after the last message, sends an 8-byte reply that closes the timing on rank 0.\n"
        "Time per message = total / messages; bandwidth = size / time per message (MB/s).\n"
        "For every size and queue depth: a warm-up, then as many messages as fit in\n"
        "--time-cap-ms (at most --iterations, at least 2q), repeated --repetitions times.\n"
        "Per size the queue depth with the lowest median is the best (table flood_best).\n"
        "g = best time per message at the smallest size; G = slope of a robust, non-negative\n"
        "least-squares fit of the best time per message against the size over the sizes from\n"
        "--G-fit-min-size to --G-fit-max-size, in ns/byte (Bell: 'the difference between g and\n"
        "the average times for larger message sizes'). The fit stops at 1 MiB by default:\n"
        "beyond the caches, shared-memory transfers turn non-linear and G would measure\n"
        "memory, not the transport; over a network raise it with --G-fit-max-size.",
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_POWERS_OF_2,
    NB_DECLARES(flood_options, flood_tables, flood_figures),
    .settings_size = sizeof(flood_settings),
    .run = run_flood,
    .buffer_bytes = flood_buffer_bytes,
};

/* ========================================================================================== */
/* methods_overlap.c: overlap                                                                 */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column sweep_columns[] = {
    NB_KEY("side", ""),
    NB_KEY("compute_us", "us"),
    NB_LOWER("time_per_message_median_us", "us"),
};

const nb_table_spec sweep_table_spec = NB_TABLE_SPEC("overhead_sweep", sweep_columns);

static const nb_column potential_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_LOWER("latency_median_us", "us"),
    NB_HIGHER("overlap_us", "us"),
    NB_HIGHER("overlap_percent", "percent"),
};

const nb_table_spec potential_table_spec = NB_TABLE_SPEC("overlap_potential",
                                                           potential_columns);

static const nb_column potential_sweep_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("compute_us", "us"),
    NB_LOWER("latency_median_us", "us"),
};

const nb_table_spec potential_sweep_table_spec = NB_TABLE_SPEC("overlap_potential_sweep",
                                                                 potential_sweep_columns);

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

static const nb_table_spec *const overlap_tables[] = {
    &sweep_table_spec, &potential_table_spec, &potential_sweep_table_spec, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column overlap_figures[] = {
    NB_LOWER("o_s_us", "us"),
    NB_LOWER("o_r_us", "us"),
    NB_LOWER("g_send_q1_us", "us"),
    NB_LOWER("g_recv_q1_us", "us"),
    NB_KEY("overhead_size_bytes", "bytes"),
    NB_KEY("tolerance", "ratio"),
    NB_KEY("compute_calibration_ns_per_unit", "ns_per_unit"),
    NB_KEY("compute_calibration_rank1_ns_per_unit", "ns_per_unit"),
};

const nb_method nb_method_overlap = {
    .name = "overlap",
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
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_POWERS_OF_4,
    NB_DECLARES(overlap_options, overlap_tables, overlap_figures),
    .settings_size = sizeof(overlap_settings),
    .run = run_overlap,
    .buffer_bytes = overlap_buffer_bytes,
};

/* ========================================================================================== */
/* methods_loggp.c: loggp                                                                     */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column prtt_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_LOWER("prtt_1_0_us", "us"),
    NB_LOWER("prtt_n_0_us", "us"),
    NB_LOWER("prtt_n_dG_us", "us"),
    NB_KEY("d_G_us", "us"),
    NB_LOWER("G_all_us", "us"),
    NB_LOWER("o_s_us", "us"),
    NB_LOWER("o_r_us", "us"),
    NB_KEY("range", "count"),
    NB_KEY("G_all_spike", ""),
};

const nb_table_spec prtt_table = NB_TABLE_SPEC("prtt", prtt_columns);

static const nb_column range_columns[] = {
    NB_KEY("range", "count"),
    NB_KEY("first_size_bytes", "bytes"),
    NB_KEY("last_size_bytes", "bytes"),
    NB_KEY("points", "count"),
    NB_LOWER("g_us", "us"),
    NB_LOWER("G_ns_per_byte", "ns_per_byte"),
    NB_LOWER("o_s_us", "us"),
    NB_LOWER("o_r_us", "us"),
    NB_LOWER("fit_rms_relative", "ratio"),
    NB_KEY("fit_reliable", ""),
    NB_LOWER("g_ci95_low_us", "us"),
    NB_LOWER("g_ci95_high_us", "us"),
    NB_LOWER("G_ci95_low_ns_per_byte", "ns_per_byte"),
    NB_LOWER("G_ci95_high_ns_per_byte", "ns_per_byte"),
    NB_LOWER("o_s_ci95_low_us", "us"),
    NB_LOWER("o_s_ci95_high_us", "us"),
    NB_LOWER("o_r_ci95_low_us", "us"),
    NB_LOWER("o_r_ci95_high_us", "us"),
    NB_KEY("fit_clamped", ""),
    NB_SIGNED("split_bic_gain", "ratio"),
};

const nb_table_spec ranges_table = NB_TABLE_SPEC("ranges", range_columns);

static const nb_option loggp_options[] = {
    NB_USE(NB_COMMON_SIZES, NULL),
    NB_USE(NB_COMMON_MAX_SIZE, "64K"),
    {.name = "--sizes-per-doubling", .type = NB_OPTION_INT,
     NB_SETTING(loggp_settings, sizes_per_doubling), .min = 1, .max = 64, .value_name = "K",
     .default_value = "4", .example = "4",
     .help = "geometric size steps per doubling of the size"},
    {.name = "--messages", .short_name = 'n', .type = NB_OPTION_INT,
     NB_SETTING(loggp_settings, messages), .min = 2, .max = 100000, .value_name = "N",
     .default_value = "10", .example = "10", .help = "messages n of PRTT(n, d, s)"},
    {.name = "--lookahead", .type = NB_OPTION_INT, NB_SETTING(loggp_settings, lookahead),
     .min = 1, .max = 64, .value_name = "X", .default_value = "4", .example = "4",
     .help = "look-ahead points of the protocol-change detection"},
    {.name = "--pfact", .type = NB_OPTION_DOUBLE, NB_SETTING(loggp_settings, pfact), .min = 1.0,
     .max = 1000.0, .value_name = "F", .default_value = "2.0", .example = "2.0",
     .range_note = "Hoefler et al. use 2.0",
     .help = "sensitivity factor of the protocol-change detection"},
    {.name = "--passes", .type = NB_OPTION_INT, NB_SETTING(loggp_settings, passes), .min = 1,
     .max = 20, .value_name = "N", .default_value = "3", .example = "3",
     .help = "sweeps over all sizes; per size the pass with the lowest PRTT(n,0,s) in the "
             "run's fast state is kept"},
    {.name = "--max-passes", .type = NB_OPTION_INT, NB_SETTING(loggp_settings, max_passes),
     .min = 1, .max = 20, .value_name = "N", .default_value = "9", .example = "9",
     .help = "most sweeps: after --passes, one more while a fitted summary figure is "
             "unreliable or a size has no pass in the fast state (at most --passes: none)"},
    {.name = "--rechecks", .type = NB_OPTION_INT, NB_SETTING(loggp_settings, rechecks),
     .min = 0, .max = 20, .value_name = "N", .default_value = "4", .example = "4",
     .help = "rounds in which the sizes whose PRTT(n,0,s) or G_all stands more than 10% above "
             "their neighbours, or that have no pass in the fast state, are measured again "
             "(0: none)"},
    {.name = "--state-wait-s", .type = NB_OPTION_DOUBLE, NB_SETTING(loggp_settings, state_wait_s),
     .min = 0.0, .max = 600.0, .value_name = "SECONDS", .default_value = "30",
     .example = "30",
     .help = "most seconds a run waits, in all, for the machine to leave a slower state "
             "than its fast one before measuring a size (0: never waits)"},
    NB_USE_REPEATS("7", "1000", "3"),
};

static const nb_table_spec *const loggp_tables[] = {&prtt_table, &ranges_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column loggp_figures[] = {
    NB_LOWER("L_us", "us"),
    NB_SAME("protocol_ranges", "ranges"),
    NB_KEY("protocol_ranges_detected", "ranges"),
    NB_LOWER("g_small_us", "us"),
    NB_KEY("g_small_ci95_low_us", "us"),
    NB_KEY("g_small_ci95_high_us", "us"),
    NB_LOWER("o_s_small_us", "us"),
    NB_KEY("o_s_small_ci95_low_us", "us"),
    NB_KEY("o_s_small_ci95_high_us", "us"),
    NB_LOWER("o_r_small_us", "us"),
    NB_KEY("o_r_small_ci95_low_us", "us"),
    NB_KEY("o_r_small_ci95_high_us", "us"),
    NB_LOWER("G_large_ns_per_byte", "ns_per_byte"),
    NB_KEY("G_large_ci95_low_ns_per_byte", "ns_per_byte"),
    NB_KEY("G_large_ci95_high_ns_per_byte", "ns_per_byte"),
    NB_SAME("M_bytes", "bytes"),
    NB_KEY("M_ci95_low_bytes", "bytes"),
    NB_KEY("M_ci95_high_bytes", "bytes"),
    NB_SAME("threshold_small_bytes", "bytes"),
    NB_SAME("threshold_large_bytes", "bytes"),
    NB_KEY("G_all_spikes", "count"),
    NB_KEY("n", "count"),
    NB_KEY("lookahead", "count"),
    NB_KEY("pfact", "ratio"),
    NB_KEY("slow_passes", "count"),
    NB_KEY("passes_made", "count"),
    NB_KEY("state_probe_fast_us", "us"),
    NB_KEY("slow_state_share", "ratio"),
    NB_KEY("slow_state_sizes", "count"),
    NB_KEY("recheck_measurements", "count"),
    NB_KEY("recheck_lowered", "count"),
    NB_KEY("state_waited_s", "s"),
    NB_KEY("state_waits", "count"),
};

const nb_method nb_method_loggp = {
    .name = "loggp",
    .summary = "LogGP g, G, o_s, o_r, L per protocol range from PRTT(n,d,s) (Hoefler 2.2-2.6)",
    .description =
        "LogGP by parametrized round trips, Hoefler et al. sections 2.2-2.6. PRTT(n, d, s):\n"
        "rank 0 sends n messages of s bytes with blocking MPI_Send and a busy wait of d\n"
        "between consecutive sends, then receives one s-byte reply with MPI_Recv; rank 1\n"
        "receives the n messages and sends the reply. The time of the whole exchange on rank\n"
        "0, averaged over as many rounds as fit in --time-cap-ms (at most --iterations), is\n"
        "one repetition; figures are medians over --repetitions repetitions. The sweep over\n"
        "all sizes is made --passes times, each pass starting elsewhere in the size order;\n"
        "per size the pass with the lowest PRTT(n,0,s) is kept with all its figures (a slow\n"
        "phase of the machine then disturbs a size's pass, not the size; summary slow_passes\n"
        "counts the passes more than 25% above the kept one). Right before each size pass,\n"
        "1-byte round trips probe the state of the machine (the lowest of 5 timings of 20); a\n"
        "pass whose probe exceeds 2x the lowest of the run was made in a slower state (a VM\n"
        "whose core-to-core path switches between two speeds) and is kept only when its size\n"
        "has no other (summary state_probe_fast_us, slow_state_share, slow_state_sizes).\n"
        "While a probe is over 2x the lowest of the run so far, netbench probes again every\n"
        "20 ms before measuring the size, up to --state-wait-s in all for the run (summary\n"
        "state_waited_s, state_waits; a warning when the time ran out). A\n"
        "slow phase can outlast all passes: while a fitted figure of the summary (g, o_s, o_r\n"
        "of the first range, G of the last, M) is unreliable, or a size has no pass in the\n"
        "fast state, one more pass is made (not for the thresholds: one range means the\n"
        "sweep holds no protocol switch, which a pass does not change), each starting at yet\n"
        "another point, up to --max-passes in all, and the kept pass per size is chosen\n"
        "again over all passes made (summary passes_made; a warning says why). Then, up to\n"
        "--rechecks rounds, a size whose kept PRTT(n,0,s) or G_all stands more than 10%\n"
        "above the medians of its 2 neighbours on each side (a VM's noisy stretch can raise\n"
        "a size in every pass), or that still has no pass in the fast state, is measured\n"
        "again; the new figures replace the kept ones when they are in the fast state and\n"
        "lower (summary recheck_measurements, recheck_lowered).\n"
        "Per size: PRTT(1,0,s), PRTT(n,0,s) and PRTT(n,d_G,s) with d_G = PRTT(1,0,s)\n"
        "(section 2.3; when G_all > d_G, a warning and d_G = PRTT(2,0,s) instead).\n"
        "  G_all(s) = (PRTT(n,0,s) - PRTT(1,0,s)) / (n - 1)               eq. (5)\n"
        "  o_s(s)   = (PRTT(n,d_G,s) - PRTT(1,0,s)) / (n - 1) - d_G        eq. (4)\n"
        "  o_r(s)   : Kielmann's method - rank 0 sends, busy-waits d_G so that the reply has\n"
        "             arrived, then times the MPI_Recv of the reply.\n"
        "  L        = PRTT(1,0,1) / 2                                      section 2.5\n"
        "Protocol ranges (section 2.6): x-point look-ahead (--lookahead) with factor --pfact on\n"
        "the mean least-squares deviation of G_all against s - 1, the deviation floored by the\n"
        "noise of the repetitions ((1.4826 MAD)^2 / repetitions of both PRTTs, propagated to\n"
        "G_all); at least 5 sizes per range (summary protocol_ranges_detected). The ranges\n"
        "reported are chosen over every way to cut the sweep (optimal segmentation by\n"
        "dynamic programming): for each count the cut with the lowest cost, then the count\n"
        "with the lowest BIC, each range beyond the first lowering the cost by at least\n"
        "40 + 3 ln(sizes), with each point's noise 3% of its value and a residual counting\n"
        "at most 3.5 noise widths. The sizes are measured in a scattered order (j * stride mod count), so that\n"
        "a slow phase of the machine disturbs isolated sizes, not a block that looks like a\n"
        "protocol range. Before the detection, isolated spikes of G_all\n"
        "(a disturbed timing, off both neighbour medians) are replaced by their neighbours;\n"
        "the prtt table marks them (G_all_spike) and keeps the measured values. Per range a\n"
        "robust non-negative least-squares fit of the despiked G_all(s) = g + G (s - 1) gives\n"
        "g (us) and G\n"
        "(ns/byte); o_s and o_r are the medians over the range. Each comes with a 95%\n"
        "bootstrap interval over the sizes of the range; a parameter the fit clamped at 0\n"
        "is null and unresolved. Summary: small-message g, o_s, o_r (first range), large-\n"
        "message G (last range), M = g / G (Bell et al. 5.5) and the protocol thresholds.\n"
        "Sizes: 1 byte, then --sizes-per-doubling geometric steps per doubling (rounded,\n"
        "unique) up to --max-size; --sizes gives a list instead (1 is added). The default\n"
        "--max-size is 64K (the interval of Hoefler et al.'s TCP results): on shared memory\n"
        "G_all curves upward beyond it (the messages leave\n"
        "the caches) and no straight line fits; over a network, raise it.",
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_NONE,
    NB_DECLARES(loggp_options, loggp_tables, loggp_figures),
    .settings_size = sizeof(loggp_settings),
    .run = run_loggp,
    .finish = loggp_finish,
};

/* ========================================================================================== */
/* methods_dense.c: dense                                                                     */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column phase_columns[] = {
    NB_KEY("algorithm", ""),
    NB_KEY("phase", "count"),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("active_ranks", "count"),
    NB_KEY("iterations", "count"),
    NB_LOWER("time_max_us", "us"),
    NB_HIGHER("bandwidth_min_MBps", "MBps"),
    NB_HIGHER("bandwidth_mean_MBps", "MBps"),
};

const nb_table_spec phases_table = NB_TABLE_SPEC("phases", phase_columns);

static const nb_column algorithm_columns[] = {
    NB_KEY("algorithm", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("phases", "count"),
    NB_HIGHER("bandwidth_first_MBps", "MBps"),
    NB_HIGHER("bandwidth_worst_MBps", "MBps"),
    NB_KEY("worst_phase", "count"),
    NB_HIGHER("worst_to_first", "ratio"),
    NB_HIGHER("bandwidth_mean_MBps", "MBps"),
};

const nb_table_spec algorithms_table = NB_TABLE_SPEC("algorithms", algorithm_columns);

static const nb_column dense_validation_columns[] = {
    NB_KEY("algorithm", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("messages_checked", "count"),
    NB_LOWER("bytes_wrong", "count"),
};

const nb_table_spec dense_validation_table = NB_TABLE_SPEC("validation", dense_validation_columns);

static const nb_option dense_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--algorithms", .type = NB_OPTION_ENUM_LIST, NB_SETTING(dense_settings, algorithms),
     .name_of = dense_algorithm_name, .name_count = NB_DENSE_ALGORITHM_COUNT, .value_name = "LIST",
     .default_value = "aapc,pairwise,cumulative,random", .example = "aapc,random",
     .help = "dense algorithms to run, comma separated: aapc (congestion-controlled "
             "all-to-all), pairwise (simple pairwise), cumulative (cumulative pairwise), random "
             "(random pairwise)"},
    {.name = "--phases", .type = NB_OPTION_INT, NB_SETTING(dense_settings, phases), .min = 1,
     .max = 100000, .value_name = "N", .default_value = "16", .example = "16",
     .help = "phases of the random pairwise algorithm (new random pairs in each)"},
    NB_USE(NB_COMMON_SEED, "1"),
    NB_USE(NB_COMMON_VALIDATE, NULL),
    NB_USE_REPEATS("5", "10000", "2"),
    {.name = "--min-iterations", .type = NB_OPTION_LONG,
     NB_SETTING(dense_settings, min_iterations), .min = 1, .max = 1000000, .value_name = "N",
     .default_value = "2", .example = "16",
     .help = "fewest exchanges in one timed loop, however long they take: on a slow link "
             "(1 Gbit: 1 MiB takes 8 ms) --time-cap-ms alone would time one or two, whose "
             "luck (TCP's window, a shaper's bucket) then decides the figure"},
};

static const nb_table_spec *const dense_tables_declared[] = {&phases_table, &algorithms_table,
                                                             &dense_validation_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column dense_figures[] = {
    NB_KEY("phases_measured", "count"),
    NB_KEY("validated_messages", "count"),
    NB_LOWER("validation_errors", "count"),
};

const nb_method nb_method_dense = {
    .name = "dense",
    .summary = "dense patterns: all-to-all, pairwise, cumulative, random pairs (Altix 3.3)",
    .description =
        "Dense communication, the Altix study section 3.3: every rank communicates, in phases.\n"
        "  aapc        congestion-controlled all-to-all personalized exchange: in phase k\n"
        "              rank r sends to (r+k) mod P and receives from (r-k) mod P, k=1..P-1\n"
        "  pairwise    simple pairwise: in phase k pairs at cyclic distance k exchange full\n"
        "              duplex (the ranks r, r+k, r+2k, ... mod P pair up in order; in a cycle\n"
        "              of odd length the last rank is idle), k=1..P-1\n"
        "  cumulative  cumulative pairwise: the pairs (i, i+P/2) cross the middle of the rank\n"
        "              space; phase j has the first j of them, growing to all P/2\n"
        "  random      random pairwise: a new seeded random pairing in every phase (--phases,\n"
        "              --seed; the same seed gives the same pairings)\n"
        "An exchange is MPI_Irecv + MPI_Isend + MPI_Waitall of one message each way. Each phase\n"
        "is timed alone: after a barrier every rank runs the exchange in a loop (as many\n"
        "iterations as fit in --time-cap-ms, the same count on all ranks) and times it;\n"
        "--repetitions loops, the median per rank. Bandwidth of a rank = bytes it sends per\n"
        "exchange / time per exchange (MB/s = 10^6 B/s); per phase the min and the mean over\n"
        "the active ranks. Per algorithm and size, worst_to_first = the worst phase's mean\n"
        "bandwidth / the first phase's (the study's 'drop in the middle phases').\n"
        "--validate checks every received byte of every phase instead of timing.",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_POWERS_OF_4,
    NB_DECLARES(dense_options, dense_tables_declared, dense_figures),
    .settings_size = sizeof(dense_settings),
    .run = run_dense,
};

/* ========================================================================================== */
/* methods_beff.c: beff                                                                       */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column pattern_columns[] = {
    NB_KEY("pattern", ""),
    NB_KEY("kind", ""),
    NB_KEY("ring_size", "count"),
    NB_KEY("messages_per_rank", "count"),
    NB_HIGHER("bandwidth_avg_L_per_process_MBps", "MBps"),
    NB_HIGHER("bandwidth_lmax_per_process_MBps", "MBps"),
    NB_KEY("best_method", ""),
    NB_LOWER("latency_us", "us"),
};

const nb_table_spec patterns_table = NB_TABLE_SPEC("patterns", pattern_columns);

static const nb_column length_columns[] = {
    NB_KEY("length_bytes", "bytes"),
    NB_HIGHER("beff_per_process_MBps", "MBps"),
    NB_HIGHER("rings_per_process_MBps", "MBps"),
    NB_HIGHER("random_per_process_MBps", "MBps"),
    NB_HIGHER("sendrecv_per_process_MBps", "MBps"),
    NB_HIGHER("alltoallv_per_process_MBps", "MBps"),
    NB_HIGHER("nonblocking_per_process_MBps", "MBps"),
};

const nb_table_spec lengths_table = NB_TABLE_SPEC("lengths", length_columns);

static const nb_column beff_validation_columns[] = {
    NB_KEY("pattern", ""),
    NB_KEY("method", ""),
    NB_KEY("messages_checked", "count"),
    NB_LOWER("bytes_wrong", "count"),
};

const nb_table_spec beff_validation_table = NB_TABLE_SPEC("validation", beff_validation_columns);

static const nb_option beff_options[] = {
    {.name = "--lmax", .type = NB_OPTION_SIZE, NB_SETTING(beff_settings, lmax),
     .min = (double)BEFF_LMAX_FLOOR, .max = (double)BEFF_LMAX_CAP, .value_name = "SIZE",
     .default_text = "memory per process / 128", .example = "1M",
     .range_note = "b_eff needs L_max >= 8K (8 geometric steps above 4K), and defines it as at "
                   "most 128M",
     .help = "largest message length L_max (the definition: memory per process / 128, at most "
             "128M)"},
    {.name = "--random-patterns", .type = NB_OPTION_INT,
     NB_SETTING(beff_settings, random_patterns), .min = 1, .max = 1000, .value_name = "N",
     .default_value = "30", .example = "30", .help = "random ring patterns averaged into b_eff"},
    NB_USE(NB_COMMON_SEED, "1"),
    NB_USE(NB_COMMON_VALIDATE, NULL),
    NB_USE(NB_COMMON_REPETITIONS, "3"),
    NB_USE(NB_COMMON_TIME_CAP, "5"),
};

static const nb_table_spec *const beff_tables[] = {&patterns_table, &lengths_table,
                                                   &beff_validation_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column beff_figures[] = {
    NB_KEY("validated_messages", "count"),
    NB_LOWER("validation_errors", "count"),
    NB_HIGHER("b_eff_MBps", "MBps"),
    NB_HIGHER("b_eff_per_process_MBps", "MBps"),
    NB_KEY("lmax_bytes", "bytes"),
    NB_HIGHER("b_eff_at_lmax_MBps", "MBps"),
    NB_HIGHER("b_eff_at_lmax_per_process_MBps", "MBps"),
    NB_HIGHER("b_eff_at_lmax_rings_MBps", "MBps"),
    NB_HIGHER("b_eff_at_lmax_rings_per_process_MBps", "MBps"),
    NB_LOWER("latency_rings_random_us", "us"),
    NB_LOWER("latency_rings_us", "us"),
    NB_LOWER("pingpong_latency_us", "us"),
    NB_HIGHER("pingpong_bandwidth_lmax_MBps", "MBps"),
};

const nb_method nb_method_beff = {
    .name = "beff",
    .summary = "b_eff effective bandwidth: rings and random patterns, 21 lengths, 3 methods "
               "(Rabenseifner; Altix 3.1)",
    .description =
        "b_eff, the effective bandwidth of Rabenseifner, as used in the Altix/X1/Opteron/Dell\n"
        "study section 3.1: all ranks send to their neighbours at the same time.\n"
        "Patterns: 6 ring patterns (ring sizes 2, 4, 8, max(16,P/4), max(32,P/2), P, capped at\n"
        "P; the ranks are split into rings of consecutive ranks) and --random-patterns rings\n"
        "over all ranks in a random order. Every rank sends one message of L bytes to the next\n"
        "and one to the previous rank of its ring and receives one from each (a ring of 2: one\n"
        "message each way). 21 lengths: 1, 2, 4, ..., 4096 bytes, then 8 geometric steps up to\n"
        "L_max = memory per process / 128 (at most 128 MiB; --lmax sets it).\n"
        "Methods: MPI_Sendrecv (to next / from previous, then to previous / from next),\n"
        "MPI_Alltoallv over all ranks (count L for the neighbours, 0 elsewhere), and\n"
        "MPI_Irecv + MPI_Isend + MPI_Waitall. As in the original, consecutive messages move\n"
        "through send and receive buffers of 6 x (L_max + 16) bytes (8-byte aligned, wrapping\n"
        "around), so large messages are not timed from the same cached memory.\n"
        "Per pattern, length and method, every rank times a loop of the same length; its\n"
        "bandwidth is L x loop length x messages per rank / its loop time, and the pattern's\n"
        "value is that of the slowest rank (per process; accumulated = x P). The maximum over\n"
        "--repetitions and over the 3 methods is taken. Per pattern, avg_L = arithmetic mean\n"
        "over the 21 lengths; b_eff = logavg(logavg over rings, logavg over random patterns),\n"
        "logavg = geometric mean. b_eff at L_max: the same with L_max only (rings and random;\n"
        "rings only). Latency: time per message at 1 byte with the best method (slowest rank),\n"
        "averaged like b_eff. Ping-pong between ranks 0 and 1: latency = round trip / 2 at\n"
        "1 byte, bandwidth = L_max / (round trip / 2). MB/s = 10^6 bytes/s.\n"
        "Table patterns: ring_size is the largest ring of the pattern (sizes differ by at most\n"
        "one), messages_per_rank 1 when all its rings have 2 ranks, else 2.\n"
        "Deviations from the b_eff program (3.6): the loop length is chosen per measurement\n"
        "from --time-cap-ms (a warm-up, rank 0 decides for all ranks) instead of about 0.5 s\n"
        "per length and method; random patterns are drawn from --seed (reproducible) instead\n"
        "of a time seed; the patterns outside the b_eff average (worst cyclic, bi-section,\n"
        "ping-pong pair as a pattern, cartesian) are not measured; the two largest lengths are\n"
        "not shortened; L_max is settable; --random-patterns defaults to 30 as in the\n"
        "original, a check may lower it for short runs. The original's elapsed-time check\n"
        "(sum of loop times against the wall clock) is not made.\n"
        "--validate: no timing; every exchange runs once with known contents, and every\n"
        "received byte (and a guard area after it) is checked (table validation).",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_NONE,
    NB_DECLARES(beff_options, beff_tables, beff_figures),
    .settings_size = sizeof(beff_settings),
    .run = run_beff,
    .buffer_bytes = beff_buffer_bytes,
};

/* ========================================================================================== */
/* methods_collectives.c: collectives                                                         */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column timing_columns[] = {
    NB_KEY("collective", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("calls_valid", "count"),
    NB_LOWER("late_calls", "count"),
    NB_KEY("window_us", "us"),
    NB_LOWER("time_min_us", "us"),
    NB_LOWER("time_q25_us", "us"),
    NB_LOWER("time_median_us", "us"),
    NB_LOWER("time_q75_us", "us"),
    NB_LOWER("time_max_us", "us"),
    NB_LOWER("loop_average_us", "us"),
    NB_KEY("loop_to_individual", "ratio"),
};

const nb_table_spec collectives_table = NB_TABLE_SPEC("collectives", timing_columns);

static const nb_column collectives_validation_columns[] = {
    NB_KEY("collective", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("values_checked", "count"),
    NB_LOWER("errors", "count"),
};

const nb_table_spec collectives_validation_table =
    NB_TABLE_SPEC("validation", collectives_validation_columns);

static const nb_option collectives_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--collectives", .type = NB_OPTION_ENUM_LIST,
     NB_SETTING(collectives_settings, collectives), .name_of = collective_name_of,
     .name_count = NB_COLL_COUNT, .value_name = "LIST",
     .default_value = "barrier,bcast,reduce,allreduce,alltoall,alltoallv,gather,scatter,"
                      "allgather",
     .example = "barrier,allreduce",
     .help = "collectives to time, comma separated: barrier, bcast, reduce, allreduce, "
             "alltoall, alltoallv, gather, scatter, allgather"},
    {.name = "--calls", .type = NB_OPTION_INT, NB_SETTING(collectives_settings, calls),
     .min = 3, .max = 100000, .value_name = "N", .default_value = "100", .example = "100",
     .help = "individually timed calls per collective and size"},
    NB_USE(NB_COMMON_VALIDATE, NULL),
    NB_USE(NB_COMMON_REPETITIONS, "1"),
};

static const nb_table_spec *const collectives_tables[] = {
    &collectives_table, &collectives_validation_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column collectives_figures[] = {
    NB_KEY("validated_calls", "count"),
    NB_LOWER("validation_errors", "count"),
    NB_KEY("clock_sync_error_max_us", "us"),
    NB_KEY("collectives_measured", "count"),
    NB_KEY("loop_to_individual_median", "ratio"),
};

const nb_method nb_method_collectives = {
    .name = "collectives",
    .summary = "collectives, each call timed alone in a synchronised time window (Hoefler 4; "
               "Altix 3.2)",
    .description =
        "MPI collectives on all ranks (Altix study section 3.2: barrier, reduce, alltoall and\n"
        "more), each call timed alone (Hoefler et al. section 4). Timing n back-to-back calls\n"
        "and dividing by n underestimates a collective: consecutive calls overlap (a rank that\n"
        "is done early starts the next call while others still work), and rotating the root\n"
        "does not cure it. Here rank 0 first estimates every rank's clock offset with 30\n"
        "ping-pongs (the shortest round trip gives the offset; half of it bounds the error),\n"
        "again before every (collective, size) block. Call i then starts at T0 + i * window on\n"
        "rank 0's clock: every rank spins until that moment on its own clock, calls the\n"
        "collective and records its end. A call's time is the latest end over the ranks minus\n"
        "the scheduled start (output parameter synchronisation = window). window = max(2 x\n"
        "estimated call time (max over ranks) + 2 x clock error bound, 5 us). A rank that\n"
        "reaches a start already past is late: that call is left out (late_calls); with more\n"
        "than 10% late the window is doubled and the block redone (at most 3 times; the\n"
        "attempt with the fewest late calls is kept); a row with more than half of its calls\n"
        "late is reported unreliable.\n"
        "Beside min/quartiles/median/max over the valid calls, the table gives the naive\n"
        "figure most suites report: --calls back-to-back calls / calls (max over ranks,\n"
        "median of --repetitions loops) and loop_to_individual = that / individual median.\n"
        "Each block is warmed up by a few untimed calls.\n"
        "Sizes: bcast s bytes; reduce and allreduce s bytes of MPI_FLOAT summed (s/4 values,\n"
        "at least 1); alltoall and alltoallv s bytes per peer; gather, scatter and allgather\n"
        "s bytes per rank; root 0; barrier has no size (one row, size_bytes 0).\n"
        "--validate times nothing: each collective and size runs once on known data (small\n"
        "integer floats for the sums, which add exactly) and every rank checks every value.",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_POWERS_OF_2,
    NB_DECLARES(collectives_options, collectives_tables, collectives_figures),
    .settings_size = sizeof(collectives_settings),
    .run = run_collectives,
    .buffer_bytes = nb_buffer_bytes_after_mpi,
};

/* The table `timings` of models and consistency (operations.c writes its rows). */
static const nb_column operation_timing_columns[] = {
    NB_KEY("operation", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("calls", "count"),
    NB_KEY("calls_valid", "count"),
    NB_LOWER("late_calls", "count"),
    NB_KEY("rounds_valid", "count"),
    NB_LOWER("time_median_us", "us"),
    NB_LOWER("time_spread_us", "us"),
};
const nb_table_spec nb_operation_timings_table = NB_TABLE_SPEC("timings", operation_timing_columns);

/* ========================================================================================== */
/* methods_models.c: models                                                                   */
/* ========================================================================================== */

static const nb_column model_columns[] = {
    NB_KEY("collective", ""),
    NB_KEY("algorithm", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("predicted_us", "us"),
    NB_KEY("combine_us", "us"),
    NB_LOWER("measured_median_us", "us"),
    NB_LOWER("measured_spread_us", "us"),
    NB_LOWER("measured_to_predicted", "ratio"),
};

const nb_table_spec models_table = NB_TABLE_SPEC("models", model_columns);

static const nb_column models_range_columns[] = {
    NB_KEY("range", "count"),
    NB_KEY("first_size_bytes", "bytes"),
    NB_KEY("last_size_bytes", "bytes"),
    NB_KEY("g_us", "us"),
    NB_KEY("G_ns_per_byte", "ns_per_byte"),
    NB_KEY("o_s_us", "us"),
    NB_KEY("o_r_us", "us"),
};

const nb_table_spec loggp_ranges_table = NB_TABLE_SPEC("loggp_ranges", models_range_columns);

static const nb_column quick_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("prtt_1_0_us", "us"),
    NB_KEY("one_message_us", "us"),
    NB_KEY("G_all_us", "us"),
    NB_KEY("o_s_us", "us"),
    NB_KEY("o_r_us", "us"),
};

const nb_table_spec loggp_quick_table = NB_TABLE_SPEC("loggp_quick", quick_columns);

static const nb_option models_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--loggp-json", .type = NB_OPTION_STRING, NB_SETTING(models_settings, loggp_json),
     .value_name = "PATH", .example = "loggp.json",
     .default_text = "none: a quick PRTT measurement at 1 byte and the sizes",
     .help = "LogGP parameters from a `netbench loggp --json-file FILE` result of the same "
             "partition and MPI (summary L_us; per protocol range g_us, G_ns_per_byte, "
             "o_s_us, o_r_us)"},
    {.name = "--calls", .type = NB_OPTION_INT, NB_SETTING(models_settings, calls), .min = 3,
     .max = 100000, .value_name = "N", .default_value = "30", .example = "30",
     .help = "individually timed calls per collective, size and repetition"},
    NB_USE_REPEATS("3", "1000", "2"),
};

static const nb_table_spec *const models_tables[] = {
    &models_table, &nb_operation_timings_table, &loggp_ranges_table, &loggp_quick_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column models_figures[] = {
    NB_LOWER("L_us", "us"),
    NB_LOWER("g_small_us", "us"),
    NB_LOWER("o_s_small_us", "us"),
    NB_LOWER("o_r_small_us", "us"),
    NB_LOWER("G_large_ns_per_byte", "ns_per_byte"),
    NB_SAME("measured_to_predicted_median", "ratio"),
    NB_LOWER("measured_to_predicted_max", "ratio"),
    NB_KEY("clock_sync_error_max_us", "us"),
    NB_KEY("models_compared", "count"),
};

const nb_method nb_method_models = {
    .name = "models",
    .summary = "collectives measured / predicted by LogGP models of their algorithms (Hoefler 4)",
    .description =
        "LogGP models of the common collective algorithms against the same collectives timed\n"
        "call by call (Hoefler, Schneider, Lumsdaine, \"LogGP in Theory and Practice\",\n"
        "section 4: LogGP predicts the time of a collective algorithm; sections 2.2-2.6: the\n"
        "parameters). Every rank takes part.\n"
        "Parameters: --loggp-json FILE reads L (summary L_us) and per protocol range g, G,\n"
        "o_s, o_r from a `netbench loggp` result (the range whose first size is the largest\n"
        "<= m serves a message of m bytes; a null parameter is taken as 0, with a warning).\n"
        "Without it ranks 0 and 1 measure them quickly (the others wait): at 1 byte and each\n"
        "size, PRTT(1,0,s), PRTT(10,0,s), PRTT(10,d_G,s) with d_G = PRTT(1,0,s), and o_r by\n"
        "Kielmann's method, as `netbench loggp` does (the fastest of --repetitions loops of\n"
        "--time-cap-ms: preemption only lengthens a loop, and the timed collectives leave\n"
        "preempted calls out); between the sizes linear interpolation, beyond them the last\n"
        "slope.\n"
        "Terms of a message of m bytes (L = PRTT(1,0,1)/2 holds o_s + o_r, eq. (1), 2.5):\n"
        "  T(m) = L + (m - 1) G              one message, from the send to received\n"
        "                                    (quick: PRTT(1,0,m) / 2)\n"
        "  S(m) = max(o_s, g + (m - 1) G)    between two sends of one rank (G_all, eq. (5))\n"
        "  C(m) = MPI_Reduce_local of m bytes of MPI_FLOAT (measured on rank 0): the\n"
        "         combining step, which LogGP leaves out\n"
        "Models, P ranks, root 0 (the sizes as `netbench collectives`):\n"
        "  bcast     binomial tree: a rank with the data at t sends to its children, farthest\n"
        "            first, the j-th at t + j S(m), which has it at + T(m); the latest rank.\n"
        "            (Closed forms are hard, section 4; this is its recurrence.) P = 2: T(m)\n"
        "  reduce    binomial tree, mirrored: a parent takes its children's results nearest\n"
        "            first, each arriving T(m) after the child was done, at least o_r after\n"
        "            the previous receive, plus C(m).  P = 2: T(m) + C(m)\n"
        "  allreduce recursive doubling: log2(P') (T(m) + C(m)), P' the largest power of 2\n"
        "            <= P; P not a power of 2: + 2 T(m) + C(m) (the extra ranks in and out)\n"
        "  allgather m bytes per rank: recursive doubling sum_{k<log2 P} T(2^k m) for P a power\n"
        "            of 2, else the ring (P - 1) T(m)\n"
        "  alltoall  m bytes per peer: pairwise exchange (P - 1) T(m)\n"
        "Timing: each call alone in a time window against clocks synchronised to rank 0 (the\n"
        "approach of `netbench collectives`: window = max(2 x estimated call + 2 x clock\n"
        "error, 5 us); late calls left out; more than 10% late doubles the window, at most 3\n"
        "times); --calls calls per block, --repetitions rounds that interleave the\n"
        "collectives; the median of the rounds' medians and their spread (max - min); a\n"
        "round with fewer than half of its calls valid is left out, and a figure with fewer\n"
        "than 2 such rounds, or than half of the rounds, is unreliable.\n"
        "measured_to_predicted = measured median / predicted: 1 is the model exactly; above 1\n"
        "the library is slower than the algorithm on this network (another algorithm,\n"
        "copies, synchronisation); below 1 it beats the model (e.g. shared memory\n"
        "collectives). Default sizes: 8 B to 1 MiB in powers of 4.",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_POWERS_OF_4,
    NB_DECLARES(models_options, models_tables, models_figures),
    .settings_size = sizeof(models_settings),
    .run = run_models,
    .finish = models_finish,
    .buffer_bytes = nb_buffer_bytes_after_mpi,
};

/* ========================================================================================== */
/* methods_consistency.c: consistency                                                         */
/* ========================================================================================== */

static const nb_column rule_columns[] = {
    NB_KEY("rule", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("left", ""),
    NB_KEY("right", ""),
    NB_KEY("left_us", "us"),
    NB_KEY("right_us", "us"),
    NB_LOWER("left_to_right", "ratio"),
    NB_KEY("noise_us", "us"),
    NB_LOWER("excess_us", "us"),
    NB_LOWER("violations", "count"),
};

const nb_table_spec rules_table = NB_TABLE_SPEC("rules", rule_columns);

static const nb_option consistency_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--rules", .type = NB_OPTION_ENUM_LIST, NB_SETTING(consistency_settings, rules),
     .name_of = consistency_rule_name_of, .name_count = CONS_RULE_COUNT, .value_name = "LIST",
     .default_value = "allreduce_le_reduce_bcast,reduce_le_allreduce,"
                      "bcast_le_scatter_allgather,allgather_le_gather_bcast,gather_le_allgather",
     .example = "reduce_le_allreduce",
     .help = "rules to check, comma separated (see above)"},
    {.name = "--calls", .type = NB_OPTION_INT, NB_SETTING(consistency_settings, calls),
     .min = 3, .max = 100000, .value_name = "N", .default_value = "20", .example = "20",
     .help = "individually timed calls per operation, size and repetition"},
    {.name = "--margin", .type = NB_OPTION_DOUBLE, NB_SETTING(consistency_settings, margin),
     .min = 0.0, .max = 10.0, .value_name = "X", .default_value = "0", .example = "0.5",
     .range_note = "0.5 = 50%",
     .help = "a rule is violated only when its left side exceeds the right by this fraction of "
             "the right side beyond the noise"},
    NB_USE(NB_COMMON_REPETITIONS, "5"),
};

static const nb_table_spec *const consistency_tables[] = {&rules_table,
                                                          &nb_operation_timings_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column consistency_figures[] = {
    NB_LOWER("violations_allreduce_le_reduce_bcast", "count"),
    NB_LOWER("violations_reduce_le_allreduce", "count"),
    NB_LOWER("violations_bcast_le_scatter_allgather", "count"),
    NB_LOWER("violations_allgather_le_gather_bcast", "count"),
    NB_LOWER("violations_gather_le_allgather", "count"),
    NB_LOWER("violations", "count"),
    NB_KEY("rule_sizes_checked", "count"),
    NB_KEY("rule_sizes_not_judged", "count"),
    NB_KEY("clock_sync_error_max_us", "us"),
};

const nb_method nb_method_consistency = {
    .name = "consistency",
    .summary = "self-consistency rules of MPI collectives, violations beyond the noise (Traff et al.)",
    .description =
        "Self-consistent performance guidelines for MPI collectives (Traff, Gropp, Thakur,\n"
        "\"Self-consistent MPI performance guidelines\", IEEE TPDS 2010): a collective should\n"
        "be no slower than a mock-up of it made of other collectives, nor than a more general\n"
        "collective. n is the whole data size: MPI_Bcast of n bytes, MPI_Reduce and\n"
        "MPI_Allreduce of n bytes of MPI_FLOAT summed, MPI_Gather, MPI_Scatter and\n"
        "MPI_Allgather of n / P bytes per rank (n rounded up to a multiple of P); root 0.\n"
        "Rules (--rules):\n"
        "  allreduce_le_reduce_bcast   MPI_Allreduce(n) <= MPI_Reduce(n) + MPI_Bcast(n)\n"
        "  reduce_le_allreduce         MPI_Reduce(n)    <= MPI_Allreduce(n)\n"
        "  bcast_le_scatter_allgather  MPI_Bcast(n)     <= MPI_Scatter(n) + MPI_Allgather(n)\n"
        "  allgather_le_gather_bcast   MPI_Allgather(n) <= MPI_Gather(n) + MPI_Bcast(n)\n"
        "  gather_le_allgather         MPI_Gather(n)    <= MPI_Allgather(n)\n"
        "A mock-up (the right side of a '+' rule) is timed as one operation: its two calls\n"
        "back to back, as a user would write it. Every operation is timed call by call in a\n"
        "time window against clocks synchronised to rank 0 (the approach of `netbench\n"
        "collectives`), --calls calls per block; --repetitions rounds interleave all\n"
        "operations of a size, so that a slow phase of the machine spreads over both sides.\n"
        "A side's time is the median of the rounds' medians, its spread their max - min (a\n"
        "round with fewer than half of its calls valid is left out).\n"
        "noise = max((spread left + spread right) / 2, 2 x MPI_Wtick); a rule is violated\n"
        "at a size when left - right > noise + --margin x right (a healthy library's sides\n"
        "move between sessions by more than one run's noise shows: a margin keeps such a rule\n"
        "from flipping; 0, the default, is the guideline as written); excess_us =\n"
        "max(left - right - noise - margin x right, 0) (> 0 only for a violation),\n"
        "left_to_right = left / right. A side needs at least 2 rounds, and half of them, with half of\n"
        "their calls valid; otherwise the rule is not judged at that size (violations null,\n"
        "an unreliable entry). A violation is a finding about the MPI library (its choice of\n"
        "algorithm at that size), not an error of the measurement; each one is also a\n"
        "warning naming the rule, the size and both times. Needs no reference: the count of\n"
        "violations should be 0 on any system. Default sizes: 8 B to 1 MiB in powers of 4.",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_POWERS_OF_4,
    NB_DECLARES(consistency_options, consistency_tables, consistency_figures),
    .settings_size = sizeof(consistency_settings),
    .run = run_consistency,
    .finish = consistency_finish,
    .buffer_bytes = nb_buffer_bytes_after_mpi,
};

/* ========================================================================================== */
/* methods_pairs.c: matrix, rankdist                                                          */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column pair_columns[] = {
    NB_KEY("rank_a", ""),
    NB_KEY("rank_b", ""),
    NB_KEY("host_a", ""),
    NB_KEY("host_b", ""),
    NB_LOWER("latency_us", "us"),
    NB_HIGHER("bandwidth_MBps", "MBps"),
    NB_KEY("flagged", ""),
    NB_KEY("round", "count"),
    NB_KEY("suspect", ""),
    NB_LOWER("retest_latency_us", "us"),
    NB_HIGHER("retest_bandwidth_MBps", "MBps"),
};

const nb_table_spec pairs_table = NB_TABLE_SPEC("pairs", pair_columns);

static const nb_column bad_node_columns[] = {
    NB_KEY("rank", ""),
    NB_KEY("host", ""),
    NB_KEY("pairs", "count"),
    NB_LOWER("bad_pairs", "count"),
};

const nb_table_spec bad_nodes_table = NB_TABLE_SPEC("bad_nodes", bad_node_columns);

static const nb_column distance_columns[] = {
    NB_KEY("distance", "count"),
    NB_KEY("rank", ""),
    NB_KEY("host", ""),
    NB_LOWER("latency_us", "us"),
    NB_HIGHER("bandwidth_MBps", "MBps"),
    NB_KEY("flagged", ""),
};

const nb_table_spec distances_table = NB_TABLE_SPEC("distances", distance_columns);

static const nb_option matrix_options[] = {
    NB_USE(NB_COMMON_MIN_SIZE, "8"),
    NB_USE(NB_COMMON_MAX_SIZE, "1M"),
    NB_USE(NB_COMMON_SEED, "1"),
    {.name = "--schedule", .type = NB_OPTION_ENUM, NB_SETTING(matrix_settings, schedule),
     .name_of = matrix_schedule_name, .name_count = 2, .value_name = "NAME",
     .default_value = "concurrent", .example = "concurrent",
     .help = "concurrent: the disjoint pairs of one round of a round-robin tournament at once, "
             "round after round (N-1 rounds; N for an odd N); sequential: one pair at a time, "
             "the others waiting (isolates every pair; N (N-1) / 2 steps)"},
    {.name = "--bandwidth-fraction", .type = NB_OPTION_DOUBLE,
     NB_SETTING(matrix_settings, bandwidth_fraction), .min = 0.01, .max = 1.0, .value_name = "F",
     .default_value = "0.93", .example = "0.93", .range_note = "0.93 = 93 % of the best pair",
     .help = "a pair whose bandwidth is below F x the best pair's of this run is suspect"},
    {.name = "--latency-factor", .type = NB_OPTION_DOUBLE,
     NB_SETTING(matrix_settings, latency_factor), .min = 1.0, .max = 1000.0, .value_name = "X",
     .default_value = "2.1", .example = "2.1", .range_note = "2.1 = 2.1 x the lowest pair",
     .help = "a pair whose latency is above X x the lowest pair's of this run is suspect"},
    {.name = "--rounds", .type = NB_OPTION_INT, NB_SETTING(matrix_settings, rounds), .min = 1,
     .max = 1000000, .value_name = "K", .default_text = "every round, the full map",
     .example = "4",
     .help = "quick mode: only K rounds of the tournament, drawn with --seed (the same seed, "
             "the same pairs); the nightly sample"},
    {.name = "--progress-every", .type = NB_OPTION_DOUBLE,
     NB_SETTING(matrix_settings, progress_every_s), .min = 0.0, .max = 86400.0,
     .value_name = "SECONDS", .default_value = "60", .example = "60",
     .help = "a progress line on stderr (round r of R, elapsed, estimate) at most every "
             "SECONDS; 0: after every round"},
    {.name = "--print-schedule", .type = NB_OPTION_INT,
     NB_SETTING(matrix_settings, print_schedule_ranks), .min = 2,
     .max = MATRIX_MAX_SCHEDULE_RANKS, .value_name = "N", .default_text = "off", .example = "6",
     .help = "print the rounds (with --rounds/--seed: the chosen ones) for N ranks and exit; "
             "needs no MPI (--json: as JSON)"},
    NB_USE_REPEATS("5", "10000", "5"),
};

static const nb_table_spec *const matrix_tables[] = {&pairs_table, &bad_nodes_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column matrix_figures[] = {
    NB_KEY("pairs", "pairs"),
    NB_KEY("pairs_total", "pairs"),
    NB_KEY("rounds", "count"),
    NB_KEY("rounds_total", "count"),
    NB_LOWER("latency_median_us", "us"),
    NB_LOWER("latency_max_us", "us"),
    NB_HIGHER("bandwidth_median_MBps", "MBps"),
    NB_HIGHER("bandwidth_min_MBps", "MBps"),
    NB_LOWER("flagged_pairs", "pairs"),
    NB_KEY("bandwidth_best_MBps", "MBps"),
    NB_KEY("bandwidth_floor_MBps", "MBps"),
    NB_KEY("latency_lowest_us", "us"),
    NB_KEY("latency_ceiling_us", "us"),
    NB_LOWER("suspect_pairs", "pairs"),
    NB_LOWER("bad_pairs", "pairs"),
    NB_KEY("cleared_pairs", "pairs"),
    NB_LOWER("bad_nodes", "nodes"),
    NB_KEY("measure_s", "s"),
    NB_KEY("round_mean_s", "s"),
    NB_KEY("pair_mean_s", "s"),
    NB_KEY("retest_s", "s"),
    NB_KEY("retest_pair_mean_s", "s"),
};

const nb_method nb_method_matrix = {
    .name = "matrix",
    .summary = "all-pairs latency and bandwidth, an N x N map to find a bad link or node",
    .description =
        "All-pairs ping-pong: for every pair of ranks (i, j) the blocking ping-pong latency at\n"
        "--min-size bytes (default 8) and the bandwidth at --max-size bytes (default 1M), each\n"
        "the median of --repetitions loops of as many round trips as fit in --time-cap-ms. With\n"
        "one rank per node the table is the node-to-node map.\n"
        "Schedule (--schedule): concurrent (default) measures the disjoint pairs of one round of\n"
        "a round-robin tournament (circle method) at the same time, latency then bandwidth,\n"
        "each phase between barriers: N-1 rounds for an even N, N for an odd N (one rank sits\n"
        "each round out), every pair exactly once. sequential measures one pair at a time while\n"
        "the others wait without polling: N (N-1) / 2 steps. A step costs about\n"
        "2 x --repetitions x --time-cap-ms plus the probes (about 60 ms at the defaults):\n"
        "1000 nodes take about 1 minute concurrently, 8 hours sequentially.\n"
        "Verdict, relative to this run (ClusterKit's rule and defaults): a pair is suspect when\n"
        "its bandwidth is below --bandwidth-fraction x the best pair's (0.93: a healthy link\n"
        "delivers within a few per cent of the best, a degraded one loses far more) or its\n"
        "latency above --latency-factor x the lowest pair's (2.1: placement moves latency by\n"
        "tens of per cent, never 2 x). Every suspect pair is then measured again ALONE (all\n"
        "other ranks wait): still failing the same thresholds it is bad (table pairs: flagged),\n"
        "otherwise it was congestion. A rank whose every measured pair (at least 2) is bad is\n"
        "named as a bad node. Quick mode (nightly): --rounds K measures K rounds drawn with\n"
        "--seed. Progress goes to stderr. With --json-file PATH the N x N maps are written\n"
        "beside it: matrix_bandwidth_MBps.csv, matrix_latency_us.csv, matrix_maps.json.",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_POWERS_OF_2,
    NB_DECLARES(matrix_options, matrix_tables, matrix_figures),
    .settings_size = sizeof(matrix_settings),
    .run = run_matrix,
    .without_mpi = matrix_without_mpi,
};

static const nb_option rankdist_options[] = {
    NB_USE(NB_COMMON_MIN_SIZE, "8"),
    NB_USE(NB_COMMON_MAX_SIZE, "1M"),
    {.name = "--tolerance", .type = NB_OPTION_DOUBLE, NB_SETTING(rankdist_settings, tolerance),
     .min = 0.001, .max = 1.0, .value_name = "X", .default_value = "0.2", .example = "0.2",
     .range_note = "0.2 = 20%",
     .help = "a distance whose bandwidth is below (1 - X) x the best distance's is flagged "
             "(0.2 = 20%)"},
    NB_USE_REPEATS("5", "10000", "5"),
};

static const nb_table_spec *const rankdist_tables[] = {&distances_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column rankdist_figures[] = {
    NB_KEY("distances", "count"),
    NB_LOWER("latency_nearest_us", "us"),
    NB_LOWER("latency_farthest_us", "us"),
    NB_HIGHER("bandwidth_nearest_MBps", "MBps"),
    NB_HIGHER("bandwidth_farthest_MBps", "MBps"),
    NB_LOWER("flagged_distances", "count"),
};

const nb_method nb_method_rankdist = {
    .name = "rankdist",
    .summary = "latency and bandwidth from rank 0 to rank d = 1, 2, 4, ... (Altix 3.2)",
    .description =
        "Distance sweep in rank space, the Altix study section 3.2 (Fig. 2 and 3): ping-pong\n"
        "between rank 0 and rank d for d = 1, 2, 4, ... < P, one pair at a time while the\n"
        "others wait without polling: the latency at --min-size bytes (default 8) and the\n"
        "bandwidth at --max-size bytes (default 1M), each the median of --repetitions loops of\n"
        "as many round trips as fit in --time-cap-ms. Where ranks are placed by node, the\n"
        "distances cross the machine's levels (same node, neighbouring nodes, far nodes). A\n"
        "distance whose bandwidth is below (1 - --tolerance) x the best one is flagged.",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_POWERS_OF_2,
    NB_DECLARES(rankdist_options, rankdist_tables, rankdist_figures),
    .settings_size = sizeof(rankdist_settings),
    .run = run_rankdist,
};

/* ========================================================================================== */
/* methods_multipair.c: connections, loaded                                                   */
/* ========================================================================================== */

static const nb_column connections_columns[] = {NB_KEY("peers", "count"), LATENCY_COLUMNS};

const nb_table_spec connections_table =
    NB_TABLE_SPEC("connections", connections_columns);

static const nb_option connections_options[] = {
    {.name = "--small-size", .type = NB_OPTION_SIZE, NB_SETTING(connections_settings, small_size),
     .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .default_value = "8",
     .example = "8", .help = "the small message size (latency-bound)"},
    {.name = "--large-size", .type = NB_OPTION_SIZE, NB_SETTING(connections_settings, large_size),
     .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .default_value = "64K",
     .example = "64K",
     .help = "the larger message size (beyond the eager limit of most transports)"},
    {.name = "--setup-round-trips", .type = NB_OPTION_INT,
     NB_SETTING(connections_settings, setup_round_trips), .min = 1, .max = 1000,
     .value_name = "N", .default_value = "2", .example = "2",
     .help = "round trips of each size rank 0 makes with each new peer to open the connection"},
    NB_USE_REPEATS("5", "10000", "5"),
};

static const nb_table_spec *const connections_tables[] = {&connections_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column connections_figures[] = {
    NB_KEY("max_k", "count"),
    NB_KEY("small_size_bytes", "bytes"),
    NB_KEY("large_size_bytes", "bytes"),
    NB_LOWER("latency_small_k0_us", "us"),
    NB_LOWER("latency_small_max_k_us", "us"),
    NB_LOWER("latency_large_k0_us", "us"),
    NB_LOWER("latency_large_max_k_us", "us"),
    NB_LOWER("cost_small_max_k_us", "us"),
    NB_LOWER("cost_large_max_k_us", "us"),
    NB_KEY("noise_floor_small_max_k_us", "us"),
    NB_KEY("noise_floor_large_max_k_us", "us"),
};

const nb_method nb_method_connections = {
    .name = "connections",
    .summary = "latency of ranks 0-1 with k other connections open on rank 0 (Kutlug 3.2.5)",
    .description =
        "Latency with multiple connections, Kutlug section 3.2.5 and 4.2.4: a blocking\n"
        "ping-pong between ranks 0 and 1 (latency = round trip / 2) after rank 0 has exchanged\n"
        "messages with k other peers, ranks 2 .. k+1, for k = 0 (the baseline), 1, 2, 4, ...\n"
        "up to P-2 (every rank of the job). 'Since MPI does not provide explicit primitives\n"
        "for establishing communications, we make sure that the connections are established\n"
        "by sending messages to different nodes': before the measurement at k, rank 0 makes\n"
        "--setup-round-trips round trips of both sizes with every peer new at this k. The\n"
        "peers then wait at a barrier without busy polling: what is measured is the cost of\n"
        "the open connections in rank 0's communication subsystem, not contention. Sizes:\n"
        "--small-size and --large-size; each latency is the median of --repetitions loops of\n"
        "as many round trips as fit in --time-cap-ms. cost_us = latency at k - latency at\n"
        "k = 0 (same size); noise_floor_us = the larger spread (max - min over the\n"
        "repetitions) of the two latencies; a cost below 0 but within it is noise and\n"
        "reported as 0, one below -noise_floor_us is null and flagged unreliable (a\n"
        "disturbed baseline). With 2 ranks only k = 0 exists: the summary costs are\n"
        "null and flagged. Connection-less transports (shared memory) show no cost; over a\n"
        "network run one rank per node (mpirun --map-by node, srun --ntasks-per-node=1).",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_NONE,
    NB_DECLARES(connections_options, connections_tables, connections_figures),
    .settings_size = sizeof(connections_settings),
    .run = run_connections,
    .finish = connections_finish,
};

static const nb_column loaded_latency_columns[] = {
    NB_KEY("loading_pairs", "count"),
    LATENCY_COLUMNS,
    NB_KEY("load_bandwidth_MBps", "MBps"),
};

const nb_table_spec loaded_latency_table =
    NB_TABLE_SPEC("loaded_latency", loaded_latency_columns);

static const nb_column aggregate_columns[] = {
    NB_KEY("pairs", "count"),
    NB_KEY("bandwidth_windows", "count"),
    NB_HIGHER("aggregate_bandwidth_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_pair_min_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_pair_mean_MBps", "MBps"),
    NB_KEY("rate_windows", "count"),
    NB_HIGHER("message_rate_per_s", "per_s"),
    NB_HIGHER("message_rate_per_pair_min_per_s", "per_s"),
};

const nb_table_spec aggregate_table = NB_TABLE_SPEC("aggregate", aggregate_columns);

static const nb_option loaded_options[] = {
    {.name = "--latency-size", .type = NB_OPTION_SIZE, NB_SETTING(loaded_settings, latency_size),
     .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .default_value = "8",
     .example = "8", .help = "ping-pong size of pair 0 in (a)"},
    {.name = "--bandwidth-size", .type = NB_OPTION_SIZE,
     NB_SETTING(loaded_settings, bandwidth_size), .min = 1, .max = (double)NB_MAX_MESSAGE_SIZE,
     .value_name = "SIZE", .default_value = "64K", .example = "64K",
     .help = "message size of the loading streams in (a) and of the aggregate bandwidth in (b)"},
    {.name = "--rate-size", .type = NB_OPTION_SIZE, NB_SETTING(loaded_settings, rate_size),
     .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .default_value = "8",
     .example = "8", .help = "message size of the message rate in (b)"},
    {.name = "--window", .type = NB_OPTION_INT, NB_SETTING(loaded_settings, window), .min = 1,
     .max = MP_MAX_WINDOW, .value_name = "N", .default_value = "64", .example = "64",
     .help = "non-blocking messages in flight per window (then the receiver acknowledges)"},
    NB_USE_REPEATS("5", "100000", "5"),
};

static const nb_table_spec *const loaded_tables[] = {&loaded_latency_table, &aggregate_table,
                                                     NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column loaded_figures[] = {
    NB_KEY("pairs", "pairs"),
    NB_KEY("loading_pairs_max", "pairs"),
    NB_LOWER("loaded_latency_k0_us", "us"),
    NB_LOWER("loaded_latency_max_k_us", "us"),
    NB_LOWER("loaded_latency_cost_max_k_us", "us"),
    NB_KEY("loaded_latency_noise_floor_max_k_us", "us"),
    NB_HIGHER("aggregate_bandwidth_MBps", "MBps"),
    NB_HIGHER("bandwidth_per_pair_min_MBps", "MBps"),
    NB_HIGHER("aggregate_bandwidth_one_pair_MBps", "MBps"),
    NB_HIGHER("aggregate_bandwidth_scaling", "ratio"),
    NB_HIGHER("message_rate_per_s", "per_s"),
    NB_HIGHER("message_rate_one_pair_per_s", "per_s"),
};

const nb_method nb_method_loaded = {
    .name = "loaded",
    .summary = "latency under load, aggregate bandwidth, message rate of pairs (Zamani 5.1-5.2)",
    .description =
        "Pairs (0,1), (2,3), ... (an odd last rank only waits), Zamani et al. sections 5.1\n"
        "(Fig. 6, latency under load) and 5.2 (Fig. 9, aggregate bandwidth):\n"
        "(a) ping-pong latency (round trip / 2, --latency-size) of pair 0 while k other pairs\n"
        "    stream, k = 0 .. pairs-1: each loading pair sends windows of --bandwidth-size\n"
        "    messages until pair 0 has measured (rank 0 then tells them to stop); the other\n"
        "    pairs wait without busy polling. cost_us = latency at k - latency at k = 0;\n"
        "    noise_floor_us = the larger spread (max - min over the repetitions) of the two;\n"
        "    a cost below 0 within it is noise, reported as 0; below -noise_floor_us it is\n"
        "    null and flagged unreliable. load_bandwidth_MBps: what the loading pairs moved\n"
        "    meanwhile, in total.\n"
        "(b) k = 1 .. pairs pairs at once, started together by barriers: the even rank of\n"
        "    each pair sends windows of --window non-blocking messages (MPI_Isend, all\n"
        "    completed, then a 1-byte acknowledgement from the receiver, as OSU's\n"
        "    osu_mbw_mr), as many windows as fit in --time-cap-ms, --repetitions times; per\n"
        "    pair the median time per window. aggregate_bandwidth_MBps = the sum over the\n"
        "    pairs of window x --bandwidth-size / time per window (Zamani: 'the sum of\n"
        "    individual bandwidths'); message_rate_per_s = the sum over the pairs of window /\n"
        "    time per window at --rate-size (messages per second, higher is better).\n"
        "With 2 ranks (1 pair) (a) has k = 0 only: the cost is null and flagged. Over a\n"
        "network put the two ranks of a pair on different nodes (one rank per node).",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_NONE,
    NB_DECLARES(loaded_options, loaded_tables, loaded_figures),
    .settings_size = sizeof(loaded_settings),
    .run = run_loaded,
    .finish = loaded_finish,
    .buffer_bytes = loaded_buffer_bytes,
};

/* The variants of one ping-pong measured side by side (paired.h: polling, anysource, sendmodes)
 * share their options and the layout of their tables: latency per variant (named in the column
 * `key`), and each variant's cost against the baseline. */
#define NB_PAIRED_LATENCY_COLUMNS(key)                                                         \
    NB_KEY("size_bytes", "bytes"), NB_KEY((key), ""), NB_LATENCY_COLUMNS
#define NB_PAIRED_COST_COLUMNS(key)                                                            \
    NB_KEY("size_bytes", "bytes"), NB_KEY((key), ""), NB_KEY("against", ""),                   \
        NB_LOWER("cost_us", "us"), NB_LOWER("cost_ratio", "ratio"),                            \
        NB_KEY("noise_floor_us", "us")

static const nb_option paired_options[] = {
    NB_USE_SIZES("8", "64K"),
    NB_USE_REPEATS("11", "10000", "2"),
};

/* ========================================================================================== */
/* methods_polling.c: polling                                                                 */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column polling_columns[] = {NB_PAIRED_LATENCY_COLUMNS("mode")};

const nb_table_spec polling_table = NB_TABLE_SPEC("polling", polling_columns);

static const nb_column polling_cost_columns[] = {NB_PAIRED_COST_COLUMNS("mode")};

const nb_table_spec polling_cost_table = NB_TABLE_SPEC("polling_cost", polling_cost_columns);

static const nb_table_spec *const polling_tables[] = {&polling_table, &polling_cost_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column polling_figures[] = {
    NB_KEY("small_size_bytes", "bytes"),
    NB_LOWER("busy_poll_latency_small_us", "us"),
    NB_LOWER("blocking_latency_small_us", "us"),
    NB_LOWER("test_yield_latency_small_us", "us"),
    NB_LOWER("test_call_us", "us"),
    NB_LOWER("blocking_cost_small_us", "us"),
    NB_LOWER("blocking_cost_small_ratio", "ratio"),
    NB_LOWER("test_yield_cost_small_us", "us"),
    NB_LOWER("test_yield_cost_small_ratio", "ratio"),
};

const nb_method nb_method_polling = {
    .name = "polling",
    .summary = "blocking vs polling completion: Wait, Test loop, Test+yield (Kutlug 3.2.6)",
    .description =
        "Latency with blocking completions, Kutlug section 3.2.6, and polling/blocking impact,\n"
        "Zamani et al. section 5.4: one non-blocking ping-pong (rank 0: MPI_Irecv of the reply,\n"
        "MPI_Isend; rank 1: MPI_Irecv, then MPI_Isend of the reply) completed three ways, on\n"
        "both ranks alike: 'blocking' (MPI_Wait/MPI_Waitall), 'busy_poll' (MPI_Test/MPI_Testall\n"
        "in a loop) and 'test_yield' (MPI_Test, then sched_yield() when not done). Latency =\n"
        "round trip / 2. Only the completion differs, so a difference is its cost. The cost of\n"
        "a mode = its latency - busy_poll's (Kutlug: blocking against the polling latency\n"
        "test); cost_ratio = its latency / busy_poll's. Whether MPI_Wait really blocks (sleeps)\n"
        "or spins inside the library is the MPI's choice: over shared memory both MPIs spin,\n"
        "and the cost is near 0.\n"
        "Per size the modes take turns: each mode's iteration count from a probe and a\n"
        "warm-up of it (as many round trips as fit in --time-cap-ms, at most --iterations),\n"
        "then --repetitions rounds, each running every mode once in a rotated order.\n"
        "Latencies: min/median/max over the rounds. A cost is the median over the rounds of\n"
        "the paired difference within a round, so a slow phase of the machine hits both\n"
        "sides; its noise_floor_us is the largest of 3 standard errors of that median (from\n"
        "the MAD of the differences), 3% of busy_poll's median latency, the timer's\n"
        "resolution of the difference and 2 x test_call_us\n"
        "(summary): the time of one MPI_Test call on a pending receive (the slower rank's,\n"
        "the fastest of 5 x 20000 calls), the period of the busy-poll loop. A message that\n"
        "arrives during a call is seen at the next, up to a period late for each of the 3\n"
        "polled completions of a round trip, so MPI_Wait, polling inside the library, may\n"
        "beat the MPI_Test loop by about 2 periods per latency: no negative cost of blocking.\n"
        "A cost below 0 by less than its noise floor is reported as 0; by more, as null with\n"
        "an 'unreliable' entry.",
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_POWERS_OF_4,
    NB_DECLARES(paired_options, polling_tables, polling_figures),
    .run = run_polling,
};

/* ========================================================================================== */
/* methods_anysource.c: anysource                                                             */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column anysource_columns[] = {NB_PAIRED_LATENCY_COLUMNS("receive")};

const nb_table_spec anysource_table = NB_TABLE_SPEC("anysource", anysource_columns);

static const nb_column anysource_cost_columns[] = {NB_PAIRED_COST_COLUMNS("receive")};

const nb_table_spec anysource_cost_table =
    NB_TABLE_SPEC("anysource_cost", anysource_cost_columns);

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
    NB_DECLARES(paired_options, anysource_tables, anysource_figures),
    .run = run_anysource,
};

/* ========================================================================================== */
/* methods_sendmodes.c: sendmodes                                                             */
/* ========================================================================================== */

/* Output tables (docs/output-format.md). */
static const nb_column sendmodes_columns[] = {NB_PAIRED_LATENCY_COLUMNS("send_mode")};

const nb_table_spec sendmodes_table = NB_TABLE_SPEC("sendmodes", sendmodes_columns);

static const nb_column sendmodes_ratio_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("send_mode", ""),
    NB_KEY("against", ""),
    NB_LOWER("ratio_to_standard", "ratio"),
    NB_KEY("difference_noise_floor_us", "us"),
};

const nb_table_spec sendmodes_ratio_table =
    NB_TABLE_SPEC("sendmodes_ratio", sendmodes_ratio_columns);

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
    NB_DECLARES(paired_options, sendmodes_tables, sendmodes_figures),
    .run = run_sendmodes,
    .finish = sendmodes_finish,
    .buffer_bytes = sendmodes_buffer_bytes,
};

/* reuse and vector (methods_buffers.c) share the columns after their keys: the latency, the
 * bandwidth, and the extra time and ratio against their reference with its noise. */
#define NB_BUFFERS_COST_COLUMNS                                                                \
    NB_LATENCY_COLUMNS, NB_HIGHER("bandwidth_median_MBps", "MBps"), NB_LOWER("extra_us", "us"), \
        NB_LOWER("ratio", "ratio"), NB_KEY("noise_us", "us")

/* --summary-size of reuse and vector (a `summary_size` field of their settings). */
#define SUMMARY_SIZE_OPTION(settings_type)                                                         \
    {.name = "--summary-size", .type = NB_OPTION_SIZE, NB_SETTING(settings_type, summary_size),   \
     .min = 1, .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .default_value = "64K", \
     .example = "64K",                                                                           \
     .help = "the summary's cost is taken at the largest size measured up to this one"}

/* ========================================================================================== */
/* methods_buffers.c: reuse, vector                                                           */
/* ========================================================================================== */

static const nb_column reuse_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("reuse_percent", "percent"),
    NB_KEY("buffers", "count"),
    NB_BUFFERS_COST_COLUMNS,
};

const nb_table_spec reuse_table = NB_TABLE_SPEC("reuse", reuse_columns);

static const nb_option reuse_options[] = {
    {.common = NB_COMMON_SIZES, .default_text = REUSE_DEFAULT_SIZES},
    {.name = "--reuse-percentages", .type = NB_OPTION_INT_LIST,
     NB_SETTING_LIST(reuse_settings, percents, percent_count), .min = 0, .max = 100,
     .value_name = "LIST", .default_value = "0,25,50,75,100", .example = "100,50,0",
     .help = "percentages of the transfers that reuse one buffer; must include 100, the "
             "reference"},
    {.name = "--buffers", .type = NB_OPTION_LONG, NB_SETTING(reuse_settings, buffers),
     .min = 2, .max = 1000000, .value_name = "N", .default_value = "1024", .example = "1024",
     .help = "distinct fresh buffers per size (per rank), used in turn; fewer where "
             "--memory-cap holds fewer"},
    {.name = "--memory-cap", .type = NB_OPTION_SIZE, NB_SETTING(reuse_settings, memory_cap),
     .min = 8192, .max = (double)((size_t)64 << 30), .value_name = "SIZE",
     .default_value = "64M", .example = "64M",
     .help = "bytes of fresh buffers per rank and size (each buffer: its pages + one guard "
             "page); it bounds --buffers for large sizes (64M: 63 buffers of 1M)"},
    SUMMARY_SIZE_OPTION(reuse_settings),
    NB_USE_REPEATS("7", "10000", "5"),
};

static const nb_table_spec *const reuse_tables[] = {&reuse_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column reuse_figures[] = {
    NB_KEY("latency_reuse100_small_size_bytes", "bytes"),
    NB_LOWER("latency_reuse100_small_us", "us"),
    NB_KEY("cost_size_bytes", "bytes"),
    NB_KEY("cost_reuse_percent", "percent"),
    NB_LOWER("cost_extra_us", "us"),
    NB_LOWER("cost_ratio", "ratio"),
    NB_KEY("cost_noise_us", "us"),
    NB_LOWER("cost_extra_max_us", "us"),
    NB_KEY("cost_extra_max_size_bytes", "bytes"),
};

const nb_method nb_method_reuse = {
    .name = "reuse",
    .summary = "ping-pong with 100..0 % of the transfers from one reused buffer (Zamani 5.3)",
    .description =
        "Buffer reuse, Zamani et al. section 5.3 (Kutlug sections 3.2.4 and 4.2.3, 'latency\n"
        "with buffer management'): the blocking MPI_Send/MPI_Recv ping-pong of pingpong, in\n"
        "which p % of the transfers use one reused buffer and the others a fresh buffer (p =\n"
        "--reuse-percentages; transfer t reuses when floor((t+1)p/100) > floor(tp/100), so p\n"
        "is spread evenly). 100 % is the standard test; at 0 % every transfer uses another\n"
        "buffer. Both ranks follow the pattern: a round trip sends and receives in the\n"
        "transfer's buffer on each side. A fresh buffer is its own anonymous mapping\n"
        "(page-aligned, followed by a PROT_NONE guard page so that it stays a region of its\n"
        "own), written before timing so that no page fault is timed: what is measured is the\n"
        "cost of a buffer the MPI library and the interconnect have not used lately\n"
        "(registration or address translation, their caches, and the CPU caches). The pool of\n"
        "fresh buffers per size is --buffers, fewer where --memory-cap holds fewer; it is\n"
        "used in turn, so a 'fresh' buffer was last used pool - 1 fresh transfers before\n"
        "(Zamani used 1000 buffers for 1000 transfers; a registration cache larger than the\n"
        "pool hides the cost after the first round: raise the cap to probe it). Per size the\n"
        "percentages are measured interleaved, with one iteration count (from a few timed\n"
        "runs at the lowest percentage: the fastest sets it, up to --time-cap-ms per\n"
        "repetition, at most --iterations), each once untimed, then --repetitions times in a\n"
        "rotating order. latency = round trip / 2; bandwidth = size / latency (MB/s).\n"
        "extra_us and ratio are the medians over the repetitions of the paired difference and\n"
        "ratio against 100 % of the same repetition; noise_us is the largest of 3 standard\n"
        "errors of that median (from the MAD of the differences), 3% of 100 %'s median\n"
        "latency and the timer's resolution of the difference. A cost below 0 by less than\n"
        "noise_us is reported as 0; by more, as null, flagged unreliable. Summary: the lowest percentage's cost at\n"
        "--summary-size, its largest cost over the sizes, and the latency at 100 % at the\n"
        "smallest size.",
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_NONE,
    NB_DECLARES(reuse_options, reuse_tables, reuse_figures),
    .settings_size = sizeof(reuse_settings),
    .run = run_reuse,
    .finish = reuse_finish,
    .buffer_bytes = reuse_buffer_bytes,
};

static const nb_column contiguous_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_LATENCY_COLUMNS,
    NB_HIGHER("bandwidth_median_MBps", "MBps"),
};

const nb_table_spec contiguous_table = NB_TABLE_SPEC("contiguous", contiguous_columns);

static const nb_column vector_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("segments", "count"),
    NB_KEY("segment_bytes", "bytes"),
    NB_KEY("stride_bytes", "bytes"),
    NB_BUFFERS_COST_COLUMNS,
};

const nb_table_spec vector_table = NB_TABLE_SPEC("vector", vector_columns);

static const nb_option vector_options[] = {
    {.common = NB_COMMON_SIZES, .default_text = VECTOR_DEFAULT_SIZES},
    {.name = "--segments", .type = NB_OPTION_INT_LIST,
     NB_SETTING_LIST(vector_settings, segments, segment_count), .min = 1, .max = 65536,
     .value_name = "LIST", .default_value = "1,2,4,8,16,32,64", .example = "1,8,64",
     .help = "segment counts k of the vector datatype (same total bytes: size / k per "
             "segment); every size must be a multiple of every k"},
    {.name = "--stride-factor", .type = NB_OPTION_INT, NB_SETTING(vector_settings, stride_factor),
     .min = 1, .max = 64, .value_name = "F", .default_value = "2", .example = "2",
     .help = "distance between the starts of consecutive segments, in segment lengths (1: "
             "no gap, a contiguous layout described as a vector)"},
    SUMMARY_SIZE_OPTION(vector_settings),
    NB_USE_REPEATS("7", "10000", "5"),
};

static const nb_table_spec *const vector_tables[] = {&contiguous_table, &vector_table, NULL};

/* Its summary figures (docs/output-format.md). */
static const nb_column vector_figures[] = {
    NB_KEY("cost_size_bytes", "bytes"),
    NB_KEY("cost_segments", "count"),
    NB_LOWER("cost_extra_us", "us"),
    NB_LOWER("cost_ratio", "ratio"),
    NB_KEY("cost_noise_us", "us"),
    NB_LOWER("cost_extra_max_us", "us"),
    NB_KEY("cost_extra_max_size_bytes", "bytes"),
};

const nb_method nb_method_vector = {
    .name = "vector",
    .summary = "ping-pong of an MPI vector in k segments against the contiguous message "
               "(Kutlug 4.2.5)",
    .description =
        "Non-contiguous data, Kutlug sections 3.2.7 and 4.2.5 ('latency when using\n"
        "non-contiguous buffers'): the blocking MPI_Send/MPI_Recv ping-pong of pingpong, with\n"
        "the message described by MPI_Type_vector(k, size / k, stride, MPI_BYTE) on both\n"
        "sides (sent from and received into the strided layout), for every k of --segments\n"
        "and the same total bytes; stride = --stride-factor x the segment length. The\n"
        "reference is the contiguous message of the same size (MPI_BYTE x size); the\n"
        "difference is the cost of the non-contiguous layout (packing, or the interconnect's\n"
        "gather/scatter). Per size the contiguous message and every k are measured\n"
        "interleaved, with one iteration count (from a few timed runs at the largest k: the\n"
        "fastest sets it, up to --time-cap-ms per repetition, at most --iterations), each\n"
        "once untimed, then --repetitions times in a rotating order. latency = round trip /\n"
        "2; bandwidth = size / latency (MB/s). extra_us and ratio are the medians over the\n"
        "repetitions of the paired difference and ratio against the contiguous message of the\n"
        "same repetition; noise_us is the largest of 3 standard errors of that median (from\n"
        "the MAD of the differences), 3% of the contiguous median latency and the timer's\n"
        "resolution of the difference. A cost below 0 by less than noise_us is reported as 0;\n"
        "by more, as null, flagged unreliable. Summary: the largest k's cost at --summary-size and its largest cost\n"
        "over the sizes.",
    .scope = NB_ON_PAIR,
    .progression = NB_SIZES_NONE,
    NB_DECLARES(vector_options, vector_tables, vector_figures),
    .settings_size = sizeof(vector_settings),
    .run = run_vector,
    .finish = vector_finish,
    .buffer_bytes = vector_buffer_bytes,
};

/* ========================================================================================== */
/* The registry: every method, in the order of `netbench --help`                             */
/* ========================================================================================== */

#define NB_REGISTRY(X)                                                                          \
    X(pingpong)                                                                                 \
    X(bibw)                                                                                     \
    X(bothway)                                                                                  \
    X(flood)                                                                                    \
    X(overlap)                                                                                  \
    X(loggp)                                                                                    \
    X(dense)                                                                                    \
    X(beff)                                                                                     \
    X(collectives)                                                                              \
    X(models)                                                                                   \
    X(consistency)                                                                              \
    X(matrix)                                                                                   \
    X(rankdist)                                                                                 \
    X(connections)                                                                              \
    X(loaded)                                                                                   \
    X(polling)                                                                                  \
    X(anysource)                                                                                \
    X(sendmodes)                                                                                \
    X(reuse) X(vector)                                                                          \
    /* end of the registry: add a method above this line */

#define NB_DECLARE(name) extern const nb_method nb_method_##name;
#define NB_ENTRY(name) &nb_method_##name,

NB_REGISTRY(NB_DECLARE)

const nb_method *const nb_methods[] = {NB_REGISTRY(NB_ENTRY)};
const size_t nb_method_count = sizeof nb_methods / sizeof nb_methods[0];
