"""The switch-aware verdict of an all-pairs map (fabricsuite.data.switches): Slurm's switch tree
read from real `scontrol show topology` output (tests/data/switches/README.md), and the four
faults of issue 30 on 8 nodes under 2 leaves, each pair slowed as the fault would slow it: the
component named must be the fault, nothing else."""

import itertools
import re
from pathlib import Path

import numpy as np
import pytest

from fabricsuite.data import hostlists, map_promise, switches
from fabricsuite.data.findings import UPLINK, map_findings_of
from fabricsuite.data.switches import Pair, TopologyError

DATA = Path(__file__).resolve().parent / "data" / "switches"
TREE_CONF = """\
# 8 nodes under 2 leaves and a spine, as ci/emucluster.sh writes it
SwitchName=leaf1 Nodes=n[1-4]
SwitchName=leaf2 Nodes=n[5-8]
SwitchName=spine Switches=leaf[1-2]
"""
NODES = [f"n{i}" for i in range(1, 9)]
HEALTHY, SLOW = 110.0, 28.0


@pytest.mark.parametrize("text, names", [
    ("n[1-3,7]", ["n1", "n2", "n3", "n7"]),
    ("gpu[01-02],login", ["gpu01", "gpu02", "login"]),
    ("a[8-10]-ib", ["a8-ib", "a9-ib", "a10-ib"]),
])
def test_slurm_host_lists(text, names):
    assert hostlists.expand_hostlist(text) == names


@pytest.mark.parametrize("text, message", [
    ("n[1-99999999]", "names more than 65536 hosts"),  # hung every reader (issue 53)
    ("n[1-40000],m[1-40000]", "names more than 65536 hosts"),
    ("n[9-3]", "runs backwards; write [3-9]"),
    # read as "n" and "3-" before: a list cut at an open bracket named hosts that do not exist
    ("n[3-", "a bracket is not closed or not opened"),
    ("n[1-2],m[3", "a bracket is not closed or not opened"),
    ("n3]", "a bracket is not closed or not opened"),
    ("n[1-2]]", "a bracket is not closed or not opened"),
    ("n[1[2]]", "a bracket is not closed or not opened"),
])
def test_a_host_list_beyond_any_partition_is_refused_at_once(text, message):
    with pytest.raises(hostlists.TopologyError, match=re.escape(message)):
        hostlists.expand_hostlist(text)


def test_a_run_report_with_such_a_host_list_keeps_it_as_one_name():
    from fabricsuite.data.cases import node_names

    assert node_names(["n[1-99999999]", "n[1-2]"]) == ("n[1-99999999]", "n1", "n2")


def test_the_tree_from_topology_conf():
    tree = switches.parse_topology(TREE_CONF)
    assert tree.leaf_of["n3"] == "leaf1" and tree.leaf_of["n8"] == "leaf2"
    assert tree.up("leaf2") == ["leaf2", "spine"]
    assert switches.path(tree, "n1", "n2") == [("node", "n1"), ("node", "n2"),
                                               ("switch", "leaf1")]
    assert switches.path(tree, "n1", "n5") == [
        ("node", "n1"), ("node", "n5"), ("uplink", "leaf1"), ("uplink", "leaf2"),
        ("switch", "leaf1"), ("switch", "spine"), ("switch", "leaf2")]


def test_the_tree_from_scontrol_show_topology():
    tree = switches.parse_topology((DATA / "scontrol-show-topology.txt").read_text())
    assert sorted(set(tree.leaf_of.values())) == ["leaf1", "leaf2"]
    assert len(tree.leaf_of) == 8 and {tree.parent["leaf1"], tree.parent["leaf2"]} == {"spine"}


@pytest.mark.parametrize("text, message", [
    ("", "names no node"),
    ("SwitchName=s1 Nodes=n1\nSwitchName=s2 Nodes=n1", "under two switches"),
    ("SwitchName=s1 Nodes=n[a-b]", "is not a number"),
])
def test_a_tree_that_cannot_be_used_is_one_line(text, message):
    with pytest.raises(TopologyError, match=message):
        switches.parse_topology(text)


def test_a_declared_tree_file_that_is_empty_or_missing_is_an_error_not_one_switch(tmp_path):
    """Issue 39: an empty switch-tree file fell back to one flat switch without a word."""
    empty = tmp_path / "topology.txt"
    empty.write_text("\n")
    with pytest.raises(TopologyError, match="is empty: the partition declares a switch tree"):
        switches.read_tree(str(empty))
    with pytest.raises(TopologyError, match="cannot read .*No such file"):
        switches.read_tree(str(tmp_path / "absent"))
    empty.write_text("SwitchName=s1 Nodes=n[1-2]\n")
    assert switches.parse_topology(switches.read_tree(str(empty))).leaf_of == {"n1": "s1",
                                                                             "n2": "s1"}


def test_a_node_outside_the_tree_is_named():
    tree = switches.parse_topology(TREE_CONF)
    with pytest.raises(TopologyError, match="node n9 of the map is under no switch"):
        switches.path(tree, "n1", "n9")


def rounds(nodes):
    """The round of every pair in a round-robin tournament (the circle method, as netbench)."""
    ring, found = list(nodes), {}
    for number in range(len(ring) - 1):
        for i in range(len(ring) // 2):
            found[frozenset((ring[i], ring[-1 - i]))] = number
        ring = [ring[0], ring[-1], *ring[1:-1]]
    return found


def measured_map(slow_through, suspect_only=()):
    """Every pair of the 8 nodes, in its tournament round: bad where its path holds a component
    of `slow_through`, suspect and cleared by the re-test where it holds one of
    `suspect_only`."""
    tree = switches.parse_topology(TREE_CONF)
    pairs, round_of = [], rounds(NODES)
    for a, b in itertools.combinations(NODES, 2):
        route = set(switches.path(tree, a, b))
        bad = bool(route & set(slow_through))
        suspect = bad or bool(route & set(suspect_only))
        pairs.append(Pair(a, b, SLOW if bad else HEALTHY, suspect, bad,
                          round_of[frozenset((a, b))]))
    return tree, pairs


def test_three_slow_node_links_in_two_leaves_are_the_three_nodes_not_a_leaf():
    # issue 66's emulated case: 6 nodes under 2 leaves, the links of n1 and n3 (leaf1) and n5
    # (leaf2) slow. 10 of the 12 pairs through leaf1 are bad, but its two others (n2 with n4
    # and n6) were fast in the map: they contradict a slow leaf, which is not named (it was,
    # with n5, before)
    tree = switches.parse_topology("SwitchName=leaf1 Nodes=n[1-3]\nSwitchName=leaf2 "
                                   "Nodes=n[4-6]\nSwitchName=spine Switches=leaf[1-2]\n")
    slow = {"n1", "n3", "n5"}
    pairs = [Pair(a, b, SLOW if {a, b} & slow else HEALTHY, bool({a, b} & slow),
                  bool({a, b} & slow), None)
             for a, b in itertools.combinations([f"n{i}" for i in range(1, 7)], 2)]
    explanation = switches.explain(tree, pairs)
    assert sorted(f.components[0] for f in explanation.findings) == [
        ("node", "n1"), ("node", "n3"), ("node", "n5")], explanation.lines()
    assert not explanation.unexplained


def test_a_slow_node_link_names_that_node_and_nothing_else():
    explanation = switches.explain(*measured_map([("node", "n3")]))
    assert [f.components for f in explanation.findings] == [[("node", "n3")]]
    assert explanation.counts() == {"node": 1, "uplink": 0, "switch": 0}
    assert explanation.lines() == [
        "faulty node n3: 7 of 7 pairs through it bad, median 28.0 MB/s against 110.0 MB/s for "
        "the healthy pairs (-75%)"]


def test_a_slow_uplink_names_the_uplink_and_no_node():
    explanation = switches.explain(*measured_map([("uplink", "leaf1")]))
    # with two leaves every pair that crosses one uplink crosses the other, and the spine
    # carries those pairs alone: named together, the smallest kind first
    assert [f.components for f in explanation.findings] == [[("uplink", "leaf1"),
                                                              ("uplink", "leaf2"),
                                                              ("switch", "spine")]]
    assert explanation.counts() == {"node": 0, "uplink": 1, "switch": 0}
    assert "16 of 16 pairs" in explanation.lines()[0]
    assert "cannot tell these apart" in explanation.lines()[0]


def test_a_whole_slow_leaf_names_the_switch_not_its_nodes():
    slow = [("node", n) for n in ("n5", "n6", "n7", "n8")]
    explanation = switches.explain(*measured_map(slow))
    assert [f.components for f in explanation.findings] == [[("switch", "leaf2")]]
    assert "22 of 22 pairs" in explanation.lines()[0]


def test_congestion_on_a_shared_uplink_names_nothing():
    tree, pairs = measured_map([], suspect_only=[("uplink", "leaf1")])
    # 4 nodes a leaf: a round's pairs cross between the leaves 0, 2 or 4 at a time, never alone
    crossing = {p.round: 0 for p in pairs}
    for p in pairs:
        crossing[p.round] += p.suspect
    assert set(crossing.values()) <= {0, 2, 4} and sum(crossing.values()) == 16, crossing
    explanation = switches.explain(tree, pairs)
    assert explanation.findings == [] and explanation.unexplained == []
    assert explanation.lines() == [
        "congestion, not a fault: 16 suspect pair(s) across uplink leaf1, shared in their "
        "round, were fast when re-tested alone",
        "congestion, not a fault: 16 suspect pair(s) across uplink leaf2, shared in their "
        "round, were fast when re-tested alone"]


def test_a_cleared_pair_alone_on_its_uplink_is_noise_not_congestion():
    tree, pairs = measured_map([])
    # n1-n5 measured in a round of its own (a sequential map): slow once, fast alone
    others = [p for p in pairs if (p.host_a, p.host_b) != ("n1", "n5")]
    explanation = switches.explain(tree, [*others, Pair("n1", "n5", 90.0, True, False, 99)])
    assert explanation.congestion == {} and explanation.cleared == 1
    assert explanation.lines() == ["1 suspect pair(s) that shared no uplink were fast when "
                                   "re-tested alone (noise)"]


def test_two_faults_are_two_findings_and_a_stray_pair_is_unexplained():
    tree, pairs = measured_map([("node", "n1"), ("node", "n6")])
    explanation = switches.explain(tree, pairs)
    assert sorted(f.components[0] for f in explanation.findings) == [("node", "n1"),
                                                                     ("node", "n6")]
    # one bad pair between two healthy nodes: nothing explains it alone
    pairs = [p if (p.host_a, p.host_b) != ("n3", "n4") else Pair("n3", "n4", SLOW, True, True)
             for p in measured_map([])[1]]
    explanation = switches.explain(tree, pairs)
    assert explanation.findings == [] and explanation.unexplained == ["n3-n4"]
    assert explanation.lines() == ["no single component explains 1 bad pair(s): n3-n4"]


def test_a_quick_map_that_crossed_no_uplink_says_so():
    tree, pairs = measured_map([])
    # one round whose pairs all stay on their leaf
    within = [Pair(f"n{i}", f"n{i + 1}", HEALTHY, False, False, 0) for i in (1, 3, 5, 7)]
    explanation = switches.explain(tree, within)
    assert explanation.uncovered == ["leaf1", "leaf2"]
    assert explanation.lines()[-1] == ("not measured: no pair crossed uplink(s) leaf1, leaf2 (a "
                                       "quick map; more rounds cover them)")
    assert switches.explain(tree, pairs).uncovered == []


def test_a_real_map_with_a_slow_uplink_names_it_and_the_report_draws_it_by_switch():
    from fabricsuite.commands.report import figures as report
    from fabricsuite.data.netbench_result import load

    result = load(DATA / "matrix-uplink1-slow.json")
    result.switch_tree = (DATA / "matrix-uplink1-slow-tree.txt").read_text()
    explanation = switches.verdict(result)
    assert explanation.counts() == {"node": 0, "uplink": 1, "switch": 0}
    assert explanation.findings[0].components == [("uplink", "leaf1"), ("uplink", "leaf2"),
                                                   ("switch", "spine")]
    assert explanation.findings[0].bad_pairs == explanation.findings[0].pairs == 16
    figure, caption, extra = report._draw_matrix(result, "emucluster:nodes openmpi 8x1")
    assert extra == {"ranks": "8"}
    assert "Ordered by switch" in caption and "faulty uplink leaf1 or uplink leaf2" in caption
    # the tick labels name each node's leaf switch, leaf 1's nodes first
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert [label.rsplit(" ", 1)[-1] for label in labels] == ["[leaf1]"] * 4 + ["[leaf2]"] * 4
    # the nodes behind the two uplinks of the finding framed in red, none of them named
    assert len(figure.axes[0].patches) == 2 and not any(label.endswith("!") for label in labels)


def test_pairs_made_bad_by_noise_leave_the_uplink_named_and_themselves_unexplained():
    from fabricsuite.data.netbench_result import load

    result = load(DATA / "matrix-uplink1-slow-noisy.json")
    result.switch_tree = (DATA / "matrix-uplink1-slow-noisy-tree.txt").read_text()
    assert result.summary["bad_pairs"] == 20
    explanation = switches.verdict(result)
    # each leaf switch had 18 of its 22 pairs bad: not named over the uplink's 16 of 16
    assert explanation.counts() == {"node": 0, "uplink": 1, "switch": 0}
    assert len(explanation.unexplained) == 4


def test_the_outcome_names_the_faulty_component_beside_the_regression():
    from report_support import regression_lines

    lines = regression_lines(components=(
        "faulty node n3: 7 of 7 pairs through it bad; congestion, not a fault: 2 suspect "
        "pair(s) across uplink leaf1, shared in their round, were fast when re-tested alone"))
    assert lines and all(ln.endswith("; faulty node n3: 7 of 7 pairs through it bad")
                         for ln in lines), lines


def test_a_quick_map_draws_the_first_seed_whose_rounds_cross_every_uplink():
    tree = switches.parse_topology(TREE_CONF)
    # rank i on NODES[i]; seeds 1 and 2 draw rounds within the leaves, seed 3 one across
    within, across = [(0, 1), (2, 3), (4, 5), (6, 7)], [(0, 4), (1, 5), (2, 6), (3, 7)]
    drawn = {1: within, 2: within[:2], 3: across}
    assert switches.uncovered_uplinks(tree, NODES, within) == {"leaf1", "leaf2"}
    assert switches.uncovered_uplinks(tree, NODES, across) == set()
    assert switches.covering_seed(tree, NODES, drawn.get, 1) == 3
    # none covers: the seed asked for (the check then names the uplinks left out)
    assert switches.covering_seed(tree, NODES, lambda seed: within, 5, tries=10) == 5



def test_the_map_says_the_smallest_slowdown_it_could_resolve():
    """Issue 41: the suspect floor (netbench's --bandwidth-fraction of the best pair) and the
    healthy pairs' own spread bound what the map can see; it says so with its verdict."""
    tree, pairs = measured_map([("node", "n3")])
    quiet = switches.explain(tree, pairs, floor_MBps=0.85 * HEALTHY)
    assert quiet.resolution == pytest.approx(0.15) and quiet.healthy_spread == 0.0
    assert quiet.lines()[-1] == ("resolves a link 15% slow or more (suspect floor 93.5 MB/s "
                                 "against 110 MB/s healthy; healthy pairs spread 0%)")
    # on a loaded machine the map's pairs are slowed and the floor with them, while a link
    # re-tested alone gets more: measured against that, a 25 % slow link is out of reach
    loaded = [Pair(p.host_a, p.host_b, p.bandwidth_MBps * 0.8, p.suspect, p.bad, p.round)
              for p in pairs]
    loaded += [Pair("n1", "n2", 60.0, True, False, 0, HEALTHY)] * 3
    busy = switches.explain(tree, loaded, floor_MBps=0.85 * 0.8 * HEALTHY)
    assert busy.healthy_MBps == HEALTHY and busy.resolution == pytest.approx(1 - 0.85 * 0.8)
    # healthy pairs scattered over +-20 % (robust sigma about 15 %): a 25 % slow link is within
    # 3 sigma of them, whatever the floor
    noisy = [Pair(p.host_a, p.host_b, p.bandwidth_MBps * (1 + 0.1 * (i % 5 - 2)), p.suspect,
                  p.bad, p.round) if not p.suspect else p for i, p in enumerate(pairs)]
    loud = switches.explain(tree, noisy, floor_MBps=0.85 * HEALTHY)
    assert loud.healthy_spread == pytest.approx(0.148, abs=0.03)
    assert loud.resolution == pytest.approx(3 * loud.healthy_spread)
    assert loud.resolution > 0.25
    # without the floor (a map read without its summary) nothing is claimed
    assert switches.explain(tree, pairs).resolution is None
    assert not any("resolves" in line for line in switches.explain(tree, pairs).lines())


def test_netbench_s_verdict_from_the_noise_is_said_and_says_what_it_could_not_resolve():
    """Issue 41: where netbench judged from the map's own noise, the verdict says what it
    resolved from netbench's figures, and, beyond the fault it looks for, that it could not."""
    tree, pairs = measured_map([("node", "n3")])
    parameters = {"thresholds": "noise", "smallest_fault": 0.2, "latency_factor": 2.1}
    quiet = {"bandwidth_noise": 0.012, "alone_noise": 0.008, "bad_slowdown": 0.1,
             "reference_alone_MBps": 112.0, "resolvable_slowdown": 0.136}
    rule = switches.NoiseRule.of(quiet, parameters)
    assert rule is not None and rule.resolved
    explanation = switches.explain(tree, pairs, floor_MBps=99.0, noise=rule)
    assert explanation.resolution == 0.136 and explanation.healthy_MBps == 112.0
    assert explanation.lines()[0].startswith("faulty node n3: 7 of 7 pairs")
    assert explanation.lines()[-1] == (
        "resolves a link 14% slow or more (noise 1.2% with the other pairs, 0.8% alone; bad "
        "beyond 10% below the healthy pairs re-tested around it, 112 MB/s)")
    # a loaded machine: 3 x 9 % noise with the others, so only 45 % or more is resolved
    loaded = dict(quiet, bandwidth_noise=0.09, alone_noise=0.05, bad_slowdown=0.15,
                  resolvable_slowdown=0.45)
    busy = switches.explain(tree, [], noise=switches.NoiseRule.of(loaded, parameters))
    assert busy.lines()[-1].startswith("could not resolve a link 20% slow, the smallest fault "
                                       "it looks for")
    # a machine phase between the references alone: no slowdown at all clears that noise
    lost = dict(loaded, alone_noise=0.329, bad_slowdown=0.99, resolvable_slowdown=1.97)
    assert switches.explain(tree, [], noise=switches.NoiseRule.of(lost, parameters)).lines()[
        0].startswith("resolves no slow link at all (noise 9.0% with the other pairs, 32.9% alone")
    # a reference that measured alone below the others (a slow leaf's pair) is said left out
    left_out = switches.NoiseRule.of({**quiet, "slow_reference_pairs": 1}, parameters)
    assert left_out.slow_references == 1 and rule.slow_references == 0
    assert switches.explain(tree, [], noise=left_out).lines()[0].endswith(
        "112 MB/s; 1 reference pair(s) slow alone, left out)")
    # a fixed fraction (or an older result): no rule from the noise, the map's own estimate
    assert switches.NoiseRule.of({**quiet, "resolvable_slowdown": None}, parameters) is None
    assert switches.NoiseRule.of(quiet, {"bandwidth_fraction": 0.85}) is None
    assert "below the healthy pairs re-tested around it" in switches.bad_pair_rule(parameters)
    assert switches.bad_pair_rule({"bandwidth_fraction": 0.85, "latency_factor": 2.1}) == (
        "below 0.85 x the best bandwidth or above 2.1 x the lowest latency, also alone")


def test_a_component_bad_alone_but_not_slow_in_the_map_is_said_not_named():
    """Issue 41, seen under load: nearly every pair was suspect, the one healthy pair left was the
    only reference alone and faster than the rest, so every suspect was bad alone and both
    leaves looked faulty at -5 % and -8 % in the map, within the noise of comparing 22 pairs
    with 1 (3 x 4.1 % x 1.2533 x sqrt(1/22 + 1) = 16 %). The verdict names no component for
    that, and says why; a real fault is named under the same noise."""
    tree, pairs = measured_map([("switch", "leaf1"), ("switch", "leaf2")])
    keep = pairs[0]  # the one healthy pair: the reference
    pairs = [Pair(p.host_a, p.host_b, HEALTHY * 0.94, True, True, p.round) for p in pairs[1:]]
    pairs.append(Pair(keep.host_a, keep.host_b, HEALTHY, False, False, keep.round))
    parameters = {"thresholds": "noise", "smallest_fault": 0.2, "latency_factor": 2.1}
    loaded = {"bandwidth_noise": 0.041, "alone_noise": 0.013, "bad_slowdown": 0.1,
              "reference_alone_MBps": 112.0, "resolvable_slowdown": 0.25}
    rule = switches.NoiseRule.of(loaded, parameters)
    explanation = switches.explain(tree, pairs, noise=rule)
    assert explanation.findings == [] and explanation.counts() == {"node": 0, "uplink": 0,
                                                                   "switch": 0}
    lines = explanation.lines()
    assert any(line.startswith("not named: switch leaf") and "(-6%)" in line
               and "within the map's noise of comparing them (16%)" in line for line in lines)
    assert any(line.startswith("no single component explains 27 bad pair(s)") for line in lines)
    # under the same noise a node link 15 % slow in the map is named (7 pairs against 21:
    # 3 x 4.1 % x 1.2533 x sqrt(1/7 + 1/21) = 6.7 %)
    tree, pairs = measured_map([("node", "n3")])
    slow = [Pair(p.host_a, p.host_b, HEALTHY * 0.85 if p.bad else HEALTHY, p.suspect, p.bad,
                 p.round) for p in pairs]
    assert [f.components for f in switches.explain(tree, slow, noise=rule).findings] == [
        [("node", "n3")]]
    # and one 5 % slow is not
    slight = [Pair(p.host_a, p.host_b, HEALTHY * 0.95 if p.bad else HEALTHY, p.suspect, p.bad,
                   p.round) for p in pairs]
    assert not switches.explain(tree, slight, noise=rule).findings


def test_a_slow_node_link_on_a_congested_tree_is_named_against_its_own_path_class():
    """Issue 66, a tapered tree (seen on a simulated one): the healthy pairs across the core are
    congested in the map (60 of 110 MB/s), so the slow node's pairs, no slower than those as a
    whole, lie within the noise against every healthy pair; under its own leaf they are 25 %
    below the healthy pairs there: named. The same map without the class difference: not."""
    tree = switches.parse_topology(TREE_CONF)
    parameters = {"thresholds": "noise", "smallest_fault": 0.2, "latency_factor": 2.1}
    rule = switches.NoiseRule.of({"bandwidth_noise": 0.02, "alone_noise": 0.01,
                                  "bad_slowdown": 0.1, "reference_alone_MBps": 110.0,
                                  "resolvable_slowdown": 0.12}, parameters)

    def rate(a, b, same_leaf_slow):
        across = tree.leaf_of[a] != tree.leaf_of[b]
        if "n3" in (a, b):
            return 66.0 if across else same_leaf_slow
        return 60.0 if across else 110.0

    for same_leaf_slow, named in ((82.5, [[("node", "n3")]]), (110.0, [])):
        pairs = [Pair(a, b, rate(a, b, same_leaf_slow), "n3" in (a, b), "n3" in (a, b))
                 for a, b in itertools.combinations(NODES, 2)]
        explanation = switches.explain(tree, pairs, noise=rule)
        assert [f.components for f in explanation.findings] == named, explanation.lines()


def _map_at(rate_of) -> list[Pair]:
    """Every pair of NODES at the MB/s `rate_of(a, b)` gives, none suspect (the relative rule
    sees nothing in a uniformly slow fabric)."""
    return [Pair(a, b, rate_of(a, b), False, False) for a, b in itertools.combinations(NODES, 2)]


def test_the_map_against_the_promise_names_the_fabric_a_leaf_or_a_node():
    """Issue 50: 1 Gbit declared (125 MB/s), promise 0.7; a healthy pair here 120 MB/s (0.96)."""
    tree = switches.parse_topology(TREE_CONF)
    leaf = {n: ("leaf1" if int(n[1:]) <= 4 else "leaf2") for n in NODES}
    assert map_promise.below_promise(tree, _map_at(lambda a, b: 120.0), 1.0, 0.7) == []
    (fabric,) = map_promise.below_promise(tree, _map_at(lambda a, b: 75.0), 1.0, 0.7)
    assert fabric == ("BELOW PROMISE the fabric: median pair 0.60 of the 1 Gb/s line rate over "
                      "28 pair(s), promised 0.70")
    # two leaves: every pair across leaf1's uplink crosses leaf2's too, so the two are named
    # together, the 12 pairs within a leaf healthy
    crossing = _map_at(lambda a, b: 75.0 if leaf[a] != leaf[b] else 120.0)
    assert map_promise.below_promise(tree, crossing, 1.0, 0.7) == [
        "BELOW PROMISE leaf leaf1 or leaf2 (their uplinks: the pairs cannot tell them apart): "
        "median pair 0.60 of the 1 Gb/s line rate over 16 pair(s), promised 0.70"]
    # four leaves of two nodes: leaf1's uplink at 60 % is leaf1's, named alone
    four = switches.parse_topology("SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 Nodes=n[3-4]\n"
                                   "SwitchName=leaf3 Nodes=n[5-6]\nSwitchName=leaf4 Nodes=n[7-8]\n"
                                   "SwitchName=spine Switches=leaf[1-4]\n")
    (one,) = map_promise.below_promise(
        four, _map_at(lambda a, b: 75.0 if (a in ("n1", "n2")) != (b in ("n1", "n2")) else 120.0),
        1.0, 0.7)
    assert one.startswith("BELOW PROMISE leaf leaf1 (its uplink): median pair 0.60") and \
        "over 12 pair(s)" in one, one
    # one node's link at 60 %: that node, not its leaf
    (node,) = map_promise.below_promise(
        tree, _map_at(lambda a, b: 75.0 if "n3" in (a, b) else 120.0), 1.0, 0.7)
    assert node.startswith("BELOW PROMISE node n3: median pair 0.60") and "over 7 pair(s)" in node
    # a pair re-tested alone counts with that figure (its round-mates shared its path)
    retested = [Pair(p.host_a, p.host_b, 60.0, True, False, None, 120.0)
                for p in _map_at(lambda a, b: 120.0)]
    assert map_promise.below_promise(tree, retested, 1.0, 0.7) == []


def test_a_nodes_best_pair_is_what_its_own_link_carries():
    """A real map with leaf 1's uplink slow: every node has a healthy pair inside its leaf, so
    no node's best pair is lowered by the uplink (NetbenchRailMatrix's node_best_MBps)."""
    from fabricsuite.data.netbench_result import load

    rows = load(DATA / "matrix-uplink1-slow.json").table("pairs")
    best = switches.node_best(rows)
    assert sorted(best) == sorted({r[k] for r in rows for k in ("host_a", "host_b")})
    inside = max(r["bandwidth_MBps"] for r in rows)
    assert all(figure >= 0.9 * inside for figure in best.values())
    assert min(best.values()) > 1.2 * min(r["bandwidth_MBps"] for r in rows)


#: Slurm's topology/block as `scontrol show topology` prints it (src/plugins/topology/block:
#: BlockName, BlockIndex, Nodes, BlockSize; the blocks Slurm pairs into larger ones as
#: AggregatedBlock lines), 3 blocks of 4 nodes.
BLOCKS = """BlockName=b1 BlockIndex=0 Nodes=n[1-4] BlockSize=4
BlockName=b2 BlockIndex=1 Nodes=n[5-8] BlockSize=4
BlockName=b3 BlockIndex=2 Nodes=n[9-12] BlockSize=4
AggregatedBlock=b[1-2] BlockIndex=3 Nodes=n[1-8] BlockSize=8
"""


def test_slurm_blocks_are_groups_joined_two_by_two():
    # issue 66: a site on topology/block describes its fabric so (a dragonfly's groups, a
    # rack of one switch): every block a group, every two joined by a link of their own
    tree = switches.parse_topology(BLOCKS)
    assert sorted(tree.groups()) == ["b1", "b2", "b3"]
    assert switches.path(tree, "n1", "n2") == [("node", "n1"), ("node", "n2"), ("group", "b1")]
    assert switches.path(tree, "n1", "n6") == [("node", "n1"), ("node", "n6"),
                                               ("link", "b1~b2"), ("group", "b1"),
                                               ("group", "b2")]
    # the same blocks as block.conf, BlockSizes ignored
    conf = switches.parse_topology("BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[5-8]\n"
                                   "BlockName=b3 Nodes=n[9-12]\nBlockSizes=4,8\n")
    assert conf.links == tree.links and conf.leaf_of == tree.leaf_of


@pytest.mark.parametrize("slow, named", [
    ({("link", "b1~b3")}, [("link", "b1~b3")]),  # the link between two blocks
    ({("group", "b2")}, [("group", "b2")]),      # a whole block
])
def test_a_map_over_slurm_blocks_names_a_block_or_the_link_between_two(slow, named):
    tree = switches.parse_topology(BLOCKS)
    hosts = [f"n{i}" for i in range(1, 13)]
    pairs = []
    for a, b in itertools.combinations(hosts, 2):
        bad = bool(set(switches.path(tree, a, b)) & slow)
        pairs.append(Pair(a, b, SLOW if bad else HEALTHY, bad, bad, None))
    explanation = switches.explain(tree, pairs)
    assert [f.components for f in explanation.findings] == [named], explanation.lines()
    assert not explanation.unexplained


def test_a_quick_map_that_measured_no_pair_inside_a_slow_leaf_names_it_with_its_uplink():
    """A whole leaf slow, measured by a quick map only in pairs that leave it: its uplink
    carries exactly those pairs, so the map cannot tell the two apart and names both, the
    uplink first (what the check counts); before, the leaf went unnamed behind its uplink."""
    tree = switches.parse_topology("SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=leaf2 "
                                   "Nodes=n[3-4]\nSwitchName=leaf3 Nodes=n[5-6]\n"
                                   "SwitchName=spine Switches=leaf[1-3]\n")
    measured = [("n1", "n2"), ("n3", "n4"), ("n1", "n3"), ("n2", "n4"),
                ("n1", "n5"), ("n3", "n6"), ("n2", "n6"), ("n4", "n5")]
    pairs = [Pair(a, b, SLOW if "n5" in (a, b) or "n6" in (a, b) else HEALTHY,
                  b in ("n5", "n6"), b in ("n5", "n6"), index)
             for index, (a, b) in enumerate(measured)]
    explanation = switches.explain(tree, pairs)
    assert [f.components for f in explanation.findings] == [[("uplink", "leaf3"),
                                                              ("switch", "leaf3")]]
    assert explanation.counts() == {"node": 0, "uplink": 1, "switch": 0}
    assert explanation.lines()[0].startswith("faulty uplink leaf3 or switch leaf3: 4 of 4 pairs")
    assert "cannot tell these apart" in explanation.lines()[0]
    (finding,) = map_findings_of("; ".join(explanation.lines()), {}, [f"n{i}" for i in
                                                                     range(1, 7)])
    assert finding.kind == UPLINK and finding.nodes == "" and finding.confidence == "suspected"


@pytest.mark.parametrize("fabric", ["dragonfly", "three-level"])
def test_the_pairs_through_a_component_are_those_whose_path_holds_it(fabric):
    """The map's verdict reads a component's pairs from columns indexed once per leaf pair
    (fabricsuite.data.pairindex): the same pairs a path of each pair names, either end first."""
    from fabricsuite.data import pairindex, simfabric

    shape = (simfabric.dragonfly(3, 2, 2) if fabric == "dragonfly"
             else simfabric.fat_tree(2, 2, pods=2))
    tree = switches.parse_topology(shape.topology_conf())
    hosts = list(shape.hosts)
    pairs = [Pair(*((b, a) if (i + j) % 2 else (a, b)), 100.0 + i, j % 3 == 0, j % 6 == 0,
                  i % 3, 90.0 + j if j % 6 == 0 else None, j % 6 == 3)
             for i, a in enumerate(hosts) for j, b in enumerate(hosts) if i < j]
    index = pairindex.PairIndex.of_pairs(tree, pairs, switches.path)
    paths = [switches.path(tree, p.host_a, p.host_b) for p in pairs]
    # read straight from netbench's rows (switches.map_of), the same columns
    rows = [{"host_a": p.host_a, "host_b": p.host_b, "bandwidth_MBps": p.bandwidth_MBps,
             "round": p.round, "suspect": p.suspect, "flagged": p.bad,
             "retest_bandwidth_MBps": p.retest_MBps} for p in pairs]
    from_rows = pairindex.PairIndex.of_rows(tree, rows, switches.path)
    for column in ("a", "b", "bandwidth", "level", "suspect", "bad", "undecided", "round",
                   "leaf_pair"):
        assert getattr(from_rows, column).tolist() == getattr(index, column).tolist(), column
    assert len(index.components) == len({c for route in paths for c in route})
    for number, component in enumerate(index.components):
        expected = [i for i, route in enumerate(paths) if component in route]
        assert index.through(number).tolist() == expected, component
    # the pairs of a round across a shared link: counted per round, as the congestion rule
    load = index.round_loads(np.array([0, 1, 2]), switches.SHARED_KINDS)
    for number, component in enumerate(index.components):
        if component[0] in switches.SHARED_KINDS:
            for round_ in range(3):
                assert load(round_, number) == sum(
                    1 for p, route in zip(pairs, paths, strict=True)
                    if p.round == round_ and component in route)
