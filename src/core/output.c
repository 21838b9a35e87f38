/* output.c - the result builder: what a method records (core/render.c renders it,
 * docs/output-format.md). No MPI in here. */
#include "output.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "result_fields.h"

/* ------------------------------------------------------------------------------------------ */
/* Memory                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static void out_of_memory(void)
{
    fprintf(stderr, "netbench: out of memory while building the result\n");
    exit(1);
}

static void *checked_realloc(void *pointer, size_t count, size_t element)
{
    if (element != 0 && count > SIZE_MAX / element)
        out_of_memory();
    size_t bytes = count * element;
    void *grown = realloc(pointer, bytes > 0 ? bytes : 1);
    if (grown == NULL)
        out_of_memory();
    return grown;
}

static char *copy_text(const char *text)
{
    char *copy = strdup(text ? text : "");
    if (copy == NULL)
        out_of_memory();
    return copy;
}

/* A copy fit for one output line: newlines and tabs become spaces. */
static char *copy_line(const char *text)
{
    char *copy = copy_text(text);
    for (char *p = copy; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    return copy;
}

static void free_value(value *v)
{
    free(v->text);
    free(v->list);
    v->text = NULL;
    v->list = NULL;
}

static void free_keyed_list(keyed_list *list)
{
    for (size_t i = 0; i < list->count; i++) {
        free(list->items[i].key);
        free_value(&list->items[i].value);
    }
    free(list->items);
}

nb_result *nb_result_new(const char *method)
{
    nb_result *result = calloc(1, sizeof *result);
    if (result == NULL)
        out_of_memory();
    result->method = copy_text(method);
    result->mpi_library = copy_text("");
    return result;
}

void nb_result_free(nb_result *result)
{
    if (result == NULL)
        return;
    free(result->method);
    for (int i = 0; i < result->argc; i++)
        free(result->argv[i]);
    free(result->argv);
    free(result->mpi_library);
    for (size_t i = 0; i < result->rank_count; i++) {
        free(result->ranks[i].host);
        free(result->ranks[i].cpus);
        free(result->ranks[i].cpu_others);
    }
    free(result->ranks);
    free_keyed_list(&result->parameters);
    free_keyed_list(&result->summary);
    for (size_t t = 0; t < result->table_count; t++) {
        nb_table *table = result->tables[t];
        for (size_t c = 0; c < table->column_count; c++)
            free(table->columns[c]);
        for (size_t i = 0; i < table->row_count * table->column_count; i++)
            free_value(&table->cells[i]);
        free(table->columns);
        free(table->cells);
        free(table->name);
        free(table);
    }
    free(result->tables);
    for (size_t i = 0; i < result->warning_count; i++)
        free(result->warnings[i]);
    free(result->warnings);
    for (size_t i = 0; i < result->unreliable_count; i++) {
        free(result->unreliable[i].quantity);
        free(result->unreliable[i].reason);
    }
    free(result->unreliable);
    free(result);
}

/* ------------------------------------------------------------------------------------------ */
/* Building                                                                                     */
/* ------------------------------------------------------------------------------------------ */

void nb_result_set_command_line(nb_result *result, int argc, char **argv)
{
    for (int i = 0; i < result->argc; i++)
        free(result->argv[i]);
    result->argv = checked_realloc(result->argv, (size_t)argc, sizeof *result->argv);
    for (int i = 0; i < argc; i++)
        result->argv[i] = copy_line(argv[i]);
    result->argc = argc;
}

void nb_result_set_start_time(nb_result *result, time_t start)
{
    result->start = start;
}

void nb_result_set_mpi(nb_result *result, const char *library_version, int version,
                       int subversion)
{
    free(result->mpi_library);
    /* Kept whole (JSON escapes its newlines); trailing whitespace dropped. */
    result->mpi_library = copy_text(library_version);
    size_t length = strlen(result->mpi_library);
    while (length > 0 && (result->mpi_library[length - 1] == '\n' ||
                          result->mpi_library[length - 1] == ' ' ||
                          result->mpi_library[length - 1] == '\t' ||
                          result->mpi_library[length - 1] == '\r'))
        result->mpi_library[--length] = '\0';
    result->mpi_version = version;
    result->mpi_subversion = subversion;
}

void nb_result_add_rank(nb_result *result, int rank, const char *host, const int *cpus_bound,
                        size_t cpu_count, int cpu_at_start, int cpu_at_end,
                        double cpu_wait_fraction, const char *cpu_others)
{
    result->ranks = checked_realloc(result->ranks, result->rank_count + 1, sizeof *result->ranks);
    rank_entry *entry = &result->ranks[result->rank_count++];
    entry->rank = rank;
    entry->host = copy_line(host);
    entry->cpus = checked_realloc(NULL, cpu_count, sizeof *entry->cpus);
    if (cpu_count > 0)
        memcpy(entry->cpus, cpus_bound, cpu_count * sizeof *entry->cpus);
    entry->cpu_count = cpu_count;
    entry->cpu_at_start = cpu_at_start;
    entry->cpu_at_end = cpu_at_end;
    entry->cpu_wait_fraction = cpu_wait_fraction >= 0.0 ? cpu_wait_fraction : NAN;
    entry->cpu_others = cpu_others != NULL && cpu_others[0] ? copy_line(cpu_others) : NULL;
}

static value *add_keyed(keyed_list *list, const char *key)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(list->items[i].key, key) == 0) {
            free_value(&list->items[i].value);
            return &list->items[i].value;
        }
    if (list->count == list->capacity) {
        list->capacity = list->capacity ? 2 * list->capacity : 16;
        list->items = checked_realloc(list->items, list->capacity, sizeof *list->items);
    }
    keyed_value *item = &list->items[list->count++];
    item->key = copy_text(key);
    memset(&item->value, 0, sizeof item->value);
    return &item->value;
}

static void set_int(value *v, long long integer)
{
    v->kind = VALUE_INT;
    v->integer = integer;
}

static void set_real(value *v, double real)
{
    if (isfinite(real)) {
        v->kind = VALUE_REAL;
        v->real = real;
    } else {
        v->kind = VALUE_NULL;
    }
}

void nb_param_int(nb_result *result, const char *key, long long v)
{
    set_int(add_keyed(&result->parameters, key), v);
}

void nb_param_real(nb_result *result, const char *key, double v)
{
    set_real(add_keyed(&result->parameters, key), v);
}

void nb_param_int_list(nb_result *result, const char *key, const long long *values, size_t count)
{
    value *slot = add_keyed(&result->parameters, key);
    slot->kind = VALUE_INT_LIST;
    slot->list = checked_realloc(NULL, count, sizeof *slot->list);
    if (count > 0)
        memcpy(slot->list, values, count * sizeof *slot->list);
    slot->list_count = count;
}

void nb_param_text(nb_result *result, const char *key, const char *v)
{
    value *slot = add_keyed(&result->parameters, key);
    slot->kind = VALUE_TEXT;
    slot->text = copy_text(v);
    for (char *p = slot->text; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            *p = '_';
}

void nb_result_declare_summary(nb_result *result, const nb_column *figures, size_t count)
{
    result->figures = figures;
    result->figure_count = count;
}

/* The summary slot of a declared figure; an undeclared key aborts (a programming error). */
static value *summary_slot(nb_result *result, const char *key)
{
    for (size_t i = 0; i < result->figure_count; i++)
        if (strcmp(result->figures[i].name, key) == 0)
            return add_keyed(&result->summary, key);
    fprintf(stderr, "netbench: internal error: summary figure '%s' of method %s is not "
                    "declared (add it to the method's figures)\n", key, result->method);
    abort();
}

void nb_summary_int(nb_result *result, const char *key, long long v)
{
    set_int(summary_slot(result, key), v);
}

void nb_summary_real(nb_result *result, const char *key, double v)
{
    set_real(summary_slot(result, key), v);
}

void nb_summary_null(nb_result *result, const char *key)
{
    summary_slot(result, key)->kind = VALUE_NULL;
}

nb_table *nb_result_add_table(nb_result *result, const char *name, const char *const *columns,
                              size_t column_count)
{
    nb_table *table = calloc(1, sizeof *table);
    if (table == NULL)
        out_of_memory();
    table->name = copy_text(name);
    table->columns = checked_realloc(NULL, column_count, sizeof *table->columns);
    for (size_t c = 0; c < column_count; c++)
        table->columns[c] = copy_text(columns[c]);
    table->column_count = column_count;
    result->tables = checked_realloc(result->tables, result->table_count + 1,
                                     sizeof *result->tables);
    result->tables[result->table_count++] = table;
    return table;
}

nb_table *nb_result_add_declared_table(nb_result *result, const nb_table_spec *spec)
{
    const char *names[256];
    size_t count = spec->column_count < 256 ? spec->column_count : 256;
    for (size_t c = 0; c < count; c++)
        names[c] = spec->columns[c].name;
    return nb_result_add_table(result, spec->name, names, count);
}

void nb_table_add_row(nb_table *table)
{
    if (table->row_count == table->row_capacity) {
        table->row_capacity = table->row_capacity ? 2 * table->row_capacity : 32;
        table->cells = checked_realloc(table->cells, table->row_capacity * table->column_count,
                                       sizeof *table->cells);
    }
    value *row = &table->cells[table->row_count * table->column_count];
    memset(row, 0, table->column_count * sizeof *row);
    table->row_count++;
}

/* The cell of `column` in the last row. */
static value *cell(nb_table *table, const char *column)
{
    if (table->row_count == 0) {
        fprintf(stderr, "netbench: internal error: table %s: cell set before a row was added\n",
                table->name);
        abort();
    }
    for (size_t c = 0; c < table->column_count; c++)
        if (strcmp(table->columns[c], column) == 0) {
            value *v = &table->cells[(table->row_count - 1) * table->column_count + c];
            free_value(v);
            return v;
        }
    fprintf(stderr, "netbench: internal error: table %s has no column %s\n", table->name, column);
    abort();
}

void nb_cell_int(nb_table *table, const char *column, long long v)
{
    set_int(cell(table, column), v);
}

void nb_cell_real(nb_table *table, const char *column, double v)
{
    set_real(cell(table, column), v);
}

void nb_cell_text(nb_table *table, const char *column, const char *v)
{
    value *slot = cell(table, column);
    slot->kind = VALUE_TEXT;
    slot->text = copy_text(v);
    for (char *p = slot->text; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            *p = '_';
}

void nb_cell_bool(nb_table *table, const char *column, int v)
{
    value *slot = cell(table, column);
    slot->kind = VALUE_BOOL;
    slot->integer = v != 0;
}

static char *format_line(const char *format, va_list args)
{
    char buffer[2048];
    vsnprintf(buffer, sizeof buffer, format, args);
    return copy_line(buffer);
}

void nb_warning(nb_result *result, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char *line = format_line(format, args);
    va_end(args);
    for (size_t i = 0; i < result->warning_count; i++)
        if (strcmp(result->warnings[i], line) == 0) {
            free(line);
            return;
        }
    result->warnings = checked_realloc(result->warnings, result->warning_count + 1,
                                       sizeof *result->warnings);
    result->warnings[result->warning_count++] = line;
}

void nb_unreliable(nb_result *result, const char *quantity, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    char *reason = format_line(format, args);
    va_end(args);
    result->unreliable = checked_realloc(result->unreliable, result->unreliable_count + 1,
                                         sizeof *result->unreliable);
    unreliable_entry *entry = &result->unreliable[result->unreliable_count++];
    entry->quantity = copy_line(quantity);
    /* The human format separates quantity and reason by ": ". */
    for (char *p = entry->quantity; *p; p++)
        if (*p == ' ' || *p == ':')
            *p = '_';
    entry->reason = reason;
}
