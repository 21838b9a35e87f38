/* output.c - result builder and its two renderings (docs/output-format.md). No MPI in here. */
#include "output.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "version.h"

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

/* ------------------------------------------------------------------------------------------ */
/* Formatting shared by both renderings                                                         */
/* ------------------------------------------------------------------------------------------ */

/* Three decimals from 1 up, at least four significant digits below 1; trailing zeros trimmed
 * (one decimal kept so a real stays recognisably real). Valid as JSON and for awk. */
void nb_format_real(double v, char *text, size_t length)
{
    if (!isfinite(v)) {
        snprintf(text, length, "null");
        return;
    }
    int decimals = 3;
    double magnitude = fabs(v);
    if (magnitude > 0.0 && magnitude < 1.0) {
        decimals = 3 - (int)floor(log10(magnitude));
        if (decimals > 12)
            decimals = 12;
    }
    snprintf(text, length, "%.*f", decimals, v);
    char *dot = strchr(text, '.');
    if (dot != NULL) {
        char *end = text + strlen(text) - 1;
        while (end > dot + 1 && *end == '0')
            *end-- = '\0';
    }
    if (strcmp(text, "-0.0") == 0)
        snprintf(text, length, "0.0");
}

static void format_int_list(const long long *list, size_t count, FILE *out, const char *separator)
{
    for (size_t i = 0; i < count; i++)
        fprintf(out, "%s%lld", i ? separator : "", list[i]);
}

/* "0,1,4-7" from an ascending list. */
static void format_cpu_ranges(const int *cpus, size_t count, FILE *out)
{
    if (count == 0) {
        fputs("-", out);
        return;
    }
    size_t i = 0;
    int first_item = 1;
    while (i < count) {
        size_t j = i;
        while (j + 1 < count && cpus[j + 1] == cpus[j] + 1)
            j++;
        fprintf(out, first_item ? "" : ",");
        if (j == i)
            fprintf(out, "%d", cpus[i]);
        else
            fprintf(out, "%d-%d", cpus[i], cpus[j]);
        first_item = 0;
        i = j + 1;
    }
}

static void format_utc(time_t t, char *text, size_t length)
{
    struct tm broken;
    gmtime_r(&t, &broken);
    strftime(text, length, "%Y-%m-%dT%H:%M:%SZ", &broken);
}

/* ------------------------------------------------------------------------------------------ */
/* Values, in both formats                                                                      */
/* ------------------------------------------------------------------------------------------ */

void nb_json_string(const char *text, FILE *out)
{
    /* The characters JSON escapes with a backslash and a letter, and those letters. */
    static const char special[] = "\"\\\n\r\t\b\f", letter[] = "\"\\nrtbf";
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        const char *at = strchr(special, *p);
        if (at != NULL) {
            fputc('\\', out);
            fputc(letter[at - special], out);
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(out, "\\u%04x", *p);
        } else {
            fputc(*p, out);
        }
    }
    fputc('"', out);
}

/* One rendering of a value for both formats: they differ only in null, text and lists. */
void nb_write_real(FILE *out, double value, const char *missing)
{
    char number[64];
    if (!isfinite(value)) {
        fputs(missing, out);
        return;
    }
    nb_format_real(value, number, sizeof number);
    fputs(number, out);
}

static void render_value(const value *v, int as_json, FILE *out)
{
    char number[64];
    switch (v->kind) {
    case VALUE_NULL:
        fputs(as_json ? "null" : "-", out);
        break;
    case VALUE_INT:
        fprintf(out, "%lld", v->integer);
        break;
    case VALUE_REAL:
        nb_format_real(v->real, number, sizeof number);
        fputs(number, out);
        break;
    case VALUE_BOOL:
        fputs(v->integer ? "true" : "false", out);
        break;
    case VALUE_TEXT:
        if (as_json)
            nb_json_string(v->text, out);
        else
            fputs(v->text, out);
        break;
    case VALUE_INT_LIST:
        if (as_json)
            fputc('[', out);
        format_int_list(v->list, v->list_count, out, as_json ? ", " : ",");
        if (as_json)
            fputc(']', out);
        break;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Human format                                                                                 */
/* ------------------------------------------------------------------------------------------ */

int nb_render_human(const nb_result *result, FILE *out)
{
    char when[32];
    format_utc(result->start, when, sizeof when);
    fprintf(out, "# netbench %s %s\n", NETBENCH_VERSION, result->method);
    /* Only the first line of the library version (MPICH's has many), kept verbatim. */
    size_t first_line = strcspn(result->mpi_library, "\r\n");
    fprintf(out, "# mpi: %.*s\n", (int)first_line, result->mpi_library);
    fprintf(out, "# mpi_standard: %d.%d\n", result->mpi_version, result->mpi_subversion);
    fprintf(out, "# start_time_utc: %s\n", when);
    fputs("# command_line:", out);
    for (int i = 0; i < result->argc; i++)
        fprintf(out, " %s", result->argv[i]);
    fputs("\n", out);
    for (size_t r = 0; r < result->rank_count; r++) {
        const rank_entry *entry = &result->ranks[r];
        fprintf(out, "# rank %d: host=%s cpus_bound=", entry->rank, entry->host);
        format_cpu_ranges(entry->cpus, entry->cpu_count, out);
        fprintf(out, " cpu_at_start=%d cpu_at_end=%d cpu_wait_fraction=", entry->cpu_at_start,
                entry->cpu_at_end);
        nb_write_real(out, entry->cpu_wait_fraction, "-");
        fprintf(out, " cpu_others=%s\n", entry->cpu_others ? entry->cpu_others : "-");
    }
    for (size_t i = 0; i < result->parameters.count; i++) {
        fprintf(out, "# parameter %s=", result->parameters.items[i].key);
        render_value(&result->parameters.items[i].value, 0, out);
        fputs("\n", out);
    }
    for (size_t t = 0; t < result->table_count; t++) {
        const nb_table *table = result->tables[t];
        fprintf(out, "# table %s\n# columns", table->name);
        for (size_t c = 0; c < table->column_count; c++)
            fprintf(out, " %s", table->columns[c]);
        fputs("\n", out);
        for (size_t row = 0; row < table->row_count; row++) {
            for (size_t c = 0; c < table->column_count; c++) {
                if (c > 0)
                    fputs(" ", out);
                render_value(&table->cells[row * table->column_count + c], 0, out);
            }
            fputs("\n", out);
        }
    }
    for (size_t i = 0; i < result->summary.count; i++) {
        fprintf(out, "# summary %s=", result->summary.items[i].key);
        render_value(&result->summary.items[i].value, 0, out);
        fputs("\n", out);
    }
    for (size_t i = 0; i < result->warning_count; i++)
        fprintf(out, "# warning: %s\n", result->warnings[i]);
    for (size_t i = 0; i < result->unreliable_count; i++)
        fprintf(out, "# unreliable: %s: %s\n", result->unreliable[i].quantity,
                result->unreliable[i].reason);
    fprintf(out, "# status: %s\n", result->unreliable_count == 0 ? "ok" : "unreliable");
    fflush(out);
    return ferror(out) ? -1 : 0;
}

/* ------------------------------------------------------------------------------------------ */
/* JSON                                                                                         */
/* ------------------------------------------------------------------------------------------ */

static void json_object(const keyed_list *list, FILE *out)
{
    fputc('{', out);
    for (size_t i = 0; i < list->count; i++) {
        fputs(i ? ", " : "", out);
        nb_json_string(list->items[i].key, out);
        fputs(": ", out);
        render_value(&list->items[i].value, 1, out);
    }
    fputc('}', out);
}

int nb_render_json(const nb_result *result, FILE *out)
{
    char when[32];
    format_utc(result->start, when, sizeof when);
    fprintf(out, "{\n  \"format\": \"netbench-result\",\n  \"format_version\": 1,\n");
    fprintf(out, "  \"program\": \"netbench\",\n  \"version\": ");
    nb_json_string(NETBENCH_VERSION, out);
    fputs(",\n  \"method\": ", out);
    nb_json_string(result->method, out);
    fputs(",\n  \"command_line\": [", out);
    for (int i = 0; i < result->argc; i++) {
        fputs(i ? ", " : "", out);
        nb_json_string(result->argv[i], out);
    }
    fprintf(out, "],\n  \"start_time_utc\": \"%s\",\n  \"mpi\": {\"library\": ", when);
    nb_json_string(result->mpi_library, out);
    fprintf(out, ", \"standard\": \"%d.%d\"},\n  \"ranks\": [\n", result->mpi_version,
            result->mpi_subversion);
    for (size_t r = 0; r < result->rank_count; r++) {
        const rank_entry *entry = &result->ranks[r];
        fprintf(out, "    {\"rank\": %d, \"host\": ", entry->rank);
        nb_json_string(entry->host, out);
        fputs(", \"cpus_bound\": [", out);
        for (size_t c = 0; c < entry->cpu_count; c++)
            fprintf(out, "%s%d", c ? ", " : "", entry->cpus[c]);
        fprintf(out, "], \"cpu_at_start\": %d, \"cpu_at_end\": %d, \"cpu_wait_fraction\": ",
                entry->cpu_at_start, entry->cpu_at_end);
        nb_write_real(out, entry->cpu_wait_fraction, "null");
        fputs(", \"cpu_others\": ", out);
        if (entry->cpu_others)
            nb_json_string(entry->cpu_others, out);
        else
            fputs("null", out);
        fprintf(out, "}%s\n", r + 1 < result->rank_count ? "," : "");
    }
    fputs("  ],\n  \"parameters\": ", out);
    json_object(&result->parameters, out);
    fputs(",\n  \"tables\": {", out);
    for (size_t t = 0; t < result->table_count; t++) {
        const nb_table *table = result->tables[t];
        fputs(t ? ",\n    " : "\n    ", out);
        nb_json_string(table->name, out);
        fputs(": [", out);
        for (size_t row = 0; row < table->row_count; row++) {
            fputs(row ? ",\n      {" : "\n      {", out);
            for (size_t c = 0; c < table->column_count; c++) {
                fputs(c ? ", " : "", out);
                nb_json_string(table->columns[c], out);
                fputs(": ", out);
                render_value(&table->cells[row * table->column_count + c], 1, out);
            }
            fputc('}', out);
        }
        fputs(table->row_count ? "\n    ]" : "]", out);
    }
    fputs(result->table_count ? "\n  },\n  \"summary\": " : "},\n  \"summary\": ", out);
    json_object(&result->summary, out);
    fputs(",\n  \"warnings\": [", out);
    for (size_t i = 0; i < result->warning_count; i++) {
        fputs(i ? ",\n    " : "\n    ", out);
        nb_json_string(result->warnings[i], out);
    }
    fputs(result->warning_count ? "\n  ],\n  \"unreliable\": [" : "],\n  \"unreliable\": [", out);
    for (size_t i = 0; i < result->unreliable_count; i++) {
        fputs(i ? ",\n    {\"quantity\": " : "\n    {\"quantity\": ", out);
        nb_json_string(result->unreliable[i].quantity, out);
        fputs(", \"reason\": ", out);
        nb_json_string(result->unreliable[i].reason, out);
        fputc('}', out);
    }
    fputs(result->unreliable_count ? "\n  ],\n" : "],\n", out);
    fprintf(out, "  \"status\": \"%s\"\n}\n", result->unreliable_count == 0 ? "ok" : "unreliable");
    fflush(out);
    return ferror(out) ? -1 : 0;
}

FILE *nb_create_atomically(const char *path, char **temporary)
{
    size_t length = strlen(path) + 64;
    *temporary = checked_realloc(NULL, length, 1);
    snprintf(*temporary, length, "%s.tmp.%ld", path, (long)getpid());
    FILE *out = fopen(*temporary, "w");
    if (out == NULL) {
        fprintf(stderr, "netbench: cannot create %s: %s\n", *temporary, strerror(errno));
        free(*temporary);
        *temporary = NULL;
    }
    return out;
}

int nb_finish_atomically(FILE *out, const char *path, char *temporary)
{
    int failed = ferror(out) != 0;
    failed |= fflush(out) != 0;
    failed |= fsync(fileno(out)) != 0;
    failed |= fclose(out) != 0;
    if (!failed && rename(temporary, path) != 0)
        failed = 1;
    if (failed) {
        fprintf(stderr, "netbench: writing %s failed: %s\n", path, strerror(errno));
        unlink(temporary);
    }
    free(temporary);
    return failed ? -1 : 0;
}

int nb_write_json_file(const nb_result *result, const char *path)
{
    char *temporary;
    FILE *out = nb_create_atomically(path, &temporary);
    if (out == NULL)
        return -1;
    (void)nb_render_json(result, out); /* a write error stays on the stream: finish sees it */
    return nb_finish_atomically(out, path, temporary);
}
