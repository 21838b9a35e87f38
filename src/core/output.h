/* output.h - the result of one netbench run, rendered as the human format or as JSON.
 *
 * A method fills one nb_result (header, parameters, tables, summary, warnings, unreliable
 * entries); nb_render_human and nb_render_json turn the same data into the two renderings of
 * docs/output-format.md, so they cannot disagree. Numbers are formatted by one function for
 * both. A real number that is NaN or infinite is stored as null. No MPI in here.
 */
#ifndef NETBENCH_OUTPUT_H
#define NETBENCH_OUTPUT_H

#include <stddef.h>
#include <stdio.h>
#include <time.h>

typedef struct nb_result nb_result;
typedef struct nb_table nb_table;

/* Out of memory is a runtime failure: these exit with status 1 rather than return NULL. */
nb_result *nb_result_new(const char *method);
void nb_result_free(nb_result *result);

/* Header */
void nb_result_set_command_line(nb_result *result, int argc, char **argv);
void nb_result_set_start_time(nb_result *result, time_t start);
void nb_result_set_mpi(nb_result *result, const char *library_version, int version,
                       int subversion);
void nb_result_add_rank(nb_result *result, int rank, const char *host, const int *cpus_bound,
                        size_t cpu_count, int cpu_at_start, int cpu_at_end,
                        double cpu_wait_fraction, const char *cpu_others);

/* Parameters and summary: keys in insertion order. */
void nb_param_int(nb_result *result, const char *key, long long value);
void nb_param_real(nb_result *result, const char *key, double value);
void nb_param_int_list(nb_result *result, const char *key, const long long *values, size_t count);
void nb_param_text(nb_result *result, const char *key, const char *value); /* no whitespace */
void nb_summary_int(nb_result *result, const char *key, long long value);
void nb_summary_real(nb_result *result, const char *key, double value); /* NaN -> null */
void nb_summary_null(nb_result *result, const char *key);

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

/* Summary figures are declared like columns (nb_column: name, unit, direction; a count may name
 * what it counts as its unit: "pairs", "ranges"). A method lists every key it may write
 * (nb_method.figures); nb_summary_* with a key it did not declare is a programming error and
 * aborts, so the declaration, `--describe` and the output cannot disagree. */
void nb_result_declare_summary(nb_result *result, const nb_column *figures, size_t count);

/* Adds an empty table with the declared columns. */
nb_table *nb_result_add_declared_table(nb_result *result, const nb_table_spec *spec);

/* Tables: named columns; nb_table_add_row appends a row of nulls that nb_cell_* fill by column
 * name (an unknown column name is a programming error and aborts). */
nb_table *nb_result_add_table(nb_result *result, const char *name, const char *const *columns,
                              size_t column_count);
void nb_table_add_row(nb_table *table);
void nb_cell_int(nb_table *table, const char *column, long long value);
void nb_cell_real(nb_table *table, const char *column, double value); /* NaN -> null */
void nb_cell_text(nb_table *table, const char *column, const char *value); /* no whitespace */
void nb_cell_bool(nb_table *table, const char *column, int value);

/* Warnings and unreliable entries; one line each (newlines are replaced by spaces). */
void nb_warning(nb_result *result, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
void nb_unreliable(nb_result *result, const char *quantity, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

/* Renderings; return 0, or -1 on an output error. */
int nb_render_human(const nb_result *result, FILE *out);
int nb_render_json(const nb_result *result, FILE *out);
/* JSON to PATH via a temporary file in the same directory and rename(). */
int nb_write_json_file(const nb_result *result, const char *path);

/* A file written whole or not at all: nb_create_atomically opens a temporary file beside
 * `path` (NULL and a line on stderr if it cannot); nb_finish_atomically flushes it to disk and
 * renames it over `path`, or removes it and says why. 0 or -1. */
FILE *nb_create_atomically(const char *path, char **temporary);
int nb_finish_atomically(FILE *out, const char *path, char *temporary);

/* `text` as a JSON string, quoted and escaped. */
void nb_json_string(const char *text, FILE *out);

/* The number format of both renderings (exposed for the tests of other modules). */
void nb_format_real(double value, char *text, size_t length);
/* `value` in that format on `out`; `missing` where it is not finite. */
void nb_write_real(FILE *out, double value, const char *missing);

#endif
