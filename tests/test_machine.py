"""The embedded default belongs to the machine it runs on (fabricsuite/data/machine.py).

Unit tests of the fingerprint on real topologies, and the first sessions of a machine that has no
references yet, through the README's run command: recorded and not judged (exit 0), references
taken after the third session, and the next run judged against them: forced onto TCP loopback,
it fails as a confirmed regression.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from mpi_support import NEEDS_OPEN_MPI, readme_commands

from fabricsuite import REPO_ROOT
from fabricsuite.commands import baseline
from fabricsuite.commands.emucluster import QUICK
from fabricsuite.commands.machine_references import take_references
from fabricsuite.data import machine, topology
from fabricsuite.data.references import load_file, reference_file

HWLOC = Path(__file__).parent / "data" / "hwloc"


def test_fingerprint_of_real_topologies_reads_as_a_person_would_say_it():
    xml = (HWLOC / "hwloc-2.9" / "192em64t-24n8c2t.xml").read_text()
    found = machine.fingerprint(xml)
    assert found.description == ("Intel(R) Xeon(R) CPU E5-4640 0 @ 2.40GHz, 24 packages x "
                                 "8 cores x 2 threads, 744 GiB")
    assert found.key == "intel-xeon-e5-4640-0-2-40ghz-24x8x2-744gib"
    vm = machine.fingerprint((HWLOC / "vm-2core.xml").read_text(), memory_bytes=24 * 2**30)
    assert vm.key == "amd-epyc-1x2x1-24gib"
    assert vm.description == "AMD EPYC, 1 package x 2 cores x 1 thread, 24 GiB"


def test_every_real_topology_has_a_distinct_key():
    keys = {machine.fingerprint(p.read_text(), source=p.name).key
            for p in sorted((HWLOC / "hwloc-2.9").glob("*.xml"))}
    assert len(keys) == len(list((HWLOC / "hwloc-2.9").glob("*.xml")))


def test_the_override_stands_in_for_another_machine(monkeypatch, tmp_path):
    monkeypatch.setenv(machine.OVERRIDE, "fresh-box-1x4x2-16gib")
    assert machine.this_machine() == ("fresh-box-1x4x2-16gib", f"declared by {machine.OVERRIDE}")
    assert reference_file("local", tmp_path) == tmp_path / "local" / "fresh-box-1x4x2-16gib.yaml"
    assert reference_file("emucluster", tmp_path) == tmp_path / "emucluster.yaml"
    monkeypatch.setenv(machine.OVERRIDE, "../../etc/passwd")
    with pytest.raises(ValueError, match="lower-case letters"):
        machine.this_machine()


def test_this_machine_is_the_topology_it_runs_on(monkeypatch, tmp_path):
    if shutil.which("lstopo-no-graphics") is None:
        pytest.skip("lstopo not installed (ci/setup.sh installs hwloc)")
    monkeypatch.delenv(machine.OVERRIDE, raising=False)
    monkeypatch.setenv("FABRICSUITE_RESULTS", str(tmp_path))
    key, descr = machine.this_machine()
    xml = (tmp_path / "topology" / "local-default.xml").read_text()
    cores = len({p.core for p in topology.parse(xml)[0]})
    assert f"x {cores} core" in descr.replace(f"{cores} cores", f"{cores} core"), descr
    # the kind, then the host identity: two machines of one kind keep two files
    kind = machine.fingerprint(xml, machine._memory_bytes()).key
    host, source = machine.host_identity()
    assert key == f"{kind}.{host}" and machine.kind_of(key) == kind, (key, kind)
    assert "host name" in source, source


def test_the_host_identity_tells_machines_of_one_kind_apart(tmp_path):
    """VMs cloned from one image share /etc/machine-id (this VM's is dated before it was
    started): the host name separates them; a firmware UUID, where readable, comes first."""
    image_id = tmp_path / "machine-id"
    image_id.write_text("3d1219c7c4c5404aaa1f6d2a48adfda4\n")
    sources = (str(tmp_path / "no-dmi"), str(image_id))
    first, said = machine.host_identity(sources, hostname="node001")
    second, _ = machine.host_identity(sources, hostname="node002")
    assert first != second and re.fullmatch(r"[0-9a-f]{8}", first), (first, second)
    assert said == f"{image_id} and host name 'node001'", said
    assert machine.host_identity(sources, hostname="node001")[0] == first  # stable
    dmi = tmp_path / "product_uuid"
    dmi.write_text("4c4c4544-0047-3010-8048-b4c04f4d4d32\n")
    assert machine.host_identity((str(dmi), *sources), hostname="node001")[0] != first
    # the kind is read back from the key; an old key without a host part is its own kind
    assert machine.kind_of(f"amd-epyc-1x2x1-24gib.{first}") == "amd-epyc-1x2x1-24gib"
    assert machine.kind_of("fresh-box-1x4x2-16gib") == "fresh-box-1x4x2-16gib"


def test_a_bad_key_is_one_line_naming_the_variable(monkeypatch):
    for bad in ("amd-epyc\n", "x" * 300, "a..b", "Upper", "../../etc/passwd"):
        monkeypatch.setenv(machine.OVERRIDE, bad)
        with pytest.raises(machine.MachineError, match=f"^{machine.OVERRIDE}=.*lower-case"):
            machine.this_machine()


def test_own_references_live_with_the_results_not_the_repository(monkeypatch, tmp_path):
    monkeypatch.delenv("RFM_REFERENCE_PREFIX", raising=False)
    monkeypatch.setenv("FABRICSUITE_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv(machine.OVERRIDE, "amd-epyc-1x2x1-24gib.0123abcd")
    assert reference_file("local") == (tmp_path / "results" / "reference" / "local" /
                                       "amd-epyc-1x2x1-24gib.0123abcd.yaml")
    from fabricsuite import REFERENCE_DIR
    from fabricsuite.data.references import kind_reference_file

    assert kind_reference_file("amd-epyc-1x2x1-24gib.0123abcd") == (
        REFERENCE_DIR / "local" / "amd-epyc-1x2x1-24gib.yaml")
    assert kind_reference_file("fresh-box-1x4x2-16gib") is None


# --- a fresh machine, end to end ------------------------------------------------------------------

def _outcome(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout[proc.stdout.rfind("==== fabricsuite outcome"):]


def _newest_floor_us(tmp_path: Path) -> float | None:
    """The cache-line floor the newest session's ping-pong prologue measured (its limits.json,
    fabricsuite.data.limits), None where it has none."""
    report = max((tmp_path / "results" / "reports").glob("run-report-*.json"),
                 key=lambda p: p.stat().st_mtime)
    for run_ in json.loads(report.read_text())["runs"]:
        for case in run_["testcases"]:
            path = Path(str(case.get("outputdir"))) / "limits.json"
            if case["name"].startswith("NetbenchPingPong ") and path.is_file():
                return json.loads(path.read_text())["summary"].get("floor_oneway_median_us")
    return None


def _tcp_session(tmp_path: Path, session, env: dict) -> tuple[subprocess.CompletedProcess, bool]:
    """(proc, measured again): the session forced onto TCP loopback by `env`, measured once more
    where it passed while its prologue read the cache-line floor over 2.5x the healthy session
    before it. A known weakness of the latency's floor on a VM, not of the path under test: the
    host moved the two vCPUs between readings, the prologue's floor read 4.5x the healthy
    session's (CI 2026-12-02: 0.286 against 0.064 us), and TCP's 5.7 us was 19 floors, under the
    physics floor's 25 then. The latency now divides by the floor its own processes measured
    (docs/measurements.md "The latency against the floor its own processes measured") and the
    floor is 12: kept as a guard of this test, which is not about the floor."""
    healthy_floor = _newest_floor_us(tmp_path)
    # one confirmation round: the confirmed verdict is the point, not the mode's 3 rounds
    # (test_emucluster's workflows test); 2 rounds fewer of every TCP case, 15 s of CI
    tcp = session(env, " --max-retries=1")
    floor = _newest_floor_us(tmp_path)
    if tcp.returncode == 0 and healthy_floor and floor and floor > 2.5 * healthy_floor:
        print(f"the TCP session's floor read {floor} us against {healthy_floor}: once more")
        return session(env, " --max-retries=1"), True
    return tcp, False


def readme_run_as(tmp_path: Path, references: Path, key: str, floor: str | None = None):
    """session(extra_env, more arguments): the README's run command of the ping-pong latency
    and bandwidth with Open MPI on machine `key` (the override), its references under
    `references`, its results under tmp_path; short confirmation pauses (the outcome, not the
    pause, is under test). `floor`: the machine's declared tolerance floor
    (FABRICSUITE_LOCAL_TOLERANCE_FLOOR), where given."""
    run, _test = readme_commands()
    env = dict(os.environ, FABRICSUITE_RESULTS=str(tmp_path / "results"),
               RFM_REFERENCE_PREFIX=str(references), FABRICSUITE_MACHINE=key)
    if floor is not None:
        env["FABRICSUITE_LOCAL_TOLERANCE_FLOOR"] = floor
    # QUICK: the latency at 8 B alone, the bandwidth to 1 MiB (the verdicts, not the curves, are
    # under test; 2.5x shorter sessions)
    args = (" -n '^NetbenchPingPong(Bandwidth)?%' -p openmpi -S confirm_pause_s=1 "
            + shlex.join(QUICK))

    def session(extra_env=None, more=""):
        return subprocess.run(["bash", "-c", run + args + more], cwd=REPO_ROOT,
                              env=dict(env, **(extra_env or {})), capture_output=True,
                              text=True, timeout=900)
    return session


@pytest.mark.integration
@NEEDS_OPEN_MPI
def test_a_fresh_machine_records_then_takes_its_own_references_then_judges(tmp_path):
    references = tmp_path / "reference"
    references.mkdir()
    key = "fresh-test-machine-1x2x1-1gib"
    # The ping-pong latency and bandwidth at every distance this machine has, with Open MPI (the
    # other MPI takes the same path). Both checks: when the recording sessions meet the machine
    # in both of its states the small-message latency is too noisy to judge and is recorded
    # only (CI of 954866b: spread 80 %), while the 1 MiB bandwidth stays judged and catches TCP
    # loopback.
    # the floor a shared CI host needs (CI of 1b03827: sessions minutes apart spread 0.2 %, a
    # later one read -10.5 % in all rounds); TCP loopback stays far beyond it (latency 10x)
    session = readme_run_as(tmp_path, references, key, floor="0.25")

    own = reference_file("local", references, key)
    # Recorded, never counted as passed, judged only against the limits of the cores
    # (fabricsuite.data.limits), until the third session takes the references, or, when one
    # session met a slow phase of a shared machine (3.5x on a CI host), the fifth, where that one
    # run is set aside. A session whose runs another process disturbed is set aside, rightly
    # (its figures say nothing of the machine): it adds a session, at most two of them (this
    # VM, 2026-12-03: a short process beside the third session took 16 % of a rank's CPU).
    set_aside = 0
    for n in range(1, baseline.OUTLIER_RUNS_FROM + 3):
        proc = session()
        outcome = _outcome(proc)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        if "taken from" in outcome:
            assert n - set_aside >= machine.SESSIONS_FOR_REFERENCES, outcome
            break
        assert "outcome: RECORDED" in outcome and "judged only against the limits of their " \
            "cores" in outcome, outcome
        assert re.search(r"ran (\d+) case\(s\): 0 passed, 0 failed, \1 recorded without "
                         r"references", outcome), outcome
        assert not own.exists()
        if "set aside: disturbed" in outcome and re.search(
                rf"session {n - 1 - set_aside} of \d+ recorded \(\d+ more set aside", outcome):
            set_aside += 1
            assert set_aside <= 2, outcome
        elif n - set_aside < machine.SESSIONS_FOR_REFERENCES:
            assert f"session {n - set_aside} of {machine.SESSIONS_FOR_REFERENCES} recorded" \
                in outcome, outcome
        else:
            assert n - set_aside < baseline.OUTLIER_RUNS_FROM \
                and "one session lies far off" in outcome, outcome
    else:
        pytest.fail(f"no references taken after {n} sessions:\n{outcome}")
    assert "references for this machine (" in outcome and str(own) in outcome, outcome
    data = load_file(own)
    assert data["_machine"]["key"] == key
    # the declared floor is each bound's narrowest (-0.2 on a higher-is-better figure)
    assert {round(stat["floor"], 3) for stat in data["_statistics"].values()} <= {0.25, 0.2}, data
    # A case disturbed in one of those sessions has too few quiet ones: the outcome says it is
    # left out, and a later session takes what the file lacks (CI of 18ace3b: the latency's
    # cases were set aside once, the bandwidth's taken alone), or says why it waits (CI of
    # 13d1805: one of its runs far off, so it waits for the fifth session)
    for _more in range(3):
        if "NetbenchPingPong" in data:
            break
        assert any(why in outcome for why in ("left out", "lies far off", "set aside")) \
            and "NetbenchPingPong" in outcome, outcome
        proc = session()
        outcome = _outcome(proc)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        data = load_file(own)
    taken = data["NetbenchPingPong"]["local:default"]
    assert set(taken) == {"openmpi"}, taken
    # The next session is judged against them; forced onto TCP loopback, a confirmed regression
    # (the person says TCP is meant: else the run fails in sanity, carried by tcp).
    # TCP loopback's latency is 50-130 floors of the cores (healthy: 2-4): the physics floor of
    # 25 holds however the machine's own references bound it, or record it only where the
    # recording sessions moved it 2x (CI 2026-12-02: recorded only, TCP at 350 floors and -24 %
    # of bandwidth passed)
    tcp, _again = _tcp_session(tmp_path, session, {"OMPI_MCA_btl": "self,tcp",
                                                   "UCX_TLS": "tcp,self",
                                                   "FABRICSUITE_LOCAL_TRANSPORT": "tcp"})
    outcome = _outcome(tcp)
    assert tcp.returncode == 1, tcp.stdout[-4000:] + tcp.stderr[-2000:]
    assert "outcome: REGRESSION" in outcome, outcome
    # each judged variable that TCP moves is named; a recorded-only one is shown as such
    assert re.search(r"REGRESSION NetbenchPingPong\S* .*(latency_8B_median_us|latency_8B_floor_"
                     r"multiple|bandwidth_\w+_MBps)", outcome), outcome
    floor_line = re.search(r"REGRESSION NetbenchPingPong .*latency_8B_floor_multiple.*", outcome)
    held = load_file(own)["_recorded_only"] if "_recorded_only" in load_file(own) else {}
    if floor_line and any(k.endswith("latency_8B_floor_multiple") for k in held):
        # beyond its physics floor where the machine's own file records it only
        assert "[against the limits of its cores: beyond the physics floor, which holds" in \
            floor_line.group(0), outcome
    (report,) = [p for p in (tmp_path / "results" / "reports").glob("run-report-*.json")
                 if p.stat().st_mtime == max(q.stat().st_mtime for q in
                                             (tmp_path / "results" / "reports").glob("*.json"))]
    cases = [c for run_ in json.loads(report.read_text())["runs"] for c in run_["testcases"]
             if c["result"] != "skip" and c.get("perfvalues")]
    assert cases and all(c["judged"] is True and c["machine"] == key for c in cases)
    for case in cases:
        if not case["name"].startswith("NetbenchPingPong "):
            continue
        distance = case["distance"]
        perf = case["perfvalues"]["local:default:latency_8B_median_us"]
        assert perf[1] == taken[case["environ"]][distance]["latency_8B_median_us"][0]
    # The machine's file is its own: the committed references of other machines are untouched.
    assert yaml.safe_load(own.read_text())["_provenance"]["produced_by"] == "fabricsuite baseline"


# --- the first sessions, on the real report of a session (tests/data/baseline) ------------------

REAL = Path(__file__).parent / "data" / "baseline" / "run-report-pt2pt-local.json"


def recorded_session(directory: Path, number: int, key: str, distance: str,
                     latency_us: float, interference: str = "") -> dict:
    """The real session's NetbenchPingPong case, run on machine `key` without references at
    `distance`, with the given latency (`interference`: what disturbed it, as the check
    records it); written as run report number `number`."""
    report = json.loads(REAL.read_text())
    case = next(c for run in report["runs"] for c in run["testcases"]
                if c["name"].startswith("NetbenchPingPong ") and c["result"] == "pass")
    case.update(machine=key, machine_descr="a test box", judged=False, distance=distance,
                name=f"NetbenchPingPong %distance={distance}", interference=interference)
    for perf in case["perfvalues"].values():
        perf[0], perf[1], perf[3], perf[5] = latency_us, None, None, "pass"
    case["jobid"] = f"job-{number}"  # a session of its own ran a job of its own
    report["runs"] = [{"testcases": [case]}]
    report["session_info"].update(uuid=f"session-{number}",
                                  time_start_unix=1_790_000_000 + 3600 * number)
    path = directory / f"run-report-{number:02d}.json"
    path.write_text(json.dumps(report))
    os.utime(path, (1_790_000_000 + number, 1_790_000_000 + number))
    return report


@pytest.mark.integration
@NEEDS_OPEN_MPI
def test_a_new_machine_of_a_known_kind_is_compared_and_judged_only_by_its_cores(tmp_path):
    """A fresh machine whose kind has references in the repository (another machine's: the
    development VM's file, test data here) records its own sessions and shows how far it lies
    from the kind, as information only; it is judged only against the limits of its own cores
    (fabricsuite.data.limits): TCP loopback still fails, on the efficiency, never on the kind."""
    from mpi_support import vm_reference_file

    references = tmp_path / "reference"
    kind = vm_reference_file()
    (references / "local").mkdir(parents=True)
    shutil.copy(kind, references / "local" / kind.name)
    key = f"{kind.stem}.0123abcd"  # the override stands in for the host identity
    session = readme_run_as(tmp_path, references, key)

    proc = session()
    outcome = _outcome(proc)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "outcome: RECORDED" in outcome and "session 1 of 3 recorded" in outcome, outcome
    assert re.search(r"compared with another machine of this kind \(amd-epyc-1x2x1-24gib; "
                     r"information, not a verdict", outcome), outcome
    # the farthest figures follow (on the bad side, or on the good side where none is worse)
    assert re.search(r"(farthest on the bad side|none on the bad side; farthest):\n"
                     r"  NetbenchPingPong\w* local:default openmpi \S+ \w+_(us|MBps) \d+% "
                     r"(below|above) \(", outcome), outcome
    assert re.search(r"against the limits of their cores .*:\n  NetbenchPingPong", outcome), \
        outcome
    # only the efficiencies were judged, against their physics floors; the kind's values are
    # carried as information; the session counts as one of this machine's recording sessions
    report = max((tmp_path / "results" / "reports").glob("run-report-*.json"),
                 key=lambda p: p.stat().st_mtime)
    cases = [c for run_ in json.loads(report.read_text())["runs"] for c in run_["testcases"]
             if c["result"] != "skip" and c.get("perfvalues")]
    assert cases and all(c["judged"] is False and c["reference_origin"] == "physics"
                         and c["kind_origin"] == kind.stem and c["kind_reference"]
                         and c["limits_prologue"] for c in cases), cases
    bandwidth = next(c for c in cases if c["name"].startswith("NetbenchPingPongBandwidth"))
    perf = bandwidth["perfvalues"]
    assert perf["local:default:bandwidth_1MiB_ceiling_fraction"][1:3] == [0.05, 0.0]
    assert perf["local:default:bandwidth_1MiB_MBps"][1:4] == [0, None, None]  # not judged
    # forced onto TCP loopback (the person says TCP is meant): the latency lies 100+ floors
    # over the cores' cache-line floor (healthy: 2-4)
    tcp, again = _tcp_session(tmp_path, session, {"OMPI_MCA_btl": "self,tcp",
                                                  "FABRICSUITE_LOCAL_TRANSPORT": "tcp"})
    recorded = 2 if again else 1  # a passed TCP session was recorded as the machine's second
    outcome = _outcome(tcp)
    assert tcp.returncode == 1, tcp.stdout[-4000:] + tcp.stderr[-2000:]
    assert re.search(r"REGRESSION NetbenchPingPong\S* .*latency_8B_floor_multiple = [\d.]+ "
                     r"x_floor .*\[against the limits of its cores", outcome), outcome
    assert "this session is not recorded" in outcome, outcome
    # a failed session is no recording session of the machine
    assert f"session {recorded} of 3 recorded" in outcome, outcome


def test_references_are_taken_after_three_sessions_and_never_retaken(tmp_path):
    reports, refs, key = tmp_path / "reports", tmp_path / "ref", "test-box-1x2x1-1gib"
    reports.mkdir()
    own = machine.reference_path(refs, key)
    for n, latency in enumerate((0.30, 0.31, 0.32), start=1):
        lines = take_references(recorded_session(reports, n, key, "same-l3", latency),
                                        reports, refs)
        if n < 3:
            assert f"session {n} of 3 recorded" in lines[0] and not own.exists(), lines
    assert "taken from 3 sessions over 2.0 h" in lines[0] and str(own) in lines[0], lines
    data = load_file(own)
    entry = data["NetbenchPingPong"]["local:default"]["openmpi"]["same-l3"]
    assert entry["latency_8B_median_us"][0] == 0.31
    assert data["_machine"]["key"] == key and data["_machine"]["description"] == "a test box"
    taken = own.read_text()
    # a case the file lacks (another distance) is recorded and added after its own 3 sessions;
    # what the file holds stays as it was
    for n in (4, 5, 6):
        lines = take_references(recorded_session(reports, n, key, "same-core", 0.2),
                                        reports, refs)
    entry = load_file(own)["NetbenchPingPong"]["local:default"]["openmpi"]
    assert entry["same-core"]["latency_8B_median_us"][0] == 0.2
    assert entry["same-l3"] == yaml.safe_load(taken)["NetbenchPingPong"]["local:default"][
        "openmpi"]["same-l3"]
    # another machine's sessions in the same results directory count for that machine only
    other = take_references(recorded_session(reports, 7, "other-box", "same-l3", 9.0),
                                    reports, refs)
    assert "session 1 of 3 recorded" in other[0], other


def test_a_figure_the_machine_moves_by_2x_is_recorded_only(tmp_path, monkeypatch):
    reports, refs, key = tmp_path / "reports", tmp_path / "ref", "noisy-box-1x2x1-1gib"
    reports.mkdir()
    for n, latency in enumerate((0.13, 0.35, 0.24), start=1):
        lines = take_references(recorded_session(reports, n, key, "same-l3", latency),
                                        reports, refs)
    assert "1 recorded only" in lines[0] or "2 recorded only" in lines[0], lines
    data = load_file(machine.reference_path(refs, key))
    median = data["NetbenchPingPong"]["local:default"]["openmpi"]["same-l3"][
        "latency_8B_median_us"]
    assert median[1] is None and median[2] is None
    reason = data["_recorded_only"][
        "NetbenchPingPong.local:default.openmpi.same-l3.latency_8B_median_us"]
    assert reason.startswith("recorded only: too noisy to catch 2x")
    # the outcome of a later session says so, with the reason
    from fabricsuite.commands import session

    monkeypatch.setenv("RFM_REFERENCE_PREFIX", str(refs))
    later = recorded_session(reports, 4, key, "same-l3", 0.3)
    lines = session.recorded_only_lines(later)
    assert lines[0].startswith("recorded, not judged: ") and "too noisy" in lines[1], lines
    # a figure its physics floor still judges (limits.within_physics) is not called unjudged
    case = later["runs"][0]["testcases"][0]
    case["physics_bounded"] = [key.split(":")[-1] for key in case["perfvalues"]]
    assert session.recorded_only_lines(later) == []


def test_one_session_far_off_the_others_waits_for_five_sessions(tmp_path):
    """A slow phase in one of the first three sessions would make the figure unjudged for good;
    the references wait for the fifth session, where that one run is set aside."""
    reports, refs, key = tmp_path / "reports", tmp_path / "ref", "slow-phase-box-1x2x1-1gib"
    reports.mkdir()
    own = machine.reference_path(refs, key)
    for n, latency in enumerate((0.30, 1.05, 0.31, 0.32), start=1):
        lines = take_references(recorded_session(reports, n, key, "same-l3", latency),
                                        reports, refs)
        assert not own.exists(), lines
    assert "session 4 recorded; one session lies far off the others" in lines[0], lines
    assert "one run of 4 lies 233% off the median" in lines[1], lines
    assert "run the same command again 1 more time(s)" in lines[2], lines
    lines = take_references(recorded_session(reports, 5, key, "same-l3", 0.30),
                                    reports, refs)
    assert "taken from 5 sessions" in lines[0] and "0 recorded only" in lines[0], lines
    data = load_file(own)
    entry = data["NetbenchPingPong"]["local:default"]["openmpi"]["same-l3"]
    assert entry["latency_8B_median_us"][0] == 0.31 and entry["latency_8B_median_us"][2] < 1.0
    stats = data["_statistics"]["NetbenchPingPong local:default openmpi same-l3 "
                                "latency_8B_median_us"]
    assert stats["set_aside"] > 2.0, stats


def test_disturbed_sessions_are_set_aside_and_the_references_wait_for_quiet_ones(tmp_path):
    """Five recording sessions, two beside another process on a bound CPU (their latency 2-3x):
    the references are those of the three quiet sessions alone, and the outcome says what was
    set aside and by whom (issue 38: a disturbed run is never a reference sample)."""
    reports, refs, key = tmp_path / "reports", tmp_path / "ref", "busy-box-1x2x1-1gib"
    reports.mkdir()
    busy = {2: "rank 0 (vm, CPU 0) waited 70% of the run for its CPU; taken by: "
               "python(10122):50%",
            4: "rank 1 (vm, CPU 1) waited 27% of the run for its CPU; taken by: f951(25428):27%"}
    latencies = {1: 0.30, 2: 0.92, 3: 0.31, 4: 0.70, 5: 0.32}
    own = machine.reference_path(refs, key)
    for n in range(1, 6):
        lines = take_references(recorded_session(reports, n, key, "same-l3", latencies[n],
                                                 busy.get(n, "")), reports, refs)
        if n < 5:
            assert not own.exists(), lines
        if n == 4:  # four sessions, two of them quiet: the references wait
            assert "session 2 of 3 recorded (2 more set aside: disturbed)" in lines[0], lines
    text = "\n".join(lines)
    assert "taken from 3 sessions" in lines[0], text
    assert "2 of 5 sessions set aside for 2 variables" in text, text
    assert "disturbed by f951, python" in text, text
    # the same references as from the three quiet sessions alone
    quiet_reports, quiet_refs = tmp_path / "quiet", tmp_path / "quiet-ref"
    quiet_reports.mkdir()
    for n in (1, 3, 5):
        take_references(recorded_session(quiet_reports, n, key, "same-l3", latencies[n]),
                        quiet_reports, quiet_refs)
    taken = load_file(own)["NetbenchPingPong"]
    alone = load_file(machine.reference_path(quiet_refs, key))["NetbenchPingPong"]
    assert taken == alone and taken["local:default"]["openmpi"]["same-l3"][
        "latency_8B_median_us"][0] == 0.31


def test_a_file_copied_under_another_machines_name_is_refused(tmp_path):
    """A machine's file names its machine (_machine.key): the development VM's references
    copied as this machine's own must not judge it (issue 39: the key was never read)."""
    from mpi_support import vm_reference_file

    from fabricsuite.data.references import ReferenceFileError

    kind = vm_reference_file()
    copied = machine.reference_path(tmp_path, f"{kind.stem}.0123abcd")
    copied.parent.mkdir(parents=True)
    shutil.copy(kind, copied)
    with pytest.raises(ReferenceFileError, match=r"_machine\.key is 'amd-epyc-1x2x1-24gib', but "
                                                 r"the file is named for 'amd-epyc-1x2x1-24gib\."
                                                 r"0123abcd'"):
        load_file(copied)
    assert load_file(kind)["_machine"]["key"] == kind.stem  # the kind's own file is read


@pytest.mark.parametrize("owner", ["delete", "a string", {"key": None}, {"key": ""},
                                   {"description": "no key"}])
def test_a_machine_file_that_does_not_say_whose_it_is_is_refused(tmp_path, owner):
    """Another machine's file with its `_machine` section deleted (or a string, or `key:
    null`) was read as this machine's own, and the session failed as a REGRESSION against the
    other machine's figures (issue 53)."""
    from mpi_support import vm_reference_file

    from fabricsuite.data.references import ReferenceFileError

    data = yaml.safe_load(vm_reference_file().read_text())
    if owner == "delete":
        del data["_machine"]
    else:
        data["_machine"] = owner
    copied = machine.reference_path(tmp_path, "fresh-box-1x4x2-16gib.0123abcd")
    copied.parent.mkdir(parents=True)
    copied.write_text(yaml.safe_dump(data))
    with pytest.raises(ReferenceFileError, match=r"no _machine\.key says whose references"):
        load_file(copied)
