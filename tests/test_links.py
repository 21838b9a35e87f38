"""The links as the nodes report them, against the partition's promise (fabricsuite.data.links):
the readings (read-counters, source links) of real machines and of a sysfs layout, the contract,
the findings, and the session's verdict of a case that found one."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace

import pytest

from fabricsuite.commands import session
from fabricsuite.data import counters, findings, links, nics
from fabricsuite.data.session_verdict import LINK_DEGRADED, verdicts

REPO = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "links"
READ_COUNTERS = REPO / "config" / "launchers" / "read-counters"
#: A real session, one case of which failed in performance (tests/data/baseline/README.md).
PASSED_REPORT = Path(__file__).parent / "data" / "baseline" / "run-report-pt2pt-local.json"

NDR = links.Contract("infiniband/mlx5_[01]/1", 2, 400.0, 4)


def hca_reading(tmp_path: Path, layout: str = "sysfs-hca") -> str:
    """read-counters itself, run on a recorded sysfs layout (tests/data/links/README.md)."""
    out = tmp_path / "reading.txt"
    subprocess.run(["sh", str(READ_COUNTERS), str(out), "links"], check=True,
                   env=dict(os.environ, FABRICSUITE_SYSFS=str(DATA / layout)))
    return out.read_text()


def test_every_port_of_the_layout_is_read_right(tmp_path):
    ports = links.parse(hca_reading(tmp_path))
    assert set(ports) == {"infiniband/mlx5_0/1", "infiniband/mlx5_1/1", "infiniband/mlx5_2/1",
                          "infiniband/mlx5_3/1", "net/ib0", "net/eno1", "net/eno2"}
    assert ports["infiniband/mlx5_0/1"] == links.Port(
        "infiniband/mlx5_0/1", True, 400.0, 4, "4X NDR, ACTIVE, LinkUp, InfiniBand")
    assert (ports["infiniband/mlx5_1/1"].rate_gbps, ports["infiniband/mlx5_1/1"].width) == \
        (200.0, 2)
    assert not ports["infiniband/mlx5_2/1"].up  # DOWN, Disabled
    assert "Ethernet" in ports["infiniband/mlx5_3/1"].detail  # RoCE
    assert ports["net/eno1"].rate_gbps == 25.0 and ports["net/ib0"].rate_gbps == 400.0
    assert not ports["net/eno2"].up and ports["net/eno2"].rate_gbps is None


def test_a_port_at_half_its_width_and_one_down_are_named_against_the_contract(tmp_path):
    ports = links.parse(hca_reading(tmp_path))
    found = links.findings({"node7": ports}, NDR)
    assert found == ["LINK DEGRADED node7 infiniband/mlx5_1/1: 2X 200 Gb/s, declared 4X 400 Gb/s"]
    down = links.Contract("infiniband/mlx5_[0-2]/1", 3, 400.0, 4)
    assert "LINK DEGRADED node7 infiniband/mlx5_2/1: down, declared 4X 400 Gb/s" in \
        links.findings({"node7": ports}, down)
    missing = links.Contract("infiniband/mlx5_[0-9]+/1", 6, 100.0)
    assert links.findings({"node7": ports}, missing)[0] == (
        "LINK DEGRADED node7: 4 of 6 declared port(s) matching infiniband/mlx5_[0-9]+/1 present")


def test_a_port_that_trained_but_is_not_active_says_how_far_it_came(tmp_path):
    ports = links.parse(hca_reading(tmp_path, "sysfs-ib-states"))
    assert set(ports) == {"infiniband/mlx5_0/1", "infiniband/mlx4_0/1", "infiniband/mlx4_0/2",
                          "infiniband/qib0/1"}
    # INIT: the cable trained (LinkUp), no subnet manager made it active
    init = ports["infiniband/mlx5_0/1"]
    assert not init.up and init.describe() == "INIT, LinkUp"
    # a down port still reports a rate (the kernel's default 4X, no speed word on older kernels)
    polling = ports["infiniband/mlx4_0/2"]
    assert not polling.up and polling.describe() == "DOWN, Polling"
    assert (ports["infiniband/mlx4_0/1"].rate_gbps, ports["infiniband/mlx4_0/1"].width) == \
        (40.0, 4)
    assert ports["infiniband/qib0/1"].describe() == "1X 2.5 Gb/s"
    promise = links.Contract("infiniband/mlx5_0/1", 1, 400.0, 4)
    assert links.findings({"n1": ports}, promise) == [
        "LINK DEGRADED n1 infiniband/mlx5_0/1: INIT, LinkUp, declared 4X 400 Gb/s"]


def test_a_slingshot_nic_down_or_trained_a_speed_lower_is_named(tmp_path):
    ports = links.parse(hca_reading(tmp_path, "sysfs-cxi"))
    assert {n for n in ports if n.startswith("cxi/")} == {"cxi/cxi0", "cxi/cxi1", "cxi/cxi2",
                                                         "cxi/cxi3"}
    assert ports["cxi/cxi0"] == links.Port("cxi/cxi0", True, 200.0, None,
                                           "link 1, speed 200000 Mb/s")
    assert not ports["cxi/cxi1"].up
    promise = links.Contract("cxi/cxi[0-3]", 4, 200.0)
    assert links.findings({"nid001": ports}, promise) == [
        "LINK DEGRADED nid001 cxi/cxi1: down, declared 200 Gb/s",
        "LINK DEGRADED nid001 cxi/cxi2: 100 Gb/s, declared 200 Gb/s"]
    # the NIC's own link, not the Ethernet interface that rides on it, is the contract init
    # proposes (hsn0 says the same link again)
    healthy = {n: p for n, p in ports.items() if n in ("cxi/cxi0", "cxi/cxi3", "net/hsn0")}
    proposed, notes = links.propose({"nid001": healthy, "nid002": healthy})
    # two NICs a node: proposed as rails, one rank's messages on one of them
    assert proposed == {"links": {"rails": ["cxi/cxi0", "cxi/cxi3"], "rate_gbps": 200.0}}
    assert links.contract({"fabric": proposed}).line_rate_gbps == 200.0
    assert not any(n.startswith("not proposed") for n in notes), notes
    # a NIC down, and one a speed lower, on every node alike: no node differs, so init says
    # which it left out
    proposed, notes = links.propose({"nid001": ports, "nid002": ports})
    assert proposed["links"]["rails"] == ["cxi/cxi0", "cxi/cxi3"]
    (left_out,) = [n for n in notes if n.startswith("not proposed")]
    assert left_out.startswith("not proposed: cxi/cxi1 down on 2 node(s), cxi/cxi2 100 Gb/s on "
                               "2 node(s); where one carries the fabric"), notes
    dropped = dict(healthy, **{"cxi/cxi3": ports["cxi/cxi1"]})
    assert links.changes({"nid001": healthy}, {"nid001": dropped}) == [
        "LINK CHANGED nid001 cxi/cxi3 during the job: 200 Gb/s -> down"]


def test_a_nic_below_its_pcie_link_is_named_and_nothing_else(tmp_path):
    """sysfs-pcie: four NDR HCAs whose ports all read healthy, and a management NIC on an older
    kernel's format (tests/data/links/README.md)."""
    ports = links.parse(hca_reading(tmp_path, "sysfs-pcie"))
    assert ports["infiniband/mlx5_1/1"].pcie == nics.PcieLink(32.0, 8, 32.0, 16)
    # "8 GT/s" and "4": a kernel before 5.7
    assert ports["net/eno1"].pcie == nics.PcieLink(8.0, 4, 8.0, 4)
    # a Gen5 NIC in a Gen4 slot runs as built: the slot's maximum is its capability
    assert not ports["infiniband/mlx5_3/1"].pcie.below()
    expected = [
        "LINK DEGRADED dgx07 infiniband/mlx5_1/1: PCIe 32.0 GT/s x8, capable of 32.0 GT/s x16",
        "LINK DEGRADED dgx07 infiniband/mlx5_2/1: PCIe 16.0 GT/s x16, capable of 32.0 GT/s x16"]
    assert links.findings({"dgx07": ports}, None) == expected
    rails = links.contract({"fabric": {"links": {
        "rails": [f"infiniband/mlx5_{k}/1" for k in range(4)], "rate_gbps": 400, "width": 4}}})
    assert links.findings({"dgx07": ports}, rails) == [
        "LINK DEGRADED dgx07 infiniband/mlx5_1/1 (rail 2): PCIe 32.0 GT/s x8, capable of "
        "32.0 GT/s x16",
        "LINK DEGRADED dgx07 infiniband/mlx5_2/1 (rail 3): PCIe 16.0 GT/s x16, capable of "
        "32.0 GT/s x16"]
    # the layouts without a PCIe link (a veth, a virtio NIC) say nothing of one
    assert all(p.pcie is None for p in links.parse(hca_reading(tmp_path)).values())
    assert all(p.pcie is None for p in
               links.parse((DATA / "vm-reading.txt").read_text()).values())


def test_init_proposes_a_nodes_nics_as_rails_and_says_which_cores_each_is_near(tmp_path):
    ports = links.parse(hca_reading(tmp_path, "sysfs-pcie"))
    assert (ports["infiniband/mlx5_2/1"].numa_node, ports["infiniband/mlx5_2/1"].local_cpus) == \
        (1, "56-111,168-223")
    assert ports["net/eno1"].numa_node is None  # -1: the firmware does not say
    proposed, notes = links.propose({"dgx01": ports, "dgx02": ports})
    assert proposed == {"links": {"rails": [f"infiniband/mlx5_{k}/1" for k in range(4)],
                                  "rate_gbps": 400.0, "width": 4}}
    assert "NICs near cores: infiniband/mlx5_0/1 NUMA 0 (CPUs 0-55,112-167), infiniband/mlx5_1/1 " \
           "NUMA 0 (CPUs 0-55,112-167), infiniband/mlx5_2/1 NUMA 1 (CPUs 56-111,168-223)" in \
        "\n".join(notes), notes
    assert any(n.startswith("proposed as 4 rails") for n in notes)
    # the x8 and the Gen-down NIC differ on both nodes alike: named to the person confirming
    assert sum("PCIe" in n for n in notes) == 4, notes


def test_init_names_a_node_that_trained_faster_than_the_rate_it_proposes(tmp_path):
    """Two nodes trained 4X 100 Gb/s, one 4X 200: the majority's rate is proposed, and the
    faster node is named with the choice, never left out (the majority's fault would become
    the contract)."""
    from dataclasses import replace

    port = links.parse(hca_reading(tmp_path))["infiniband/mlx5_0/1"]
    at = {rate: {port.name: replace(port, rate_gbps=rate, detail=f"4X {name}, ACTIVE")}
          for rate, name in ((100.0, "EDR"), (200.0, "HDR"))}
    proposed, notes = links.propose({"n1": at[100.0], "n2": at[100.0], "n3": at[200.0]})
    assert proposed["links"]["rate_gbps"] == 100.0
    (choose,) = [n for n in notes if n.startswith("choose:")]
    assert choose == (
        "choose: the proposal takes the rate most nodes trained (100 Gb/s), and 1 port(s) "
        "trained faster: n3 infiniband/mlx5_0/1 4X 200 Gb/s; if the fabric promises 200 Gb/s, "
        "set rate_gbps to 200, and the ports at 100 Gb/s are LINK DEGRADED")
    # nodes alike: nothing to choose
    assert not any(n.startswith("choose:") for n in links.propose(
        {"n1": at[200.0], "n2": at[200.0]})[1])


@pytest.mark.parametrize("text, gts", [("32.0 GT/s PCIe", 32.0), ("16 GT/s", 16.0),
                                       ("2.5 GT/s", 2.5), ("Unknown", None),
                                       ("Unknown speed", None), ("", None)])
def test_a_pcie_speed_is_read_in_every_format_the_kernel_prints(text, gts):
    assert nics.pcie_speed(text) == gts


def test_a_multi_rail_node_is_judged_per_rank_path_never_by_its_sum():
    """4 x 200 Gb/s rails: one rank's path is one rail (or the S it is striped over)."""
    four = {"rails": ["cxi/cxi0", "cxi/cxi1", "cxi/cxi2", "cxi/cxi3"], "rate_gbps": 200}
    promise = links.contract({"fabric": {"links": four}})
    assert (promise.count, promise.ports) == (4, "cxi/cxi0|cxi/cxi1|cxi/cxi2|cxi/cxi3")
    assert promise.line_rate_gbps == 200.0 and promise.path_rate_gbps(2) == 400.0
    assert promise.rail_of("cxi/cxi2") == 3 and promise.rail_of("net/hsn0") is None
    striped = links.contract({"fabric": {"links": dict(four, striped_over=2)}})
    assert striped.line_rate_gbps == 400.0
    # a healthy rail's 1 MiB ping-pong (0.9 of 200 Gb/s) keeps the promise
    result = SimpleNamespace(value=22500.0, line_rate_gbps=promise.line_rate_gbps)
    assert links.line_fraction(SimpleNamespace(extract=lambda r: r.value)).extract(result) == \
        pytest.approx(0.9)
    # a pool of ports without rails: one rank, one port, as before for a single-rail node
    pool = links.contract({"fabric": {"links": {"ports": "net/eth0", "rate_gbps": 1}}})
    assert pool.line_rate_gbps == 1.0 and pool.rails == () and pool.striped_over == 1


@pytest.mark.parametrize("declared, fix", [
    ({"rails": "net/eth0", "rate_gbps": 1}, "is not a list of port names"),
    ({"rails": ["eth0"], "rate_gbps": 1}, "'eth0' is no port name"),
    ({"rails": ["net/eth0", "net/eth0"], "rate_gbps": 1}, "names a port twice"),
    ({"rails": ["net/eth0", "net/eth1"], "count": 3, "rate_gbps": 1}, "count 3 differs"),
    ({"rails": ["net/eth0", "net/eth1"], "ports": "net/eth0", "rate_gbps": 1},
     "rail(s) net/eth1 not matched by ports"),
    ({"rails": ["net/eth0", "net/eth1"], "rate_gbps": 1, "striped_over": 3},
     "striped_over 3 is not a whole number of rails from 1 to count (2)"),
])
def test_rails_that_cannot_be_used_are_refused_in_one_line(declared, fix):
    with pytest.raises(links.ContractError) as err:
        links.contract({"fabric": {"links": declared}})
    assert fix in str(err.value) and "\n" not in str(err.value)


def test_a_rail_missing_or_slow_on_a_node_is_named_with_its_rail(tmp_path):
    healthy = links.parse((DATA / "emu-node-500mbit.txt").read_text().replace("500Mbit",
                                                                                "1Gbit"))
    two = {**healthy, "net/eth1": healthy["net/eth0"]}
    slow = {**healthy, "net/eth1": links.parse(
        (DATA / "emu-node-500mbit.txt").read_text())["net/eth0"]}
    promise = links.contract({"fabric": {"links": {"rails": ["net/eth0", "net/eth1"],
                                                   "rate_gbps": 1}}})
    assert links.findings({"n1": two, "n2": slow, "n3": healthy}, promise) == [
        "LINK DEGRADED n2 net/eth1 (rail 2): 0.5 Gb/s, declared 1 Gb/s",
        "LINK DEGRADED n3: 1 of 2 declared port(s) matching net/eth0|net/eth1 present "
        "(missing: net/eth1 (rail 2))"]


def test_the_counters_never_read_a_link_state_as_a_counter():
    text = (DATA / "vm-reading.txt").read_text()
    assert not any(name.startswith("link/") for name in counters.parse(text))
    assert not any(bad.startswith("link/") for bad in counters.unreadable(text))
    assert counters.parse(text)["net/eth0/rx_bytes"] > 0


def test_real_readings_a_virtual_nic_and_a_shaped_emulated_link():
    vm = links.parse((DATA / "vm-reading.txt").read_text())
    assert vm["net/eth0"].up and vm["net/eth0"].rate_gbps is None  # virtio: speed -1
    # the VM's ifb devices (tc's ingress mirrors) are read but are no link: never listed down
    assert "link/net/ifb0/operstate" in (DATA / "vm-reading.txt").read_text()
    assert set(vm) == {"net/eth0"} and "ifb" not in links.describe({"vm": vm}, None)
    assert vm["net/eth0"].describe() == "rate unknown"
    emu = links.parse((DATA / "emu-node-500mbit.txt").read_text())
    # the veth says 10000 Mb/s; the tbf at its root is the line rate
    assert emu["net/eth0"].rate_gbps == 0.5 and "shaped by tbf to 500Mbit" in \
        emu["net/eth0"].detail
    promise = links.Contract("net/eth0", 1, 1.0)
    assert links.findings({"node2": emu}, promise) == [
        "LINK DEGRADED node2 net/eth0: 0.5 Gb/s, declared 1 Gb/s"]
    # no contract: nothing to say about one node, and an unknown rate is no finding
    assert links.findings({"vm": vm}, None) == []
    # against a contract an unknown rate is one: the promise cannot be checked
    assert links.findings({"vm": vm}, promise) == [
        "LINK DEGRADED vm net/eth0: rate unknown, declared 1 Gb/s"]


def test_ports_that_no_node_has_are_the_contracts_fault_in_one_line():
    """`hsn[0-9]` declared on nodes with InfiniBand and Ethernet ports: one line naming the
    field, where every node would otherwise be LINK DEGRADED."""
    ib = links.parse((DATA / "emu-node-500mbit.txt").read_text())
    promise = links.contract({"fabric": {"links": {"ports": "cxi/hsn[0-9]", "rate_gbps": 200}}})
    with pytest.raises(links.ContractError) as err:
        links.findings({"n1": ib, "n2": ib, "n3": ib}, promise)
    assert str(err.value) == (
        "extras.fabric.links.ports 'cxi/hsn[0-9]' matches no port of any of the 3 node(s) read "
        "(they have net/eth0): the contract names ports these nodes do not have; fix it "
        "(`fabricsuite init` proposes one from what the nodes report)")
    # a node that has the port: a node without it is a finding of that node
    bare = {name: port for name, port in ib.items() if name != "net/eth0"}
    assert links.findings({"n1": ib, "n2": bare}, links.Contract("net/eth0", 1, 0.5)) == [
        "LINK DEGRADED n2: 0 of 1 declared port(s) matching net/eth0 present"]


def test_a_node_unlike_its_peers_is_named_without_a_contract():
    healthy = links.parse((DATA / "emu-node-500mbit.txt").read_text().replace("500Mbit",
                                                                                "1Gbit"))
    slow = links.parse((DATA / "emu-node-500mbit.txt").read_text())
    nodes = {"n1": healthy, "n2": healthy, "n3": slow, "n4": healthy}
    assert links.findings(nodes, None) == [
        "LINK DEGRADED n3 net/eth0: 0.5 Gb/s, its 3 peer(s) 1 Gb/s"]
    # two nodes cannot say which one is unlike the other
    assert links.findings({"n1": healthy, "n3": slow}, None) == []
    # with a contract, the slow node is named once, against the promise
    assert links.findings(nodes, links.Contract("net/eth0", 1, 1.0)) == [
        "LINK DEGRADED n3 net/eth0: 0.5 Gb/s, declared 1 Gb/s"]


def test_links_that_differ_with_no_majority_are_said_and_the_slower_suspected():
    # issue 66: 3 of 6 emulated nodes at 70 % of the 200 Mbit, no contract: three against
    # three is no majority, but that the links differ is a finding; the slower are suspected
    text = (DATA / "emu-node-500mbit.txt").read_text()
    healthy = links.parse(text.replace("500Mbit", "200Mbit"))
    slow = links.parse(text.replace("500Mbit", "140Mbit"))
    nodes = {f"n{i}": slow if i in (1, 3, 5) else healthy for i in range(1, 7)}
    found = links.findings(nodes, None)
    assert found == [
        f"LINKS DIFFER n{i} net/eth0: 0.14 Gb/s; its 6 peers: 3 at 0.14 Gb/s, 3 at 0.2 Gb/s, no "
        f"figure most of them share, so which are degraded is not known (declare "
        f"extras.fabric's rate)" for i in (1, 3, 5)], found
    assert all(links.is_finding(line) for line in found)
    parsed = findings.link_findings_of(found, {"check": "FabricLinks", "partition": "emu:nodes",
                                               "environ": "openmpi"})
    assert [(f.kind, f.confidence, f.nodes) for f in parsed] == [
        (findings.LINK_DEGRADED_KIND, findings.SUSPECTED, f"n{i}") for i in (1, 3, 5)]
    # alike links: nothing
    assert links.findings({f"n{i}": healthy for i in range(1, 7)}, None) == []


def test_a_link_that_changes_during_a_job_is_named():
    up = links.parse((DATA / "emu-node-500mbit.txt").read_text())
    down = links.parse((DATA / "emu-node-500mbit.txt").read_text().replace(
        "operstate up", "operstate down"))
    assert links.changes({"n1": up}, {"n1": down}) == [
        "LINK CHANGED n1 net/eth0 during the job: 0.5 Gb/s -> down"]
    assert links.changes({"n1": up}, {"n1": up}) == []


@pytest.mark.parametrize("declared, fix", [
    ({"ports": "net/eth0", "rate_gbps": 0}, "rate_gbps 0 is not a rate above 0"),
    ({"ports": "net/eth0", "rate_gbps": float("nan")}, "rate_gbps nan"),
    ({"ports": "(", "rate_gbps": 1}, "is no regular expression"),
    ({"ports": "net/eth0", "rate_gbps": 1, "width": 3}, "width 3 is none of 1, 2, 4, 8, 12"),
    ({"ports": "net/eth0", "rate_gbps": 1, "count": 0}, "count 0 is not a whole number"),
    ({"ports": "net/eth0", "rate": 1}, 'expected {"ports": "REGEX"'),
    # a rate in the wrong unit (200 Gb/s given in Mb/s)
    ({"ports": "net/eth0", "rate_gbps": 200000}, "rate_gbps 200000 is no port's rate in Gb/s"),
    ({"ports": "net/eth0", "rate_gbps": 0.001}, "was it given in Mb/s?"),
])
def test_a_contract_that_cannot_be_used_is_refused_in_one_line(declared, fix):
    with pytest.raises(links.ContractError) as err:
        links.contract({"fabric": {"links": declared}})
    assert fix in str(err.value) and "\n" not in str(err.value)


def test_no_contract_is_none_and_a_contract_reads_whole():
    assert links.contract({}) is None and links.contract({"fabric": {}}) is None
    assert links.contract({"fabric": {"links": {"ports": "infiniband/.*", "count": 2,
                                                 "rate_gbps": 400, "width": 4}}}) == \
        links.Contract("infiniband/.*", 2, 400.0, 4)


def with_finding(report: dict, finding: str) -> dict:
    """`report` with one passed case's run having found `finding`, as the check records it."""
    report = copy.deepcopy(report)
    for case in report["runs"][-1]["testcases"]:
        if case["result"] == "pass" and not case.get("fixture"):
            case["link_findings"] = finding
            return report
    raise AssertionError("no passed case")


def test_a_link_finding_is_its_own_verdict_exit_1_and_junit_failure(tmp_path):
    report = json.loads(PASSED_REPORT.read_text())
    finding = "LINK DEGRADED node2 net/eth0: 0.5 Gb/s, declared 1 Gb/s"
    assert LINK_DEGRADED not in [v for _c, v in verdicts(report)]
    degraded = with_finding(report, finding)
    assert [v for _c, v in verdicts(degraded)].count(LINK_DEGRADED) == 1
    code, why = session.classify(degraded)
    assert code == session.REGRESSED and why.startswith("LINK DEGRADED: 1 link finding(s)")
    lines = session.summary_lines(degraded, [])
    assert f"  {finding}" in lines and lines[-1].endswith("(exit 1)")
    path = tmp_path / "nightly.xml"
    session.write_junit(degraded, [], path)
    (failure,) = [f for f in ET.parse(path).getroot().findall("testsuite/testcase/failure")
                  if f.get("type") == "link-degraded"]
    assert finding in failure.get("message")


def test_the_outcome_shows_the_links_each_partition_reported():
    report = with_finding(json.loads(PASSED_REPORT.read_text()),
                          "LINK DEGRADED node2 net/eth0: 0.5 Gb/s, declared 1 Gb/s")
    for case in report["runs"][-1]["testcases"]:
        case["links"] = "node1 net/eth0 1 Gb/s, node2 net/eth0 0.5 Gb/s"
    lines = session.summary_lines(report, [])
    assert "links as the nodes report them: local:default node1 net/eth0 1 Gb/s, node2 " \
           "net/eth0 0.5 Gb/s" in lines
    # above them, the finding under its own head, and the outcome's verdict last
    head = lines.index("links against their promise (fabricsuite.data.links):")
    assert lines[head + 1] == "  LINK DEGRADED node2 net/eth0: 0.5 Gb/s, declared 1 Gb/s"


def test_a_collectives_bus_bandwidth_is_judged_only_by_a_declared_busbw_promise():
    bare = links.contract({"fabric": {"links": {"ports": "net/eth0", "rate_gbps": 1}}})
    declared = links.contract({"fabric": {"links": {"ports": "net/eth0", "rate_gbps": 1},
                                          "promise": {"busbw_fraction": 0.5}}})
    figure = links.line_fraction(None, promise="busbw_fraction")
    assert bare.promise_for(figure) is None  # no default: not judged
    assert links.promise_reference(declared, figure) == (0.5, 0.0, None, links.LINE_FRACTION)
    pair = links.line_fraction(None)
    assert links.promise_reference(declared, pair)[0] == links.DEFAULT_BANDWIDTH_FRACTION
    with pytest.raises(links.ContractError, match="busbw_fraction 2 is not a fraction"):
        links.contract({"fabric": {"links": {"ports": "x", "rate_gbps": 1},
                                   "promise": {"busbw_fraction": 2}}})


def test_a_line_fraction_is_megabytes_over_the_declared_gigabits():
    class Result:
        line_rate_gbps = 1.0

    class Figure:
        def extract(self, result):
            return 118.75  # MB/s (10^6 B): 0.95 Gb/s

    fraction = links.line_fraction(Figure())
    assert fraction.extract(Result()) == pytest.approx(0.95)
    Result.line_rate_gbps = None
    assert fraction.extract(Result()) != fraction.extract(Result())  # NaN: no line rate


def test_a_promised_latency_is_declared_in_microseconds_and_judged_at_most_itself():
    declared = links.contract({"fabric": {"links": {"ports": "net/eth0", "rate_gbps": 1},
                                          "promise": {"latency_8B_us": 1.5}}})
    assert declared.latency_8B_us == 1.5
    figure = links.promise_multiple(None)
    assert links.promised_figures({"a": figure, "b": links.line_fraction(None), "c": None}) \
        .keys() == {"a", "b"}
    # at most the promise: ReFrame's upper bound 0 above a reference of 1
    assert links.promise_reference(declared, figure) == (1.0, None, 0.0, links.PROMISE_MULTIPLE)
    bare = links.contract({"fabric": {"links": {"ports": "net/eth0", "rate_gbps": 1}}})
    assert bare.promise_for(figure) is None  # no default: not judged
    for bad in (0, -1, True, "fast", float("inf")):
        with pytest.raises(links.ContractError, match="is not a latency above 0"):
            links.contract({"fabric": {"links": {"ports": "x", "rate_gbps": 1},
                                       "promise": {"latency_8B_us": bad}}})


def test_a_latency_over_its_promise_is_a_multiple_of_it():
    class Result:
        promised_latency_us = 1.5

    class Figure:
        def extract(self, result):
            return 1.95  # us

    multiple = links.promise_multiple(Figure())
    assert multiple.extract(Result()) == pytest.approx(1.3)
    Result.promised_latency_us = None
    assert multiple.extract(Result()) != multiple.extract(Result())  # NaN: nothing promised


def test_a_missed_latency_promise_is_shown_and_refused_like_a_line_fraction():
    report = json.loads(PASSED_REPORT.read_text())
    case = next(c for c in report["runs"][-1]["testcases"]
                if c["result"] == "pass" and not c.get("fixture"))
    case.update(result="fail", fail_phase="performance", promised_latency_us=1.5,
                perfvalues={"local:default:latency_8B_promise_multiple": [
                    1.3, 1.0, None, 0.0, links.PROMISE_MULTIPLE, "fail"]})
    (line,) = links.promise_lines([case])[1:]
    assert line.endswith("latency_8B_promise_multiple 1.30 (1.95 us, promised at most 1.5 us):"
                         " ABOVE"), line
    assert links.missed_promises(case) == [
        "latency_8B_promise_multiple 1.30 (1.95 us, promised at most 1.5 us)"]
    assert links.failed_only_its_promise(case)
    case["perfvalues"]["local:default:latency_8B_median_us"] = [1.95, 1.0, None, 0.1, "us",
                                                                  "fail"]
    assert not links.failed_only_its_promise(case)  # its own history failed it too
