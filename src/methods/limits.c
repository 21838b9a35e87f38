/* limits.c - the limits of a job's cores: the floor a message can reach (a cache line's round
 * trip between the cores of ranks 0 and 1 through shared memory) and the ceiling of a copy (one
 * core's, two cores' at once, and every rank's at once, memcpy bandwidth per size). */
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "limits_catalogue.h"

/* A flag gets a 128-byte block of its own: adjacent-line prefetch pairs 64-byte lines, and two
 * flags in one pair would be one line ping-ponging both ways. */
#define LIMITS_FLAG_STRIDE 128
/* Spins before a yield: two ranks bound to one core must still make progress (a broken
 * placement is measured as slow, not hung). */
#define LIMITS_SPINS_BEFORE_YIELD 4096
/* Fewest copies of one repetition. */
#define LIMITS_MIN_COPIES 3

typedef struct {
    atomic_long *mine, *peer;   /* this rank's flag and the peer's, in the shared window */
    long sequence;              /* the last value exchanged, the same on both ranks */
    int rank;
} flag_state;

static void wait_for(atomic_long *flag, long value)
{
    unsigned spins = 0;
    while (atomic_load_explicit(flag, memory_order_acquire) != value) {
        if (++spins % LIMITS_SPINS_BEFORE_YIELD == 0)
            sched_yield();
    }
}

/* One iteration = one round trip of a cache line: rank 0 writes, rank 1 answers. */
static double flag_loop(void *state, long iterations)
{
    flag_state *s = state;
    long first = s->sequence;
    double start = MPI_Wtime();
    for (long i = 1; i <= iterations; i++) {
        if (s->rank == 0) {
            atomic_store_explicit(s->mine, first + i, memory_order_release);
            wait_for(s->peer, first + i);
        } else {
            wait_for(s->peer, first + i);
            atomic_store_explicit(s->mine, first + i, memory_order_release);
        }
    }
    double elapsed = MPI_Wtime() - start;
    s->sequence = first + iterations;
    return elapsed;
}

typedef struct {
    unsigned char *source, *target;
    size_t size;
    int copying;                /* 0: this rank only keeps the count (one-core figure) */
} copy_state;

static double copy_loop(void *state, long iterations)
{
    copy_state *s = state;
    if (!s->copying)
        return 0.0;
    double start = MPI_Wtime();
    for (long i = 0; i < iterations; i++) {
        memcpy(s->target, s->source, s->size);
        /* the copy is used: the compiler may not drop or merge it */
        __asm__ volatile("" : : "r"(s->target) : "memory");
    }
    return MPI_Wtime() - start;
}

static double noise_percent(const nb_measurement *m)
{
    return m->median_us > 0.0 ? 100.0 * 1.4826 * m->mad_us / m->median_us : NAN;
}

void nb_measure_floor(const nb_context *ctx, int warn_apart)
{
    const nb_options *o = ctx->options;
    MPI_Comm node;
    MPI_Comm_split_type(ctx->pair, MPI_COMM_TYPE_SHARED, ctx->rank, MPI_INFO_NULL, &node);
    int on_node = 0, shared = 0;
    MPI_Comm_size(node, &on_node);
    /* Both ranks must agree whether the floor is measured. */
    int local_ok = on_node == 2;
    MPI_Allreduce(&local_ok, &shared, 1, MPI_INT, MPI_MIN, ctx->pair);
    if (!shared) {
        MPI_Comm_free(&node);
        if (ctx->result != NULL) {
            nb_summary_null(ctx->result, "floor_oneway_min_us");
            nb_summary_null(ctx->result, "floor_oneway_median_us");
            nb_summary_null(ctx->result, "floor_noise_percent");
            if (warn_apart)
                nb_warning(ctx->result, "the ranks run on different nodes: no shared memory, "
                                        "so no cache-line floor (floor_oneway_* null)");
        }
        return;
    }
    MPI_Win window;
    atomic_long *base = NULL;
    MPI_Aint bytes = LIMITS_FLAG_STRIDE;
    MPI_Win_allocate_shared(bytes, LIMITS_FLAG_STRIDE, MPI_INFO_NULL, node, &base, &window);
    atomic_long *flags[2];
    for (int r = 0; r < 2; r++) {
        MPI_Aint size;
        int unit;
        void *where;
        MPI_Win_shared_query(window, r, &size, &unit, &where);
        flags[r] = where;
    }
    MPI_Win_lock_all(MPI_MODE_NOCHECK, window);
    atomic_store_explicit(flags[ctx->rank], 0, memory_order_release);
    MPI_Win_sync(window);
    MPI_Barrier(ctx->pair);
    flag_state state = {.mine = flags[ctx->rank], .peer = flags[1 - ctx->rank], .rank = ctx->rank};
    nb_measurement m;
    nb_measure(ctx, flag_loop, &state, LIMITS_MIN_COPIES, o->iterations, o->time_cap_ms * 1e-3,
               o->repetitions, &m);
    MPI_Win_unlock_all(window);
    MPI_Win_free(&window);
    MPI_Comm_free(&node);
    if (ctx->result != NULL) {
        nb_check_timer_resolution(ctx, &m, "floor_oneway_median_us");
        nb_summary_real(ctx->result, "floor_oneway_min_us", m.min_us / 2);
        nb_summary_real(ctx->result, "floor_oneway_median_us", m.median_us / 2);
        nb_summary_real(ctx->result, "floor_noise_percent", noise_percent(&m));
    }
}

static double copy_MBps(size_t size, double time_us)
{
    return time_us > 0.0 ? (double)size / time_us : NAN;
}

/* Every rank of `comm` copying at once, each its own buffers; per repetition the slowest
 * core's figure (on rank 0). */
static void measure_copy_at_once(const nb_options *o, MPI_Comm comm, copy_state *state,
                                 nb_measurement *m)
{
    state->copying = 1;
    nb_loop loop = nb_options_loop(o, comm, copy_loop, state, LIMITS_MIN_COPIES,
                                   NB_PACE_BY_SLOWEST);
    loop.figure = NB_FIGURE_SLOWEST;
    nb_drive(&loop, m);
}

void run_limits(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    size_t largest = o->sizes[o->size_count - 1];
    copy_state state = {.source = nb_buffer_new(largest), .target = nb_buffer_new(largest)};
    memset(state.source, 0x5a, largest);

    nb_table *table = NULL;
    if (ctx->result != NULL) {
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        nb_param_common(ctx);
        table = nb_result_add_declared_table(ctx->result, &limits_copy_table);
    }
    /* The floor, one core and two cores: ranks 0 and 1 (a pair's cores); every rank of the job
     * joins the all-ranks copy (a dense pattern's ceiling: the node's cores share its memory). */
    MPI_Comm pair = MPI_COMM_NULL;
    MPI_Comm_split(ctx->pair, ctx->rank < 2 ? 0 : MPI_UNDEFINED, ctx->rank, &pair);
    nb_context pair_ctx = *ctx;
    pair_ctx.pair = pair;
    pair_ctx.size = 2;
    if (pair != MPI_COMM_NULL)
        nb_measure_floor(&pair_ctx, 1);

    double one_peak = -1.0, two_peak = -1.0, all_peak = -1.0;
    size_t one_peak_size = 0;
    for (size_t i = 0; i < o->size_count; i++) {
        size_t size = o->sizes[i];
        state.size = size;
        nb_measurement one, two, all;
        if (pair != MPI_COMM_NULL) {
            /* one core: rank 0 copies, rank 1 keeps the driver's count and barriers */
            state.copying = ctx->rank == 0;
            nb_measure(&pair_ctx, copy_loop, &state, LIMITS_MIN_COPIES, o->iterations,
                       o->time_cap_ms * 1e-3, o->repetitions, &one);
            measure_copy_at_once(o, pair, &state, &two);
        }
        /* with two ranks every rank is the pair: its figure, not measured twice */
        if (ctx->size > 2)
            measure_copy_at_once(o, ctx->pair, &state, &all);
        else
            all = two;
        if (ctx->rank != 0)
            continue;
        /* no per-copy timer rule: the loop of many copies is what is timed, at least
         * LIMITS_MIN_COPIES and normally --time-cap-ms long */
        double one_median = copy_MBps(size, one.median_us);
        double two_median = copy_MBps(size, two.median_us);
        nb_table_add_row(table);
        nb_cell_int(table, "size_bytes", (long long)size);
        nb_cell_int(table, "iterations", one.iterations);
        nb_cell_real(table, "copy_one_core_min_MBps", copy_MBps(size, one.max_us));
        nb_cell_real(table, "copy_one_core_median_MBps", one_median);
        nb_cell_real(table, "copy_one_core_max_MBps", copy_MBps(size, one.min_us));
        nb_cell_real(table, "copy_one_core_noise_percent", noise_percent(&one));
        nb_cell_real(table, "copy_two_cores_median_MBps", two_median);
        nb_cell_real(table, "copy_two_cores_noise_percent", noise_percent(&two));
        double all_median = copy_MBps(size, all.median_us);
        nb_cell_real(table, "copy_all_ranks_median_MBps", all_median);
        nb_cell_real(table, "copy_all_ranks_noise_percent", noise_percent(&all));
        if (one_median > one_peak) {
            one_peak = one_median;
            one_peak_size = size;
        }
        if (two_median > two_peak)
            two_peak = two_median;
        if (all_median > all_peak)
            all_peak = all_median;
    }
    if (ctx->result != NULL) {
        nb_summary_real(ctx->result, "copy_one_core_peak_MBps", one_peak);
        nb_summary_int(ctx->result, "copy_one_core_peak_size_bytes", (long long)one_peak_size);
        nb_summary_real(ctx->result, "copy_two_cores_peak_MBps", two_peak);
        nb_summary_real(ctx->result, "copy_all_ranks_peak_MBps", all_peak);
    }
    if (pair != MPI_COMM_NULL)
        MPI_Comm_free(&pair);
    free(state.source);
    free(state.target);
}
