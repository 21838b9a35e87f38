"""Fabric maps: every pair of nodes, and the distance sweep in rank space.

Test plan. Node counts 1, 2, 4 (larger than the partition skip); references per partition,
environment and scale (reference/<system>.yaml).

- NetbenchMatrix: one rank per node; for every pair of nodes the ping-pong latency at 8 B and
  bandwidth at 1 MiB, an N x N map to find a bad link or node. Concurrent by default: the N/2
  disjoint pairs of one round of a round-robin tournament at once, N-1 rounds (N for an odd N);
  `-S schedule=sequential` measures one pair at a time. A pair is suspect below 93 % of the best
  pair's bandwidth or above 2.1 x the lowest latency (ClusterKit's defaults), and bad when its
  re-test alone (every other rank waiting) confirms it; a node whose every pair is bad is named.
  Quick mode for nightly runs: `-S rounds=K` (K rounds drawn with `-S seed=S`); 0, the default,
  is the full map for acceptance. Sanity: the map is complete (the pairs of the rounds measured)
  and its N x N maps were written beside netbench.json (matrix_bandwidth_MBps.csv,
  matrix_latency_us.csv: rows and columns are ranks, headed by host names; matrix_maps.json);
  bad pairs and nodes are named in the log. Then the bad pairs are explained by the fewest
  components of the partition's switch tree (`extras.topology`: "slurm" for the job's
  `scontrol show topology`, or a topology.conf path; without one, one switch): faulty node
  links, leaf uplinks and switches, named with their evidence in `components`, and congestion
  (suspects cleared alone that shared an uplink in their round) said apart
  (fabricsuite.data.switches).
  Performance: the median and the worst pair's bandwidth, the median latency, and the counts of
  bad pairs, bad nodes and faulty components (reference 0, e.g.
  `matrix_bad_pairs: [0, null, 0, pairs]`: any confirmed bad pair fails; the counts are
  judged against 0 also where the file has no entry for them, from the first day and at every
  node count: the map's verdict is against its own pairs). Where the partition
  declares its links (extras.fabric), also the median pair's bandwidth as a fraction of the
  line rate against the promise, and the fabric, a leaf (its uplink) or a node whose pairs lie
  below the promise named as `BELOW PROMISE ...` findings (fabricsuite.data.switches.below_promise):
  the session's LINK DEGRADED verdict, which the relative rule cannot reach.
- NetbenchRankDistance: every core of the allocation; ping-pong between rank 0 and rank d,
  d = 1, 2, 4, ... (Altix study §3.2, Fig. 2 and 3), one pair at a time while the other ranks
  wait without polling. Performance: latency and bandwidth to the nearest and the farthest rank.
"""

import os
import shlex
import sys
from dataclasses import replace

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, variable
from reframe.core.logging import getlogger

from fabricsuite import SLURM_SCHEDULERS
from fabricsuite.base.metrics import LOWER, Figure, PerfSpec
from fabricsuite.checks.rails import RailBound, declared_rails
from fabricsuite.checks.rfm_netbench import (
    RESULT_FILE,
    NetbenchMultiRankCheck,
    count_problems,
    summaries,
    summary,
)
from fabricsuite.data import links, switches
from fabricsuite.data.links import line_fraction

#: The N x N maps netbench writes beside its JSON result (`matrix --json-file`).
MAP_FILES = ["matrix_bandwidth_MBps.csv", "matrix_latency_us.csv", "matrix_maps.json"]
#: The switch tree as the job's `scontrol show topology` printed it (extras.topology "slurm").
TREE_FILE = "switch-tree.txt"


#: A count of the map's own verdict, against its own best pairs: 0 on any healthy fabric, so
#: judged so from the first day and at every node count (metrics.Figure.absolute).
NONE_BAD = (0, None, 0)


def faulty(kind: str) -> Figure:
    """The count of faulty components of a kind (fabricsuite.data.switches), reference 0."""
    return Figure(read=lambda result: switches.verdict(result).counts()[kind],
                  spec=PerfSpec("components", LOWER), absolute=NONE_BAD)


@rfm.simple_test
class NetbenchMatrix(NetbenchMultiRankCheck):
    descr = "All-pairs node-to-node latency and bandwidth map (find a bad link or node)"
    method = "matrix"
    placement = parameter(["per-node"], loggable=True)  # a node-to-node map
    #: concurrent (tournament rounds) or sequential (one pair at a time)
    schedule = variable(str, value="concurrent", loggable=True)
    #: Tournament rounds to measure; 0: all of them (the full map).
    rounds = variable(int, value=0, loggable=True)
    #: Seed of the rounds drawn when `rounds` > 0.
    seed = variable(int, value=1, loggable=True)
    #: Further netbench options, e.g. ["--bandwidth-fraction", "0.9"].
    matrix_options = variable(typ.List[str], value=[])
    #: The faulty components the switch tree explains the bad pairs by, with their evidence,
    #: and the congestion cleared by the re-test (fabricsuite.data.switches); "" for none
    components = variable(str, value="", loggable=True)
    keep_files = [RESULT_FILE, *MAP_FILES, TREE_FILE]
    fresh_outputs = [RESULT_FILE, *MAP_FILES, TREE_FILE]
    metrics = {**summaries("bandwidth_median_MBps", "bandwidth_min_MBps", "latency_median_us",
                           prefix="matrix_"),
               **{f"matrix_{name}": replace(summary(name), absolute=NONE_BAD)
                  for name in ("bad_pairs", "bad_nodes")},
               # where the partition declares its links (fabricsuite.data.links): the promise
               "matrix_bandwidth_median_line_fraction": line_fraction(
                   summary("bandwidth_median_MBps")),
               "matrix_faulty_node_links": faulty("node"),
               "matrix_faulty_uplinks": faulty("uplink"),
               "matrix_faulty_switches": faulty("switch")}

    @run_after("init")
    def set_schedule(self):
        options = ["--schedule", self.schedule]
        if self.rounds > 0:
            options += ["--rounds", str(self.rounds), "--seed", str(self.seed)]
        self.netbench_options = [*self.netbench_options, *options, *self.matrix_options]

    @run_after("setup")
    def read_switch_tree(self):
        # The job itself records the tree its map is judged against (extras.topology "slurm").
        declared = self.current_partition.extras.get("topology")
        if declared == "slurm":
            self.prerun_cmds = [*self.prerun_cmds,
                                f"scontrol show topology > {shlex.quote(TREE_FILE)} 2>&1"]
        # A quick map under Slurm draws its rounds with the first seed from `seed` on that
        # crosses every uplink between the job's nodes (rank i on the i-th node), computed in
        # the job, where the nodes are known (fabricsuite.data.switches quick-seed; `seed` itself
        # when none does, and the check then names the uplinks left out).
        if (self.rounds > 0 and declared
                and self.current_partition.scheduler.registered_name in SLURM_SCHEDULERS):
            tree = TREE_FILE if declared == "slurm" else os.path.expanduser(str(declared))
            words = [sys.executable, "-m", "fabricsuite.data.switches", "quick-seed", "--tree",
                     tree,
                     "--rounds", str(self.rounds), "--seed", str(self.seed), "--netbench",
                     os.path.join(self.netbench.stagedir, "netbench")]
            self.prerun_cmds = [*self.prerun_cmds, (
                f"NB_SEED=$({' '.join(shlex.quote(w) for w in words)} "
                f'--hosts "$(scontrol show hostnames "$SLURM_JOB_NODELIST")" || '
                f"echo {self.seed})")]
            at = self.executable_opts.index("--seed") + 1
            # the seed the job chose, digits from our own program (its fallback: `seed`)
            self.executable_opts[at] = '"$NB_SEED"'

    def switch_tree(self) -> str:
        """The partition's switch tree as topology text; "" for none declared
        (switches.TopologyError: one that cannot be read)."""
        declared = self.current_partition.extras.get("topology")
        if not declared:
            return ""
        path = (os.path.join(self.stagedir, TREE_FILE) if declared == "slurm" else
                os.path.expanduser(str(declared)))
        return switches.read_tree(path)

    def extra_problems(self, result):
        problems = super().extra_problems(result)
        try:
            result.switch_tree = self.switch_tree()
            explanation = switches.verdict(result)
        except switches.TopologyError as err:
            return [*problems, f"switch tree: {err}"]
        self.components = "; ".join(map(self.on_its_path, explanation.lines()))
        if self.components:
            getlogger().warning(f"{self.display_name}: {self.components}")
        # against the fabric's promise, where the partition declares it: a fabric, a leaf or a
        # node uniformly slow, which the relative rule above cannot see (a finding: LINK
        # DEGRADED's verdict, fabricsuite.data.links)
        promise = links.contract(self.current_partition.extras)
        if promise is not None:
            measured = switches.pairs_of(result.table("pairs"))
            below = switches.below_promise(switches.tree_of(result, measured), measured,
                                           promise.path_rate_gbps(self.path_rails(promise)),
                                           promise.bandwidth_fraction)
            self.link_findings = "; ".join(f for f in [self.link_findings,
                                                       *map(self.on_its_path, below)] if f)
        pairs = result.table("pairs")
        ranks = result.parameters["ranks"]
        if result.parameters.get("rounds", 0) == result.parameters.get("rounds_total", 0):
            expected = ranks * (ranks - 1) // 2  # the full map (also a result of before rounds)
        else:
            expected = result.summary.get("pairs")
        problems += count_problems(pairs, expected, "pairs measured")
        missing = [name for name in MAP_FILES
                   if not os.path.isfile(os.path.join(self.stagedir, name))]
        if missing:
            problems.append(f"netbench wrote no {', '.join(missing)} beside {RESULT_FILE}")
        # Bad pairs and nodes fail in performance (matrix_bad_pairs, matrix_bad_nodes against
        # 0); here they are named.
        bad = [p for p in pairs if p.get("flagged")]
        if bad:
            named = ", ".join(f"{p['host_a']}-{p['host_b']} {p['bandwidth_MBps']:.1f} MB/s, "
                              f"alone {p.get('retest_bandwidth_MBps')} MB/s" for p in bad[:8])
            nodes = ", ".join(n["host"] for n in result.tables.get("bad_nodes") or [])
            getlogger().warning(
                f"{self.display_name}: {len(bad)} bad pair(s) of {len(pairs)} "
                f"({switches.bad_pair_rule(result.parameters)}): "
                f"{named}" + (f"; bad node(s): {nodes}" if nodes else "")
            )
        return problems

    def on_its_path(self, line: str) -> str:
        """A finding of the map as said for its path (a rail map's names its rail)."""
        return line


@rfm.simple_test
class NetbenchRailMatrix(RailBound, NetbenchMatrix):
    """The all-pairs map on one rail: every node's rank bound to its rail-k port, so that a
    node's bad rail, or a rail's switch, is named apart from the node's other rails. One case
    per rail (the rails one after the other: the emulated nodes have one core each, and two
    maps at once would share it). A faulty node link and a leaf or fabric below the promise are
    named with their rail ("faulty node n2: ... (rail 2)", "BELOW PROMISE rail 2: the
    fabric ..."); a node whose every rail is faulty is the node's."""

    descr = "All-pairs node-to-node map on one rail of every node"
    valid_systems = ["+mpi +rails"]
    #: which rail every node's rank uses ("rail2")
    rail = parameter(declared_rails(striped=False), loggable=True)
    #: each node's best pair on this rail, MB/s ({host: MB/s}): what its rail-k link can
    #: carry (a partner's slow link cannot lower it), compared with the node's other rails by
    #: the session's findings (fabricsuite.data.findings.slower_than_siblings)
    node_best_MBps = variable(typ.Dict[str, float], value={}, loggable=True)
    tags = {"netbench", "rails"}

    def extra_problems(self, result):
        problems = super().extra_problems(result)
        self.node_best_MBps = switches.node_best(result.table("pairs"))
        return problems

    def on_its_path(self, line: str) -> str:
        if line.startswith("BELOW PROMISE "):
            return f"BELOW PROMISE {self.rail_label()}: {line[len('BELOW PROMISE '):]}"
        if line.startswith("faulty "):
            return f"{line} ({self.rail_label()})"
        return line


@rfm.simple_test
class NetbenchRankDistance(NetbenchMultiRankCheck):
    descr = "Ping-pong from rank 0 to rank d = 1, 2, 4, ... over the allocation (Altix 3.2)"
    method = "rankdist"
    metrics = summaries("latency_nearest_us", "latency_farthest_us", "bandwidth_nearest_MBps",
                        "bandwidth_farthest_MBps", prefix="rankdist_")

    def extra_problems(self, result):
        problems = super().extra_problems(result)
        rows = result.table("distances")
        expected = [d for d in (2**k for k in range(32)) if d < self.num_tasks]
        if [r["distance"] for r in rows] != expected:
            problems.append(f"distances {[r['distance'] for r in rows]}, expected {expected}")
        return problems
