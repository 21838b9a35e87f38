/* cli.h - the generic parser and help printer of netbench's methods.
 *
 * A method is one nb_method (methods/<family>_catalogue.h, written in declare.h's types): its
 * name, help text, whether it runs on a pair or on every rank, its options (a table of
 * nb_option descriptors: name, type, default, range, help, where the value goes), its output
 * tables (each column with unit and direction) and its run function (in methods/<family>.c).
 * The registry (methods/registry.c) lists the methods. cli/ (parse.c, values.c, options.c,
 * help.c, preflight.c) knows no method: it parses the command line against the chosen
 * method's table, checks every value against its range (one line on stderr naming the option,
 * the value and the allowed range, exit status 2, before MPI_Init) and prints the help from
 * the same descriptors. Adding a method: docs/adding-a-method.md.
 */
#ifndef NETBENCH_CLI_H
#define NETBENCH_CLI_H

#include "common.h"

/* What the caller should do after parsing. */
typedef enum {
    NB_CLI_RUN,          /* run the measurement with the parsed options */
    NB_CLI_EXIT_OK,      /* help was printed (or not, on ranks other than 0): exit 0 */
    NB_CLI_EXIT_USAGE,   /* a usage error was reported: exit NB_EXIT_USAGE */
} nb_cli_outcome;

/* Top-level arguments before a method is known: --help, --version, or the method name.
 * Returns the chosen method, or NULL with *outcome set. */
const nb_method *nb_cli_pick_method(int argc, char **argv, nb_cli_outcome *outcome);

/* Parses the options after the method name (argv[2..]) into *options (and a new settings
 * struct), starting from the defaults, and generates the size list. Prints help or one error
 * line (on the printing process only). */
nb_cli_outcome nb_cli_parse(int argc, char **argv, const nb_method *method, nb_options *options);

#endif
