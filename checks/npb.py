"""NAS Parallel Benchmarks: the MPI kernels (NPB 3.x) and the multi-zone hybrids (NPB-MZ).

Test plan. Programs from Spack (partitions with extras.spack) or from the path,
$FABRICSUITE_NPB_DIR / $FABRICSUITE_NPB_MZ_DIR or -S binary=...; otherwise skipped with the
reason. The class is a variable: `-S npb_class=S` for a smoke run (the default), C or D for
acceptance. Every core of 1, 2, 4 nodes, but only the process counts a kernel accepts (BT and SP
a square, CG, FT, IS and MG a power of two, LU and EP any): other counts are skipped, saying why.
Sanity: the report is of the benchmark, class and process count the case asked for (a binary
given with -S binary= may be another one), `Verification = SUCCESSFUL`, and the active processes
equal the total (NPB silently idles ranks it cannot use). Performance: `Mop/s total` and `Time
in seconds`, per partition, environment, kernel (NPB) or benchmark (NPB-MZ) and scale, where the
scale carries the class ("2x16-C"; NPB-MZ adds the split, "2x16-C:16x2"): each kernel has its
own reference. NPB prints the time in steps of 0.01 s: `fabricsuite baseline` records a time
under 1 s (class S) without judging it; Mop/s, from NPB's own timer, is judged at every class.

- Npb: bt, cg, ep, ft, is, lu, mg, sp.
- NpbMz: bt-mz, sp-mz, lu-mz with two splits of the same cores: all ranks (C x 1 thread) and
  hybrid (C/2 ranks x 2 threads); at most as many ranks as the class has zones.
"""

import reframe as rfm
from reframe.core.builtins import parameter, run_after, variable

from fabricsuite.base.metrics import Figure, PerfSpec, reads
from fabricsuite.checks.rfm_external import MultiRankExternalCheck
from fabricsuite.data.external import parse_npb
from fabricsuite.data.npb import mz_zones, npb_rejects


class _NpbCommon(rfm.RegressionTestPlugin):
    npb_class = variable(str, value="S", loggable=True)
    metrics = {
        "mops_total": Figure(reads(None, "mops_total"), PerfSpec("Mop/s", "higher")),
        "time_s": Figure(reads(None, "time_s"), PerfSpec("s", "lower", resolution=0.01)),
    }

    def scale_detail(self) -> str:
        return f"-{self.npb_class}"

    def parse(self):
        return parse_npb(self.stdout_text(), self.program_names[0])

    def asked_benchmark(self) -> str:
        """The benchmark as NPB's report names it ("CG", "BT-MZ")."""
        raise NotImplementedError

    def problems(self, result):
        problems = []
        if result.benchmark.upper() != self.asked_benchmark():
            problems.append(f"the program's report is of {result.benchmark}, "
                            f"{self.asked_benchmark()} was asked for")
        if result.verification != "SUCCESSFUL":
            problems.append(f"{result.benchmark}: Verification = {result.verification}")
        if result.active_processes != result.total_processes:
            problems.append(f"{result.benchmark}: {result.active_processes} active processes of "
                            f"{result.total_processes}: the rest idled")
        if result.total_processes != self.num_tasks:
            problems.append(f"{result.benchmark} ran {result.total_processes} processes, the "
                            f"job had {self.num_tasks}")
        if result.npb_class != self.npb_class:
            problems.append(f"class {result.npb_class} ran, {self.npb_class} was asked for")
        return problems


@rfm.simple_test
class Npb(_NpbCommon, MultiRankExternalCheck):
    descr = "NAS Parallel Benchmarks (MPI): one kernel at one class"
    suite = "npb"
    kernel = parameter(["bt", "cg", "ep", "ft", "is", "lu", "mg", "sp"], loggable=True)

    @run_after("init")
    def name_programs(self):
        # NPB 3.4 names binaries <kernel>.<class>.x; 3.3 and earlier <kernel>.<class>.<nprocs>
        self.program_names = [f"{self.kernel}.{self.npb_class}.x"]

    def asked_benchmark(self) -> str:
        return self.kernel.upper()

    @run_after("setup")
    def only_accepted_counts(self):
        why = npb_rejects(self.kernel, self.num_tasks)
        self.skip_if(why is not None, f"{self.kernel.upper()}: {why}")
        self.program_names = [*self.program_names,
                              f"{self.kernel}.{self.npb_class}.{self.num_tasks}"]


@rfm.simple_test
class NpbMz(_NpbCommon, MultiRankExternalCheck):
    descr = "NPB Multi-Zone (MPI x OpenMP): one benchmark, one split of the cores"
    suite = "npb-mz"
    benchmark = parameter(["bt-mz", "sp-mz", "lu-mz"], loggable=True)
    #: ranks: one rank per core; hybrid: half the ranks, two OpenMP threads each
    split = parameter(["ranks", "hybrid"], loggable=True)

    @run_after("init")
    def name_programs(self):
        self.program_names = [f"{self.benchmark}.{self.npb_class}.x"]

    def asked_benchmark(self) -> str:
        return self.benchmark.upper()

    def rank_split(self) -> tuple[int, int]:
        """(ranks, threads per rank) of the placed cores (num_tasks until set_split makes it the
        rank count)."""
        threads = 2 if self.split == "hybrid" else 1
        return self.num_tasks // threads, threads

    def scale_detail(self) -> str:
        ranks, threads = self.rank_split()
        return f"-{self.npb_class}:{ranks}x{threads}"

    @run_after("setup")
    def set_split(self):
        cores = self.num_tasks
        ranks, threads = self.rank_split()
        self.skip_if(cores % threads or ranks < 1,
                     f"{cores} cores cannot be split into ranks of {threads} threads")
        zones = mz_zones(self.benchmark, self.npb_class)
        self.skip_if(zones is not None and ranks > zones,
                     f"{self.benchmark.upper()} class {self.npb_class} has {zones} zones, "
                     f"fewer than {ranks} ranks")
        self.num_tasks = ranks
        self.num_tasks_per_node = max(1, self.num_tasks_per_node // threads)
        self.num_cpus_per_task = threads
        # srun gets --cpus-per-task from num_cpus_per_task; the local mpirun wrappers
        # (config/launchers) read FABRICSUITE_CORES_PER_RANK, else a rank bound to one core
        # runs its threads on that core (LU-MZ S hybrid then took 39 s instead of 0.03 s).
        self.env_vars = {**self.env_vars, "OMP_NUM_THREADS": str(threads),
                         "FABRICSUITE_CORES_PER_RANK": str(threads)}
        self.program_names = [*self.program_names,
                              f"{self.benchmark}.{self.npb_class}.{ranks}",
                              f"{self.benchmark}_{self.npb_class}.{ranks}"]
