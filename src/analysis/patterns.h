/* patterns.h - who talks to whom in the multi-rank methods: the dense communication algorithms
 * (Altix study §3.3), the b_eff ring and random patterns (Rabenseifner's definition, Altix study
 * §3.1), b_eff's message lengths and logarithmic average, and a seeded random generator that
 * every rank evaluates identically (no communication needed to agree on a random pattern).
 *
 * No MPI in here: this file also builds into libnbanalysis.so for the Python unit tests.
 * Ranks are 0 .. ranks-1; a partner of -1 means "idle in this phase".
 */
#ifndef NETBENCH_PATTERNS_H
#define NETBENCH_PATTERNS_H

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------------------ */
/* Seeded randomness (splitmix64): the same seed gives the same stream on every rank and host.  */
/* ------------------------------------------------------------------------------------------ */

uint64_t nb_random_next(uint64_t *state);
/* Uniform integer in [0, bound), bound >= 1 (rejection sampling, no modulo bias). */
uint64_t nb_random_below(uint64_t *state, uint64_t bound);
/* order[0..n-1] := a uniformly random permutation of 0..n-1 (Fisher-Yates) drawn from *state. */
void nb_random_permutation(uint64_t *state, int *order, int n);

/* ------------------------------------------------------------------------------------------ */
/* Dense communication (Altix study §3.3)                                                       */
/* ------------------------------------------------------------------------------------------ */

typedef enum {
    NB_DENSE_AAPC = 0,      /* 1: congestion-controlled all-to-all personalized exchange */
    NB_DENSE_PAIRWISE = 1,  /* 2: simple pairwise, distance k in phase k */
    NB_DENSE_CUMULATIVE = 2,/* 3: cumulative pairwise, phase j has j pairs */
    NB_DENSE_RANDOM = 3,    /* 4: random pairwise, new pairs every phase */
    NB_DENSE_ALGORITHM_COUNT = 4,
} nb_dense_algorithm;

/* "aapc", "pairwise", "cumulative", "random" */
const char *nb_dense_algorithm_name(nb_dense_algorithm algorithm);
/* The algorithm with this name, or -1. */
int nb_dense_algorithm_from_name(const char *name);

/* Phases of an algorithm on `ranks` ranks (random: `random_phases`):
 * aapc and pairwise P-1, cumulative floor(P/2), random random_phases. */
int nb_dense_phase_count(nb_dense_algorithm algorithm, int ranks, int random_phases);

/* In `phase` (0-based), the rank `rank` sends one message to *send_to and receives one from
 * *recv_from; -1 for both when it is idle in that phase. Definitions (phase number k = phase+1):
 *  - aapc: send to (r + k) mod P, receive from (r - k) mod P; no rank is idle.
 *  - pairwise: the ranks r, r+k, r+2k, ... (mod P) form cycles of length P / gcd(P, k); in each
 *    cycle consecutive ranks pair up (first with second, third with fourth, ...), and exchange
 *    full duplex; in an odd cycle the last rank is idle. So every pair is at cyclic distance k, and
 *    the first and last phases are the short distances, as in the study.
 *  - cumulative: the fixed pairs (i, i + floor(P/2)), i = 0 .. floor(P/2)-1, cross the middle of
 *    the rank space; in phase k the first k of them exchange, the rest are idle.
 *  - random: a permutation drawn from (seed, phase) pairs its consecutive entries (first with
 *    second, ...); with P odd the last entry is idle. No rank is ever its own partner.
 * For the pairwise algorithms send_to == recv_from. */
void nb_dense_partners(nb_dense_algorithm algorithm, int ranks, int phase, int rank,
                       uint64_t seed, int *send_to, int *recv_from);

/* ------------------------------------------------------------------------------------------ */
/* b_eff (Rabenseifner; Altix study §3.1)                                                       */
/* ------------------------------------------------------------------------------------------ */

#define NB_BEFF_LENGTHS 21
#define NB_BEFF_RING_PATTERNS 6

/* The 21 message lengths: 1, 2, 4, ..., 4096, then 8 geometric steps up to lmax (rounded to
 * whole bytes). Returns 0, or -1 when lmax < 8192 (the steps would not be distinct). */
int nb_beff_message_lengths(size_t lmax, size_t lengths[NB_BEFF_LENGTHS]);

/* Ring pattern `pattern` (0..5) has the nominal ring size s = 2, 4, 8, max(16, P/4),
 * max(32, P/2) or P, capped at P. The ranks are split into n = max(1, min(floor(P/s + 0.4), P/2))
 * rings of consecutive ranks with sizes floor(P/n) and floor(P/n)+1 (when floor(P/n) is odd,
 * the larger, even rings come first); each rank sends to the next and to the previous rank of
 * its ring (in a ring of 2 they are the same rank). Sets *next and *prev and returns the size of
 * the rank's ring. */
int nb_beff_ring(int ranks, int pattern, int rank, int *next, int *prev);

/* Random pattern `pattern` (0-based): one ring over all ranks in a random order drawn from
 * (seed, pattern); each rank sends to its successor and predecessor in that order. */
void nb_beff_random_ring(int ranks, uint64_t seed, int pattern, int rank, int *next, int *prev);

/* Logarithmic average exp(mean(log(values))); NAN when n == 0 or a value is <= 0. */
double nb_logavg(const double *values, size_t n);

#endif
