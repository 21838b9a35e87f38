"""Integration: the switch-aware all-pairs verdict through ReFrame on an emulated two-level
fabric (issue 30).

8 nodes under 2 leaf switches and a spine (`ci/emucluster.sh up --nodes 8 --leaves 2 --burst
16kb`), node links at 200 Mbit, uplinks unshaped, the shaper's burst small enough that one pair
alone measures the shaped rate at the map's bandwidth size (tested first); Slurm's
topology/tree reads the same tree, and the partition declares `extras.topology: "slurm"`, so the
job records `scontrol show topology` beside its map. NetbenchMatrix at 8 nodes (`-P
node_count=8`; timed on shared cores: the verdict is relative to the run's own best pair), with
references of 0 for bad pairs and faulty components:

- leaf 1's uplink at 100 Mbit, every node link healthy: the case fails on
  matrix_faulty_uplinks = 1 and names the uplink, no node (with leaf 2's: in a 2-leaf tree every
  pair that crosses one crosses the other), and the outcome's REGRESSION line says so;
- every uplink at 250 Mbit (4 node links of 200 Mbit share it: 3.2:1) and no fault: the case
  passes, the slow concurrent pairs crossing the uplinks cleared by the re-test alone and said
  to be congestion. Not at 200 Mbit: a pair alone across leaves then passes four shapers of
  one rate, each with its small burst, and on some hosts measures 12 % below a pair within a
  leaf (this VM, 2026-12-02: 21.7-22.6 against 24.8 MB/s, 6 of 18 such re-tests), which the
  map rightly calls bad; a real switch has no token bucket.

The 40 trials of the acceptance (10 per fault, precision and recall) are
bench/fault_localization.py's; docs/measurements.md has its figures. A job that dies while Open
MPI connects (a rank segfaulting in MPI_Init, about 1 in 200 emulated jobs, see
tests/test_emucluster_matrix.py) is run once more: by ReFrame's retry where the session may
retry, and, where it must not (ONCE), by a second session when the job's stderr shows the crash
(_session; CI 2026-12-02 met it in the uniformly slow fabric's only run).
"""

import json
import os
import subprocess
from pathlib import Path

import emu_support
import pytest
from emu_support import BIN, run_reframe

from fabricsuite import REPO_ROOT
from fabricsuite.commands.emucluster import OPENMPI_TCP, QUICK, matrix_references
from fabricsuite.data import hostlists, switches

PREFIX = emu_support.prefix("fss")
pytestmark = emu_support.marks(PREFIX)
#: The slow uplink at half the node links' rate: crossing pairs alone measure half the best,
#: far beyond the map's noise; the verdict, not the figure, is the point (issue 65: each bad
#: pair's re-test alone took 1.65 s at a quarter of the rate, 55 s of the test's 75).
NODES, RATE, SLOW = 8, "200mbit", "100mbit"
#: The oversubscribed uplinks' rate: above one node link's, below the 4 that share it.
UPLINK_RATE = "250mbit"
REFERENCES = matrix_references(NODES)


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    state = tmp_path_factory.mktemp("emucluster-switches")
    yield from emu_support.cluster(state, PREFIX, emu_support.port_base(34000), nodes=NODES,
                                   rate=RATE, up=("--leaves", "2", "--burst", "16kb"))


#: For a session that must fail: ReFrame measures it once. A retry of a failure that is the
#: test's point only risks the rare Open MPI crash in MPI_Init (its run then the case's last:
#: CI 2026-12-02, the uniformly slow fabric's retry segfaulted and hung to its time limit).
ONCE = ("--max-retries=0",)


def matrix_session(emu, tmp_path, rate, link, *more):
    """One ReFrame session of NetbenchMatrix at 8 nodes while `link` is shaped to `rate`:
    (ReFrame's process, the case of its run report, the outcome's text)."""
    try:
        emu("rate", rate, "--link", link)
        return _session(emu, tmp_path, *more)
    finally:
        emu("rate", "none", "--link", "uplinks")


#: What Open MPI's crash while it connects leaves in a job's stderr: the job measured nothing,
#: so its session says nothing of the fabric.
OPEN_MPI_CRASH = "Signal: Segmentation fault"


def _crashed(case: dict) -> bool:
    stderr = Path(str(case.get("stagedir"))) / str(case.get("job_stderr") or "rfm_job.err")
    return case.get("result") == "fail" and stderr.is_file() and \
        OPEN_MPI_CRASH in stderr.read_text(errors="replace")


def _session(emu, tmp_path, *more, env=None):
    found = _session_once(emu, tmp_path, *more, env=env)
    if not _crashed(found[1]):
        return found
    # moved aside, not removed: the first try's job and report stay for a reader
    print("Open MPI crashed while it connected (the job's stderr): the session once more")
    for name in ("results", "findings.json"):
        if (tmp_path / name).exists():
            (tmp_path / name).rename(tmp_path / f"crashed-{name}")
    return _session_once(emu, tmp_path, *more, env=env)


def _session_once(emu, tmp_path, *more, env=None):
    refs = tmp_path / "refs"
    refs.mkdir(exist_ok=True)
    (refs / "emucluster.yaml").write_text(REFERENCES)
    results = tmp_path / "results"
    proc = run_reframe(
        emu, results, "-c", "checks/fabric_map.py", "-n", "NetbenchMatrix", "-p", "openmpi",
        "-P", f"node_count={NODES}", "-S", "timing_on_shared_cores=true",
        "-S", "NetbenchMatrix.matrix_options=--max-size,256K,--repetitions,3,--time-cap-ms,20",
        *more,
        extra_env={"RFM_REFERENCE_PREFIX": str(refs), "OMPI_MCA_mpi_yield_when_idle": "1",
                   **(env or {})})
    reports = sorted((results / "reports").glob("*.json"))
    assert reports, proc.stdout[-3000:] + proc.stderr[-2000:]
    report_path = reports[-1]
    case = next(c for c in json.loads(report_path.read_text())["runs"][-1]["testcases"]
                if c["name"].startswith("NetbenchMatrix"))
    # the session's findings (issue 52), as the nightly writes them: tmp_path/findings.json
    outcome = subprocess.run([str(BIN / "python"), "-m", "fabricsuite.commands.session",
                              "--findings",
                              str(tmp_path / "findings.json"), str(report_path)],
                             capture_output=True, text=True, cwd=REPO_ROOT,
                             env={**os.environ, "RFM_REFERENCE_PREFIX": str(refs)})
    return proc, case, outcome.stdout


def act(emu, tmp_path, *options, findings=None):
    """`fabricsuite act` against this cluster's real Slurm, its log under tmp_path/act-results:
    (exit status, its output)."""
    proc = emu("exec", str(BIN / "python"), "-m", "fabricsuite.commands.cli", "act",
               str(findings or tmp_path / "findings.json"), "--results",
               str(tmp_path / "act-results"), *options, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def slurm_nodes(emu) -> dict:
    """{node: (state flags, reason, comment)} as Slurm reports them (sinfo --json)."""
    data = json.loads(emu("exec", "sinfo", "--json").stdout)
    return {n["name"]: (tuple(n["state_flags"]), n["reason"], n["comment"])
            for n in data["nodes"]}


def drained(emu) -> dict:
    return {name: reason for name, (flags, reason, _) in slurm_nodes(emu).items()
            if "DRAIN" in flags}


#: The map's bandwidth size (NetbenchMatrix's --max-size here and in bench/fault_localization.py).
MAP_BANDWIDTH_SIZE = 256 * 1024


def test_one_pair_alone_measures_the_shaped_rate_at_the_maps_size(fabric, netbench_program,
                                                                   tmp_path):
    """A link shaped to R must measure R at the size the map judges bandwidth by, or a link 25 %
    slow reads as a few percent slow (issue 41: with a 64 KiB burst a 256 KiB ping-pong measured
    1.25 R at 200 Mbit). Two nodes of one leaf, ping-pong bandwidth at 256 KiB, at the fabric's
    rate and at three quarters of it: at most 6 % above the rate shaped (the burst's error) and
    at most 10 % below it (the host's CPU; this 2-core VM once measured 0.93 of 150 Mbit,
    2026-12-02)."""
    program = netbench_program("openmpi")
    measured = {}
    try:
        for rate, rate_MBps in ((RATE, 25.0), ("150mbit", 18.75)):
            fabric("rate", rate)
            out = tmp_path / f"bibw-{rate}.json"
            fabric("exec", "srun", "-N2", "-n2", "--ntasks-per-node=1", "--time=2", "-w",
                f"{PREFIX}1,{PREFIX}2", program, "bibw", "--sizes", str(MAP_BANDWIDTH_SIZE),
                "--repetitions", "5", "--json-file", str(out), extra_env=OPENMPI_TCP)
            row = json.loads(out.read_text())["tables"]["bibw"][0]
            measured[rate] = row["bandwidth_median_MBps"] / rate_MBps
    finally:
        fabric("rate", RATE)
    print(f"ping-pong bandwidth at 256 KiB / shaped rate: {measured}")
    assert all(0.90 <= ratio <= 1.06 for ratio in measured.values()), measured


def test_a_slow_uplink_is_named_and_fails_the_map(fabric, tmp_path):
    proc, case, outcome = matrix_session(fabric, tmp_path, SLOW, "uplink1", *ONCE)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert case["result"] == "fail", case.get("fail_reason")
    values = {name: value[0] for name, value in case["perfvalues"].items()}
    faulty = {k.rsplit(":", 1)[-1]: v for k, v in values.items() if "faulty" in k}
    assert faulty == {"matrix_faulty_node_links": 0, "matrix_faulty_uplinks": 1,
                      "matrix_faulty_switches": 0}, case["perfvalues"]
    # with two leaves the spine carries exactly the pairs the two uplinks carry
    assert case["components"].startswith("faulty uplink leaf1 or uplink leaf2 or switch spine: "
                                         "16 of 16 pairs through it bad"), case["components"]
    assert "node " not in case["components"]
    # thresholds from the map's own noise (the default), and what it could resolve said
    assert "noise" in case["components"] and "alone; bad beyond" in case["components"]
    # the job recorded the tree it was judged against
    tree = switches.parse_topology(
        next((tmp_path / "results").rglob("switch-tree.txt")).read_text())
    assert sorted(set(tree.leaf_of.values())) == ["leaf1", "leaf2"]
    regressions = [ln for ln in outcome.splitlines() if "matrix_faulty_uplinks" in ln]
    assert regressions and regressions[0].lstrip().startswith("REGRESSION"), outcome
    print(case["components"], *regressions, sep="\n")
    # acted on (issue 52): the uplink is reported, no node drained, even in drain mode
    # (beside it, where the map's noise hid a link 20 % slow, a notice naming no node)
    (finding,) = [f for f in json.loads((tmp_path / "findings.json").read_text())["findings"]
                  if f["kind"] != "could-not-resolve"]
    assert finding["kind"] == "uplink" and finding["nodes"] == "", finding
    status, said = act(fabric, tmp_path, "--mode", "drain")
    assert status == 0 and "reported, no node drained (uplink uplink leaf1 or uplink leaf2 or " \
        "switch spine)" \
        in said and "ran:" not in said, said
    assert drained(fabric) == {}, said


def test_an_oversubscribed_healthy_uplink_is_congestion_not_a_fault(fabric, tmp_path):
    proc, case, _outcome = matrix_session(fabric, tmp_path, UPLINK_RATE, "uplinks")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert case["result"] == "pass"
    assert "faulty" not in case["components"]
    # concurrent pairs that crossed the 3.2:1 uplinks were slow, then fast alone
    assert "congestion, not a fault" in case["components"], case["components"]
    print(case["components"])


def test_a_quick_map_draws_rounds_that_cross_every_uplink(fabric, tmp_path):
    """Quick mode (`-S NetbenchMatrix.rounds=1`): the job chooses the first seed from 1 whose
    round crosses both uplinks (fabricsuite.data.switches quick-seed), so the one round measures
    them; healthy links, the case passes."""
    proc, case, _outcome = _session(fabric, tmp_path, "-S", "NetbenchMatrix.rounds=1")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert case["result"] == "pass" and "not measured" not in case["components"], case
    said = case["components"]
    assert "a quick map: 1 of 7 rounds and 1 inside the switches, " in said and \
        "every uplink between its nodes crossed" in said, said
    script = next((tmp_path / "results").rglob("rfm_job.sh")).read_text()
    assert "NB_SEED=$(" in script and '--seed "$NB_SEED"' in script, script
    result = json.loads(next((tmp_path / "results").rglob("netbench.json")).read_text())
    assert result["parameters"]["rounds"] == 1
    tree = switches.parse_topology(
        next((tmp_path / "results").rglob("switch-tree.txt")).read_text())
    crossing = [p for p in result["tables"]["pairs"]
                if tree.leaf_of[p["host_a"]] != tree.leaf_of[p["host_b"]]]
    assert crossing, result["tables"]["pairs"]
    # the job wrote each host's switches from the tree it read (pathclasses) and netbench
    # judged each pair against its class too, and measured one round inside the leaves: every
    # node has a pair under its own leaf (round 8: after the tournament's 7)
    assert result["parameters"]["path_classes"].endswith("path-classes.txt")
    assert result["parameters"]["local_rounds"] == 1
    inside = [p for p in result["tables"]["pairs"]
              if tree.leaf_of[p["host_a"]] == tree.leaf_of[p["host_b"]]]
    assert {h for p in inside for h in (p["host_a"], p["host_b"])} == set(tree.leaf_of), inside


def test_a_fabric_uniformly_below_its_promise_is_named_though_no_pair_is_bad(fabric, tmp_path):
    """Issue 50: every node link at 60 % of the 200 Mbit the partition declares
    (FABRICSUITE_EMU_DECLARED_GBPS=0.2). The relative rule, each pair against the map's best,
    sees nothing (no bad pair, no faulty component); against the promise the map names the
    fabric, and the session's verdict is LINK DEGRADED, exit 1. bench/promise_map.py runs the
    leaf and node scenarios too."""
    from fabricsuite.commands import session

    try:
        fabric("rate", "120mbit")
        proc, case, _outcome = _session(fabric, tmp_path, *ONCE,
                                        env={"FABRICSUITE_EMU_DECLARED_GBPS": "0.2"})
    finally:
        fabric("rate", RATE)
    values = {key.split(":")[-1]: perf[0] for key, perf in case["perfvalues"].items()}
    assert values["matrix_bad_pairs"] == 0 and values["matrix_faulty_uplinks"] == 0, values
    assert 0.45 < values["matrix_bandwidth_median_line_fraction"] < 0.7, values
    # the measured map names the fabric (here the nodes' shapers also report the lower rate:
    # each node's LINK DEGRADED beside it; a fabric whose links report their full rate and
    # deliver less is named by the map alone)
    (measured,) = [f for f in case["link_findings"].split("; ") if f.startswith("BELOW")]
    assert measured.startswith("BELOW PROMISE the fabric: median pair 0.") and \
        "of the 0.2 Gb/s line rate over 28 pair(s), promised 0.70" in measured, measured
    report = json.loads(max((tmp_path / "results" / "reports").glob("*.json")).read_text())
    code, why = session.classify(report)
    assert code == session.REGRESSED and why.startswith("LINK DEGRADED"), why
    # acted on (issue 52): every node's link degraded is more than the cap, so no node is
    # drained; the fabric is reported
    kinds = {f["kind"] for f in json.loads((tmp_path / "findings.json").read_text())["findings"]
             } - {"could-not-resolve"}
    assert kinds == {"link-degraded", "fabric"}, kinds
    status, said = act(fabric, tmp_path, "--mode", "drain")
    assert status == 1 and f"REFUSED: {NODES} node(s) named at once" in said and \
        "reported, no node drained (fabric the fabric)" in said, said
    assert drained(fabric) == {}, said


def test_a_node_whose_link_is_slower_is_drained_retested_and_returned_by_the_contract(
        fabric, tmp_path):
    """Issue 52 on real Slurm: node 3's link at 170 of the 200 Mbit its peers have (15 %
    slower). The session names it (LINK DEGRADED: its link unlike its 7 peers), confirmed;
    `fabricsuite act` in report mode prints the drain and runs nothing, in comment mode sets
    the node's comment only, leaves a node an administrator drained with the administrator's
    reason, and in drain mode drains it with the suite's reason. --retest moves it into the
    maintenance reservation with a node known good; a ping-pong session there with the link
    repaired passes, and --resume returns it to service and deletes the reservation. 3 of 8
    nodes named at once are over the cap: nothing drained."""
    slow = f"{PREFIX}3"
    try:
        fabric("rate", "170mbit", "3")
        _proc, _case, _outcome = _session(fabric, tmp_path, *ONCE)
    finally:
        fabric("rate", RATE)
    doc = json.loads((tmp_path / "findings.json").read_text())
    ours = [f for f in doc["findings"] if f["kind"] == "link-degraded"]
    assert ours and {f["nodes"] for f in ours} == {slow} and \
        {f["confidence"] for f in ours} == {"confirmed"}, doc["findings"]
    try:
        status, said = act(fabric, tmp_path)  # report, the default
        assert status == 0 and "would run: scontrol update NodeName=" + slow + \
            " State=DRAIN 'Reason=fabricsuite: LINK DEGRADED NetbenchMatrix" in said, said
        assert drained(fabric) == {}
        status, said = act(fabric, tmp_path, "--mode", "comment")
        assert status == 0 and drained(fabric) == {}, said
        assert slurm_nodes(fabric)[slow][2].startswith("fabricsuite: LINK DEGRADED"), said
        # an administrator's drain is never overwritten
        fabric("exec", "scontrol", "update", f"NodeName={slow}", "State=DRAIN",
               "Reason=admin: reseat the cable")
        status, said = act(fabric, tmp_path, "--mode", "drain")
        assert "someone else's, left alone" in said and \
            drained(fabric) == {slow: "admin: reseat the cable"}, said
        fabric("exec", "scontrol", "update", f"NodeName={slow}", "State=RESUME")
        status, said = act(fabric, tmp_path, "--mode", "drain")
        assert status == 0, said
        (reason,) = drained(fabric).values()
        assert list(drained(fabric)) == [slow] and reason.startswith(
            "fabricsuite: LINK DEGRADED NetbenchMatrix ") and doc["session"][:8] in reason, said
        # re-tested in the reservation, repaired: back in service
        status, said = act(fabric, tmp_path, "--mode", "drain", "--retest")
        assert status == 0 and drained(fabric) == {}, said
        proc = run_reframe(fabric, tmp_path / "retest", "-c", "checks/pt2pt.py", "-n",
                           "NetbenchPingPong%distance=other-node", "-p", "openmpi", *QUICK,
                           "-J", "reservation=fabricsuite-retest", "-S",
                           "require_reference=false",
                           extra_env={"RFM_REFERENCE_PREFIX": str(tmp_path / "refs")})
        report = max((tmp_path / "retest" / "reports").glob("*.json"))
        subprocess.run([str(BIN / "python"), "-m", "fabricsuite.commands.session", "--findings",
                        str(tmp_path / "retest.json"), str(report)], capture_output=True,
                       cwd=REPO_ROOT, env={**os.environ,
                                           "RFM_REFERENCE_PREFIX": str(tmp_path / "refs")})
        retest = json.loads((tmp_path / "retest.json").read_text())
        assert slow in hostlists.expand_hostlist(retest["passed_nodes"]), \
            (retest, proc.stdout[-3000:])
        status, said = act(fabric, tmp_path, "--mode", "drain", "--resume",
                           findings=tmp_path / "retest.json")
        assert status == 0 and "reservation deleted" in said, said
        assert drained(fabric) == {} and not slurm_nodes(fabric)[slow][2], said
        reservations = fabric("exec", "scontrol", "show", "reservation").stdout
        assert "fabricsuite-retest" not in reservations, reservations
        # three nodes named at once, over the cap: nothing drained
        many = dict(doc, findings=[dict(ours[0], nodes=f"{PREFIX}[3-5]")])
        (tmp_path / "many.json").write_text(json.dumps(many))
        status, said = act(fabric, tmp_path, "--mode", "drain", findings=tmp_path / "many.json")
        assert status == 1 and "REFUSED: 3 node(s) named at once" in said, said
        assert drained(fabric) == {}
        log = (tmp_path / "act-results" / "act" / "actions.jsonl").read_text().splitlines()
        done = [json.loads(line)["action"] for line in log
                if json.loads(line)["status"] == "done"]
        assert done == ["comment", "drain", "reserve", "retest", "resume", "unreserve"], log
    finally:
        for node in slurm_nodes(fabric):
            fabric("exec", "scontrol", "update", f"NodeName={node}", "State=RESUME",
                   "Comment=", check=False)
        fabric("exec", "scontrol", "delete", "ReservationName=fabricsuite-retest", check=False)


def _retest_interference(results, node):
    """The interference line of the re-test of `node`, "" for a quiet one."""
    (report,) = (results / "reports").glob(f"run-report-*-retest-{node}.json")
    return "; ".join(c.get("interference") or "" for run in
                     json.loads(report.read_text())["runs"] for c in run["testcases"]
                     if c["name"].startswith("NetbenchMatrix"))


def test_a_quick_maps_suspect_pair_is_re_tested_and_only_its_slow_node_drained(fabric,
                                                                               tmp_path):
    """Issue 52, a map suspect: the switch port toward node 3 at 50 of the 200 Mbit (a bad
    cable or port that no link reading sees: node 3 reports its link healthy, no LINK
    DEGRADED). A quick map of one round measures node 3 in one pair only, so the map cannot
    tell node 3 from its mate: both suspected, each with the nodes the map measured healthy.
    `fabricsuite nightly --retest-suspects` re-tests each in a full map of its own with the
    three nearest of those (NetbenchMatrix at 4 nodes, `-J--nodelist`; the partition has
    references at 8 nodes only, which a map's relative verdict does not need): node 3's every
    pair is bad there, its link named alone (confirmed), its mate's pairs all good (cleared);
    `fabricsuite act --mode drain` drains node 3 alone, with the suite's reason.

    Four emulated nodes share the 2 cores, two ranks a core: a re-test whose rank also waited
    for processes the detector cannot name (5 % of the run and more; seen in 2 of 4 tries)
    was disturbed and clears nothing (its node stays suspected, never drained). Where the
    mate's re-test was disturbed so, that is asserted instead; where node 3's was, or the
    session itself (interference, no node named), the session runs once more."""
    slow = f"{PREFIX}3"
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "emucluster.yaml").write_text(REFERENCES)

    def nightly(results):
        try:
            # a quarter: the quick map's 4 pairs at once on the 2 cores are CPU-bound at
            # 12.7-15.5 MB/s, which hid a port at 100 Mbit (12.5 MB/s) in 3 tries of 3 (CI of
            # 18ace3b: "cannot resolve a link 20 % slow", nothing suspect)
            fabric("rate", "50mbit", "--port", "3")
            night = fabric("exec", str(BIN / "fabricsuite"), "nightly", "--system",
                           "emucluster:nodes", "--results", str(results), "--retest-suspects",
                           "--", "-n", "NetbenchMatrix", "-p", "openmpi", "-P",
                           f"node_count={NODES}", "-S", "timing_on_shared_cores=true", "-S",
                           "NetbenchMatrix.matrix_options=--max-size,256K,--repetitions,3,"
                           "--time-cap-ms,20", "-S", "NetbenchMatrix.rounds=1", "-S",
                           # one round only, none inside the leaves: node 3 in one pair
                           "NetbenchMatrix.local_rounds=false", "-S",
                           "confirm_pause_s=1", *ONCE, check=False,
                           extra_env={"RFM_REFERENCE_PREFIX": str(refs),
                                      "OMPI_MCA_mpi_yield_when_idle": "1"})
        finally:
            fabric("rate", RATE)
        said = night.stdout + night.stderr
        told = "\n".join(line for line in said.splitlines()
                         if "suspect" in line or "faulty" in line or "waited" in line
                         or line.lstrip().startswith(("outcome:", "FAILED", "PASSED", "BROKEN",
                                                      "REGRESSION", "INTERFERENCE")))
        (path,) = (results / "findings").glob("*.json")
        return path, json.loads(path.read_text()), said, told

    def unsettled(doc, said):
        """The suite rightly named no node: the session or node 3's re-test disturbed (a rank
        waited for ReFrame's own process on the shared cores, 6 %: seen once), a map too noisy
        to resolve its smallest fault, which it says (CI 2026-12-06, twice in a row: 4 pairs
        at once on the 2 cores, 8-15 % of noise), or a pass the suite itself calls disturbed
        (a rank waited 68 % of the run for its CPU, 2026-12-06 19:33)."""
        settled = {r["node"]: r["result"] for r in doc.get("retests", [])}
        return settled.get(slow) in ("broken", "undecided") or (
            not settled and {f["kind"] for f in doc["findings"]} <= {"interference",
                                                                     "could-not-resolve"}) or (
            not settled and "passed while disturbed" in said)

    # measured up to three times while the suite says it could not judge (above)
    for attempt in range(3):
        results = tmp_path / f"results-{attempt}"
        path, doc, said, told = nightly(results)
        if not unsettled(doc, said):
            break
        print(f"the session or node 3's re-test could not judge, measuring again:\n{told}")
    retests = {r["node"]: r for r in doc.get("retests", [])}
    assert slow in retests and len(retests) == 2, (told, doc)
    (mate,) = set(retests) - {slow}
    assert f"re-testing suspect {slow} against " in said, told
    # the session's --max-retries=0 reaches the re-tests as 1: one confirmation round, not the
    # mode's 3 (about 40 s of the re-test of node 3, whose map fails in every round)
    assert "confirmation round 2:" not in said, told
    assert retests[slow]["result"] == "confirmed", (told, doc)
    # each with three nodes the map measured healthy, never the other suspect
    assert all(len(r["against"].split(",")) == 3 and not {slow, mate} & set(
        r["against"].split(",")) for r in doc["retests"]), doc
    # (a quick map of one round may add a notice: it could not resolve its smallest fault)
    named = [(f["kind"], f["confidence"], f["nodes"]) for f in doc["findings"]
             if f["kind"] != "could-not-resolve"]
    if retests[mate]["result"] == "cleared":
        assert named == [("faulty-link", "map", slow)], doc
        assert mate in hostlists.expand_hostlist(doc["passed_nodes"]), doc
    else:
        why = _retest_interference(results, mate)
        assert retests[mate]["result"] == "undecided" and why, (told, doc)
        print(f"the mate's re-test was disturbed ({why}): it stays suspected")
        assert named == [("faulty-link", "suspected", mate), ("faulty-link", "map", slow)], doc
    try:
        status, acted = act(fabric, tmp_path, "--mode", "drain", findings=path)
        assert status == 0, acted
        (reason,) = drained(fabric).values()
        assert list(drained(fabric)) == [slow] and reason.startswith(
            "fabricsuite: FAULTY LINK NetbenchMatrix ") and doc["session"][:8] in reason, acted
    finally:
        for node in slurm_nodes(fabric):
            fabric("exec", "scontrol", "update", f"NodeName={node}", "State=RESUME",
                   "Comment=", check=False)
