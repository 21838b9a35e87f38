/* result_fields.h - the fields of a result, shared by its builder (core/output.c) and its
 * renderings (core/render.c) alone; every other file sees only output.h. */
#ifndef NETBENCH_RESULT_FIELDS_H
#define NETBENCH_RESULT_FIELDS_H

#include <stddef.h>
#include <time.h>

#include "output.h"

typedef enum { VALUE_NULL, VALUE_INT, VALUE_REAL, VALUE_BOOL, VALUE_TEXT, VALUE_INT_LIST } value_kind;

typedef struct {
    value_kind kind;
    long long integer;      /* VALUE_INT, VALUE_BOOL */
    double real;            /* VALUE_REAL */
    char *text;             /* VALUE_TEXT */
    long long *list;        /* VALUE_INT_LIST */
    size_t list_count;
} value;

typedef struct {
    char *key;
    value value;
} keyed_value;

typedef struct {
    keyed_value *items;
    size_t count;
    size_t capacity;
} keyed_list;

struct nb_table {
    char *name;
    char **columns;
    size_t column_count;
    value *cells;           /* row-major, row_count * column_count */
    size_t row_count;
    size_t row_capacity;
};

typedef struct {
    int rank;
    char *host;
    int *cpus;
    size_t cpu_count;
    int cpu_at_start;
    int cpu_at_end;
    double cpu_wait_fraction; /* NAN: unknown */
    char *cpu_others;         /* NULL: none named */
} rank_entry;

typedef struct {
    char *quantity;
    char *reason;
} unreliable_entry;

struct nb_result {
    char *method;
    char **argv;
    int argc;
    time_t start;
    char *mpi_library;
    int mpi_version;
    int mpi_subversion;
    rank_entry *ranks;
    size_t rank_count;
    keyed_list parameters;
    keyed_list summary;
    const nb_column *figures; /* the method's declared summary figures */
    size_t figure_count;
    nb_table **tables;
    size_t table_count;
    char **warnings;
    size_t warning_count;
    unreliable_entry *unreliable;
    size_t unreliable_count;
};

#endif
