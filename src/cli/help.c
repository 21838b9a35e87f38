/* help.c - `netbench --help`, `netbench METHOD --help` and `--describe`, printed from the
 * methods' declarations (cli.h). Knows no method. */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_internal.h"
#include "version.h"
/* ------------------------------------------------------------------------------------------ */
/* Help                                                                                         */
/* ------------------------------------------------------------------------------------------ */

/* "  NAME                     text" with the text wrapped at 79 columns under itself. */
static void print_wrapped(const char *name, const char *text)
{
    enum { INDENT = 27, WIDTH = 79 };
    printf("  %-24s ", name);
    int column = INDENT;
    const char *word = text;
    while (*word) {
        size_t length = strcspn(word, " ");
        if (column > INDENT && column + 1 + (int)length > WIDTH) {
            printf("\n%*s", INDENT, "");
            column = INDENT;
        } else if (column > INDENT) {
            putchar(' ');
            column++;
        }
        printf("%.*s", (int)length, word);
        column += (int)length;
        word += length;
        while (*word == ' ')
            word++;
    }
    putchar('\n');
}

static void print_option_help(const nb_option *o)
{
    char name[64], range[320], text[1400];
    const char *value_name = o->type == NB_OPTION_FLAG ? NULL : o->value_name;
    if (o->short_name)
        snprintf(name, sizeof name, "-%c, %s%s%s", o->short_name, o->name, value_name ? " " : "",
                 value_name ? value_name : "");
    else
        snprintf(name, sizeof name, "%s%s%s", o->name, value_name ? " " : "",
                 value_name ? value_name : "");
    cli_describe_range(o, range, sizeof range);
    char defaults[400] = "";
    if (o->default_text != NULL)
        snprintf(defaults, sizeof defaults, "default: %s", o->default_text);
    else if (o->default_value != NULL)
        snprintf(defaults, sizeof defaults, "default %s", o->default_value);
    if (o->excludes != NULL) {  /* one choice of two: say so where the choice is made */
        size_t used = strlen(range);
        snprintf(range + used, sizeof range - used, "%snot with %s", used ? "; " : "",
                 o->excludes);
    }
    const char *separator = defaults[0] && range[0] ? "; " : "";
    if (defaults[0] || range[0])
        snprintf(text, sizeof text, "%s (%s%s%s)", o->help, defaults, separator, range);
    else
        snprintf(text, sizeof text, "%s", o->help);
    print_wrapped(name, text);
}

/* "higher", "lower", "equal" (should not move), or NULL for a key or a parameter: the word of
 * --describe; the help says it in words. */
static const char *direction_name(nb_direction direction)
{
    static const char *const names[] = {[NB_HIGHER_IS_BETTER] = "higher",
                                        [NB_LOWER_IS_BETTER] = "lower",
                                        [NB_EQUAL_IS_BETTER] = "equal"};
    return names[direction];
}

static const char *direction_words(nb_direction direction)
{
    const char *name = direction_name(direction);
    return name == NULL                        ? ""
           : direction == NB_EQUAL_IS_BETTER ? ", should not move"
           : direction == NB_HIGHER_IS_BETTER ? ", higher is better"
                                              : ", lower is better";
}

/* "column [unit, lower is better], ..." under `label`. */
static void print_declarations_help(const char *label, const nb_column *columns, size_t count)
{
    char text[8192];
    size_t used = 0;
    text[0] = '\0';
    for (size_t c = 0; c < count && used < sizeof text; c++) {
        const char *unit = columns[c].unit[0] ? columns[c].unit : "label";
        used += (size_t)snprintf(text + used, sizeof text - used, "%s%s [%s%s]", c ? ", " : "",
                                 columns[c].name, unit, direction_words(columns[c].direction));
    }
    print_wrapped(label, text);
}

/* The declared tables and summary figures: "table NAME: column [unit, lower is better], ..." */
static void print_tables_help(const nb_method *method)
{
    if (method->tables != NULL && method->tables[0] != NULL) {
        printf("\noutput tables (columns with unit and direction; docs/output-format.md):\n");
        for (const nb_table_spec *const *t = method->tables; *t != NULL; t++)
            print_declarations_help((*t)->name, (*t)->columns, (*t)->column_count);
    }
    if (method->figure_count > 0) {
        printf("\nsummary figures (unit and direction):\n");
        print_declarations_help("summary", method->figures, method->figure_count);
    }
}

/* The JSON list of declarations: [{"name": ..., "unit": ..., "better": ...}, ...], with
 * "signed": true where a value may be below 0. */
static void print_declarations_json(const char *indent, const nb_column *columns, size_t count)
{
    for (size_t c = 0; c < count; c++) {
        const char *better = direction_name(columns[c].direction);
        printf("%s\n%s{\"name\": \"%s\", \"unit\": \"%s\", \"better\": %s%s%s%s}",
               c ? "," : "", indent, columns[c].name, columns[c].unit, better ? "\"" : "",
               better ? better : "null", better ? "\"" : "",
               columns[c].may_be_negative ? ", \"signed\": true" : "");
    }
}

/* The option types as --describe names them. */
static const char *const type_names[] = {
    [NB_OPTION_INT] = "int",          [NB_OPTION_LONG] = "int",
    [NB_OPTION_DOUBLE] = "real",      [NB_OPTION_SIZE] = "size",
    [NB_OPTION_SIZE_LIST] = "size_list", [NB_OPTION_INT_LIST] = "int_list",
    [NB_OPTION_ENUM] = "choice",      [NB_OPTION_ENUM_LIST] = "choice_list",
    [NB_OPTION_FLAG] = "flag",        [NB_OPTION_STRING] = "string",
};

static const char *const progression_names[] = {[NB_SIZES_POWERS_OF_2] = "powers_of_2",
                                                [NB_SIZES_POWERS_OF_4] = "powers_of_4",
                                                [NB_SIZES_NONE] = "method"};

/* A JSON string: the declarations hold no control characters, only quotes to escape. */
static void print_json_string(const char *text)
{
    putchar('"');
    for (const char *c = text; *c; c++) {
        if (*c == '"' || *c == '\\')
            putchar('\\');
        putchar(*c);
    }
    putchar('"');
}

/* One option: {"name", "type", "default" (as typed on the command line; null: none), and its
 * range ("min", "max") or its choices. */
static void print_option_json(const nb_option *o, int first)
{
    printf("%s\n  {\"name\": ", first ? "" : ",");
    print_json_string(o->name);
    printf(", \"type\": \"%s\", \"default\": ", type_names[o->type]);
    if (o->default_value != NULL && o->type != NB_OPTION_FLAG)
        print_json_string(o->default_value);
    else
        printf("null");
    if (o->type == NB_OPTION_ENUM || o->type == NB_OPTION_ENUM_LIST) {
        printf(", \"choices\": [");
        for (int i = 0; i < o->name_count; i++) {
            printf("%s", i ? ", " : "");
            print_json_string(o->name_of(i));
        }
        printf("]");
    } else if (o->type != NB_OPTION_FLAG && o->type != NB_OPTION_STRING) {
        printf(", \"min\": %.17g, \"max\": %.17g", o->min, o->max);
    }
    printf("}");
}

/* The sizes a run without size options measures (the method's defaults, its progression and
 * its finish hook), or null where they depend on another option (models: the LogGP file). */
static void print_default_sizes(const nb_method *method)
{
    nb_options options;
    void *settings = NULL;
    int status = cli_default_options(method, &options, &settings);
    if (status != 0 || options.size_count == 0) {
        printf("null");
    } else {
        printf("[");
        for (size_t i = 0; i < options.size_count; i++)
            printf("%s%zu", i ? ", " : "", options.sizes[i]);
        printf("]");
    }
    free(settings);
}

/* `netbench METHOD --describe`: the declared tables and summary figures as JSON, for the checks,
 * the docs and the report (docs/output-format.md); one declaration per figure, here and nowhere
 * else. */
void cli_print_method_description(const nb_method *method)
{
    printf("{\"method\": \"%s\", \"scope\": \"%s\", \"tables\": [", method->name,
           method->scope == NB_ON_ALL_RANKS ? "all_ranks" : "pair");
    for (const nb_table_spec *const *t = method->tables; t != NULL && *t != NULL; t++) {
        printf("%s\n  {\"name\": \"%s\", \"columns\": [", t == method->tables ? "" : ",",
               (*t)->name);
        print_declarations_json("    ", (*t)->columns, (*t)->column_count);
        printf("\n  ]}");
    }
    printf("\n], \"summary\": [");
    print_declarations_json("  ", method->figures, method->figure_count);
    printf("\n], \"options\": [");
    option_list list;
    cli_list_options(method, &list);
    for (size_t i = 0; i < list.count; i++)
        print_option_json(&list.options[i], i == 0);
    printf("\n], \"size_progression\": \"%s\", \"default_sizes\": ",
           progression_names[method->progression]);
    print_default_sizes(method);
    printf("}\n");
}

void cli_print_method_help(const nb_method *method, const option_list *list)
{
    printf("usage: mpirun -np %s --bind-to core netbench %s [OPTIONS]\n\n",
           method->scope == NB_ON_ALL_RANKS ? "P" : "2", method->name);
    printf("%s\n\noptions:\n", method->description);
    for (size_t i = 0; i < list->count; i++)
        print_option_help(&list->options[i]);
    print_wrapped("-h, --help", "this text");
    print_wrapped("--describe", "print the declaration of every column and summary figure "
                                "below (unit, direction) as JSON");
    print_tables_help(method);
    printf("\nSizes take a K or M suffix (binary: 1K = 1024). Output: docs/output-format.md.\n"
           "Exit status: 0 done (check 'status'), 1 runtime failure or --timeout, 2 wrong "
           "usage.\n");
}

void cli_print_top_help(void)
{
    printf("netbench %s - MPI interconnect benchmarks: latency, bandwidth, LogP/LogGP, dense\n"
           "patterns, b_eff and collectives\n\n", NETBENCH_VERSION);
    printf("usage: mpirun -np 2 --bind-to core netbench SUBCOMMAND [OPTIONS]\n"
           "       netbench SUBCOMMAND --help\n"
           "       netbench --help | --version\n\nsubcommands:\n");
    char all_ranks[512] = "";
    for (size_t i = 0; i < nb_method_count; i++) {
        printf("  %-10s %s\n", nb_methods[i]->name, nb_methods[i]->summary);
        if (nb_methods[i]->scope == NB_ON_ALL_RANKS)
            snprintf(all_ranks + strlen(all_ranks), sizeof all_ranks - strlen(all_ranks),
                     "%s%s", all_ranks[0] ? ", " : "", nb_methods[i]->name);
    }
    printf("\nPoint-to-point methods measure ranks 0 and 1; further ranks wait at a barrier.\n"
           "%s use every rank (mpirun -np P).\n", all_ranks);
    printf("Ranks poll busily, so they must be bound to different cores (Open MPI:\n"
           "--bind-to core, MPICH: -bind-to core); a warning says when they are not.\n"
           "Only rank 0 prints: the human format by default, JSON with --json, and\n"
           "--json-file PATH writes JSON as well (format: docs/output-format.md).\n"
           "Every run ends after --timeout SECONDS (default %d, 0 = never) with one line\n"
           "on stderr and status 1, so that a stopped or hung rank cannot stall it forever.\n"
           "Exit status: 0 done (check 'status'), 1 runtime failure or timeout, 2 wrong usage.\n",
           NB_DEFAULT_TIMEOUT_S);
}

