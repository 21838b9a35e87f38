/* loggp_catalogue.h - what loggp.c's methods declare (docs/adding-a-method.md); included once, by
 * loggp.c. */
#ifndef NETBENCH_LOGGP_CATALOGUE_H
#define NETBENCH_LOGGP_CATALOGUE_H

#include "methods.h"

/* loggp's own options (nb_options.settings). */
typedef struct {
    int sizes_per_doubling;       /* --sizes-per-doubling */
    int messages;                 /* -n / --messages */
    int lookahead;                /* --lookahead */
    double pfact;                 /* --pfact */
    int passes;                   /* --passes */
    int max_passes;               /* --max-passes */
    int rechecks;                 /* --rechecks */
    double state_wait_s;          /* --state-wait-s */
} loggp_settings;

/* Defined in loggp.c. */
nb_run_function run_loggp;
nb_finish_hook loggp_finish;

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

NB_TABLE(prtt, "prtt",
    NB_KEY("size_bytes", "bytes"),
    NB_LOWER("prtt_1_0_us", "us"),
    NB_LOWER("prtt_n_0_us", "us"),
    NB_LOWER("prtt_n_dG_us", "us"),
    NB_KEY("d_G_us", "us"),
    NB_LOWER("G_all_us", "us"),
    NB_LOWER("o_s_us", "us"),
    NB_LOWER("o_r_us", "us"),
    NB_KEY("range", "count"),
    NB_KEY("G_all_spike", ""));

NB_TABLE(ranges, "ranges",
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
    NB_SIGNED("split_bic_gain", "ratio"));

NB_TABLES(loggp, &prtt_table, &ranges_table);

NB_FIGURES(loggp,
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
    NB_KEY("state_waits", "count"));

const nb_method nb_method_loggp = {
    NB_METHOD(loggp, NB_ON_PAIR, NB_SIZES_NONE),
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
    .settings_size = sizeof(loggp_settings),
    .finish = loggp_finish,
};

#endif
