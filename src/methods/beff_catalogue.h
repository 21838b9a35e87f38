/* beff_catalogue.h - what beff.c's methods declare (docs/adding-a-method.md); included once, by
 * beff.c. */
#ifndef NETBENCH_BEFF_CATALOGUE_H
#define NETBENCH_BEFF_CATALOGUE_H

#include "methods.h"

/* L_max from the memory: memory per process / 128, at most 128 MiB (the definition), at least
 * 8 KiB (8 geometric steps above 4 KiB); --lmax takes the same bounds. */
#define BEFF_MEMORY_DIVISOR 128
#define BEFF_LMAX_CAP ((size_t)128 << 20)
#define BEFF_LMAX_FLOOR ((size_t)8 << 10)

/* beff's own options (nb_options.settings). */
typedef struct {
    size_t lmax;                  /* --lmax: b_eff's largest message; 0 = memory per process/128 */
    int random_patterns;          /* --random-patterns: b_eff random ring patterns */
} beff_settings;

/* Defined in beff.c. */
nb_run_function run_beff;
nb_buffer_bytes_hook beff_buffer_bytes;

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

NB_TABLE(patterns, "patterns",
    NB_KEY("pattern", ""),
    NB_KEY("kind", ""),
    NB_KEY("ring_size", "count"),
    NB_KEY("messages_per_rank", "count"),
    NB_HIGHER("bandwidth_avg_L_per_process_MBps", "MBps"),
    NB_HIGHER("bandwidth_lmax_per_process_MBps", "MBps"),
    NB_KEY("best_method", ""),
    NB_LOWER("latency_us", "us"));

NB_TABLE(lengths, "lengths",
    NB_KEY("length_bytes", "bytes"),
    NB_HIGHER("beff_per_process_MBps", "MBps"),
    NB_HIGHER("rings_per_process_MBps", "MBps"),
    NB_HIGHER("random_per_process_MBps", "MBps"),
    NB_HIGHER("sendrecv_per_process_MBps", "MBps"),
    NB_HIGHER("alltoallv_per_process_MBps", "MBps"),
    NB_HIGHER("nonblocking_per_process_MBps", "MBps"));

NB_TABLE(beff_validation, "validation",
    NB_KEY("pattern", ""),
    NB_KEY("method", ""),
    NB_KEY("messages_checked", "count"),
    NB_LOWER("bytes_wrong", "count"));

NB_TABLES(beff, &patterns_table, &lengths_table, &beff_validation_table);

NB_FIGURES(beff,
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
    NB_HIGHER("pingpong_bandwidth_lmax_MBps", "MBps"));

const nb_method nb_method_beff = {
    NB_METHOD(beff, NB_ON_ALL_RANKS, NB_SIZES_NONE),
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
    .settings_size = sizeof(beff_settings),
    .buffer_bytes = beff_buffer_bytes,
};

#endif
