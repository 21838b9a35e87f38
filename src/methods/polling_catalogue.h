/* polling_catalogue.h - what polling.c's methods declare (docs/adding-a-method.md); included once, by
 * polling.c. */
#ifndef NETBENCH_POLLING_CATALOGUE_H
#define NETBENCH_POLLING_CATALOGUE_H

#include "paired.h"

/* Defined in polling.c. */
nb_run_function run_polling;

/* The options every paired method shares (paired.h). */
static const nb_option polling_options[] = {NB_PAIRED_OPTIONS};

NB_TABLE(polling, "polling", NB_PAIRED_LATENCY_COLUMNS("mode"));

NB_TABLE(polling_cost, "polling_cost", NB_PAIRED_COST_COLUMNS("mode"));

NB_TABLES(polling, &polling_table, &polling_cost_table);

NB_FIGURES(polling,
    NB_KEY("small_size_bytes", "bytes"),
    NB_LOWER("busy_poll_latency_small_us", "us"),
    NB_LOWER("blocking_latency_small_us", "us"),
    NB_LOWER("test_yield_latency_small_us", "us"),
    NB_LOWER("test_call_us", "us"),
    NB_LOWER("blocking_cost_small_us", "us"),
    NB_LOWER("blocking_cost_small_ratio", "ratio"),
    NB_LOWER("test_yield_cost_small_us", "us"),
    NB_LOWER("test_yield_cost_small_ratio", "ratio"));

const nb_method nb_method_polling = {
    NB_METHOD(polling, NB_ON_PAIR, NB_SIZES_POWERS_OF_4),
    .summary = "blocking vs polling completion: Wait, Test loop, Test+yield (Kutlug 3.2.6)",
    .description =
        "Latency with blocking completions, Kutlug section 3.2.6, and polling/blocking impact,\n"
        "Zamani et al. section 5.4: one non-blocking ping-pong (rank 0: MPI_Irecv of the reply,\n"
        "MPI_Isend; rank 1: MPI_Irecv, then MPI_Isend of the reply) completed three ways, on\n"
        "both ranks alike: 'blocking' (MPI_Wait/MPI_Waitall), 'busy_poll' (MPI_Test/MPI_Testall\n"
        "in a loop) and 'test_yield' (MPI_Test, then sched_yield() when not done). Latency =\n"
        "round trip / 2. Only the completion differs, so a difference is its cost. The cost of\n"
        "a mode = its latency - busy_poll's (Kutlug: blocking against the polling latency\n"
        "test); cost_ratio = its latency / busy_poll's. Whether MPI_Wait really blocks (sleeps)\n"
        "or spins inside the library is the MPI's choice: over shared memory both MPIs spin,\n"
        "and the cost is near 0.\n"
        "Per size the modes take turns: each mode's iteration count from a probe and a\n"
        "warm-up of it (as many round trips as fit in --time-cap-ms, at most --iterations),\n"
        "then --repetitions rounds, each running every mode once in a rotated order.\n"
        "Latencies: min/median/max over the rounds. A cost is the median over the rounds of\n"
        "the paired difference within a round, so a slow phase of the machine hits both\n"
        "sides; its noise_floor_us is the largest of 3 standard errors of that median (from\n"
        "the MAD of the differences), 3% of busy_poll's median latency, the timer's\n"
        "resolution of the difference and 2 x test_call_us\n"
        "(summary): the time of one MPI_Test call on a pending receive (the slower rank's,\n"
        "the fastest of 5 x 20000 calls), the period of the busy-poll loop. A message that\n"
        "arrives during a call is seen at the next, up to a period late for each of the 3\n"
        "polled completions of a round trip, so MPI_Wait, polling inside the library, may\n"
        "beat the MPI_Test loop by about 2 periods per latency: no negative cost of blocking.\n"
        "A cost below 0 by less than its noise floor is reported as 0; by more, as null with\n"
        "an 'unreliable' entry.",
};

#endif
