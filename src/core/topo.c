/* topo.c - rank placement (host, affinity, CPU) and the warnings derived from it. */
#include "topo.h"

#include <ctype.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int mask_has(const nb_placement *p, int cpu)
{
    return (p->bound[cpu / 8] >> (cpu % 8)) & 1;
}

static int mask_count(const nb_placement *p)
{
    int count = 0;
    for (int cpu = 0; cpu < NB_TOPO_MAX_CPUS; cpu++)
        count += mask_has(p, cpu);
    return count;
}

static double monotonic_s(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* Seconds this process has waited on a run queue (/proc/self/schedstat, its second field:
 * runnable, its CPU given to another task); < 0 where the kernel does not say. */
static double run_queue_wait_s(void)
{
    FILE *in = fopen("/proc/self/schedstat", "r");
    unsigned long long running_ns = 0, waiting_ns = 0;
    int fields = in == NULL ? 0 : fscanf(in, "%llu %llu", &running_ns, &waiting_ns);
    if (in != NULL)
        fclose(in);
    return fields == 2 ? 1e-9 * (double)waiting_ns : -1.0;
}

/* The task flag of a kernel thread (linux/sched.h). */
#define PF_KTHREAD 0x00200000UL

/* What /proc/PID/stat says of a process: its name (blanks, commas and '=' as '_'), whether it is
 * a kernel thread, the CPU it last ran on and its CPU time in clock ticks. 0, or -1 when it
 * cannot be read (it ended). */
typedef struct {
    char name[64];
    int kernel;
    int cpu;
    unsigned long long ticks;
} process_stat;

static int read_process(const char *pid, process_stat *out)
{
    char path[300], line[1024];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    FILE *in = fopen(path, "r");
    if (in == NULL)
        return -1;
    size_t got = fread(line, 1, sizeof line - 1, in);
    fclose(in);
    line[got] = '\0';
    /* pid (comm) state ...: comm may hold spaces and parentheses; the last ')' ends it. */
    char *open = strchr(line, '('), *close = strrchr(line, ')');
    if (open == NULL || close == NULL || close < open || close[1] != ' ')
        return -1;
    /* after the state (field 3): flags is field 9, utime 14, stime 15, the last CPU 39 */
    char *field = close + 2;
    unsigned long flags = 0;
    unsigned long long utime = 0, stime = 0;
    for (int moved = 1; moved <= 36 && field != NULL; moved++) {
        field = strchr(field, ' ');
        field = field == NULL ? NULL : field + 1;
        if (field == NULL)
            break;
        if (moved == 6)
            flags = strtoul(field, NULL, 10);
        else if (moved == 11)
            utime = strtoull(field, NULL, 10);
        else if (moved == 12)
            stime = strtoull(field, NULL, 10);
    }
    if (field == NULL)
        return -1;
    out->cpu = atoi(field);
    out->kernel = (flags & PF_KTHREAD) != 0;
    out->ticks = utime + stime;
    *close = '\0';
    snprintf(out->name, sizeof out->name, "%s", open + 1);
    for (char *c = out->name; *c; c++)
        if (isspace((unsigned char)*c) || *c == ',' || *c == '=')
            *c = '_';
    return 0;
}

/* Every other process's CPU time at the start of the run, by pid. */
typedef struct {
    long pid;
    unsigned long long ticks;
} process_time;
static process_time *at_start;
static size_t at_start_count;

static void forget_cpu_times(void)
{
    free(at_start);
    at_start = NULL;
    at_start_count = 0;
}

static void note_cpu_times(void)
{
    forget_cpu_times();
    size_t capacity = 0;
    DIR *proc = opendir("/proc");
    if (proc == NULL)
        return;
    long me = (long)getpid();
    struct dirent *entry;
    process_stat stat;
    while ((entry = readdir(proc)) != NULL) {
        if (!isdigit((unsigned char)entry->d_name[0]) || atol(entry->d_name) == me ||
            read_process(entry->d_name, &stat) != 0)
            continue;
        if (at_start_count == capacity) {
            size_t grown = capacity ? 2 * capacity : 256;
            process_time *bigger = realloc(at_start, grown * sizeof *bigger);
            if (bigger == NULL)
                break;
            at_start = bigger;
            capacity = grown;
        }
        at_start[at_start_count++] = (process_time){atol(entry->d_name), stat.ticks};
    }
    closedir(proc);
}

/* The other processes that last ran on one of this rank's CPUs and took at least 1 % of the run
 * in CPU time, as "name(pid):N%" (kernel threads in brackets, as ps shows them: the network
 * stack's softirq work on a rank's core is the transport's own cost, not another program). */
static void cpu_takers(const nb_placement *self, double elapsed_s, char *text, size_t length)
{
    text[0] = '\0';
    long ticks_per_s = sysconf(_SC_CLK_TCK);
    DIR *proc = ticks_per_s > 0 && elapsed_s > 0.0 ? opendir("/proc") : NULL;
    if (proc == NULL)
        return;
    size_t used = 0;
    long me = (long)getpid();
    struct dirent *entry;
    process_stat stat;
    while ((entry = readdir(proc)) != NULL) {
        long pid = atol(entry->d_name);
        if (!isdigit((unsigned char)entry->d_name[0]) || pid == me ||
            read_process(entry->d_name, &stat) != 0 || stat.cpu < 0 ||
            stat.cpu >= NB_TOPO_MAX_CPUS || !mask_has(self, stat.cpu))
            continue;
        unsigned long long before = 0; /* a process started during the run: all its time */
        for (size_t i = 0; i < at_start_count; i++)
            if (at_start[i].pid == pid) {
                before = at_start[i].ticks;
                break;
            }
        if (stat.ticks < before)
            continue;
        double share = (double)(stat.ticks - before) / (double)ticks_per_s / elapsed_s;
        if (share < NB_CPU_OTHERS_FROM)
            continue;
        int n = snprintf(text + used, length - used, "%s%s%s%s(%ld):%.0f%%", used ? "," : "",
                         stat.kernel ? "[" : "", stat.name, stat.kernel ? "]" : "", pid,
                         100.0 * share);
        if (n < 0 || (size_t)n >= length - used) {
            text[used] = '\0';
            break;
        }
        used += (size_t)n;
    }
    closedir(proc);
}

void nb_placement_record_start(nb_placement *self, int rank)
{
    memset(self, 0, sizeof *self);
    self->rank = rank;
    int length = 0;
    if (MPI_Get_processor_name(self->host, &length) != MPI_SUCCESS || length <= 0)
        snprintf(self->host, sizeof self->host, "unknown");
    self->host[MPI_MAX_PROCESSOR_NAME] = '\0';
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        for (int cpu = 0; cpu < NB_TOPO_MAX_CPUS && cpu < CPU_SETSIZE; cpu++)
            if (CPU_ISSET(cpu, &set))
                self->bound[cpu / 8] |= (unsigned char)(1u << (cpu % 8));
    }
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    self->online_cpus = online > 0 ? (int)online : 0;
    self->cpu_at_start = sched_getcpu();
    self->cpu_at_end = self->cpu_at_start;
    self->cpu_wait_fraction = -1.0;
    note_cpu_times();
    self->wait_s_at_start = run_queue_wait_s();
    self->started_s = monotonic_s();
}

void nb_placement_record_end(nb_placement *self)
{
    double elapsed = monotonic_s() - self->started_s;
    double waited = run_queue_wait_s();
    self->cpu_at_end = sched_getcpu();
    if (waited >= 0.0 && self->wait_s_at_start >= 0.0 && elapsed > 0.0)
        self->cpu_wait_fraction = (waited - self->wait_s_at_start) / elapsed;
    if (self->cpu_wait_fraction > NB_CPU_OTHERS_FROM)
        cpu_takers(self, elapsed, self->cpu_others, sizeof self->cpu_others);
    forget_cpu_times();
}

nb_placement *nb_placement_gather(const nb_placement *self, MPI_Comm comm)
{
    int rank = 0, size = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    nb_placement *all = NULL;
    if (rank == 0) {
        all = malloc((size_t)size * sizeof *all);
        if (all == NULL) {
            fprintf(stderr, "netbench: out of memory gathering the rank placement\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    /* Same binary on every rank, so the struct travels as bytes. */
    MPI_Gather(self, (int)sizeof *self, MPI_BYTE, all, (int)sizeof *self, MPI_BYTE, 0, comm);
    return all;
}

/* "0,1,4-7" into text */
static void format_cpu_list(const int *cpus, int count, char *text, size_t length)
{
    size_t used = 0;
    text[0] = '\0';
    for (int i = 0; i < count && used < length; ) {
        int j = i;
        while (j + 1 < count && cpus[j + 1] == cpus[j] + 1)
            j++;
        if (j == i)
            used += (size_t)snprintf(text + used, length - used, "%s%d", i ? "," : "", cpus[i]);
        else
            used += (size_t)snprintf(text + used, length - used, "%s%d-%d", i ? "," : "",
                                     cpus[i], cpus[j]);
        i = j + 1;
    }
}

/* Warnings per pair of ranks beyond which only a count is reported. */
#define MAX_PAIR_WARNINGS 4

static const char advice[] = "busy-polling ranks must sit on different cores, otherwise they "
                             "take turns and every timing is distorted; bind them (Open MPI: "
                             "mpirun --bind-to core, MPICH: mpirun -bind-to core)";

static int is_unbound(const nb_placement *p)
{
    return p->online_cpus > 1 && mask_count(p) >= p->online_cpus;
}

/* 1 when two ranks on one host may run on the same CPU. */
static int pair_conflict(const nb_placement *a, const nb_placement *b)
{
    for (int cpu = 0; cpu < NB_TOPO_MAX_CPUS; cpu++)
        if (mask_has(a, cpu) && mask_has(b, cpu))
            return 1;
    return 0;
}

/* Adds the warning for ranks a and b on one host, if any; returns 1 when it did. */
static int pair_warning(const nb_placement *a, const nb_placement *b, nb_result *result)
{
    int a_unbound = is_unbound(a), b_unbound = is_unbound(b);
    int shared[NB_TOPO_MAX_CPUS], shared_count = 0;
    for (int cpu = 0; cpu < NB_TOPO_MAX_CPUS; cpu++)
        if (mask_has(a, cpu) && mask_has(b, cpu))
            shared[shared_count++] = cpu;
    if (shared_count == 0)
        return 0;
    char list[256];
    format_cpu_list(shared, shared_count, list, sizeof list);
    if (a_unbound && b_unbound)
        nb_warning(result, "ranks %d and %d are not bound to cores (both may run on any of CPUs "
                   "%s of host %s): %s", a->rank, b->rank, list, a->host, advice);
    else if (a_unbound || b_unbound)
        nb_warning(result, "rank %d is not bound to a core and may run on CPUs %s of host %s, "
                   "which rank %d uses too: %s", a_unbound ? a->rank : b->rank, list, a->host,
                   a_unbound ? b->rank : a->rank, advice);
    else
        nb_warning(result, "ranks %d and %d share CPU %s on host %s: %s", a->rank, b->rank, list,
                   a->host, advice);
    return 1;
}

/* Every timing of the run is unreliable when a measuring rank shares a CPU with another rank
 * of its host: with ranks 0 and 1 on one CPU (oversubscribed, or not bound) the latency came out
 * 10x too high, and even a waiting rank that sleeps between tests of a barrier on a measuring
 * rank's CPU made it 2-3x too high on the development VM. One entry, naming the first pair. */
static void flag_shared_cpus(const nb_placement *all, int count, int measured, nb_result *result)
{
    int pairs = 0, first_a = -1, first_b = -1;
    for (int i = 0; i < measured; i++)
        for (int j = i + 1; j < count; j++)
            if (strcmp(all[i].host, all[j].host) == 0 && pair_conflict(&all[i], &all[j])) {
                if (pairs++ == 0) {
                    first_a = i;
                    first_b = j;
                }
            }
    if (pairs == 0)
        return;
    int shared[NB_TOPO_MAX_CPUS], shared_count = 0;
    for (int cpu = 0; cpu < NB_TOPO_MAX_CPUS; cpu++)
        if (mask_has(&all[first_a], cpu) && mask_has(&all[first_b], cpu))
            shared[shared_count++] = cpu;
    char list[256], more[96] = "";
    format_cpu_list(shared, shared_count, list, sizeof list);
    if (pairs > 1)
        snprintf(more, sizeof more, " (and %d more pairs of ranks)", pairs - 1);
    nb_unreliable(result, "timings", "%s rank %d and %s rank %d can both run on %s %s of "
                  "host %s%s (oversubscribed or not bound): ranks that share a CPU take turns "
                  "and every timing is distorted; run one rank per core, bound (Open MPI: "
                  "--bind-to core, MPICH: -bind-to core)",
                  first_a < measured ? "measuring" : "waiting", all[first_a].rank,
                  first_b < measured ? "measuring" : "waiting", all[first_b].rank,
                  shared_count > 1 ? "CPUs" : "CPU", list,
                  all[first_a].host, more);
}

void nb_placement_report(const nb_placement *all, int count, int measured, int timed,
                         nb_result *result)
{
    int cpus[NB_TOPO_MAX_CPUS];
    for (int r = 0; r < count; r++) {
        int n = 0;
        for (int cpu = 0; cpu < NB_TOPO_MAX_CPUS; cpu++)
            if (mask_has(&all[r], cpu))
                cpus[n++] = cpu;
        nb_result_add_rank(result, all[r].rank, all[r].host, cpus, (size_t)n, all[r].cpu_at_start,
                           all[r].cpu_at_end, all[r].cpu_wait_fraction, all[r].cpu_others);
    }
    if (count < 2)
        return;
    if (measured > count)
        measured = count;
    if (timed)
        flag_shared_cpus(all, count, measured, result);

    /* Every pair of measuring ranks on one host must sit on different CPUs. */
    if (measured > count)
        measured = count;
    int reported = 0, unreported = 0;
    for (int i = 0; i < measured; i++)
        for (int j = i + 1; j < measured; j++) {
            if (strcmp(all[i].host, all[j].host) != 0)
                continue;
            if (reported < MAX_PAIR_WARNINGS) {
                if (pair_warning(&all[i], &all[j], result))
                    reported++;
            } else if (pair_conflict(&all[i], &all[j])) {
                unreported++;
            }
        }
    if (unreported > 0)
        nb_warning(result, "%d more pairs of ranks share CPUs (only the first %d are listed)",
                   unreported, MAX_PAIR_WARNINGS);
    for (int r = 0; r < measured; r++)
        if (all[r].cpu_at_start != all[r].cpu_at_end)
            nb_warning(result, "rank %d moved from CPU %d to CPU %d during the measurement", r,
                       all[r].cpu_at_start, all[r].cpu_at_end);
}
