"""A session's findings (fabricsuite/data/findings.py) from real run reports, and what `fabricsuite
act` (fabricsuite/commands/act.py) plans from them against Slurm's real `sinfo --json` (Slurm 22.05
of the emulated cluster, tests/data/slurm/README.md): every command line it would run, and every
node it must leave alone. The same commands run against a real slurmctld in
tests/test_emucluster_switches.py."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from case_support import on_nodes, report

from fabricsuite import REPO_ROOT
from fabricsuite.commands import act, session
from fabricsuite.data import findings, hostlists, links, switches
from fabricsuite.data.findings import Finding

pytestmark = pytest.mark.unit

DATA = Path(__file__).parent / "data"
SINFO = (DATA / "slurm" / "sinfo-json-22.05.json").read_text()


def doc_of(name: str) -> dict:
    data = report(name)
    code, why = session.classify(data)
    return findings.document(data, code, why)


def test_each_verdict_of_a_real_session_is_a_finding_of_its_kind():
    regression = doc_of("judged-own")
    (found,) = regression["findings"]
    assert (found["kind"], found["confidence"], found["nodes"]) == ("regression", "confirmed",
                                                                     "vm")
    assert found["evidence"].startswith("REGRESSION bandwidth_1MiB_MBps ") and "(-1" in \
        found["evidence"], found
    assert regression["outcome"]["status"] == session.REGRESSED and regression["passed_nodes"] \
        == ""
    (broken,) = doc_of("tcp-sanity-broken")["findings"]
    assert broken["kind"] == "broken-harness" and broken["nodes"] == "" and \
        "carried by tcp" in broken["evidence"]
    (disturbed,) = doc_of("busyloop-disturbed")["findings"]
    assert disturbed["kind"] == "interference" and "busyloop" in disturbed["evidence"]
    healthy = doc_of("recorded-physics")
    assert healthy["findings"] == [] and healthy["passed_nodes"] == "vm"
    assert healthy["schema"] == findings.SCHEMA and healthy["version"] == findings.VERSION


def test_a_node_outlier_is_confirmed_and_a_regression_on_unknown_nodes_only_suspected(
        references_on_nodes):
    data = on_nodes(report("judged-own"), ["n3"], ["n1"], passed=True)
    (found,) = findings.document(data)["findings"]
    assert (found["kind"], found["confidence"], found["nodes"]) == ("node-outlier",
                                                                     "confirmed", "n3")
    assert found["evidence"].startswith("NODE OUTLIER n3: first run ") and " -1" in \
        found["evidence"], found
    # still outside on n3, with no known node to confirm it on: suspected, to be re-tested
    data = on_nodes(report("judged-own"), ["n3"], ["n3"], passed=False)
    (found,) = findings.document(data)["findings"]
    assert (found["kind"], found["confidence"], found["nodes"]) == ("node-outlier",
                                                                     "suspected", "n3")
    assert "re-test against known nodes" in found["evidence"]


def test_link_lines_and_map_lines_become_findings_with_their_confidence():
    slow = links.parse((DATA / "links" / "emu-node-500mbit.txt").read_text())
    healthy = links.parse((DATA / "links" / "emu-node-500mbit.txt").read_text().replace(
        "500Mbit", "1Gbit"))
    lines = links.findings({"n1": healthy, "n2": healthy, "n3": slow, "n4": healthy}, None)
    lines.append("LINK CHANGED n2 net/eth0 during the job: up -> down")
    lines.append("BELOW PROMISE leaf leaf1 (its uplink): median pair 0.41 of the 1 Gb/s line "
                 "rate over 12 pair(s), promised 0.70")
    lines.append("BELOW PROMISE the fabric: median pair 0.52 of the 1 Gb/s line rate over 28 "
                 "pair(s), promised 0.70")
    found = findings.link_findings_of(lines, {})
    assert [(f.kind, f.confidence, f.nodes, f.component) for f in found] == [
        ("link-degraded", "confirmed", "n3", ""), ("link-degraded", "suspected", "n2", ""),
        ("leaf", "map", "", "leaf leaf1"), ("fabric", "map", "", "the fabric")]
    # the map's explanation of a real slow uplink: two uplinks it cannot tell apart
    from fabricsuite.data.netbench_result import load

    result = load(DATA / "switches" / "matrix-uplink1-slow.json")
    result.switch_tree = (DATA / "switches" / "matrix-uplink1-slow-tree.txt").read_text()
    components = "; ".join(switches.verdict(result).lines())
    (uplink,) = findings.map_findings_of(components, {})
    assert (uplink.kind, uplink.confidence, uplink.nodes) == ("uplink", "suspected", "")
    (node,) = findings.map_findings_of("faulty node n7: 7 of 7 pairs through it bad", {})
    assert (node.kind, node.confidence, node.nodes) == ("faulty-link", "map", "n7")
    # a dragonfly's global link and group (fabricsuite.data.switches' link and group kinds):
    # an uplink's and a leaf's kind of finding, above the nodes, never drained node by node
    (link,) = findings.map_findings_of("faulty link g0~g2: 16 of 16 pairs through it bad", {})
    assert (link.kind, link.confidence, link.nodes, link.component) == (
        "uplink", "map", "", "link g0~g2")
    (group,) = findings.map_findings_of("faulty group g1: 38 of 38 pairs through it bad", {})
    assert (group.kind, group.nodes, group.component) == ("leaf", "", "group g1")


def test_a_rail_maps_findings_carry_the_rail_and_a_whole_rail_is_reported_not_drained():
    """What NetbenchRailMatrix writes (checks/fabric_map.py, on_its_path): a node's link on
    one rail, a leaf of one rail, a whole rail below its promise."""
    base = {"check": "NetbenchRailMatrix %node_count=4 %placement=per-node %rail=rail2",
            "partition": "emucluster:nodes", "environ": "openmpi"}
    (node,) = findings.map_findings_of(
        "faulty node n3: 3 of 3 pairs through it bad, median 16.5 MB/s against 24.8 MB/s for "
        "the healthy pairs (-34%) (rail 2)", base)
    assert (node.kind, node.nodes, node.component) == ("faulty-link", "n3", "node n3 rail 2")
    assert act.reason_of(node, "319ab2f4-aaaa") == \
        "fabricsuite: FAULTY LINK NetbenchRailMatrix rail 2 -34% 319ab2f4"
    found = findings.link_findings_of([
        "BELOW PROMISE rail 2: the fabric: median pair 0.60 of the 0.2 Gb/s line rate over 6 "
        "pair(s), promised 0.70",
        "BELOW PROMISE rail 3: node n4: median pair 0.51 of the 0.2 Gb/s line rate over 3 "
        "pair(s), promised 0.70",
        "BELOW PROMISE rail 1: leaf leaf2 (its uplink): median pair 0.41 of the 1 Gb/s line "
        "rate over 12 pair(s), promised 0.70"], base)
    assert [(f.kind, f.nodes, f.component) for f in found] == [
        ("rail", "", "rail 2"), ("faulty-link", "n4", "node n4 rail 3"),
        ("leaf", "", "leaf leaf2 rail 1")]
    actions, lines, refused = planned([found[0]])
    assert not refused and actions == [] and lines[0].startswith(
        "reported, no node drained (rail rail 2): BELOW PROMISE rail 2: the fabric")


def test_a_node_the_map_names_below_the_promise_and_as_a_faulty_link_is_one_finding():
    """The rail map's node in both of its rounds (bench/rails_emucluster.py found each twice
    before): one finding, the map's own explanation of its last round."""
    base = {"check": "NetbenchRailMatrix %rail=rail2"}
    found = findings.link_findings_of([
        "BELOW PROMISE rail 2: node n3: median pair 0.66 of the 0.2 Gb/s line rate over 3 "
        "pair(s), promised 0.70", "BELOW PROMISE rail 2: node n3: median pair 0.67 of the 0.2 "
        "Gb/s line rate over 3 pair(s), promised 0.70"], base) + findings.map_findings_of(
        "faulty node n3: 3 of 3 pairs through it bad (-34%) (rail 2)", base)
    (once,) = findings._once(found)
    assert once.evidence.startswith("faulty node n3") and once.component == "node n3 rail 2"
    two_ports = findings.link_findings_of(["LINK DEGRADED n3 net/eth0: down, declared 1 Gb/s",
                                           "LINK DEGRADED n3 net/eth1: down, declared 1 Gb/s"],
                                          base)
    assert findings._once(two_ports) == two_ports


def test_a_node_named_on_every_rail_is_one_finding_of_the_node():
    base = {"check": "NetbenchRailMatrix %node_count=4 %placement=per-node %rail=rail1",
            "partition": "emucluster:nodes", "environ": "openmpi"}
    on_rail = [findings.map_findings_of(f"faulty node n3: 3 of 3 pairs through it bad (rail "
                                        f"{k})", dict(base, check=base["check"][:-1] + str(k)))[0]
               for k in (1, 2)]
    ran = {("NetbenchRailMatrix", "emucluster:nodes", "openmpi"): {"rail 1", "rail 2"}}
    (node,) = findings.on_every_rail(on_rail, ran)
    assert (node.kind, node.nodes, node.component) == ("faulty-link", "n3", "node n3 every rail")
    assert node.evidence.startswith("faulty node n3 on every rail (2 of 2): the node, not one "
                                    "rail")
    # named on one rail of two: that rail's, as found
    assert findings.on_every_rail(on_rail[1:], ran) == on_rail[1:]
    three = {key: rails | {"rail 3"} for key, rails in ran.items()}
    assert findings.on_every_rail(on_rail, three) == on_rail


def test_a_findings_file_round_trips_and_a_bad_one_is_one_line(tmp_path):
    path = tmp_path / "findings" / "nightly.json"
    findings.write(path, doc_of("judged-own"))
    doc, found = findings.read(path)
    assert doc["session"] == report("judged-own")["session_info"]["uuid"]
    assert [f.kind for f in found] == ["regression"]
    for text, said in (("{", "not a findings file"), ("[]", "no \"schema\""),
                       (json.dumps(dict(doc, version=2)), "findings version 2"),
                       (json.dumps(dict(doc, findings=[{"kind": "x"}])), "finding 1 cannot"),
                       (json.dumps(dict(doc, findings=[dict(doc["findings"][0],
                                                            retest_with="n[5-3]")])),
                        "finding 1 cannot"),
                       # what act once acted on, or misread (issue 67's probes)
                       (json.dumps(dict(doc, outcome="BROKEN")), '"outcome" is \'BROKEN\''),
                       (json.dumps(dict(doc, findings=None)), '"findings" is None'),
                       (json.dumps(dict(doc, findings=[dict(
                           doc["findings"][0], kind="faulty-link", confidence="map",
                           nodes="")])), "a map faulty-link finding that names no node")):
        path.write_text(text)
        with pytest.raises(findings.FindingsError, match=said):
            findings.read(path)
    with pytest.raises(findings.FindingsError, match="no such findings file"):
        findings.read(tmp_path / "none.json")


def test_compress_hostlist_is_the_inverse_of_slurms_notation():
    for names in (["n1", "n2", "n3", "n7"], ["gpu01", "gpu02", "gpu10"], ["vm"],
                  ["n9", "n10", "n11"], ["a", "b3", "b4"]):
        assert sorted(hostlists.expand_hostlist(hostlists.compress_hostlist(names))) == \
            sorted(names)
    assert hostlists.compress_hostlist(["n1", "n2", "n3", "n7"]) == "n[1-3,7]"
    assert hostlists.compress_hostlist(["n3"]) == "n3"


def node_finding(node: str, kind: str = "link-degraded", confidence: str = "confirmed"
                 ) -> Finding:
    return Finding(kind, confidence, node, f"LINK DEGRADED {node} net/eth0: 0.17 Gb/s, its 7 "
                   f"peer(s) 0.2 Gb/s (-15%)", check="NetbenchMatrix %node_count=8")


SESSION_DOC = {"session": "3f2a9c1e-aaaa-bbbb-cccc-000000000000"}


def planned(found, mode="drain", max_nodes=4, max_fraction=0.25):
    return act.plan(SESSION_DOC, found, act.parse_sinfo_json(SINFO), {"default": mode},
                    max_nodes, max_fraction)


def test_the_real_sinfo_json_is_read_with_an_administrators_drain_and_comment():
    nodes = act.parse_sinfo_json(SINFO)
    assert sorted(nodes) == ["fsx1", "fsx2", "fsx3", "fsx4"]
    assert nodes["fsx2"].out_of_service and not nodes["fsx2"].ours
    assert nodes["fsx2"].reason == "admin: bad DIMM" and nodes["fsx2"].reason_by == "root"
    assert nodes["fsx3"].comment == "hello world" and not nodes["fsx3"].out_of_service
    with pytest.raises(act.ActError, match="needs Slurm 21.08"):
        act.parse_sinfo_json("sinfo: error")
    # a dead slurmctld: sinfo exits 0 with an error and no node (tests/data/slurm/README.md)
    down = (DATA / "slurm" / "sinfo-json-22.05-controller-down.json").read_text()
    with pytest.raises(act.ActError) as err:
        act.parse_sinfo_json(down)
    assert str(err.value) == ("Slurm unreachable: `sinfo --json` lists no node (Unspecified "
                              "error); is slurmctld up? nothing done")


def test_a_confirmed_node_is_drained_with_the_suites_reason_as_one_quoted_command():
    actions, lines, refused = planned([node_finding("fsx1")])
    assert not refused and lines == []
    (drain,) = actions
    assert drain.action == "drain" and drain.command == [
        "scontrol", "update", "NodeName=fsx1", "State=DRAIN",
        "Reason=fabricsuite: LINK DEGRADED NetbenchMatrix -15% 3f2a9c1e"]
    # printed as the shell would take it back
    (printed,) = [ln for ln in drain.line().splitlines() if "would run:" in ln]
    assert shlex.split(printed.split("would run: ", 1)[1]) == drain.command
    # report mode: the command, not run; comment mode: the comment only
    (report_only,) = planned([node_finding("fsx1")], mode="report")[0]
    assert report_only.action == "" and report_only.command == drain.command
    (comment,) = planned([node_finding("fsx1")], mode="comment")[0]
    assert comment.command == ["scontrol", "update", "NodeName=fsx1",
                               "Comment=fabricsuite: LINK DEGRADED NetbenchMatrix -15% 3f2a9c1e"]


def test_someone_elses_drain_or_comment_is_left_alone_and_a_suspect_is_never_acted_on():
    (admin,) = planned([node_finding("fsx2")])[0]
    assert admin.action == "" and admin.command == [] and "someone else's" in admin.why and \
        "admin: bad DIMM" in admin.why
    (commented,) = planned([node_finding("fsx3")], mode="comment")[0]
    assert commented.action == "" and "'hello world' is someone else's" in commented.why
    (suspect,) = planned([node_finding("fsx1", confidence="suspected")])[0]
    assert suspect.command == [] and suspect.step == "suspected" and "re-test" in suspect.why
    (unknown,) = planned([node_finding("nosuch")], max_fraction=1.0)[0]
    assert unknown.command == [] and "not a node Slurm knows" in unknown.why


def test_the_cap_an_untrusted_session_and_a_component_drain_nothing():
    # 2 nodes of 4 at a cap of 25 %: nothing
    actions, lines, refused = planned([node_finding("fsx1"), node_finding("fsx4")])
    assert refused and [a for a in actions if a.command] == []
    assert lines[0].startswith("REFUSED: 2 node(s) named at once (fsx[1,4]), above the cap "
                               "of 1"), lines
    # --max-nodes is the smaller cap
    assert planned([node_finding("fsx1")], max_nodes=0)[2]
    # a broken harness beside a confirmed node: nothing
    broken = Finding("broken-harness", "confirmed", "", "BROKEN in sanity: netbench not found")
    actions, lines, refused = planned([node_finding("fsx1"), broken])
    assert refused and actions == [] and "cannot be trusted (broken-harness" in lines[-1]
    # an uplink is reported; its nodes are not drained one by one
    uplink = Finding("uplink", "map", "", "faulty uplink leaf1: 16 of 16 pairs",
                     component="uplink leaf1")
    actions, lines, refused = planned([uplink])
    assert not refused and actions == [] and lines == [
        "reported, no node drained (uplink uplink leaf1): faulty uplink leaf1: 16 of 16 pairs"]


def test_an_action_a_kill_cut_short_is_found_and_settled_from_what_slurm_shows(tmp_path):
    log = act.Log(tmp_path / "actions.jsonl")
    log.append({"id": "a1", "node": "fsx2", "action": "drain", "session": "s",
                "status": "started"})
    log.append({"id": "a2", "node": "fsx1", "action": "drain", "session": "s",
                "status": "started"})
    with open(log.path, "a") as out:
        out.write('{"id": "a3", "node": "fsx')  # the line a kill cut
    nodes = act.parse_sinfo_json(SINFO)
    nodes["fsx1"] = replace(nodes["fsx1"], flags=("DRAIN",), reason="fabricsuite: x")
    lines = act.reconcile(log, nodes)
    assert len(lines) == 2 and "fsx2 drain started" in lines[0] and "not done" in lines[0]
    assert "fsx1 drain" in lines[1] and "shows it done" in lines[1]
    assert log.unfinished() == [] and set(log.last_actions("drain")) == {"fsx1"}


def test_act_refuses_bad_input_in_one_line(tmp_path):
    bad = tmp_path / "f.json"
    bad.write_text("{")
    for options, said in (([str(bad)], "not a findings file"),
                          ([str(bad), "--max-fraction", "nan"], "give a count of 0"),
                          ([str(bad), "--mode-for", "leaf=drain"], "--mode-for 'leaf=drain'"),
                          (["--results", str(tmp_path)], "no findings in")):
        proc = subprocess.run([sys.executable, "-m", "fabricsuite.commands.cli", "act", *options],
                              capture_output=True, text=True, cwd=REPO_ROOT)
        assert proc.returncode == 2 and said in proc.stderr, (options, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_resume_returns_only_the_suites_own_retests_that_a_later_session_passed(tmp_path):
    log = act.Log(tmp_path / "actions.jsonl")
    nodes = act.parse_sinfo_json(SINFO)
    for node, action in (("fsx1", "drain"), ("fsx1", "retest"), ("fsx4", "drain")):
        log.append({"id": node + action, "node": node, "action": action, "status": "done"})
    since = log.last_actions("retest")["fsx1"]
    passed = {"session": "s2", "started": since, "passed_nodes": "fsx[1-4]"}
    actions, lines = act.plan_resume(passed, [], nodes, log)
    assert [(a.node, a.action) for a in actions] == [("fsx1", "resume"),
                                                     ("fabricsuite-retest", "unreserve")], lines
    # fsx4 was drained, never re-tested: a session cannot have run on it, it stays
    assert all(a.node != "fsx4" for a in actions)
    # a session older than the re-test says nothing of it
    actions, lines = act.plan_resume(dict(passed, started="2000-01-01T00:00:00Z"), [], nodes,
                                     log)
    assert actions == [] and "started before its re-test" in lines[0]
    # named again: drained again, the reservation kept for none
    again = node_finding("fsx1")
    actions, _ = act.plan_resume(dict(passed, passed_nodes="fsx[2-4]"), [again], nodes, log)
    assert [(a.node, a.action) for a in actions] == [("fsx1", "drain"),
                                                     ("fabricsuite-retest", "unreserve")]
    assert actions[0].command[-1].startswith("Reason=fabricsuite: LINK DEGRADED")


def test_a_pair_of_new_nodes_is_only_suspected_never_both_drained(references_on_nodes):
    data = on_nodes(report("judged-own"), ["n3", "n4"], ["n1", "n2"], passed=True)
    (found,) = findings.document(data)["findings"]
    assert (found["kind"], found["confidence"], found["nodes"]) == ("node-outlier",
                                                                     "suspected", "n[3-4]")


def test_a_new_node_failed_while_disturbed_is_suspected_never_passed(references_on_nodes):
    # n3's first run failed while another process took a CPU, its confirmation passed on the
    # known nodes: n3 was never measured quietly. Not PASSED (CI once: -30 % on a slow node,
    # a rank waiting 14 %, "PASSED: 1 case(s)"), not confirmed either: re-tested first.
    data = on_nodes(report("judged-own"), ["n3", "n1"], ["n1", "n2"], passed=True)
    first = [case for case in data["runs"][0]["testcases"]
             if case["name"].startswith("NetbenchPingPongBandwidth")]
    for case in first:
        case["interference"] = "rank 1 (n3, CPU 0) waited 14% of the run for its CPU"
    code, why = session.classify(data)
    assert code == 1 and why.startswith("NODE OUTLIER: "), why
    (found,) = findings.document(data)["findings"]
    assert (found["kind"], found["confidence"], found["nodes"], found["against"]) == (
        "node-outlier", "suspected", "n3", "n2"), found
    assert "while disturbed (rank 1 (n3, CPU 0) waited 14%" in found["evidence"], found
    assert [r.node for r in findings.suspects([Finding(**found)])] == ["n3"]
    # quiet, the same runs confirm n3 alone
    for case in first:
        case["interference"] = ""
    (found,) = findings.document(data)["findings"]
    assert (found["confidence"], found["against"]) == ("confirmed", ""), found


def test_the_outcome_names_each_node_and_its_step(references_on_nodes):
    outcome = session.summary_lines(on_nodes(report("judged-own"), ["n3"], ["n1"], passed=True),
                                    [])
    at = outcome.index("nodes named, and their step (`fabricsuite act`, docs/findings.md):")
    assert outcome[at + 1] == "  n3: node-outlier, confirmed: may be drained (fabricsuite act " \
                              "--mode drain)", outcome
    pair = session.summary_lines(on_nodes(report("judged-own"), ["n3", "n4"], ["n1"],
                                          passed=True), [])
    assert "  n[3-4]: node-outlier, suspected: re-test against nodes the references know " \
           "before any action" in pair, pair
    assert not any(line.startswith("nodes named") for line in
                   session.summary_lines(report("recorded-physics"), []))


def test_a_suspect_pair_is_settled_node_by_node_by_its_re_tests(references_on_nodes):
    doc = findings.document(on_nodes(report("judged-own"), ["n3", "n4"], ["n1", "n2"],
                                     passed=True))
    named = [Finding(**entry) for entry in doc["findings"]]
    # each with the known node in its mate's place: n3 with n2 (the run n3-n4 with n4
    # replaced), n4 with n1
    assert [(r.node, r.partners, r.settings) for r in findings.suspects(named)] == [
        ("n3", ["n2"], ()), ("n4", ["n1"], ())]
    # n3 fails against n2 and passes its confirmation on n1-n2: confirmed, alone
    bad = on_nodes(report("judged-own"), ["n3", "n2"], ["n1", "n2"], passed=True)
    assert findings.settle(doc, "n3", "n2", bad) == "confirmed"
    # the re-test of n4 broke, or wrote no report: it stays suspected
    assert findings.settle(doc, "n4", "n1", report("tcp-sanity-broken")) == "broken"
    assert findings.settle(doc, "n4", "n1", {}) == "undecided"
    # a first round on n4 that failed while disturbed, passed on the known nodes: undecided,
    # never cleared (the confirmation elsewhere says nothing of n4)
    disturbed = on_nodes(report("judged-own"), ["n4", "n1"], ["n1", "n2"], passed=True)
    for case in disturbed["runs"][0]["testcases"]:
        case["interference"] = "rank 1 (n4, CPU 0) waited 60% of the run for its CPU"
    assert findings.settle(doc, "n4", "n1", disturbed) == "undecided"
    # n4 passes against n1: cleared, one of the passed nodes
    good = report("recorded-physics")
    for run in good["runs"]:
        for case in run["testcases"]:
            case["job_nodelist"] = ["n4", "n1"]
    assert findings.settle(doc, "n4", "n1", good) == "cleared"
    assert [(f["kind"], f["confidence"], f["nodes"]) for f in doc["findings"]] == [
        ("node-outlier", "confirmed", "n3")]
    assert doc["findings"][0]["evidence"].startswith("re-tested against n2 (session ")
    assert "n4" in hostlists.expand_hostlist(doc["passed_nodes"])
    assert [r["result"] for r in doc["retests"]] == ["confirmed", "broken", "undecided",
                                                     "undecided", "cleared"]
    # what act then does: drain n3 alone
    (drain,) = act.plan({"session": "s"}, [Finding(**e) for e in doc["findings"]],
                        {"n3": act.Node("n3", "idle", (), "", "", ("p",))} |
                        {f"m{i}": act.Node(f"m{i}", "idle", (), "", "", ("p",))
                         for i in range(9)}, {"default": "drain"}, 4, 0.2)[0]
    assert drain.command[:3] == ["scontrol", "update", "NodeName=n3"]


def test_the_reason_says_how_far_a_link_lies_from_its_promise_or_its_peers():
    for evidence, change in (("LINK DEGRADED n3 net/eth0: 0.17 Gb/s, its 7 peer(s) 0.2 Gb/s",
                              "-15%"),
                             ("LINK DEGRADED n3 infiniband/mlx5_0/1: 2X 200 Gb/s, declared 4X "
                              "400 Gb/s", "-50%"),
                             ("LINK DEGRADED n3 net/eth0: down, declared 1 Gb/s", None)):
        reason = act.reason_of(Finding("link-degraded", "confirmed", "n3", evidence,
                                       check="NetbenchMatrix %node_count=8"), "6ccc3106-aaaa")
        assert reason == " ".join(w for w in ("fabricsuite: LINK DEGRADED NetbenchMatrix",
                                              change, "6ccc3106") if w), reason


def test_a_quick_maps_suspect_pair_is_re_tested_in_maps_of_its_own_and_settled():
    """Real reports of the emulated cluster (tests/data/cases/README.md): a quick map that
    measured node 3 in one pair only cannot tell it from its mate; each is re-tested in a full
    map of 4 with the nearest nodes the map measured healthy, node 3 is named alone there
    (its link, `map`), its mate passes (cleared); act drains node 3 alone."""
    doc = findings.document(report("map-quick-suspect-pair"))
    # beside it, a notice: this one round could not resolve a link 20 % slow
    (found, notice) = doc["findings"]
    assert notice["kind"] == "could-not-resolve" and notice["nodes"] == "", notice
    assert (found["kind"], found["confidence"], found["nodes"]) == (
        "faulty-link", "suspected", "fss[70743-70744]"), found
    assert found["retest_with"] == "fss[70741-70742,70745-70748]", found
    retests = findings.suspects([Finding(**found)])
    assert [(r.node, r.partners) for r in retests] == [
        ("fss70743", ["fss70742", "fss70745", "fss70741"]),
        ("fss70744", ["fss70742", "fss70745", "fss70741"])]
    assert {r.check for r in retests} == {"NetbenchMatrix%node_count=4%placement=per-node"}
    assert retests[0].settings == ("NetbenchMatrix.rounds=0",
                                   "NetbenchMatrix.require_reference=false")
    assert findings.settle(doc, "fss70743", ",".join(retests[0].partners),
                           report("map-retest-slow-node")) == "confirmed"
    assert findings.settle(doc, "fss70744", ",".join(retests[1].partners),
                           report("map-retest-its-mate")) == "cleared"
    (settled, _notice) = sorted(doc["findings"], key=lambda f: f["kind"] != "faulty-link")
    assert (settled["kind"], settled["confidence"], settled["nodes"], settled["component"]) == (
        "faulty-link", "map", "fss70743", "node fss70743"), settled
    assert settled["evidence"].startswith("re-tested against fss70742,fss70745,fss70741 "
                                          "(session ") and "(-33%)" in settled["evidence"]
    assert "fss70744" in hostlists.expand_hostlist(doc["passed_nodes"])
    nodes = {f"fss7074{i}": act.Node(f"fss7074{i}", "idle", (), "", "", ("p",))
             for i in range(1, 9)}
    (drain,), _lines, _refused = act.plan(doc, [Finding(**e) for e in doc["findings"]], nodes,
                                          {"default": "drain"}, 4, 0.2)
    assert drain.command[:3] == ["scontrol", "update", "NodeName=fss70743"], drain
    assert "Reason=fabricsuite: FAULTY LINK NetbenchMatrix -33% 361a06f8" in drain.command, \
        drain.command


def test_a_map_suspect_with_too_few_healthy_nodes_and_an_unexplained_pair():
    """Fewer than three healthy nodes of the map: not re-tested (it stays suspected); a bad pair
    no single component explains names both its nodes, suspected, host names with a "-" split
    where both halves are nodes of the map."""
    line = "faulty node n3 or node n4: 1 of 1 pairs through it bad"
    (few,) = findings.map_findings_of(line, {"check": "NetbenchMatrix %node_count=4"},
                                      ["n1", "n2", "n3", "n4"])
    assert few.retest_with == "n[1-2]" and findings.suspects([few]) == []
    # the nearest healthy nodes in Slurm's order (n9 and n11 beside n10, not n1)
    (ten,) = findings.map_findings_of("faulty node n10 or node n12: 1 of 1 pairs through it bad",
                                      {"check": "NetbenchMatrix %node_count=12"},
                                      [f"n{i}" for i in range(1, 13)])
    assert findings.suspects([ten])[0].partners == ["n9", "n11", "n8"]
    nodes = ["rack-1", "rack-2", "rack-3", "rack-4", "rack-5"]
    (pair,) = findings.map_findings_of(
        "no single component explains 1 bad pair(s): rack-2-rack-5", {}, nodes)
    assert (pair.kind, pair.confidence, pair.node_names(), pair.component) == (
        "faulty-link", "suspected", ["rack-2", "rack-5"], "pair rack-2-rack-5")
    assert pair.retest_with == "rack-[1,3-4]"


def test_a_map_that_could_not_resolve_its_smallest_fault_is_a_notice_that_names_no_node():
    """A real quick map that passed although node 8 was slow (tests/data/cases/README.md): its
    noise hid the fault, and it said so. The findings name that, as a notice: no node, nothing
    acted on, the pass left a pass; act prints it."""
    doc = doc_of("map-quick-unresolved")
    (notice,) = doc["findings"]
    assert (notice["kind"], notice["nodes"], notice["component"]) == (
        "could-not-resolve", "", "the map"), notice
    assert notice["evidence"].startswith("could not resolve a link 20% slow, the smallest "
                                         "fault it looks for"), notice
    assert doc["outcome"]["status"] == session.WITHIN
    nodes = {f"fsac5931{i}": act.Node(f"fsac5931{i}", "idle", (), "", "", ("p",))
             for i in range(1, 9)}
    actions, lines, refused = act.plan(doc, [Finding(**notice)], nodes, {"default": "drain"},
                                       4, 0.2)
    assert actions == [] and not refused, actions
    assert any(line.startswith("noted, nothing to act on (could-not-resolve): could not "
                               "resolve") for line in lines), lines


def test_an_environments_striping_is_a_whole_number_of_rails_or_one_line():
    from types import SimpleNamespace

    from reframe.core.exceptions import EnvironError

    from fabricsuite.checks.rails import env_stripes

    assert env_stripes(SimpleNamespace(name="mpich", extras={}), 4) == 4
    assert env_stripes(SimpleNamespace(name="mpich", extras={"striped_over": 1}), 4) == 1
    for bad in ("2", 0, True):
        with pytest.raises(EnvironError) as err:
            env_stripes(SimpleNamespace(name="mpich", extras={"striped_over": bad}), 4)
        assert "environment mpich: extras.striped_over" in str(err.value) and \
            "\n" not in str(err.value)


def _bests(rail2: dict[str, float], hosts=("n1", "n2", "n3", "n4")) -> dict:
    """Each node's best pair per rail as NetbenchRailMatrix records it (node_best_MBps): rail 1
    healthy at about 25 MB/s (200 Mbit), rail 2 as given (healthy where not given)."""
    key = ("NetbenchRailMatrix", "emucluster:nodes", "openmpi")
    display = "NetbenchRailMatrix %node_count=4 %placement=per-node %rail=rail{}"
    rail1 = {h: 24.9 + 0.05 * i for i, h in enumerate(hosts)}
    return {key: {1: (display.format(1), rail1),
                  2: (display.format(2), {h: rail2.get(h, 25.0) for h in hosts})}}


def test_a_rail_slower_than_its_siblings_on_one_node_is_that_nodes_rail():
    (slow,) = findings.slower_than_siblings(_bests({"n3": 12.4}), [])
    assert (slow.kind, slow.confidence, slow.nodes, slow.component) == (
        "faulty-link", "map", "n3", "node n3 rail 2")
    assert slow.evidence.startswith("RAIL SLOWER THAN ITS SIBLINGS n3 rail 2: best pair 12.4 "
                                    "MB/s, -50% against rail 1")
    assert act.reason_of(slow, "319ab2f4-aaaa") == \
        "fabricsuite: FAULTY LINK NetbenchRailMatrix rail 2 -50% 319ab2f4"
    # healthy rails within 1 %, and a node named already by its rail's map: nothing new
    assert findings.slower_than_siblings(_bests({"n2": 24.7}), []) == []
    assert findings.slower_than_siblings(_bests({"n3": 12.4}), [slow]) == []


def test_a_rail_slower_on_most_nodes_is_the_rail_not_the_nodes():
    (rail,) = findings.slower_than_siblings(
        _bests({"n1": 15.0, "n2": 15.1, "n3": 14.9, "n4": 15.0}), [])
    assert (rail.kind, rail.nodes, rail.component) == ("rail", "", "rail 2")
    assert "on 4 of 4 node(s)" in rail.evidence
    actions, _lines, refused = planned([rail])
    assert not refused and actions == []
    # two nodes share their one pair: either node's link or the switch, so the rail, no node
    (pair,) = findings.slower_than_siblings(_bests({"n1": 12.0, "n2": 12.0},
                                                   hosts=("n1", "n2")), [])
    assert (pair.kind, pair.nodes) == ("rail", "")


def test_act_with_its_log_under_a_file_is_one_line_before_anything_is_done(tmp_path, capsys):
    from fabricsuite.commands.cli import main

    path = tmp_path / "findings.json"
    findings.write(path, doc_of("judged-own"))
    (tmp_path / "file").write_text("")
    for log, said in ((tmp_path / "file" / "actions.jsonl", "cannot keep act's log and lock in "
                       f"{tmp_path / 'file'} (File exists); give --log a file"),
                      (tmp_path, f"--log {tmp_path}: not a file")):
        assert main(["act", str(path), "--log", str(log)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and said in err, err


def test_act_refuses_a_nightly_that_never_finished_and_never_repeats_an_action(tmp_path,
                                                                            capsys):
    """A nightly that died left its pending findings the newest: refused before Slurm is
    asked anything (exit 1), --force or not. An action a session's step did already (the log's
    own entries) is left out, saying so; another action on the node (a drain after a comment)
    is no repeat."""
    from fabricsuite.commands.cli import main

    path = tmp_path / "findings" / "nightly-1.json"
    findings.write(path, doc_of("judged-own"))
    pending = tmp_path / "findings" / "nightly-2.json"
    findings.write(pending, findings.pending_document("2026-12-06T02:00:00Z", 4242))
    for mode in ("report", "drain"):
        assert main(["act", "--results", str(tmp_path), "--mode", mode, "--force",
                     "even so"]) == 1
        out = capsys.readouterr().out
        assert f"REFUSED: {pending} is the findings of a nightly that never finished " \
               f"(started 2026-12-06T02:00:00Z" in out, out
    # yesterday's drain of n3 by this session, as act logged it (before steps were logged)
    log = act.Log(tmp_path / "act" / "actions.jsonl")
    log.append({"id": "a1", "node": "n3", "action": "drain", "session": "s1", "status": "done"})
    drain = act.Action("n3", "drain", "LINK DEGRADED", ["scontrol", "update"], "confirmed")
    comment = act.Action("n3", "comment", "LINK DEGRADED", ["scontrol", "update"], "confirmed")
    kept, said = act.without_repeats([drain, comment], log, "s1", "act")
    assert kept == [comment] and len(said) == 1
    assert said[0].startswith("n3: left alone: session s1 was acted on already (drain at ")
    assert said[0].endswith("--force REASON acts on it again")
    # another session, or another step, is no repeat
    assert act.without_repeats([drain], log, "s2", "act") == ([drain], [])
    assert act.without_repeats([drain], log, "s1", "retest") == ([drain], [])


def test_act_refuses_findings_a_later_session_of_the_system_superseded(tmp_path, capsys):
    """Yesterday's findings given by name, after today's nightly ran (or died), are not the
    present: refused, naming the later session (or the nightly that never finished), before
    Slurm is asked anything; --force REASON acts on them all the same. Another system's later
    session supersedes nothing."""
    from fabricsuite.commands.cli import main

    old = tmp_path / "findings" / "nightly-1.json"
    yesterday = doc_of("judged-own")
    findings.write(old, yesterday)
    assert yesterday["systems"] == ["local"] and yesterday["started"]
    today = dict(yesterday, session="later-session-uuid", started="2099-01-01T00:00:00Z")
    later = tmp_path / "findings" / "nightly-2.json"
    findings.write(later, dict(today, systems=["other"]))
    assert act.superseded(yesterday, old, tmp_path) is None
    findings.write(later, today)
    assert main(["act", str(old), "--results", str(tmp_path), "--mode", "report"]) == 1
    out = capsys.readouterr().out
    assert f"REFUSED: {old} is session {yesterday['session'][:8]} of {yesterday['started']}, " \
           f"and session later-se started since (2099-01-01T00:00:00Z, {later})" in out, out
    assert act.superseded(today, later, tmp_path) is None  # the newest is the present
    findings.write(later, findings.pending_document("2099-01-01T00:00:00Z", 4242))
    assert main(["act", str(old), "--results", str(tmp_path), "--mode", "report"]) == 1
    assert "a nightly that never finished (it died before its findings) started since" in \
        capsys.readouterr().out
    # --force: not refused for it (act goes on to Slurm, here a stand-in that stops it)
    import argparse

    parser = argparse.ArgumentParser()
    act.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["act", str(old), "--results", str(tmp_path), "--mode", "report",
                              "--force", "the re-run after the outage"])

    def slurm(argv):
        raise RuntimeError("asked Slurm")

    with pytest.raises(RuntimeError, match="asked Slurm"):
        act.act(args, runner=slurm)


def test_a_job_whose_node_list_slurm_never_reported_names_its_ranks_hosts_never_none():
    """A real re-test on the emulated cluster (CI 2026-12-06, tests/data/cases/README.md): the
    job, a second long, ended before ReFrame's first poll and its node list is ["None"]. Its
    findings named a node "None" and not the node it passed on. The hosts the ranks reported
    (`rank_hosts`, written by netbench's checks since) stand in; without them the case names no
    node, never "None"."""
    data = report("nodelist-unreported")
    (case,) = [c for run in data["runs"] for c in run["testcases"]
               if c["name"].startswith("NetbenchPingPong ")]
    assert case["job_nodelist"] == ["None"] and case["result"] == "pass"
    doc = findings.document(data)
    assert doc["nodes"] == "" and doc["passed_nodes"] == "", doc
    case["rank_hosts"] = ["fss87363", "fss87361"]  # as the check writes them now
    doc = findings.document(data)
    assert hostlists.expand_hostlist(doc["passed_nodes"]) == ["fss87361", "fss87363"], doc


@pytest.mark.parametrize("extra, forwarded", [
    (["-n", "NetbenchMatrix", "-S", "rounds=1", "-Sconfirm_pause_s=1"],
     ["-Srounds=1", "-Sconfirm_pause_s=1"]),
    (["--max-retries=2", "-p", "openmpi", "--max-retries", "0"], ["--max-retries=1"]),
    (["-S", "x=1", "--max-retries=2"], ["-Sx=1", "--max-retries=2"]),
])
def test_a_retest_takes_the_sessions_settings_and_rounds_never_its_selection(extra, forwarded):
    """A re-test of suspects (--retest-suspects) runs with the session's -S settings and its
    confirmation rounds where it gave them (the last --max-retries, at least 1: a point-to-
    point re-test is settled by a round on nodes the references know), none of its selection;
    without --max-retries, the mode's."""
    from fabricsuite.commands import nightly

    assert nightly.retest_options(extra) == forwarded
