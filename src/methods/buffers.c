/* buffers.c - how the application's buffers cost: reuse (a new buffer per transfer
 * against one reused buffer; Zamani et al. 5.3, Kutlug 3.2.4 and 4.2.3) and vector (an MPI
 * vector datatype in k segments against the contiguous message; Kutlug 3.2.7 and 4.2.5).
 *
 * Both compare variants of one ping-pong with a reference variant (100 % reuse; the contiguous
 * message), measured side by side by paired.h with one iteration count for all variants of a
 * size: every cost is the median of the paired differences, so a slow phase of the machine
 * hits the variant and its reference alike instead of inventing a cost (or a negative one). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "buffers_catalogue.h"
#include "paired.h"

/* Fewest iterations of one repetition, however slow a variant is. */
#define BUFFERS_MIN_ITERATIONS 5

/* ------------------------------------------------------------------------------------------ */
/* What both methods share; the paired measurement itself is paired.h's                        */
/* ------------------------------------------------------------------------------------------ */

/* The variants of a size side by side (paired.h), with one iteration count for all, paced by
 * variant `pace_variant` (the most expensive one). */
static void measure_paired(const nb_context *ctx, const nb_paired_variant *variants,
                           size_t count, void *const *states, size_t pace_variant,
                           nb_paired_measurement *m)
{
    const nb_options *o = ctx->options;
    nb_paired_plan plan = {.min_iterations = BUFFERS_MIN_ITERATIONS,
                           .max_iterations = o->iterations,
                           .time_cap_s = o->time_cap_ms * 1e-3, .rounds = o->repetitions,
                           .common_count_from = (int)pace_variant};
    nb_paired_measure(ctx, variants, count, states, &plan, m);
}

/* The parameters both methods record after their own. */
static void buffers_parameters(const nb_context *ctx)
{
    nb_param_text(ctx->result, "measurement", "interleaved-paired");
    nb_paired_noise_parameters(ctx);
    nb_param_common(ctx);
}

/* Rank 0: the latency check of variant v and, unless it is the reference, the flag of a null
 * cost; `where` names its row ("size_bytes=8,reuse_percent=0"). */
static void flag_unsound(const nb_context *ctx, const char *where,
                         const nb_paired_variant *variants, const nb_paired_measurement *m,
                         size_t v, const nb_paired_cost *cost)
{
    char quantity[128];
    snprintf(quantity, sizeof quantity, "latency_median_us[%s]", where);
    nb_paired_check_timer(ctx, m, v, quantity);
    if (v != 0 && isnan(nb_paired_reported_cost(cost))) {
        snprintf(quantity, sizeof quantity, "extra_us[%s]", where);
        nb_paired_flag_cost(ctx, cost, quantity, variants[v].name, variants[0].name);
    }
}

static double bandwidth_MBps(size_t size, double latency_us)
{
    return latency_us > 0.0 ? (double)size / latency_us : NAN;
}

/* A variant's measured cells, common to the reuse, vector and contiguous rows. */
static void add_latency_cells(nb_table *table, size_t size, const nb_paired_measurement *m,
                              size_t v)
{
    nb_cell_int(table, "iterations", m->iterations[v]);
    nb_cell_real(table, "latency_min_us", m->min_us[v]);
    nb_cell_real(table, "latency_median_us", m->median_us[v]);
    nb_cell_real(table, "latency_max_us", m->max_us[v]);
    nb_cell_real(table, "bandwidth_median_MBps", bandwidth_MBps(size, m->median_us[v]));
}

/* The cost summary of reuse and vector, over the rows of the costliest variant: its cost at the
 * summary size, and its largest extra cost with the size where it was. */
typedef struct {
    nb_paired_cost at_summary_size;
    double extra_max_us;
    size_t extra_max_size;
} cost_summary;

#define COST_SUMMARY_EMPTY                                                                     \
    {.at_summary_size = {.difference_us = NAN, .ratio = NAN, .noise_floor_us = NAN},           \
     .extra_max_us = NAN,                                                                      \
     .extra_max_size = 0}

static void cost_summary_add(cost_summary *summary, const nb_paired_cost *cost, double extra_us,
                             size_t size, int at_summary_size)
{
    if (at_summary_size)
        summary->at_summary_size = *cost;
    if (isfinite(extra_us) && !(extra_us <= summary->extra_max_us)) {
        summary->extra_max_us = extra_us;
        summary->extra_max_size = size;
    }
}

/* The summary figures from cost_extra_us on (the method writes what identifies the variant). */
static void write_cost_summary(nb_result *r, const cost_summary *summary, size_t summary_bytes)
{
    double cost = nb_paired_reported_cost(&summary->at_summary_size);
    nb_summary_real(r, "cost_extra_us", cost);
    if (!isfinite(cost))
        nb_unreliable(r, "cost_extra_us", "the cost at %zu bytes is null (see its row)",
                      summary_bytes);
    nb_summary_real(r, "cost_ratio", summary->at_summary_size.ratio);
    nb_summary_real(r, "cost_noise_us", summary->at_summary_size.noise_floor_us);
    nb_summary_real(r, "cost_extra_max_us", summary->extra_max_us);
    nb_summary_int(r, "cost_extra_max_size_bytes", (long long)summary->extra_max_size);
}

/* "8,64,1K" -> sizes (the default lists; parsed like --sizes). */
static int parse_default_sizes(const char *text, nb_options *o)
{
    char copy[128];
    snprintf(copy, sizeof copy, "%s", text);
    o->size_count = 0;
    for (char *item = strtok(copy, ","); item != NULL && o->size_count < NB_MAX_SIZES;
         item = strtok(NULL, ","))
        if (nb_parse_size(item, &o->sizes[o->size_count++]) != 0)
            return -1;
    o->size_count = nb_sort_unique_sizes(o->sizes, o->size_count);
    return 0;
}

/* The size of the summary: the largest measured size not above `wanted` (else the smallest). */
static size_t summary_size(const nb_options *o, size_t wanted, size_t *index)
{
    *index = 0;
    for (size_t i = 0; i < o->size_count; i++)
        if (o->sizes[i] <= wanted)
            *index = i;
    return o->sizes[*index];
}

static size_t page_size(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

static size_t round_to_pages(size_t bytes)
{
    size_t page = page_size();
    return bytes == 0 ? page : (bytes + page - 1) / page * page;
}

/* ------------------------------------------------------------------------------------------ */
/* reuse                                                                                        */
/* ------------------------------------------------------------------------------------------ */

/* A fresh buffer's footprint: its pages and one PROT_NONE guard page after them, which keeps
 * it a mapping of its own (the kernel merges adjacent anonymous mappings into one region). */
static size_t fresh_footprint(size_t size)
{
    return round_to_pages(size) + page_size();
}

/* Distinct fresh buffers of `size` within the cap and --buffers. */
static size_t fresh_count(const reuse_settings *rs, size_t size)
{
    size_t fit = rs->memory_cap / fresh_footprint(size);
    return fit < (size_t)rs->buffers ? fit : (size_t)rs->buffers;
}

typedef struct {
    MPI_Comm pair;
    int rank;
    int size;
    int percent;                /* transfers from the reused buffer, in percent */
    char *reused;               /* the one reused buffer */
    char **fresh;               /* the pool, used in turn */
    size_t fresh_count;
    size_t *next_fresh;         /* shared by the variants of a size: the pool keeps cycling */
    long long *transfer;        /* shared likewise: the reuse pattern's position */
} reuse_state;

/* Transfer t uses the reused buffer when floor((t+1) p / 100) > floor(t p / 100): p of every
 * 100 transfers, spread evenly (75 %: fresh, reused, reused, reused, ...). */
static char *pick_buffer(const reuse_state *s)
{
    long long t = (*s->transfer)++;
    if (((t + 1) * s->percent) / 100 > (t * s->percent) / 100)
        return s->reused;
    char *buffer = s->fresh[*s->next_fresh];
    *s->next_fresh = (*s->next_fresh + 1) % s->fresh_count;
    return buffer;
}

/* One iteration = one round trip; both ranks send and receive in the transfer's buffer. */
static double reuse_loop(void *state, long iterations)
{
    const reuse_state *s = state;
    MPI_Comm comm = s->pair;
    int count = s->size;
    double start = MPI_Wtime();
    if (s->rank == 0) {
        for (long i = 0; i < iterations; i++) {
            char *buffer = pick_buffer(s);
            MPI_Send(buffer, count, MPI_BYTE, 1, NB_TAG_DATA, comm);
            MPI_Recv(buffer, count, MPI_BYTE, 1, NB_TAG_DATA, comm, MPI_STATUS_IGNORE);
        }
    } else {
        for (long i = 0; i < iterations; i++) {
            char *buffer = pick_buffer(s);
            MPI_Recv(buffer, count, MPI_BYTE, 0, NB_TAG_DATA, comm, MPI_STATUS_IGNORE);
            MPI_Send(buffer, count, MPI_BYTE, 0, NB_TAG_DATA, comm);
        }
    }
    return MPI_Wtime() - start;
}

static char *map_fresh(size_t size, int rank)
{
    size_t data = round_to_pages(size);
    char *region = mmap(NULL, data + page_size(), PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (region == MAP_FAILED || mprotect(region + data, page_size(), PROT_NONE) != 0) {
        fprintf(stderr, "netbench: out of memory: cannot map a %zu-byte buffer\n", size);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return NULL;
    }
    /* Touched (non-zero: no shared zero page) before timing, so no page fault is timed. */
    memset(region, 0x5a + rank, data);
    return region;
}

void run_reuse(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const reuse_settings *rs = o->settings;
    size_t variants = rs->percent_count;
    /* Variant 0 is 100 % (the reference); then descending, as the table lists them. */
    int percent_of[REUSE_MAX_PERCENTS];
    nb_paired_variant variant[REUSE_MAX_PERCENTS];
    char names[REUSE_MAX_PERCENTS][16];
    for (size_t v = 0; v < variants; v++) {
        percent_of[v] = rs->percents[variants - 1 - v];
        snprintf(names[v], sizeof names[v], "%d %% reuse", percent_of[v]);
        variant[v] = (nb_paired_variant){names[v], reuse_loop};
    }
    char *reused = nb_buffer_new(o->sizes[o->size_count - 1]);

    nb_table *table = NULL;
    if (ctx->result != NULL) {
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        long long percents[REUSE_MAX_PERCENTS];
        for (size_t v = 0; v < variants; v++)
            percents[v] = percent_of[v];
        nb_param_int_list(ctx->result, "reuse_percentages", percents, variants);
        nb_param_int(ctx->result, "buffers", rs->buffers);
        nb_param_int(ctx->result, "memory_cap_bytes", (long long)rs->memory_cap);
        nb_param_int(ctx->result, "page_bytes", (long long)page_size());
        buffers_parameters(ctx);
        table = nb_result_add_declared_table(ctx->result, &reuse_table);
    }

    size_t summary_index;
    size_t summary_bytes = summary_size(o, rs->summary_size, &summary_index);
    size_t lowest = variants - 1;
    cost_summary costs = COST_SUMMARY_EMPTY;
    double small_latency = NAN;
    nb_paired_measurement m;
    for (size_t i = 0; i < o->size_count; i++) {
        size_t size = o->sizes[i];
        size_t pool = fresh_count(rs, size);
        char **fresh = nb_calloc_or_abort(MPI_COMM_WORLD, pool, sizeof *fresh);
        for (size_t b = 0; b < pool; b++)
            fresh[b] = map_fresh(size, ctx->rank);
        size_t next_fresh = 0;
        long long transfer = 0;
        reuse_state states[REUSE_MAX_PERCENTS];
        void *pointers[REUSE_MAX_PERCENTS];
        for (size_t v = 0; v < variants; v++) {
            states[v] = (reuse_state){
                .pair = ctx->pair, .rank = ctx->rank, .size = (int)size, .percent = percent_of[v],
                .reused = reused, .fresh = fresh, .fresh_count = pool, .next_fresh = &next_fresh,
                .transfer = &transfer,
            };
            pointers[v] = &states[v];
        }
        /* paced by the lowest reuse, the slowest variant */
        measure_paired(ctx, variant, variants, pointers, lowest, &m);
        for (size_t b = 0; b < pool; b++)
            munmap(fresh[b], fresh_footprint(size));
        free(fresh);
        if (ctx->result == NULL)
            continue;
        for (size_t v = 0; v < variants; v++) {
            nb_paired_cost c;
            nb_paired_cost_of(&m, v, 0, &c);
            double extra = nb_paired_reported_cost(&c);
            char what[96];
            snprintf(what, sizeof what, "size_bytes=%zu,reuse_percent=%d", size,
                     percent_of[v]);
            flag_unsound(ctx, what, variant, &m, v, &c);
            nb_table_add_row(table);
            nb_cell_int(table, "size_bytes", (long long)size);
            nb_cell_int(table, "reuse_percent", percent_of[v]);
            nb_cell_int(table, "buffers", (long long)pool);
            add_latency_cells(table, size, &m, v);
            nb_cell_real(table, "extra_us", v == 0 ? 0.0 : extra);
            nb_cell_real(table, "ratio", v == 0 ? 1.0 : c.ratio);
            nb_cell_real(table, "noise_us", v == 0 ? 0.0 : c.noise_floor_us);
            if (v == 0 && i == 0)
                small_latency = m.median_us[v];
            if (v == lowest && v != 0)
                cost_summary_add(&costs, &c, extra, size, i == summary_index);
        }
    }
    free(reused);

    if (ctx->result != NULL) {
        nb_result *r = ctx->result;
        nb_summary_int(r, "latency_reuse100_small_size_bytes", (long long)o->sizes[0]);
        nb_summary_real(r, "latency_reuse100_small_us", small_latency);
        nb_summary_int(r, "cost_size_bytes", (long long)summary_bytes);
        nb_summary_int(r, "cost_reuse_percent", percent_of[lowest]);
        write_cost_summary(r, &costs, summary_bytes);
    }
}

int reuse_finish(nb_options *o, void *settings)
{
    const reuse_settings *rs = settings;
    if (!o->sizes_given && parse_default_sizes(REUSE_DEFAULT_SIZES, o) != 0)
        return nb_usage_error("reuse: internal error: bad default sizes");
    if (o->sizes[0] == 0)
        return nb_usage_error("reuse: --sizes 0: a buffer of 0 bytes is never used; give sizes "
                              ">= 1");
    if (rs->percents[rs->percent_count - 1] != 100)
        return nb_usage_error("reuse: --reuse-percentages must include 100 (the reference "
                              "every cost is taken against), e.g. 100,50,0");
    if (rs->percent_count < 2)
        return nb_usage_error("reuse: --reuse-percentages 100 alone measures no cost; add a "
                              "lower one, e.g. 100,0");
    size_t largest = o->sizes[o->size_count - 1];
    if (fresh_count(rs, largest) < 2) {
        char cap[32], size[32];
        nb_format_size(rs->memory_cap, cap, sizeof cap);
        nb_format_size(largest, size, sizeof size);
        return nb_usage_error("reuse: --memory-cap %s holds fewer than 2 fresh buffers of %s "
                              "(each %zu bytes with its guard page); raise --memory-cap or "
                              "lower the largest size", cap, size, fresh_footprint(largest));
    }
    return 0;
}

unsigned long long reuse_buffer_bytes(const nb_options *o, char *how, size_t length,
                                      const char **hint)
{
    const reuse_settings *rs = o->settings;
    unsigned long long most = 0;
    for (size_t i = 0; i < o->size_count; i++) {
        unsigned long long pool =
            (unsigned long long)fresh_count(rs, o->sizes[i]) * fresh_footprint(o->sizes[i]);
        if (pool > most)
            most = pool;
    }
    unsigned long long largest = o->size_count > 0 ? o->sizes[o->size_count - 1] : 0;
    snprintf(how, length, "fresh buffers %llu bytes (at most --memory-cap) + the reused buffer "
             "%llu bytes", most, largest);
    *hint = " or --memory-cap";
    return most + largest;
}

/* ------------------------------------------------------------------------------------------ */
/* vector                                                                                       */
/* ------------------------------------------------------------------------------------------ */

void run_vector(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const vector_settings *vs = o->settings;
    size_t counts = vs->segment_count;
    size_t variants = counts + 1; /* variant 0: contiguous */
    nb_paired_variant variant[NB_PAIRED_MAX_VARIANTS];
    char names[NB_PAIRED_MAX_VARIANTS][24];
    variant[0] = (nb_paired_variant){"contiguous", nb_pingpong_loop};
    for (size_t k = 0; k < counts; k++) {
        snprintf(names[k + 1], sizeof names[k + 1], "%d segments", vs->segments[k]);
        variant[k + 1] = (nb_paired_variant){names[k + 1], nb_pingpong_loop};
    }
    size_t largest = o->sizes[o->size_count - 1];
    size_t extent = largest * (size_t)vs->stride_factor;
    void *send = nb_buffer_new(extent), *recv = nb_buffer_new(extent);

    nb_table *plain = NULL, *table = NULL;
    if (ctx->result != NULL) {
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        long long segments[VECTOR_MAX_SEGMENT_COUNTS];
        for (size_t k = 0; k < counts; k++)
            segments[k] = vs->segments[k];
        nb_param_int_list(ctx->result, "segments", segments, counts);
        nb_param_int(ctx->result, "stride_factor", vs->stride_factor);
        nb_param_text(ctx->result, "receive", "vector");
        buffers_parameters(ctx);
        plain = nb_result_add_declared_table(ctx->result, &contiguous_table);
        table = nb_result_add_declared_table(ctx->result, &vector_table);
    }

    size_t summary_index;
    size_t summary_bytes = summary_size(o, vs->summary_size, &summary_index);
    cost_summary costs = COST_SUMMARY_EMPTY;
    nb_paired_measurement m;
    for (size_t i = 0; i < o->size_count; i++) {
        size_t size = o->sizes[i];
        /* Kutlug 4.2.5: the latency test, sending and receiving the datatype */
        nb_pingpong states[NB_PAIRED_MAX_VARIANTS];
        void *pointers[NB_PAIRED_MAX_VARIANTS];
        states[0] = (nb_pingpong){.comm = ctx->pair, .rank = ctx->rank, .tag = NB_TAG_DATA,
                                  .type = MPI_BYTE, .count = (int)size, .send = send,
                                  .recv = recv};
        for (size_t k = 0; k < counts; k++) {
            int segment = (int)(size / (size_t)vs->segments[k]);
            states[k + 1] = states[0];
            states[k + 1].count = 1;
            MPI_Type_vector(vs->segments[k], segment, segment * vs->stride_factor, MPI_BYTE,
                            &states[k + 1].type);
            MPI_Type_commit(&states[k + 1].type);
        }
        for (size_t v = 0; v < variants; v++)
            pointers[v] = &states[v];
        /* paced by the most segments, the slowest variant as a rule */
        measure_paired(ctx, variant, variants, pointers, variants - 1, &m);
        for (size_t k = 0; k < counts; k++)
            MPI_Type_free(&states[k + 1].type);
        if (ctx->result == NULL)
            continue;
        nb_paired_cost c;
        nb_paired_cost_of(&m, 0, 0, &c);
        char what[96];
        snprintf(what, sizeof what, "size_bytes=%zu,segments=contiguous", size);
        flag_unsound(ctx, what, variant, &m, 0, &c);
        nb_table_add_row(plain);
        nb_cell_int(plain, "size_bytes", (long long)size);
        add_latency_cells(plain, size, &m, 0);
        for (size_t k = 0; k < counts; k++) {
            size_t v = k + 1;
            size_t segment = size / (size_t)vs->segments[k];
            nb_paired_cost_of(&m, v, 0, &c);
            double extra = nb_paired_reported_cost(&c);
            snprintf(what, sizeof what, "size_bytes=%zu,segments=%d", size, vs->segments[k]);
            flag_unsound(ctx, what, variant, &m, v, &c);
            nb_table_add_row(table);
            nb_cell_int(table, "size_bytes", (long long)size);
            nb_cell_int(table, "segments", vs->segments[k]);
            nb_cell_int(table, "segment_bytes", (long long)segment);
            nb_cell_int(table, "stride_bytes", (long long)(segment * (size_t)vs->stride_factor));
            add_latency_cells(table, size, &m, v);
            nb_cell_real(table, "extra_us", extra);
            nb_cell_real(table, "ratio", c.ratio);
            nb_cell_real(table, "noise_us", c.noise_floor_us);
            if (k == counts - 1)
                cost_summary_add(&costs, &c, extra, size, i == summary_index);
        }
    }
    free(send);
    free(recv);

    if (ctx->result != NULL) {
        nb_result *r = ctx->result;
        nb_summary_int(r, "cost_size_bytes", (long long)summary_bytes);
        nb_summary_int(r, "cost_segments", vs->segments[counts - 1]);
        write_cost_summary(r, &costs, summary_bytes);
    }
}

int vector_finish(nb_options *o, void *settings)
{
    const vector_settings *vs = settings;
    if (!o->sizes_given && parse_default_sizes(VECTOR_DEFAULT_SIZES, o) != 0)
        return nb_usage_error("vector: internal error: bad default sizes");
    for (size_t i = 0; i < o->size_count; i++)
        for (size_t k = 0; k < vs->segment_count; k++)
            if (o->sizes[i] == 0 || o->sizes[i] % (size_t)vs->segments[k] != 0)
                return nb_usage_error("vector: size %zu does not split into %d equal segments; "
                                      "every size must be a positive multiple of every "
                                      "--segments count (e.g. --sizes 64,1K,64K with "
                                      "--segments 1,2,4,...,64)",
                                      o->sizes[i], vs->segments[k]);
    size_t largest = o->sizes[o->size_count - 1];
    if (largest * (size_t)vs->stride_factor > (size_t)INT_MAX)
        return nb_usage_error("vector: --stride-factor %d x size %zu exceeds the 2 GiB an MPI "
                              "vector's extent may span here; lower either",
                              vs->stride_factor, largest);
    return 0;
}

unsigned long long vector_buffer_bytes(const nb_options *o, char *how, size_t length,
                                       const char **hint)
{
    const vector_settings *vs = o->settings;
    unsigned long long largest = o->size_count > 0 ? o->sizes[o->size_count - 1] : 0;
    unsigned long long extent = largest * (unsigned long long)vs->stride_factor;
    snprintf(how, length, "send and receive buffers of size %llu x --stride-factor %d = "
             "%llu bytes", largest, vs->stride_factor, 2 * extent);
    *hint = " or --stride-factor";
    return 2 * extent;
}
