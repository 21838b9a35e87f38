/* cli.c - option parsing and help text shared by all netbench subcommands (no MPI in here). */
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

#include "patterns.h"
#include "version.h"

static const char *const collective_names[NB_COLL_COUNT] = {
    "barrier", "bcast", "reduce", "allreduce", "alltoall", "alltoallv", "gather", "scatter",
    "allgather",
};

const char *nb_collective_name(nb_collective collective)
{
    return (unsigned)collective < NB_COLL_COUNT ? collective_names[collective] : "?";
}

/* ------------------------------------------------------------------------------------------ */
/* Which process prints                                                                         */
/* ------------------------------------------------------------------------------------------ */

int nb_cli_is_printing_process(void)
{
    /* Before MPI_Init the rank is unknown; the launchers export it in one of these. */
    static const char *const rank_variables[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK",
                                                 "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof rank_variables / sizeof rank_variables[0]; i++) {
        const char *value = getenv(rank_variables[i]);
        if (value != NULL && value[0] != '\0' && strcmp(value, "0") != 0)
            return 0;
    }
    return 1;
}

/* Prints "netbench: <message>" as one line on stderr (printing process only). */
static nb_cli_outcome usage_error(const char *format, ...)
{
    if (nb_cli_is_printing_process()) {
        char line[1024];
        va_list args;
        va_start(args, format);
        vsnprintf(line, sizeof line, format, args);
        va_end(args);
        fprintf(stderr, "netbench: %s\n", line);
    }
    return NB_CLI_EXIT_USAGE;
}

/* ------------------------------------------------------------------------------------------ */
/* Option table                                                                                 */
/* ------------------------------------------------------------------------------------------ */

typedef enum {
    VALUE_NONE,
    VALUE_PATH,
    VALUE_NAME,
    VALUE_COUNT,
    VALUE_REAL,
    VALUE_SIZE,
    VALUE_SIZE_LIST,
    VALUE_COUNT_LIST,
    VALUE_NAME_LIST,
} value_kind;

typedef struct {
    unsigned long long id;
    const char *long_name;
    char short_name;           /* 0: none */
    value_kind kind;
    const char *value_name;    /* shown in the help */
    const char *example;       /* shown when the value is missing */
    const char *help;
} option_spec;

static const option_spec option_specs[] = {
    {NB_OPT_SIZES, "--sizes", 0, VALUE_SIZE_LIST, "LIST", "8,64,1K",
     "comma-separated message sizes, instead of the generated list"},
    {NB_OPT_MIN_SIZE, "--min-size", 0, VALUE_SIZE, "SIZE", "8",
     "smallest message size (0 and 1 are allowed)"},
    {NB_OPT_MAX_SIZE, "--max-size", 0, VALUE_SIZE, "SIZE", "1M", "largest message size"},
    {NB_OPT_SIZES_PER_DOUBLING, "--sizes-per-doubling", 0, VALUE_COUNT, "K", "4",
     "geometric size steps per doubling of the size"},
    {NB_OPT_QUEUE_DEPTHS, "--queue-depths", 0, VALUE_COUNT_LIST, "LIST", "1,8,64",
     "queue depths q (sends in flight), comma separated"},
    {NB_OPT_G_FIT_MIN_SIZE, "--G-fit-min-size", 0, VALUE_SIZE, "SIZE", "64K",
     "smallest size used in the fit for G"},
    {NB_OPT_G_FIT_MAX_SIZE, "--G-fit-max-size", 0, VALUE_SIZE, "SIZE", "1M",
     "largest size used in the fit for G"},
    {NB_OPT_OVERHEAD_SIZE, "--overhead-size", 0, VALUE_SIZE, "SIZE", "8",
     "message size of the o_s and o_r sweeps"},
    {NB_OPT_TOLERANCE, "--tolerance", 0, VALUE_REAL, "X", "0.1",
     "relative slow-down that counts as 'longer' (0.1 = 10%)"},
    {NB_OPT_COMPUTE_STEPS, "--compute-steps", 0, VALUE_COUNT, "N", "24",
     "steps of each computation sweep"},
    {NB_OPT_MESSAGES, "--messages", 'n', VALUE_COUNT, "N", "10",
     "messages n of PRTT(n, d, s)"},
    {NB_OPT_LOOKAHEAD, "--lookahead", 0, VALUE_COUNT, "X", "4",
     "look-ahead points of the protocol-change detection"},
    {NB_OPT_PFACT, "--pfact", 0, VALUE_REAL, "F", "2.0",
     "sensitivity factor of the protocol-change detection"},
    {NB_OPT_ALGORITHMS, "--algorithms", 0, VALUE_NAME_LIST, "LIST", "aapc,random",
     "dense algorithms to run, comma separated: aapc (congestion-controlled all-to-all), "
     "pairwise (simple pairwise), cumulative (cumulative pairwise), random (random pairwise)"},
    {NB_OPT_PHASES, "--phases", 0, VALUE_COUNT, "N", "16",
     "phases of the random pairwise algorithm (new random pairs in each)"},
    {NB_OPT_LMAX, "--lmax", 0, VALUE_SIZE, "SIZE", "1M",
     "largest message length L_max (the definition: memory per process / 128, at most 128M)"},
    {NB_OPT_RANDOM_PATTERNS, "--random-patterns", 0, VALUE_COUNT, "N", "30",
     "random ring patterns averaged into b_eff"},
    {NB_OPT_COLLECTIVES, "--collectives", 0, VALUE_NAME_LIST, "LIST", "barrier,allreduce",
     "collectives to time, comma separated: barrier, bcast, reduce, allreduce, alltoall, "
     "alltoallv, gather, scatter, allgather"},
    {NB_OPT_CALLS, "--calls", 0, VALUE_COUNT, "N", "100",
     "individually timed calls per collective and size"},
    {NB_OPT_SEED, "--seed", 0, VALUE_COUNT, "N", "1",
     "seed of the random patterns (the same seed gives the same patterns)"},
    {NB_OPT_VALIDATE, "--validate", 0, VALUE_NONE, NULL, NULL,
     "validation mode: fill every message with a known pattern and check every received "
     "byte; reports errors, times nothing (never use it for performance figures)"},
    {NB_OPT_SCHEDULE, "--schedule", 0, VALUE_NAME, "NAME", "concurrent",
     "concurrent: the disjoint pairs of one round of a round-robin tournament at once, round "
     "after round (N-1 rounds; N for an odd N); sequential: one pair at a time, the others "
     "waiting (isolates every pair; N (N-1) / 2 steps)"},
    {NB_OPT_BANDWIDTH_FRACTION, "--bandwidth-fraction", 0, VALUE_REAL, "F", "0.93",
     "a pair whose bandwidth is below F x the best pair's of this run is suspect"},
    {NB_OPT_LATENCY_FACTOR, "--latency-factor", 0, VALUE_REAL, "X", "2.1",
     "a pair whose latency is above X x the lowest pair's of this run is suspect"},
    {NB_OPT_ROUNDS, "--rounds", 0, VALUE_COUNT, "K", "4",
     "quick mode: only K rounds of the tournament, drawn with --seed (the same seed, the same "
     "pairs); the nightly sample"},
    {NB_OPT_PROGRESS_EVERY, "--progress-every", 0, VALUE_REAL, "SECONDS", "60",
     "a progress line on stderr (round r of R, elapsed, estimate) at most every SECONDS; 0: "
     "after every round"},
    {NB_OPT_PRINT_SCHEDULE, "--print-schedule", 0, VALUE_COUNT, "N", "6",
     "print the rounds (with --rounds/--seed: the chosen ones) for N ranks and exit; needs no "
     "MPI (--json: as JSON)"},
    {NB_OPT_REPETITIONS, "--repetitions", 0, VALUE_COUNT, "N", "11",
     "repetitions of every measurement (min/median/max are over these)"},
    {NB_OPT_ITERATIONS, "--iterations", 0, VALUE_COUNT, "N", "10000",
     "most iterations (messages, rounds) in one repetition"},
    {NB_OPT_TIME_CAP, "--time-cap-ms", 0, VALUE_REAL, "MS", "30",
     "time one repetition aims at; caps the iterations of slow sizes"},
    {NB_OPT_TIMEOUT, "--timeout", 0, VALUE_COUNT, "SECONDS", "600",
     "watchdog: a run not finished after SECONDS (from MPI_Init to MPI_Finalize; a stopped, "
     "hung or dead rank leaves the others waiting forever) ends with one line on stderr and "
     "exit status 1; 0 turns it off"},
    {NB_OPT_JSON, "--json", 0, VALUE_NONE, NULL, NULL,
     "print the result as JSON instead of the human format"},
    {NB_OPT_JSON_FILE, "--json-file", 0, VALUE_PATH, "PATH", "result.json",
     "also write the result as JSON to PATH (atomically)"},
};
#define OPTION_COUNT (sizeof option_specs / sizeof option_specs[0])

/* ------------------------------------------------------------------------------------------ */
/* Values                                                                                       */
/* ------------------------------------------------------------------------------------------ */

int nb_parse_size(const char *text, size_t *size)
{
    if (text == NULL || text[0] < '0' || text[0] > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    unsigned long long value = strtoull(text, &end, 10);
    if (errno != 0)
        return -1;
    unsigned long long multiplier = 1;
    if (*end == 'K' || *end == 'k') {
        multiplier = 1024;
        end++;
    } else if (*end == 'M' || *end == 'm') {
        multiplier = 1024 * 1024;
        end++;
    }
    if (*end != '\0')
        return -1;
    if (value > ULLONG_MAX / multiplier || value * multiplier > (unsigned long long)SIZE_MAX)
        return -1;
    *size = (size_t)(value * multiplier);
    return 0;
}

/* "4M", "64K" or "100" */
static void format_size(size_t size, char *text, size_t length)
{
    if (size >= 1024 * 1024 && size % (1024 * 1024) == 0)
        snprintf(text, length, "%zuM", size / (1024 * 1024));
    else if (size >= 1024 && size % 1024 == 0)
        snprintf(text, length, "%zuK", size / 1024);
    else
        snprintf(text, length, "%zu", size);
}

static int parse_count(const char *text, long low, long high, long *value)
{
    if (text == NULL || text[0] < '0' || text[0] > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < low || v > high)
        return -1;
    *value = v;
    return 0;
}

static int parse_real(const char *text, double low, double high, double *value)
{
    if (text == NULL || text[0] == '\0')
        return -1;
    errno = 0;
    char *end = NULL;
    double v = strtod(text, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v) || v < low || v > high)
        return -1;
    *value = v;
    return 0;
}

static int compare_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Sorts ascending and drops duplicates; returns the new count. */
static size_t sort_unique_sizes(size_t *sizes, size_t count)
{
    qsort(sizes, count, sizeof *sizes, compare_size);
    size_t kept = 0;
    for (size_t i = 0; i < count; i++)
        if (kept == 0 || sizes[kept - 1] != sizes[i])
            sizes[kept++] = sizes[i];
    return kept;
}

static nb_cli_outcome parse_size_option(const option_spec *spec, const char *value, size_t *size)
{
    if (nb_parse_size(value, size) != 0)
        return usage_error("%s %s: not a size; use a number with an optional K or M suffix",
                           spec->long_name, value);
    if (*size > NB_MAX_MESSAGE_SIZE)
        return usage_error("%s %s: larger than the largest supported size; use at most 1024M",
                           spec->long_name, value);
    return NB_CLI_RUN;
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

static nb_cli_outcome list_item_error(const option_spec *spec, const char *value)
{
    return usage_error("%s %s: empty or overlong item; use a comma-separated list such as %s",
                       spec->long_name, value, spec->example);
}

static nb_cli_outcome parse_size_list(const option_spec *spec, const char *value,
                                      nb_options *options)
{
    size_t count = 0;
    for (const char *cursor = value; cursor != NULL;) {
        char text[64];
        size_t size = 0;
        if (next_list_item(&cursor, text, sizeof text) != 0)
            return list_item_error(spec, value);
        if (nb_parse_size(text, &size) != 0)
            return usage_error("%s %s: '%s' is not a size; use a comma-separated list of numbers "
                               "with an optional K or M suffix, such as %s",
                               spec->long_name, value, text, spec->example);
        if (size > NB_MAX_MESSAGE_SIZE)
            return usage_error("%s %s: '%s' is larger than the largest supported size; use at "
                               "most 1024M", spec->long_name, value, text);
        if (count == NB_MAX_SIZES)
            return usage_error("%s: more than %d sizes; give at most %d", spec->long_name,
                               NB_MAX_SIZES, NB_MAX_SIZES);
        options->sizes[count++] = size;
    }
    options->size_count = sort_unique_sizes(options->sizes, count);
    return NB_CLI_RUN;
}

static nb_cli_outcome parse_queue_depths(const option_spec *spec, const char *value,
                                         nb_options *options)
{
    size_t count = 0;
    for (const char *cursor = value; cursor != NULL;) {
        char text[32];
        long depth = 0;
        if (next_list_item(&cursor, text, sizeof text) != 0)
            return list_item_error(spec, value);
        if (parse_count(text, 1, 1024, &depth) != 0)
            return usage_error("%s %s: '%s' is not a queue depth; use whole numbers from 1 to "
                               "1024, such as %s", spec->long_name, value, text, spec->example);
        if (count == NB_MAX_QUEUE_DEPTHS)
            return usage_error("%s: more than %d queue depths; give at most %d",
                               spec->long_name, NB_MAX_QUEUE_DEPTHS, NB_MAX_QUEUE_DEPTHS);
        int duplicate = 0;
        for (size_t i = 0; i < count; i++)
            duplicate |= options->queue_depths[i] == (int)depth;
        if (!duplicate)
            options->queue_depths[count++] = (int)depth;
    }
    /* ascending (insertion sort; at most NB_MAX_QUEUE_DEPTHS entries) */
    for (size_t i = 1; i < count; i++)
        for (size_t j = i; j > 0 && options->queue_depths[j - 1] > options->queue_depths[j]; j--) {
            int t = options->queue_depths[j];
            options->queue_depths[j] = options->queue_depths[j - 1];
            options->queue_depths[j - 1] = t;
        }
    options->queue_depth_count = count;
    return NB_CLI_RUN;
}

/* --algorithms / --collectives: names into a bit mask. */
static nb_cli_outcome parse_name_list(const option_spec *spec, const char *value,
                                      unsigned *mask)
{
    int dense = spec->id == NB_OPT_ALGORITHMS;
    int count = dense ? NB_DENSE_ALGORITHM_COUNT : NB_COLL_COUNT;
    char names[256] = "";
    for (int i = 0; i < count; i++) {
        strncat(names, dense ? nb_dense_algorithm_name((nb_dense_algorithm)i)
                             : nb_collective_name((nb_collective)i),
                sizeof names - strlen(names) - 1);
        if (i + 1 < count)
            strncat(names, ",", sizeof names - strlen(names) - 1);
    }
    *mask = 0;
    for (const char *cursor = value; cursor != NULL;) {
        char text[64];
        if (next_list_item(&cursor, text, sizeof text) != 0)
            return list_item_error(spec, value);
        int found = -1;
        for (int i = 0; i < count; i++)
            if (strcmp(text, dense ? nb_dense_algorithm_name((nb_dense_algorithm)i)
                                   : nb_collective_name((nb_collective)i)) == 0)
                found = i;
        if (found < 0)
            return usage_error("%s %s: unknown name '%s'; choose from %s", spec->long_name, value,
                               text, names);
        *mask |= 1u << found;
    }
    return NB_CLI_RUN;
}

/* The JSON file is written at the end of a run; a path that cannot be written should fail now,
 * before any MPI traffic, not after minutes of measuring. */
static nb_cli_outcome check_json_file(const option_spec *spec, const char *path)
{
    if (path[0] == '\0')
        return usage_error("%s: empty path; give a file name such as %s", spec->long_name,
                           spec->example);
    char directory[4096];
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(directory, sizeof directory, ".");
    else if (slash == path)
        snprintf(directory, sizeof directory, "/");
    else
        snprintf(directory, sizeof directory, "%.*s", (int)(slash - path), path);
    if (slash != NULL && slash[1] == '\0')
        return usage_error("%s %s: names a directory; give a file name", spec->long_name, path);
    if (access(directory, W_OK | X_OK) != 0)
        return usage_error("%s %s: cannot write into directory %s (%s); choose a writable path",
                           spec->long_name, path, directory, strerror(errno));
    /* An existing PATH is replaced by rename() at the end, which neither a directory nor a
     * read-only file would stop in time. access() says "writable" to root whatever the mode,
     * so the mode bits are checked as well, and an open for appending (which neither creates
     * nor truncates) proves that this process may write it. */
    struct stat existing;
    if (stat(path, &existing) != 0) {
        if (errno == ENOENT)
            return NB_CLI_RUN;
        return usage_error("%s %s: cannot check the path (%s); choose a writable path",
                           spec->long_name, path, strerror(errno));
    }
    if (S_ISDIR(existing.st_mode))
        return usage_error("%s %s: names an existing directory; give a file name, e.g. %s/%s",
                           spec->long_name, path, path, spec->example);
    if (!S_ISREG(existing.st_mode))
        return usage_error("%s %s: exists and is not a regular file (it would be replaced); "
                           "give a file name", spec->long_name, path);
    if ((existing.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0)
        return usage_error("%s %s: the existing file is read-only (mode %04o) and would be "
                           "replaced; make it writable (chmod u+w) or choose another path",
                           spec->long_name, path, (unsigned)(existing.st_mode & 07777));
    int fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return usage_error("%s %s: the existing file cannot be written (%s); make it writable "
                           "or choose another path", spec->long_name, path, strerror(errno));
    close(fd);
    return NB_CLI_RUN;
}

/* ------------------------------------------------------------------------------------------ */
/* Memory                                                                                       */
/* ------------------------------------------------------------------------------------------ */

/* A launcher variable holding a positive count, or 0. */
static unsigned long long launcher_count(const char *name)
{
    const char *value = getenv(name);
    long count = 0;
    if (value == NULL || parse_count(value, 1, 1L << 30, &count) != 0)
        return 0;
    return (unsigned long long)count;
}

/* The message buffers each rank allocates (as the methods do), described in `how`; 0 when the
 * need depends on the rank count (collectives: checked by the method). */
static unsigned long long buffer_need(const nb_command *command, const nb_options *o, char *how,
                                      size_t length)
{
    unsigned long long largest = o->size_count > 0 ? o->sizes[o->size_count - 1] : o->max_size;
    char text[32];
    if (command->accepted_options & NB_OPT_QUEUE_DEPTHS) {
        /* flood: one slot per message in flight, each rounded up to 64 bytes */
        unsigned long long deepest = 1, stride = (largest + 63) / 64 * 64;
        for (size_t k = 0; k < o->queue_depth_count; k++)
            if ((unsigned long long)o->queue_depths[k] > deepest)
                deepest = (unsigned long long)o->queue_depths[k];
        format_size((size_t)largest, text, sizeof text);
        snprintf(how, length, "message size %s x queue depth %llu = %llu bytes", text, deepest,
                 (stride > 0 ? stride : 64) * deepest);
        return (stride > 0 ? stride : 64) * deepest;
    }
    if (command->accepted_options & NB_OPT_LMAX) {
        if (o->lmax == 0)
            return 0; /* from the memory per process: fits by construction */
        unsigned long long slots = o->validate ? 2 : 6, slot = o->validate ? o->lmax
                                                                            : o->lmax + 16;
        format_size(o->lmax, text, sizeof text);
        snprintf(how, length, "2 buffers x %llu slots x L_max %s = %llu bytes", slots, text,
                 2 * slots * slot);
        return 2 * slots * slot;
    }
    if (command->accepted_options & NB_OPT_COLLECTIVES)
        return 0;
    if ((command->accepted_options & NB_OPT_OVERHEAD_SIZE) && o->overhead_size > largest)
        largest = o->overhead_size;
    format_size((size_t)largest, text, sizeof text);
    snprintf(how, length, "send and receive buffers of %s = %llu bytes", text, 2 * largest);
    return 2 * largest;
}

/* The buffers must fit in this host's memory before MPI_Init, not fail after it in MPI_Abort.
 * With the launcher's count of ranks on this host (Open MPI, MPICH's hydra), every
 * communicating rank there needs its buffers at once. */
static nb_cli_outcome check_buffer_memory(const nb_command *command, const nb_options *options)
{
    char how[256] = "";
    unsigned long long need = buffer_need(command, options, how, sizeof how);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (need == 0 || pages <= 0 || page <= 0)
        return NB_CLI_RUN;
    unsigned long long memory = (unsigned long long)pages * (unsigned long long)page;
    unsigned long long local = launcher_count("OMPI_COMM_WORLD_LOCAL_SIZE");
    if (local == 0)
        local = launcher_count("MPI_LOCALNRANKS");
    if (local == 0)
        local = 1;
    if (!command->all_ranks && local > 2)
        local = 2; /* only ranks 0 and 1 allocate */
    if (need <= memory / local)
        return NB_CLI_RUN;
    char ranks[64] = "";
    if (local > 1)
        snprintf(ranks, sizeof ranks, " x %llu ranks on this host", local);
    return usage_error("%s: the message buffers need %s per rank%s, more than the %llu bytes of "
                       "memory of this host; use smaller --sizes/--max-size%s", command->name, how,
                       ranks, memory,
                       (command->accepted_options & NB_OPT_QUEUE_DEPTHS) ? " or --queue-depths"
                       : (command->accepted_options & NB_OPT_LMAX) ? " (--lmax)" : "");
}

/* ------------------------------------------------------------------------------------------ */
/* Size lists                                                                                   */
/* ------------------------------------------------------------------------------------------ */

static void add_size(nb_options *options, size_t size)
{
    if (options->size_count < NB_MAX_SIZES)
        options->sizes[options->size_count++] = size;
}

static void generate_sizes(nb_size_progression progression, nb_options *options)
{
    size_t min = options->min_size, max = options->max_size;
    options->size_count = 0;
    switch (progression) {
    case NB_SIZES_POWERS_OF_2: {
        add_size(options, min);
        size_t p = 1;
        while (p <= min)
            p *= 2;
        for (; p < max; p *= 2)
            add_size(options, p);
        break;
    }
    case NB_SIZES_POWERS_OF_4: {
        add_size(options, min);
        for (size_t p = min == 0 ? 1 : min * 4; p < max; p *= 4)
            add_size(options, p);
        break;
    }
    case NB_SIZES_GEOMETRIC: {
        /* 1 B always (L = PRTT(1,0,1)/2), then round(2^(k/K)) up to max. */
        add_size(options, 1);
        for (int k = 1;; k++) {
            double s = round(pow(2.0, (double)k / options->sizes_per_doubling));
            if (s >= (double)max)
                break;
            add_size(options, (size_t)s);
        }
        break;
    }
    }
    add_size(options, max);
    options->size_count = sort_unique_sizes(options->sizes, options->size_count);
}

/* ------------------------------------------------------------------------------------------ */
/* Help                                                                                         */
/* ------------------------------------------------------------------------------------------ */

static void format_default(unsigned long long id, const nb_options *d, char *text, size_t length)
{
    char a[32];
    text[0] = '\0';
    switch (id) {
    case NB_OPT_SIZES:
        break;
    case NB_OPT_MIN_SIZE:
        format_size(d->min_size, a, sizeof a);
        snprintf(text, length, "default %s", a);
        break;
    case NB_OPT_MAX_SIZE:
        format_size(d->max_size, a, sizeof a);
        snprintf(text, length, "default %s", a);
        break;
    case NB_OPT_SIZES_PER_DOUBLING:
        snprintf(text, length, "default %d", d->sizes_per_doubling);
        break;
    case NB_OPT_QUEUE_DEPTHS: {
        size_t used = (size_t)snprintf(text, length, "default ");
        for (size_t i = 0; i < d->queue_depth_count && used < length; i++)
            used += (size_t)snprintf(text + used, length - used, "%s%d", i ? "," : "",
                                     d->queue_depths[i]);
        break;
    }
    case NB_OPT_G_FIT_MIN_SIZE:
        format_size(d->G_fit_min_size, a, sizeof a);
        snprintf(text, length, "default %s", a);
        break;
    case NB_OPT_G_FIT_MAX_SIZE:
        format_size(d->G_fit_max_size, a, sizeof a);
        snprintf(text, length, "default %s", a);
        break;
    case NB_OPT_OVERHEAD_SIZE:
        format_size(d->overhead_size, a, sizeof a);
        snprintf(text, length, "default %s", a);
        break;
    case NB_OPT_TOLERANCE:
        snprintf(text, length, "default %g", d->tolerance);
        break;
    case NB_OPT_COMPUTE_STEPS:
        snprintf(text, length, "default %d", d->compute_steps);
        break;
    case NB_OPT_MESSAGES:
        snprintf(text, length, "default %d", d->messages);
        break;
    case NB_OPT_LOOKAHEAD:
        snprintf(text, length, "default %d", d->lookahead);
        break;
    case NB_OPT_PFACT:
        snprintf(text, length, "default %g", d->pfact);
        break;
    case NB_OPT_REPETITIONS:
        snprintf(text, length, "default %d", d->repetitions);
        break;
    case NB_OPT_ITERATIONS:
        snprintf(text, length, "default %ld", d->iterations);
        break;
    case NB_OPT_TIME_CAP:
        snprintf(text, length, "default %g", d->time_cap_ms);
        break;
    case NB_OPT_PHASES:
        snprintf(text, length, "default %d", d->phases);
        break;
    case NB_OPT_RANDOM_PATTERNS:
        snprintf(text, length, "default %d", d->random_patterns);
        break;
    case NB_OPT_CALLS:
        snprintf(text, length, "default %d", d->calls);
        break;
    case NB_OPT_TIMEOUT:
        snprintf(text, length, "default %d", NB_DEFAULT_TIMEOUT_S);
        break;
    case NB_OPT_SCHEDULE:
        snprintf(text, length, "default %s",
                 d->schedule == NB_SCHEDULE_SEQUENTIAL ? "sequential" : "concurrent");
        break;
    case NB_OPT_BANDWIDTH_FRACTION:
        snprintf(text, length, "default %g", d->bandwidth_fraction);
        break;
    case NB_OPT_LATENCY_FACTOR:
        snprintf(text, length, "default %g", d->latency_factor);
        break;
    case NB_OPT_ROUNDS:
        snprintf(text, length, "default: every round, the full map");
        break;
    case NB_OPT_PROGRESS_EVERY:
        snprintf(text, length, "default %g", d->progress_every_s);
        break;
    case NB_OPT_SEED:
        snprintf(text, length, "default %llu", d->seed);
        break;
    case NB_OPT_LMAX:
        if (d->lmax == 0) {
            snprintf(text, length, "default: memory per process / 128");
        } else {
            format_size(d->lmax, a, sizeof a);
            snprintf(text, length, "default %s", a);
        }
        break;
    case NB_OPT_ALGORITHMS:
    case NB_OPT_COLLECTIVES: {
        unsigned mask = id == NB_OPT_ALGORITHMS ? d->algorithms : d->collectives;
        int count = id == NB_OPT_ALGORITHMS ? NB_DENSE_ALGORITHM_COUNT : NB_COLL_COUNT;
        size_t used = (size_t)snprintf(text, length, "default ");
        int first = 1;
        for (int i = 0; i < count && used < length; i++)
            if (mask & (1u << i)) {
                const char *name = id == NB_OPT_ALGORITHMS
                                       ? nb_dense_algorithm_name((nb_dense_algorithm)i)
                                       : nb_collective_name((nb_collective)i);
                used += (size_t)snprintf(text + used, length - used, "%s%s", first ? "" : ",",
                                         name);
                first = 0;
            }
        break;
    }
    default:
        break;
    }
}

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

static void print_command_help(const nb_command *command)
{
    printf("usage: mpirun -np %s --bind-to core netbench %s [OPTIONS]\n\n",
           command->all_ranks ? "P" : "2", command->name);
    printf("%s\n\noptions:\n", command->description);
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const option_spec *spec = &option_specs[i];
        if (!((command->accepted_options | NB_OPT_ALWAYS) & spec->id))
            continue;
        char name[64], defaults[256];
        if (spec->short_name)
            snprintf(name, sizeof name, "-%c, %s%s%s", spec->short_name, spec->long_name,
                     spec->value_name ? " " : "", spec->value_name ? spec->value_name : "");
        else
            snprintf(name, sizeof name, "%s%s%s", spec->long_name, spec->value_name ? " " : "",
                     spec->value_name ? spec->value_name : "");
        format_default(spec->id, &command->defaults, defaults, sizeof defaults);
        char text[768];
        snprintf(text, sizeof text, "%s%s%s%s", spec->help, defaults[0] ? " (" : "", defaults,
                 defaults[0] ? ")" : "");
        print_wrapped(name, text);
    }
    print_wrapped("-h, --help", "this text");
    printf("\nSizes take a K or M suffix (binary: 1K = 1024). Output: docs/output-format.md.\n"
           "Exit status: 0 done (check 'status'), 1 runtime failure or --timeout, 2 wrong "
           "usage.\n");
}

static void print_top_help(const nb_command *const *commands, size_t count)
{
    printf("netbench %s - MPI interconnect benchmarks: latency, bandwidth, LogP/LogGP, dense\n"
           "patterns, b_eff and collectives\n\n", NETBENCH_VERSION);
    printf("usage: mpirun -np 2 --bind-to core netbench SUBCOMMAND [OPTIONS]\n"
           "       netbench SUBCOMMAND --help\n"
           "       netbench --help | --version\n\nsubcommands:\n");
    for (size_t i = 0; i < count; i++)
        printf("  %-10s %s\n", commands[i]->name, commands[i]->summary);
    printf("\nPoint-to-point methods measure ranks 0 and 1; further ranks wait at a barrier.\n"
           "dense, beff and collectives use every rank. Ranks poll busily, so they must be\n"
           "bound to different cores (Open MPI: --bind-to core, MPICH: -bind-to core); a\n"
           "warning says when they are not.\n"
           "Only rank 0 prints: the human format by default, JSON with --json, and\n"
           "--json-file PATH writes JSON as well (format: docs/output-format.md).\n"
           "Every run ends after --timeout SECONDS (default %d, 0 = never) with one line\n"
           "on stderr and status 1, so that a stopped or hung rank cannot stall it forever.\n"
           "Exit status: 0 done (check 'status'), 1 runtime failure or timeout, 2 wrong usage.\n",
           NB_DEFAULT_TIMEOUT_S);
}

int nb_cli_pick_command(int argc, char **argv, const nb_command *const *commands,
                        size_t command_count, nb_cli_outcome *outcome)
{
    const char *first = argc > 1 ? argv[1] : NULL;
    char names[256] = "";
    for (size_t i = 0; i < command_count; i++) {
        strncat(names, commands[i]->name, sizeof names - strlen(names) - 1);
        if (i + 1 < command_count)
            strncat(names, ", ", sizeof names - strlen(names) - 1);
    }
    if (first == NULL) {
        *outcome = usage_error("no subcommand given; use one of %s (netbench --help)", names);
        return -1;
    }
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        if (nb_cli_is_printing_process())
            print_top_help(commands, command_count);
        *outcome = NB_CLI_EXIT_OK;
        return -1;
    }
    if (strcmp(first, "--version") == 0) {
        if (nb_cli_is_printing_process())
            printf("netbench %s\n", NETBENCH_VERSION);
        *outcome = NB_CLI_EXIT_OK;
        return -1;
    }
    for (size_t i = 0; i < command_count; i++)
        if (strcmp(first, commands[i]->name) == 0) {
            *outcome = NB_CLI_RUN;
            return (int)i;
        }
    *outcome = usage_error("unknown subcommand '%s'; use one of %s (netbench --help)", first,
                           names);
    return -1;
}

/* ------------------------------------------------------------------------------------------ */
/* Parsing                                                                                      */
/* ------------------------------------------------------------------------------------------ */

static const option_spec *find_option(const char *name, size_t name_length)
{
    for (size_t i = 0; i < OPTION_COUNT; i++) {
        const option_spec *spec = &option_specs[i];
        if (strlen(spec->long_name) == name_length &&
            strncmp(spec->long_name, name, name_length) == 0)
            return spec;
        if (spec->short_name && name_length == 2 && name[0] == '-' &&
            name[1] == spec->short_name)
            return spec;
    }
    return NULL;
}

static nb_cli_outcome apply_option(const option_spec *spec, const char *value,
                                   nb_options *options)
{
    long count = 0;
    double real = 0.0;
    switch (spec->id) {
    case NB_OPT_JSON:
        options->json_to_stdout = 1;
        return NB_CLI_RUN;
    case NB_OPT_JSON_FILE:
        options->json_file = value;
        return check_json_file(spec, value);
    case NB_OPT_REPETITIONS:
        if (parse_count(value, 1, NB_MAX_REPETITIONS, &count) != 0)
            return usage_error("%s %s: not a repetition count; use a whole number from 1 to %d",
                               spec->long_name, value, NB_MAX_REPETITIONS);
        options->repetitions = (int)count;
        return NB_CLI_RUN;
    case NB_OPT_ITERATIONS:
        if (parse_count(value, 1, 1000000000L, &count) != 0)
            return usage_error("%s %s: not an iteration count; use a whole number from 1 to "
                               "1000000000", spec->long_name, value);
        options->iterations = count;
        return NB_CLI_RUN;
    case NB_OPT_TIME_CAP:
        if (parse_real(value, 0.001, 600000.0, &real) != 0)
            return usage_error("%s %s: not a time in milliseconds; use a number from 0.001 to "
                               "600000", spec->long_name, value);
        options->time_cap_ms = real;
        return NB_CLI_RUN;
    case NB_OPT_SIZES:
        return parse_size_list(spec, value, options);
    case NB_OPT_MIN_SIZE:
        return parse_size_option(spec, value, &options->min_size);
    case NB_OPT_MAX_SIZE:
        return parse_size_option(spec, value, &options->max_size);
    case NB_OPT_SIZES_PER_DOUBLING:
        if (parse_count(value, 1, 64, &count) != 0)
            return usage_error("%s %s: not a step count; use a whole number from 1 to 64",
                               spec->long_name, value);
        options->sizes_per_doubling = (int)count;
        return NB_CLI_RUN;
    case NB_OPT_QUEUE_DEPTHS:
        return parse_queue_depths(spec, value, options);
    case NB_OPT_G_FIT_MIN_SIZE:
        return parse_size_option(spec, value, &options->G_fit_min_size);
    case NB_OPT_G_FIT_MAX_SIZE:
        return parse_size_option(spec, value, &options->G_fit_max_size);
    case NB_OPT_OVERHEAD_SIZE:
        return parse_size_option(spec, value, &options->overhead_size);
    case NB_OPT_TOLERANCE:
        if (parse_real(value, 0.001, 1.0, &real) != 0)
            return usage_error("%s %s: not a tolerance; use a fraction from 0.001 to 1 (0.1 = "
                               "10%%)", spec->long_name, value);
        options->tolerance = real;
        return NB_CLI_RUN;
    case NB_OPT_COMPUTE_STEPS:
        if (parse_count(value, 4, 1000, &count) != 0)
            return usage_error("%s %s: not a step count; use a whole number from 4 to 1000",
                               spec->long_name, value);
        options->compute_steps = (int)count;
        return NB_CLI_RUN;
    case NB_OPT_MESSAGES:
        if (parse_count(value, 2, 100000, &count) != 0)
            return usage_error("%s %s: not a message count; use a whole number from 2 to 100000",
                               spec->long_name, value);
        options->messages = (int)count;
        return NB_CLI_RUN;
    case NB_OPT_LOOKAHEAD:
        if (parse_count(value, 1, 64, &count) != 0)
            return usage_error("%s %s: not a look-ahead; use a whole number from 1 to 64",
                               spec->long_name, value);
        options->lookahead = (int)count;
        return NB_CLI_RUN;
    case NB_OPT_PFACT:
        if (parse_real(value, 1.0, 1000.0, &real) != 0)
            return usage_error("%s %s: not a factor; use a number from 1 to 1000 (Hoefler et al. "
                               "use 2.0)", spec->long_name, value);
        options->pfact = real;
        return NB_CLI_RUN;
    case NB_OPT_VALIDATE:
        options->validate = 1;
        return NB_CLI_RUN;
    case NB_OPT_SEED:
        if (parse_count(value, 0, 2147483647L, &count) != 0)
            return usage_error("%s %s: not a seed; use a whole number from 0 to 2147483647",
                               spec->long_name, value);
        options->seed = (unsigned long long)count;
        return NB_CLI_RUN;
    case NB_OPT_PHASES:
        if (parse_count(value, 1, 100000, &count) != 0)
            return usage_error("%s %s: not a phase count; use a whole number from 1 to 100000",
                               spec->long_name, value);
        options->phases = (int)count;
        return NB_CLI_RUN;
    case NB_OPT_RANDOM_PATTERNS:
        if (parse_count(value, 1, 1000, &count) != 0)
            return usage_error("%s %s: not a pattern count; use a whole number from 1 to 1000",
                               spec->long_name, value);
        options->random_patterns = (int)count;
        return NB_CLI_RUN;
    case NB_OPT_CALLS:
        if (parse_count(value, 3, 100000, &count) != 0)
            return usage_error("%s %s: not a call count; use a whole number from 3 to 100000",
                               spec->long_name, value);
        options->calls = (int)count;
        return NB_CLI_RUN;
    case NB_OPT_TIMEOUT:
        if (parse_count(value, 0, NB_MAX_TIMEOUT_S, &count) != 0)
            return usage_error("%s %s: not a time in seconds; use a whole number from 0 (no "
                               "watchdog) to %d", spec->long_name, value, NB_MAX_TIMEOUT_S);
        options->timeout_s = count;
        return NB_CLI_RUN;
    case NB_OPT_SCHEDULE:
        if (strcmp(value, "concurrent") == 0)
            options->schedule = NB_SCHEDULE_CONCURRENT;
        else if (strcmp(value, "sequential") == 0)
            options->schedule = NB_SCHEDULE_SEQUENTIAL;
        else
            return usage_error("%s %s: unknown schedule; choose concurrent or sequential",
                               spec->long_name, value);
        return NB_CLI_RUN;
    case NB_OPT_BANDWIDTH_FRACTION:
        if (parse_real(value, 0.01, 1.0, &real) != 0)
            return usage_error("%s %s: not a fraction; use a number from 0.01 to 1 (0.93 = 93 %% "
                               "of the best pair)", spec->long_name, value);
        options->bandwidth_fraction = real;
        return NB_CLI_RUN;
    case NB_OPT_LATENCY_FACTOR:
        if (parse_real(value, 1.0, 1000.0, &real) != 0)
            return usage_error("%s %s: not a factor; use a number from 1 to 1000 (2.1 = 2.1 x "
                               "the lowest pair)", spec->long_name, value);
        options->latency_factor = real;
        return NB_CLI_RUN;
    case NB_OPT_ROUNDS:
        if (parse_count(value, 1, 1000000, &count) != 0)
            return usage_error("%s %s: not a round count; use a whole number from 1 to 1000000",
                               spec->long_name, value);
        options->rounds = (int)count;
        return NB_CLI_RUN;
    case NB_OPT_PROGRESS_EVERY:
        if (parse_real(value, 0.0, 86400.0, &real) != 0)
            return usage_error("%s %s: not a time in seconds; use a number from 0 to 86400",
                               spec->long_name, value);
        options->progress_every_s = real;
        return NB_CLI_RUN;
    case NB_OPT_PRINT_SCHEDULE:
        if (parse_count(value, 2, NB_MAX_SCHEDULE_RANKS, &count) != 0)
            return usage_error("%s %s: not a rank count; use a whole number from 2 to %d",
                               spec->long_name, value, NB_MAX_SCHEDULE_RANKS);
        options->print_schedule_ranks = (int)count;
        return NB_CLI_RUN;
    case NB_OPT_LMAX: {
        nb_cli_outcome outcome = parse_size_option(spec, value, &options->lmax);
        if (outcome == NB_CLI_RUN && options->lmax < 8192)
            return usage_error("%s %s: too small; b_eff needs L_max >= 8K (8 geometric steps "
                               "above 4K)", spec->long_name, value);
        if (outcome == NB_CLI_RUN && options->lmax > ((size_t)256 << 20))
            return usage_error("%s %s: too large; use at most 256M (MPI_Alltoallv "
                               "displacements into 6 x L_max buffers are int)", spec->long_name,
                               value);
        return outcome;
    }
    case NB_OPT_ALGORITHMS:
        return parse_name_list(spec, value, &options->algorithms);
    case NB_OPT_COLLECTIVES:
        return parse_name_list(spec, value, &options->collectives);
    default:
        return usage_error("%s: internal error: option without a handler", spec->long_name);
    }
}

nb_cli_outcome nb_cli_parse(int argc, char **argv, const nb_command *command,
                            nb_options *options)
{
    *options = command->defaults;
    options->timeout_s = NB_DEFAULT_TIMEOUT_S;
    options->argc = argc;
    options->argv = argv;
    options->size_count = 0;
    int sizes_given = 0, range_given = 0;

    for (int i = 2; i < argc; i++) {
        const char *argument = argv[i];
        if (strcmp(argument, "--help") == 0 || strcmp(argument, "-h") == 0) {
            if (nb_cli_is_printing_process())
                print_command_help(command);
            return NB_CLI_EXIT_OK;
        }
    }

    for (int i = 2; i < argc; i++) {
        const char *argument = argv[i];
        if (argument[0] != '-' || argument[1] == '\0')
            return usage_error("%s: unexpected argument '%s'; options start with '-' (netbench %s "
                               "--help)", command->name, argument, command->name);
        const char *equals = strchr(argument, '=');
        size_t name_length = equals ? (size_t)(equals - argument) : strlen(argument);
        const option_spec *spec = find_option(argument, name_length);
        if (spec == NULL)
            return usage_error("%s: unknown option '%.*s'; see netbench %s --help",
                               command->name, (int)name_length, argument, command->name);
        if (!((command->accepted_options | NB_OPT_ALWAYS) & spec->id))
            return usage_error("%s: option %s does not apply to %s; see netbench %s --help",
                               command->name, spec->long_name, command->name, command->name);
        const char *value = NULL;
        if (spec->kind == VALUE_NONE) {
            if (equals != NULL)
                return usage_error("%s takes no value; write just %s", spec->long_name,
                                   spec->long_name);
        } else if (equals != NULL) {
            value = equals + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            return usage_error("%s needs a value; e.g. %s %s", spec->long_name, spec->long_name,
                               spec->example);
        }
        if (value != NULL && value[0] == '\0')
            return usage_error("%s: empty value; e.g. %s %s", spec->long_name, spec->long_name,
                               spec->example);
        /* Errors name the option as it was typed (-n or --messages). */
        option_spec as_typed = *spec;
        char typed[64];
        snprintf(typed, sizeof typed, "%.*s", (int)name_length, argument);
        as_typed.long_name = typed;
        nb_cli_outcome outcome = apply_option(&as_typed, value, options);
        if (outcome != NB_CLI_RUN)
            return outcome;
        if (spec->id == NB_OPT_SIZES)
            sizes_given = 1;
        if (spec->id == NB_OPT_MIN_SIZE || spec->id == NB_OPT_MAX_SIZE)
            range_given = 1;
    }

    if (sizes_given && range_given)
        return usage_error("--sizes and --min-size/--max-size exclude each other; give either "
                           "a list or a range");
    if (options->min_size > options->max_size) {
        char a[32], b[32];
        format_size(options->min_size, a, sizeof a);
        format_size(options->max_size, b, sizeof b);
        return usage_error("--min-size %s is larger than --max-size %s; make --min-size <= "
                           "--max-size", a, b);
    }
    if (command->progression == NB_SIZES_GEOMETRIC && options->max_size < 2)
        return usage_error("--max-size %zu: too small for a fit; use at least 2", options->max_size);
    if (!sizes_given)
        generate_sizes(command->progression, options);
    else if (command->progression == NB_SIZES_GEOMETRIC) {
        /* L = PRTT(1,0,1)/2 always needs the 1-byte point. */
        add_size(options, 1);
        options->size_count = sort_unique_sizes(options->sizes, options->size_count);
    }
    if (options->size_count > 0)
        options->max_size = options->sizes[options->size_count - 1];
    if (options->size_count > 0 && (command->accepted_options & NB_OPT_SIZES))
        options->min_size = options->sizes[0];
    return check_buffer_memory(command, options);
}
