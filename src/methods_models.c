/* methods_models.c - collectives against what the network can do.
 *
 * models: LogGP predictions of the common collective algorithms (binomial-tree broadcast and
 * reduce, recursive-doubling allreduce, recursive-doubling or ring allgather, pairwise-exchange
 * alltoall), from the LogGP parameters of a `netbench loggp` result or of a quick PRTT
 * measurement (Hoefler, Schneider, Lumsdaine, "LogGP in Theory and Practice", sections 2 and 4),
 * beside the same collectives timed call by call; measured / predicted per collective and size.
 *
 * consistency: self-consistency rules of an MPI library (Traff, Gropp, Thakur, "Self-consistent
 * MPI performance guidelines"): a collective must not be slower than a mock-up of it made of
 * other collectives (MPI_Allreduce(n) <= MPI_Reduce(n) + MPI_Bcast(n), ...), nor than a more
 * general one (MPI_Reduce(n) <= MPI_Allreduce(n)). Both sides are timed; a rule is violated at a
 * size only when its left side exceeds its right side by more than the noise the repetitions
 * show. A violation is a finding about the MPI library, not a failure of the program.
 *
 * Timing (both methods): every call timed alone in a time window against clocks synchronised to
 * rank 0, the approach of methods_collectives.c (Hoefler section 4: loop/n underestimates a
 * collective), here for an operation of one or two collectives (a mock-up is timed as a unit).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analysis.h"
#include "methods.h"

/* ---- the window timing (the approach of methods_collectives.c) ---------------------------- */

#define WIN_FACTOR 2.0             /* window = max(2 x call estimate + 2 x clock error, 5 us) */
#define WIN_MIN_S 5e-6
#define WIN_SYNC_EXCHANGES 20      /* ping-pongs per rank of one clock synchronisation */
#define WIN_WARMUP_CALLS 3
#define WIN_ESTIMATE_CALLS 5
#define WIN_START_DELAY_S 1e-3     /* T0 lies this far ahead when rank 0 broadcasts it */
#define WIN_MAX_LATE_SHARE 0.10    /* more late calls: the window doubles, the block is redone */
#define WIN_MAX_RETRIES 3
#define WIN_TAG_CLOCK 11
#define WIN_TAG_PROGRESS 12        /* never sent: MPI_Iprobe on it only drives progress */

/* The collectives the operations are made of. Sizes: bcast, reduce, allreduce `total` bytes
 * (reductions: MPI_FLOAT sums, total / 4 values, at least 1); gather, scatter, allgather
 * `block` bytes per rank; alltoall `block` bytes per peer; root 0. */
typedef enum {
    PRIM_BCAST,
    PRIM_REDUCE,
    PRIM_ALLREDUCE,
    PRIM_GATHER,
    PRIM_SCATTER,
    PRIM_ALLGATHER,
    PRIM_ALLTOALL,
} prim_collective;

/* An operation: one collective, or a mock-up of two called back to back. */
typedef struct {
    const char *name;
    int count;
    prim_collective calls[2];
} operation;

typedef struct {
    MPI_Comm comm;
    int rank;
    int ranks;
    unsigned char *send;
    unsigned char *recv;
    int total;                 /* bytes of bcast, reduce, allreduce */
    int block;                 /* bytes per rank (gather, scatter, allgather) or per peer */
    const operation *op;
} op_state;

static void call_collective(const op_state *s, prim_collective c)
{
    int floats = s->total / (int)sizeof(float);
    if (floats < 1)
        floats = 1;
    switch (c) {
    case PRIM_BCAST:
        MPI_Bcast(s->recv, s->total, MPI_BYTE, 0, s->comm);
        break;
    case PRIM_REDUCE:
        MPI_Reduce(s->send, s->recv, floats, MPI_FLOAT, MPI_SUM, 0, s->comm);
        break;
    case PRIM_ALLREDUCE:
        MPI_Allreduce(s->send, s->recv, floats, MPI_FLOAT, MPI_SUM, s->comm);
        break;
    case PRIM_GATHER:
        MPI_Gather(s->send, s->block, MPI_BYTE, s->recv, s->block, MPI_BYTE, 0, s->comm);
        break;
    case PRIM_SCATTER:
        /* the scattered block lands where the mock-up's allgather sends it from */
        MPI_Scatter(s->send, s->block, MPI_BYTE, s->recv, s->block, MPI_BYTE, 0, s->comm);
        break;
    case PRIM_ALLGATHER:
        MPI_Allgather(s->send, s->block, MPI_BYTE, s->recv, s->block, MPI_BYTE, s->comm);
        break;
    case PRIM_ALLTOALL:
        MPI_Alltoall(s->send, s->block, MPI_BYTE, s->recv, s->block, MPI_BYTE, s->comm);
        break;
    }
}

static void call_operation(const op_state *s)
{
    for (int i = 0; i < s->op->count; i++)
        call_collective(s, s->op->calls[i]);
}

static void out_of_memory(MPI_Comm comm)
{
    fprintf(stderr, "netbench: out of memory\n");
    MPI_Abort(comm, 1);
}

/* Collective: this rank's clock offset to rank 0 (local - rank 0) from the shortest of a few
 * ping-pongs; on rank 0 *error is the largest error bound (half that round trip). */
static double sync_clock(const op_state *s, double *error)
{
    double offset = 0.0;
    double *offsets = NULL;
    *error = 0.0;
    if (s->rank == 0) {
        offsets = calloc((size_t)s->ranks, sizeof *offsets);
        if (offsets == NULL)
            out_of_memory(s->comm);
        for (int r = 1; r < s->ranks; r++) {
            double best = INFINITY;
            for (int k = 0; k < WIN_SYNC_EXCHANGES; k++) {
                double remote = 0.0, sent = MPI_Wtime();
                MPI_Send(&sent, 1, MPI_DOUBLE, r, WIN_TAG_CLOCK, s->comm);
                MPI_Recv(&remote, 1, MPI_DOUBLE, r, WIN_TAG_CLOCK, s->comm, MPI_STATUS_IGNORE);
                double back = MPI_Wtime();
                if (back - sent < best) {
                    best = back - sent;
                    offsets[r] = remote - (sent + back) / 2.0;
                }
            }
            if (best / 2.0 > *error)
                *error = best / 2.0;
        }
    } else {
        for (int k = 0; k < WIN_SYNC_EXCHANGES; k++) {
            double ping = 0.0;
            MPI_Recv(&ping, 1, MPI_DOUBLE, 0, WIN_TAG_CLOCK, s->comm, MPI_STATUS_IGNORE);
            double now = MPI_Wtime();
            MPI_Send(&now, 1, MPI_DOUBLE, 0, WIN_TAG_CLOCK, s->comm);
        }
    }
    MPI_Scatter(offsets, 1, MPI_DOUBLE, &offset, 1, MPI_DOUBLE, 0, s->comm);
    free(offsets);
    return offset;
}

/* One block: `calls` calls of the operation, each started at T0 + i x window on every rank;
 * a call's time is the latest end over the ranks minus its start. Figures valid on rank 0. */
typedef struct {
    int calls_valid;
    int late_calls;
    double window_s;
    double sync_error_s;
    double median_us;
} block_timing;

static void time_block(const op_state *s, int calls, block_timing *t)
{
    double *ends = malloc((size_t)calls * sizeof *ends);
    double *latest = malloc((size_t)calls * sizeof *latest);
    double *times = malloc((size_t)calls * sizeof *times);
    int *late = malloc((size_t)calls * sizeof *late);
    int *late_any = malloc((size_t)calls * sizeof *late_any);
    if (ends == NULL || latest == NULL || times == NULL || late == NULL || late_any == NULL)
        out_of_memory(s->comm);
    memset(t, 0, sizeof *t);
    t->median_us = NAN;

    for (int k = 0; k < WIN_WARMUP_CALLS; k++)
        call_operation(s);
    double durations[WIN_ESTIMATE_CALLS];
    for (int k = 0; k < WIN_ESTIMATE_CALLS; k++) {
        MPI_Barrier(s->comm);
        double start = MPI_Wtime();
        call_operation(s);
        durations[k] = MPI_Wtime() - start;
    }
    double local = nb_median(durations, WIN_ESTIMATE_CALLS), estimate = 0.0;
    MPI_Allreduce(&local, &estimate, 1, MPI_DOUBLE, MPI_MAX, s->comm);

    double window = 0.0;
    for (int attempt = 0; attempt <= WIN_MAX_RETRIES; attempt++) {
        double error = 0.0, offset = sync_clock(s, &error);
        if (error > t->sync_error_s)
            t->sync_error_s = error;
        double schedule[2] = {0.0, 0.0};
        if (s->rank == 0) {
            window = attempt == 0 ? fmax(WIN_FACTOR * estimate + 2.0 * error, WIN_MIN_S)
                                  : 2.0 * window;
            schedule[0] = MPI_Wtime() + WIN_START_DELAY_S + 2.0 * error;
            schedule[1] = window;
        }
        MPI_Bcast(schedule, 2, MPI_DOUBLE, 0, s->comm);
        window = schedule[1];
        double first = schedule[0] + offset;
        for (int i = 0; i < calls; i++) {
            double start = first + (double)i * window, now = MPI_Wtime();
            late[i] = now > start;
            /* The wait drives MPI's progress: with MPICH a peer's rendezvous transfer of the
             * previous call completes only while this rank is inside MPI, so a rank merely
             * spinning on the clock made every other call late (reduce at 64 KiB). */
            while (now < start) {
                int flag = 0;
                MPI_Iprobe(MPI_ANY_SOURCE, WIN_TAG_PROGRESS, s->comm, &flag, MPI_STATUS_IGNORE);
                now = MPI_Wtime();
            }
            call_operation(s);
            ends[i] = MPI_Wtime() - offset;
        }
        MPI_Allreduce(late, late_any, calls, MPI_INT, MPI_MAX, s->comm);
        MPI_Reduce(ends, latest, calls, MPI_DOUBLE, MPI_MAX, 0, s->comm);
        int late_count = 0;
        for (int i = 0; i < calls; i++)
            late_count += late_any[i] != 0;
        if (attempt == 0 || late_count <= t->late_calls) {
            t->late_calls = late_count;
            t->window_s = window;
            if (s->rank == 0) {
                int valid = 0;
                for (int i = 0; i < calls; i++)
                    if (!late_any[i])
                        times[valid++] = (latest[i] - (schedule[0] + (double)i * window)) * 1e6;
                t->calls_valid = valid;
                t->median_us = nb_median(times, (size_t)valid);
            }
        }
        if ((double)late_count <= WIN_MAX_LATE_SHARE * (double)calls)
            break;
    }
    free(ends);
    free(latest);
    free(times);
    free(late);
    free(late_any);
}

/* An operation at one size over the repetitions (rounds that interleave the operations, so that
 * a slow phase of the machine spreads over all of them instead of biasing one). */
typedef struct {
    double round_median_us[NB_MAX_REPETITIONS];
    int calls_valid;           /* over the rounds */
    int late_calls;
    int calls;
    int rounds;
    int rounds_valid;          /* rounds with at least half of their calls valid */
    double sync_error_s;
    double median_us;          /* median of the valid rounds' medians */
    double spread_us;          /* max - min of the round medians */
} op_figures;

/* Over the rounds that have a median (NaN: fewer than half of the round's calls were valid; a
 * median of the few calls a descheduled rank left is no figure). */
static void summarise(op_figures *f, int rounds)
{
    double kept[NB_MAX_REPETITIONS] = {0};
    size_t count = 0;
    for (int r = 0; r < rounds; r++)
        if (isfinite(f->round_median_us[r]))
            kept[count++] = f->round_median_us[r];
    f->rounds_valid = (int)count;
    f->median_us = nb_median(kept, count);
    f->spread_us = count > 0 ? nb_max(kept, count) - nb_min(kept, count) : NAN;
}

/* Times ops[0..count-1] at one size for `rounds` rounds; every rank calls it. */
static void time_operations(op_state *s, const operation *const *ops, size_t count, int calls,
                            int rounds, op_figures *figures)
{
    memset(figures, 0, count * sizeof *figures);
    for (int r = 0; r < rounds; r++) {
        for (size_t k = 0; k < count; k++) {
            block_timing t;
            s->op = ops[k];
            time_block(s, calls, &t);
            figures[k].round_median_us[r] = 2 * t.calls_valid >= calls ? t.median_us : NAN;
            figures[k].calls_valid += t.calls_valid;
            figures[k].late_calls += t.late_calls;
            figures[k].calls += calls;
            figures[k].rounds++;
            if (t.sync_error_s > figures[k].sync_error_s)
                figures[k].sync_error_s = t.sync_error_s;
        }
    }
    for (size_t k = 0; k < count; k++)
        summarise(&figures[k], rounds);
}

/* Rank 0: unreliable entries for a timed operation. */
static void check_figures(const nb_context *ctx, const char *name, size_t size,
                          const op_figures *f)
{
    char quantity[96];
    snprintf(quantity, sizeof quantity, "%s[size_bytes=%zu]", name, size);
    /* A round's median counts when at least half of its calls were valid (late calls are left
     * out: one preemption of a rank makes every call of its time slice late, whatever the
     * window); the figure needs at least 2 such rounds and half of them. */
    if (f->rounds_valid < 2 || 2 * f->rounds_valid < f->rounds)
        nb_unreliable(ctx->result, quantity, "only %d of %d rounds had half of their calls "
                      "valid (%d of %d calls late: a rank reached the start after it, at the "
                      "largest window tried)", f->rounds_valid, f->rounds, f->late_calls,
                      f->calls);
    else if (!(f->median_us > 0.0))
        nb_unreliable(ctx->result, quantity, "median time %.3g us is not positive",
                      f->median_us);
    else if (f->median_us < 10.0 * ctx->timer_tick_s * 1e6)
        nb_unreliable(ctx->result, quantity, "median time %.3g us is below 10 x MPI_Wtick",
                      f->median_us);
}

static const nb_column timing_columns[] = {
    NB_KEY("operation", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("calls", "count"),
    NB_KEY("calls_valid", "count"),
    NB_LOWER("late_calls", "count"),
    NB_KEY("rounds_valid", "count"),
    NB_LOWER("time_median_us", "us"),
    NB_LOWER("time_spread_us", "us"),
};
static const nb_table_spec timings_table = NB_TABLE_SPEC("timings", timing_columns);

static void add_timing_row(nb_table *table, const char *name, size_t size, const op_figures *f)
{
    nb_table_add_row(table);
    nb_cell_text(table, "operation", name);
    nb_cell_int(table, "size_bytes", (long long)size);
    nb_cell_int(table, "calls", f->calls);
    nb_cell_int(table, "calls_valid", f->calls_valid);
    nb_cell_int(table, "late_calls", f->late_calls);
    nb_cell_int(table, "rounds_valid", f->rounds_valid);
    nb_cell_real(table, "time_median_us", f->median_us);
    nb_cell_real(table, "time_spread_us", f->spread_us);
}

static op_state new_state(const nb_context *ctx, size_t buffer_bytes)
{
    op_state s = {.comm = ctx->pair, .rank = ctx->rank, .ranks = ctx->size};
    s.send = nb_buffer_new(buffer_bytes);
    s.recv = nb_buffer_new(buffer_bytes);
    return s;
}

static int size_fits_int(size_t bytes)
{
    return bytes <= (size_t)INT_MAX;
}

/* ================================================================================================
 * models
 * ============================================================================================== */

#define MODELS_MAX_RANGES 64
#define MODELS_MAX_QUICK NB_MAX_SIZES
#define MODELS_PRTT_MESSAGES 10    /* n of PRTT(n, d, s), Hoefler's default */
#define MODELS_MIN_ROUNDS 3
#define MODELS_LIBRARY_LENGTH 256

/* One protocol range of a loggp result (its `ranges` table). */
typedef struct {
    double first_size, last_size;
    double g_us, G_us_per_byte, o_s_us, o_r_us;
} loggp_range;

typedef struct {
    const char *loggp_json;           /* --loggp-json */
    int calls;                        /* --calls */
    /* filled by models_finish from the file */
    double L_us;
    loggp_range ranges[MODELS_MAX_RANGES];
    size_t range_count;
    char file_library[MODELS_LIBRARY_LENGTH];   /* first line of its mpi.library */
    int nulls_taken_as_zero;          /* unresolved parameters of the file read as 0 */
} models_settings;

/* The quick measurement: per size s, PRTT(1,0,s)/2 (one message end to end, eq. (1)), G_all
 * eq. (5), o_s eq. (4), o_r by Kielmann's method. */
typedef struct {
    double size;
    double prtt_1_0_us;
    double one_message_us;
    double G_all_us;
    double o_s_us;
    double o_r_us;
} quick_point;

/* The LogGP terms of a message of m bytes. */
typedef struct {
    double one_message_us;     /* T(m) = L + (m - 1) G: from the send's start to the received */
    double send_interval_us;   /* S(m) = max(o_s, g + (m - 1) G): between two sends of a rank */
    double o_r_us;
} loggp_terms;

typedef struct {
    const models_settings *file;      /* or NULL: the quick points */
    const quick_point *points;
    size_t point_count;
} loggp_source;

static double interpolate(const quick_point *p, size_t n, double m, size_t field)
{
    /* field: offset of a double in quick_point */
#define FIELD(i) (*(const double *)((const char *)&p[(i)] + field))
    if (n == 1)
        return FIELD(0);
    size_t i = 0;
    while (i + 2 < n && m > p[i + 1].size)
        i++;
    double x0 = p[i].size, x1 = p[i + 1].size;
    double y0 = FIELD(i), y1 = FIELD(i + 1);
#undef FIELD
    return y0 + (y1 - y0) * (m - x0) / (x1 - x0);
}

static loggp_terms terms_at(const loggp_source *src, double m)
{
    loggp_terms t;
    if (src->file != NULL) {
        const models_settings *f = src->file;
        size_t r = 0;
        while (r + 1 < f->range_count && m >= f->ranges[r + 1].first_size)
            r++;
        const loggp_range *range = &f->ranges[r];
        t.one_message_us = f->L_us + (m - 1.0) * range->G_us_per_byte;
        t.send_interval_us = fmax(range->o_s_us, range->g_us + (m - 1.0) * range->G_us_per_byte);
        t.o_r_us = range->o_r_us;
        return t;
    }
    const quick_point *p = src->points;
    size_t n = src->point_count;
    t.one_message_us = interpolate(p, n, m, offsetof(quick_point, one_message_us));
    double gall = interpolate(p, n, m, offsetof(quick_point, G_all_us));
    double os = interpolate(p, n, m, offsetof(quick_point, o_s_us));
    t.send_interval_us = fmax(fmax(os, gall), 0.0);
    t.o_r_us = fmax(interpolate(p, n, m, offsetof(quick_point, o_r_us)), 0.0);
    return t;
}

/* The collectives modelled, and their algorithms. */
typedef enum { MODEL_BCAST, MODEL_REDUCE, MODEL_ALLREDUCE, MODEL_ALLGATHER, MODEL_ALLTOALL,
               MODEL_COUNT } model_kind;

static const operation model_ops[MODEL_COUNT] = {
    {"bcast", 1, {PRIM_BCAST}},
    {"reduce", 1, {PRIM_REDUCE}},
    {"allreduce", 1, {PRIM_ALLREDUCE}},
    {"allgather", 1, {PRIM_ALLGATHER}},
    {"alltoall", 1, {PRIM_ALLTOALL}},
};

static int is_power_of_two(int p)
{
    return p > 0 && (p & (p - 1)) == 0;
}

static int floor_log2(int p)
{
    int k = 0;
    while ((2 << k) <= p)
        k++;
    return k;
}

/* Binomial-tree broadcast from rank 0 (the tree of MPICH and Open MPI): a rank that has the
 * data at time t sends to its children, the farthest first, the j-th at t + j S(m); a child has
 * it T(m) after that send started. The time is the latest rank's. */
static double model_bcast(int P, loggp_terms t)
{
    double *have = malloc((size_t)P * sizeof *have), latest = 0.0;
    if (have == NULL)
        return NAN;
    have[0] = 0.0;
    for (int r = 0; r < P; r++) {
        /* children of r: r + mask for the masks below r's lowest set bit (all, for rank 0) */
        int low = r == 0 ? 1 << (floor_log2(P) + 1) : r & -r;
        int j = 0;
        for (int mask = low >> 1; mask >= 1; mask >>= 1) {
            if (r + mask >= P)
                continue;
            have[r + mask] = have[r] + j * t.send_interval_us + t.one_message_us;
            j++;
        }
        if (have[r] > latest)
            latest = have[r];
    }
    free(have);
    return latest;
}

/* Binomial-tree reduce to rank 0, the mirror of the broadcast: a rank receives its children's
 * partial results, the nearest first; each arrives T(m) after the child was done, takes o_r after
 * the previous receive at the earliest, and costs C(m) (MPI_Reduce_local of m bytes) to combine;
 * then the rank sends its own. The time is when rank 0 is done. */
static double model_reduce(int P, loggp_terms t, double combine_us)
{
    double *done = malloc((size_t)P * sizeof *done), result = NAN;
    if (done == NULL)
        return NAN;
    /* children have higher ranks: go from the last rank down */
    for (int r = P - 1; r >= 0; r--) {
        int low = r == 0 ? 1 << (floor_log2(P) + 1) : r & -r;
        double at = 0.0;
        int first = 1;
        for (int mask = 1; mask < low; mask <<= 1) {
            if (r + mask >= P)
                break;
            double arrival = done[r + mask] + t.one_message_us;
            at = fmax(first ? arrival : at + t.o_r_us, arrival) + combine_us;
            first = 0;
        }
        done[r] = at;
    }
    result = done[0];
    free(done);
    return result;
}

/* Recursive doubling: log2 P' exchange steps of m bytes (P' the largest power of two <= P),
 * each T(m) + C(m); with P not a power of two, one step before (the extra ranks hand in their
 * data: T(m) + C(m)) and one after (they get the result: T(m)). */
static double model_allreduce(int P, loggp_terms t, double combine_us)
{
    int steps = floor_log2(P);
    double time = steps * (t.one_message_us + combine_us);
    if (!is_power_of_two(P))
        time += 2.0 * t.one_message_us + combine_us;
    return time;
}

/* Allgather of b bytes per rank: recursive doubling for P a power of two, step k exchanges
 * 2^k b bytes: sum over k < log2 P of T(2^k b); otherwise the ring: (P - 1) T(b). */
static double model_allgather(const loggp_source *src, int P, double block)
{
    double time = 0.0;
    if (is_power_of_two(P)) {
        for (int k = 0; (1 << k) < P; k++)
            time += terms_at(src, block * (double)(1 << k)).one_message_us;
    } else {
        time = (P - 1) * terms_at(src, block).one_message_us;
    }
    return time;
}

/* Pairwise exchange: P - 1 steps, each an exchange of b bytes with one peer: (P - 1) T(b). */
static double model_alltoall(const loggp_source *src, int P, double block)
{
    return (P - 1) * terms_at(src, block).one_message_us;
}

static const char *model_algorithm(model_kind kind, int P)
{
    switch (kind) {
    case MODEL_BCAST:
        return "binomial_tree";
    case MODEL_REDUCE:
        return "binomial_tree";
    case MODEL_ALLREDUCE:
        return "recursive_doubling";
    case MODEL_ALLGATHER:
        return is_power_of_two(P) ? "recursive_doubling" : "ring";
    default:
        return "pairwise_exchange";
    }
}

/* ---- the quick LogGP measurement (no --loggp-json) ------------------------------------------ */

typedef struct {
    MPI_Comm pair;
    int rank;
    int size;
    int messages;
    double delay_s;
    void *send;
    void *recv;
} prtt_state;

/* PRTT(n, d, s) (Hoefler 2.2): n sends with d between them, one reply. */
static double prtt_loop(void *state, long rounds)
{
    const prtt_state *s = state;
    double start = MPI_Wtime();
    for (long r = 0; r < rounds; r++) {
        if (s->rank == 0) {
            for (int i = 0; i < s->messages; i++) {
                if (i > 0)
                    nb_busy_wait(s->delay_s);
                MPI_Send(s->send, s->size, MPI_BYTE, 1, NB_TAG_DATA, s->pair);
            }
            MPI_Recv(s->recv, s->size, MPI_BYTE, 1, NB_TAG_DATA, s->pair, MPI_STATUS_IGNORE);
        } else {
            for (int i = 0; i < s->messages; i++)
                MPI_Recv(s->recv, s->size, MPI_BYTE, 0, NB_TAG_DATA, s->pair, MPI_STATUS_IGNORE);
            MPI_Send(s->send, s->size, MPI_BYTE, 0, NB_TAG_DATA, s->pair);
        }
    }
    return MPI_Wtime() - start;
}

/* o_r by Kielmann's method: rank 0 waits d, so the reply has arrived, and times the receive. */
static double receive_loop(void *state, long rounds)
{
    const prtt_state *s = state;
    double receiving = 0.0;
    for (long r = 0; r < rounds; r++) {
        if (s->rank == 0) {
            MPI_Send(s->send, s->size, MPI_BYTE, 1, NB_TAG_DATA, s->pair);
            nb_busy_wait(s->delay_s);
            double start = MPI_Wtime();
            MPI_Recv(s->recv, s->size, MPI_BYTE, 1, NB_TAG_DATA, s->pair, MPI_STATUS_IGNORE);
            receiving += MPI_Wtime() - start;
        } else {
            MPI_Recv(s->recv, s->size, MPI_BYTE, 0, NB_TAG_DATA, s->pair, MPI_STATUS_IGNORE);
            MPI_Send(s->send, s->size, MPI_BYTE, 0, NB_TAG_DATA, s->pair);
        }
    }
    return receiving;
}

static double prtt(const nb_context *pair_ctx, prtt_state *s, int n, double delay_us,
                   nb_timed_loop loop)
{
    const nb_options *o = pair_ctx->options;
    nb_measurement m;
    s->messages = n;
    s->delay_s = delay_us * 1e-6;
    nb_measure(pair_ctx, loop, s, MODELS_MIN_ROUNDS, o->iterations, o->time_cap_ms * 1e-3,
               o->repetitions, &m);
    /* the fastest loop: on a shared node a loop is only ever lengthened (a preempted rank),
     * while the collectives' figures leave preempted calls out */
    double fastest = m.min_us;
    MPI_Bcast(&fastest, 1, MPI_DOUBLE, 0, pair_ctx->pair);
    return fastest;
}

/* Ranks 0 and 1 measure the sizes; the others wait at a barrier, sleeping between tests so
 * that they take no CPU time from a measuring rank on their core. */
static void quick_loggp(const nb_context *ctx, const size_t *sizes, size_t count,
                        quick_point *points)
{
    MPI_Comm pair = MPI_COMM_NULL;
    MPI_Comm_split(ctx->pair, ctx->rank < 2 ? 0 : MPI_UNDEFINED, ctx->rank, &pair);
    if (pair != MPI_COMM_NULL) {
        nb_context pair_ctx = *ctx;
        pair_ctx.pair = pair;
        pair_ctx.size = 2;
        size_t largest = sizes[count - 1];
        prtt_state s = {.pair = pair, .rank = ctx->rank};
        s.send = nb_buffer_new(largest);
        s.recv = nb_buffer_new(largest);
        int n = MODELS_PRTT_MESSAGES;
        for (size_t i = 0; i < count; i++) {
            s.size = (int)sizes[i];
            quick_point *p = &points[i];
            p->size = (double)sizes[i];
            p->prtt_1_0_us = prtt(&pair_ctx, &s, 1, 0.0, prtt_loop);
            double many = prtt(&pair_ctx, &s, n, 0.0, prtt_loop);
            p->G_all_us = (many - p->prtt_1_0_us) / (n - 1);
            /* d_G = PRTT(1,0,s) > G_all (section 2.3); PRTT(2,0,s) where it is not */
            double d_G = p->prtt_1_0_us;
            if (p->G_all_us > d_G)
                d_G = prtt(&pair_ctx, &s, 2, 0.0, prtt_loop);
            double delayed = prtt(&pair_ctx, &s, n, d_G, prtt_loop);
            p->o_s_us = (delayed - p->prtt_1_0_us) / (n - 1) - d_G;
            p->o_r_us = prtt(&pair_ctx, &s, 1, d_G, receive_loop);
            p->one_message_us = p->prtt_1_0_us / 2.0;
        }
        free(s.send);
        free(s.recv);
        MPI_Comm_free(&pair);
    }
    MPI_Request barrier;
    MPI_Ibarrier(ctx->pair, &barrier);
    int done = 0;
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
    while (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        if (ctx->rank >= 2)
            nanosleep(&pause, NULL);
    MPI_Bcast(points, (int)(count * sizeof *points), MPI_BYTE, 0, ctx->pair);
}

/* C(m): MPI_Reduce_local of m bytes of MPI_FLOAT (the combining step of a reduction), the
 * fastest of 5 loops of enough calls for 200 us, on rank 0. */
static double combine_time_us(size_t bytes)
{
    int floats = (int)(bytes / sizeof(float));
    if (floats < 1)
        floats = 1;
    float *in = nb_buffer_new((size_t)floats * sizeof(float));
    float *inout = nb_buffer_new((size_t)floats * sizeof(float));
    long calls = 1;
    double best = INFINITY;
    for (int trial = 0; trial < 8; trial++) {
        double start = MPI_Wtime();
        for (long i = 0; i < calls; i++)
            MPI_Reduce_local(in, inout, floats, MPI_FLOAT, MPI_SUM);
        double per_call = (MPI_Wtime() - start) / (double)calls;
        if (trial >= 3 && per_call < best)
            best = per_call;
        if ((double)calls * per_call < 200e-6 && calls < 1000000)
            calls *= 2;
    }
    free(in);
    free(inout);
    return best * 1e6;
}

/* ---- output ---------------------------------------------------------------------------------- */

static const nb_column model_columns[] = {
    NB_KEY("collective", ""),
    NB_KEY("algorithm", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("predicted_us", "us"),
    NB_KEY("combine_us", "us"),
    NB_LOWER("measured_median_us", "us"),
    NB_LOWER("measured_spread_us", "us"),
    NB_LOWER("measured_to_predicted", "ratio"),
};
static const nb_table_spec models_table = NB_TABLE_SPEC("models", model_columns);

static const nb_column range_columns[] = {
    NB_KEY("range", "count"),
    NB_KEY("first_size_bytes", "bytes"),
    NB_KEY("last_size_bytes", "bytes"),
    NB_KEY("g_us", "us"),
    NB_KEY("G_ns_per_byte", "ns_per_byte"),
    NB_KEY("o_s_us", "us"),
    NB_KEY("o_r_us", "us"),
};
static const nb_table_spec loggp_ranges_table = NB_TABLE_SPEC("loggp_ranges", range_columns);

static const nb_column quick_columns[] = {
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("prtt_1_0_us", "us"),
    NB_KEY("one_message_us", "us"),
    NB_KEY("G_all_us", "us"),
    NB_KEY("o_s_us", "us"),
    NB_KEY("o_r_us", "us"),
};
static const nb_table_spec loggp_quick_table = NB_TABLE_SPEC("loggp_quick", quick_columns);

/* A quick LogGP figure below 0 is noise larger than the quantity: null, flagged (the models
 * take it as 0). */
static void quick_cell(nb_result *r, nb_table *table, const char *column, double size,
                       double value)
{
    nb_cell_real(table, column, value >= 0.0 ? value : NAN);
    if (!(value >= 0.0)) {
        char quantity[96];
        snprintf(quantity, sizeof quantity, "%s[size_bytes=%.0f]", column, size);
        nb_unreliable(r, quantity, "measured %.3g: below the noise of the quick measurement "
                      "(taken as 0 by the models)", value);
    }
}

static void report_parameters(const nb_context *ctx, const loggp_source *src)
{
    nb_result *r = ctx->result;
    if (src->file != NULL) {
        const models_settings *f = src->file;
        nb_table *table = nb_result_add_declared_table(r, &loggp_ranges_table);
        for (size_t i = 0; i < f->range_count; i++) {
            const loggp_range *g = &f->ranges[i];
            nb_table_add_row(table);
            nb_cell_int(table, "range", (long long)i);
            nb_cell_int(table, "first_size_bytes", (long long)g->first_size);
            nb_cell_int(table, "last_size_bytes", (long long)g->last_size);
            nb_cell_real(table, "g_us", g->g_us);
            nb_cell_real(table, "G_ns_per_byte", g->G_us_per_byte * 1e3);
            nb_cell_real(table, "o_s_us", g->o_s_us);
            nb_cell_real(table, "o_r_us", g->o_r_us);
        }
        nb_summary_real(r, "L_us", f->L_us);
        nb_summary_real(r, "g_small_us", f->ranges[0].g_us);
        nb_summary_real(r, "o_s_small_us", f->ranges[0].o_s_us);
        nb_summary_real(r, "o_r_small_us", f->ranges[0].o_r_us);
        nb_summary_real(r, "G_large_ns_per_byte", f->ranges[f->range_count - 1].G_us_per_byte * 1e3);
        return;
    }
    const quick_point *p = src->points;
    size_t n = src->point_count;
    nb_table *table = nb_result_add_declared_table(r, &loggp_quick_table);
    for (size_t i = 0; i < n; i++) {
        nb_table_add_row(table);
        nb_cell_int(table, "size_bytes", (long long)p[i].size);
        nb_cell_real(table, "prtt_1_0_us", p[i].prtt_1_0_us);
        nb_cell_real(table, "one_message_us", p[i].one_message_us);
        quick_cell(r, table, "G_all_us", p[i].size, p[i].G_all_us);
        quick_cell(r, table, "o_s_us", p[i].size, p[i].o_s_us);
        quick_cell(r, table, "o_r_us", p[i].size, p[i].o_r_us);
    }
    double G = n >= 2 ? (p[n - 1].one_message_us - p[n - 2].one_message_us) /
                            (p[n - 1].size - p[n - 2].size)
                      : NAN;
    const char *keys[5] = {"L_us", "g_small_us", "o_s_small_us", "o_r_small_us",
                           "G_large_ns_per_byte"};
    double values[5] = {p[0].one_message_us, p[0].G_all_us, p[0].o_s_us, p[0].o_r_us, G * 1e3};
    for (int k = 0; k < 5; k++) {
        nb_summary_real(r, keys[k], values[k] >= 0.0 ? values[k] : NAN);
        if (!(values[k] >= 0.0))
            nb_unreliable(r, keys[k], "measured %.3g: below the noise of the quick measurement "
                          "(taken as 0 by the models)", values[k]);
    }
    for (size_t i = 0; i < n; i++) {
        char quantity[64];
        if (!(p[i].one_message_us > 0.0)) {
            snprintf(quantity, sizeof quantity, "one_message_us[size_bytes=%.0f]", p[i].size);
            nb_unreliable(r, quantity, "no positive round trip measured");
        }
    }
}

static void run_models(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const models_settings *ms = o->settings;
    nb_result *result = ctx->result;
    int P = ctx->size;

    /* buffers: allgather and alltoall move size x ranks bytes */
    size_t largest = o->sizes[o->size_count - 1], buffer = largest * (size_t)P;
    if (!size_fits_int(buffer)) {
        if (ctx->rank == 0)
            fprintf(stderr, "netbench: models: %zu bytes x %d ranks exceed an MPI int count; "
                    "lower --max-size\n", largest, P);
        MPI_Abort(ctx->pair, 1);
    }

    /* the LogGP parameters */
    quick_point *points = NULL;
    size_t point_count = 0;
    loggp_source src = {.file = ms->loggp_json != NULL ? ms : NULL};
    if (ms->loggp_json == NULL) {
        size_t quick_sizes[NB_MAX_SIZES + 1];
        quick_sizes[0] = 1;
        for (size_t i = 0; i < o->size_count; i++)
            quick_sizes[i + 1] = o->sizes[i];
        point_count = nb_sort_unique_sizes(quick_sizes, o->size_count + 1);
        points = calloc(point_count, sizeof *points);
        if (points == NULL)
            out_of_memory(ctx->pair);
        if (ctx->rank == 0)
            fprintf(stderr, "netbench models: quick LogGP measurement (%zu sizes)\n",
                    point_count);
        quick_loggp(ctx, quick_sizes, point_count, points);
        src.points = points;
        src.point_count = point_count;
    }

    /* C(m) for the reductions, rank 0's */
    double *combine = calloc(o->size_count, sizeof *combine);
    if (combine == NULL)
        out_of_memory(ctx->pair);
    if (ctx->rank == 0)
        for (size_t i = 0; i < o->size_count; i++)
            combine[i] = combine_time_us(o->sizes[i]);

    op_state s = new_state(ctx, buffer);
    const operation *ops[MODEL_COUNT];
    for (int k = 0; k < MODEL_COUNT; k++)
        ops[k] = &model_ops[k];
    op_figures *figures = calloc(o->size_count * MODEL_COUNT, sizeof *figures);
    if (figures == NULL)
        out_of_memory(ctx->pair);
    if (ctx->rank == 0)
        fprintf(stderr, "netbench models: timing %d collectives at %zu sizes\n", MODEL_COUNT,
                o->size_count);
    for (size_t i = 0; i < o->size_count; i++) {
        s.total = (int)o->sizes[i];
        s.block = (int)o->sizes[i];
        time_operations(&s, ops, MODEL_COUNT, ms->calls, o->repetitions,
                        &figures[i * MODEL_COUNT]);
    }

    if (result != NULL) {
        nb_param_int(result, "ranks", P);
        nb_param_sizes(ctx, "sizes_bytes", o->sizes, o->size_count);
        nb_param_int(result, "calls", ms->calls);
        nb_param_text(result, "synchronisation", "window");
        nb_param_text(result, "loggp_source", ms->loggp_json != NULL ? "file" : "quick");
        nb_param_common(ctx);
        if (ms->loggp_json == NULL)
            nb_param_int(result, "prtt_messages", MODELS_PRTT_MESSAGES);
        report_parameters(ctx, &src);
        if (ms->loggp_json != NULL) {
            char library[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
            int length = 0;
            MPI_Get_library_version(library, &length);
            library[strcspn(library, "\r\n")] = '\0';
            if (strcmp(library, ms->file_library) != 0)
                nb_warning(result, "the LogGP parameters of %s were measured with \"%s\", this "
                           "run uses \"%s\": the predictions are for another library",
                           ms->loggp_json, ms->file_library, library);
            if (ms->nulls_taken_as_zero > 0)
                nb_warning(result, "%d LogGP parameter(s) of %s are null (unresolved: below "
                           "the noise of their range) and were taken as 0",
                           ms->nulls_taken_as_zero, ms->loggp_json);
        }
        nb_table *table = nb_result_add_declared_table(result, &models_table);
        nb_table *timings = nb_result_add_declared_table(result, &timings_table);
        double ratios[NB_MAX_SIZES * MODEL_COUNT];
        size_t ratio_count = 0;
        double sync_error = 0.0;
        for (int k = 0; k < MODEL_COUNT; k++) {
            for (size_t i = 0; i < o->size_count; i++) {
                double m = (double)o->sizes[i];
                const op_figures *f = &figures[i * MODEL_COUNT + (size_t)k];
                loggp_terms t = terms_at(&src, m);
                double c = 0.0, predicted = NAN;
                switch ((model_kind)k) {
                case MODEL_BCAST:
                    predicted = model_bcast(P, t);
                    break;
                case MODEL_REDUCE:
                    c = combine[i];
                    predicted = model_reduce(P, t, c);
                    break;
                case MODEL_ALLREDUCE:
                    c = combine[i];
                    predicted = model_allreduce(P, t, c);
                    break;
                case MODEL_ALLGATHER:
                    predicted = model_allgather(&src, P, m);
                    break;
                default:
                    predicted = model_alltoall(&src, P, m);
                    break;
                }
                double ratio = predicted > 0.0 ? f->median_us / predicted : NAN;
                if (isfinite(ratio))
                    ratios[ratio_count++] = ratio;
                if (f->sync_error_s > sync_error)
                    sync_error = f->sync_error_s;
                nb_table_add_row(table);
                nb_cell_text(table, "collective", model_ops[k].name);
                nb_cell_text(table, "algorithm", model_algorithm((model_kind)k, P));
                nb_cell_int(table, "size_bytes", (long long)o->sizes[i]);
                nb_cell_real(table, "predicted_us", predicted);
                nb_cell_real(table, "combine_us", c);
                nb_cell_real(table, "measured_median_us", f->median_us);
                nb_cell_real(table, "measured_spread_us", f->spread_us);
                nb_cell_real(table, "measured_to_predicted", ratio);
                add_timing_row(timings, model_ops[k].name, o->sizes[i], f);
                check_figures(ctx, model_ops[k].name, o->sizes[i], f);
                if (!(predicted > 0.0)) {
                    char quantity[96];
                    snprintf(quantity, sizeof quantity,
                             "measured_to_predicted[collective=%s,size_bytes=%zu]",
                             model_ops[k].name, o->sizes[i]);
                    nb_unreliable(result, quantity, "the model predicts %.3g us (LogGP "
                                  "parameters at or below 0)", predicted);
                }
            }
        }
        nb_summary_real(result, "measured_to_predicted_median", nb_median(ratios, ratio_count));
        nb_summary_real(result, "measured_to_predicted_max", nb_max(ratios, ratio_count));
        nb_summary_real(result, "clock_sync_error_max_us", sync_error * 1e6);
        nb_summary_int(result, "models_compared", (long long)ratio_count);
    }
    free(figures);
    free(combine);
    free(points);
    free(s.send);
    free(s.recv);
}

/* ---- --loggp-json: a minimal JSON reader (netbench's own result files) ---------------------- */

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_type;

typedef struct json_value {
    json_type type;
    double number;
    char *string;
    char **keys;               /* objects */
    struct json_value **items; /* arrays and objects */
    size_t count;
} json_value;

typedef struct {
    const char *at;
    int depth;
} json_reader;

static void json_free(json_value *v)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < v->count; i++) {
        json_free(v->items[i]);
        if (v->keys != NULL)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    free(v);
}

static void json_skip_space(json_reader *r)
{
    while (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r')
        r->at++;
}

static char *json_parse_string(json_reader *r)
{
    if (*r->at != '"')
        return NULL;
    r->at++;
    size_t capacity = 64, used = 0;
    char *text = malloc(capacity);
    while (text != NULL && *r->at != '"') {
        char c = *r->at++;
        if (c == '\0') {
            free(text);
            return NULL;
        }
        if (c == '\\') {
            char e = *r->at++;
            c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b'
              : e == 'f' ? '\f' : e;
            if (e == 'u') { /* non-ASCII is not needed here: keep a placeholder */
                for (int k = 0; k < 4; k++)
                    if (*r->at != '\0')
                        r->at++;
                c = '?';
            } else if (e == '\0') {
                free(text);
                return NULL;
            }
        }
        if (used + 2 > capacity) {
            char *bigger = realloc(text, capacity *= 2);
            if (bigger == NULL)
                free(text);
            text = bigger;
            if (text == NULL)
                return NULL;
        }
        text[used++] = c;
    }
    if (text == NULL)
        return NULL;
    text[used] = '\0';
    r->at++;
    return text;
}

static json_value *json_parse_value(json_reader *r);

static int json_append(json_value *v, char *key, json_value *item)
{
    json_value **items = realloc(v->items, (v->count + 1) * sizeof *items);
    if (items == NULL)
        return -1;
    v->items = items;
    if (v->type == JSON_OBJECT) {
        char **keys = realloc(v->keys, (v->count + 1) * sizeof *keys);
        if (keys == NULL)
            return -1;
        v->keys = keys;
        v->keys[v->count] = key;
    }
    v->items[v->count++] = item;
    return 0;
}

static json_value *json_parse_container(json_reader *r, json_value *v)
{
    char close = v->type == JSON_OBJECT ? '}' : ']';
    r->at++;
    json_skip_space(r);
    if (*r->at == close) {
        r->at++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        json_skip_space(r);
        if (v->type == JSON_OBJECT) {
            key = json_parse_string(r);
            json_skip_space(r);
            if (key == NULL || *r->at != ':') {
                free(key);
                json_free(v);
                return NULL;
            }
            r->at++;
        }
        json_value *item = json_parse_value(r);
        if (item == NULL || json_append(v, key, item) != 0) {
            free(key);
            json_free(item);
            json_free(v);
            return NULL;
        }
        json_skip_space(r);
        if (*r->at == ',') {
            r->at++;
            continue;
        }
        if (*r->at == close) {
            r->at++;
            return v;
        }
        json_free(v);
        return NULL;
    }
}

static json_value *json_parse_value(json_reader *r)
{
    json_skip_space(r);
    if (r->depth > 64)
        return NULL;
    json_value *v = calloc(1, sizeof *v);
    if (v == NULL)
        return NULL;
    char c = *r->at;
    if (c == '{' || c == '[') {
        v->type = c == '{' ? JSON_OBJECT : JSON_ARRAY;
        r->depth++;
        v = json_parse_container(r, v);
        r->depth--;
        return v;
    }
    if (c == '"') {
        v->type = JSON_STRING;
        v->string = json_parse_string(r);
        if (v->string == NULL) {
            free(v);
            return NULL;
        }
        return v;
    }
    if (strncmp(r->at, "null", 4) == 0) {
        r->at += 4;
        return v;
    }
    if (strncmp(r->at, "true", 4) == 0 || strncmp(r->at, "false", 5) == 0) {
        v->type = JSON_BOOL;
        v->number = c == 't';
        r->at += c == 't' ? 4 : 5;
        return v;
    }
    char *end = NULL;
    v->number = strtod(r->at, &end);
    if (end == r->at) {
        free(v);
        return NULL;
    }
    v->type = JSON_NUMBER;
    r->at = end;
    return v;
}

static const json_value *json_get(const json_value *v, const char *key)
{
    if (v == NULL || v->type != JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->count; i++)
        if (strcmp(v->keys[i], key) == 0)
            return v->items[i];
    return NULL;
}

static char *read_whole_file(const char *path, const char **why)
{
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        *why = "cannot be opened";
        return NULL;
    }
    size_t capacity = 1 << 16, used = 0;
    char *text = malloc(capacity);
    while (text != NULL) {
        used += fread(text + used, 1, capacity - used - 1, file);
        if (used < capacity - 1 || capacity > (1u << 28))
            break;
        char *bigger = realloc(text, capacity *= 2);
        if (bigger == NULL)
            free(text);
        text = bigger;
    }
    int failed = ferror(file);
    fclose(file);
    if (text == NULL || failed) {
        free(text);
        *why = text == NULL ? "is too large to read" : "cannot be read";
        return NULL;
    }
    text[used] = '\0';
    return text;
}

/* A parameter of the file: a number, or null (an unresolved parameter: 0, counted). */
static int file_number(const json_value *row, const char *key, double *value, int *nulls)
{
    const json_value *v = json_get(row, key);
    if (v != NULL && v->type == JSON_NUMBER && isfinite(v->number)) {
        *value = v->number;
        return 0;
    }
    if (v != NULL && v->type == JSON_NULL) {
        *value = 0.0;
        (*nulls)++;
        return 0;
    }
    return -1;
}

/* Reads L, and g, G, o_s, o_r per protocol range, from a `netbench loggp` JSON result. Returns
 * 0, or the exit status after one line on stderr. */
static int read_loggp_json(models_settings *ms)
{
    const char *path = ms->loggp_json, *why = NULL;
    char *text = read_whole_file(path, &why);
    if (text == NULL)
        return nb_usage_error("--loggp-json %s: the file %s", path, why);
    json_reader reader = {.at = text};
    json_value *root = json_parse_value(&reader);
    free(text);
    const json_value *format = json_get(root, "format"), *method = json_get(root, "method");
    if (root == NULL || format == NULL || format->type != JSON_STRING ||
        strcmp(format->string, "netbench-result") != 0) {
        json_free(root);
        return nb_usage_error("--loggp-json %s: not a netbench JSON result (write one with "
                              "`netbench loggp --json-file %s`)", path, path);
    }
    if (method == NULL || method->type != JSON_STRING || strcmp(method->string, "loggp") != 0) {
        char name[64];
        snprintf(name, sizeof name, "%s",
                 method != NULL && method->type == JSON_STRING ? method->string : "?");
        json_free(root);
        return nb_usage_error("--loggp-json %s: a result of netbench %s, not of netbench loggp",
                              path, name);
    }
    const json_value *summary = json_get(root, "summary");
    const json_value *L = json_get(summary, "L_us");
    const json_value *ranges = json_get(json_get(root, "tables"), "ranges");
    if (L == NULL || L->type != JSON_NUMBER || !(L->number > 0.0)) {
        json_free(root);
        return nb_usage_error("--loggp-json %s: summary L_us is missing or not positive", path);
    }
    if (ranges == NULL || ranges->type != JSON_ARRAY || ranges->count == 0) {
        json_free(root);
        return nb_usage_error("--loggp-json %s: no table ranges (protocol ranges)", path);
    }
    if (ranges->count > MODELS_MAX_RANGES) {
        json_free(root);
        return nb_usage_error("--loggp-json %s: %zu protocol ranges; at most %d are read", path,
                              ranges->count, MODELS_MAX_RANGES);
    }
    ms->L_us = L->number;
    for (size_t i = 0; i < ranges->count; i++) {
        const json_value *row = ranges->items[i];
        loggp_range *g = &ms->ranges[i];
        double G_ns = 0.0;
        int nulls = 0;
        if (file_number(row, "first_size_bytes", &g->first_size, &nulls) != 0 ||
            file_number(row, "last_size_bytes", &g->last_size, &nulls) != 0 || nulls != 0 ||
            file_number(row, "g_us", &g->g_us, &nulls) != 0 ||
            file_number(row, "G_ns_per_byte", &G_ns, &nulls) != 0 ||
            file_number(row, "o_s_us", &g->o_s_us, &nulls) != 0 ||
            file_number(row, "o_r_us", &g->o_r_us, &nulls) != 0) {
            json_free(root);
            return nb_usage_error("--loggp-json %s: range %zu lacks first_size_bytes, "
                                  "last_size_bytes, g_us, G_ns_per_byte, o_s_us or o_r_us", path,
                                  i);
        }
        if (g->g_us < 0.0 || G_ns < 0.0 || g->o_s_us < 0.0 || g->o_r_us < 0.0 ||
            (i > 0 && g->first_size <= ms->ranges[i - 1].first_size)) {
            json_free(root);
            return nb_usage_error("--loggp-json %s: range %zu has a negative parameter or is "
                                  "out of order", path, i);
        }
        g->G_us_per_byte = G_ns * 1e-3;
        ms->nulls_taken_as_zero += nulls;
    }
    ms->range_count = ranges->count;
    const json_value *library = json_get(json_get(root, "mpi"), "library");
    if (library != NULL && library->type == JSON_STRING) {
        snprintf(ms->file_library, sizeof ms->file_library, "%s", library->string);
        ms->file_library[strcspn(ms->file_library, "\r\n")] = '\0';
    }
    json_free(root);
    return 0;
}

static int models_finish(nb_options *o, void *settings)
{
    models_settings *ms = settings;
    if (o->size_count == 0)
        return nb_usage_error("no sizes to measure");
    if (o->sizes[0] < 1)
        return nb_usage_error("--sizes/--min-size: size %zu; the models need messages of at "
                              "least 1 byte", o->sizes[0]);
    if (ms->loggp_json != NULL)
        return read_loggp_json(ms);
    return 0;
}

/* Before MPI: allgather and alltoall move size x ranks bytes, and the ranks are not known yet;
 * run_models checks the int count and nb_buffer_new the memory. */
static unsigned long long models_buffer_bytes(const nb_options *o, char *how, size_t length,
                                              const char **hint)
{
    (void)o;
    (void)how;
    (void)length;
    *hint = "";
    return 0;
}

static const nb_option models_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--loggp-json", .type = NB_OPTION_STRING, NB_SETTING(models_settings, loggp_json),
     .value_name = "PATH", .example = "loggp.json",
     .default_text = "none: a quick PRTT measurement at 1 byte and the sizes",
     .help = "LogGP parameters from a `netbench loggp --json-file FILE` result of the same "
             "partition and MPI (summary L_us; per protocol range g_us, G_ns_per_byte, "
             "o_s_us, o_r_us)"},
    {.name = "--calls", .type = NB_OPTION_INT, NB_SETTING(models_settings, calls), .min = 3,
     .max = 100000, .value_name = "N", .default_value = "30", .example = "30",
     .help = "individually timed calls per collective, size and repetition"},
    NB_USE_REPEATS("3", "1000", "2"),
};

static const nb_table_spec *const models_tables[] = {
    &models_table, &timings_table, &loggp_ranges_table, &loggp_quick_table, NULL};

const nb_method nb_method_models = {
    .name = "models",
    .summary = "collectives measured / predicted by LogGP models of their algorithms (Hoefler 4)",
    .description =
        "LogGP models of the common collective algorithms against the same collectives timed\n"
        "call by call (Hoefler, Schneider, Lumsdaine, \"LogGP in Theory and Practice\",\n"
        "section 4: LogGP predicts the time of a collective algorithm; sections 2.2-2.6: the\n"
        "parameters). Every rank takes part.\n"
        "Parameters: --loggp-json FILE reads L (summary L_us) and per protocol range g, G,\n"
        "o_s, o_r from a `netbench loggp` result (the range whose first size is the largest\n"
        "<= m serves a message of m bytes; a null parameter is taken as 0, with a warning).\n"
        "Without it ranks 0 and 1 measure them quickly (the others wait): at 1 byte and each\n"
        "size, PRTT(1,0,s), PRTT(10,0,s), PRTT(10,d_G,s) with d_G = PRTT(1,0,s), and o_r by\n"
        "Kielmann's method, as `netbench loggp` does (the fastest of --repetitions loops of\n"
        "--time-cap-ms: preemption only lengthens a loop, and the timed collectives leave\n"
        "preempted calls out); between the sizes linear interpolation, beyond them the last\n"
        "slope.\n"
        "Terms of a message of m bytes (L = PRTT(1,0,1)/2 holds o_s + o_r, eq. (1), 2.5):\n"
        "  T(m) = L + (m - 1) G              one message, from the send to received\n"
        "                                    (quick: PRTT(1,0,m) / 2)\n"
        "  S(m) = max(o_s, g + (m - 1) G)    between two sends of one rank (G_all, eq. (5))\n"
        "  C(m) = MPI_Reduce_local of m bytes of MPI_FLOAT (measured on rank 0): the\n"
        "         combining step, which LogGP leaves out\n"
        "Models, P ranks, root 0 (the sizes as `netbench collectives`):\n"
        "  bcast     binomial tree: a rank with the data at t sends to its children, farthest\n"
        "            first, the j-th at t + j S(m), which has it at + T(m); the latest rank.\n"
        "            (Closed forms are hard, section 4; this is its recurrence.) P = 2: T(m)\n"
        "  reduce    binomial tree, mirrored: a parent takes its children's results nearest\n"
        "            first, each arriving T(m) after the child was done, at least o_r after\n"
        "            the previous receive, plus C(m).  P = 2: T(m) + C(m)\n"
        "  allreduce recursive doubling: log2(P') (T(m) + C(m)), P' the largest power of 2\n"
        "            <= P; P not a power of 2: + 2 T(m) + C(m) (the extra ranks in and out)\n"
        "  allgather m bytes per rank: recursive doubling sum_{k<log2 P} T(2^k m) for P a power\n"
        "            of 2, else the ring (P - 1) T(m)\n"
        "  alltoall  m bytes per peer: pairwise exchange (P - 1) T(m)\n"
        "Timing: each call alone in a time window against clocks synchronised to rank 0 (the\n"
        "approach of `netbench collectives`: window = max(2 x estimated call + 2 x clock\n"
        "error, 5 us); late calls left out; more than 10% late doubles the window, at most 3\n"
        "times); --calls calls per block, --repetitions rounds that interleave the\n"
        "collectives; the median of the rounds' medians and their spread (max - min); a\n"
        "round with fewer than half of its calls valid is left out, and a figure with fewer\n"
        "than 2 such rounds, or than half of the rounds, is unreliable.\n"
        "measured_to_predicted = measured median / predicted: 1 is the model exactly; above 1\n"
        "the library is slower than the algorithm on this network (another algorithm,\n"
        "copies, synchronisation); below 1 it beats the model (e.g. shared memory\n"
        "collectives). Default sizes: 8 B to 1 MiB in powers of 4.",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_POWERS_OF_4,
    .options = models_options,
    .option_count = NB_COUNT_OF(models_options),
    .settings_size = sizeof(models_settings),
    .tables = models_tables,
    .run = run_models,
    .finish = models_finish,
    .buffer_bytes = models_buffer_bytes,
};

/* ================================================================================================
 * consistency
 * ============================================================================================== */

/* The operations of the rules. Sizes: n bytes in all (a block of n / P bytes per rank, n rounded
 * up to a multiple of P). */
typedef enum {
    CONS_ALLREDUCE,
    CONS_REDUCE_BCAST,
    CONS_REDUCE,
    CONS_BCAST,
    CONS_SCATTER_ALLGATHER,
    CONS_ALLGATHER,
    CONS_GATHER_BCAST,
    CONS_GATHER,
    CONS_OP_COUNT,
} cons_op;

static const operation cons_ops[CONS_OP_COUNT] = {
    {"allreduce", 1, {PRIM_ALLREDUCE}},
    {"reduce+bcast", 2, {PRIM_REDUCE, PRIM_BCAST}},
    {"reduce", 1, {PRIM_REDUCE}},
    {"bcast", 1, {PRIM_BCAST}},
    {"scatter+allgather", 2, {PRIM_SCATTER, PRIM_ALLGATHER}},
    {"allgather", 1, {PRIM_ALLGATHER}},
    {"gather+bcast", 2, {PRIM_GATHER, PRIM_BCAST}},
    {"gather", 1, {PRIM_GATHER}},
};

typedef struct {
    const char *name;
    const char *text;
    cons_op left, right;
} cons_rule;

#define CONS_RULE_COUNT 5
static const cons_rule cons_rules[CONS_RULE_COUNT] = {
    {"allreduce_le_reduce_bcast", "MPI_Allreduce(n) <= MPI_Reduce(n) + MPI_Bcast(n)",
     CONS_ALLREDUCE, CONS_REDUCE_BCAST},
    {"reduce_le_allreduce", "MPI_Reduce(n) <= MPI_Allreduce(n)", CONS_REDUCE, CONS_ALLREDUCE},
    {"bcast_le_scatter_allgather", "MPI_Bcast(n) <= MPI_Scatter(n) + MPI_Allgather(n)",
     CONS_BCAST, CONS_SCATTER_ALLGATHER},
    {"allgather_le_gather_bcast", "MPI_Allgather(n) <= MPI_Gather(n) + MPI_Bcast(n)",
     CONS_ALLGATHER, CONS_GATHER_BCAST},
    {"gather_le_allgather", "MPI_Gather(n) <= MPI_Allgather(n)", CONS_GATHER, CONS_ALLGATHER},
};

typedef struct {
    unsigned rules;            /* --rules: bit per rule */
    int calls;                 /* --calls */
} consistency_settings;

static const nb_column rule_columns[] = {
    NB_KEY("rule", ""),
    NB_KEY("size_bytes", "bytes"),
    NB_KEY("left", ""),
    NB_KEY("right", ""),
    NB_KEY("left_us", "us"),
    NB_KEY("right_us", "us"),
    NB_LOWER("left_to_right", "ratio"),
    NB_KEY("noise_us", "us"),
    NB_LOWER("excess_us", "us"),
    NB_LOWER("violations", "count"),
};
static const nb_table_spec rules_table = NB_TABLE_SPEC("rules", rule_columns);

static void run_consistency(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const consistency_settings *cs = o->settings;
    nb_result *result = ctx->result;
    int P = ctx->size;

    /* which operations the chosen rules need */
    const operation *ops[CONS_OP_COUNT];
    int index_of[CONS_OP_COUNT];
    size_t op_count = 0;
    for (int k = 0; k < CONS_OP_COUNT; k++) {
        index_of[k] = -1;
        for (int r = 0; r < CONS_RULE_COUNT; r++)
            if ((cs->rules & (1u << r)) &&
                (cons_rules[r].left == (cons_op)k || cons_rules[r].right == (cons_op)k))
                index_of[k] = 1;
        if (index_of[k] >= 0) {
            index_of[k] = (int)op_count;
            ops[op_count++] = &cons_ops[k];
        }
    }

    size_t totals[NB_MAX_SIZES];
    for (size_t i = 0; i < o->size_count; i++) {
        size_t block = (o->sizes[i] + (size_t)P - 1) / (size_t)P;
        totals[i] = block * (size_t)P;
    }
    size_t largest = totals[o->size_count - 1];
    if (!size_fits_int(largest)) {
        if (ctx->rank == 0)
            fprintf(stderr, "netbench: consistency: %zu bytes exceed an MPI int count; lower "
                    "--max-size\n", largest);
        MPI_Abort(ctx->pair, 1);
    }
    op_state s = new_state(ctx, largest >= sizeof(float) ? largest : sizeof(float));
    op_figures *figures = calloc(o->size_count * op_count, sizeof *figures);
    if (figures == NULL)
        out_of_memory(ctx->pair);
    if (ctx->rank == 0)
        fprintf(stderr, "netbench consistency: %zu operations at %zu sizes, %d rounds\n",
                op_count, o->size_count, o->repetitions);
    for (size_t i = 0; i < o->size_count; i++) {
        s.total = (int)totals[i];
        s.block = (int)(totals[i] / (size_t)P);
        time_operations(&s, ops, op_count, cs->calls, o->repetitions, &figures[i * op_count]);
    }

    if (result != NULL) {
        nb_param_int(result, "ranks", P);
        long long sizes[NB_MAX_SIZES];
        for (size_t i = 0; i < o->size_count; i++)
            sizes[i] = (long long)totals[i];
        nb_param_int_list(result, "sizes_bytes", sizes, o->size_count);
        char names[256] = "";
        size_t used = 0;
        for (int r = 0; r < CONS_RULE_COUNT; r++)
            if (cs->rules & (1u << r))
                used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
                                         used ? "," : "", cons_rules[r].name);
        nb_param_text(result, "rules", names);
        nb_param_int(result, "calls", cs->calls);
        nb_param_int(result, "repetitions", o->repetitions);
        nb_param_text(result, "synchronisation", "window");
        nb_param_real(result, "timer_tick_us", ctx->timer_tick_s * 1e6);

        nb_table *timings = nb_result_add_declared_table(result, &timings_table);
        double sync_error = 0.0;
        for (size_t k = 0; k < op_count; k++)
            for (size_t i = 0; i < o->size_count; i++) {
                const op_figures *f = &figures[i * op_count + k];
                add_timing_row(timings, ops[k]->name, totals[i], f);
                check_figures(ctx, ops[k]->name, totals[i], f);
                if (f->sync_error_s > sync_error)
                    sync_error = f->sync_error_s;
            }

        nb_table *table = nb_result_add_declared_table(result, &rules_table);
        long long violations_total = 0, checked = 0;
        double floor_us = 2.0 * ctx->timer_tick_s * 1e6;
        for (int r = 0; r < CONS_RULE_COUNT; r++) {
            if (!(cs->rules & (1u << r)))
                continue;
            const cons_rule *rule = &cons_rules[r];
            long long violated = 0;
            for (size_t i = 0; i < o->size_count; i++) {
                const op_figures *left = &figures[i * op_count + (size_t)index_of[rule->left]];
                const op_figures *right = &figures[i * op_count + (size_t)index_of[rule->right]];
                double difference = left->median_us - right->median_us;
                /* the scatter of each side's round medians, averaged: about 3 standard
                 * deviations of the difference of two medians of 5 */
                double noise = fmax((left->spread_us + right->spread_us) / 2.0, floor_us);
                double excess = difference - noise;
                /* judged only when both sides have a median and a spread from most rounds */
                int judged = isfinite(difference) && 2 * left->rounds_valid >= left->rounds &&
                             2 * right->rounds_valid >= right->rounds &&
                             left->rounds_valid >= 2 && right->rounds_valid >= 2;
                int bad = judged && excess > 0.0;
                checked += judged;
                violated += bad;
                if (!judged) {
                    noise = excess = NAN;
                    char quantity[128];
                    snprintf(quantity, sizeof quantity, "violations[rule=%s,size_bytes=%zu]",
                             rule->name, totals[i]);
                    nb_unreliable(result, quantity, "not judged: %s had %d and %s %d of %d "
                                  "rounds with half of their calls valid (a side needs at least "
                                  "2 and half of them for a median and a spread)",
                                  cons_ops[rule->left].name, left->rounds_valid,
                                  cons_ops[rule->right].name, right->rounds_valid,
                                  left->rounds);
                }
                nb_table_add_row(table);
                nb_cell_text(table, "rule", rule->name);
                nb_cell_int(table, "size_bytes", (long long)totals[i]);
                nb_cell_text(table, "left", cons_ops[rule->left].name);
                nb_cell_text(table, "right", cons_ops[rule->right].name);
                nb_cell_real(table, "left_us", left->median_us);
                nb_cell_real(table, "right_us", right->median_us);
                nb_cell_real(table, "left_to_right", left->median_us / right->median_us);
                nb_cell_real(table, "noise_us", noise);
                nb_cell_real(table, "excess_us", fmax(excess, 0.0));
                if (judged)
                    nb_cell_int(table, "violations", bad);
                if (bad)
                    nb_warning(result, "self-consistency rule %s (%s) violated at n = %zu "
                               "bytes: %s %.4g us > %s %.4g us by %.4g us, %.4g us beyond the "
                               "noise (%.4g us); a finding about the MPI library",
                               rule->name, rule->text, totals[i], cons_ops[rule->left].name,
                               left->median_us, cons_ops[rule->right].name, right->median_us,
                               difference, excess, noise);
            }
            char key[96];
            snprintf(key, sizeof key, "violations_%s", rule->name);
            nb_summary_int(result, key, violated);
            violations_total += violated;
        }
        nb_summary_int(result, "violations", violations_total);
        nb_summary_int(result, "rule_sizes_checked", checked);
        nb_summary_int(result, "rule_sizes_not_judged",
                       (long long)(o->size_count * (size_t)__builtin_popcount(cs->rules)) -
                           checked);
        nb_summary_real(result, "clock_sync_error_max_us", sync_error * 1e6);
    }
    free(figures);
    free(s.send);
    free(s.recv);
}

static int consistency_finish(nb_options *o, void *settings)
{
    const consistency_settings *cs = settings;
    if (cs->rules == 0)
        return nb_usage_error("--rules: no rule given");
    if (o->size_count == 0)
        return nb_usage_error("no sizes to measure");
    if (o->repetitions < 3)
        return nb_usage_error("--repetitions %d: the noise is the spread of the repetitions; "
                              "use at least 3", o->repetitions);
    return 0;
}

static const char *rule_name_of(int index)
{
    return index >= 0 && index < CONS_RULE_COUNT ? cons_rules[index].name : "?";
}

static const nb_option consistency_options[] = {
    NB_USE_SIZES("8", "1M"),
    {.name = "--rules", .type = NB_OPTION_ENUM_LIST, NB_SETTING(consistency_settings, rules),
     .name_of = rule_name_of, .name_count = CONS_RULE_COUNT, .value_name = "LIST",
     .default_value = "allreduce_le_reduce_bcast,reduce_le_allreduce,"
                      "bcast_le_scatter_allgather,allgather_le_gather_bcast,gather_le_allgather",
     .example = "reduce_le_allreduce",
     .help = "rules to check, comma separated (see above)"},
    {.name = "--calls", .type = NB_OPTION_INT, NB_SETTING(consistency_settings, calls),
     .min = 3, .max = 100000, .value_name = "N", .default_value = "20", .example = "20",
     .help = "individually timed calls per operation, size and repetition"},
    NB_USE(NB_COMMON_REPETITIONS, "5"),
};

static const nb_table_spec *const consistency_tables[] = {&rules_table, &timings_table, NULL};

const nb_method nb_method_consistency = {
    .name = "consistency",
    .summary = "self-consistency rules of MPI collectives, violations beyond the noise (Traff et al.)",
    .description =
        "Self-consistent performance guidelines for MPI collectives (Traff, Gropp, Thakur,\n"
        "\"Self-consistent MPI performance guidelines\", IEEE TPDS 2010): a collective should\n"
        "be no slower than a mock-up of it made of other collectives, nor than a more general\n"
        "collective. n is the whole data size: MPI_Bcast of n bytes, MPI_Reduce and\n"
        "MPI_Allreduce of n bytes of MPI_FLOAT summed, MPI_Gather, MPI_Scatter and\n"
        "MPI_Allgather of n / P bytes per rank (n rounded up to a multiple of P); root 0.\n"
        "Rules (--rules):\n"
        "  allreduce_le_reduce_bcast   MPI_Allreduce(n) <= MPI_Reduce(n) + MPI_Bcast(n)\n"
        "  reduce_le_allreduce         MPI_Reduce(n)    <= MPI_Allreduce(n)\n"
        "  bcast_le_scatter_allgather  MPI_Bcast(n)     <= MPI_Scatter(n) + MPI_Allgather(n)\n"
        "  allgather_le_gather_bcast   MPI_Allgather(n) <= MPI_Gather(n) + MPI_Bcast(n)\n"
        "  gather_le_allgather         MPI_Gather(n)    <= MPI_Allgather(n)\n"
        "A mock-up (the right side of a '+' rule) is timed as one operation: its two calls\n"
        "back to back, as a user would write it. Every operation is timed call by call in a\n"
        "time window against clocks synchronised to rank 0 (the approach of `netbench\n"
        "collectives`), --calls calls per block; --repetitions rounds interleave all\n"
        "operations of a size, so that a slow phase of the machine spreads over both sides.\n"
        "A side's time is the median of the rounds' medians, its spread their max - min (a\n"
        "round with fewer than half of its calls valid is left out).\n"
        "noise = max((spread left + spread right) / 2, 2 x MPI_Wtick); a rule is violated\n"
        "at a size when left - right > noise; excess_us = max(left - right - noise, 0) (> 0\n"
        "only for a violation), left_to_right = left / right. A side needs at least 2 rounds, and half of them, with half of\n"
        "their calls valid; otherwise the rule is not judged at that size (violations null,\n"
        "an unreliable entry). A violation is a finding about the MPI library (its choice of\n"
        "algorithm at that size), not an error of the measurement; each one is also a\n"
        "warning naming the rule, the size and both times. Needs no reference: the count of\n"
        "violations should be 0 on any system. Default sizes: 8 B to 1 MiB in powers of 4.",
    .scope = NB_ON_ALL_RANKS,
    .progression = NB_SIZES_POWERS_OF_4,
    .options = consistency_options,
    .option_count = NB_COUNT_OF(consistency_options),
    .settings_size = sizeof(consistency_settings),
    .tables = consistency_tables,
    .run = run_consistency,
    .finish = consistency_finish,
    .buffer_bytes = models_buffer_bytes,
};
