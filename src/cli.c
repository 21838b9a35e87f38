/* cli.c - the generic option parser, range checker and help printer, driven by the methods'
 * option descriptors (cli.h). Knows no method; no MPI in here. */
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

#include "version.h"

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

static void vusage(const char *format, va_list args)
{
    if (nb_cli_is_printing_process()) {
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

static nb_cli_outcome usage_error(const char *format, ...) __attribute__((format(printf, 1, 2)));
static nb_cli_outcome usage_error(const char *format, ...)
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
static int parse_whole(const char *text, long *value)
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

static int parse_real(const char *text, double *value)
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
    if (value == NULL || parse_whole(value, &count) != 0 || count < 1 || count > (1L << 30))
        return 0;
    return (unsigned long long)count;
}

/* ------------------------------------------------------------------------------------------ */
/* The shared options                                                                           */
/* ------------------------------------------------------------------------------------------ */

static const char *check_json_file(const void *value);

static const nb_option common_options[NB_COMMON_COUNT] = {
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

/* Shared options every method accepts without listing them, after its own in the help. */
static const nb_common_option always_options[] = {NB_COMMON_TIMEOUT, NB_COMMON_JSON,
                                                  NB_COMMON_JSON_FILE,
                                                  NB_COMMON_TRANSPORT_EVIDENCE};
#define ALWAYS_COUNT (sizeof always_options / sizeof always_options[0])

/* A method's options with the shared ones resolved: its own table, then the always options
 * it did not list. */
#define MAX_OPTIONS 64

typedef struct {
    nb_option options[MAX_OPTIONS];
    size_t count;
} option_list;

static nb_option resolve(const nb_option *entry)
{
    if (entry->common == NB_COMMON_NONE)
        return *entry;
    nb_option option = common_options[entry->common];
    option.common = entry->common;
    if (entry->default_value != NULL)
        option.default_value = entry->default_value;
    if (entry->default_text != NULL)
        option.default_text = entry->default_text;
    return option;
}

static void list_options(const nb_method *method, option_list *list)
{
    list->count = 0;
    for (size_t i = 0; i < method->option_count && list->count < MAX_OPTIONS; i++)
        list->options[list->count++] = resolve(&method->options[i]);
    for (size_t a = 0; a < ALWAYS_COUNT && list->count < MAX_OPTIONS; a++) {
        int listed = 0;
        for (size_t i = 0; i < method->option_count; i++)
            listed |= method->options[i].common == always_options[a];
        if (!listed)
            list->options[list->count++] = common_options[always_options[a]];
    }
}

static const nb_option *find_in(const option_list *list, const char *name, size_t length)
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

static int accepts(const nb_method *method, nb_common_option id)
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
static void describe_range(const nb_option *o, char *text, size_t length)
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
static nb_cli_outcome value_error(const nb_option *o, const char *typed, const char *value,
                                  const char *problem)
{
    char allowed[512];
    describe_allowed(o, allowed, sizeof allowed);
    return usage_error("%s %s: %s; use %s%s%s%s", typed, value, problem, allowed,
                       o->range_note ? " (" : "", o->range_note ? o->range_note : "",
                       o->range_note ? ")" : "");
}

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
            return value_error(o, typed, value, "empty or overlong item");
        if (o->type == NB_OPTION_ENUM_LIST) {
            int index = name_index(o, text);
            if (index < 0) {
                snprintf(problem, sizeof problem, "unknown name '%s'", text);
                return value_error(o, typed, value, problem);
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
                return value_error(o, typed, value, problem);
            }
            number = (double)size;
        } else {
            if (parse_whole(text, &whole) != 0) {
                snprintf(problem, sizeof problem, "'%s' is not a whole number", text);
                return value_error(o, typed, value, problem);
            }
            number = (double)whole;
        }
        if (number < o->min || number > o->max) {
            snprintf(problem, sizeof problem, "'%s' is out of range", text);
            return value_error(o, typed, value, problem);
        }
        if (count == o->capacity)
            return usage_error("%s: more than %zu items; give at most %zu", typed, o->capacity,
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
static nb_cli_outcome apply(const nb_option *o, const char *typed, const char *value,
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
        if (parse_whole(value, &whole) != 0)
            return value_error(o, typed, value, "not a whole number");
        if ((double)whole < o->min || (double)whole > o->max)
            return value_error(o, typed, value, "out of range");
        if (o->type == NB_OPTION_INT)
            *(int *)target = (int)whole;
        else
            *(long *)target = whole;
        break;
    case NB_OPTION_DOUBLE:
        if (parse_real(value, &number) != 0)
            return value_error(o, typed, value, "not a number");
        if (number < o->min || number > o->max)
            return value_error(o, typed, value, "out of range");
        *(double *)target = number;
        break;
    case NB_OPTION_SIZE:
        if (nb_parse_size(value, &size) != 0)
            return value_error(o, typed, value, "not a size");
        if ((double)size < o->min || (double)size > o->max)
            return value_error(o, typed, value, "out of range");
        *(size_t *)target = size;
        break;
    case NB_OPTION_ENUM: {
        int index = name_index(o, value);
        if (index < 0)
            return value_error(o, typed, value, "unknown name");
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
            return usage_error("%s %s: %s", typed, value, problem);
    }
    return NB_CLI_RUN;
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
static nb_cli_outcome check_buffer_memory(const nb_method *method, const nb_options *options)
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
    return usage_error("%s: the message buffers need %s per rank%s, more than the %llu bytes of "
                       "memory of this host; use smaller --sizes/--max-size%s", method->name, how,
                       ranks, memory, hint ? hint : "");
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
    describe_range(o, range, sizeof range);
    char defaults[400] = "";
    if (o->default_text != NULL)
        snprintf(defaults, sizeof defaults, "default: %s", o->default_text);
    else if (o->default_value != NULL)
        snprintf(defaults, sizeof defaults, "default %s", o->default_value);
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

/* `netbench METHOD --describe`: the declared tables and summary figures as JSON, for the checks,
 * the docs and the report (docs/output-format.md); one declaration per figure, here and nowhere
 * else. */
static void print_method_description(const nb_method *method)
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
    printf("\n]}\n");
}

static void print_method_help(const nb_method *method, const option_list *list)
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

static void print_top_help(void)
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

const nb_method *nb_cli_pick_method(int argc, char **argv, nb_cli_outcome *outcome)
{
    const char *first = argc > 1 ? argv[1] : NULL;
    char names[512] = "";
    for (size_t i = 0; i < nb_method_count; i++)
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 nb_methods[i]->name);
    if (first == NULL) {
        *outcome = usage_error("no subcommand given; use one of %s (netbench --help)", names);
        return NULL;
    }
    if (strcmp(first, "--help") == 0 || strcmp(first, "-h") == 0) {
        if (nb_cli_is_printing_process())
            print_top_help();
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
    *outcome = usage_error("unknown subcommand '%s'; use one of %s (netbench --help)", first,
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
        list_options(nb_methods[m], &list);
        if (find_in(&list, name, length) != NULL)
            return 1;
    }
    for (int c = NB_COMMON_NONE + 1; c < NB_COMMON_COUNT; c++)
        if (strlen(common_options[c].name) == length &&
            strncmp(common_options[c].name, name, length) == 0)
            return 1;
    return 0;
}

/* The defaults are parsed like the command line: a default outside its own range is a
 * programming error, caught on every start. */
static nb_cli_outcome apply_defaults(const nb_method *method, const option_list *list,
                                     nb_options *options, void *settings)
{
    for (size_t i = 0; i < list->count; i++) {
        const nb_option *o = &list->options[i];
        if (o->default_value == NULL || o->type == NB_OPTION_FLAG)
            continue;
        nb_cli_outcome outcome = apply(o, o->name, o->default_value, options, settings);
        if (outcome != NB_CLI_RUN)
            return usage_error("%s: internal error: the default of %s is refused", method->name,
                               o->name);
    }
    return NB_CLI_RUN;
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
            return usage_error("out of memory");
    }
    options->settings = settings;
    option_list list;
    list_options(method, &list);

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            if (nb_cli_is_printing_process())
                print_method_help(method, &list);
            return NB_CLI_EXIT_OK;
        }
        if (strcmp(argv[i], "--describe") == 0) {
            if (nb_cli_is_printing_process())
                print_method_description(method);
            return NB_CLI_EXIT_OK;
        }
    }
    nb_cli_outcome outcome = apply_defaults(method, &list, options, settings);
    if (outcome != NB_CLI_RUN)
        return outcome;

    int range_given = 0;
    /* Which options were given: a repeated one is refused, never "the last one wins" (a second
     * --sizes silently replacing the first would measure other sizes than asked). */
    unsigned char given[MAX_OPTIONS] = {0};
    for (int i = 2; i < argc; i++) {
        const char *argument = argv[i];
        if (argument[0] != '-' || argument[1] == '\0')
            return usage_error("%s: unexpected argument '%s'; options start with '-' (netbench %s "
                               "--help)", method->name, argument, method->name);
        const char *equals = strchr(argument, '=');
        size_t name_length = equals ? (size_t)(equals - argument) : strlen(argument);
        const nb_option *o = find_in(&list, argument, name_length);
        if (o == NULL) {
            if (known_elsewhere(argument, name_length))
                return usage_error("%s: option %.*s does not apply to %s; see netbench %s --help",
                                   method->name, (int)name_length, argument, method->name,
                                   method->name);
            return usage_error("%s: unknown option '%.*s'; see netbench %s --help",
                               method->name, (int)name_length, argument, method->name);
        }
        size_t index = (size_t)(o - list.options);
        if (given[index] && o->example != NULL && o->type != NB_OPTION_FLAG)
            return usage_error("%s: %s is given twice; give it once, e.g. %s %s", method->name,
                               o->name, o->name, o->example);
        if (given[index])
            return usage_error("%s: %s is given twice; give it once", method->name, o->name);
        given[index] = 1;
        const char *value = NULL;
        if (o->type == NB_OPTION_FLAG) {
            if (equals != NULL)
                return usage_error("%s takes no value; write just %s", o->name, o->name);
        } else if (equals != NULL) {
            value = equals + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            return usage_error("%s needs a value; e.g. %s %s", o->name, o->name, o->example);
        }
        if (value != NULL && value[0] == '\0')
            return usage_error("%s: empty value; e.g. %s %s", o->name, o->name, o->example);
        /* Errors name the option as it was typed (-n or --messages). */
        char typed[64];
        snprintf(typed, sizeof typed, "%.*s", (int)name_length, argument);
        outcome = apply(o, typed, value, options, settings);
        if (outcome != NB_CLI_RUN)
            return outcome;
        if (o->common == NB_COMMON_SIZES)
            options->sizes_given = 1;
        if (o->common == NB_COMMON_MIN_SIZE || o->common == NB_COMMON_MAX_SIZE)
            range_given = 1;
    }

    if (options->sizes_given && range_given)
        return usage_error("--sizes and --min-size/--max-size exclude each other; give either "
                           "a list or a range");
    if (nb_size_order_error("", "--min-size", options->min_size, "--max-size",
                            options->max_size) != 0)
        return NB_CLI_EXIT_USAGE;
    if (!options->sizes_given)
        generate_sizes(method->progression, options);
    if (method->finish != NULL && method->finish(options, settings) != 0)
        return NB_CLI_EXIT_USAGE;
    if (options->size_count > 0)
        options->max_size = options->sizes[options->size_count - 1];
    if (options->size_count > 0 && accepts(method, NB_COMMON_SIZES))
        options->min_size = options->sizes[0];
    return check_buffer_memory(method, options);
}
