/* netbench.c - entry point: options (before MPI_Init), dispatch to a method, result output.
 *
 * Point-to-point methods: ranks 0 and 1 measure, further ranks wait at a barrier (sleeping).
 * Multi-rank methods (NB_ON_ALL_RANKS): every rank communicates. Rank 0 prints. The methods
 * are in the registry, methods/registry.c.
 * Output contract: docs/output-format.md.
 */
#include <errno.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "measure.h"
#include "methods.h"
#include "output.h"
#include "topo.h"

/* The barrier where ranks >= 2 wait while ranks 0 and 1 measure. They test it and sleep in
 * between instead of polling, so that a waiting rank on a measuring rank's core takes (almost)
 * no CPU time from it. */
static void wait_for_all_ranks(int world_rank)
{
    MPI_Request barrier;
    MPI_Ibarrier(MPI_COMM_WORLD, &barrier);
    if (world_rank < 2) {
        MPI_Wait(&barrier, MPI_STATUS_IGNORE);
        return;
    }
    int done = 0;
    const struct timespec pause = {.tv_sec = 0, .tv_nsec = 1000000};
    while (MPI_Test(&barrier, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done)
        nanosleep(&pause, NULL);
}

/* ------------------------------------------------------------------------------------------ */
/* Watchdog (--timeout): SIGALRM from alarm(), armed before MPI_Init, cancelled after          */
/* MPI_Finalize. The handler only write()s a prepared line and calls _exit() (async-signal     */
/* safe); the launcher then ends the other ranks.                                              */
/* ------------------------------------------------------------------------------------------ */

typedef enum { STAGE_INIT, STAGE_MEASURING, STAGE_RESULT, STAGE_FINALIZE } run_stage;

static volatile sig_atomic_t watchdog_stage = STAGE_INIT;
static volatile sig_atomic_t watchdog_rank = -1;
static char watchdog_head[128];  /* "netbench: pingpong did not end within --timeout 600 s" */

/* Appends text to line[*used..capacity-1] (async-signal safe, unlike the str* functions). */
static void append_text(char *line, size_t capacity, size_t *used, const char *text)
{
    while (*text != '\0' && *used + 1 < capacity)
        line[(*used)++] = *text++;
    line[*used] = '\0';
}

static void watchdog_fired(int signal_number)
{
    (void)signal_number;
    static const char *const stages[] = {
        [STAGE_INIT] = "starting MPI (MPI_Init)",
        [STAGE_MEASURING] = "measuring (waiting for another rank)",
        [STAGE_RESULT] = "collecting the result",
        [STAGE_FINALIZE] = "ending MPI (MPI_Finalize)",
    };
    char rank[16] = "?";
    int value = watchdog_rank, digits = 0;
    if (value >= 0) {
        char reversed[16];
        do {
            reversed[digits++] = (char)('0' + value % 10);
            value /= 10;
        } while (value > 0 && digits < 15);
        for (int i = 0; i < digits; i++)
            rank[i] = reversed[digits - 1 - i];
        rank[digits] = '\0';
    }
    /* One write() of the whole line: a rank killed by the launcher meanwhile leaves either the
     * line or nothing, never half of it. */
    char line[1024];
    size_t used = 0;
    append_text(line, sizeof line, &used, watchdog_head);
    append_text(line, sizeof line, &used, " (rank ");
    append_text(line, sizeof line, &used, rank);
    append_text(line, sizeof line, &used, ", ");
    append_text(line, sizeof line, &used, stages[watchdog_stage]);
    append_text(line, sizeof line, &used,
                "): a rank was stopped, hangs or died, or the run needs longer; ending with "
                "status 1. Raise the limit with --timeout SECONDS, or turn the watchdog off "
                "with --timeout 0\n");
    ssize_t written = write(STDERR_FILENO, line, used);
    (void)written;
    _exit(1);
}

static void watchdog_arm(const char *method, long seconds)
{
    if (seconds <= 0)
        return;
    snprintf(watchdog_head, sizeof watchdog_head,
             "netbench: %s did not end within --timeout %ld s", method, seconds);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = watchdog_fired;
    sigemptyset(&action.sa_mask);
    sigaction(SIGALRM, &action, NULL);
    alarm((unsigned)seconds);
}

/* MPI_Finalize after a complete result gets at most this long: a library whose shutdown hangs
 * (seen with MPICH 4.0 over UCX's TCP transport between network namespaces: a rank spinning in
 * MPI_Finalize after every figure was written) fails in half a minute, not at --timeout. */
#define NB_FINALIZE_LIMIT_S 30

static void watchdog_arm_finalize(const char *method)
{
    unsigned left = alarm(0);
    if (left == 0)
        return; /* the watchdog is off (--timeout 0) */
    unsigned limit = left < NB_FINALIZE_LIMIT_S ? left : NB_FINALIZE_LIMIT_S;
    snprintf(watchdog_head, sizeof watchdog_head,
             "netbench: %s: MPI_Finalize did not return within %u s after the result was "
             "complete", method, limit);
    alarm(limit);
}

#if defined(OPEN_MPI) || defined(MPICH)
/* The launcher's idea of the job size from its environment variable, or 0 (read only where the
 * MPI is one of the two a launcher mix-up can start: not under SimGrid's SMPI). */
static long launcher_size(const char *name)
{
    const char *value = getenv(name);
    if (value == NULL || value[0] == '\0')
        return 0;
    char *end = NULL;
    long size = strtol(value, &end, 10);
    return *end == '\0' && size > 0 ? size : 0;
}
#endif

/* Fewer than 2 ranks. When the environment shows that the other MPI's launcher started this
 * process for a larger job (Open MPI's mpirun for an MPICH build, MPICH's hydra for an Open MPI
 * build), every process initialised alone as a singleton: say so, and which launcher fits. */
static void report_too_few_ranks(const char *method, int world_size)
{
#if defined(OPEN_MPI)
    const char *library = "Open MPI", *own = "mpirun.openmpi", *make = "mpicc.mpich";
    const char *foreign = "MPICH's launcher mpiexec.hydra or srun --mpi=pmi2";
    const char *variable = "PMI_SIZE";
    long size = launcher_size(variable);
#elif defined(MPICH)
    const char *library = "MPICH", *own = "mpiexec.hydra", *make = "mpicc.openmpi";
    const char *foreign = "Open MPI's launcher mpirun.openmpi";
    const char *variable = "OMPI_COMM_WORLD_SIZE";
    long size = launcher_size(variable);
    if (size == 0 && getenv("PMIX_RANK") != NULL) {
        foreign = "a PMIx launcher such as mpirun.openmpi or srun --mpi=pmix";
        variable = "PMIX_RANK";
        size = 2;
    }
#else
    const char *library = "", *own = "", *make = "", *foreign = "", *variable = "";
    long size = 0;
#endif
    if (size > world_size) {
        char seen[64];
        if (strcmp(variable, "PMIX_RANK") == 0)
            snprintf(seen, sizeof seen, "PMIX_RANK in the environment");
        else
            snprintf(seen, sizeof seen, "%s=%ld in the environment", variable, size);
        fprintf(stderr, "netbench: %s needs 2 MPI ranks, got %d: the launcher and the MPI "
                "library differ - this netbench is built with %s but was started by %s (%s), "
                "so every process ran alone; run it as %s -np 2 netbench %s, or rebuild it "
                "for that launcher (make -C src MPICC=%s)\n", method, world_size, library,
                foreign, seen, own, method, make);
        return;
    }
    fprintf(stderr, "netbench: %s needs 2 MPI ranks, got %d; run it as mpirun -np 2 netbench "
            "%s\n", method, world_size, method);
}

/* Rank 0: header, output on stdout, and the JSON file. Returns the exit status. */
static int write_result(nb_result *result, const nb_options *options, time_t start,
                        const nb_placement *placements, int rank_count, int measured_ranks)
{
    char library[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
    int length = 0, version = 0, subversion = 0;
    MPI_Get_library_version(library, &length);
    MPI_Get_version(&version, &subversion);
    nb_result_set_mpi(result, library, version, subversion);
    nb_result_set_command_line(result, options->argc, options->argv);
    nb_result_set_start_time(result, start);
    nb_placement_report(placements, rank_count, measured_ranks, !options->validate, result);

    int status = 0;
    if (options->json_to_stdout)
        status |= nb_render_json(result, stdout);
    else
        status |= nb_render_human(result, stdout);
    if (status != 0)
        fprintf(stderr, "netbench: writing the result to stdout failed\n");
    if (options->json_file != NULL)
        status |= nb_write_json_file(result, options->json_file);
    return status != 0 ? 1 : 0;
}

/* What netbench printed itself (help, --describe, a dry run) must reach stdout: a full disk or
 * a closed pipe is an error, not exit 0 with the text lost. (Under mpirun, rank 0's stdout is
 * the launcher's pipe; the launcher writes the file - --json-file is checked end to end.) */
static int flushed(int status)
{
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "netbench: writing to stdout failed: %s\n", strerror(errno));
        return status != 0 ? status : 1;
    }
    return status;
}

/* --transport-evidence, rank 0 only (its lines grow with its peers, not with the square of the
 * ranks); what the environment sets already is kept. Open MPI reads its variable in MPI_Init,
 * UCX when its library is loaded, before main: so this process starts itself again, once, with
 * UCX_LOG_LEVEL set (before MPI_Init nothing has reached the launcher yet). */
static void ask_for_transport_evidence(char **argv)
{
    setenv("OMPI_MCA_btl_base_verbose", "1", 0);
    if (getenv("UCX_LOG_LEVEL") != NULL)
        return;
    setenv("UCX_LOG_LEVEL", "info", 0);
    fflush(NULL);
    /* By its own path, so that the process keeps its name ("netbench", not "exe": what the
     * ranks' cpu_others and ps show). */
    char self[4096];
    ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
    if (length > 0) {
        self[length] = '\0';
        execv(self, argv);
    }
    execv("/proc/self/exe", argv);
    /* Not restarted (no /proc): Open MPI's lines still come; UCX's do not. */
}

int main(int argc, char **argv)
{
    /* Everything about the arguments is settled before MPI_Init (exit 2, no MPI traffic). */
    nb_cli_outcome outcome = NB_CLI_RUN;
    const nb_method *chosen = nb_cli_pick_method(argc, argv, &outcome);
    if (chosen == NULL)
        return flushed(outcome == NB_CLI_EXIT_OK ? 0 : NB_EXIT_USAGE);
    nb_options options;
    outcome = nb_cli_parse(argc, argv, chosen, &options);
    if (outcome != NB_CLI_RUN)
        return flushed(outcome == NB_CLI_EXIT_OK ? 0 : NB_EXIT_USAGE);
    const char *method = chosen->name;
    if (chosen->without_mpi != NULL) { /* a dry run (matrix --print-schedule): no MPI */
        int status = chosen->without_mpi(&options);
        if (status >= 0)
            return flushed(status);
    }

    if (options.transport_evidence && nb_cli_is_printing_process())
        ask_for_transport_evidence(argv);
    time_t start = time(NULL);
    watchdog_arm(method, options.timeout_s);
    MPI_Init(&argc, &argv);
    int world_rank = 0, world_size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    watchdog_rank = world_rank;
    watchdog_stage = STAGE_MEASURING;
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (world_size < 2) {
        /* Under the other MPI's launcher every process is a singleton: each prints unless
         * the launcher's rank variable names another rank. */
        if (world_rank == 0 && nb_cli_is_printing_process())
            report_too_few_ranks(method, world_size);
        watchdog_stage = STAGE_FINALIZE;
        MPI_Finalize();
        alarm(0);
        return NB_EXIT_USAGE;
    }

    /* Point-to-point methods run on ranks 0 and 1; multi-rank methods on every rank. */
    int all_ranks = chosen->scope == NB_ON_ALL_RANKS;
    MPI_Comm pair = MPI_COMM_NULL;
    if (all_ranks)
        MPI_Comm_dup(MPI_COMM_WORLD, &pair);
    else
        MPI_Comm_split(MPI_COMM_WORLD, world_rank < 2 ? 0 : MPI_UNDEFINED, world_rank, &pair);
    nb_result *result = world_rank == 0 ? nb_result_new(method) : NULL;
    if (result != NULL)
        nb_result_declare_summary(result, chosen->figures, chosen->figure_count);

    nb_placement self;
    nb_placement_record_start(&self, world_rank);
    if (pair != MPI_COMM_NULL) {
        nb_context ctx = {
            .pair = pair,
            .rank = world_rank,
            .size = all_ranks ? world_size : 2,
            .options = &options,
            .result = result,
            .timer_tick_s = MPI_Wtick(),
        };
        chosen->run(&ctx);
        MPI_Comm_free(&pair);
    }
    nb_placement_record_end(&self);
    wait_for_all_ranks(world_rank);
    watchdog_stage = STAGE_RESULT;

    nb_placement *placements = nb_placement_gather(&self, MPI_COMM_WORLD);
    int exit_status = 0;
    if (world_rank == 0)
        exit_status = write_result(result, &options, start, placements, world_size,
                                   all_ranks ? world_size : 2);
    free(placements);
    nb_result_free(result);

    MPI_Barrier(MPI_COMM_WORLD);
    watchdog_stage = STAGE_FINALIZE;
    watchdog_arm_finalize(method);
    MPI_Finalize();
    alarm(0);
    return exit_status;
}
