"""The case model (fabricsuite/data/cases.py) on real stored run reports
(tests/data/cases/README.md): every health class, the evidence of each case, and the workflows
that take its rule: a disturbed run is never a reference sample, a history point or a compare
sample."""

from __future__ import annotations

import copy
import json
from collections import Counter

import pytest
from case_support import on_nodes, report, session_of, sessions_of_every_verdict

from fabricsuite.commands import baseline, history, session
from fabricsuite.data import cases, machine


def health_of(data: dict, **flags) -> dict[str, str]:
    return {case.check: case.health for case in cases.read(data, **flags)}


def test_a_recorded_session_of_a_new_machine():
    found = cases.read(report("recorded-kind"))
    assert {c.check: c.health for c in found} == {
        "NetbenchPingPong": cases.RECORDED, "NetbenchPingPongBandwidth": cases.RECORDED}
    bandwidth = next(c for c in found if c.check == "NetbenchPingPongBandwidth")
    assert bandwidth.last["reference_origin"] == "kind:amd-epyc-1x2x1-24gib"
    assert bandwidth.machine == "amd-epyc-1x2x1-24gib.3abda07c"
    assert bandwidth.partition == "local:default" and bandwidth.environ == "openmpi"
    assert bandwidth.levels == (("distance", "same-l3"),)
    assert bandwidth.evidence.nodes == ("vm",) and bandwidth.evidence.transport == "vader"
    assert bandwidth.evidence.disturbance == "" and bandwidth.evidence.cpu_wait < 0.05
    value, unit, better = bandwidth.figures()["bandwidth_1MiB_MBps"]
    assert unit == "MB/s" and better == "higher" and value > 1000
    assert all(cases.is_sample(c.last) for c in found)


def test_a_confirmed_regression_and_the_passes_beside_it():
    data = report("judged-own")
    assert health_of(data) == {"NetbenchPingPong": cases.PASSED,
                               "NetbenchOverlap": cases.PASSED,
                               "NetbenchPingPongBandwidth": cases.REGRESSION}
    bandwidth = next(c for c in cases.read(data) if c.check == "NetbenchPingPongBandwidth")
    # confirmed per variable: the peak failed in the first run and the last, the 1 MiB figure
    # in the last only
    assert cases.confirmed_variables(bandwidth.last, bandwidth.first) == {"bandwidth_peak_MBps"}
    assert session.classify(data)[0] == session.REGRESSED


def test_a_failure_its_confirmation_does_not_uphold_is_a_transient():
    """The real bandwidth case failed bandwidth_peak_MBps in all four rounds and
    bandwidth_1MiB_MBps in the last only. As if the peak had been inside in every round after
    the first: each variable outside in one round of four, a transient."""
    data = report("judged-own")
    for run in data["runs"][1:]:
        for case in run["testcases"]:
            if case["name"].startswith("NetbenchPingPongBandwidth"):
                case["perfvalues"]["local:default:bandwidth_peak_MBps"][5] = "pass"
    assert health_of(data)["NetbenchPingPongBandwidth"] == cases.TRANSIENT
    assert session.classify(data)[0] == session.WITHIN


def test_the_verdict_weighs_every_round_not_the_last_alone():
    """Issue 49: a real regression passed because its last round decided (-83 %, -83 %, then
    -38 % inside a -44 % bound). The real bandwidth case's peak was outside in all four rounds;
    as if the last round had passed: outside in three rounds of four, the median round outside,
    a confirmed regression; with the rule before (the last run decides) a pass. Outside in the
    first round only, then inside: a transient, the confirmation passed."""
    data = report("judged-own")
    last = data["runs"][-1]["testcases"]
    bandwidth = next(c for c in last if c["name"].startswith("NetbenchPingPongBandwidth"))
    bandwidth.update(result="pass", fail_phase=None, fail_reason=None)
    for perf in bandwidth["perfvalues"].values():
        perf[5] = "pass"
    (case,) = [c for c in cases.read(data) if c.check == "NetbenchPingPongBandwidth"]
    assert len(case.rounds) == 4
    assert case.health == cases.REGRESSION
    assert cases.health(case.last, case.first) == cases.PASSED  # the rule before
    assert cases.confirmed_variables(case.last, case.first, list(case.rounds)) == {
        "bandwidth_peak_MBps"}
    assert session.classify(data)[0] == session.REGRESSED
    (line,) = [ln for ln in session.verdict_lines(data) if ln.startswith("REGRESSION ")]
    assert "bandwidth_peak_MBps" in line and "outside in 3 of 4 rounds: " in line, line
    # the findings file names the figure too (it said only "REGRESSION" when the last round,
    # which passed, had none outside)
    from fabricsuite.data import findings

    (found,) = [f for f in findings.document(data)["findings"] if f["kind"] == "regression"]
    assert found["evidence"].startswith("REGRESSION bandwidth_peak_MBps "), found
    # one round outside, then inside (ReFrame stops at the first pass): a transient
    data["runs"] = data["runs"][:1] + data["runs"][-1:]
    (case,) = [c for c in cases.read(data) if c.check == "NetbenchPingPongBandwidth"]
    assert case.health == cases.PASSED and len(case.rounds) == 2
    assert any(ln.startswith("confirmation passed: NetbenchPingPongBandwidth")
               for ln in session.verdict_lines(data))


def test_a_run_beside_a_busy_loop_is_disturbed_pass_or_fail():
    data = report("busyloop-disturbed")
    found = cases.read(data)
    assert {c.check: c.health for c in found} == {
        "NetbenchPingPong": cases.DISTURBED, "NetbenchPingPongBandwidth": cases.DISTURBED}
    passed = next(c for c in found if c.check == "NetbenchPingPong")
    assert passed.last["result"] == "pass"  # passed while disturbed: still no sample
    assert not cases.is_sample(passed.last)
    assert cases.sample_problem(passed.last).startswith("were disturbed")
    assert cases.disturbers(passed.evidence.disturbance) == ["busyloop"]
    assert passed.evidence.cpu_wait > 0.5
    # the session's verdict: interference (exit 2), not a regression
    assert session.classify(data)[0] == session.BROKEN


def test_gross_breakage_against_the_kind_is_a_regression_that_records_nothing():
    data = report("tcp-kind-regression")
    assert set(health_of(data).values()) == {cases.REGRESSION}
    assert len(machine.kind_regressions(data)) == 2
    assert machine.kind_regressions(report("recorded-kind")) == []


def test_a_run_refused_in_sanity_is_broken_and_an_interrupted_session_is_interrupted():
    assert health_of(report("tcp-sanity-broken")) == {"NetbenchPingPong": cases.BROKEN}
    assert set(health_of(report("judged-own"), interrupted=True).values()) == {
        cases.INTERRUPTED}
    # a session killed with its nightly (SIGKILL: nothing kept it apart) shows it by the cases
    # ReFrame aborted on the SIGTERM it got: none of its cases is a sample, passed ones included
    killed = report("recorded-kind")
    killed["runs"][0]["testcases"][-1]["result"] = "abort"
    assert set(health_of(killed).values()) == {cases.INTERRUPTED}
    assert baseline.collect([killed], ["killed.json"], "local").samples == []


def test_a_case_not_measured_again_is_broken_by_the_round_that_ran(tmp_path):
    """A real session on TCP loopback (tests/data/cases/README.md): the first run and its
    confirmation refused in sanity, the next two rounds refused to run again. Every reader
    names the sanity failure and its reason, never the refusal: the outcome, JUnit, the
    findings and the page."""
    import xml.etree.ElementTree as ET

    from fabricsuite import NOT_MEASURED_AGAIN
    from fabricsuite.commands.report.data import summary
    from fabricsuite.data import findings

    data = report("tcp-sanity-refused")
    (case,) = [c for c in cases.read(data) if c.check == "NetbenchPingPong"]
    assert [r.get("fail_phase") for r in case.rounds] == ["sanity", "sanity", "run", "run"]
    assert all(NOT_MEASURED_AGAIN in r["fail_reason"] for r in case.rounds[2:])
    assert case.health == cases.BROKEN and case.last_ran is case.rounds[1]
    said = "\n".join(session.summary_lines(data, []))
    assert ("BROKEN NetbenchPingPong local:default openmpi same-l3: sanity: sanity error: "
            "carried by tcp") in said, said
    assert NOT_MEASURED_AGAIN not in said
    code, why = session.classify(data)
    doc = findings.document(data, code, why)
    (broken,) = [f for f in doc["findings"] if f["kind"] == "broken-harness"]
    assert broken["evidence"].startswith("BROKEN in sanity: sanity error: carried by tcp")
    session.write_junit(data, [], tmp_path / "junit.xml")
    (error,) = ET.parse(tmp_path / "junit.xml").getroot().iter("error")
    assert "carried by tcp" in error.get("message"), error.attrib
    (failed,) = summary(data, "local").failed
    assert failed.phase == "sanity", failed
    # a round that ran is never taken for a refusal: the session before the rule
    (before,) = [c for c in cases.read(report("tcp-sanity-broken"))
                 if c.check == "NetbenchPingPong"]
    assert before.last_ran is before.last


def test_a_session_whose_reframe_alone_got_sigterm_counts_nowhere(tmp_path, monkeypatch):
    """A real report of ReFrame ended by SIGTERM from someone else (tests/data/cases/README.md):
    it was `PASSED`, `session 1 of 3 recorded`, and its passed case a reference sample
    (issue 53). Now interrupted to every reader: the outcome, the machine's count, the
    baseline, history, the page and the findings."""
    from fabricsuite.commands.report.data import stored_cases
    from fabricsuite.data import findings

    data = report("interrupted-reframe-sigterm")
    assert set(health_of(data).values()) == {cases.INTERRUPTED}
    status, why = session.classify(data)
    assert status == session.BROKEN and why.startswith("INTERRUPTED: ReFrame aborted 1 case(s) "
                                                       "(received signal 15)"), why
    said = "\n".join(session.summary_lines(data, []))
    assert "2 failed (2 interrupted)" in said and "outcome: INTERRUPTED" in said, said
    key = "probe-box-1x2x1-24gib"
    assert machine.own_runs(data, key) == []
    (tmp_path / "run-report-1.json").write_text(json.dumps(data))
    assert machine.recorded_sessions(tmp_path, key) == []
    assert baseline.collect([data], ["r.json"], "local").samples == []
    assert history.collect([data], "local", None)[0] == []
    assert stored_cases([data], "local", None)[:2] == ([], [])
    assert [f["kind"] for f in findings.document(data, status, why)["findings"]] == [
        findings.INTERRUPTED]


def test_a_session_disturbed_in_every_run_is_recorded_but_set_aside(tmp_path, monkeypatch,
                                                                       capsys):
    """`python -m fabricsuite.data.machine` counted a disturbed first session as recorded, where the
    outcome said it was set aside (issue 53): both count the quiet sessions now."""
    key = "amd-epyc-1x2x1-24gib.3abda07c"
    reports = tmp_path / "results" / "reports"
    reports.mkdir(parents=True)
    for n, name in enumerate(("busyloop-disturbed", "recorded-kind")):
        (reports / f"run-report-{n}.json").write_text(json.dumps(report(name)))
    recorded = machine.recorded_sessions(reports, key)
    assert len(recorded) == 2 and len(machine.quiet_sessions(recorded, key)) == 1
    monkeypatch.setenv("FABRICSUITE_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("RFM_REFERENCE_PREFIX", str(tmp_path / "refs"))
    monkeypatch.setenv(machine.OVERRIDE, key)
    assert machine.main([]) == 0
    said = capsys.readouterr().out
    assert "none yet (1 of 3 sessions recorded in " in said and ", 1 more set aside: disturbed)" \
        in said, said


def test_an_edited_copy_of_a_session_is_that_session_to_every_reader(tmp_path, capsys):
    """Baseline and history took an edited copy of a session (the same uuid) as another run,
    where compare refused the uuid given twice (issue 53): one uuid, one session."""
    from fabricsuite.data.store import report_files

    data = report("recorded-kind")
    edited = copy.deepcopy(data)
    for run in edited["runs"]:
        for case in run["testcases"]:
            for perf in (case.get("perfvalues") or {}).values():
                perf[0] = perf[0] * 2 if isinstance(perf[0], float) else perf[0]
    collected = baseline.collect([data, edited], ["a.json", "b.json"], "local")
    assert collected.copies == ["b.json (a copy of a.json)"], collected.copies
    paths = []
    for name, content in (("a.json", data), ("b.json", edited)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(content))
    assert [p.name for p, _ in report_files(paths)] == ["a.json"]
    assert "b.json is a copy of" in capsys.readouterr().err
    for name, content in (("run-report-1.json", data), ("run-report-2.json", edited)):
        (tmp_path / name).write_text(json.dumps(content))
    assert len(machine.recorded_sessions(tmp_path, "amd-epyc-1x2x1-24gib.3abda07c")) == 1


def test_a_known_finding_that_no_longer_fails_is_a_stale_reference_not_a_transient():
    """A real session whose $xfail reference was met in every round (ReFrame's xpass): it was
    a transient and PASSED (issue 53); now BROKEN naming the variable, a finding of its own."""
    from fabricsuite.data import findings

    data = report("stale-known-finding")
    assert set(health_of(data).values()) == {cases.BROKEN}
    status, why = session.classify(data)
    assert status == session.BROKEN and "1 known finding(s) no longer fail (" \
        "latency_8B_median_us of NetbenchPingPong" in why and "update the reference" in why, why
    found = findings.document(data, status, why)["findings"]
    assert [(f["kind"], f["nodes"]) for f in found] == [(findings.STALE_REFERENCE, "")], found
    assert cases.sample_problem(data["runs"][-1]["testcases"][-1]) is not None


def test_every_health_class_is_reached_by_a_real_report():
    seen = set()
    for name in ("recorded-kind", "judged-own", "busyloop-disturbed", "tcp-sanity-broken"):
        seen |= set(health_of(report(name)).values())
    seen |= set(health_of(report("judged-own"), interrupted=True).values())
    transient = report("judged-own")
    for run in transient["runs"][1:]:
        for case in run["testcases"]:
            if case["name"].startswith("NetbenchPingPongBandwidth"):
                case["perfvalues"]["local:default:bandwidth_peak_MBps"][5] = "pass"
    seen |= set(health_of(transient).values())
    assert seen == set(cases.HEALTH)


def test_history_and_compare_leave_a_disturbed_run_out():
    quiet, disturbed = report("recorded-kind"), report("busyloop-disturbed")
    series, sessions = history.collect([quiet, disturbed], "local")
    assert sessions == 2
    for s in series:
        assert len(s.points) == 1, (s.key, s.points)  # the quiet session's point only


def test_a_baseline_sets_disturbed_runs_aside_and_says_by_whom():
    quiet, disturbed = report("recorded-kind"), report("busyloop-disturbed")
    collected = baseline.collect([quiet, disturbed], ["quiet.json", "disturbed.json"], "local")
    assert collected.left_out["were disturbed (another process took their CPUs)"] >= 1
    key = "NetbenchPingPong local:default openmpi same-l3 latency_8B_median_us"
    assert set(collected.set_aside[key]) == {disturbed["session_info"]["uuid"]}
    lines = collected.set_aside_lines()
    assert any("1 of 2 sessions set aside for" in line and "disturbed by busyloop" in line
               for line in lines), lines
    # nothing of the disturbed session is a sample
    for samples in collected.samples:
        assert samples.sessions == {quiet["session_info"]["uuid"]}, samples.key


@pytest.mark.parametrize("cause, names", [
    ("rank 0 (vm, CPU 0) waited 70% of the run for its CPU; taken by: python(10122):50%, "
     "f951(25428):27%", ["python", "f951"]),
    ("rank 1 (vm, CPU 1) waited 37% of the run for its CPU; taken by: processes gone before "
     "the run ended (32%)", ["unseen processes"]),
])
def test_the_disturbers_are_named(cause, names):
    assert cases.disturbers(cause) == names


def test_a_retried_case_ends_in_its_last_round():
    data = report("busyloop-disturbed")
    assert len(data["runs"]) == 4
    final = {c["name"]: c for c in cases.final_cases(data) if c["result"] != "skip"
             and not c.get("fixture")}
    pingpong = next(c for name, c in final.items() if name.startswith("NetbenchPingPong "))
    assert pingpong["result"] == "pass"  # its last round, not its first
    first = cases.first_runs(data)
    assert first[cases.case_key(pingpong)]["result"] == "fail"
    # a copy with the rounds in one run is one case per test case still
    flat = copy.deepcopy(data)
    flat["runs"] = [{"testcases": [c for run in data["runs"] for c in run["testcases"]]}]
    assert len([c for c in cases.final_cases(flat) if c["result"] != "skip"
                and not c.get("fixture")]) == 2


def test_history_and_compare_say_what_they_set_aside():
    line = history.set_aside([report("recorded-kind"), report("busyloop-disturbed")], "local")
    assert line == "2 run(s) in 1 session(s) set aside: disturbed by busyloop", line
    assert history.set_aside([report("recorded-kind")], "local") == ""


def test_a_failure_only_on_a_node_the_references_never_saw_is_a_node_outlier(
        references_on_nodes):
    data = on_nodes(report("judged-own"), ["n3"], ["n1"], passed=True)
    code, why = session.classify(data)
    assert code == session.REGRESSED and why.startswith("NODE OUTLIER: 1 case(s) outside only "
                                                        "on node(s) the references never saw "
                                                        "(n3)"), why
    lines = session.verdict_lines(data)
    (line,) = [ln for ln in lines if ln.startswith("NODE OUTLIER ")]
    assert "n3: first run bandwidth_peak_MBps -" in line and "on n3; within the references on "\
           "n1 (taken on n1, n2): the node, not the fabric" in line, line


def test_a_disturbed_first_run_or_confirmation_still_names_the_new_node(references_on_nodes):
    """A pass on known nodes after a failure on a new one names the new node, whichever run
    another process disturbed. A confirmation that passed on known nodes while disturbed
    passed all the same (another process only slows a run), so the quiet first run's failure
    is the new node's. A first run that failed while disturbed never measured the new node
    quietly, and the pass elsewhere says nothing of it: a NODE OUTLIER too, only suspected
    (fabricsuite.data.findings), the line saying so. Both had been PASSED, exit 0, naming nothing
    (the CI host, 2026-12-02: a node at 700 Mbit -28 %, its confirmation on nodes 1-2 waited
    13 % for a CPU; -30 %, its first run's rank waited 14 %). Outcome and lines agree
    (bench/node_outliers_emucluster.py had met PASSED beside a NODE OUTLIER line)."""
    for index in (0, -1):
        data = on_nodes(report("judged-own"), ["n3"], ["n1"], passed=True)
        for case in data["runs"][index]["testcases"]:
            if case["name"].startswith("NetbenchPingPongBandwidth"):
                case["interference"] = "rank 0 (n3, CPU 0) waited 30% of the run for its CPU"
        code, why = session.classify(data)
        (named,) = [ln for ln in session.verdict_lines(data) if ln.startswith("NODE OUTLIER")]
        assert code == session.REGRESSED and why.startswith("NODE OUTLIER: ") and "(n3)" in why
        assert ("while disturbed (rank 0 (n3" in named) is (index == 0), (index, named)


def test_a_failure_on_known_nodes_too_is_a_regression_that_names_the_new_node(
        references_on_nodes):
    data = on_nodes(report("judged-own"), ["n3"], ["n1"], passed=False)
    assert session.classify(data)[1].startswith("REGRESSION: 1 case(s)")
    # still failing on n3 alone (no known node to confirm on): named
    data = on_nodes(report("judged-own"), ["n3"], ["n3"], passed=False)
    (line,) = [ln for ln in session.verdict_lines(data) if ln.startswith("REGRESSION ")]
    assert line.endswith("on node(s) the references never saw: n3 (taken on n1, n2)"), line


def test_a_node_outlier_is_a_junit_failure_of_its_own(references_on_nodes, tmp_path):
    import xml.etree.ElementTree as ET

    path = tmp_path / "junit.xml"
    session.write_junit(on_nodes(report("judged-own"), ["n3"], ["n1"], passed=True), [], path)
    suite = ET.parse(path).getroot().find("testsuite")
    (failure,) = suite.findall("testcase/failure")
    assert failure.get("type") == "node-outlier" and "n3" in failure.get("message")


def test_references_record_the_nodes_they_were_taken_on_and_the_spread_between_them(tmp_path):
    from fabricsuite.data.references import reference_nodes

    runs = []
    for n, (nodes, bandwidth) in enumerate([(["n1", "n2"], 1000.0), (["n1", "n2"], 1010.0),
                                            (["n3", "n4"], 900.0), (["n3", "n4"], 905.0)]):
        data = report("recorded-kind")
        data["session_info"]["uuid"] = f"s{n}"
        for case in data["runs"][0]["testcases"]:
            case["job_nodelist"] = nodes
            case["jobid"] = f"{case.get('jobid')}-s{n}"  # its own session's job
            for key, perf in (case.get("perfvalues") or {}).items():
                if key.endswith("bandwidth_1MiB_MBps"):
                    perf[0] = bandwidth
        runs.append(data)
    collected = baseline.collect(runs, [f"r{n}" for n in range(4)], "local")
    (samples,) = [s for s in collected.samples if s.variable == "bandwidth_1MiB_MBps"]
    stats = baseline.noise(samples)
    assert stats["nodes"] == ["n1", "n2", "n3", "n4"]
    assert stats["between_nodes"] == pytest.approx((1005 - 902.5) / 952.5, rel=1e-2)
    # what a reference file records, the confirmation reads back (the Slurm --nodelist)
    import yaml

    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump({"_statistics": {
        "NetbenchPingPongBandwidth cluster:cpu openmpi other-node bandwidth_1MiB_MBps":
            {"nodes": ["n1", "n2"]},
        "NetbenchPingPong cluster:cpu openmpi other-node latency_8B_median_us":
            {"nodes": ["n5", "n6"]}}}))
    assert reference_nodes("cluster", "NetbenchPingPongBandwidth",
                           ["cluster:cpu", "openmpi", "other-node"], tmp_path) == ["n1", "n2"]


def test_acceptance_sessions_take_the_next_nodes_round_the_partition():
    from fabricsuite.checks.judged_check import rotated_nodes

    nodes = ["emu10", "emu2", "emu1", "emu3", "emu4"]  # as scontrol lists them, any order
    assert [rotated_nodes(nodes, 2, k) for k in range(4)] == [
        ["emu1", "emu2"], ["emu3", "emu4"], ["emu10", "emu1"], ["emu2", "emu3"]]
    # a case that needs every node (the all-pairs map, the largest scale) is the scheduler's
    assert rotated_nodes(nodes, 5, 1) == [] and rotated_nodes(nodes, 9, 0) == []


def test_confirming_on_known_nodes_replaces_the_sessions_own_node_choice():
    """`-J--nodelist=n3,n4` (a nightly forced onto new nodes) would follow the confirmation's
    --nodelist in the job script, and sbatch takes the last: the confirmation drops it."""
    from fabricsuite.checks.judged_check import without_node_options

    assert without_node_options(["--nodelist=n3,n4", "-w n3", "-wn3", "--exclude=n1",
                                 "-x n2", "--exclusive", "--mem=4G", "-N 2"]) == [
        "--exclusive", "--mem=4G", "-N 2"]


def test_the_acceptance_mode_counts_its_earlier_sessions_per_tag_and_system(tmp_path, capsys):
    from types import SimpleNamespace

    from fabricsuite.commands import nightly

    reports = tmp_path / "reports"
    reports.mkdir()
    for n, (tag, system) in enumerate([("acceptance", "emucluster:nodes"),
                                       ("acceptance", "emucluster:nodes"),
                                       ("nightly", "emucluster:nodes"),
                                       ("acceptance", "other:cpu")]):
        data = report("recorded-kind")
        data["session_info"].update(uuid=f"s{n}", tag=tag)
        for run in data["runs"]:
            for case in run["testcases"]:
                case["system"] = system
        (reports / f"run-report-{n}.json").write_text(json.dumps(data))
    args = SimpleNamespace(system="emucluster", mode="acceptance", tag="acceptance")
    assert nightly.node_rotation(args, tmp_path, []) == 2
    assert "acceptance session 3 of tag acceptance" in capsys.readouterr().out
    # the session's own choice of nodes, the nightly mode and one machine are left alone
    assert nightly.node_rotation(args, tmp_path, ["-J--nodelist=emu1,emu2"]) is None
    assert nightly.node_rotation(SimpleNamespace(system="emucluster", mode="nightly",
                                                 tag="acceptance"), tmp_path, []) is None
    assert nightly.node_rotation(SimpleNamespace(system="local", mode="acceptance",
                                                 tag="acceptance"), tmp_path, []) is None


def test_a_copied_report_is_not_anothersession_of(tmp_path):
    """Four copies of one session among six reports moved the median to the copied value
    (issue 39): a report with a session uuid already read is left out, saying so."""
    quiet = report("recorded-kind")
    # an edited copy under a new uuid (issue 67's probe): the same jobs, nodes and times
    edited = copy.deepcopy(quiet)
    edited["session_info"]["uuid"] = "0e2b3f6a-0000-4000-8000-000000000000"
    collected = baseline.collect([quiet, copy.deepcopy(quiet), edited],
                                 ["a.json", "b.json", "c.json"], "local")
    assert all(len(s.values) == 1 for s in collected.samples), collected.samples
    assert collected.copies == ["b.json (a copy of a.json)", "c.json (a copy of a.json)"]
    assert "2 report(s) left out as copies of a session already read" in collected.summary(
        "local")
    # the automatic references count sessions, not files
    reports = tmp_path / "reports"
    reports.mkdir()
    for name in ("run-report-1.json", "run-report-2.json"):
        (reports / name).write_text(json.dumps(quiet))
    assert len(machine.recorded_sessions(reports, "amd-epyc-1x2x1-24gib.3abda07c")) == 1


def test_gross_breakage_against_the_limits_of_the_cores_is_a_regression_that_records_nothing():
    """The first day of a machine: judged on its efficiencies alone (fabricsuite.data.limits); a run
    fallen onto TCP loopback is a confirmed regression whose session records nothing, a healthy
    one is recorded, and another machine of its kind never decides."""
    broken = report("tcp-physics-regression")
    health = health_of(broken)
    assert health["NetbenchPingPong"] == cases.REGRESSION, health
    # passed its floor, but TCP's kernel work took its CPU 12 % of the run: disturbed
    assert health["NetbenchPingPongBandwidth"] == cases.DISTURBED, health
    assert [c.check for c in machine.kind_regressions(broken)] == ["NetbenchPingPong"]
    healthy = report("recorded-physics")
    assert set(health_of(healthy).values()) == {cases.RECORDED}
    assert machine.kind_regressions(healthy) == []
    measured = [c for run in healthy["runs"] for c in run["testcases"] if c.get("perfvalues")]
    assert measured and all(c["reference_origin"] == "physics" and c["limits_prologue"]
                            and c["kind_reference"] for c in measured)
    assert session.classify(broken)[0] == session.REGRESSED
    assert session.classify(healthy)[0] == session.WITHIN


#: What JUnit shows of each session verdict: the element under the case's <testcase> (None:
#: none, a pass) and its type.
JUNIT_OF = {cases.PASSED: (None, None), cases.TRANSIENT: ("system-out", None),
            cases.RECORDED: ("skipped", None), cases.REGRESSION: ("failure", "performance"),
            "node outlier": ("failure", "node-outlier"),
            "link degraded": ("failure", "link-degraded"),
            cases.BROKEN: ("error", None), cases.INTERRUPTED: ("error", "interrupted")}


@pytest.mark.parametrize("name", sessions_of_every_verdict())
def test_every_command_and_page_gives_the_one_verdict(name, references_on_nodes, tmp_path):
    """Every real stored session (each verdict among them: a pass while disturbed, a disturbed
    failure, broken in sanity, a regression, recorded, a stale reference, interrupted, a node
    outlier): the one-screen outcome's counts, its exit status, JUnit case by case, the report
    page case by case, history's points (which compare reads) and the findings file all show
    the session's one verdict of each case (fabricsuite.data.session_verdict), so they never
    disagree (issue 51: the page once called two cases the outcome passed while disturbed
    'failed', with phase '?')."""
    import re
    import xml.etree.ElementTree as ET

    from fabricsuite.base.metrics import case_where
    from fabricsuite.commands.report.data import summary
    from fabricsuite.data import findings
    from fabricsuite.data.session_verdict import case_verdicts, tally

    data = session_of(name)
    judged = case_verdicts(data)
    counted = tally(data)
    assert {j.counted for j in judged if not j.fixture} <= {"passed", "recorded", "failed"}
    # the outcome's counts
    outcome = "\n".join(session.summary_lines(data, []))
    shown = re.search(r"ran (\d+) case\(s\): (\d+) passed, (\d+) failed", outcome)
    assert shown, outcome
    assert (int(shown[2]), int(shown[3])) == (len(counted["passed"]), len(counted["failed"]))
    recorded = re.search(r"(\d+) recorded without references", outcome)
    assert (int(recorded[1]) if recorded else 0) == len(counted["recorded"]), outcome
    # the exit status
    code, _why = session.classify(data)
    assert (code == session.WITHIN) == (not counted["failed"]), (code, counted)
    # the page, case by case and in its counts
    # the page of the session's system (the emulated cluster's reports: emucluster)
    (system,) = {c.get("system") for c in cases.final_cases(data)}
    page = summary(data, system)
    # the outcome's counts, the build no case of the fabric in either
    assert (page.passed, page.failed_count, page.recorded) == (
        len(counted["passed"]), len(counted["failed"]), len(counted["recorded"])), (page, counted)
    skips = re.search(r"; (\d+) skipped", outcome)
    assert page.skipped == int(skips[1]), (page.skipped, outcome)
    on_page = {c["name"]: c["verdict"] for c in page.cases}
    for case in judged:
        assert on_page[case.last.get("display_name")] == case.verdict, (case.verdict, on_page)
    assert {c.name: c.verdict for c in page.failed} == {
        case.last.get("display_name"): case.verdict for case in judged
        if case.counted == "failed"}
    assert all(c.phase not in ("?", "None", "pass") for c in page.failed), page.failed
    assert page.failed_by_verdict == ", ".join(
        f"{n} {v}" for v, n in sorted(Counter(c.verdict for c in judged
                                             if c.counted == "failed").items()))
    # JUnit, case by case
    session.write_junit(data, [], tmp_path / "junit.xml")
    elements = {element.get("name"): element
                for element in ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")}
    for case in judged:
        element = elements[f"{case_where(case.last)} [{case.last.get('unique_name', '')}]"]
        tag, kind = JUNIT_OF[case.verdict]
        children = [child for child in element if child.tag != "system-out" or tag is None
                    or tag == "system-out"]
        assert [c.tag for c in children] == ([tag] if tag else []), (case.verdict, children)
        if kind:
            assert children[0].get("type") == kind, (case.verdict, children[0].attrib)
    # history (and compare, which reads its series): each point says its case's verdict, and
    # the cases measured on a quiet node are its points
    series, _ = history.collect([data], system)
    by_scope = {(j.case.check, j.case.partition, j.case.environ, j.case.levels): j
                for j in judged}
    pointed = set()
    for one in series:
        found = by_scope[(one.check, one.partition, one.environ, one.levels)]
        assert [p.verdict for p in one.points] == [found.verdict], (one.key, found.verdict)
        pointed.add(found.last.get("display_name"))
    assert pointed == {j.last.get("display_name") for j in judged
                       if j.case.health in cases.MEASURED and j.case.figures()
                       and not cases.was_interrupted(data)}
    # the findings file: a finding for every case that failed, none for one that passed but a
    # notice (a stale reference, a map that could not resolve its smallest fault)
    doc = findings.document(data, code, _why)
    named = {f["check"] for f in doc["findings"]}
    noticed = {f["check"] for f in doc["findings"] if f["kind"] in findings.NOTICE_KINDS}
    failed = {case.last.get("display_name") for case in judged if case.counted == "failed"}
    if cases.was_interrupted(data):
        assert [f["kind"] for f in doc["findings"]] == ["interrupted"]
    else:
        assert failed <= named and named - failed <= noticed, (named, failed, doc["findings"])
        assert all(f["kind"] in findings.NOTICE_KINDS for f in doc["findings"]
                   if f["check"] not in failed), doc["findings"]


def test_the_sessions_of_every_verdict_reach_every_verdict(references_on_nodes):
    """The sessions the test above walks hold every verdict a case can have."""
    from fabricsuite.data.session_verdict import case_verdicts

    seen = {case.verdict for name in sessions_of_every_verdict()
            for case in case_verdicts(session_of(name))}
    assert seen == set(JUNIT_OF), seen


def test_a_session_that_ran_nothing_names_the_system_it_was_started_on():
    data = json.loads(json.dumps(report("judged-own")))
    for run in data["runs"]:
        run["testcases"] = []
    data["session_info"]["cmdline"] = "reframe -C config/settings.py --system emucluster -r"
    head = session.summary_lines(data, [])[0]
    assert " on emucluster" in head and " on -" not in head, head
    data["session_info"]["cmdline"] = "reframe -C config/settings.py -r"
    head = session.summary_lines(data, [])[0]
    assert f"on the system of {data['session_info']['hostname']} (no case selected)" in head
