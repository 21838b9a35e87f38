"""Many connections and many pairs: latency with k open connections, latency under load,
aggregate bandwidth and message rate.

Test plan. Two `netbench` methods in which more ranks than one pair take part, on every partition
and environment with the `mpi` feature, at node counts 1, 2, 4 (larger than the partition skip),
one rank per core (`per-core`) or one per node (`per-node`, the network alone), like
checks/dense.py. References per partition, environment and scale `<nodes>x<ranks per node>`
(reference/<system>.yaml). Ranks are placed in blocks, so per-core puts pair (0,1) and rank 0's
first peers on one node (shared memory, and the load of the node); per-node puts every pair and
every peer across the network. Sanity: every k and size measured with positive latencies and
bandwidths, the job had the ranks asked for, no unreliable figure that a variable uses.

- NetbenchConnections (Kutlug §3.2.5, §4.2.4): ping-pong latency of ranks 0 and 1 after rank 0
  exchanged messages with k other peers, k = 0, 1, 2, 4, ... up to ranks - 2; at 8 B and 64 KiB.
  Variables: the latency at k = 0 and at the largest k (lower is better). The cost (largest k
  minus k = 0) is in netbench's output, not a variable: it is near 0 on a healthy fabric (and on
  shared memory always), where a relative reference means nothing. Needs 3 ranks: skipped with
  the reason below that (this 2-core machine).
- NetbenchLoaded (Zamani et al. §5.1 Fig. 6, §5.2 Fig. 9): pairs (0,1), (2,3), ...: the 8 B
  latency of pair 0 while all other pairs stream 64 KiB windows (lower is better), and with all
  pairs sending at once the aggregate bandwidth at 64 KiB (sum over the pairs, MB/s) and the
  aggregate message rate at 8 B (messages/s), both higher is better. With 2 ranks (1 pair, this
  machine) nothing loads pair 0: the loaded latency is the unloaded one and the cost is null.
"""

import reframe as rfm
from reframe.core.builtins import run_after

from fabricsuite.checks.rfm_netbench import NetbenchMultiRankCheck, summary

SMALL = 8
LARGE = 64 * 1024
#: The cost figures are not variables (see the module docstring): their flags do not fail sanity.
COST_FLAGS = r"cost_us\[.*\]|cost_(small|large)_max_k_us|loaded_latency_cost_max_k_us"


def connection_steps(ranks: int) -> list[int]:
    """The k values `netbench connections` measures with `ranks` ranks."""
    steps, k = [0], 1
    while k < ranks - 2:
        steps.append(k)
        k *= 2
    return steps + ([ranks - 2] if ranks > 2 else [])


def _nonpositive(rows: list[dict], columns: list[str]) -> list[str]:
    return [f"{column}={row.get(column)} in {row}" for row in rows for column in columns
            if not (row.get(column) or 0) > 0]


@rfm.simple_test
class NetbenchConnections(NetbenchMultiRankCheck):
    descr = "Latency of ranks 0-1 with k other connections open on rank 0 (Kutlug 3.2.5, 4.2.4)"
    method = "connections"
    netbench_options = ["--small-size", str(SMALL), "--large-size", "64K", "--time-cap-ms", "2"]
    tolerated_unreliable = COST_FLAGS
    metrics = {
        "connections_latency_8B_k0_us": summary("latency_small_k0_us"),
        "connections_latency_8B_max_k_us": summary("latency_small_max_k_us"),
        "connections_latency_64KiB_max_k_us": summary("latency_large_max_k_us"),
    }

    @run_after("setup")
    def needs_three_ranks(self):
        # After set_scale (a base class hook runs first): num_tasks is known.
        self.skip_if(self.num_tasks < 3,
                     f"{self.current_partition.fullname}: {self.num_tasks} rank(s) at this "
                     f"scale; connections needs 3 (rank 0, rank 1 and at least one more peer)")

    def extra_problems(self, result):
        problems = super().extra_problems(result)
        rows = result.table("connections")
        expected = {(k, size) for k in connection_steps(self.num_tasks) for size in (SMALL, LARGE)}
        seen = {(r.get("peers"), r.get("size_bytes")) for r in rows}
        if seen != expected:
            problems.append(f"connections: measured (k, size) {sorted(seen)}, expected "
                            f"{sorted(expected)}")
        bad = _nonpositive(rows, ["latency_median_us", "latency_min_us"])
        if bad:
            problems.append(f"{len(bad)} latencies not positive, e.g. {bad[0]}")
        return problems


@rfm.simple_test
class NetbenchLoaded(NetbenchMultiRankCheck):
    descr = ("Latency under load, aggregate bandwidth, message rate of rank pairs "
             "(Zamani et al. 5.1, 5.2)")
    method = "loaded"
    netbench_options = ["--latency-size", str(SMALL), "--bandwidth-size", "64K",
                        "--rate-size", str(SMALL), "--window", "64", "--time-cap-ms", "2"]
    tolerated_unreliable = COST_FLAGS
    metrics = {
        "loaded_latency_8B_max_k_us": summary("loaded_latency_max_k_us"),
        "aggregate_bandwidth_64KiB_MBps": summary("aggregate_bandwidth_MBps"),
        "message_rate_8B_per_s": summary("message_rate_per_s"),
        "bandwidth_per_pair_min_64KiB_MBps": summary("bandwidth_per_pair_min_MBps"),
    }

    def extra_problems(self, result):
        problems = super().extra_problems(result)
        pairs = self.num_tasks // 2
        latency = result.table("loaded_latency")
        aggregate = result.table("aggregate")
        if sorted(r.get("loading_pairs") for r in latency) != list(range(pairs)):
            problems.append(f"loaded_latency: k = {[r.get('loading_pairs') for r in latency]}, "
                            f"expected 0 .. {pairs - 1}")
        if sorted(r.get("pairs") for r in aggregate) != list(range(1, pairs + 1)):
            problems.append(f"aggregate: pairs = {[r.get('pairs') for r in aggregate]}, "
                            f"expected 1 .. {pairs}")
        bad = _nonpositive(latency, ["latency_median_us"]) + _nonpositive(
            aggregate, ["aggregate_bandwidth_MBps", "bandwidth_per_pair_min_MBps",
                        "message_rate_per_s"])
        bad += _nonpositive([r for r in latency if r.get("loading_pairs")],
                            ["load_bandwidth_MBps"])
        if bad:
            problems.append(f"{len(bad)} figures not positive, e.g. {bad[0]}")
        return problems
