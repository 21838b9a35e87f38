"""Fabric maps: every pair of nodes, and the distance sweep in rank space.

Test plan. Both run one pair of ranks at a time over the whole allocation while the other ranks
wait without polling. Node counts 1, 2, 4 (larger than the partition skip); references per
partition, environment and scale (reference/<system>.yaml).

- NetbenchMatrix: one rank per node; for every pair of nodes the ping-pong latency at 8 B and
  bandwidth at 1 MiB, an N x N map to find a bad link or node. Sanity fails when a pair's
  bandwidth is more than 20 % below the median of all pairs, naming the pairs; the maps are
  also written as CSV (matrix_bandwidth_MBps.csv, matrix_latency_us.csv: rows and columns are
  ranks, headed by host names) beside netbench.json for plotting. Performance: the median and
  the worst pair's bandwidth, the median latency.
- NetbenchRankDistance: every core of the allocation; ping-pong between rank 0 and rank d,
  d = 1, 2, 4, ... (Altix study §3.2, Fig. 2 and 3). Performance: latency and bandwidth to the
  nearest and the farthest rank.
"""

import csv
import os

import reframe as rfm
from reframe.core.builtins import parameter

from fabricsuite.metrics import HIGHER, LOWER
from fabricsuite.rfm_netbench import NetbenchMultiRankCheck, summary


@rfm.simple_test
class NetbenchMatrix(NetbenchMultiRankCheck):
    descr = "All-pairs node-to-node latency and bandwidth map (find a bad link or node)"
    method = "matrix"
    placement = parameter(["per-node"], loggable=True)  # a node-to-node map
    keep_files = ["netbench.json", "matrix_bandwidth_MBps.csv", "matrix_latency_us.csv"]
    metrics = {
        "matrix_bandwidth_median_MBps": summary("bandwidth_median_MBps", "MB/s", HIGHER),
        "matrix_bandwidth_min_MBps": summary("bandwidth_min_MBps", "MB/s", HIGHER),
        "matrix_latency_median_us": summary("latency_median_us", "us", LOWER),
    }

    def extra_problems(self, result):
        problems = super().extra_problems(result)
        pairs = result.table("pairs")
        ranks = result.parameters["ranks"]
        expected = ranks * (ranks - 1) // 2
        if len(pairs) != expected:
            problems.append(f"{len(pairs)} pairs measured, expected {expected}")
        self._write_maps(pairs, ranks)
        flagged = [p for p in pairs if p.get("flagged")]
        if flagged:
            named = ", ".join(f"{p['host_a']}-{p['host_b']} {p['bandwidth_MBps']:.1f} MB/s"
                              for p in flagged[:8])
            problems.append(
                f"{len(flagged)} of {len(pairs)} node pairs below 80 % of the median bandwidth "
                f"{result.summary.get('bandwidth_median_MBps')} MB/s: {named}"
            )
        return problems

    def _write_maps(self, pairs, ranks):
        hosts = [""] * ranks
        for p in pairs:
            hosts[p["rank_a"]], hosts[p["rank_b"]] = p["host_a"], p["host_b"]
        for column, name in (("bandwidth_MBps", "matrix_bandwidth_MBps.csv"),
                             ("latency_us", "matrix_latency_us.csv")):
            grid = [[""] * ranks for _ in range(ranks)]
            for p in pairs:
                value = p.get(column)
                grid[p["rank_a"]][p["rank_b"]] = grid[p["rank_b"]][p["rank_a"]] = value
            with open(os.path.join(self.stagedir, name), "w", newline="") as out:
                writer = csv.writer(out)
                writer.writerow(["rank/host", *[f"{r}:{h}" for r, h in enumerate(hosts)]])
                for r, row in enumerate(grid):
                    writer.writerow([f"{r}:{hosts[r]}", *row])


@rfm.simple_test
class NetbenchRankDistance(NetbenchMultiRankCheck):
    descr = "Ping-pong from rank 0 to rank d = 1, 2, 4, ... over the allocation (Altix 3.2)"
    method = "rankdist"
    metrics = {
        "rankdist_latency_nearest_us": summary("latency_nearest_us", "us", LOWER),
        "rankdist_latency_farthest_us": summary("latency_farthest_us", "us", LOWER),
        "rankdist_bandwidth_nearest_MBps": summary("bandwidth_nearest_MBps", "MB/s", HIGHER),
        "rankdist_bandwidth_farthest_MBps": summary("bandwidth_farthest_MBps", "MB/s", HIGHER),
    }

    def extra_problems(self, result):
        problems = super().extra_problems(result)
        rows = result.table("distances")
        expected = [d for d in (2**k for k in range(32)) if d < self.num_tasks]
        if [r["distance"] for r in rows] != expected:
            problems.append(f"distances {[r['distance'] for r in rows]}, expected {expected}")
        return problems
