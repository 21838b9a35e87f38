/* options.c - the shared options, the values options take (sizes, whole and real numbers), the
 * option lists of a method and the ranges they are checked against; the one-line usage errors.
 * Knows no method; no MPI in here (cli.h). */
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

int cli_quiet_usage = 0;

static void vusage(const char *format, va_list args)
{
    if (nb_cli_is_printing_process() && !cli_quiet_usage) {
        char line[1024];
        vsnprintf(line, sizeof line, format, args);
        fprintf(stderr, "netbench: %s\n", line);
    }
}

int nb_usage_error(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vusage(format, args);
    va_end(args);
    return NB_EXIT_USAGE;
}

int nb_size_order_error(const char *prefix, const char *low_option, size_t low,
                        const char *high_option, size_t high)
{
    if (low <= high)
        return 0;
    char a[32], b[32];
    nb_format_size(low, a, sizeof a);
    nb_format_size(high, b, sizeof b);
    return nb_usage_error("%s%s %s is larger than %s %s; make %s <= %s", prefix, low_option, a,
                          high_option, b, low_option, high_option);
}

nb_cli_outcome cli_usage_error(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vusage(format, args);
    va_end(args);
    return NB_CLI_EXIT_USAGE;
}

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

void nb_format_size(size_t size, char *text, size_t length)
{
    if (size >= 1024 * 1024 && size % (1024 * 1024) == 0)
        snprintf(text, length, "%zuM", size / (1024 * 1024));
    else if (size >= 1024 && size % 1024 == 0)
        snprintf(text, length, "%zuK", size / 1024);
    else
        snprintf(text, length, "%zu", size);
}

/* A whole number, signed: "-1" is a number out of range, not a malformed one. */
int cli_parse_whole(const char *text, long *value)
{
    if (text == NULL)
        return -1;
    const char *digits = text[0] == '-' ? text + 1 : text;
    if (digits[0] < '0' || digits[0] > '9')
        return -1;
    errno = 0;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *value = v;
    return 0;
}

int cli_parse_real(const char *text, double *value)
{
    if (text == NULL || text[0] == '\0')
        return -1;
    errno = 0;
    char *end = NULL;
    double v = strtod(text, &end);
    if (errno != 0 || *end != '\0' || !isfinite(v))
        return -1;
    *value = v;
    return 0;
}

static int compare_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

size_t nb_sort_unique_sizes(size_t *sizes, size_t count)
{
    qsort(sizes, count, sizeof *sizes, compare_size);
    size_t kept = 0;
    for (size_t i = 0; i < count; i++)
        if (kept == 0 || sizes[kept - 1] != sizes[i])
            sizes[kept++] = sizes[i];
    return kept;
}

unsigned long long nb_launcher_count(const char *name)
{
    const char *value = getenv(name);
    long count = 0;
    if (value == NULL || cli_parse_whole(value, &count) != 0 || count < 1 || count > (1L << 30))
        return 0;
    return (unsigned long long)count;
}

/* ------------------------------------------------------------------------------------------ */
/* The shared options                                                                           */
/* ------------------------------------------------------------------------------------------ */

static const char *check_json_file(const void *value);

const nb_option cli_common_options[NB_COMMON_COUNT] = {
    [NB_COMMON_SIZES] = {
        .name = "--sizes", .type = NB_OPTION_SIZE_LIST, NB_OPTION_FIELD(sizes),
        .count_offset = offsetof(nb_options, size_count), .capacity = NB_MAX_SIZES,
        .min = 0, .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "LIST", .example = "8,64,1K",
        .default_text = "the list generated from the size range",
        .help = "comma-separated message sizes, instead of the generated list"},
    [NB_COMMON_MIN_SIZE] = {
        .name = "--min-size", .type = NB_OPTION_SIZE, NB_OPTION_FIELD(min_size), .min = 0,
        .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .example = "8",
        .help = "smallest message size (0 and 1 are allowed)"},
    [NB_COMMON_MAX_SIZE] = {
        .name = "--max-size", .type = NB_OPTION_SIZE, NB_OPTION_FIELD(max_size), .min = 0,
        .max = (double)NB_MAX_MESSAGE_SIZE, .value_name = "SIZE", .example = "1M",
        .help = "largest message size"},
    [NB_COMMON_REPETITIONS] = {
        .name = "--repetitions", .type = NB_OPTION_INT, NB_OPTION_FIELD(repetitions), .min = 1,
        .max = NB_MAX_REPETITIONS, .value_name = "N", .example = "11",
        .help = "repetitions of every measurement (min/median/max are over these)"},
    [NB_COMMON_ITERATIONS] = {
        .name = "--iterations", .type = NB_OPTION_LONG, NB_OPTION_FIELD(iterations), .min = 1,
        .max = 1e9, .value_name = "N", .example = "10000",
        .help = "most iterations (messages, rounds) in one repetition"},
    [NB_COMMON_TIME_CAP] = {
        .name = "--time-cap-ms", .type = NB_OPTION_DOUBLE, NB_OPTION_FIELD(time_cap_ms),
        .min = 0.001, .max = 600000.0, .value_name = "MS", .example = "30",
        .help = "time one repetition aims at; caps the iterations of slow sizes"},
    [NB_COMMON_SEED] = {
        .name = "--seed", .type = NB_OPTION_LONG, NB_OPTION_FIELD(seed), .min = 0,
        .max = 2147483647.0, .value_name = "N", .example = "1",
        .help = "seed of the random patterns (the same seed gives the same patterns)"},
    [NB_COMMON_VALIDATE] = {
        .name = "--validate", .type = NB_OPTION_FLAG, NB_OPTION_FIELD(validate),
        .help = "validation mode: fill every message with a known pattern and check every "
                "received byte; reports errors, times nothing (never use it for performance "
                "figures)"},
    [NB_COMMON_TIMEOUT] = {
        .name = "--timeout", .type = NB_OPTION_LONG, NB_OPTION_FIELD(timeout_s), .min = 0,
        .max = NB_MAX_TIMEOUT_S, .value_name = "SECONDS", .example = "600",
        .default_value = "600", .range_note = "0: no watchdog",
        .help = "watchdog: a run not finished after SECONDS (from MPI_Init to MPI_Finalize; a "
                "stopped, hung or dead rank leaves the others waiting forever) ends with one "
                "line on stderr and exit status 1; 0 turns it off"},
    [NB_COMMON_JSON] = {
        .name = "--json", .type = NB_OPTION_FLAG, NB_OPTION_FIELD(json_to_stdout),
        .help = "print the result as JSON instead of the human format"},
    [NB_COMMON_JSON_FILE] = {
        .name = "--json-file", .type = NB_OPTION_STRING, NB_OPTION_FIELD(json_file),
        .value_name = "PATH", .example = "result.json", .check = check_json_file,
        .default_text = "none",
        .help = "also write the result as JSON to PATH (atomically)"},
    [NB_COMMON_TRANSPORT_EVIDENCE] = {
        .name = "--transport-evidence", .type = NB_OPTION_FLAG,
        NB_OPTION_FIELD(transport_evidence),
        .help = "rank 0 asks its MPI to say which transport carries its messages: "
                "OMPI_MCA_btl_base_verbose=1 (Open MPI's 'bml: Using vader btl for send to' "
                "lines, stderr) and UCX_LOG_LEVEL=info (UCX's 'ep_cfg' lines, stdout), each "
                "only where the environment does not set it (docs/output-format.md)"},
};

/* Shared options every method cli_accepts without listing them, after its own in the help. */
static const nb_common_option always_options[] = {NB_COMMON_TIMEOUT, NB_COMMON_JSON,
                                                  NB_COMMON_JSON_FILE,
                                                  NB_COMMON_TRANSPORT_EVIDENCE};
#define ALWAYS_COUNT (sizeof always_options / sizeof always_options[0])


static nb_option resolve(const nb_option *entry)
{
    if (entry->common == NB_COMMON_NONE)
        return *entry;
    nb_option option = cli_common_options[entry->common];
    option.common = entry->common;
    if (entry->default_value != NULL)
        option.default_value = entry->default_value;
    if (entry->default_text != NULL)
        option.default_text = entry->default_text;
    return option;
}

void cli_list_options(const nb_method *method, option_list *list)
{
    list->count = 0;
    for (size_t i = 0; i < method->option_count && list->count < MAX_OPTIONS; i++)
        list->options[list->count++] = resolve(&method->options[i]);
    for (size_t a = 0; a < ALWAYS_COUNT && list->count < MAX_OPTIONS; a++) {
        int listed = 0;
        for (size_t i = 0; i < method->option_count; i++)
            listed |= method->options[i].common == always_options[a];
        if (!listed)
            list->options[list->count++] = cli_common_options[always_options[a]];
    }
}

const nb_option *cli_find_option(const option_list *list, const char *name, size_t length)
{
    for (size_t i = 0; i < list->count; i++) {
        const nb_option *o = &list->options[i];
        if (strlen(o->name) == length && strncmp(o->name, name, length) == 0)
            return o;
        if (o->short_name && length == 2 && name[0] == '-' && name[1] == o->short_name)
            return o;
    }
    return NULL;
}

int cli_accepts(const nb_method *method, nb_common_option id)
{
    for (size_t i = 0; i < method->option_count; i++)
        if (method->options[i].common == id)
            return 1;
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Ranges                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static int is_whole(nb_option_type type)
{
    return type == NB_OPTION_INT || type == NB_OPTION_LONG || type == NB_OPTION_INT_LIST;
}

static int is_size(nb_option_type type)
{
    return type == NB_OPTION_SIZE || type == NB_OPTION_SIZE_LIST;
}

static void format_bound(const nb_option *o, double bound, char *text, size_t length)
{
    if (is_size(o->type))
        nb_format_size((size_t)bound, text, length);
    else if (is_whole(o->type))
        snprintf(text, length, "%.0f", bound);
    else
        snprintf(text, length, "%g", bound);
}

/* "one of concurrent, sequential" */
static void format_names(const nb_option *o, const char *separator, char *text, size_t length)
{
    size_t used = 0;
    text[0] = '\0';
    for (int i = 0; i < o->name_count && used < length; i++)
        used += (size_t)snprintf(text + used, length - used, "%s%s", i ? separator : "",
                                 o->name_of(i));
}

/* The names an enum option takes: "one of a, b" for one name, "<list_words> a<separator>b" for
 * a list of names. Returns 0, writing nothing, for an option of another type. */
static int describe_names(const nb_option *o, const char *list_words, const char *separator,
                          char *text, size_t length)
{
    if (o->type != NB_OPTION_ENUM && o->type != NB_OPTION_ENUM_LIST)
        return 0;
    char names[256];
    int list = o->type == NB_OPTION_ENUM_LIST;
    format_names(o, list ? separator : ", ", names, sizeof names);
    snprintf(text, length, "%s %s", list ? list_words : "one of", names);
    return 1;
}

/* What a value may be, for error lines: "a whole number from 1 to 1000". */
static void describe_allowed(const nb_option *o, char *text, size_t length)
{
    if (describe_names(o, "a comma-separated list of names from", ",", text, length))
        return;
    char low[32], high[32];
    format_bound(o, o->min, low, sizeof low);
    format_bound(o, o->max, high, sizeof high);
    switch (o->type) {
    case NB_OPTION_INT:
    case NB_OPTION_LONG:
        snprintf(text, length, "a whole number from %s to %s", low, high);
        break;
    case NB_OPTION_DOUBLE:
        snprintf(text, length, "a number from %s to %s", low, high);
        break;
    case NB_OPTION_SIZE:
        snprintf(text, length, "a size from %s to %s (a number with an optional K or M suffix)",
                 low, high);
        break;
    case NB_OPTION_SIZE_LIST:
        snprintf(text, length, "a comma-separated list of sizes from %s to %s (numbers with an "
                 "optional K or M suffix), such as %s", low, high, o->example);
        break;
    case NB_OPTION_INT_LIST:
        snprintf(text, length, "a comma-separated list of whole numbers from %s to %s, such "
                 "as %s", low, high, o->example);
        break;
    default:
        snprintf(text, length, "for example %s", o->example ? o->example : "");
        break;
    }
}

/* The option's range for the help: "range 1..1000", "each 1..1024", "one of a, b". */
void cli_describe_range(const nb_option *o, char *text, size_t length)
{
    if (describe_names(o, "any of", ", ", text, length))
        return;
    char low[32], high[32];
    format_bound(o, o->min, low, sizeof low);
    format_bound(o, o->max, high, sizeof high);
    text[0] = '\0';
    switch (o->type) {
    case NB_OPTION_INT:
    case NB_OPTION_LONG:
    case NB_OPTION_DOUBLE:
    case NB_OPTION_SIZE:
        snprintf(text, length, "range %s..%s", low, high);
        break;
    case NB_OPTION_SIZE_LIST:
    case NB_OPTION_INT_LIST:
        snprintf(text, length, "each %s..%s, at most %zu", low, high, o->capacity);
        break;
    default:
        break;
    }
}

/* "--repetitions 0: out of range; use a whole number from 1 to 1000 (note)" */
nb_cli_outcome cli_value_error(const nb_option *o, const char *typed, const char *value,
                               const char *problem)
{
    char allowed[512];
    describe_allowed(o, allowed, sizeof allowed);
    return cli_usage_error("%s %s: %s; use %s%s%s%s", typed, value, problem, allowed,
                       o->range_note ? " (" : "", o->range_note ? o->range_note : "",
                       o->range_note ? ")" : "");
}

/* The JSON file is written at the end of a run; a path that cannot be written should fail now,
 * before any MPI traffic, not after minutes of measuring. */
static const char *check_json_file(const void *value)
{
    static char problem[512];
    const char *path = *(const char *const *)value;
    char directory[4096];
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        snprintf(directory, sizeof directory, ".");
    else if (slash == path)
        snprintf(directory, sizeof directory, "/");
    else
        snprintf(directory, sizeof directory, "%.*s", (int)(slash - path), path);
    if (slash != NULL && slash[1] == '\0')
        return "names a directory; give a file name";
    if (access(directory, W_OK | X_OK) != 0) {
        snprintf(problem, sizeof problem, "cannot write into directory %.256s (%s); choose a "
                 "writable path", directory, strerror(errno));
        return problem;
    }
    /* An existing PATH is replaced by rename() at the end, which neither a directory nor a
     * read-only file would stop in time. access() says "writable" to root whatever the mode,
     * so the mode bits are checked as well, and an open for appending (which neither creates
     * nor truncates) proves that this process may write it. */
    struct stat existing;
    if (stat(path, &existing) != 0) {
        if (errno == ENOENT)
            return NULL;
        snprintf(problem, sizeof problem, "cannot check the path (%s); choose a writable path",
                 strerror(errno));
        return problem;
    }
    if (S_ISDIR(existing.st_mode)) {
        snprintf(problem, sizeof problem, "names an existing directory; give a file name, e.g. "
                 "%.256s/result.json", path);
        return problem;
    }
    if (!S_ISREG(existing.st_mode))
        return "exists and is not a regular file (it would be replaced); give a file name";
    if ((existing.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0) {
        snprintf(problem, sizeof problem, "the existing file is read-only (mode %04o) and would "
                 "be replaced; make it writable (chmod u+w) or choose another path",
                 (unsigned)(existing.st_mode & 07777));
        return problem;
    }
    int fd = open(path, O_WRONLY | O_APPEND | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(problem, sizeof problem, "the existing file cannot be written (%s); make it "
                 "writable or choose another path", strerror(errno));
        return problem;
    }
    close(fd);
    return NULL;
}

