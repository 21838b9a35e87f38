"""Intel MPI Benchmarks: IMB-MPI1 point-to-point and collectives, IMB-NBC overlap.

Test plan. Programs from Spack (partitions with extras.spack) or from the path,
$FABRICSUITE_IMB_DIR or -S binary=...; otherwise skipped with the reason. Every size runs the
same number of repetitions (`-iter N -iter_policy off`): IMB's default policy cuts large messages
down to 10 repetitions, too few for a verdict. `-S imb_off_cache=true` adds `-off_cache -1`
(cache-cold buffers) for sites that want those figures. Collectives run with `-npmin` equal to the
job's ranks, so one process count is timed: the whole allocation of 1, 2 or 4 nodes.
References per partition, environment and scale.

- ImbPointToPoint: PingPong, PingPing, Sendrecv, Exchange on 2 ranks (two nodes when the
  partition has them): 0 B latency and 1 MiB / 4 MiB bandwidth.
- ImbCollectives: Barrier, Bcast, Reduce, Allreduce, Alltoall: t_max (the slowest rank) at 8 B and
  1 MiB.
- ImbNonBlocking: IMB-NBC Iallreduce and Ibcast: overlap (%) at 1 MiB.
"""

import shlex

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, variable

from fabricsuite.base.metrics import MBPS, US, Figure, PerfSpec, reads
from fabricsuite.checks.rfm_external import MultiRankExternalCheck, TwoRankCheck
from fabricsuite.data.external import parse_imb

#: overlap: higher is better
PERCENT = PerfSpec("%", "higher")


def imb(benchmark, column, size=None):
    """A figure of one IMB benchmark's table, at a message size (none: a one-row table)."""
    return reads(benchmark, column) if size is None else reads(benchmark, column, bytes=size)


class _Imb(rfm.RegressionTestPlugin):
    suite = "imb"
    imb_benchmarks = variable(list, value=[])
    imb_iterations = variable(int, value=200, loggable=True)
    imb_off_cache = variable(typ.Bool, value=False, loggable=True)
    imb_max_log2_size = variable(int, value=22)

    @run_after("setup")
    def set_imb_options(self):
        options = [*self.imb_benchmarks, "-iter", str(self.imb_iterations),
                   "-iter_policy", "off", "-msglog", f"0:{self.imb_max_log2_size}"]
        if self.imb_off_cache:
            options += ["-off_cache", "-1"]
        if isinstance(self, MultiRankExternalCheck):  # one process count: the whole job
            options += ["-npmin", str(self.num_tasks)]
        self.executable_opts = [shlex.quote(o) for o in options]  # -S imb_benchmarks=...

    def parse(self):
        # every table at the job's process count: one job of the requested size
        return parse_imb(self.stdout_text(), self.program_names[0], processes=self.num_tasks)


@rfm.simple_test
class ImbPointToPoint(_Imb, TwoRankCheck):
    descr = "IMB-MPI1 PingPong, PingPing, Sendrecv, Exchange"
    program_names = ["IMB-MPI1"]
    imb_benchmarks = ["PingPong", "PingPing", "Sendrecv", "Exchange"]
    metrics = {
        "pingpong_latency_0B_us": Figure(imb("PingPong", "t_usec", 0), US),
        "pingpong_bandwidth_1MiB_MBps": Figure(imb("PingPong", "MBps", 1048576), MBPS),
        "pingpong_bandwidth_4MiB_MBps": Figure(imb("PingPong", "MBps", 4194304), MBPS),
        "pingping_bandwidth_1MiB_MBps": Figure(imb("PingPing", "MBps", 1048576), MBPS),
        "sendrecv_bandwidth_1MiB_MBps": Figure(imb("Sendrecv", "MBps", 1048576), MBPS),
        "exchange_bandwidth_1MiB_MBps": Figure(imb("Exchange", "MBps", 1048576), MBPS),
    }


@rfm.simple_test
class ImbCollectives(_Imb, MultiRankExternalCheck):
    descr = "IMB-MPI1 Barrier, Bcast, Reduce, Allreduce, Alltoall"
    program_names = ["IMB-MPI1"]
    imb_benchmarks = ["Barrier", "Bcast", "Reduce", "Allreduce", "Alltoall"]
    imb_max_log2_size = 20
    metrics = {
        "barrier_us": Figure(imb("Barrier", "t_max_usec"), US),
        **{f"{name.lower()}_{label}_us": Figure(imb(name, "t_max_usec", size), US)
           for name in ("Bcast", "Reduce", "Allreduce", "Alltoall")
           for label, size in (("8B", 8), ("1MiB", 1048576))},
    }


@rfm.simple_test
class ImbNonBlocking(_Imb, MultiRankExternalCheck):
    descr = "IMB-NBC Iallreduce, Ibcast: overlap of communication and computation"
    program_names = ["IMB-NBC"]
    imb_benchmarks = ["Iallreduce", "Ibcast"]
    imb_max_log2_size = 20
    metrics = {
        "iallreduce_overlap_1MiB_percent": Figure(imb("Iallreduce", "overlap_percent", 1048576),
                                                  PERCENT),
        "ibcast_overlap_1MiB_percent": Figure(imb("Ibcast", "overlap_percent", 1048576), PERCENT),
    }
