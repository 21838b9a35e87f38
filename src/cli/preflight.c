/* preflight.c - before MPI_Init: whether the message buffers a run needs fit in this host's
 * memory, so that a run too large fails in one line, not in MPI_Abort (cli.h). */
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
/* Memory                                                                                       */
/* ------------------------------------------------------------------------------------------ */

size_t nb_largest_size(const nb_options *o)
{
    return o->size_count > 0 ? o->sizes[o->size_count - 1] : o->max_size;
}

unsigned long long nb_send_receive_bytes(size_t size, char *how, size_t length, const char **hint)
{
    char text[32];
    nb_format_size(size, text, sizeof text);
    unsigned long long bytes = 2 * (unsigned long long)size;
    snprintf(how, length, "send and receive buffers of %s = %llu bytes", text, bytes);
    *hint = "";
    return bytes;
}

/* Without the method's hook: a send and a receive buffer of the largest size. */
static unsigned long long default_buffer_bytes(const nb_options *o, char *how, size_t length,
                                               const char **hint)
{
    return nb_send_receive_bytes(nb_largest_size(o), how, length, hint);
}

unsigned long long nb_buffer_bytes_after_mpi(const nb_options *o, char *how, size_t length,
                                             const char **hint)
{
    (void)o;
    (void)how;
    (void)length;
    *hint = "";
    return 0;
}

/* The buffers must fit in this host's memory before MPI_Init, not fail after it in MPI_Abort.
 * With the launcher's count of ranks on this host (Open MPI, MPICH's hydra), every
 * communicating rank there needs its buffers at once. */
nb_cli_outcome cli_check_buffer_memory(const nb_method *method, const nb_options *options)
{
    char how[256] = "";
    const char *hint = "";
    unsigned long long need = method->buffer_bytes
                                  ? method->buffer_bytes(options, how, sizeof how, &hint)
                                  : default_buffer_bytes(options, how, sizeof how, &hint);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (need == 0 || pages <= 0 || page <= 0)
        return NB_CLI_RUN;
    unsigned long long memory = (unsigned long long)pages * (unsigned long long)page;
    unsigned long long local = nb_launcher_count("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (local == 0)
        local = nb_launcher_count("MPI_LOCALNRANKS");
    if (local == 0)
        local = 1;
    if (method->scope == NB_ON_PAIR && local > 2)
        local = 2; /* only ranks 0 and 1 allocate */
    if (need <= memory / local)
        return NB_CLI_RUN;
    char ranks[64] = "";
    if (local > 1)
        snprintf(ranks, sizeof ranks, " x %llu ranks on this host", local);
    return cli_usage_error("%s: the message buffers need %s per rank%s, more than the %llu bytes of "
                       "memory of this host; use smaller --sizes/--max-size%s", method->name, how,
                       ranks, memory, hint ? hint : "");
}

