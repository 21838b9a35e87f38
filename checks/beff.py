"""b_eff checks: effective bandwidth by Rabenseifner's definition (Altix study §3.1).

Test plan. `netbench beff` is our implementation of the published definition: 21 message
lengths up to L_max, 6 ring patterns and random ring patterns, 3 methods (MPI_Sendrecv,
MPI_Alltoallv, Irecv/Isend/Waitall), the maximum over methods and repetitions, the arithmetic
average over lengths and the logarithmic average over patterns. All ranks of the job take part;
node counts 1, 2, 4 (larger than the partition skip), one rank per core. References per
partition, environment and scale (reference/<system>.yaml).

Nightly mode (the deviation from the original's full run, documented in `netbench beff --help`):
L_max = 1 MiB (the original derives it from the memory, memory/128), 6 random patterns instead of
30 (the original's -DSHORT uses 6 too), 3 repetitions of 2 ms loops. `-S beff_lmax=...` and
`-S random_patterns=30` give the full definition.

- NetbenchBeff: b_eff (accumulated and per process), b_eff at L_max (rings and random; rings
  only), ping-pong bandwidth at L_max, ping-pong latency and the ring latency. Sanity: every
  pattern and length measured, every bandwidth positive, the job had the ranks asked for.
- NetbenchBeffValidation: every pattern, length and method once with patterned data, every
  received byte checked (no timing, no references).
"""

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, variable

from fabricsuite.checks.rfm_netbench import (
    NetbenchMultiRankCheck,
    NetbenchValidationCheck,
    count_problems,
    summaries,
)

BEFF_LENGTHS = 21
RING_PATTERNS = 6


class _BeffOptions(rfm.RegressionTestPlugin):
    """The nightly settings, shared by the timed and the validation check."""

    beff_lmax = variable(str, value="1M", loggable=True)
    random_patterns = variable(int, value=6, loggable=True)
    beff_extra_options = variable(typ.List[str], value=[])

    @run_after("init")
    def set_beff_options(self):
        # Added to what is there (the validation check's --validate), whatever the hook order.
        self.netbench_options = [
            "--lmax", self.beff_lmax, "--random-patterns", str(self.random_patterns),
            *self.beff_extra_options, *self.netbench_options,
        ]


@rfm.simple_test
class NetbenchBeff(_BeffOptions, NetbenchMultiRankCheck):
    descr = "b_eff effective bandwidth: rings and random patterns, 3 methods (Altix study 3.1)"
    method = "beff"
    beff_extra_options = ["--repetitions", "3", "--time-cap-ms", "2"]
    metrics = summaries("b_eff_MBps", "b_eff_per_process_MBps", "b_eff_at_lmax_MBps",
                        "b_eff_at_lmax_rings_MBps", "pingpong_bandwidth_lmax_MBps",
                        "pingpong_latency_us", "latency_rings_random_us")

    def extra_problems(self, result):
        problems = super().extra_problems(result)
        patterns = result.table("patterns")
        problems += count_problems(patterns, RING_PATTERNS + self.random_patterns,
                                   "patterns measured")
        lengths = result.table("lengths")
        problems += count_problems(lengths, BEFF_LENGTHS, "message lengths measured")
        for name, rows, column in (
            ("pattern", patterns, "bandwidth_avg_L_per_process_MBps"),
            ("length", lengths, "beff_per_process_MBps"),
        ):
            bad = [r for r in rows if not (r.get(column) or 0) > 0]
            if bad:
                problems.append(f"{len(bad)} {name}(s) without a positive {column}")
        return problems


@rfm.simple_test
class NetbenchBeffValidation(_BeffOptions, NetbenchValidationCheck):
    descr = "b_eff patterns and methods with every received byte checked (no timing)"
    method = "beff"
