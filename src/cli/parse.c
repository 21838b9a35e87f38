/* parse.c - the command line of a method parsed against its option descriptors (cli.h): the
 * subcommand, then each option (its value parsed by values.c), the excluded pairs, the size
 * list; --help and --describe printed by help.c. Knows no method. */
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
const nb_method *nb_cli_pick_method(int argc, char **argv, nb_cli_outcome *outcome)
{
    const char *first = argc > 1 ? argv[1] : NULL;
    char names[512] = "";
    for (size_t i = 0; i < nb_method_count; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 nb_methods[i]->name);
    if (first == NULL) {
        *outcome = cli_usage_error("no subcommand given; use one of %s (netbench --help)", names);
        return NULL;
    }
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        if (nb_cli_is_printing_process())
            cli_print_top_help();
        *outcome = NB_CLI_EXIT_OK;
        return NULL;
    }
    if (strcmp(first, "--version") == 0) {
        if (nb_cli_is_printing_process())
            printf("netbench %s\n", NETBENCH_VERSION);
        *outcome = NB_CLI_EXIT_OK;
        return NULL;
    }
    for (size_t i = 0; i < nb_method_count; i++)
        if (strcmp(first, nb_methods[i]->name) == 0) {
            *outcome = NB_CLI_RUN;
            return nb_methods[i];
        }
    *outcome = cli_usage_error("unknown subcommand '%s'; use one of %s (netbench --help)", first,
                           names);
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Parsing                                                                                      */
/* ------------------------------------------------------------------------------------------ */

/* 1 when another method (or a shared option) knows this option name. */
static int known_elsewhere(const char *name, size_t length)
{
    for (size_t m = 0; m < nb_method_count; m++) {
        option_list list;
        cli_list_options(nb_methods[m], &list);
        if (cli_find_option(&list, name, length) != NULL)
            return 1;
    }
    for (int c = NB_COMMON_NONE + 1; c < NB_COMMON_COUNT; c++)
        if (strlen(cli_common_options[c].name) == length &&
            strncmp(cli_common_options[c].name, name, length) == 0)
            return 1;
    return 0;
}

/* Two options of one choice both given (an option's nb_option.excludes, or --sizes beside
 * --min-size/--max-size: `list_and_range`): reported (1), else 0. */
static int excluded_pair_given(const nb_method *method, const option_list *list,
                               const unsigned char *given, int list_and_range)
{
    if (list_and_range) {
        cli_usage_error("--sizes and --min-size/--max-size exclude each other; give either a list "
                        "or a range");
        return 1;
    }
    for (size_t index = 0; index < list->count; index++) {
        const nb_option *o = &list->options[index];
        if (!given[index] || o->excludes == NULL)
            continue;
        const nb_option *other = cli_find_option(list, o->excludes, strlen(o->excludes));
        if (other != NULL && given[other - list->options]) {
            cli_usage_error("%s: %s and %s exclude each other; give one of the two (netbench %s "
                            "--help)", method->name, o->name, other->name, method->name);
            return 1;
        }
    }
    return 0;
}

nb_cli_outcome nb_cli_parse(int argc, char **argv, const nb_method *method, nb_options *options)
{
    memset(options, 0, sizeof *options);
    options->argc = argc;
    options->argv = argv;
    void *settings = NULL;
    if (method->settings_size > 0) {
        settings = calloc(1, method->settings_size);
        if (settings == NULL)
            return cli_usage_error("out of memory");
    }
    options->settings = settings;
    option_list list;
    cli_list_options(method, &list);

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            if (nb_cli_is_printing_process())
                cli_print_method_help(method, &list);
            return NB_CLI_EXIT_OK;
        }
        if (strcmp(argv[i], "--describe") == 0) {
            if (nb_cli_is_printing_process())
                cli_print_method_description(method);
            return NB_CLI_EXIT_OK;
        }
    }
    nb_cli_outcome outcome = cli_apply_defaults(method, &list, options, settings);
    if (outcome != NB_CLI_RUN)
        return outcome;

    int range_given = 0;
    /* Which options were given: a repeated one is refused, never "the last one wins" (a second
     * --sizes silently replacing the first would measure other sizes than asked). */
    unsigned char given[MAX_OPTIONS] = {0};
    for (int i = 2; i < argc; i++) {
        const char *argument = argv[i];
        if (argument[0] != '-' || argument[1] == '\0')
            return cli_usage_error("%s: unexpected argument '%s'; options start with '-' (netbench %s "
                               "--help)", method->name, argument, method->name);
        const char *equals = strchr(argument, '=');
        size_t name_length = equals ? (size_t)(equals - argument) : strlen(argument);
        const nb_option *o = cli_find_option(&list, argument, name_length);
        if (o == NULL) {
            if (known_elsewhere(argument, name_length))
                return cli_usage_error("%s: option %.*s does not apply to %s; see netbench %s --help",
                                   method->name, (int)name_length, argument, method->name,
                                   method->name);
            return cli_usage_error("%s: unknown option '%.*s'; see netbench %s --help",
                               method->name, (int)name_length, argument, method->name);
        }
        size_t index = (size_t)(o - list.options);
        if (given[index] && o->example != NULL && o->type != NB_OPTION_FLAG)
            return cli_usage_error("%s: %s is given twice; give it once, e.g. %s %s", method->name,
                               o->name, o->name, o->example);
        if (given[index])
            return cli_usage_error("%s: %s is given twice; give it once", method->name, o->name);
        given[index] = 1;
        const char *value = NULL;
        if (o->type == NB_OPTION_FLAG) {
            if (equals != NULL)
                return cli_usage_error("%s takes no value; write just %s", o->name, o->name);
        } else if (equals != NULL) {
            value = equals + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            return cli_usage_error("%s needs a value; e.g. %s %s", o->name, o->name, o->example);
        }
        if (value != NULL && value[0] == '\0')
            return cli_usage_error("%s: empty value; e.g. %s %s", o->name, o->name, o->example);
        /* Errors name the option as it was typed (-n or --messages). */
        char typed[64];
        snprintf(typed, sizeof typed, "%.*s", (int)name_length, argument);
        outcome = cli_apply(o, typed, value, options, settings);
        if (outcome != NB_CLI_RUN)
            return outcome;
        if (o->common == NB_COMMON_SIZES)
            options->sizes_given = 1;
        if (o->common == NB_COMMON_MIN_SIZE || o->common == NB_COMMON_MAX_SIZE)
            range_given = 1;
    }

    if (excluded_pair_given(method, &list, given, options->sizes_given && range_given) ||
        nb_size_order_error("", "--min-size", options->min_size, "--max-size",
                            options->max_size) != 0)
        return NB_CLI_EXIT_USAGE;
    if (!options->sizes_given)
        cli_generate_sizes(method->progression, options);
    if (method->finish != NULL && method->finish(options, settings) != 0)
        return NB_CLI_EXIT_USAGE;
    if (options->size_count > 0)
        options->max_size = options->sizes[options->size_count - 1];
    if (options->size_count > 0 && cli_accepts(method, NB_COMMON_SIZES))
        options->min_size = options->sizes[0];
    return cli_check_buffer_memory(method, options);
}

