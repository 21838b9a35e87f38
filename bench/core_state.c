/* core_state.c - is a slow phase of the machine the path between the cores or the CPU?
 *
 * For SECONDS (default 120), repeatedly: 2000 1-byte round trips between ranks 0 and 1 (the
 * one-way latency in us), then on both ranks a dependent integer chain of 2e6 steps that never
 * leaves the core (its time in ms). Rank 0 prints one line per interval (seconds since start,
 * latency, chain time) and at the end, for the intervals within 2x of the lowest latency (fast)
 * and beyond (slow), their number and the medians of both figures. Equal chain times in both
 * states mean the CPU ran at the same speed and the slow state is the core-to-core path.
 *
 *   mpicc.openmpi -O2 -o /tmp/core_state bench/core_state.c
 *   mpirun.openmpi -np 2 --bind-to core /tmp/core_state 120 > /tmp/core_state.log
 *
 * Measured on the 2-core development VM, 2026-11-24 about 19:10 UTC (Open MPI, 120 s), with the
 * scratch version this file was written from (it split the intervals at 0.25 and 0.30 us
 * instead of 2x the lowest): 36372 intervals, 19625 fast (latency median 0.137 us, chain 2.191
 * ms) and 16745 slow (0.389 us, 2.201 ms); the slow share per 5 s window went 0 -> 1 -> 0
 * several times. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUND_TRIPS 2000
#define CHAIN_STEPS 2000000L
#define MAX_INTERVALS 1000000

static volatile unsigned long sink;

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double seconds = argc > 1 ? atof(argv[1]) : 120.0;
    double *latency = malloc(MAX_INTERVALS * sizeof *latency);
    double *chain = malloc(MAX_INTERVALS * sizeof *chain);
    if (latency == NULL || chain == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    char byte = 0;
    size_t n = 0;
    int go = 1;
    double start = MPI_Wtime();
    while (go && n < MAX_INTERVALS) {
        double t0 = MPI_Wtime();
        for (int i = 0; i < ROUND_TRIPS; i++) {
            if (rank == 0) {
                MPI_Send(&byte, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(&byte, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(&byte, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&byte, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
        }
        latency[n] = (MPI_Wtime() - t0) / ROUND_TRIPS / 2.0 * 1e6;
        double c0 = MPI_Wtime();
        unsigned long x = 1;
        for (long i = 0; i < CHAIN_STEPS; i++)
            x = x * 2862933555777941757UL + 3037000493UL;
        sink = x;
        chain[n] = (MPI_Wtime() - c0) * 1e3;
        if (rank == 0)
            printf("%.2f %.4f %.3f\n", MPI_Wtime() - start, latency[n], chain[n]);
        n++;
        go = MPI_Wtime() - start < seconds;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    if (rank == 0 && n > 0) {
        double lowest = latency[0];
        for (size_t i = 1; i < n; i++)
            lowest = latency[i] < lowest ? latency[i] : lowest;
        double *lat[2], *chn[2];
        size_t count[2] = {0, 0};
        for (int s = 0; s < 2; s++) {
            lat[s] = malloc(n * sizeof *lat[s]);
            chn[s] = malloc(n * sizeof *chn[s]);
        }
        for (size_t i = 0; i < n; i++) {
            int s = latency[i] > 2.0 * lowest;
            lat[s][count[s]] = latency[i];
            chn[s][count[s]++] = chain[i];
        }
        for (int s = 0; s < 2; s++)
            printf("# %s: %zu intervals, latency median %.4f us, chain median %.3f ms\n",
                   s ? "slow" : "fast", count[s], median(lat[s], count[s]),
                   median(chn[s], count[s]));
    }
    MPI_Finalize();
    return 0;
}
