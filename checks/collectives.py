"""Collective checks: every call timed alone in a synchronised time window (Altix study §3.2,
Hoefler et al. §4).

Test plan. `netbench collectives` times Barrier, Bcast, Reduce, Allreduce, Alltoall, Alltoallv,
Gather, Scatter and Allgather at 8 B to 1 MiB (powers of two) on every rank of the job. Each call
starts at the same instant on every rank (a time window against clocks synchronised to rank 0),
and its time is the latest completion over the ranks; the figure is the median over the calls.
Timing n back-to-back calls and dividing by n underestimates a collective because calls pipeline
(Hoefler §4), so that figure is only printed beside it (loop_average_us, loop_to_individual),
never checked. Node counts 1, 2, 4 (larger than the partition skip), one rank per core.
References per partition, environment and scale (reference/<system>.yaml).

- NetbenchCollectives: the median time of each collective at 8 B, 1 KiB and 1 MiB (the study's
  sizes), and of Barrier; at 1 MiB also the bus bandwidth of allreduce, allgather, alltoall,
  bcast and reduce (nccl-tests' definitions, fabricsuite.data.limits.bus_bandwidth: comparable with
  the link's rate at any rank count), and, one rank per node across nodes where the partition
  declares its links and a busbw_fraction (extras.fabric, fabricsuite.data.links), each of those as
  a fraction of the line rate, judged against that promise. Sanity: every collective at every
  size measured with enough valid calls (calls late for their window are excluded), every time
  positive, the job had the ranks asked for.
- NetbenchCollectivesValidation: every collective and size once with known data, every result
  checked on every rank (no timing, no references).
"""

import reframe as rfm

from fabricsuite.checks.rfm_netbench import (
    NetbenchMultiRankCheck,
    NetbenchValidationCheck,
    cell,
    count_problems,
    each_collective_and_size,
)
from fabricsuite.data.limits import BUS_FACTORS, bus_bandwidth
from fabricsuite.data.links import line_fraction

COLLECTIVES = ["bcast", "reduce", "allreduce", "alltoall", "alltoallv", "gather", "scatter",
               "allgather"]
KEY_SIZES = {"8B": 8, "1KiB": 1024, "1MiB": 1024 * 1024}
CALLS = 100


@rfm.simple_test
class NetbenchCollectives(NetbenchMultiRankCheck):
    descr = "Collectives, each call timed alone in a synchronised window (Hoefler 4, Altix 3.2)"
    method = "collectives"
    netbench_options = ["--calls", str(CALLS)]
    metrics = {
        "barrier_median_us": cell("collectives", "time_median_us",
                                  collective="barrier"),
        **each_collective_and_size("collectives", "time_median_us", COLLECTIVES, KEY_SIZES,
                                   "median_us"),
        **{f"{c}_1MiB_busbw_MBps": bus_bandwidth(cell("collectives", "time_median_us",
                                                      collective=c, size_bytes=1024 * 1024))
           for c in COLLECTIVES if c in BUS_FACTORS},
        # one rank per node, where the partition declares its links and busbw_fraction
        **{f"{c}_1MiB_busbw_line_fraction": line_fraction(
            bus_bandwidth(cell("collectives", "time_median_us", collective=c,
                               size_bytes=1024 * 1024)), promise="busbw_fraction")
           for c in COLLECTIVES if c in BUS_FACTORS},
    }

    def extra_problems(self, result):
        problems = super().extra_problems(result)
        sizes = result.parameters.get("sizes_bytes") or []
        rows = result.table("collectives")
        problems += count_problems(rows, 1 + len(COLLECTIVES) * len(sizes), "collective results")
        for row in rows:
            where = f"{row.get('collective')} at {row.get('size_bytes')} B"
            if not (row.get("time_median_us") or 0) > 0:
                problems.append(f"{where}: no positive time")
            if (row.get("calls_valid") or 0) < CALLS // 2:
                problems.append(f"{where}: only {row.get('calls_valid')} of {CALLS} calls valid")
        return problems


@rfm.simple_test
class NetbenchCollectivesValidation(NetbenchValidationCheck):
    descr = "Collectives with every result checked on every rank (no timing)"
    method = "collectives"
