/* declare.h - the types and macros a netbench method declares itself with, in one header: the
 * options it takes (nb_option descriptors, parsed into nb_options and its settings struct),
 * its output tables and summary figures (nb_column: name, unit, direction; nb_table_spec) and
 * the method itself (nb_method, the hooks it may set). A family's catalogue header
 * (methods/<family>_catalogue.h) is written in these; the parser and the help (cli/), the
 * output (core/output.c, core/render.c) and --describe read the same declarations.
 * Declarations only: no function of the parser or the output is declared here.
 */
#ifndef NETBENCH_DECLARE_H
#define NETBENCH_DECLARE_H

#include <stddef.h>

/* Most message sizes of one run (nb_options.sizes). */
#define NB_MAX_SIZES 512

/* A table's declaration: every column with its unit (the suffix of its name: "us", "MBps",
 * "bytes", "ns_per_byte", "percent"; "count" and "ratio" for plain numbers; "" for labels and
 * booleans) and whether a higher or a lower value is better (NB_NEITHER for keys and
 * parameters). A method declares its tables this way; the names make the table, and the help
 * prints units and directions. The output format itself is unchanged: names carry the units. */
typedef enum {
    NB_NEITHER,            /* a key or a parameter: not a figure of merit */
    NB_HIGHER_IS_BETTER,
    NB_LOWER_IS_BETTER,
    NB_EQUAL_IS_BETTER,    /* a figure that should not move either way (a threshold, a count) */
} nb_direction;

typedef struct {
    const char *name;
    const char *unit;
    nb_direction direction;
    int may_be_negative; /* NB_SIGNED: a value below 0 is a result, not a corrupt file */
} nb_column;

typedef struct {
    const char *name;
    const nb_column *columns;
    size_t column_count;
} nb_table_spec;

#define NB_KEY(name, unit) {(name), (unit), NB_NEITHER, 0}
#define NB_HIGHER(name, unit) {(name), (unit), NB_HIGHER_IS_BETTER, 0}
#define NB_LOWER(name, unit) {(name), (unit), NB_LOWER_IS_BETTER, 0}
#define NB_SAME(name, unit) {(name), (unit), NB_EQUAL_IS_BETTER, 0}
/* A key whose value may be below 0 (a difference of penalised fits); every other figure is
 * never negative: a quantity measured below zero is null and unreliable. */
#define NB_SIGNED(name, unit) {(name), (unit), NB_NEITHER, 1}
/* The columns of a timed latency, the same in every table that has them: the iteration count
 * the driver chose, then min/median/max over the repetitions. */
#define NB_LATENCY_COLUMNS                                                                     \
    NB_KEY("iterations", "count"), NB_LOWER("latency_min_us", "us"),                           \
        NB_LOWER("latency_median_us", "us"), NB_LOWER("latency_max_us", "us")
#define NB_TABLE_SPEC(name, columns) {(name), (columns), sizeof(columns) / sizeof((columns)[0])}
/* A method's output table, declared in one place: its columns VAR_columns and its spec VAR_table,
 * written as `name` in the output. */
#define NB_TABLE(var, name, ...)                                                                \
    static const nb_column var##_columns[] = {__VA_ARGS__};                                     \
    static const nb_table_spec var##_table = NB_TABLE_SPEC(name, var##_columns)

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

#endif
