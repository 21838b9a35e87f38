/* cli.h - how a netbench method declares itself, and the generic parser and help printer.
 *
 * A method is one nb_method (methods/<family>_catalogue.h): its name, help text, whether it runs
 * on a pair or on every rank, its options (a table of nb_option descriptors: name, type,
 * default, range, help, where the value goes), its output tables (output.h: each column with
 * unit and direction) and its run function (in methods/<family>.c). The registry
 * (methods/registry.c) lists the methods. cli/ (parse.c, values.c, options.c, help.c,
 * preflight.c) knows no method: it parses the command line against the chosen method's table, checks every
 * value against its range (one line on stderr naming the option, the value and the allowed
 * range, exit status 2, before MPI_Init) and prints the help from the same descriptors.
 * Adding a method: docs/adding-a-method.md.
 */
#ifndef NETBENCH_CLI_H
#define NETBENCH_CLI_H

#include <stddef.h>

#include "output.h"

/* Exit status of a usage error (docs/output-format.md, "Exit status"). */
#define NB_EXIT_USAGE 2

/* Largest message size accepted: MPI counts are int, and buffers are allocated per queue slot. */
#define NB_MAX_MESSAGE_SIZE ((size_t)1 << 30)
#define NB_MAX_SIZES 512
#define NB_MAX_REPETITIONS 1000

/* The watchdog: a run that has not ended after this many seconds (a stopped, hung or dead
 * rank leaves its peer waiting forever) ends with one line on stderr and status 1. */
#define NB_DEFAULT_TIMEOUT_S 600
#define NB_MAX_TIMEOUT_S 604800

/* The options every method shares (parsed into nb_options); a method's own options live in its
 * settings struct, reached through nb_options.settings. */
typedef struct {
    /* output */
    int json_to_stdout;           /* --json */
    int transport_evidence;       /* --transport-evidence */
    const char *json_file;        /* --json-file PATH, or NULL */
    /* repetition control */
    int repetitions;              /* --repetitions */
    long iterations;              /* --iterations: most iterations (messages, rounds) in one
                                     repetition */
    double time_cap_ms;           /* --time-cap-ms: time one repetition aims at */
    /* message sizes */
    size_t min_size;              /* --min-size */
    size_t max_size;              /* --max-size */
    size_t sizes[NB_MAX_SIZES];   /* the sizes measured, ascending (--sizes or generated) */
    size_t size_count;
    int sizes_given;              /* 1: --sizes gave the list */
    /* multi-rank methods */
    int validate;                 /* --validate: check received data, time nothing */
    long seed;                    /* --seed: random patterns, drawn rounds */
    /* watchdog */
    long timeout_s;               /* --timeout: seconds the whole run may take; 0 = no limit */
    /* the method's own options: its settings struct (nb_method.settings_size bytes) */
    const void *settings;
    /* the command line as given, for the result header */
    int argc;
    char **argv;
} nb_options;

/* What an option's value is. Lists are comma separated; every number is checked against
 * [min, max] (lists: every item). */
typedef enum {
    NB_OPTION_INT,        /* int */
    NB_OPTION_LONG,       /* long */
    NB_OPTION_DOUBLE,     /* double */
    NB_OPTION_SIZE,       /* size_t; "64", "8K", "4M" (binary: 1K = 1024) */
    NB_OPTION_SIZE_LIST,  /* size_t[capacity] + size_t count; ascending, duplicates dropped */
    NB_OPTION_INT_LIST,   /* int[capacity] + size_t count; ascending, duplicates dropped */
    NB_OPTION_ENUM,       /* int: the index of one of the names */
    NB_OPTION_ENUM_LIST,  /* unsigned: bit (1 << index) for every name given */
    NB_OPTION_FLAG,       /* int: 1 when given; takes no value */
    NB_OPTION_STRING,     /* const char *: the argument itself (a path) */
} nb_option_type;

/* Where a parsed value is stored: a field of nb_options, or of the method's settings struct. */
typedef enum { NB_IN_OPTIONS, NB_IN_SETTINGS } nb_option_home;

/* The shared options; a method opts into one with NB_USE(id, default). --timeout, --json,
 * --json-file and --transport-evidence apply to every method without being listed. */
typedef enum {
    NB_COMMON_NONE = 0,
    NB_COMMON_SIZES,
    NB_COMMON_MIN_SIZE,
    NB_COMMON_MAX_SIZE,
    NB_COMMON_REPETITIONS,
    NB_COMMON_ITERATIONS,
    NB_COMMON_TIME_CAP,
    NB_COMMON_SEED,
    NB_COMMON_VALIDATE,
    NB_COMMON_TIMEOUT,
    NB_COMMON_JSON,
    NB_COMMON_JSON_FILE,
    NB_COMMON_TRANSPORT_EVIDENCE,
    NB_COMMON_COUNT,
} nb_common_option;

/* An extra check of a parsed value (beyond its range): returns NULL, or why it is refused. */
typedef const char *(*nb_option_check)(const void *value);

typedef struct {
    nb_common_option common;   /* != NB_COMMON_NONE: the shared option, with default_value */
    const char *name;          /* "--queue-depths" */
    char short_name;           /* 'n' for -n; 0: none */
    nb_option_type type;
    nb_option_home home;
    size_t offset;             /* of the value in nb_options or the settings struct */
    size_t count_offset;       /* lists: of the size_t count */
    size_t capacity;           /* lists: most items */
    double min, max;           /* range of the value (lists: of each item) */
    const char *(*name_of)(int index); /* enums: the names, index 0 .. name_count-1 */
    int name_count;
    const char *value_name;    /* in the help: "N", "SIZE", "LIST" */
    const char *default_value; /* as on the command line ("1,2,4", "4M"); NULL: zero/none */
    const char *default_text;  /* help text instead of a default value ("every round") */
    const char *example;       /* a valid value, for error lines */
    const char *help;
    const char *range_note;    /* why the range is what it is, appended to a range error */
    nb_option_check check;
    const char *excludes;      /* another option of the method this one cannot be given with
                                  (the two are one choice: both given is a usage error) */
} nb_option;

/* Field addresses for the descriptors. */
#define NB_OPTION_FIELD(member) .home = NB_IN_OPTIONS, .offset = offsetof(nb_options, member)
#define NB_SETTING(type, member) .home = NB_IN_SETTINGS, .offset = offsetof(type, member)
#define NB_SETTING_LIST(type, member, count_member)                                            \
    .home = NB_IN_SETTINGS, .offset = offsetof(type, member),                                  \
    .count_offset = offsetof(type, count_member),                                              \
    .capacity = sizeof(((type *)0)->member) / sizeof(((type *)0)->member[0])
/* A shared option with this method's default (NULL: none). */
#define NB_USE(id, default_text_) {.common = (id), .default_value = (default_text_)}
/* The size options (--sizes, --min-size, --max-size) with the method's default range. */
#define NB_USE_SIZES(min_size, max_size)                                                       \
    NB_USE(NB_COMMON_SIZES, NULL), NB_USE(NB_COMMON_MIN_SIZE, (min_size)),                     \
        NB_USE(NB_COMMON_MAX_SIZE, (max_size))
/* The repetition options (--repetitions, --iterations, --time-cap-ms) with the method's
 * defaults. */
#define NB_USE_REPEATS(repetitions, iterations, time_cap_ms)                                   \
    NB_USE(NB_COMMON_REPETITIONS, (repetitions)), NB_USE(NB_COMMON_ITERATIONS, (iterations)),  \
        NB_USE(NB_COMMON_TIME_CAP, (time_cap_ms))
#define NB_COUNT_OF(array) (sizeof(array) / sizeof((array)[0]))
/* In a method's initializer, what it declares: its options (an nb_option array), its output
 * tables (a NULL-terminated list) and its summary figures (an nb_column array). */
#define NB_DECLARES(options_array, table_list, figure_array)                                   \
    .options = (options_array), .option_count = NB_COUNT_OF(options_array),                    \
    .tables = (table_list), .figures = (figure_array), .figure_count = NB_COUNT_OF(figure_array)

/* A method's catalogue header (src/methods/NAME_catalogue.h) declares, in this order: its
 * options (an nb_option array), its output tables (NB_TABLE, docs/output-format.md) and their
 * list (NB_TABLES), its summary figures (NB_FIGURES), and the method (NB_METHOD). */

/* A method's output tables, the list its help prints and its run fills: METHOD_tables. */
#define NB_TABLES(method, ...) static const nb_table_spec *const method##_tables[] = {__VA_ARGS__, NULL}
/* A method's summary figures (nb_column, as a table's columns; docs/output-format.md): every
 * key its run may write, METHOD_figures. */
#define NB_FIGURES(method, ...) static const nb_column method##_figures[] = {__VA_ARGS__}

/* The head of a method's initializer: its name, scope and size progression, what it declares
 * (METHOD_options, METHOD_tables, METHOD_figures) and its run function, run_METHOD. The rest
 * (summary, description, settings and hooks) follows as designated initializers. */
#define NB_METHOD(method, method_scope, size_progression)                                      \
    NB_METHOD_SHARING(method, method##_options, method_scope, size_progression)
/* The same for a method that shares another's options. */
#define NB_METHOD_SHARING(method, options_array, method_scope, size_progression)               \
    .name = #method, .scope = (method_scope), .progression = (size_progression),                \
    NB_DECLARES(options_array, method##_tables, method##_figures), .run = run_##method

/* How the default size list is generated from min_size and max_size. */
typedef enum {
    NB_SIZES_POWERS_OF_2,  /* min, the powers of two between, max */
    NB_SIZES_POWERS_OF_4,  /* min, min*4, min*16, ..., max */
    NB_SIZES_NONE,         /* the method takes no sizes (its finish hook may make them) */
} nb_size_progression;

struct nb_context;

/* The functions a method's declaration names (its family's catalogue header declares them). */
/* Runs the measurement (see methods.h). */
typedef void nb_run_function(const struct nb_context *ctx);
/* After parsing and the size list, before MPI_Init: method-specific rules and sizes. Returns 0,
 * or the exit status after nb_usage_error. */
typedef int nb_finish_hook(nb_options *options, void *settings);
/* Before MPI_Init: bytes of message buffers one rank allocates, described in `how` (e.g.
 * "message size 1M x queue depth 64 = ... bytes"), and *hint: what to lower (" or
 * --queue-depths"); 0 when unknown before MPI (the method checks it). Without the hook: send and
 * receive buffers of the largest size. */
typedef unsigned long long nb_buffer_bytes_hook(const nb_options *options, char *how,
                                                size_t length, const char **hint);
/* A dry run without MPI (matrix --print-schedule): returns -1 to go on with the run, or the
 * exit status. */
typedef int nb_without_mpi_hook(const nb_options *options);
/* The name of an enum option's value `index` (nb_option.name_of). */
typedef const char *nb_name_of_function(int index);

typedef enum {
    NB_ON_PAIR,       /* ranks 0 and 1 measure, further ranks wait at a barrier */
    NB_ON_ALL_RANKS,  /* every rank communicates */
} nb_method_scope;

typedef struct nb_method {
    const char *name;             /* subcommand name */
    const char *summary;          /* one line for `netbench --help` */
    const char *description;      /* method and paper section, for `netbench NAME --help` */
    nb_method_scope scope;
    nb_size_progression progression;
    const nb_option *options;     /* this method's options, in the order of its help */
    size_t option_count;
    size_t settings_size;         /* sizeof its settings struct (NB_SETTING targets); 0: none */
    const nb_table_spec *const *tables; /* its output tables, NULL-terminated (for the help) */
    const nb_column *figures;     /* every summary figure it may write (NB_DECLARES) */
    size_t figure_count;
    nb_run_function *run;
    /* Optional hooks, called before MPI_Init (NULL: none). */
    nb_finish_hook *finish;
    nb_buffer_bytes_hook *buffer_bytes;
    nb_without_mpi_hook *without_mpi;
} nb_method;

/* The largest message size of the run: the last of the size list, or --max-size before it is
 * made. */
size_t nb_largest_size(const nb_options *options);

/* A send and a receive buffer of `size`: their bytes, described in `how` ("send and receive
 * buffers of 4M = ... bytes"), and no hint; for the buffer_bytes hooks. */
unsigned long long nb_send_receive_bytes(size_t size, char *how, size_t length, const char **hint);

/* nb_method.buffer_bytes of a method whose buffers depend on the rank count (known only after
 * MPI_Init): 0, unknown; the method checks its allocation itself. */
nb_buffer_bytes_hook nb_buffer_bytes_after_mpi;

/* The registry (methods/registry.c): every method, in the order of `netbench --help`. */
extern const nb_method *const nb_methods[];
extern const size_t nb_method_count;

/* What the caller should do after parsing. */
typedef enum {
    NB_CLI_RUN,          /* run the measurement with the parsed options */
    NB_CLI_EXIT_OK,      /* help was printed (or not, on ranks other than 0): exit 0 */
    NB_CLI_EXIT_USAGE,   /* a usage error was reported: exit NB_EXIT_USAGE */
} nb_cli_outcome;

/* 1 when this process should print help and usage errors: no launcher rank variable
 * (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID) names a rank other than 0. */
int nb_cli_is_printing_process(void);

/* Prints "netbench: <message>" as one line on stderr (printing process only); returns
 * NB_EXIT_USAGE, for the hooks. */
int nb_usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Where the size given to `low_option` is larger than the one given to `high_option`: the usage
 * error "<prefix>--low X is larger than --high Y; make --low <= --high" (NB_EXIT_USAGE); else 0.
 * `prefix` names the method ("connections: ") or is "". */
int nb_size_order_error(const char *prefix, const char *low_option, size_t low,
                        const char *high_option, size_t high);

/* Top-level arguments before a method is known: --help, --version, or the method name.
 * Returns the chosen method, or NULL with *outcome set. */
const nb_method *nb_cli_pick_method(int argc, char **argv, nb_cli_outcome *outcome);

/* Parses the options after the method name (argv[2..]) into *options (and a new settings
 * struct), starting from the defaults, and generates the size list. Prints help or one error
 * line (on the printing process only). */
nb_cli_outcome nb_cli_parse(int argc, char **argv, const nb_method *method, nb_options *options);

/* Parses "64", "8K", "4M" (binary: 1K = 1024). Returns 0 or -1 when not a size. */
int nb_parse_size(const char *text, size_t *size);

/* "4M", "64K" or "100" */
void nb_format_size(size_t size, char *text, size_t length);

/* Sorts ascending and drops duplicates; returns the new count. */
size_t nb_sort_unique_sizes(size_t *sizes, size_t count);

/* A launcher variable holding a positive count (OMPI_COMM_WORLD_LOCAL_SIZE, ...), or 0. */
unsigned long long nb_launcher_count(const char *name);

#endif
