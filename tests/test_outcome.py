"""The one-screen outcome of a session and the nightly run (issue 13, items 1, 2 and 6).

- fabricsuite.base.console folds skipped cases out of ReFrame's real output, records them with their
  reasons and prints progress while a case runs;
- fabricsuite.commands.session prints counts, skips grouped by reason, every failure with its
figures,
  classifies the session (0 within references, 1 regression, 2 broken) and writes JUnit XML in
  which a skip is <skipped>, never a pass;
- `fabricsuite nightly` runs real ReFrame sessions on `local` and exits 0, 1 or 2.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from mpi_support import (
    full_file_system,
    local_distance,
    local_pairs,
    reframe,
    write_local_references,
)

from fabricsuite.base import console
from fabricsuite.commands import session
from fabricsuite.commands.emucluster import QUICK

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data"
SKIP_OUTPUT = DATA / "console" / "reframe-local-skips.out"
SKIP_REPORT = DATA / "console" / "run-report-local-skips.json"
FAILED_REPORT = DATA / "baseline" / "run-report-pt2pt-local.json"
BIN = Path(sys.executable).parent


def _fold(text: str, every: float = 60.0) -> tuple[str, list[dict], int]:
    out, skips = io.StringIO(), io.StringIO()
    folded = console.fold(io.StringIO(text), out, skips, every)
    return out.getvalue(), [json.loads(x) for x in skips.getvalue().splitlines()], folded


def test_fold_drops_every_skipped_case_and_keeps_the_rest():
    """Real output of a session with 110 skipped and 3 run cases (tests/data/console)."""
    text = SKIP_OUTPUT.read_text()
    out, skips, folded = _fold(text)
    plain = console.ANSI.sub("", out)
    assert folded == 110 and len(skips) == 110
    assert "SKIP" not in plain
    # the run cases keep their RUN and OK lines, and their performance lines
    assert plain.count("[ RUN      ]") == 3 and plain.count("      OK ] (") == 3
    assert "P: b_eff_MBps" in plain and "Ran 3/113 test case(s)" in plain
    # no RUN line of a skipped case survives
    skipped_cases = {s["case"] for s in skips}
    assert not [line for line in plain.splitlines()
                if line.startswith("[ RUN") and line.split("] ", 1)[1] in skipped_cases]
    reasons = {s["reason"] for s in skips}
    assert "local:default has 1 node(s); other-node needs 2" in reasons
    # every other line is passed through unchanged and in order
    kept = [line for line in text.splitlines() if "SKIP" not in line]
    assert [line for line in out.splitlines() if line in kept] == [
        line for line in kept if line in out.splitlines()]


def test_progress_is_printed_while_a_case_runs():
    """A case that prints nothing for a while still gets progress lines (every 0.2 s here)."""
    reader, writer = os.pipe()
    source, sink = os.fdopen(reader), io.StringIO()

    def produce():
        with os.fdopen(writer, "w") as w:
            w.write("[ RUN      ] NetbenchPingPong %distance=same-l3 /1 @local:default+openmpi\n")
            w.write("[       OK ] ( 1/4) NetbenchBuild ~local /2 @local:default+openmpi\n")
            w.flush()
            time.sleep(1.0)
            w.write("[       OK ] ( 2/4) NetbenchPingPong %distance=same-l3 /1 "
                    "@local:default+openmpi\n")

    thread = threading.Thread(target=produce)
    thread.start()
    console.fold(source, sink, None, every=0.2)
    thread.join()
    lines = sink.getvalue().splitlines()
    progress = [line for line in lines if line.startswith("[ fabricsuite ]")]
    assert len(progress) >= 2, lines
    assert "case 1 of 4 done (1 ok)" in progress[0]
    assert "elapsed" in progress[0] and "left at this pace" in progress[0]
    # the RUN line of the running case was not held back until it finished
    assert lines.index(next(x for x in lines if x.startswith("[ RUN"))) < lines.index(progress[0])


def test_progress_line_estimate():
    clock = iter([0.0, 600.0]).__next__
    p = console.Progress(clock)
    p.seen("[       OK ] ( 10/40) X /1 @a:b+c")
    assert p.line() == ("[ fabricsuite ] case 10 of 40 done (1 ok), 10m00s elapsed, about "
                        "30m00s left at this pace")


@pytest.mark.parametrize("case, reason, group", [
    ("Npb %node_count=1 %kernel=cg /6d9c501d @local:default+openmpi",
     "NAS Parallel Benchmarks: cg.S.x or cg.S.2 not found",
     "NAS Parallel Benchmarks: <kernel>.S.x or <kernel>.S.2 not found"),
    ("NetbenchDense %node_count=4 %placement=per-node /dc625fe5 @local:default+openmpi",
     "local:default has 1 node(s), this case needs 4",
     "local:default has 1 node(s), this case needs <node_count>"),
    ("NetbenchDense %node_count=1 %placement=per-node /dc625fe5 @local:default+openmpi",
     "local:default has 1 node(s), per-node placement",
     "local:default has 1 node(s), <placement> placement"),
])
def test_skip_reasons_are_grouped_across_parameter_values(case, reason, group):
    assert session.skip_group(case, reason) == group


def test_summary_of_a_real_session_fits_a_screen():
    _, skips, _ = _fold(SKIP_OUTPUT.read_text())
    report = json.loads(SKIP_REPORT.read_text())
    lines = session.summary_lines(report, skips, ["-p", "openmpi"])
    assert len(lines) <= 24
    assert lines[1] == "ran 2 case(s): 2 passed, 0 failed; 110 skipped"
    assert "     74  local:default has 1 node(s), this case needs <node_count>" in lines
    assert sum(int(line.split()[0]) for line in lines if line.startswith("  ") and
               line.split()[0].isdigit()) == 110
    assert lines[-1] == "outcome: PASSED: 2 case(s) within their references (exit 0)"


def test_a_performance_failure_is_a_regression_with_its_figures():
    report = json.loads(FAILED_REPORT.read_text())
    code, why = session.classify(report, ["-p", "openmpi"])
    assert code == session.REGRESSED and "1 case(s) outside" in why
    lines = session.summary_lines(report, [], ["-p", "openmpi"])
    assert lines[1] == "ran 2 case(s): 1 passed, 1 failed (1 performance); 10 skipped"
    regression = [line for line in lines if "REGRESSION" in line and "bandwidth_1MiB" in line]
    assert regression and "1337.04 MB/s" in regression[0] and "reference 6978.3" in regression[0]
    assert lines[-1].endswith("(exit 1)")


def _broken_variant(phase: str, reason: str) -> dict:
    report = json.loads(FAILED_REPORT.read_text())
    variant = copy.deepcopy(report)
    for case in variant["runs"][-1]["testcases"]:
        if case["result"] == "fail":
            case["fail_phase"], case["fail_reason"] = phase, reason
    return variant


@pytest.mark.parametrize("phase, reason, shown", [
    ("sanity", "sanity error: launcher-exit-status: exit status 1", "sanity"),
    ("run", "job error: srun: error: Unable to allocate resources", "run"),
    ("performance", "performance error: no reference value found for performance variable "
     "'bandwidth_1MiB_MBps' on system 'local:default'", "reference missing"),
])
def test_broken_cases_exit_2_even_beside_a_regression(phase, reason, shown):
    report = _broken_variant(phase, reason)
    assert session.classify(report)[0] == session.BROKEN
    lines = session.summary_lines(report, [])
    assert any(line.startswith(f"  BROKEN NetbenchPingPongBandwidth local:default openmpi "
                               f"same-l3: {shown}:") for line in lines), lines


def test_a_retried_case_outside_once_then_inside_is_a_transient():
    """--max-retries: the failure of the first round and the pass of the confirmation (one
    round outside, one inside: not confirmed): 0."""
    report = json.loads(FAILED_REPORT.read_text())
    retry = copy.deepcopy(report["runs"][-1])
    retry["testcases"] = [copy.deepcopy(c) for c in retry["testcases"] if c["result"] == "fail"]
    retry["testcases"][0].update(result="pass", fail_phase=None, fail_reason=None)
    for perf in retry["testcases"][0]["perfvalues"].values():
        perf[5] = "pass"  # as ReFrame writes a pass
    report["runs"].append(retry)
    assert session.classify(report)[0] == session.WITHIN
    lines = session.summary_lines(report, [])
    assert any(line.startswith("  confirmation passed: NetbenchPingPongBandwidth")
               for line in lines)


def test_junit_reports_skips_as_skipped_and_failures_with_figures(tmp_path):
    _, skips, _ = _fold(SKIP_OUTPUT.read_text())
    report = json.loads(FAILED_REPORT.read_text())
    path = tmp_path / "nightly.xml"
    session.write_junit(report, skips, path)
    suite = ET.parse(path).getroot().find("testsuite")
    assert suite.get("tests") == str(3 + 110) and suite.get("skipped") == "110"
    assert suite.get("failures") == "1" and suite.get("errors") == "0"
    skipped = suite.findall("testcase/skipped")
    assert len(skipped) == 110 and all(s.get("message") for s in skipped)
    (failure,) = suite.findall("testcase/failure")
    assert "bandwidth_1MiB_MBps = 1337.04 MB/s" in failure.text
    assert not list(tmp_path.glob(".*.tmp"))  # written atomically, nothing left behind


# --- real sessions -----------------------------------------------------------------------------

def _nightly(tmp_path: Path, *args: str, refs: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, FABRICSUITE_RESULTS=str(tmp_path / "results"),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if refs is not None:
        env["RFM_REFERENCE_PREFIX"] = str(refs)
    return subprocess.run([str(BIN / "fabricsuite"), "nightly", "--system", "local",
                           "--junit", str(tmp_path / "junit.xml"), *args],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=900)


@pytest.mark.integration
def test_nightly_that_tests_nothing_exits_2_with_its_skips_in_junit(tmp_path):
    proc = _nightly(tmp_path, "--", "-n", "NetbenchPingPong%distance=other-node",
                    "-p", "openmpi")
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr
    assert "SKIP" not in proc.stdout
    assert "local:default has 1 node(s); <distance> needs 2" in proc.stdout
    assert "outcome: BROKEN" in proc.stdout and "no test case ran" in proc.stdout
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite.get("skipped") == "1"
    # the session is stored, tagged
    report = json.loads(next((tmp_path / "results" / "reports").glob("*.json")).read_text())
    assert report["session_info"]["tag"] == "nightly"


@pytest.mark.integration
def test_nightly_exit_status_0_1_2_from_real_runs(tmp_path):
    """One timed case (ping-pong latency at this machine's first distance), three times: against
    a reference it meets (0), against one it cannot meet, confirmed by the retry (1), and with a
    reference for one of its two variables only (2: the other one's is missing)."""
    distance = local_distance()
    # one confirmation round (--max-retries=1 after the mode's 3): the exit status is the point
    # here, the rounds are test_emucluster's workflows test; 4 rounds fewer, 20 s of CI
    args = ["--tag", "t1", "--", "-n", f"^NetbenchPingPong%distance={distance}", "-p",
            "openmpi", "-S", "confirm_pause_s=0", "--max-retries=1", *QUICK]
    met, unmet, none = (tmp_path / d for d in ("met", "unmet", "none"))
    for directory, factor in ((met, 100.0), (unmet, 0.001), (none, None)):
        body = ("NetbenchPingPong:\n  $index: [$partition, $environ, distance]\n"
                f"  local:default:\n    openmpi:\n      {distance}:\n"
                f"        latency_8B_min_us: [{0.5 * (factor or 100)}, null, 0.1, us]\n")
        if factor is not None:
            body += f"        latency_8B_median_us: [{0.5 * factor}, null, 0.1, us]\n"
        write_local_references(directory, body)
    ok = _nightly(tmp_path / "r0", *args, refs=met)
    assert ok.returncode == 0, ok.stdout[-3000:] + ok.stderr
    assert "outcome: PASSED: 1 case(s) within their references (exit 0)" in ok.stdout
    bad = _nightly(tmp_path / "r1", *args, refs=unmet)
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr
    assert f"REGRESSION NetbenchPingPong local:default openmpi {distance} latency_8B" in bad.stdout
    assert "confirmed: first run" in bad.stdout
    missing = _nightly(tmp_path / "r2", *args, refs=none)
    assert missing.returncode == 2, missing.stdout[-3000:] + missing.stderr
    assert "reference missing" in missing.stdout, missing.stdout[-3000:]


@pytest.mark.integration
def test_a_busy_loop_on_a_bound_core_is_interference_not_a_regression(tmp_path):
    """The unmet reference of test_nightly_exit_status_0_1_2_from_real_runs, with a busy loop
    pinned to rank 1's CPU through the session (its confirmation round too): the outcome
    names the process and calls it interference, exit 2, never a regression. One confirmation
    round (--max-retries=1 after the mode's 3), as in that test: every round is disturbed alike,
    and two more rounds of the same cost CI 20 s."""
    distance = local_distance()
    cpu = local_pairs()[distance][1]
    unmet = tmp_path / "unmet"
    write_local_references(
        unmet, "NetbenchPingPong:\n  $index: [$partition, $environ, distance]\n"
        f"  local:default:\n    openmpi:\n      {distance}:\n"
        "        latency_8B_min_us: [0.0005, null, 0.1, us]\n"
        "        latency_8B_median_us: [0.0005, null, 0.1, us]\n")
    hog_script = tmp_path / "busyloop"  # named in /proc after the script
    hog_script.write_text("#!/bin/sh\nwhile :; do :; done\n")
    hog_script.chmod(0o755)
    hog = subprocess.Popen(["taskset", "-c", str(cpu), str(hog_script)])
    try:
        proc = _nightly(tmp_path / "r", "--", "-n", f"^NetbenchPingPong%distance={distance}",
                        "-p", "openmpi", "-S", "confirm_pause_s=0", "--max-retries=1",
                        *QUICK, refs=unmet)
    finally:
        hog.kill()
        hog.wait()
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr
    assert "REGRESSION" not in proc.stdout
    assert f"INTERFERENCE NetbenchPingPong local:default openmpi {distance}: " in proc.stdout
    assert f"taken by: busyloop({hog.pid}):" in proc.stdout
    outcome = next(ln for ln in proc.stdout.splitlines() if ln.startswith("outcome: "))
    assert outcome.startswith("outcome: BROKEN") and "interference, not the fabric" in outcome
    (error,) = ET.parse(tmp_path / "r" / "junit.xml").getroot().findall(
        "testsuite/testcase/error")
    assert error.get("type") == "interference"


@pytest.mark.integration
def test_a_failed_build_is_one_error_and_its_dependents_one_skip_each_naming_it(tmp_path):
    """A real build failure (the MPI compiler wrapper on PATH fails): the build is the one
    error, with the build's own error line; each case that depends on it is one <skipped>
    naming it, not a performance failure with message "None" plus a skip (issue 27)."""
    broken = tmp_path / "bin"
    broken.mkdir()
    for wrapper in ("mpicc.openmpi", "mpicc"):
        (broken / wrapper).write_text("#!/bin/sh\necho 'cc1: fatal error: broken toolchain' >&2\n"
                                      "exit 1\n")
        (broken / wrapper).chmod(0o755)
    env_path = f"{broken}:{os.environ['PATH']}"
    distance = local_distance()
    proc = subprocess.run(
        [str(BIN / "fabricsuite"), "nightly", "--system", "local", "--junit",
         str(tmp_path / "junit.xml"), "--", "-n", f"^NetbenchPingPong%distance={distance}",
         "-n", f"^NetbenchPingPongBandwidth%distance={distance}", "-p", "openmpi"],
        capture_output=True, text=True, cwd=REPO, timeout=900,
        env=dict(os.environ, PATH=env_path, FABRICSUITE_RESULTS=str(tmp_path / "results"),
                 OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr
    assert "outcome: BROKEN: 1 case(s) broken; 2 not run (a dependency failed)" in proc.stdout
    assert "NOT RUN 2 case(s): their dependency failed: NetbenchBuild" in proc.stdout
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    cases = suite.findall("testcase")
    errors = [c for c in cases if c.find("error") is not None]
    skipped = [c.find("skipped").get("message") for c in cases if c.find("skipped") is not None]
    assert [c.get("classname") for c in errors] == ["NetbenchBuild"]
    # the build's own error, not only ReFrame's "build job failed with exit code: 1" (issue 28)
    cause = "rfm_build.err: cc1: fatal error: broken toolchain"
    assert cause in proc.stdout and cause in errors[0].find("error").get("message")
    assert not [c for c in cases if c.find("failure") is not None]
    assert len(skipped) == 2 and all(m.startswith("not run: its dependency failed: NetbenchBuild")
                                     for m in skipped), skipped
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures"),
            suite.get("skipped")) == ("3", "1", "0", "2")


def test_nightly_bad_options_are_one_line(tmp_path, capsys):
    from fabricsuite.commands import cli

    for argv, message in ((["--system", "a b"], "not a ReFrame system name"),
                          (["--system", "local", "--tag", "x;rm"], "--tag"),
                          (["--system", "local", "--progress-every", "0"], "positive"),
                          (["--system", "local", "--progress-every", "nan"], "positive"),
                          # a pause that fails in time.sleep naming nothing, or holds the
                          # machine for days (issue 53): refused before ReFrame starts
                          (["--system", "local", "--", "-S", "confirm_pause_s=-5"],
                           "-S confirm_pause_s=-5: give the pause"),
                          (["--system", "local", "--", "-S", "confirm_pause_s=nan"],
                           "0 to 600"),
                          (["--system", "local", "--", "-SNetbenchPingPong.confirm_pause_s=1e9"],
                           "-S NetbenchPingPong.confirm_pause_s=1e9")):
        assert cli.main(["nightly", *argv]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.integration
def test_perflog_export_to_a_time_series_store_when_asked(tmp_path):
    """FABRICSUITE_PERFLOG_URL turns on ReFrame's httpjson perflog handler: a real session
    POSTs one JSON record per timed case, with the figures, to a real HTTP server (here a
    stand-in store on localhost); without the variable nothing is sent (off by default)."""
    import http.server

    received: list[dict] = []

    class Store(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append(json.loads(body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Store)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/fabricsuite"
    try:
        for export in (None, url):
            env = dict(os.environ)
            env.pop("FABRICSUITE_PERFLOG_URL", None)
            if export:
                env["FABRICSUITE_PERFLOG_URL"] = export
            proc = reframe("-c", "checks/pt2pt.py", "--system", "local", "-n",
                           f"^NetbenchPingPong%distance={local_distance()}", "-p", "openmpi",
                           "-r", "-S", "require_reference=false", *QUICK,
                           results=tmp_path / "results", env=env)
            assert "Ran 2/2" in proc.stdout, proc.stdout[-3000:]
            if export is None:
                assert received == []
    finally:
        server.shutdown()
    (record,) = [r for r in received if "NetbenchPingPong" in str(r.get("check_name"))]
    assert record["facility"] == "fabricsuite" and record["check_system"] == "local"
    assert record["check_environ"] == "openmpi" and record["check_distance"] == local_distance()
    # ReFrame flattens the figures: check_perf_<variable>_value, _unit, _ref, ...
    assert record["check_perf_latency_8B_median_us_value"] > 0
    assert record["check_perf_latency_8B_median_us_unit"] == "us"
    assert "check_env_vars" not in record  # the bulky fields are left out


def test_the_skip_record_survives_a_missing_reports_directory(tmp_path):
    """ReFrame creates RESULTS/reports only when it writes the report, at the end; the console
    filter starts with the session and must create it (a CI run caught the skips lost)."""
    skips = tmp_path / "not-yet" / "reports" / "run-report-x.skips.jsonl"
    proc = subprocess.run([sys.executable, "-m", "fabricsuite.base.console", "--skips", str(skips)],
                          input=SKIP_OUTPUT.read_text(), capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert len(skips.read_text().splitlines()) == 110
    assert "110 skipped case(s) folded" in proc.stdout


# --- the nightly under faults (issue 27): exit 2 with one line, whatever happens -------------

#: The long nightlies a test started: each ends, with all it started, when its test does
#: (`_no_nightly_outlives_its_test`).
_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_nightly_outlives_its_test():
    yield
    while _STARTED:
        _end_everything_below(_STARTED.pop())


def _long_nightly(results: Path, junit: Path, *extra: str) -> subprocess.Popen:
    """A nightly whose one case runs for tens of seconds (1000 repetitions of the sweep)."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    _STARTED.append(subprocess.Popen(
        [str(BIN / "fabricsuite"), "nightly", "--system", "local", "--results", str(results),
         "--junit", str(junit), *extra, "--", "-n", f"^NetbenchPingPong%distance="
         f"{local_distance()}", "-p", "openmpi", "-S",
         "netbench_options=--repetitions,1000", "-S", "require_reference=false"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO))
    return _STARTED[-1]


def _netbench_below(pid: int) -> list[int]:
    """PIDs of netbench processes in the process tree of `pid`."""
    from fabricsuite.commands.nightly import _descendants

    found = []
    for child, _start in _descendants(pid):
        try:
            if Path(f"/proc/{child}/comm").read_text().strip() == "netbench":
                found.append(child)
        except OSError:
            pass
    return found


def _wait_for_netbench(process: subprocess.Popen, timeout: float = 120.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        ranks = _netbench_below(process.pid)
        if ranks:
            return ranks
        time.sleep(0.2)
    raise AssertionError("the nightly's netbench never started")


@pytest.mark.integration
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_ends_reframe_and_its_job_and_the_session_is_not_judged(tmp_path, signame):
    """A cron or CI time-out (SIGTERM), a closed terminal (SIGHUP: the session was stored as an
    ordinary run report, issue 39)."""
    import signal

    results, junit = tmp_path / "results", tmp_path / "junit.xml"
    nightly = _long_nightly(results, junit)
    ranks = _wait_for_netbench(nightly)
    nightly.send_signal(getattr(signal, signame))
    out, err = nightly.communicate(timeout=120)
    assert nightly.returncode == 2, out[-3000:] + err
    assert not [pid for pid in ranks if Path(f"/proc/{pid}").exists()
                and Path(f"/proc/{pid}/comm").read_text().strip() == "netbench"], \
        "a rank of the interrupted nightly still runs"
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"fabricsuite nightly: BROKEN: interrupted by {signame}: the "
                           f"session was not judged"), err
    # the report is kept, under a name the workflows do not read; the JUnit says broken
    reports = results / "reports"
    assert not list(reports.glob("run-report-*.json"))
    assert len(list(reports.glob("interrupted-run-report-*.json"))) == 1, err
    error = ET.parse(junit).getroot().find("testsuite/testcase/error")
    assert error is not None and f"interrupted by {signame}" in error.get("message")


@pytest.mark.integration
def test_a_killed_nightly_takes_its_session_with_it(tmp_path):
    """SIGKILL gives the nightly no say: ReFrame (in a session of its own) and its ranks ran on
    with the machine's lock released (issue 39). ReFrame gets SIGTERM when the nightly dies
    (its parent-death signal): within 10 s nothing of the session runs, and a report it wrote
    is an interrupted session to every workflow (its aborted cases)."""
    import signal

    from fabricsuite.commands.nightly import _descendants
    from fabricsuite.data import cases

    results = tmp_path / "results"
    nightly = _long_nightly(results, tmp_path / "junit.xml")
    _wait_for_netbench(nightly)
    session = _descendants(nightly.pid)
    assert session
    nightly.send_signal(signal.SIGKILL)
    nightly.communicate(timeout=60)
    _assert_gone_within(session, 10)
    for path in (results / "reports").glob("run-report-*.json"):
        assert cases.was_interrupted(json.loads(path.read_text())), path


def _assert_gone_within(session: list[tuple[int, str]], seconds: float) -> None:
    """No process of `session` (pid, start time) runs `seconds` later, looked at until then (not
    slept through: issue 65)."""
    from fabricsuite.commands.nightly import _start_time

    deadline = time.monotonic() + seconds
    while True:
        alive = [pid for pid, start in session if start and _start_time(pid) == start]
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not alive, [Path(f"/proc/{pid}/cmdline").read_bytes()[:200] for pid in alive]


def _reframe_of(nightly: subprocess.Popen) -> int:
    from fabricsuite.commands.nightly import _descendants

    for pid, _start in _descendants(nightly.pid):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if len(argv) > 1 and argv[1].endswith(b"/reframe"):
                return pid
    raise AssertionError("no ReFrame below the nightly")


def _signal_reframe(nightly: subprocess.Popen, reframe: int, signum: int) -> tuple[str, str]:
    """`signum` to ReFrame alone, then the nightly's output once it ends. A SIGTERM that
    ReFrame's handler raised where ReFrame went on (CI of 80929b3, once: the session ran 2
    minutes more) is sent once more after 30 s, as an operator would; ReFrame ignores every
    SIGTERM after the one it obeys."""
    import signal

    os.kill(reframe, signum)
    try:
        return nightly.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        if signum != signal.SIGTERM:
            raise
    print("ReFrame went on 30 s after SIGTERM: sent once more")
    with contextlib.suppress(ProcessLookupError):
        os.kill(reframe, signum)
    return nightly.communicate(timeout=90)


def _end_everything_below(nightly: subprocess.Popen) -> None:
    """A nightly a test gave up on ends here with all it started (its lock held the next
    tests' nightlies off: CI of 80929b3, three tests after one)."""
    from fabricsuite.commands.nightly import _descendants

    if nightly.poll() is not None:
        return
    for pid, _start in _descendants(nightly.pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 9)
    nightly.kill()
    nightly.communicate()


@pytest.mark.integration
@pytest.mark.parametrize("signame", ["SIGTERM", "SIGKILL"])
def test_a_reframe_ended_by_someone_else_counts_nowhere_and_leaves_no_job(tmp_path, signame):
    """A signal to ReFrame alone (an operator's kill, the OOM killer): with SIGTERM the session
    was `PASSED` and `1 of 3 sessions recorded`; with SIGKILL its ranks measured on with both
    locks released (issue 53). Now the session is interrupted, counted nowhere, nothing of it
    runs within 5 s, and the next nightly starts."""
    import signal

    from fabricsuite.commands.nightly import _descendants

    results, junit = tmp_path / "results", tmp_path / "junit.xml"
    nightly = _long_nightly(results, junit)
    _wait_for_netbench(nightly)
    session = _descendants(nightly.pid)
    out, err = _signal_reframe(nightly, _reframe_of(nightly), getattr(signal, signame))
    assert nightly.returncode == 2, out[-3000:] + err
    _assert_gone_within(session, 5)
    last = err.strip().splitlines()[-1]
    if signame == "SIGKILL":
        assert "left" in err and "ending them" in err, err
        assert "ReFrame was killed by SIGKILL before it wrote a run report" in last, err
    else:
        assert last.startswith("fabricsuite nightly: BROKEN: interrupted (ReFrame aborted its "
                               "cases on a signal this nightly did not send)"), err
        assert len(list((results / "reports").glob("interrupted-run-report-*.json"))) == 1
    assert not list((results / "reports").glob("run-report-*.json"))  # nothing counts it
    # the next session starts: the locks went with the first
    again = subprocess.run(
        [str(BIN / "fabricsuite"), "nightly", "--system", "local", "--results", str(results),
         "--", "-n", "^NOSUCHCHECK$"], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert "another nightly" not in again.stderr and "selected no test case" in again.stderr, (
        again.stderr)


def test_a_session_missing_from_the_database_is_named(tmp_path):
    """ReFrame only warns when it cannot store a session (a corrupt results.db) and exits 0:
    the session was lost to history, compare and the page with exit 0 (issue 53)."""
    import sqlite3

    from fabricsuite.data.store import storage_problem

    uuid = "67a0c6d0-60a7-4e5b-a41f-f1b1cd3308f2"
    db = tmp_path / "results.db"
    assert storage_problem(db, uuid) == f"no results database {db}"
    db.write_bytes(b"\x8f" * 4096)
    assert "cannot be read (file is not a database)" in storage_problem(db, uuid)
    db.unlink()
    with contextlib.closing(sqlite3.connect(db)) as made:  # ReFrame 4.10's table
        made.execute("CREATE TABLE sessions(uuid TEXT PRIMARY KEY, session_start_unix REAL, "
                     "session_end_unix REAL, json_blob TEXT, report_file TEXT)")
        made.commit()
    assert storage_problem(db, uuid) == f"session 67a0c6d0 is not in {db}"
    with contextlib.closing(sqlite3.connect(db)) as made:
        made.execute("INSERT INTO sessions(uuid) VALUES (?)", (uuid,))
        made.commit()
    assert storage_problem(db, uuid) is None


@pytest.mark.integration
def test_a_nightly_whose_session_could_not_be_stored_is_not_exit_0(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    (results / "results.db").write_bytes(b"\x8f" * 4096)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run(
        [str(BIN / "fabricsuite"), "nightly", "--system", "local", "--results", str(results),
         "--", "-n", f"^NetbenchPingPong%distance={local_distance()}", "-p", "openmpi",
         *QUICK],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=600)
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fabricsuite nightly: BROKEN: the session was not stored: ") and \
        "file is not a database" in last and "--reports" in last, proc.stderr
    # the outcome's own last line says it too (it had said "(exit 0)" above the BROKEN line)
    (outcome,) = [line for line in proc.stdout.splitlines() if line.startswith("outcome: ")]
    assert outcome.startswith("outcome: BROKEN: the session was not stored (") and \
        "its cases: " in outcome and outcome.endswith("(exit 2)"), outcome


PYTHON3 = "/usr/bin/python3"


@pytest.mark.skipif(os.geteuid() != 0 or not os.access(PYTHON3, os.X_OK),
                    reason="needs root to act as a second user (nobody), and /usr/bin/python3")
def test_the_machine_lock_serves_every_user():
    """After a root nightly the machine's lock was root's 0644 file in a sticky directory: every
    other user's nightly crashed with `Permission denied` (issue 53). A lock now is 0666 from
    its creation; an old 0644 one is taken read-only (flock needs no write access); a holder
    of any user makes the other Busy."""
    import shutil
    import tempfile

    # as /run/lock: world-writable, sticky; in /tmp, where nobody reaches it (not tmp_path)
    shared = Path(tempfile.mkdtemp(prefix="fabricsuite-lock-test-", dir="/tmp"))
    shared.chmod(0o1777)
    try:
        _lock_as_two_users(shared)
    finally:
        shutil.rmtree(shared)


def _lock_as_two_users(shared):
    from fabricsuite.data import store

    take = ("import sys\nfrom pathlib import Path\nfrom fabricsuite.data import store\n"
            "try:\n    with store.exclusive_or_busy(Path(sys.argv[1])):\n        print('held')\n"
            "except store.Busy as err:\n    print('busy', err)\n")

    def as_nobody(lock):
        # Debian's python3: this one (pyenv's, under /root) is root's alone
        return subprocess.run([PYTHON3, "-c", take, str(lock)], capture_output=True,
                              text=True, user="nobody", cwd=REPO, timeout=60,
                              env=dict(os.environ, PYTHONPATH=str(REPO)))

    old = shared / "old.lock"
    old.write_text("PID 1 since 2026-12-01 00:00:00 UTC\n")
    old.chmod(0o644)
    assert as_nobody(old).stdout.strip() == "held", as_nobody(old)
    new = shared / "new.lock"
    with store.exclusive_or_busy(new):
        assert new.stat().st_mode & 0o777 == 0o666
        said = as_nobody(new)
        assert said.stdout.startswith(f"busy PID {os.getpid()} since "), said
        assert ", user root" in said.stdout, said
    assert as_nobody(new).stdout.strip() == "held"
    with store.exclusive_or_busy(new):  # and root after nobody: the lock is still one
        pass


@pytest.mark.integration
def test_a_second_nightly_of_the_system_is_refused_while_one_runs(tmp_path):
    first = _long_nightly(tmp_path / "r1", tmp_path / "j1.xml")
    try:
        _wait_for_netbench(first)
        # another results directory too: the embedded default's jobs share this machine's cores
        # and another TMPDIR: the machine's lock is not under it (issue 39)
        other_tmp = tmp_path / "tmp"
        other_tmp.mkdir()
        for results in (tmp_path / "r1", tmp_path / "r2"):
            second = subprocess.run(
                [str(BIN / "fabricsuite"), "nightly", "--system", "local", "--results",
                 str(results), "--", "-n", "^NetbenchPingPong%", "-p", "openmpi"],
                capture_output=True, text=True, cwd=REPO, timeout=120,
                env=dict(os.environ, TMPDIR=str(other_tmp)))
            assert second.returncode == 2, second.stdout[-2000:] + second.stderr
            assert len(second.stderr.strip().splitlines()) == 1, second.stderr
            assert f"another nightly of local is running (PID {first.pid} since" in \
                second.stderr, second.stderr
            assert "ReFrame" not in second.stdout
        # the README's run command shares the machine's lock
        local = subprocess.run([str(REPO / "ci" / "run-local.sh"), "-n", "^NetbenchPingPong%"],
                               capture_output=True, text=True, cwd=REPO, timeout=300,
                               env=dict(os.environ, FABRICSUITE_RESULTS=str(tmp_path / "r3")))
        assert local.returncode == 2, local.stdout[-2000:] + local.stderr
        assert f"another nightly of local is running (PID {first.pid} since" in local.stderr
    finally:
        first.send_signal(2)
        first.communicate(timeout=120)
    assert first.returncode == 2


def test_a_results_path_is_the_callers_and_one_with_a_blank_is_refused(tmp_path, monkeypatch,
                                                                       capsys):
    from argparse import Namespace

    from fabricsuite.base.commandline import results_dir
    from fabricsuite.commands import cli

    monkeypatch.chdir(tmp_path)
    assert results_dir(Namespace(results="rel")) == tmp_path / "rel"
    assert cli.main(["nightly", "--system", "local", "--results", "my results"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "holds a blank" in err, err
    assert not (tmp_path / "my results").exists()


@pytest.mark.integration
def test_a_full_disk_is_exit_2_with_one_line_and_a_junit_that_says_broken(tmp_path):
    with full_file_system(tmp_path / "full", keep=("results",)) as full:
        proc = subprocess.run(
            [str(BIN / "fabricsuite"), "nightly", "--system", "local", "--results",
             str(full / "results"), "--junit", str(tmp_path / "junit.xml"), "--", "-n",
             "^NetbenchPingPong%", "-p", "openmpi"],
            capture_output=True, text=True, cwd=REPO, timeout=300,
            env=dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1"))
    assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert len(proc.stdout.splitlines()) < 200, proc.stdout[-3000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fabricsuite nightly: BROKEN: ") and "No space left on device" in last
    error = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite/testcase/error")
    assert error is not None and "No space left on device" in error.get("message")


def _kind_cases(scale: float) -> list[dict]:
    """The real report's measured cases as if recorded beside another machine of this kind whose
    values are the report's references (the checks' `kind_reference`, `kind_origin`), every
    figure `scale` times them (0.5: latencies half, bandwidths half)."""
    report = json.loads(FAILED_REPORT.read_text())
    cases = [c for run in report["runs"] for c in run["testcases"] if c["perfvalues"]]
    for case in cases:
        case["kind_origin"] = "other-vm"
        case["kind_reference"] = {key.split(":")[-1]: perf[1]
                                  for key, perf in case["perfvalues"].items()}
        for perf in case["perfvalues"].values():
            perf[0] = perf[1] * scale
    return cases


def test_the_kind_comparison_names_the_figures_on_the_bad_side():
    # latencies 30 % up are worse, bandwidths 30 % up better: only the latencies are listed
    lines = session.kind_comparison_lines(_kind_cases(1.3))
    assert lines[0].startswith("compared with another machine of this kind (other-vm; "), lines
    assert lines[0].endswith("farthest on the bad side:"), lines
    assert lines[1:] and all("latency" in line and "30% above" in line for line in lines[1:])


def test_a_machine_better_in_every_figure_still_shows_the_farthest():
    # every figure on the good side (CI on 2026-11-29: a faster host printed an empty list)
    cases = _kind_cases(1.0)
    for case in cases:
        for key, perf in case["perfvalues"].items():
            better = 0.5 if case["perf_directions"][key.split(":")[-1]] == "lower" else 2.0
            perf[0] = perf[1] * better
    lines = session.kind_comparison_lines(cases)
    assert lines[0].endswith("better; none on the bad side; farthest:"), lines
    assert len(lines) == 1 + session.KIND_SHOWN, lines
    assert lines[1].startswith("  NetbenchPingPongBandwidth local:default openmpi same-l3 "), lines
    assert "100% above" in lines[1], lines
