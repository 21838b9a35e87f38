/* anysource_catalogue.h - what anysource.c's methods declare (docs/adding-a-method.md); included once, by
 * anysource.c. */
#ifndef NETBENCH_ANYSOURCE_CATALOGUE_H
#define NETBENCH_ANYSOURCE_CATALOGUE_H

#include "paired.h"

/* Defined in anysource.c. */
nb_run_function run_anysource;

/* The options every paired method shares (paired.h). */
static const nb_option anysource_options[] = {NB_PAIRED_OPTIONS};

NB_TABLE(anysource, "anysource", NB_PAIRED_LATENCY_COLUMNS("receive"));

NB_TABLE(anysource_cost, "anysource_cost", NB_PAIRED_COST_COLUMNS("receive"));

NB_TABLES(anysource, &anysource_table, &anysource_cost_table);

NB_FIGURES(anysource,
    NB_KEY("small_size_bytes", "bytes"),
    NB_LOWER("named_latency_small_us", "us"),
    NB_LOWER("any_source_latency_small_us", "us"),
    NB_LOWER("any_source_any_tag_latency_small_us", "us"),
    NB_LOWER("any_source_cost_small_us", "us"),
    NB_LOWER("any_source_cost_small_ratio", "ratio"),
    NB_LOWER("any_source_any_tag_cost_small_us", "us"),
    NB_LOWER("any_source_any_tag_cost_small_ratio", "ratio"));

const nb_method nb_method_anysource = {
    NB_METHOD(anysource, NB_ON_PAIR, NB_SIZES_POWERS_OF_4),
    .summary = "receive from MPI_ANY_SOURCE (/ANY_TAG) vs a named source (Kutlug 4.2.6)",
    .description =
        "Effect of completion queues, Kutlug section 4.2.6: 'we modify the latency test and in\n"
        "the receive primitive, we specify MPI_ANY instead of a specific node ... The\n"
        "difference between the measured latency and the standard latency gives us the\n"
        "effect'. The blocking ping-pong of pingpong (MPI_Send, MPI_Recv; latency = round trip\n"
        "/ 2) with the MPI_Recv of both ranks receiving three ways: 'named' (source = the peer,\n"
        "tag given), 'any_source' (MPI_ANY_SOURCE, tag given) and 'any_source_any_tag'\n"
        "(MPI_ANY_SOURCE and MPI_ANY_TAG). The cost of a wildcard = its latency - named's;\n"
        "cost_ratio = its latency / named's.\n"
        "Per size the receives take turns: each receive's iteration count from a probe and a\n"
        "warm-up of it (as many round trips as fit in --time-cap-ms, at most --iterations),\n"
        "then --repetitions rounds, each running every receive once in a rotated order.\n"
        "Latencies: min/median/max over the rounds. A cost is the\n"
        "median over the rounds of the paired difference within a round, so a slow phase of\n"
        "the machine hits both sides; its noise_floor_us is the largest of 3 standard errors\n"
        "of that median (from the MAD of the differences), 3% of named's median latency and\n"
        "the timer's resolution of the difference. A\n"
        "cost below 0 by less than its noise floor is reported as 0; by more, as null with an\n"
        "'unreliable' entry.",
};

#endif
