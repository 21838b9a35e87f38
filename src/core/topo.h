/* topo.h - where the ranks run: host, CPU affinity, CPU before and after the timed loops.
 *
 * Busy-polling ranks that share a core (or float over all cores) distort every timing on a
 * small node, so rank 0 turns the gathered placement into warnings.
 */
#ifndef NETBENCH_TOPO_H
#define NETBENCH_TOPO_H

#include <mpi.h>

#include "output.h"

#define NB_TOPO_MAX_CPUS 1024
#define NB_CPU_OTHERS_LENGTH 160
/* A wait above this fraction of the run names the processes runnable on the rank's CPUs. */
#define NB_CPU_OTHERS_FROM 0.01

typedef struct {
    int rank;
    char host[MPI_MAX_PROCESSOR_NAME + 1];
    unsigned char bound[NB_TOPO_MAX_CPUS / 8]; /* affinity mask, one bit per CPU */
    int online_cpus;                            /* CPUs online on the host */
    int cpu_at_start;                           /* sched_getcpu() before the first timed loop */
    int cpu_at_end;                             /* and after the last */
    double started_s;                           /* CLOCK_MONOTONIC at the start */
    double wait_s_at_start;                     /* run-queue wait so far (schedstat), or < 0 */
    double cpu_wait_fraction;                   /* of the run spent runnable but not running:
                                                   its CPU went to something else; < 0 unknown */
    char cpu_others[NB_CPU_OTHERS_LENGTH];      /* "name(pid):N%,..." that took its CPUs during
                                                   the run, where the wait was noticeable */
} nb_placement;

/* Host, affinity mask and current CPU of the calling process. */
void nb_placement_record_start(nb_placement *self, int rank);
void nb_placement_record_end(nb_placement *self);

/* Collective over `comm`: rank 0 of comm receives every rank's placement (malloc'ed array of
 * comm size, to free), the others get NULL. */
nb_placement *nb_placement_gather(const nb_placement *self, MPI_Comm comm);

/* Adds the ranks to the result header, and warnings when two of the first `measured` ranks (2
 * for point-to-point methods, all for multi-rank methods) share CPUs on one host or are not
 * bound at all, or moved during the measurement. When `timed` (not a validation run) and one of
 * the measuring ranks may share a CPU with any other rank on its host, an `unreliable` entry
 * "timings" marks every figure of the run. */
void nb_placement_report(const nb_placement *all, int count, int measured, int timed,
                         nb_result *result);

#endif
