/* plain_pingpong.c - the simplest blocking MPI ping-pong, the baseline netbench pingpong is
 * compared with (bench/compare_pingpong.sh). Prints one number: the 8-byte one-way latency in
 * microseconds, the median of `repetitions` runs of `iterations` round trips each. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const int iterations = 10000, repetitions = 11, warmup = 1000;
    char buffer[8] = {0};
    double latency_us[11];
    for (int rep = -1; rep < repetitions; rep++) {
        int count = rep < 0 ? warmup : iterations;
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (int i = 0; i < count; i++) {
            if (rank == 0) {
                MPI_Send(buffer, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buffer, 8, MPI_CHAR, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buffer, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buffer, 8, MPI_CHAR, 0, 0, MPI_COMM_WORLD);
            }
        }
        if (rep >= 0)
            latency_us[rep] = (MPI_Wtime() - start) / count / 2 * 1e6;
    }
    if (rank == 0) {
        qsort(latency_us, repetitions, sizeof latency_us[0], compare_doubles);
        printf("%.4f\n", latency_us[repetitions / 2]);
    }
    MPI_Finalize();
    return EXIT_SUCCESS;
}
