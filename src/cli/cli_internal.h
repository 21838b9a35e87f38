/* cli_internal.h - what the parser's files share among themselves (options.c, values.c,
 * parse.c, help.c, preflight.c); the rest of netbench sees only cli.h. */
#ifndef NETBENCH_CLI_INTERNAL_H
#define NETBENCH_CLI_INTERNAL_H

#include "cli.h"

/* A method's options with the shared ones resolved: its own table, then the always options
 * it did not list. */
#define MAX_OPTIONS 64

typedef struct {
    nb_option options[MAX_OPTIONS];
    size_t count;
} option_list;

/* options.c: the shared options (indexed by nb_common_option), the lists, values and ranges. */
extern const nb_option cli_common_options[NB_COMMON_COUNT];
void cli_list_options(const nb_method *method, option_list *list);
const nb_option *cli_find_option(const option_list *list, const char *name, size_t length);
int cli_accepts(const nb_method *method, nb_common_option id);
int cli_parse_whole(const char *text, long *value);
int cli_parse_real(const char *text, double *value);
/* The option's range for the help: "range 1..1000", "each 1..1024", "one of a, b". */
void cli_describe_range(const nb_option *o, char *text, size_t length);
nb_cli_outcome cli_value_error(const nb_option *o, const char *typed, const char *value,
                               const char *problem);
/* Set while --describe works out the defaults: their usage errors are not the user's. */
extern int cli_quiet_usage;
/* One line on stderr (rank 0 only), NB_CLI_EXIT_USAGE. */
nb_cli_outcome cli_usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* values.c: one option's value (`typed` as the user wrote its name) parsed into its place; */
nb_cli_outcome cli_apply(const nb_option *o, const char *typed, const char *value,
                         nb_options *options, void *settings);
/* every default of a method's options, parsed like the command line; */
nb_cli_outcome cli_apply_defaults(const nb_method *method, const option_list *list,
                                  nb_options *options, void *settings);
/* the size list a progression generates between options->min_size and max_size; */
void cli_generate_sizes(nb_size_progression progression, nb_options *options);
/* a method's defaults and the size list they generate, as a run without options has them
 * (for --describe), with *settings allocated for the caller to free; 0, or the exit status of
 * a refused default or finish hook. */
int cli_default_options(const nb_method *method, nb_options *options, void **settings);

/* help.c */
void cli_print_top_help(void);
void cli_print_method_help(const nb_method *method, const option_list *list);
void cli_print_method_description(const nb_method *method);

/* preflight.c */
nb_cli_outcome cli_check_buffer_memory(const nb_method *method, const nb_options *options);

#endif
