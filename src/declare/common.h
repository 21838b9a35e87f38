/* common.h - what the parser (cli/), the timing core (core/) and the methods share besides the
 * declaration types (declare.h): the command line's limits, the usage error, sizes and their
 * notation, the buffer hooks and the registry. Declared here, outside core/ and cli/, so that
 * neither folder includes the other's header to reach them (the functions live in cli/). */
#ifndef NETBENCH_COMMON_H
#define NETBENCH_COMMON_H

#include <stddef.h>

#include "declare.h"

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

/* Parses "64", "8K", "4M" (binary: 1K = 1024). Returns 0 or -1 when not a size. */
int nb_parse_size(const char *text, size_t *size);

/* "4M", "64K" or "100" */
void nb_format_size(size_t size, char *text, size_t length);

/* Sorts ascending and drops duplicates; returns the new count. */
size_t nb_sort_unique_sizes(size_t *sizes, size_t count);

/* A launcher variable holding a positive count (OMPI_COMM_WORLD_LOCAL_SIZE, ...), or 0. */
unsigned long long nb_launcher_count(const char *name);

#endif
