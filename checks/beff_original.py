"""The original b_eff program (HLRS, Rabenseifner), beside our own `netbench beff`.

Test plan. The program comes from Spack (the project's `beff` package, partitions with
extras.spack) or from the path, $FABRICSUITE_BEFF_DIR or -S binary=...; otherwise skipped with
the reason. It runs on every core of 1, 2, 4 nodes and writes its results to `b_eff.sum` (stdout
has nothing to parse); the summary table gives b_eff (total and per process), b_eff at L_max
(rings and random; rings only), the ping-pong latency and bandwidth, as NetbenchBeff reports
them, so the two sit side by side in the perflog. References per partition, environment, scale.
A full run takes minutes (the original's L_max follows its compiled memory size).
"""

from pathlib import Path

import reframe as rfm

from fabricsuite.base.metrics import MBPS, US, Figure, reads
from fabricsuite.checks.rfm_external import MultiRankExternalCheck
from fabricsuite.data.external import parse_beff


def field(name):
    """A figure of b_eff's summary."""
    return reads(None, name)


@rfm.simple_test
class BeffOriginal(MultiRankExternalCheck):
    descr = "b_eff (HLRS original): effective bandwidth, rings and random patterns"
    suite = "beff"
    program_names = ["b_eff"]
    keep_files = ["b_eff.sum"]
    fresh_outputs = ["b_eff.sum"]  # an earlier run's summary is never judged
    time_limit = "60m"
    metrics = {
        "b_eff_MBps": Figure(field("b_eff_MBps"), MBPS),
        "b_eff_per_process_MBps": Figure(field("b_eff_per_process_MBps"), MBPS),
        "b_eff_at_lmax_MBps": Figure(field("b_eff_at_lmax_MBps"), MBPS),
        "b_eff_at_lmax_rings_MBps": Figure(field("b_eff_at_lmax_rings_MBps"), MBPS),
        "pingpong_bandwidth_lmax_MBps": Figure(field("pingpong_bandwidth_MBps"), MBPS),
        "pingpong_latency_us": Figure(field("pingpong_latency_us"), US),
    }

    def parse(self):
        return parse_beff(Path(self.stagedir, "b_eff.sum").read_text(), "b_eff.sum")

    def problems(self, result):
        if result.processes != self.num_tasks:
            return [f"b_eff ran on {result.processes} processes, the job had {self.num_tasks}"]
        return []
