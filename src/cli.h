/* cli.h - command-line options of the netbench subcommands.
 *
 * Options are parsed before MPI_Init: a wrong argument ends the program with one line on stderr
 * and exit status 2 before any MPI traffic. Each subcommand describes itself with an nb_command
 * (name, help text, which options it accepts, its defaults); cli.c does the parsing and prints
 * the help, so all subcommands share one option syntax.
 */
#ifndef NETBENCH_CLI_H
#define NETBENCH_CLI_H

#include <stddef.h>

/* Exit status of a usage error (docs/output-format.md, "Exit status"). */
#define NB_EXIT_USAGE 2

/* Largest message size accepted: MPI counts are int, and buffers are allocated per queue slot. */
#define NB_MAX_MESSAGE_SIZE ((size_t)1 << 30)
#define NB_MAX_SIZES 512
#define NB_MAX_QUEUE_DEPTHS 16
#define NB_MAX_REPETITIONS 1000

/* One bit per option; an nb_command lists the options it accepts. --help is always accepted. */
enum nb_option_id {
    NB_OPT_JSON = 1u << 0,
    NB_OPT_JSON_FILE = 1u << 1,
    NB_OPT_REPETITIONS = 1u << 2,
    NB_OPT_ITERATIONS = 1u << 3,
    NB_OPT_TIME_CAP = 1u << 4,
    NB_OPT_SIZES = 1u << 5,
    NB_OPT_MIN_SIZE = 1u << 6,
    NB_OPT_MAX_SIZE = 1u << 7,
    NB_OPT_QUEUE_DEPTHS = 1u << 8,
    NB_OPT_G_FIT_MIN_SIZE = 1u << 9,
    NB_OPT_G_FIT_MAX_SIZE = 1u << 17,
    NB_OPT_OVERHEAD_SIZE = 1u << 10,
    NB_OPT_TOLERANCE = 1u << 11,
    NB_OPT_COMPUTE_STEPS = 1u << 12,
    NB_OPT_MESSAGES = 1u << 13,
    NB_OPT_LOOKAHEAD = 1u << 14,
    NB_OPT_PFACT = 1u << 15,
    NB_OPT_SIZES_PER_DOUBLING = 1u << 16,
    NB_OPT_VALIDATE = 1u << 18,
    NB_OPT_SEED = 1u << 19,
    NB_OPT_PHASES = 1u << 20,
    NB_OPT_ALGORITHMS = 1u << 21,
    NB_OPT_LMAX = 1u << 22,
    NB_OPT_RANDOM_PATTERNS = 1u << 23,
    NB_OPT_COLLECTIVES = 1u << 24,
    NB_OPT_CALLS = 1u << 25,
    NB_OPT_TIMEOUT = 1u << 26,
};

/* The matrix method's options: bits beyond an int, so macros (an enumerator must fit an int);
 * option masks are unsigned long long. */
#define NB_OPT_SCHEDULE (1ull << 27)
#define NB_OPT_BANDWIDTH_FRACTION (1ull << 28)
#define NB_OPT_LATENCY_FACTOR (1ull << 29)
#define NB_OPT_ROUNDS (1ull << 30)
#define NB_OPT_PROGRESS_EVERY (1ull << 31)
#define NB_OPT_PRINT_SCHEDULE (1ull << 32)

/* --schedule of the matrix method */
typedef enum {
    NB_SCHEDULE_CONCURRENT = 0, /* the pairs of a tournament round at once, round after round */
    NB_SCHEDULE_SEQUENTIAL = 1, /* one pair at a time, the others waiting */
} nb_schedule;

/* Largest --print-schedule N (a dry run: no MPI, N x rounds lines of output). */
#define NB_MAX_SCHEDULE_RANKS 100000

/* Options every subcommand accepts without listing them. */
#define NB_OPT_ALWAYS NB_OPT_TIMEOUT

/* The watchdog: a run that has not ended after this many seconds (a stopped, hung or dead
 * rank leaves its peer waiting forever) ends with one line on stderr and status 1. */
#define NB_DEFAULT_TIMEOUT_S 600
#define NB_MAX_TIMEOUT_S 604800

/* The collectives of the `collectives` method (names as in --collectives). */
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

/* "barrier", "bcast", ..., "allgather" */
const char *nb_collective_name(nb_collective collective);

/* How the default size list is generated from min_size and max_size. */
typedef enum {
    NB_SIZES_POWERS_OF_2,  /* min, the powers of two between, max */
    NB_SIZES_POWERS_OF_4,  /* min, min*4, min*16, ..., max */
    NB_SIZES_GEOMETRIC,    /* 1, then sizes_per_doubling steps per doubling, rounded, unique */
} nb_size_progression;

typedef struct {
    /* output */
    int json_to_stdout;           /* --json */
    const char *json_file;        /* --json-file PATH, or NULL */
    /* repetition control */
    int repetitions;              /* --repetitions */
    long iterations;              /* --iterations: most iterations (messages, rounds) per repetition */
    double time_cap_ms;           /* --time-cap-ms: time one repetition aims at */
    /* message sizes */
    size_t min_size;              /* --min-size */
    size_t max_size;              /* --max-size */
    size_t sizes[NB_MAX_SIZES];   /* the sizes measured, ascending (--sizes or generated) */
    size_t size_count;
    int sizes_per_doubling;       /* --sizes-per-doubling (loggp) */
    /* flood */
    int queue_depths[NB_MAX_QUEUE_DEPTHS]; /* --queue-depths */
    size_t queue_depth_count;
    size_t G_fit_min_size;        /* --G-fit-min-size */
    size_t G_fit_max_size;        /* --G-fit-max-size */
    /* overlap */
    size_t overhead_size;         /* --overhead-size */
    double tolerance;             /* --tolerance */
    int compute_steps;            /* --compute-steps */
    /* loggp */
    int messages;                 /* -n / --messages */
    int lookahead;                /* --lookahead */
    double pfact;                 /* --pfact */
    /* multi-rank methods */
    int validate;                 /* --validate: check received data, time nothing */
    unsigned long long seed;      /* --seed: random patterns */
    int phases;                   /* --phases: phases of the random pairwise algorithm */
    unsigned algorithms;          /* --algorithms: bit (1 << nb_dense_algorithm) per algorithm */
    size_t lmax;                  /* --lmax: b_eff's largest message; 0 = memory per process/128 */
    int random_patterns;          /* --random-patterns: b_eff random ring patterns */
    unsigned collectives;         /* --collectives: bit (1 << nb_collective) per collective */
    int calls;                    /* --calls: individually timed calls per collective and size */
    /* matrix */
    nb_schedule schedule;         /* --schedule */
    double bandwidth_fraction;    /* --bandwidth-fraction: suspect below this share of the best */
    double latency_factor;        /* --latency-factor: suspect above this multiple of the lowest */
    int rounds;                   /* --rounds: tournament rounds to measure; 0 = all (full map) */
    double progress_every_s;      /* --progress-every: seconds between progress lines */
    int print_schedule_ranks;     /* --print-schedule N: print the schedule, no MPI; 0 = off */
    /* watchdog */
    long timeout_s;               /* --timeout: seconds the whole run may take; 0 = no limit */
    /* the command line as given, for the result header */
    int argc;
    char **argv;
} nb_options;

typedef struct {
    const char *name;             /* subcommand name */
    const char *summary;          /* one line for `netbench --help` */
    const char *description;      /* method and paper section, for `netbench NAME --help` */
    unsigned long long accepted_options; /* NB_OPT_* bits */
    int all_ranks;                /* 1: every rank communicates (dense, beff, collectives);
                                     0: ranks 0 and 1 measure, the others wait */
    nb_size_progression progression;
    nb_options defaults;          /* sizes/argv fields unused here */
} nb_command;

/* What the caller should do after parsing. */
typedef enum {
    NB_CLI_RUN,          /* run the measurement with the parsed options */
    NB_CLI_EXIT_OK,      /* help was printed (or not, on ranks other than 0): exit 0 */
    NB_CLI_EXIT_USAGE,   /* a usage error was reported: exit NB_EXIT_USAGE */
} nb_cli_outcome;

/* 1 when this process should print help and usage errors: no launcher rank variable
 * (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID) names a rank other than 0. */
int nb_cli_is_printing_process(void);

/* Top-level arguments before a subcommand is known: --help, --version, or the subcommand name.
 * Returns the index of the matching command in `commands` (>= 0), or -1 with *outcome set. */
int nb_cli_pick_command(int argc, char **argv, const nb_command *const *commands,
                        size_t command_count, nb_cli_outcome *outcome);

/* Parses the options after the subcommand name (argv[2..]) into *options, starting from the
 * command's defaults, and generates the size list. Prints help or one error line (on the
 * printing process only). */
nb_cli_outcome nb_cli_parse(int argc, char **argv, const nb_command *command,
                            nb_options *options);

/* Parses "64", "8K", "4M" (binary: 1K = 1024). Returns 0 or -1 when not a size. */
int nb_parse_size(const char *text, size_t *size);

#endif
