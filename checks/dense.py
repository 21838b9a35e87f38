"""Dense communication checks: every rank exchanges, in phases (Altix study §3.3).

Test plan. `netbench dense` runs the four algorithms of the study on every rank of the job:
congestion-controlled all-to-all personalized exchange (aapc), simple pairwise, cumulative
pairwise and random pairwise (seed 1, 16 phases), at sizes 8 B to 1 MiB, each timed loop at
least MIN_EXCHANGES exchanges long (see there). Partitions and
environments with the `mpi` feature; node counts 1, 2, 4 (larger than the partition skip), one
rank per core. References per partition, environment and scale (reference/<system>.yaml).

- NetbenchDense, per algorithm at 1 MiB: the mean bandwidth per rank over the phases, and the
  ratio of the worst phase to the first (the study's "drop in the middle phases"; 1.0 when the
  first phase is the worst). On one node also that bandwidth as a fraction of its ceiling:
  what each core copies while every rank copies at once, measured by `netbench limits` on the
  job's cores just before (fabricsuite.data.limits; judged against its physics floor where the
  references give none). Sanity: every phase of every algorithm at every size ran, every
  bandwidth positive, the job had the ranks asked for.
- NetbenchDenseValidation: the same patterns once each with patterned data; every received byte
  checked (no timing, no references).
"""

import reframe as rfm
from reframe.core.builtins import run_after, variable

from fabricsuite.checks.rfm_netbench import (
    NetbenchMultiRankCheck,
    NetbenchValidationCheck,
    cell,
    count_problems,
)
from fabricsuite.data.limits import ALL_RANKS, fraction_of_ceiling

MiB = 1024 * 1024
ALGORITHMS = ["aapc", "pairwise", "cumulative", "random"]
RANDOM_PHASES = 16
#: Fewest exchanges per timed loop (netbench --min-iterations). Over a slow link the 2 ms time cap
#: alone times two 1 MiB exchanges, mostly the copy into TCP's socket buffers: on the emulated
#: 1 Gbit cluster 82-114 MB/s per run (6 runs), against 61-65 MB/s with 16 exchanges, the link's
#: steady state. On a fast fabric or shared memory 16 exchanges fit the time cap anyway.
MIN_EXCHANGES = 16


def _expected_phases(algorithm: str, ranks: int) -> int:
    if algorithm in ("aapc", "pairwise"):
        return ranks - 1
    return ranks // 2 if algorithm == "cumulative" else RANDOM_PHASES


@rfm.simple_test
class NetbenchDense(NetbenchMultiRankCheck):
    descr = "Dense communication: aapc, simple/cumulative/random pairwise (Altix study 3.3)"
    method = "dense"
    netbench_options = ["--phases", str(RANDOM_PHASES), "--seed", "1"]
    #: Fewest exchanges per timed loop (MIN_EXCHANGES; `-S min_exchanges=N`).
    min_exchanges = variable(int, value=MIN_EXCHANGES)
    metrics = {
        **{
            f"{a}_bandwidth_1MiB_MBps": cell(
                "algorithms", "bandwidth_mean_MBps", algorithm=a, size_bytes=MiB
            )
            for a in ALGORITHMS
        },
        **{
            f"{a}_worst_to_first_1MiB": cell(
                "algorithms", "worst_to_first", algorithm=a, size_bytes=MiB
            )
            for a in ALGORITHMS
        },
        # on one node: the bandwidth per rank over what each core copies while every rank of
        # the job copies at once (fabricsuite.data.limits.ALL_RANKS, the prologue); across nodes
        # the link limits a rank, not its core, and these are left out
        **{
            f"{a}_bandwidth_1MiB_ceiling_fraction": fraction_of_ceiling(
                cell("algorithms", "bandwidth_mean_MBps", algorithm=a, size_bytes=MiB),
                limit=ALL_RANKS)
            for a in ALGORITHMS
        },
    }

    @run_after("init")
    def add_min_exchanges(self):
        self.netbench_options = [*self.netbench_options, "--min-iterations",
                                 str(self.min_exchanges)]

    def extra_problems(self, result):
        problems = super().extra_problems(result)
        sizes = result.parameters.get("sizes_bytes") or []
        rows = result.table("phases")
        for algorithm in ALGORITHMS:
            ran = [r for r in rows if r.get("algorithm") == algorithm]
            phases = _expected_phases(algorithm, self.num_tasks)
            problems += count_problems(ran, phases * len(sizes), f"{algorithm} phase results")
        bad = [r for r in rows if not (r.get("bandwidth_min_MBps") or 0) > 0]
        if bad:
            first = bad[0]
            problems.append(
                f"{len(bad)} phases without a positive bandwidth, e.g. {first.get('algorithm')} "
                f"phase {first.get('phase')} at {first.get('size_bytes')} B"
            )
        return problems


@rfm.simple_test
class NetbenchDenseValidation(NetbenchValidationCheck):
    descr = "Dense communication patterns with every received byte checked (no timing)"
    method = "dense"
    netbench_options = ["--phases", str(RANDOM_PHASES), "--seed", "1", "--max-size", "64K"]
