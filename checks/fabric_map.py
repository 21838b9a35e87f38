"""Fabric maps: every pair of nodes, and the distance sweep in rank space.

Test plan. Node counts 1, 2, 4 (larger than the partition skip); references per partition,
environment and scale (reference/<system>.yaml).

- NetbenchMatrix: one rank per node; for every pair of nodes the ping-pong latency at 8 B and
  bandwidth at 1 MiB, an N x N map to find a bad link or node. Concurrent by default: the N/2
  disjoint pairs of one round of a round-robin tournament at once, N-1 rounds (N for an odd N);
  `-S schedule=sequential` measures one pair at a time. A pair is suspect below the best
  pair's bandwidth by more than half the fault it looks for (20 %) or 3 x the map's own noise,
  or above 2.1 x the lowest latency (ClusterKit's latency rule; its fixed 93 % on request,
  `--bandwidth-fraction`), and bad when its re-test alone (every other rank waiting) confirms
  it against healthy pairs re-tested around it, and a second re-test alone confirms that
  (unconfirmed_pairs: one slow phase, cleared); a node whose every pair is bad is named.
  Where the partition declares its switch tree, each pair is also compared with its own path
  class (`matrix --path-classes`, written from the tree: pairs under one leaf, across the
  spine; a dragonfly's router, group, global link), so that a tapered core's congested pairs do
  not set the floor that a slow node link's pairs in its leaf are judged by.
  Quick mode for nightly runs: `-S rounds=K` (K rounds drawn with `-S seed=S`; with the tree,
  one more round inside the leaves, `-S local_rounds=false` without); 0, the default,
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
  below the promise named as `BELOW PROMISE ...` findings
  (fabricsuite.data.map_promise.below_promise): the session's LINK DEGRADED verdict, which the
  relative rule cannot reach.
- NetbenchRailMatrix (a partition that declares rails, extras.fabric.links.rails, and has the
  `rails` feature): the map on each rail, one case per rail (level `rail`), every node's rank
  kept on that rail's NIC (the MPI's own NIC selection) and on the cores near it; its findings
  carry the rail ("faulty node n3: ... (rail 2)", "BELOW PROMISE rail 2: ..."), and each
  node's best pair per rail (`node_best_MBps`) is compared with its other rails by the
  session's findings (a rail slower than its siblings).
- NetbenchRailsAtOnce: every rail's map at once in one job (one launch per rail,
  config/launchers/rails-at-once; rail k's in rail<k>/): what the rails one after the other
  cannot see, a host side that cannot feed every rail together. Figures: its slowest rail's,
  and the sums of its rails' counts (level `rail: every`).
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
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, variable
from reframe.core.logging import getlogger

from fabricsuite import SLURM_SCHEDULERS
from fabricsuite.base.metrics import LOWER, Figure, PerfSpec
from fabricsuite.checks.check_base import cores_per_node
from fabricsuite.checks.rails import (
    EVERY,
    RAILS_AT_ONCE,
    RailBound,
    at_once_words,
    declared_rails,
    on_rail,
    worst_of_rails,
)
from fabricsuite.checks.rfm_netbench import (
    RESULT_FILE,
    NetbenchMultiRankCheck,
    count_problems,
    summaries,
    summary,
)
from fabricsuite.data import links, map_promise, pathclasses, switches
from fabricsuite.data.links import line_fraction
from fabricsuite.data.netbench_result import load

#: The N x N maps netbench writes beside its JSON result (`matrix --json-file`).
MAP_FILES = ["matrix_bandwidth_MBps.csv", "matrix_latency_us.csv", "matrix_maps.json"]
#: The switch tree as the job's `scontrol show topology` printed it (extras.topology "slurm").
TREE_FILE = "switch-tree.txt"
#: Each host's switches from its leaf up, from that tree: netbench compares each pair with its
#: path class too (`matrix --path-classes`, fabricsuite.data.pathclasses).
PATH_CLASSES_FILE = "path-classes.txt"


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
    #: A quick map's extra round inside the switches of each level below the top (netbench
    #: matrix --local-rounds), where the partition declares its tree: every node then has a
    #: partner under its own leaf, which a tapered core's congestion cannot hide.
    local_rounds = variable(typ.Bool, value=True, loggable=True)
    #: Further netbench options, e.g. ["--bandwidth-fraction", "0.9"].
    matrix_options = variable(typ.List[str], value=[])
    #: The faulty components the switch tree explains the bad pairs by, with their evidence,
    #: and the congestion cleared by the re-test (fabricsuite.data.switches); "" for none
    components = variable(str, value="", loggable=True)
    keep_files = [RESULT_FILE, *MAP_FILES, TREE_FILE, PATH_CLASSES_FILE]
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
        self.compare_path_classes(declared)
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

    def compare_path_classes(self, declared) -> None:
        """netbench's --path-classes from the declared tree (in the job where the tree is the
        job's own): an absolute path, since rails at once run each rail's map in its folder. A
        tree that cannot be read leaves the option out (the map is still measured; judging it
        says what is wrong with the tree)."""
        if not declared:
            return
        classes = os.path.join(self.stagedir, PATH_CLASSES_FILE)
        if declared == "slurm":
            words = [sys.executable, "-m", "fabricsuite.data.pathclasses", "--tree", TREE_FILE,
                     "--out", classes]
            self.prerun_cmds = [*self.prerun_cmds, (
                f"NB_PATH_CLASSES=; {' '.join(shlex.quote(w) for w in words)} && "
                f"NB_PATH_CLASSES={shlex.quote(classes)}")]
            self.executable_opts = [*self.executable_opts, "${NB_PATH_CLASSES:+--path-classes}",
                                    '${NB_PATH_CLASSES:+"$NB_PATH_CLASSES"}']
            self.take_local_rounds()
            return
        try:
            with open(classes, "w") as out:
                out.write(pathclasses.text(switches.parse_topology(self.switch_tree())))
        except (OSError, switches.TopologyError):
            return
        self.executable_opts = [*self.executable_opts, "--path-classes", shlex.quote(classes)]
        self.take_local_rounds()

    def take_local_rounds(self) -> None:
        if self.rounds > 0 and self.local_rounds:
            self.executable_opts = [*self.executable_opts, "--local-rounds"]

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
        components, below, more = self.judge_map(result, self.on_its_path)
        self.components = "; ".join(components)
        if self.components:
            getlogger().warning(f"{self.display_name}: {self.components}")
        self.link_findings = "; ".join(f for f in [self.link_findings, *below] if f)
        return problems + more

    def judge_map(self, result, say, where: str = "") -> tuple[list[str], list[str], list[str]]:
        """(the faulty components, the findings below the promise, the problems) of one map,
        each said for its path by `say`; its files in the stage's `where` ("" the stage)."""
        try:
            result.switch_tree = self.switch_tree()
            explanation = switches.verdict(result)
        except switches.TopologyError as err:
            return [], [], [f"switch tree: {err}"]
        components = [say(line) for line in explanation.lines()]
        # against the fabric's promise, where the partition declares it: a fabric, a leaf or a
        # node uniformly slow, which the relative rule above cannot see (a finding: LINK
        # DEGRADED's verdict, fabricsuite.data.links)
        promise = links.contract(self.current_partition.extras)
        below = []
        if promise is not None:
            tree, measured = switches.map_of(result)  # as the verdict above read it
            below = [say(line) for line in map_promise.below_promise(
                tree, measured, promise.path_rate_gbps(self.path_rails(promise)),
                promise.bandwidth_fraction)]
        pairs = result.table("pairs")
        ranks = result.parameters["ranks"]
        if result.parameters.get("rounds", 0) == result.parameters.get("rounds_total", 0):
            expected = ranks * (ranks - 1) // 2  # the full map (also a result of before rounds)
        else:
            expected = result.summary.get("pairs")
        problems = count_problems(pairs, expected, "pairs measured")
        missing = [os.path.join(where, name) for name in MAP_FILES
                   if not os.path.isfile(os.path.join(self.stagedir, where, name))]
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
                f"{self.display_name}: {where + ': ' if where else ''}{len(bad)} bad pair(s) of "
                f"{len(pairs)} "
                f"({switches.bad_pair_rule(result.parameters)}): "
                f"{named}" + (f"; bad node(s): {nodes}" if nodes else "")
            )
        return components, below, problems

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
        return on_rail(line, self.rail_label())


@rfm.simple_test
class NetbenchRailsAtOnce(NetbenchMatrix):
    """Every rail's all-pairs map at once, in one job: one rank per rail per node, rail k's
    ranks paired only with rail k's (one launch per rail, started together by
    config/launchers/rails-at-once, each kept on its rail by the MPI's own NIC selection and on
    the cores near that rail's NIC; rail k's map in rail<k>/ of the stage). What the rails one
    after the other cannot see: a node whose host side (PCIe, memory, cores) cannot feed every
    rail together, rails that disturb each other. Findings as NetbenchRailMatrix's, each
    with its rail; the case's figures are its slowest rail's (median and worst pair
    bandwidth, median latency, line fraction) and the sums of every rail's bad pairs, nodes and
    faulty components (fabricsuite.checks.rails.worst_of_rails); references at the level
    `rail: every`. Each node's best pair per rail (`rails_node_best_MBps`) is compared with
    its other rails by the session's findings, measured at the same time."""

    descr = "All-pairs node-to-node maps of every rail at once, in one job"
    valid_systems = ["+mpi +rails"]
    #: the reference level of the case: every rail at once
    rail = variable(str, value=EVERY, loggable=True)
    #: the rails' ports, rail k the k-th (the partition's extras.fabric.links.rails)
    at_once_rails = variable(typ.List[str], value=[], loggable=True)
    #: each rail's best pair of each node, MB/s ({"rail2": {host: MB/s}}: node_best_MBps)
    rails_node_best_MBps = variable(typ.Dict[str, typ.Dict[str, float]], value={},
                                    loggable=True)
    tags = {"netbench", "rails"}

    @run_after("setup")
    def take_every_rail(self):
        promise = links.contract(self.current_partition.extras)
        rails = promise.rails if promise else ()
        partition = self.current_partition
        self.skip_if(len(rails) < 2, f"{partition.fullname} declares no rails "
                                     f"(extras.fabric.links.rails)")
        # one busy rank per rail on every node: a node needs a core for each
        cores = cores_per_node(partition)
        self.skip_if(not self.timing_on_shared_cores and cores is not None and cores < len(rails),
                     f"a node of {partition.fullname} has {cores} core(s), and every rail at "
                     f"once puts {len(rails)} busy ranks on each (one per rail): "
                     f"NetbenchRailMatrix measures the rails one after the other "
                     f"(-S timing_on_shared_cores=true runs it anyway, for the mechanics)")
        self.at_once_rails = list(rails)
        self.keep_files = [*self.keep_files, *(f"rail{k}" for k in range(1, len(rails) + 1))]

    @run_before("run")
    def launch_every_rail(self):
        # Last before the job script, when netbench's command line is whole (the quick map's
        # seed). The launcher's words go to rails-at-once, which starts one launch per rail;
        # Slurm's steps share the nodes' CPUs (--overlap), else the second rail would wait.
        self.job.num_tasks, self.job.num_tasks_per_node = self.num_tasks, self.num_tasks_per_node
        launcher = shlex.split(self.job.launcher.run_command(self.job))
        if type(self.job.launcher).registered_name == "srun":
            launcher.append("--overlap")
        self.executable_opts = [*map(shlex.quote, at_once_words(self.at_once_rails, launcher)),
                                self.executable, *self.executable_opts]
        self.executable = shlex.quote(str(RAILS_AT_ONCE))
        self.job.launcher = getlauncher("local")()

    def path_rails(self, promise) -> int:
        return 1  # each launch on its own rail

    def rail_results(self) -> list:
        cached = getattr(self, "_rail_results", None)
        if cached is None:
            cached = self._rail_results = [
                load(os.path.join(self.stagedir, f"rail{k}", RESULT_FILE))
                for k in range(1, len(self.at_once_rails) + 1)]
            for result in cached:
                result.line_rate_gbps = self.line_rate_gbps
        return cached

    def result(self):
        cached = getattr(self, "_netbench_result", None)
        if cached is None:
            cached = self._netbench_result = worst_of_rails(self.rail_results())
            cached.line_rate_gbps = self.line_rate_gbps
            cached.promised_latency_us = self.promised_latency_us
        return cached

    def extra_problems(self, result):
        problems, components, below, found = [], [], [], []
        for k, rail_result in enumerate(self.rail_results(), 1):
            ranks = rail_result.parameters.get("ranks")
            if ranks != self.num_tasks:
                problems.append(f"rail {k}: netbench ran with {ranks} ranks, the check asked "
                                f"for {self.num_tasks}")
            said, under, more = self.judge_map(
                rail_result, lambda line, k=k: on_rail(line, f"rail {k}"), f"rail{k}")
            components += said
            below += under
            problems += [f"rail {k}: {p}" for p in more]
            explanation = getattr(rail_result, "switch_verdict", None)
            if explanation is not None:
                found.append(explanation)
        self.rails_node_best_MBps = {
            f"rail{k}": switches.node_best(r.table("pairs"))
            for k, r in enumerate(self.rail_results(), 1)}
        # the faulty-component counts of the case: every rail's
        if found:
            result.switch_verdict = replace(
                found[0], findings=[f for e in found for f in e.findings],
                unexplained=[u for e in found for u in e.unexplained])
        self.components = "; ".join(components)
        if self.components:
            getlogger().warning(f"{self.display_name}: {self.components}")
        self.link_findings = "; ".join(f for f in [self.link_findings, *below] if f)
        return problems


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
