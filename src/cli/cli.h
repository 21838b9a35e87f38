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

#include <stddef.h>

#include "declare.h"
#include "output.h"

/* Exit status of a usage error (docs/output-format.md, "Exit status"). */
#define NB_EXIT_USAGE 2

/* Largest message size accepted: MPI counts are int, and buffers are allocated per queue slot. */
#define NB_MAX_MESSAGE_SIZE ((size_t)1 << 30)
#define NB_MAX_REPETITIONS 1000

/* The watchdog: a run that has not ended after this many seconds (a stopped, hung or dead
 * rank leaves its peer waiting forever) ends with one line on stderr and status 1. */
#define NB_DEFAULT_TIMEOUT_S 600
#define NB_MAX_TIMEOUT_S 604800

/* The largest message size of the run: the last of the size list, or --max-size before it is
 * made. */
size_t nb_largest_size(const nb_options *options);

/* A send and a receive buffer of `size`: their bytes, described in `how` ("send and receive
 * buffers of 4M = ... bytes"), and no hint; for the buffer_bytes hooks. */
unsigned long long nb_send_receive_bytes(size_t size, char *how, size_t length, const char **hint);

/* nb_method.buffer_bytes of a method whose buffers depend on the rank count (known only after
 * MPI_Init): 0, unknown; the method checks its allocation itself. */
nb_buffer_bytes_hook nb_buffer_bytes_after_mpi;

/* The registry (methods/registry.c): every method, in the order of `netbench --help`. */
extern const nb_method *const nb_methods[];
extern const size_t nb_method_count;

/* What the caller should do after parsing. */
typedef enum {
    NB_CLI_RUN,          /* run the measurement with the parsed options */
    NB_CLI_EXIT_OK,      /* help was printed (or not, on ranks other than 0): exit 0 */
    NB_CLI_EXIT_USAGE,   /* a usage error was reported: exit NB_EXIT_USAGE */
} nb_cli_outcome;

/* 1 when this process should print help and usage errors: no launcher rank variable
 * (OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, SLURM_PROCID) names a rank other than 0. */
int nb_cli_is_printing_process(void);

/* Prints "netbench: <message>" as one line on stderr (printing process only); returns
 * NB_EXIT_USAGE, for the hooks. */
int nb_usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Where the size given to `low_option` is larger than the one given to `high_option`: the usage
 * error "<prefix>--low X is larger than --high Y; make --low <= --high" (NB_EXIT_USAGE); else 0.
 * `prefix` names the method ("connections: ") or is "". */
int nb_size_order_error(const char *prefix, const char *low_option, size_t low,
                        const char *high_option, size_t high);

/* Top-level arguments before a method is known: --help, --version, or the method name.
 * Returns the chosen method, or NULL with *outcome set. */
const nb_method *nb_cli_pick_method(int argc, char **argv, nb_cli_outcome *outcome);

/* Parses the options after the method name (argv[2..]) into *options (and a new settings
 * struct), starting from the defaults, and generates the size list. Prints help or one error
 * line (on the printing process only). */
nb_cli_outcome nb_cli_parse(int argc, char **argv, const nb_method *method, nb_options *options);

/* Parses "64", "8K", "4M" (binary: 1K = 1024). Returns 0 or -1 when not a size. */
int nb_parse_size(const char *text, size_t *size);

/* "4M", "64K" or "100" */
void nb_format_size(size_t size, char *text, size_t length);

/* Sorts ascending and drops duplicates; returns the new count. */
size_t nb_sort_unique_sizes(size_t *sizes, size_t count);

/* A launcher variable holding a positive count (OMPI_COMM_WORLD_LOCAL_SIZE, ...), or 0. */
unsigned long long nb_launcher_count(const char *name);

#endif
