/* consistency.c - self-consistency rules of an MPI library (Traff, Gropp, Thakur,
 * "Self-consistent MPI performance guidelines"): a collective must not be slower than a mock-up
 * of it made of other collectives (MPI_Allreduce(n) <= MPI_Reduce(n) + MPI_Bcast(n), ...), nor
 * than a more general one (MPI_Reduce(n) <= MPI_Allreduce(n)). Both sides are timed call by call
 * (operations.h); a rule is violated at a size only when its left side exceeds its right side by
 * more than the noise the repetitions show. A violation is a finding about the MPI library, not
 * a failure of the program.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "consistency_catalogue.h"
#include "methods.h"
#include "operations.h"

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

static const nb_operation cons_ops[CONS_OP_COUNT] = {
    {"allreduce", 1, {NB_PRIM_ALLREDUCE}},
    {"reduce+bcast", 2, {NB_PRIM_REDUCE, NB_PRIM_BCAST}},
    {"reduce", 1, {NB_PRIM_REDUCE}},
    {"bcast", 1, {NB_PRIM_BCAST}},
    {"scatter+allgather", 2, {NB_PRIM_SCATTER, NB_PRIM_ALLGATHER}},
    {"allgather", 1, {NB_PRIM_ALLGATHER}},
    {"gather+bcast", 2, {NB_PRIM_GATHER, NB_PRIM_BCAST}},
    {"gather", 1, {NB_PRIM_GATHER}},
};

typedef struct {
    const char *name;
    const char *text;
    cons_op left, right;
} cons_rule;

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

/* The operations the chosen `rules` need, in ops[0..count-1]; index_of[op]: its place there,
 * or -1. Returns the count. */
static size_t needed_operations(unsigned rules, const nb_operation **ops, int *index_of)
{
    size_t op_count = 0;
    for (int k = 0; k < CONS_OP_COUNT; k++) {
        index_of[k] = -1;
        for (int r = 0; r < CONS_RULE_COUNT; r++)
            if ((rules & (1u << r)) &&
                (cons_rules[r].left == (cons_op)k || cons_rules[r].right == (cons_op)k))
                index_of[k] = 1;
        if (index_of[k] >= 0) {
            index_of[k] = (int)op_count;
            ops[op_count++] = &cons_ops[k];
        }
    }
    return op_count;
}

/* Rank 0: rule `rule` at one size (`total` bytes) from the figures of its two sides: a row of
 * the table rules, and a warning where it is violated beyond the noise and the margin (a
 * fraction of the right side). Returns -1 (not judged: too few valid rounds), 0 or 1 (violated). */
static int judge_rule(nb_result *result, nb_table *table, const cons_rule *rule, size_t total,
                      const nb_op_figures *left, const nb_op_figures *right, double margin,
                      double floor_us)
{
    double difference = left->median_us - right->median_us;
    /* the scatter of each side's round medians, averaged: about 3 standard
     * deviations of the difference of two medians of 5 */
    double noise = fmax((left->spread_us + right->spread_us) / 2.0, floor_us);
    double excess = difference - noise - margin * right->median_us;
    /* judged only when both sides have a median and a spread from most rounds */
    int judged = isfinite(difference) && 2 * left->rounds_valid >= left->rounds &&
                 2 * right->rounds_valid >= right->rounds &&
                 left->rounds_valid >= 2 && right->rounds_valid >= 2;
    int bad = judged && excess > 0.0;
    if (!judged) {
        noise = excess = NAN;
        char quantity[128];
        snprintf(quantity, sizeof quantity, "violations[rule=%s,size_bytes=%zu]",
                 rule->name, total);
        nb_unreliable(result, quantity, "not judged: %s had %d and %s %d of %d "
                      "rounds with half of their calls valid (a side needs at least "
                      "2 and half of them for a median and a spread)",
                      cons_ops[rule->left].name, left->rounds_valid,
                      cons_ops[rule->right].name, right->rounds_valid,
                      left->rounds);
    }
    nb_table_add_row(table);
    nb_cell_text(table, "rule", rule->name);
    nb_cell_int(table, "size_bytes", (long long)total);
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
                   "noise (%.4g us) and the margin (%.4g us); a finding about the "
                   "MPI library",
                   rule->name, rule->text, total, cons_ops[rule->left].name,
                   left->median_us, cons_ops[rule->right].name, right->median_us,
                   difference, excess, noise, margin * right->median_us);
    return judged ? bad : -1;
}

void run_consistency(const nb_context *ctx)
{
    const nb_options *o = ctx->options;
    const consistency_settings *cs = o->settings;
    nb_result *result = ctx->result;
    int P = ctx->size;

    const nb_operation *ops[CONS_OP_COUNT];
    int index_of[CONS_OP_COUNT];
    size_t op_count = needed_operations(cs->rules, ops, index_of);

    size_t totals[NB_MAX_SIZES];
    for (size_t i = 0; i < o->size_count; i++) {
        size_t block = (o->sizes[i] + (size_t)P - 1) / (size_t)P;
        totals[i] = block * (size_t)P;
    }
    size_t largest = totals[o->size_count - 1];
    if (!nb_size_fits_int(largest)) {
        if (ctx->rank == 0)
            fprintf(stderr, "netbench: consistency: %zu bytes exceed an MPI int count; lower "
                    "--max-size\n", largest);
        MPI_Abort(ctx->pair, 1);
    }
    nb_op_state s = nb_op_state_new(ctx, largest >= sizeof(float) ? largest : sizeof(float));
    nb_op_figures *figures =
        nb_calloc_or_abort(ctx->pair, o->size_count * op_count, sizeof *figures);
    if (ctx->rank == 0)
        fprintf(stderr, "netbench consistency: %zu operations at %zu sizes, %d rounds\n",
                op_count, o->size_count, o->repetitions);
    for (size_t i = 0; i < o->size_count; i++) {
        s.total = (int)totals[i];
        s.block = (int)(totals[i] / (size_t)P);
        nb_time_operations(&s, ops, op_count, cs->calls, o->repetitions, &figures[i * op_count]);
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
        nb_param_real(result, "margin", cs->margin);
        nb_param_int(result, "repetitions", o->repetitions);
        nb_param_text(result, "synchronisation", "window");
        nb_param_real(result, "timer_tick_us", ctx->timer_tick_s * 1e6);

        nb_table *timings = nb_result_add_declared_table(result, &nb_operation_timings_table);
        double sync_error = 0.0;
        for (size_t k = 0; k < op_count; k++)
            for (size_t i = 0; i < o->size_count; i++) {
                const nb_op_figures *f = &figures[i * op_count + k];
                nb_add_timing_row(timings, ops[k]->name, totals[i], f);
                nb_check_operation(ctx, ops[k]->name, totals[i], f);
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
                const nb_op_figures *left = &figures[i * op_count + (size_t)index_of[rule->left]];
                const nb_op_figures *right = &figures[i * op_count + (size_t)index_of[rule->right]];
                int verdict = judge_rule(result, table, rule, totals[i], left, right, cs->margin,
                                         floor_us);
                checked += verdict >= 0;
                violated += verdict > 0;
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

int consistency_finish(nb_options *o, void *settings)
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

const char *consistency_rule_name_of(int index)
{
    return index >= 0 && index < CONS_RULE_COUNT ? cons_rules[index].name : "?";
}
