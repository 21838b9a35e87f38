/* catalogue.h - what the catalogue (catalogue.c) and the method files share: each method's
 * settings struct (the targets of its own options), the output tables the catalogue declares
 * and the run code fills, and the run functions and hooks the catalogue's nb_method entries
 * name. A method's code stays in its methods_*.c file; its declarations (options, tables,
 * summary figures, help text) live in catalogue.c, so one file holds every metric fact of
 * netbench (docs/adding-a-method.md). */
#ifndef NETBENCH_CATALOGUE_H
#define NETBENCH_CATALOGUE_H

#include "paired.h" /* methods.h, and NB_PAIRED_MAX_VARIANTS */

/* ------------------------------------------------------------------------------------------ */
/* Settings: each method's own options (nb_options.settings)                                  */
/* ------------------------------------------------------------------------------------------ */

/* The capacities of the settings' lists and the bounds of their options (the catalogue's ranges
 * and the run code's arrays use the same numbers). */
#define FLOOD_MAX_QUEUE_DEPTHS 16
#define MODELS_MAX_RANGES 64
#define MODELS_LIBRARY_LENGTH 256
#define REUSE_MAX_PERCENTS 32
#define VECTOR_MAX_SEGMENT_COUNTS (NB_PAIRED_MAX_VARIANTS - 1)
#define CONS_RULE_COUNT 5

/* The default sizes of reuse and vector (their --sizes default and their finish hooks). */
#define REUSE_DEFAULT_SIZES "8,64,512,4K,16K,64K,256K,1M"
#define VECTOR_DEFAULT_SIZES "64,1K,16K,64K,256K,1M"

/* L_max from the memory: memory per process / 128, at most 128 MiB (the definition), at least
 * 8 KiB (8 geometric steps above 4 KiB); --lmax takes the same bounds. */
#define BEFF_MEMORY_DIVISOR 128
#define BEFF_LMAX_CAP ((size_t)128 << 20)
#define BEFF_LMAX_FLOOR ((size_t)8 << 10)

/* The collectives of the method (names as in --collectives). */
typedef enum {
    NB_COLL_BARRIER,
    NB_COLL_BCAST,
    NB_COLL_REDUCE,
    NB_COLL_ALLREDUCE,
    NB_COLL_ALLTOALL,
    NB_COLL_ALLTOALLV,
    NB_COLL_GATHER,
    NB_COLL_SCATTER,
    NB_COLL_ALLGATHER,
    NB_COLL_COUNT,
} nb_collective;

/* One protocol range of a loggp result (its `ranges` table), as models reads it. */
typedef struct {
    double first_size, last_size;
    double g_us, G_us_per_byte, o_s_us, o_r_us;
} loggp_range;

/* flood's own options (nb_options.settings). */
typedef struct {
    int queue_depths[FLOOD_MAX_QUEUE_DEPTHS]; /* --queue-depths, ascending */
    size_t queue_depth_count;
    size_t G_fit_min_size;        /* --G-fit-min-size */
    size_t G_fit_max_size;        /* --G-fit-max-size */
} flood_settings;

/* overlap's own options (nb_options.settings). */
typedef struct {
    size_t overhead_size;         /* --overhead-size */
    double tolerance;             /* --tolerance */
    int compute_steps;            /* --compute-steps */
} overlap_settings;

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

/* dense's own options (nb_options.settings). */
typedef struct {
    unsigned algorithms;          /* --algorithms: bit (1 << nb_dense_algorithm) per algorithm */
    int phases;                   /* --phases: phases of the random pairwise algorithm */
    long min_iterations;          /* --min-iterations: fewest exchanges in one timed loop */
} dense_settings;

/* beff's own options (nb_options.settings). */
typedef struct {
    size_t lmax;                  /* --lmax: b_eff's largest message; 0 = memory per process/128 */
    int random_patterns;          /* --random-patterns: b_eff random ring patterns */
} beff_settings;

/* collectives' own options (nb_options.settings). */
typedef struct {
    unsigned collectives;         /* --collectives: bit (1 << nb_collective) per collective */
    int calls;                    /* --calls: individually timed calls per collective and size */
} collectives_settings;

typedef struct {
    const char *loggp_json;           /* --loggp-json */
    int calls;                        /* --calls */
    /* filled by models_finish from the file */
    double L_us;
    loggp_range ranges[MODELS_MAX_RANGES];
    size_t range_count;
    char file_library[MODELS_LIBRARY_LENGTH];   /* first line of its mpi.library */
    int nulls_taken_as_zero;          /* unresolved parameters of the file read as 0 */
} models_settings;

typedef struct {
    unsigned rules;            /* --rules: bit per rule */
    int calls;                 /* --calls */
    double margin;             /* --margin: a fraction of the right side beyond the noise */
} consistency_settings;

/* matrix's own options (nb_options.settings). ClusterKit's defaults (NVIDIA's fabric checker):
 * a healthy link of a non-blocking fabric delivers within a few per cent of the best one, and a
 * bad one (a lane down, a degraded cable, a congested or mis-routed path) loses far more, so
 * 93 % of the best separates them; latency is flagged only well above the best (2.1 x):
 * small-message latency varies with placement (switch hops) by tens of per cent, never by 2 x. */
typedef struct {
    int schedule;                 /* --schedule: SCHEDULE_* */
    double bandwidth_fraction;    /* --bandwidth-fraction: suspect below this share of the best */
    double latency_factor;        /* --latency-factor: suspect above this multiple of the lowest */
    int rounds;                   /* --rounds: tournament rounds to measure; 0 = all (full map) */
    double progress_every_s;      /* --progress-every: seconds between progress lines */
    int print_schedule_ranks;     /* --print-schedule N: print the schedule, no MPI; 0 = off */
} matrix_settings;

/* rankdist's own options. */
typedef struct {
    double tolerance;             /* --tolerance: flagged below (1 - tolerance) x the best */
} rankdist_settings;

typedef struct {
    size_t small_size;            /* --small-size */
    size_t large_size;            /* --large-size */
    int setup_round_trips;        /* --setup-round-trips: per size and new peer */
} connections_settings;

typedef struct {
    size_t latency_size;          /* --latency-size */
    size_t bandwidth_size;        /* --bandwidth-size: the streams of (a), the bandwidth of (b) */
    size_t rate_size;             /* --rate-size */
    int window;                   /* --window */
} loaded_settings;

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

/* ------------------------------------------------------------------------------------------ */
/* Between the catalogue and the method files                                                  */
/* ------------------------------------------------------------------------------------------ */

/* The output tables catalogue.c declares and the run code fills (nb_result_add_declared_table),
 * in the order of the registry. */
extern const nb_table_spec pingpong_table, bibw_table, bothway_table, flood_table, flood_best_table,
    sweep_table_spec, potential_table_spec, potential_sweep_table_spec, prtt_table, ranges_table,
    phases_table, algorithms_table, dense_validation_table, patterns_table, lengths_table,
    beff_validation_table, collectives_table, collectives_validation_table, models_table,
    loggp_ranges_table, loggp_quick_table, rules_table, pairs_table, bad_nodes_table,
    distances_table, connections_table, loaded_latency_table, aggregate_table, polling_table,
    polling_cost_table, anysource_table, anysource_cost_table, sendmodes_table,
    sendmodes_ratio_table, reuse_table, contiguous_table, vector_table;

/* The run functions and hooks the catalogue's nb_method entries name (cli.h says what each
 * hook does); each is defined in its method's file. */
nb_run_function run_pingpong, run_bibw, run_bothway, run_flood, run_overlap, run_loggp, run_dense,
    run_beff, run_collectives, run_models, run_consistency, run_matrix, run_rankdist,
    run_connections, run_loaded, run_polling, run_anysource, run_sendmodes, run_reuse, run_vector;
nb_finish_hook loggp_finish, models_finish, consistency_finish, connections_finish, loaded_finish,
    sendmodes_finish, reuse_finish, vector_finish;
nb_buffer_bytes_hook flood_buffer_bytes, overlap_buffer_bytes, beff_buffer_bytes,
    loaded_buffer_bytes, sendmodes_buffer_bytes, reuse_buffer_bytes, vector_buffer_bytes;
nb_without_mpi_hook matrix_without_mpi;
/* The names of enum options (nb_option.name_of). */
nb_name_of_function dense_algorithm_name, collective_name_of, consistency_rule_name_of,
    matrix_schedule_name;

#endif
