/* patterns.c - communication patterns of the multi-rank methods (see patterns.h). No MPI. */
#include "patterns.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

uint64_t nb_random_next(uint64_t *state)
{
    /* splitmix64 (Steele, Lea, Flood 2014): full period, good mixing, trivially portable. */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t nb_random_below(uint64_t *state, uint64_t bound)
{
    if (bound <= 1)
        return 0;
    /* Reject the top partial bucket so that every value is equally likely. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % bound;
    uint64_t x;
    do
        x = nb_random_next(state);
    while (x >= limit);
    return x % bound;
}

void nb_random_permutation(uint64_t *state, int *order, int n)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)nb_random_below(state, (uint64_t)i + 1);
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

/* A stream per (seed, stream, index): patterns drawn independently of the order they are used. */
static uint64_t stream_state(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t state = seed ^ (stream * 0xd1b54a32d192ed03ULL);
    (void)nb_random_next(&state);
    state ^= index * 0x8cb92ba72f3d8dd7ULL;
    return state;
}

/* Position of `rank` in `order` under a random permutation of 0..ranks-1 for (seed, stream,
 * index); *order_out (malloc'ed, to free) receives the permutation. Returns -1 on no memory. */
static int random_order(int ranks, uint64_t seed, uint64_t stream, uint64_t index, int rank,
                        int **order_out)
{
    int *order = malloc((size_t)ranks * sizeof *order);
    if (order == NULL)
        return -1;
    uint64_t state = stream_state(seed, stream, index);
    nb_random_permutation(&state, order, ranks);
    int position = -1;
    for (int i = 0; i < ranks; i++)
        if (order[i] == rank)
            position = i;
    *order_out = order;
    return position;
}

/* ------------------------------------------------------------------------------------------ */
/* Dense communication                                                                          */
/* ------------------------------------------------------------------------------------------ */

static const char *const dense_names[NB_DENSE_ALGORITHM_COUNT] = {"aapc", "pairwise",
                                                                  "cumulative", "random"};

const char *nb_dense_algorithm_name(nb_dense_algorithm algorithm)
{
    return (unsigned)algorithm < NB_DENSE_ALGORITHM_COUNT ? dense_names[algorithm] : "?";
}

int nb_dense_algorithm_from_name(const char *name)
{
    for (int i = 0; i < NB_DENSE_ALGORITHM_COUNT; i++)
        if (strcmp(name, dense_names[i]) == 0)
            return i;
    return -1;
}

int nb_dense_phase_count(nb_dense_algorithm algorithm, int ranks, int random_phases)
{
    if (ranks < 2)
        return 0;
    switch (algorithm) {
    case NB_DENSE_AAPC:
    case NB_DENSE_PAIRWISE:
        return ranks - 1;
    case NB_DENSE_CUMULATIVE:
        return ranks / 2;
    case NB_DENSE_RANDOM:
        return random_phases;
    default:
        return 0;
    }
}

void nb_dense_partners(nb_dense_algorithm algorithm, int ranks, int phase, int rank,
                       uint64_t seed, int *send_to, int *recv_from)
{
    *send_to = -1;
    *recv_from = -1;
    if (ranks < 2 || rank < 0 || rank >= ranks || phase < 0)
        return;
    int k = phase + 1;
    switch (algorithm) {
    case NB_DENSE_AAPC:
        if (k >= ranks)
            return;
        *send_to = (rank + k) % ranks;
        *recv_from = (rank - k + ranks) % ranks;
        return;
    case NB_DENSE_PAIRWISE: {
        if (k >= ranks)
            return;
        /* The cycle through `rank` with step k has length ranks/g and starts at rank mod g;
         * the rank's position in it is the j with start + j*k == rank (mod ranks). */
        int g = (int)nb_gcd((size_t)ranks, (size_t)k);
        int length = ranks / g;
        int start = rank % g;
        int position = 0;
        for (int r = start; r != rank; r = (r + k) % ranks)
            position++;
        int partner_position = position % 2 == 0 ? position + 1 : position - 1;
        if (partner_position >= length)
            return; /* the last rank of an odd cycle */
        int partner = (int)((start + (long)partner_position * k) % ranks);
        *send_to = *recv_from = partner;
        return;
    }
    case NB_DENSE_CUMULATIVE: {
        int half = ranks / 2;
        if (k > half)
            return;
        int pair = rank < half ? rank : rank - half;
        if (rank >= 2 * half || pair >= k)
            return;
        *send_to = *recv_from = rank < half ? rank + half : rank - half;
        return;
    }
    case NB_DENSE_RANDOM: {
        int *order = NULL;
        int position = random_order(ranks, seed, 1, (uint64_t)phase, rank, &order);
        if (position < 0)
            return;
        int partner_position = position % 2 == 0 ? position + 1 : position - 1;
        if (partner_position < ranks)
            *send_to = *recv_from = order[partner_position];
        free(order);
        return;
    }
    default:
        return;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* b_eff                                                                                        */
/* ------------------------------------------------------------------------------------------ */

int nb_beff_message_lengths(size_t lmax, size_t lengths[NB_BEFF_LENGTHS])
{
    enum { POWERS = 13 }; /* 1 .. 4096 */
    if (lmax < 8192)
        return -1;
    for (int i = 0; i < POWERS; i++)
        lengths[i] = (size_t)1 << i;
    double length = 4096.0;
    double factor = pow((double)lmax / 4096.0, 1.0 / (NB_BEFF_LENGTHS - POWERS));
    for (int i = POWERS; i < NB_BEFF_LENGTHS; i++) {
        length *= factor;
        lengths[i] = (size_t)(length + 0.5);
    }
    lengths[NB_BEFF_LENGTHS - 1] = lmax; /* exact, whatever the rounding */
    return 0;
}

int nb_beff_ring(int ranks, int pattern, int rank, int *next, int *prev)
{
    int nominal[NB_BEFF_RING_PATTERNS] = {2, 4, 8, ranks / 4 > 16 ? ranks / 4 : 16,
                                          ranks / 2 > 32 ? ranks / 2 : 32, ranks};
    if (pattern < 0 || pattern >= NB_BEFF_RING_PATTERNS || ranks < 2 || rank < 0 ||
        rank >= ranks) {
        *next = *prev = -1;
        return 0;
    }
    int size = nominal[pattern] < ranks ? nominal[pattern] : ranks;
    int rings = (int)((double)ranks / size + 0.4);
    if (rings > ranks / 2)
        rings = ranks / 2;
    if (rings < 1)
        rings = 1;
    int low = ranks / rings, high = low + 1;
    int high_count = ranks - low * rings, low_count = rings - high_count;
    int first_size = low, second_size = high, first_count = low_count;
    if (low % 2 == 1 && high_count > 0) {
        first_size = high;
        second_size = low;
        first_count = high_count;
    }
    int ring_size, base;
    if (rank < first_count * first_size) {
        ring_size = first_size;
        base = rank / ring_size * ring_size;
    } else {
        ring_size = second_size;
        base = (rank - first_count * first_size) / ring_size * ring_size + first_count * first_size;
    }
    *next = (rank - base + 1) % ring_size + base;
    *prev = (rank - base + ring_size - 1) % ring_size + base;
    return ring_size;
}

void nb_beff_random_ring(int ranks, uint64_t seed, int pattern, int rank, int *next, int *prev)
{
    *next = *prev = -1;
    if (ranks < 2 || rank < 0 || rank >= ranks)
        return;
    int *order = NULL;
    int position = random_order(ranks, seed, 2, (uint64_t)pattern, rank, &order);
    if (position < 0)
        return;
    *next = order[(position + 1) % ranks];
    *prev = order[(position - 1 + ranks) % ranks];
    free(order);
}

double nb_logavg(const double *values, size_t n)
{
    if (n == 0)
        return NAN;
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (!(values[i] > 0.0))
            return NAN;
        sum += log(values[i]);
    }
    return exp(sum / (double)n);
}
