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

#include "declare.h"

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
