"""Simulated fabrics (fabricsuite.data.simfabric): the SimGrid platform and the Slurm topology
the suite reads of the same fabric, faults on named components, and bad input as one line. The
simulations themselves run in tests/test_simulate.py (smpirun)."""

import random
import statistics
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from fabricsuite.commands import cli
from fabricsuite.data import pairindex, simfabric, switches
from fabricsuite.data.simfabric import FabricError


def test_a_fat_tree_is_one_platform_and_the_same_tree_as_slurm_describes_it():
    fabric = simfabric.fat_tree(4, 4)
    root = ET.fromstring(fabric.platform_xml().split("\n", 2)[2])  # past the XML declaration
    zone = root.find("zone")
    assert [h.get("id") for h in zone.findall("host")] == [f"node-{i}" for i in range(16)]
    assert {r.get("id") for r in zone.findall("router")} == {"core"} | {f"leaf{i}" for i in
                                                                         range(4)}
    links = {link.get("id"): link for link in zone.findall("link")}
    # 16 node links at 200 Gb/s (25 GBps); each leaf's uplink a bundle of 4 node links, and the
    # one cable a flow takes (FATPIPE, at the node rate)
    assert links["link:node-0"].get("bandwidth") == "25GBps"
    assert links["uplink:leaf2"].get("bandwidth") == "100GBps"
    assert links["uplink:leaf2#cable"].get("sharing_policy") == "FATPIPE"
    assert len(zone.findall("route")) == 16 + 4
    # the suite's reading of the same fabric: Slurm's topology/tree lines
    tree = switches.parse_topology(fabric.topology_conf())
    assert tree.leaf_of["node-5"] == "leaf1" and tree.parent["leaf1"] == "core"
    assert [c for c in switches.path(tree, "node-0", "node-5") if c[0] == "uplink"] == [
        ("uplink", "leaf0"), ("uplink", "leaf1")]
    # the model and its origin are in the platform itself
    assert "profile ib-hdr" in fabric.platform_xml() and "Not fitted" in fabric.describe()


def test_a_tapered_three_level_tree_has_pods_and_thinner_uplinks():
    fabric = simfabric.fat_tree(2, 4, taper=2, pods=2)
    tree = switches.parse_topology(fabric.topology_conf())
    assert tree.parent["leaf3"] == "pod1" and tree.parent["pod1"] == "core"
    assert fabric.links["uplink:leaf0"][2] == 400.0  # 4 x 200 / 2
    assert fabric.links["uplink:pod0"][2] == 800.0   # 8 x 200 / 2
    assert "3-level fat tree, 4 leaves of 4 nodes in 2 pods, tapered 2:1" in fabric.describe()


@pytest.mark.parametrize("fault, hit", [
    ("link:node-5", {"link:node-5"}),
    ("uplink:leaf1", {"uplink:leaf1"}),
    ("switch:leaf1", {"uplink:leaf1"} | {f"link:node-{i}" for i in range(4, 8)}),
])
def test_a_fault_slows_exactly_its_links(fault, hit):
    fabric = simfabric.fat_tree(4, 4)
    healthy = dict(fabric.links)
    fabric.inject(fault, 0.75)
    changed = {name for name in fabric.links if fabric.links[name] != healthy[name]}
    assert changed == hit
    for name in hit:
        assert fabric.links[name][2] == pytest.approx(healthy[name][2] * 0.75)
        if healthy[name][3]:  # the cable a flow takes, too: a pair alone sees the fault
            assert fabric.links[name][3] == pytest.approx(healthy[name][3] * 0.75)
    assert fabric.faults == {fault: 0.75}


def test_a_dragonfly_joins_every_two_groups_and_a_fault_names_a_group():
    fabric = simfabric.dragonfly(4, 4, 2, global_links=2)
    globals_ = [n for n in fabric.links if n.startswith("global:")]
    assert len(globals_) == 6 * 2  # 4 groups: 6 pairs of groups, 2 links each
    assert len([n for n in fabric.links if n.startswith("local:")]) == 4 * 6
    tree = switches.parse_topology(fabric.topology_conf())
    assert tree.leaf_of["node-9"] == "g1r0" and tree.parent["g1r0"] == "g1"
    # the suite's reading: routers under groups, the groups joined by their global links (no
    # Through= with 2 links between two groups: which one a pair takes is not known)
    assert tree.links[frozenset(("g0", "g1"))] == "g0~g1" and not tree.through
    assert switches.path(tree, "node-0", "node-9") == [
        ("node", "node-0"), ("node", "node-9"), ("uplink", "g0r0"), ("uplink", "g1r0"),
        ("link", "g0~g1"), ("switch", "g0r0"), ("switch", "g1r0"), ("group", "g0"),
        ("group", "g1")]
    # a pair under one router is still in its group (a fault of the whole group slows it)
    assert switches.path(tree, "node-0", "node-1")[-1] == ("group", "g0")
    fabric.inject("global:g0~g1", 0.5)  # both global links between groups 0 and 1
    assert fabric.links["global:g0~g1~1"][2] == fabric.links["global:g0~g2~0"][2] / 2
    fabric.inject("switch:g2", 0.5)   # a whole group: every link at its routers
    assert fabric.links["link:node-16"][2] == 100.0


@pytest.mark.parametrize("build, said", [
    (lambda f: f.inject("link:node-99", 0.5), "no such component"),
    (lambda f: f.inject("link:node-1", 1.5), "above 0 and at most 1"),
    (lambda f: f.inject("cable:node-1", 0.5), "give link:HOST, uplink:SWITCH, global:"),
    (lambda f: simfabric.parse_faults(["link:node-1"]), "give COMPONENT=FRACTION"),
    (lambda f: simfabric.fat_tree(0, 4), "leaves 0: give a whole number"),
    (lambda f: simfabric.fat_tree(2, 4, taper=0.5), "taper 0.5"),
    (lambda f: simfabric.dragonfly(1, 4, 2), "2 groups or more"),
])
def test_bad_input_is_one_line_naming_the_fix(build, said):
    with pytest.raises(FabricError, match=said):
        build(simfabric.fat_tree(2, 2))


def test_the_command_refuses_a_bad_fault_before_it_simulates(capsys):
    status = cli.main(["simulate", "--leaves", "2", "--fault", "uplink:leaf7=0.5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith("fabricsuite simulate: fault uplink:leaf7: no such component"), err
    assert "(e.g. link:node-0, uplink:leaf0, switch:core)" in err[0], err


def test_a_single_global_link_names_the_routers_it_joins_on_the_pairs_that_cross_it():
    fabric = simfabric.dragonfly(3, 2, 1)
    tree = switches.parse_topology(fabric.topology_conf())
    assert "LinkName=g0~g1 Switches=g0,g1 Through=g0r1,g1r0" in fabric.topology_conf()
    # node-0 (g0r0) to node-2 (g1r0): through the global link's router g0r1 too
    assert ("switch", "g0r1") in switches.path(tree, "node-0", "node-2")
    with pytest.raises(switches.TopologyError, match="LinkName=x: give Switches=A,B"):
        switches.parse_topology(fabric.topology_conf() + "LinkName=x Switches=g0,g0r1\n")


def test_an_out_directory_that_cannot_be_written_is_one_line(tmp_path, capsys, monkeypatch):
    from fabricsuite.commands import simulate
    monkeypatch.setattr(simulate, "build", lambda: tmp_path / "netbench-smpi")  # no smpicc here
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    status = cli.main(["simulate", "--out", str(blocker / "sim")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1 and "cannot write there" in err[0], err


def test_the_median_of_a_map_less_some_pairs_is_that_of_the_rest():
    # below_promise takes the median of the pairs not through a part from the sorted whole
    rnd = random.Random(7)
    for _ in range(2000):
        values = [rnd.choice((1.0, 2.0, 2.0, 3.0, 5.0, 5.0)) for _ in range(rnd.randint(1, 12))]
        removed = rnd.sample(values, rnd.randint(0, len(values)))
        rest = list(values)
        for value in removed:
            rest.remove(value)
        expected = statistics.median(rest) if rest else None
        assert pairindex.median_without(np.sort(values), np.sort(removed)) == expected
