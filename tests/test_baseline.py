"""`fabricsuite baseline` never turns a regression into the reference and never loses a file.

The run reports are ReFrame 4.10.4's own: tests/data/baseline/run-report-pt2pt-local.json is a
real one (see the README there); the variants below change only the fields a real run would
(values, result, fail_phase, fail_reason, perf_directions).
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import textwrap
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from fabricsuite import REPO_ROOT
from fabricsuite.commands import reference_file
from fabricsuite.commands.baseline import read_reports
from fabricsuite.commands.cli import main
from fabricsuite.data.store import backup

REAL_REPORT = Path(__file__).parent / "data" / "baseline" / "run-report-pt2pt-local.json"
PYTHON = sys.executable
LAT = "latency_8B_median_us"
LAT_MIN = "latency_8B_min_us"

REFERENCE = """\
# site notes: hand-written, must survive a baseline
NetbenchPingPong:
  $index: [$partition, $environ, distance]
  'local:default':
    openmpi:
      same-l3:
        # measured on the quiet node
        latency_8B_median_us: [0.3, null, 0.7, us]    # keep me
        latency_8B_min_us: [0.2, null, 0.7, us]
"""


def real() -> dict:
    return json.loads(REAL_REPORT.read_text())


def case_of(report: dict, check: str, distance: str = "same-l3") -> dict:
    return next(c for run in report["runs"] for c in run["testcases"]
                if c["name"].split(" ")[0] == check and c.get("distance") == distance)


def pingpong(report: dict) -> dict:
    return case_of(report, "NetbenchPingPong")


def set_values(case: dict, **values: float) -> None:
    for key, perf in case["perfvalues"].items():
        variable = key.split(":")[-1]
        if variable in values:
            perf[0] = values[variable]


def fail_reference(case: dict) -> None:
    """As ReFrame 4.10 reports a case whose figures missed their reference."""
    case["result"], case["fail_phase"] = "fail", "performance"
    lines = [f"{k.split(':')[-1]}={p[0]} {p[4]}, expected {p[1]} (l=0, u={p[1] * 1.7})"
             for k, p in case["perfvalues"].items()]
    case["fail_reason"] = ("performance error: \n      failed to meet reference(s): \n        "
                           + "\n        ".join(lines))
    for perf in case["perfvalues"].values():
        perf[5] = "fail"


def no_reference(case: dict, missing: str) -> None:
    """As ReFrame 4.10 reports a case with require_reference and no reference for `missing`:
    the variables evaluated before it are there, unchecked (result None), the rest absent."""
    case["result"], case["fail_phase"] = "fail", "performance"
    case["fail_reason"] = (f"performance error: no reference value found for performance "
                           f"variable '{missing}' on system 'local:default'")
    kept = {}
    for key, perf in case["perfvalues"].items():
        if key.endswith(f":{missing}"):
            break
        kept[key] = [perf[0], 0, None, None, perf[4], None]
    case["perfvalues"] = kept


def write_report(directory: Path, name: str, report: dict, mtime: float | None = None,
                 session: str | None = None) -> Path:
    """`report` as a run report file of its own session (a fresh session uuid, started at
    `mtime`), or of the session `session` names (the runs of one `--repeat` session)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    info = report.get("session_info") if isinstance(report, dict) else None
    if isinstance(info, dict):  # not in the malformed reports of the bad-input tests
        info["uuid"] = session or str(uuid.uuid4())
        if mtime is not None:
            info["time_start_unix"] = mtime
        # a session of its own ran jobs of its own (a copy is known by its jobs: store)
        for run in report.get("runs") or []:
            for case in run.get("testcases") or [] if isinstance(run, dict) else []:
                if isinstance(case, dict) and case.get("jobid") and not session:
                    case["jobid"] = f"{case['jobid']}-{info['uuid'][:8]}"
    path.write_text(json.dumps(report))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def latency_reports(directory: Path, latencies: list[float], regressed: set[int] = frozenset(),
                    edit=None, session: str | None = None) -> list[Path]:
    """One report per latency, each its own session; those at the indices in `regressed`
    failed their reference. With `session`: one report of that session holding every run (a
    session's runs are in its one report: two files of one uuid are one session)."""
    if session is not None:
        merged = None
        for path in latency_reports(directory / "runs", latencies, regressed, edit):
            report = json.loads(path.read_text())
            if merged is None:
                merged = report
            else:
                merged["runs"][0]["testcases"].append(pingpong(report))
        return [write_report(directory, "run-report-0.json", merged, 1_000_000, session)]
    paths = []
    for i, latency in enumerate(latencies):
        report = real()
        case = pingpong(report)
        set_values(case, **{LAT: latency, LAT_MIN: latency * 0.9})
        if i in regressed:
            fail_reference(case)
        if edit:
            edit(report)
        paths.append(write_report(directory, f"run-report-{i}.json", report,
                                  1_000_000 + 3600 * i, session))
    return paths


def run(*args: str, capsys) -> tuple[int, str, str]:
    try:
        rc = main(["baseline", *args])
    except SystemExit as exc:  # argparse
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def baseline_of_three(tmp_path: Path, capsys, edit) -> Path:
    """The reference file `fabricsuite baseline` writes from three sessions of equal figures,
    each case changed by `edit` (a session that must succeed)."""
    out = tmp_path / "local.yaml"
    reports = latency_reports(tmp_path / "r", [1, 1, 1], edit=edit)
    rc, _out, err = run("--system", "local", "--output", str(out), *map(str, reports),
                        capsys=capsys)
    assert rc == 0, err
    return out


def reference_at(path: Path, environ: str = "openmpi", check: str = "NetbenchPingPong") -> dict:
    return yaml.safe_load(path.read_text())[check]["local:default"][environ]["same-l3"]


@pytest.fixture
def ref_file(tmp_path) -> Path:
    path = tmp_path / "ref" / "local.yaml"
    path.parent.mkdir()
    path.write_text(REFERENCE)
    return path


# --- healthy runs only ---------------------------------------------------------------------------

def test_the_real_report_leaves_out_the_case_that_failed_its_reference():
    collected = read_reports([REAL_REPORT], system="local")
    # PingPong passed; PingPongBandwidth really missed its reference on the shared VM.
    assert collected.used == 1
    assert dict(collected.left_out) == {"failed their performance reference": 1}
    assert {(s.check, s.variable) for s in collected.samples} == {
        ("NetbenchPingPong", LAT), ("NetbenchPingPong", LAT_MIN)}
    assert all(s.better == "lower" and s.levels == (("distance", "same-l3"),)
               for s in collected.samples)


def test_regressed_runs_never_become_the_reference(tmp_path, ref_file, capsys):
    # 3 of 6 runs at 3x latency, each failing its reference: the old reference was their median.
    reports = latency_reports(tmp_path / "r", [0.33, 1.0, 0.34, 1.0, 1.0, 0.35],
                              regressed={1, 3, 4})
    rc, _out, err = run("--system", "local", "--output", str(ref_file), *map(str, reports),
                        capsys=capsys)
    assert rc == 0, err
    assert reference_at(ref_file)[LAT][0] == pytest.approx(0.34)
    assert "used 3 healthy test case(s)" in err
    # the 3 regressed PingPong cases and the real report's failed PingPongBandwidth in each of 6
    assert "left out 9: 9 failed their performance reference" in err


def test_too_few_healthy_runs_keep_the_old_reference(tmp_path, ref_file, capsys):
    # 3 of 5 runs at 3x latency: 2 healthy runs are fewer than --min-runs (3).
    reports = latency_reports(tmp_path / "r", [0.33, 1.0, 0.34, 1.0, 1.0], regressed={1, 3, 4})
    args = ["--system", "local", "--output", str(ref_file), *map(str, reports)]
    rc, _out, err = run(*args, capsys=capsys)
    assert rc == 2, reference_at(ref_file)
    assert "fewer than 3 healthy runs" in err and "lower --min-runs" in err
    assert ref_file.read_text() == REFERENCE
    rc, _out, err = run(*args, "--min-runs", "2", capsys=capsys)
    assert rc == 0, err
    assert reference_at(ref_file)[LAT][0] == pytest.approx(0.335)


def test_a_case_that_only_lacked_a_reference_is_healthy(tmp_path, ref_file, capsys):
    reports = latency_reports(tmp_path / "r", [0.4, 0.41, 0.42],
                              edit=lambda r: no_reference(pingpong(r), LAT_MIN))
    rc, _out, err = run("--system", "local", "--output", str(ref_file), *map(str, reports),
                        capsys=capsys)
    assert rc == 0, err
    assert "used 3 healthy test case(s)" in err
    refs = reference_at(ref_file)
    assert refs[LAT][0] == pytest.approx(0.41)
    assert refs[LAT_MIN] == [0.2, None, 0.7, "us"]  # not in those runs: unchanged


# --- direction from perf_directions ------------------------------------------------------------

VARIABLES = {  # variable: (unit, direction, value)
    "mops_total": ("Mop/s", "higher", 1520.0),
    "message_rate": ("messages/s", "higher", 2.5e6),
    "overlap_pct": ("%", "higher", 80.0),
    "protocol_ranges": ("ranges", "equal", 3.0),
    "time_s": ("s", "lower", 0.03),
}


def _external_variables(report: dict) -> None:
    case = pingpong(report)
    case["perfvalues"] = {f"local:default:{v}": [value, 0, None, None, unit, "pass"]
                          for v, (unit, _better, value) in VARIABLES.items()}
    case["perf_directions"] = {v: better for v, (_u, better, _v) in VARIABLES.items()}


def test_an_overlap_of_zero_is_recorded_only(tmp_path, capsys):
    """Issue 28: overlap references of 0 % were written with a bound and could never fail."""
    def no_overlap(report):
        case = pingpong(report)
        case["perfvalues"] = {"local:default:overlap_pct": [0.0, 0, None, None, "%", "pass"]}
        case["perf_directions"] = {"overlap_pct": "higher"}

    out = baseline_of_three(tmp_path, capsys, no_overlap)
    assert reference_at(out)["overlap_pct"] == [0.0, None, None, "%"]
    recorded = yaml.safe_load(out.read_text())["_recorded_only"]
    assert "cannot get worse" in recorded["NetbenchPingPong.local:default.openmpi.same-l3."
                                          "overlap_pct"]


def test_the_bad_side_comes_from_perf_directions_not_the_unit(tmp_path, capsys):
    out = baseline_of_three(tmp_path, capsys, _external_variables)
    refs = reference_at(out)
    for variable in ("mops_total", "message_rate", "overlap_pct"):
        value, lower, upper, unit = refs[variable]
        assert lower is not None and lower < 0 and upper is None, (variable, refs[variable])
        assert value * (1 + lower) > value / 2  # catches a 2x drop
    assert refs["time_s"][1] is None and 0 < refs["time_s"][2] < 1
    value, lower, upper, unit = refs["protocol_ranges"]
    assert (value, unit) == (3.0, "ranges") and lower < 0 < upper  # both bounds


def test_equal_figures_are_bounded_by_what_they_are(tmp_path, capsys):
    """Issue 12: a protocol threshold is judged in sweep steps, not as a percentage; M = g / G
    (continuous, no better side) gets the noise bound on both sides; a count the seen range +-1."""
    step = 2 ** 0.25
    runs = iter([(4096, 1650.0, 3), (4096, 1700.0, 3), (4871, 1675.0, 4)])

    def loggp_like(report):
        threshold, m_bytes, ranges = next(runs)
        case = pingpong(report)
        case["perfvalues"] = {
            "local:default:threshold_bytes": [threshold, 0, None, None, "B", "pass"],
            "local:default:M_bytes": [m_bytes, 0, None, None, "B", "pass"],
            "local:default:ranges": [ranges, 0, None, None, "ranges", "pass"]}
        case["perf_directions"] = {"threshold_bytes": "equal", "M_bytes": "equal",
                                   "ranges": "equal"}
        case["perf_size_steps"] = {"threshold_bytes": step}
        case["perf_counts"] = ["ranges"]

    out = baseline_of_three(tmp_path, capsys, loggp_like)
    refs = reference_at(out)
    value, lower, upper, unit = refs["threshold_bytes"]
    assert (value, unit) == (4096, "B")
    # one step below the lowest seen (4096 / 1.19 = 3444) and one above the highest (4871 x 1.19)
    assert value * (1 + lower) == pytest.approx(4096 / step, abs=5)
    assert value * (1 + upper) == pytest.approx(4871 * step, abs=5)
    assert value * (1 + lower) > 4096 / step ** 2 and value * (1 + upper) < 4871 * step ** 2
    value, lower, upper, unit = refs["M_bytes"]
    # noise, both sides, the same factor: x (1 + f) above, / (1 + f) below
    assert value == 1675.0 and 0.02 <= upper < 0.5 and lower == -round(upper / (1 + upper), 3)
    from fabricsuite.commands.baseline import Samples, propose

    wild = Samples("C", "local:default", "openmpi", "M_bytes", "B", [1000.0, 1010.0, 4000.0],
                   directions={"equal"}, counts={False})
    _value, lower, upper, _unit = propose(wild)[0]
    assert -1 < lower < 0 and upper > 1  # a lower bound never at -100 %
    value, lower, upper, unit = refs["ranges"]
    assert value == 3 and value * (1 + lower) <= 2 and value * (1 + upper) >= 5
    assert value * (1 + lower) > 1 and value * (1 + upper) < 6


def test_a_check_with_a_built_in_reference_is_never_baselined(tmp_path, capsys):
    """NetbenchSelfConsistency's reference (0 violations) is in the check: its runs, stored
    with reference_builtin, must not become entries of the reference file."""
    def builtin(report):
        pingpong(report)["reference_builtin"] = True

    out = tmp_path / "local.yaml"
    reports = latency_reports(tmp_path / "r", [0.4, 0.41, 0.42], edit=builtin)
    rc, _out, err = run("--system", "local", "--output", str(out), *map(str, reports),
                        capsys=capsys)
    assert "NetbenchPingPong" not in (out.read_text() if out.exists() else "")
    assert rc == 2 and "no healthy performance values" in err, err


def test_a_variable_without_a_direction_is_left_out_never_guessed(tmp_path, ref_file, capsys):
    def older_checks(report):
        case = pingpong(report)
        case["perf_directions"] = {LAT: "lower"}  # LAT_MIN's direction is not given

    reports = latency_reports(tmp_path / "r", [0.4, 0.41, 0.42], edit=older_checks)
    rc, _out, err = run("--system", "local", "--output", str(ref_file), *map(str, reports),
                        capsys=capsys)
    assert rc == 0, err
    refs = reference_at(ref_file)
    assert refs[LAT][0] == pytest.approx(0.41)
    assert refs[LAT_MIN] == [0.2, None, 0.7, "us"]
    assert "re-run with the current checks" in err and LAT_MIN in err


def test_a_direction_that_is_no_direction_is_left_out(tmp_path, ref_file, capsys):
    def typo(report):
        pingpong(report)["perf_directions"] = {LAT: "up", LAT_MIN: "lower"}

    reports = latency_reports(tmp_path / "r", [0.4, 0.41, 0.42], edit=typo)
    rc, _out, err = run("--system", "local", "--output", str(ref_file), *map(str, reports),
                        capsys=capsys)
    assert rc == 0, err
    refs = reference_at(ref_file)
    assert refs[LAT] == [0.3, None, 0.7, "us"] and refs[LAT_MIN][0] == pytest.approx(0.369)
    assert "is none of lower, higher, equal; fix the check's declaration" in err
    assert f"{LAT} (up)" in err


def test_reports_without_perf_directions_write_nothing(tmp_path, ref_file, capsys):
    def before_perf_directions(report):
        for run_ in report["runs"]:
            for case in run_["testcases"]:
                case.pop("perf_directions", None)

    reports = latency_reports(tmp_path / "r", [0.4, 0.41, 0.42], edit=before_perf_directions)
    rc, _out, err = run("--system", "local", "--output", str(ref_file), *map(str, reports),
                        capsys=capsys)
    assert rc == 2
    assert "re-run with the current checks" in err
    assert err.strip().splitlines()[-1].startswith("fabricsuite baseline: no variable is left")
    assert ref_file.read_text() == REFERENCE


# --- selecting runs ------------------------------------------------------------------------------

@pytest.fixture
def twelve_runs(tmp_path) -> Path:
    results = tmp_path / "results"
    latency_reports(results / "reports", [0.4 + i / 100 for i in range(12)])
    return results


@pytest.mark.parametrize("args, message", [
    (["--last", "0"], "--last 0: give the number of newest run reports to use, 1 or more"),
    (["--last", "-3"], "--last -3: give the number of newest run reports to use, 1 or more"),
    (["--last", "100"], "--last 100: only 12 run report(s) in "),
    (["--last", "1"], "--last 1 is fewer than --min-runs 3"),
    (["--last", "2", "--min-runs", "0"], "--min-runs 0: give 1 or more"),
])
def test_bad_run_selection_is_one_line(twelve_runs, ref_file, capsys, args, message):
    rc, out, err = run("--system", "local", "--results", str(twelve_runs), "--output",
                       str(ref_file), *args, capsys=capsys)
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("fabricsuite baseline: ") and message in err
    assert ref_file.read_text() == REFERENCE


def test_last_takes_the_newest_runs(twelve_runs, ref_file, capsys):
    rc, _out, err = run("--system", "local", "--results", str(twelve_runs), "--output",
                        str(ref_file), "--last", "3", capsys=capsys)
    assert rc == 0, err
    assert reference_at(ref_file)[LAT][0] == pytest.approx(0.50)  # 0.49, 0.50, 0.51


def test_results_directory_defaults_to_fabricsuite_results(twelve_runs, ref_file, capsys,
                                                           monkeypatch):
    monkeypatch.setenv("FABRICSUITE_RESULTS", str(twelve_runs))
    rc, _out, err = run("--system", "local", "--output", str(ref_file), capsys=capsys)
    assert rc == 0, err
    assert reference_at(ref_file)[LAT][0] == pytest.approx(0.49)  # the newest 5: 0.47..0.51
    prov = yaml.safe_load(ref_file.read_text())["_provenance"]
    assert set(prov["reports"]) == {f"run-report-{i}.json" for i in range(7, 12)}


# --- files: mode, directory, backups, interruption, concurrency, comments -------------------------

def test_replaced_file_keeps_its_mode_and_a_new_one_is_0644(tmp_path, ref_file, capsys):
    reports = [str(p) for p in latency_reports(tmp_path / "r", [0.4, 0.41, 0.42])]
    ref_file.chmod(0o640)
    assert run("--system", "local", "--output", str(ref_file), *reports, capsys=capsys)[0] == 0
    assert stat.S_IMODE(ref_file.stat().st_mode) == 0o640
    new = tmp_path / "new.yaml"
    assert run("--system", "local", "--output", str(new), *reports, capsys=capsys)[0] == 0
    assert stat.S_IMODE(new.stat().st_mode) == 0o644
    assert new.read_text().startswith("# Reference values per partition")


def test_missing_directory_is_one_line(tmp_path, capsys):
    reports = [str(p) for p in latency_reports(tmp_path / "r", [0.4, 0.41, 0.42])]
    rc, _out, err = run("--system", "local", "--output", str(tmp_path / "nowhere" / "l.yaml"),
                        *reports, capsys=capsys)
    assert rc == 2
    assert err.strip().splitlines()[-1] == (
        f"fabricsuite baseline: cannot write {tmp_path}/nowhere/l.yaml: directory "
        f"{tmp_path}/nowhere does not exist; create it or pass --output")


def test_read_only_directory_is_one_line(tmp_path, ref_file, capsys, monkeypatch):
    reports = [str(p) for p in latency_reports(tmp_path / "r", [0.4, 0.41, 0.42])]
    if os.geteuid() == 0:  # root writes anywhere: make the lock file's creation fail as it would
        def denied(path):
            lock = path.with_name(f".{path.name}.lock")
            raise PermissionError(13, "Permission denied", str(lock))
        monkeypatch.setattr(reference_file, "locked", denied)
    else:
        ref_file.parent.chmod(0o555)
    try:
        rc, _out, err = run("--system", "local", "--output", str(ref_file), *reports,
                            capsys=capsys)
    finally:
        ref_file.parent.chmod(0o755)
    assert rc == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"fabricsuite baseline: cannot write {ref_file.parent}/")
    assert "permission denied; make its directory writable or pass --output" in last
    assert ref_file.read_text() == REFERENCE


def test_every_baseline_keeps_a_dated_backup(tmp_path, ref_file, capsys):
    first = [str(p) for p in latency_reports(tmp_path / "a", [0.4, 0.41, 0.42])]
    second = [str(p) for p in latency_reports(tmp_path / "b", [0.5, 0.51, 0.52])]
    assert run("--system", "local", "--output", str(ref_file), *first, capsys=capsys)[0] == 0
    after_first = ref_file.read_text()
    assert run("--system", "local", "--output", str(ref_file), *second, capsys=capsys)[0] == 0
    backups = sorted(ref_file.parent.glob("local.yaml.*.bak"))
    assert sorted(p.read_text() for p in backups) == sorted([REFERENCE, after_first])
    for path in backups:  # local.yaml.2026-11-23T201500Z.bak, or ...Z-2.bak within one second
        stamp = path.name.removeprefix("local.yaml.").removesuffix(".bak").split("Z")[0]
        datetime.strptime(stamp, "%Y-%m-%dT%H%M%S")
    assert sorted(p.name for p in ref_file.parent.iterdir()) == sorted(
        ["local.yaml"] + [p.name for p in backups])  # no temporary or lock file left


def test_a_backup_never_replaces_an_existing_one(ref_file):
    now = datetime(2026, 11, 23, 20, 15, tzinfo=UTC)
    first = backup(ref_file, now)
    ref_file.write_text(REFERENCE + "# changed\n")
    second = backup(ref_file, now)
    assert first.name == "local.yaml.2026-11-23T201500Z.bak"
    assert second.name == "local.yaml.2026-11-23T201500Z-2.bak"
    assert first.read_text() == REFERENCE and second.read_text().endswith("# changed\n")


CHILD = """\
import os, signal, sys, time
import fabricsuite.commands.cli as cli
{patch}
sys.exit(cli.main(sys.argv[1:]))
"""

KILL_AT_FSYNC = "os.fsync = lambda fd: os.kill(os.getpid(), signal.SIGKILL)"
SLOW_MERGE = textwrap.dedent("""\
    import fabricsuite.commands.reference_file as reference_file
    _real = reference_file.build_reference
    def _slow(*args, **kwargs):
        time.sleep(1.5)  # between reading the reference file and writing it
        return _real(*args, **kwargs)
    reference_file.build_reference = _slow
""")


def child(patch: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([PYTHON, "-c", CHILD.format(patch=patch), "baseline", *args],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_sigkill_while_backing_up_loses_nothing(tmp_path, ref_file, capsys):
    first = [str(p) for p in latency_reports(tmp_path / "a", [0.4, 0.41, 0.42])]
    second = [str(p) for p in latency_reports(tmp_path / "b", [0.5, 0.51, 0.52])]
    assert run("--system", "local", "--output", str(ref_file), *first, capsys=capsys)[0] == 0
    current = ref_file.read_text()
    before = {p.name: p.read_text() for p in ref_file.parent.glob("*.bak")}
    # Killed at the first fsync: the backup's data is written, not yet in place.
    proc = child(KILL_AT_FSYNC, "--system", "local", "--output", str(ref_file), *second)
    proc.communicate(timeout=60)
    assert proc.returncode == -9
    assert ref_file.read_text() == current
    assert {p.name: p.read_text() for p in ref_file.parent.glob("*.bak")} == before
    # A later baseline still works (the dead process's lock went with it) and keeps both.
    assert run("--system", "local", "--output", str(ref_file), *second, capsys=capsys)[0] == 0
    assert reference_at(ref_file)[LAT][0] == pytest.approx(0.51)
    assert sorted(p.read_text() for p in ref_file.parent.glob("*.bak")) == sorted(
        [REFERENCE, current])


def test_interrupt_while_writing_leaves_the_files_as_they_were(tmp_path, ref_file, capsys,
                                                              monkeypatch):
    reports = [str(p) for p in latency_reports(tmp_path / "a", [0.4, 0.41, 0.42])]

    def interrupted(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        main(["baseline", "--system", "local", "--output", str(ref_file), *reports])
    assert [p.name for p in ref_file.parent.iterdir()] == ["local.yaml"]
    assert ref_file.read_text() == REFERENCE


def test_two_concurrent_baselines_lose_no_update(tmp_path, ref_file):
    def mpich(report):
        pingpong(report)["environ"] = "mpich"

    ompi = [str(p) for p in latency_reports(tmp_path / "a", [0.4, 0.41, 0.42])]
    mpi = [str(p) for p in latency_reports(tmp_path / "b", [0.6, 0.61, 0.62], edit=mpich)]
    procs = [child(SLOW_MERGE, "--system", "local", "--output", str(ref_file), *reports)
             for reports in (ompi, mpi)]
    start = time.monotonic()
    for proc in procs:
        _out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    assert reference_at(ref_file, "openmpi")[LAT][0] == pytest.approx(0.41)
    assert reference_at(ref_file, "mpich")[LAT][0] == pytest.approx(0.61)
    assert time.monotonic() - start >= 3.0  # one waited for the other
    assert len(list(ref_file.parent.glob("*.bak"))) == 2
    assert not list(ref_file.parent.glob(".*"))  # no lock or temporary file left


def test_hand_written_comments_survive(tmp_path, ref_file, capsys):
    reports = [str(p) for p in latency_reports(tmp_path / "a", [0.4, 0.41, 0.42])]
    assert run("--system", "local", "--output", str(ref_file), *reports, capsys=capsys)[0] == 0
    text = ref_file.read_text()
    assert text.startswith("# site notes: hand-written, must survive a baseline\n")
    assert "        # measured on the quiet node\n" in text
    assert re.search(r"\n        latency_8B_median_us: \[0.41, null, [0-9.]+, us\] +# keep me\n",
                     text)
    assert reference_at(ref_file)[LAT_MIN][0] == pytest.approx(0.369)


# --- bad input -----------------------------------------------------------------------------------

def _bad_perfvalue(report):
    pingpong(report)["perfvalues"][f"local:default:{LAT}"] = "fast"


@pytest.mark.parametrize("make, args, message", [
    (lambda d: write_report(d, "x.json", {}) and d.joinpath("x.json").write_text("{not json"),
     [], "x.json: not a readable ReFrame run report"),
    (lambda d: write_report(d, "x.json", [1, 2]), [], "the top level is 'list'"),
    (lambda d: write_report(d, "x.json", {"runs": [{"testcases": 3}]}), [], "runs[0] is"),
    (lambda d: latency_reports(d, [0.4, 0.41, 0.42], edit=_bad_perfvalue), [],
     "perfvalues['local:default:latency_8B_median_us'] is 'fast'"),
    (lambda d: None, [], "no such run report; check the path"),
    (lambda d: latency_reports(d, [0.4]), ["--system", "../etc"], "is not a ReFrame system name"),
    (lambda d: latency_reports(d, [0.4]), ["--last", "3"], "give either report files or --last"),
    (lambda d: latency_reports(d, [0.4, 0.41, 0.42]), ["--bad-reference"],
     "lower bound 0.5 must be null or a fraction <= 0"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, ref_file, make, args, message):
    reports = tmp_path / "r"
    reports.mkdir()
    made = make(reports)
    if "--bad-reference" in args:
        args = []
        ref_file.write_text(REFERENCE.replace("[0.2, null, 0.7, us]", "[0.2, 0.5, 0.7, us]"))
    files = [str(p) for p in made] if isinstance(made, list) else [str(reports / "x.json")]
    system = [] if "--system" in args else ["--system", "local"]
    before = ref_file.read_text()
    proc = subprocess.run(
        [PYTHON, "-m", "fabricsuite.commands.cli", "baseline", *system, *args, "--output",
         str(ref_file),
         *files],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("fabricsuite baseline: ") and message in last, proc.stderr
    assert ref_file.read_text() == before


# --- acceptance: the diff before writing, all or nothing -----------------------------------------

def test_the_changes_are_shown_before_writing(tmp_path, ref_file, capsys):
    """Against the hand-written file (0.3 us, +70 %): the median changes, the bound tightens
    to the partition's floor or the noise, and each line names old and new."""
    reports = latency_reports(tmp_path / "r", [0.33, 0.34, 0.35, 0.34, 0.33])
    rc, _out, err = run("--system", "local", "--output", str(ref_file), *map(str, reports),
                        capsys=capsys)
    assert rc == 0, err
    key = f"NetbenchPingPong local:default openmpi same-l3 {LAT}"
    line = next(x for x in err.splitlines() if x.startswith(f"  changed  {key}:"))
    new = reference_at(ref_file)[LAT]
    assert f"0.3 -> {new[0]:g} us (+13.3%)" in line and f"bound +70.0% -> {new[2]:+.1%}" in line
    assert err.index("changes to") < err.index("  changed")
    # a second, identical baseline changes nothing
    rc, _out, err = run("--system", "local", "--output", str(ref_file), *map(str, reports),
                        capsys=capsys)
    assert rc == 0 and "unchanged: 2 variable(s)" in err and "  changed" not in err


def test_acceptance_refuses_too_few_or_too_noisy_runs(tmp_path, ref_file, capsys):
    few = latency_reports(tmp_path / "few", [0.33, 0.34])
    rc, _out, err = run("--system", "local", "--output", str(ref_file), "--acceptance",
                        *map(str, few), capsys=capsys)
    assert rc == 2 and ref_file.read_text() == REFERENCE
    refused = [x for x in err.splitlines() if x.startswith("fabricsuite baseline:") and
               "refused" in x]
    assert len(refused) == 1 and "without 3 healthy runs" in refused[0], err
    # noise of a factor 3 between runs: no bound can catch a 2x slowdown
    noisy = latency_reports(tmp_path / "noisy", [0.2, 0.6, 0.2, 0.9, 0.3])
    rc, _out, err = run("--system", "local", "--output", str(ref_file), "--acceptance",
                        *map(str, noisy), capsys=capsys)
    assert rc == 2 and "too noisy to catch 2x" in err and ref_file.read_text() == REFERENCE
    # quiet runs: accepted and written
    quiet = latency_reports(tmp_path / "quiet", [0.33, 0.34, 0.35, 0.34, 0.33])
    rc, _out, err = run("--system", "local", "--output", str(ref_file), "--acceptance",
                        *map(str, quiet), capsys=capsys)
    assert rc == 0, err
    assert reference_at(ref_file)[LAT][0] == pytest.approx(0.34)


def test_runs_of_one_session_do_not_make_a_reference(tmp_path, ref_file, capsys):
    """Runs of one `--repeat` session lie seconds apart and miss the drift between sessions
    (the emulated cluster's dense patterns: 13-18 % between sessions, 2 % within one): a
    variable needs runs from --min-sessions sessions (default 3), or keeps its reference."""
    one = latency_reports(tmp_path / "one", [0.33, 0.34, 0.35, 0.34, 0.33], session="s-1")
    args = ["--system", "local", "--output", str(ref_file), *map(str, one)]
    rc, _out, err = run(*args, capsys=capsys)
    assert rc == 2 and ref_file.read_text() == REFERENCE, err
    assert "fewer than 3 sessions" in err and "lower --min-sessions" in err, err
    assert f"{LAT} (1)" in err
    rc, _out, err = run(*args, "--acceptance", capsys=capsys)
    assert rc == 2 and "refused" in err and "from 3 sessions" in err, err
    # told that one session is enough, it is; the statistics say how many there were
    rc, _out, err = run(*args, "--min-sessions", "1", capsys=capsys)
    assert rc == 0, err
    stats = yaml.safe_load(ref_file.read_text())["_statistics"]
    key = f"NetbenchPingPong local:default openmpi same-l3 {LAT}"
    assert stats[key]["sessions"] == 1 and "span_h" not in stats[key], stats[key]
    # three sessions an hour apart each: enough by default, and their span is recorded
    three = latency_reports(tmp_path / "three", [0.33, 0.34, 0.35])
    rc, _out, err = run("--system", "local", "--output", str(ref_file), *map(str, three),
                        capsys=capsys)
    assert rc == 0, err
    stats = yaml.safe_load(ref_file.read_text())["_statistics"]
    assert stats[key]["sessions"] == 3 and stats[key]["span_h"] == 2.0, stats[key]
    assert "from 3 sessions or more" in yaml.safe_load(ref_file.read_text())["_provenance"][
        "rule"]
    # never more sessions than runs: with --min-runs 2 the rule (and the record of it) is 2
    two = latency_reports(tmp_path / "two", [0.33, 0.34])
    rc, _out, err = run("--system", "local", "--output", str(ref_file), "--min-runs", "2",
                        *map(str, two), capsys=capsys)
    assert rc == 0, err
    assert "from 2 sessions or more" in yaml.safe_load(ref_file.read_text())["_provenance"][
        "rule"]


@pytest.mark.parametrize("value", ["0", "-1"])
def test_min_sessions_below_1_is_one_line(tmp_path, ref_file, capsys, value):
    reports = latency_reports(tmp_path / "r", [0.33, 0.34, 0.35])
    rc, _out, err = run("--system", "local", "--output", str(ref_file), "--min-sessions", value,
                        *map(str, reports), capsys=capsys)
    assert rc == 2 and err.count("\n") == 1 and f"--min-sessions {value}: give 1" in err, err


def test_check_rebaselines_only_the_named_checks(tmp_path, ref_file, capsys):
    """`--check NAME` updates that check's references only: the reports' other checks (the real
    pt2pt report holds the bandwidth check too) are neither added nor changed."""

    def healthy_bandwidth(report: dict) -> None:
        case = case_of(report, "NetbenchPingPongBandwidth")
        case["result"], case["fail_phase"], case["fail_reason"] = "pass", None, None
        for perf in case["perfvalues"].values():
            perf[5] = "pass"

    reports = latency_reports(tmp_path / "r", [0.33, 0.34, 0.35], edit=healthy_bandwidth)
    everything = yaml.safe_load(REFERENCE)
    rc, _out, err = run("--system", "local", "--output", str(ref_file), "--check",
                        "NetbenchPingPong", *map(str, reports), capsys=capsys)
    assert rc == 0, err
    data = yaml.safe_load(ref_file.read_text())
    assert reference_at(ref_file)[LAT][0] == pytest.approx(0.34)
    checks = {k for k in data if not k.startswith("_")}
    assert checks == {k for k in everything}, checks
    # without --check the same reports bring the other checks of the report in
    rc, _out, err = run("--system", "local", "--output", str(ref_file), *map(str, reports),
                        capsys=capsys)
    assert rc == 0, err
    assert len({k for k in yaml.safe_load(ref_file.read_text()) if not k.startswith("_")}) > 1
    # a check the reports do not hold is one line naming those they do
    before = ref_file.read_text()
    rc, _out, err = run("--system", "local", "--output", str(ref_file), "--check",
                        "NetbenchPingpong", *map(str, reports), capsys=capsys)
    assert rc == 2 and ref_file.read_text() == before, err
    assert "--check NetbenchPingpong" in err and "NetbenchPingPong," in err, err


# --- the external suites: a reference per NPB kernel, time only where its print step allows ------

def _npb_cases(report: dict, figures: dict[str, tuple[float, float]]) -> None:
    """The report's ping-pong case turned into Npb cases, one per kernel: {kernel: (Mop/s total,
    time in s)}, as ReFrame 4.10 stores a case of checks/npb.py (the kernel is a case field)."""
    template = pingpong(report)
    cases = report["runs"][0]["testcases"]
    cases.remove(template)
    for kernel, (mops, seconds) in figures.items():
        case = json.loads(json.dumps(template))
        case.pop("distance", None)
        case.update({"name": f"Npb %node_count=1 %kernel={kernel}", "kernel": kernel,
                     "scale": "1x2-S", "perf_directions": {"mops_total": "higher",
                                                           "time_s": "lower"},
                     "perf_resolutions": {"time_s": 0.01}})
        case["perfvalues"] = {
            "local:default:mops_total": [mops, 0, None, None, "Mop/s", "pass"],
            "local:default:time_s": [seconds, 0, None, None, "s", "pass"]}
        cases.append(case)


def test_each_npb_kernel_gets_its_own_reference_and_a_coarse_time_is_recorded_only(
        tmp_path, capsys):
    """Issue 28: the six kernels shared one reference (46 to 6,120 Mop/s pooled into 517, bound
    -95 %); each is its own index level now. NPB prints the time in steps of 0.01 s: class S's
    0.07 s is recorded without bounds, a 12.5 s time is judged."""
    figures = iter([{"cg": (890.9, 0.07), "ep": (46.2, 12.48)},
                    {"cg": (880.1, 0.07), "ep": (46.9, 12.51)},
                    {"cg": (901.3, 0.08), "ep": (45.8, 12.50)}])
    out = tmp_path / "local.yaml"
    reports = latency_reports(tmp_path / "r", [1, 1, 1],
                              edit=lambda report: _npb_cases(report, next(figures)))
    rc, _out, err = run("--system", "local", "--output", str(out), *map(str, reports),
                        capsys=capsys)
    assert rc == 0, err
    data = yaml.safe_load(out.read_text())
    assert data["Npb"]["$index"] == ["$partition", "$environ", "kernel", "scale"]
    refs = data["Npb"]["local:default"]["openmpi"]
    cg, ep = refs["cg"]["1x2-S"], refs["ep"]["1x2-S"]
    assert cg["mops_total"][0] == pytest.approx(890.9) and cg["mops_total"][1] < 0
    assert ep["mops_total"][0] == pytest.approx(46.2)
    # a 2x slower ep (23 Mop/s) fails its own bound
    assert 46.2 * (1 + ep["mops_total"][1]) > 23.1
    assert cg["time_s"] == [0.07, None, None, "s"]
    recorded = data["_recorded_only"]["Npb.local:default.openmpi.cg.1x2-S.time_s"]
    assert "steps of 0.01" in recorded and "100 steps" in recorded
    assert ep["time_s"][0] == pytest.approx(12.5) and 0 < ep["time_s"][2] < 1
    assert "Npb.local:default.openmpi.ep.1x2-S.time_s" not in data["_recorded_only"]


def test_a_machines_references_name_their_owner_and_only_one(tmp_path, capsys):
    """The embedded default's references say whose they are (`_machine.key`, issue 53): the
    baseline writes the machine the reports ran on, adds the section to a file of an older
    version that lacks it, and refuses reports of two machines."""
    def on(key):
        def edit(report):
            for run in report["runs"]:
                for case in run["testcases"]:
                    case["machine"] = key
        return edit

    own = tmp_path / "refs" / "local" / "box-1x2x1-8gib.0123abcd.yaml"
    own.parent.mkdir(parents=True)
    own.write_text(REFERENCE)  # an older file: no _machine
    reports = [str(p) for p in latency_reports(tmp_path / "a", [0.4, 0.41, 0.42],
                                                edit=on("box-1x2x1-8gib.0123abcd"))]
    assert run("--system", "local", "--output", str(own), *reports, capsys=capsys)[0] == 0
    assert yaml.safe_load(own.read_text())["_machine"]["key"] == "box-1x2x1-8gib.0123abcd"
    mixed = reports[:2] + [str(p) for p in latency_reports(tmp_path / "b", [0.43],
                                                           edit=on("other-box-2x8x2-64gib"))]
    rc, _out, err = run("--system", "local", "--output", str(own), *mixed, capsys=capsys)
    assert rc == 2, err
    assert "the reports ran on 2 machines (box-1x2x1-8gib.0123abcd, other-box-2x8x2-64gib)" in err

