/* operations.h - collective operations timed call by call (window.h) for the methods that
 * compare collectives with something else: models (LogGP predictions) and consistency (mock-ups
 * of other collectives). An operation is one collective, or a mock-up of two called back to back,
 * timed as a unit.
 */
#ifndef NETBENCH_OPERATIONS_H
#define NETBENCH_OPERATIONS_H

#include "measure.h"

/* The collectives the operations are made of. Sizes: bcast, reduce, allreduce `total` bytes
 * (reductions: MPI_FLOAT sums, total / 4 values, at least 1); gather, scatter, allgather
 * `block` bytes per rank; alltoall `block` bytes per peer; root 0. */
typedef enum {
    NB_PRIM_BCAST,
    NB_PRIM_REDUCE,
    NB_PRIM_ALLREDUCE,
    NB_PRIM_GATHER,
    NB_PRIM_SCATTER,
    NB_PRIM_ALLGATHER,
    NB_PRIM_ALLTOALL,
} nb_prim_collective;

/* An operation: one collective, or a mock-up of two called back to back. */
typedef struct {
    const char *name;
    int count;
    nb_prim_collective calls[2];
} nb_operation;

typedef struct {
    MPI_Comm comm;
    int rank;
    int ranks;
    unsigned char *send;
    unsigned char *recv;
    int total;                 /* bytes of bcast, reduce, allreduce */
    int block;                 /* bytes per rank (gather, scatter, allgather) or per peer */
    const nb_operation *op;
} nb_op_state;

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
} nb_op_figures;

/* Times ops[0..count-1] at one size for `rounds` rounds; every rank calls it. */
void nb_time_operations(nb_op_state *s, const nb_operation *const *ops, size_t count, int calls,
                        int rounds, nb_op_figures *figures);

/* Rank 0: unreliable entries for a timed operation. */
void nb_check_operation(const nb_context *ctx, const char *name, size_t size,
                        const nb_op_figures *f);

/* The table `timings` (docs/output-format.md) and one row of it. */
extern const nb_table_spec nb_operation_timings_table;
void nb_add_timing_row(nb_table *table, const char *name, size_t size, const nb_op_figures *f);

/* The state on ctx->pair with send and receive buffers of buffer_bytes. */
nb_op_state nb_op_state_new(const nb_context *ctx, size_t buffer_bytes);

/* Whether a count of bytes fits MPI's int counts. */
int nb_size_fits_int(size_t bytes);

#endif
