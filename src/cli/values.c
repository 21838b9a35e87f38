/* values.c - one option's value parsed into its place (cli.h's descriptors), lists, the
 * defaults and the size list they generate: what the command line (parse.c) and the help's
 * --describe (help.c) both need, so that neither calls the other's. Knows no method. */
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
/* ------------------------------------------------------------------------------------------ */
/* Parsing one value                                                                            */
/* ------------------------------------------------------------------------------------------ */

static void *value_address(const nb_option *o, nb_options *options, void *settings,
                           size_t offset)
{
    char *base = o->home == NB_IN_OPTIONS ? (char *)options : (char *)settings;
    return base + offset;
}

/* Copies the next item of the comma-separated list at *cursor into text and advances the
 * cursor (to NULL after the last item). Returns 0, or -1 for an empty or overlong item. */
static int next_list_item(const char **cursor, char *text, size_t capacity)
{
    const char *item = *cursor;
    const char *comma = strchr(item, ',');
    size_t length = comma ? (size_t)(comma - item) : strlen(item);
    if (length == 0 || length >= capacity)
        return -1;
    memcpy(text, item, length);
    text[length] = '\0';
    *cursor = comma ? comma + 1 : NULL;
    return 0;
}

static int compare_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static int name_index(const nb_option *o, const char *name)
{
    for (int i = 0; i < o->name_count; i++)
        if (strcmp(name, o->name_of(i)) == 0)
            return i;
    return -1;
}

static nb_cli_outcome parse_list(const nb_option *o, const char *typed, const char *value,
                                 void *target, size_t *count_out)
{
    size_t count = 0;
    unsigned mask = 0;
    for (const char *cursor = value; cursor != NULL;) {
        char text[64], problem[160];
        if (next_list_item(&cursor, text, sizeof text) != 0)
            return cli_value_error(o, typed, value, "empty or overlong item");
        if (o->type == NB_OPTION_ENUM_LIST) {
            int index = name_index(o, text);
            if (index < 0) {
                snprintf(problem, sizeof problem, "unknown name '%s'", text);
                return cli_value_error(o, typed, value, problem);
            }
            mask |= 1u << index;
            continue;
        }
        double number = 0.0;
        size_t size = 0;
        long whole = 0;
        if (o->type == NB_OPTION_SIZE_LIST) {
            if (nb_parse_size(text, &size) != 0) {
                snprintf(problem, sizeof problem, "'%s' is not a size", text);
                return cli_value_error(o, typed, value, problem);
            }
            number = (double)size;
        } else {
            if (cli_parse_whole(text, &whole) != 0) {
                snprintf(problem, sizeof problem, "'%s' is not a whole number", text);
                return cli_value_error(o, typed, value, problem);
            }
            number = (double)whole;
        }
        if (number < o->min || number > o->max) {
            snprintf(problem, sizeof problem, "'%s' is out of range", text);
            return cli_value_error(o, typed, value, problem);
        }
        if (count == o->capacity)
            return cli_usage_error("%s: more than %zu items; give at most %zu", typed, o->capacity,
                               o->capacity);
        if (o->type == NB_OPTION_SIZE_LIST)
            ((size_t *)target)[count++] = size;
        else
            ((int *)target)[count++] = (int)whole;
    }
    if (o->type == NB_OPTION_ENUM_LIST) {
        *(unsigned *)target = mask;
        return NB_CLI_RUN;
    }
    if (o->type == NB_OPTION_SIZE_LIST) {
        count = nb_sort_unique_sizes(target, count);
    } else {
        int *items = target;
        qsort(items, count, sizeof *items, compare_int);
        size_t kept = 0;
        for (size_t i = 0; i < count; i++)
            if (kept == 0 || items[kept - 1] != items[i])
                items[kept++] = items[i];
        count = kept;
    }
    *count_out = count;
    return NB_CLI_RUN;
}

/* Parses `value` (NULL for a flag) into the option's field. `typed` names the option as the
 * user wrote it (-n or --messages). */
nb_cli_outcome cli_apply(const nb_option *o, const char *typed, const char *value,
                         nb_options *options, void *settings)
{
    void *target = value_address(o, options, settings, o->offset);
    double number = 0.0;
    long whole = 0;
    size_t size = 0;
    switch (o->type) {
    case NB_OPTION_FLAG:
        *(int *)target = 1;
        return NB_CLI_RUN;
    case NB_OPTION_STRING:
        *(const char **)target = value;
        break;
    case NB_OPTION_INT:
    case NB_OPTION_LONG:
        if (cli_parse_whole(value, &whole) != 0)
            return cli_value_error(o, typed, value, "not a whole number");
        if ((double)whole < o->min || (double)whole > o->max)
            return cli_value_error(o, typed, value, "out of range");
        if (o->type == NB_OPTION_INT)
            *(int *)target = (int)whole;
        else
            *(long *)target = whole;
        break;
    case NB_OPTION_DOUBLE:
        if (cli_parse_real(value, &number) != 0)
            return cli_value_error(o, typed, value, "not a number");
        if (number < o->min || number > o->max)
            return cli_value_error(o, typed, value, "out of range");
        *(double *)target = number;
        break;
    case NB_OPTION_SIZE:
        if (nb_parse_size(value, &size) != 0)
            return cli_value_error(o, typed, value, "not a size");
        if ((double)size < o->min || (double)size > o->max)
            return cli_value_error(o, typed, value, "out of range");
        *(size_t *)target = size;
        break;
    case NB_OPTION_ENUM: {
        int index = name_index(o, value);
        if (index < 0)
            return cli_value_error(o, typed, value, "unknown name");
        *(int *)target = index;
        break;
    }
    case NB_OPTION_SIZE_LIST:
    case NB_OPTION_INT_LIST:
    case NB_OPTION_ENUM_LIST: {
        size_t *count = o->type == NB_OPTION_ENUM_LIST
                            ? NULL
                            : value_address(o, options, settings, o->count_offset);
        size_t ignored = 0;
        nb_cli_outcome outcome = parse_list(o, typed, value, target, count ? count : &ignored);
        if (outcome != NB_CLI_RUN)
            return outcome;
        break;
    }
    }
    if (o->check != NULL) {
        const char *problem = o->check(target);
        if (problem != NULL)
            return cli_usage_error("%s %s: %s", typed, value, problem);
    }
    return NB_CLI_RUN;
}

/* ------------------------------------------------------------------------------------------ */
/* Size lists                                                                                   */
/* ------------------------------------------------------------------------------------------ */

static void add_size(nb_options *options, size_t size)
{
    if (options->size_count < NB_MAX_SIZES)
        options->sizes[options->size_count++] = size;
}

void cli_generate_sizes(nb_size_progression progression, nb_options *options)
{
    size_t min = options->min_size, max = options->max_size;
    options->size_count = 0;
    if (progression == NB_SIZES_NONE)
        return;
    add_size(options, min);
    if (progression == NB_SIZES_POWERS_OF_2) {
        size_t p = 1;
        while (p <= min)
            p *= 2;
        for (; p < max; p *= 2)
            add_size(options, p);
    } else {
        for (size_t p = min == 0 ? 1 : min * 4; p < max; p *= 4)
            add_size(options, p);
    }
    add_size(options, max);
    options->size_count = nb_sort_unique_sizes(options->sizes, options->size_count);
}

/* The defaults are parsed like the command line: a default outside its own range is a
 * programming error, caught on every start. */
nb_cli_outcome cli_apply_defaults(const nb_method *method, const option_list *list,
                                  nb_options *options, void *settings)
{
    for (size_t i = 0; i < list->count; i++) {
        const nb_option *o = &list->options[i];
        if (o->default_value == NULL || o->type == NB_OPTION_FLAG)
            continue;
        nb_cli_outcome outcome = cli_apply(o, o->name, o->default_value, options, settings);
        if (outcome != NB_CLI_RUN)
            return cli_usage_error("%s: internal error: the default of %s is refused", method->name,
                               o->name);
    }
    return NB_CLI_RUN;
}

int cli_default_options(const nb_method *method, nb_options *options, void **settings)
{
    memset(options, 0, sizeof *options);
    *settings = method->settings_size > 0 ? calloc(1, method->settings_size) : NULL;
    if (method->settings_size > 0 && *settings == NULL)
        return NB_EXIT_USAGE;
    options->settings = *settings;
    option_list list;
    cli_list_options(method, &list);
    if (cli_apply_defaults(method, &list, options, *settings) != NB_CLI_RUN)
        return NB_EXIT_USAGE;
    cli_generate_sizes(method->progression, options);
    cli_quiet_usage = 1; /* e.g. models without --loggp-json: no default sizes, not an error */
    int status = method->finish != NULL ? method->finish(options, *settings) : 0;
    cli_quiet_usage = 0;
    return status;
}
