/* buffers_catalogue.h - what buffers.c's methods declare (docs/adding-a-method.md); included once, by
 * buffers.c. */
#ifndef NETBENCH_BUFFERS_CATALOGUE_H
#define NETBENCH_BUFFERS_CATALOGUE_H

#include "paired.h"

#define REUSE_MAX_PERCENTS 32
#define VECTOR_MAX_SEGMENT_COUNTS (NB_PAIRED_MAX_VARIANTS - 1)
/* The default sizes of reuse and vector (their --sizes default and their finish hooks). */
#define REUSE_DEFAULT_SIZES "8,64,512,4K,16K,64K,256K,1M"
#define VECTOR_DEFAULT_SIZES "64,1K,16K,64K,256K,1M"

typedef struct {
    int percents[REUSE_MAX_PERCENTS];   /* --reuse-percentages, ascending */
    size_t percent_count;
    long buffers;                       /* --buffers: most distinct fresh buffers per size */
    size_t memory_cap;                  /* --memory-cap: bytes of fresh buffers per rank */
    size_t summary_size;                /* --summary-size */
} reuse_settings;

typedef struct {
    int segments[VECTOR_MAX_SEGMENT_COUNTS];  /* --segments, ascending */
    size_t segment_count;
    int stride_factor;                        /* --stride-factor */
    size_t summary_size;                      /* --summary-size */
} vector_settings;

/* reuse and vector (buffers.c) share the columns after their keys: the latency, the
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

/* Defined in buffers.c. */
nb_run_function run_reuse, run_vector;
nb_finish_hook reuse_finish, vector_finish;
nb_buffer_bytes_hook reuse_buffer_bytes, vector_buffer_bytes;

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

NB_TABLE(reuse, "reuse",
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("reuse_percent", "percent"),
    NB_KEY("buffers", "count"),
    NB_BUFFERS_COST_COLUMNS);

NB_TABLES(reuse, &reuse_table);

NB_FIGURES(reuse,
    NB_KEY("latency_reuse100_small_size_bytes", "bytes"),
    NB_LOWER("latency_reuse100_small_us", "us"),
    NB_KEY("cost_size_bytes", "bytes"),
    NB_KEY("cost_reuse_percent", "percent"),
    NB_LOWER("cost_extra_us", "us"),
    NB_LOWER("cost_ratio", "ratio"),
    NB_KEY("cost_noise_us", "us"),
    NB_LOWER("cost_extra_max_us", "us"),
    NB_KEY("cost_extra_max_size_bytes", "bytes"));

const nb_method nb_method_reuse = {
    NB_METHOD(reuse, NB_ON_PAIR, NB_SIZES_NONE),
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
    .settings_size = sizeof(reuse_settings),
    .finish = reuse_finish,
    .buffer_bytes = reuse_buffer_bytes,
};

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

NB_TABLE(contiguous, "contiguous",
    NB_KEY("size_bytes", "bytes"),
    NB_LATENCY_COLUMNS,
    NB_HIGHER("bandwidth_median_MBps", "MBps"));

NB_TABLE(vector, "vector",
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("segments", "count"),
    NB_KEY("segment_bytes", "bytes"),
    NB_KEY("stride_bytes", "bytes"),
    NB_BUFFERS_COST_COLUMNS);

NB_TABLES(vector, &contiguous_table, &vector_table);

NB_FIGURES(vector,
    NB_KEY("cost_size_bytes", "bytes"),
    NB_KEY("cost_segments", "count"),
    NB_LOWER("cost_extra_us", "us"),
    NB_LOWER("cost_ratio", "ratio"),
    NB_KEY("cost_noise_us", "us"),
    NB_LOWER("cost_extra_max_us", "us"),
    NB_KEY("cost_extra_max_size_bytes", "bytes"));

const nb_method nb_method_vector = {
    NB_METHOD(vector, NB_ON_PAIR, NB_SIZES_NONE),
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
    .settings_size = sizeof(vector_settings),
    .finish = vector_finish,
    .buffer_bytes = vector_buffer_bytes,
};

#endif
