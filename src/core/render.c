/* render.c - a result's two renderings, the human format and JSON, from one set of fields and
 * one number format (docs/output-format.md), and the atomic file writes. No MPI in here. */
#include "output.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "result_fields.h"
#include "version.h"

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
    *temporary = malloc(length);
    if (*temporary == NULL) {
        fprintf(stderr, "netbench: out of memory while writing %s\n", path);
        return NULL;
    }
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
