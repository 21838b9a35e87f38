"""fabricsuite compare: two sets of stored sessions, Mann-Whitney U per variable,
Benjamini-Hochberg across variables, verdicts by the variables' directions, selection by tag,
uuid, date range and report files, and one-line errors for bad input.

Sessions are stored in a real ReFrame results database with ReFrame's own storage backend (as
`reframe` does at the end of a session); they are the real sessions of tests/data/history/ or
are derived from the real run report tests/data/baseline/run-report-pt2pt-local.json with new
uuids and times and seeded 1 % noise on every figure (a realistic spread for a quiet partition;
the shared VM's own spread is larger). Every seed is fixed, so each assertion is deterministic.
"""

from __future__ import annotations

import copy
import json
import os
import uuid
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from report_support import as_session

from fabricsuite.commands import cli
from fabricsuite.commands import compare as c
from fabricsuite.commands import history as h
from fabricsuite.data import store

DATA = Path(__file__).parent / "data"
REPORT = DATA / "baseline" / "run-report-pt2pt-local.json"
REAL = DATA / "history"
#: 2026-11-18T07:06:40Z: the first derived session starts here (day 0).
T0 = 1_795_000_000.0
BANDWIDTH = {"bandwidth_1MiB_MBps": 0.8, "bandwidth_peak_MBps": 0.8}  # a 20 % drop


def _uuid(n):
    """A session uuid whose first 8 hex digits are n (UUID(int=n) would share 00000000)."""
    return str(uuid.UUID(int=n << 96))


def _sessions(n, first, day, *, factors=None, seed=0, noise=0.01, extras=None):
    """`n` sessions derived from the real report: uuids _uuid(first + i), starting on
    `day` (days after T0) an hour apart, every figure times (1 + noise x N(0, 1)), variables in
    `factors` (name -> factor) scaled; `extras` as `reframe --session-extras k=v` stores them
    (RunReport.update_extras: into session_info)."""
    base = json.loads(REPORT.read_text())
    rng = np.random.default_rng(seed)
    out = []

    def figure(name, value):
        factor = (factors or {}).get(name.split(":")[-1], 1.0)
        return round(value * factor * (1 + noise * rng.normal()), 4)

    for i in range(n):
        report = as_session(base, _uuid(first + i), T0 + 86400 * day + 3600 * i, figure)
        report["session_info"].update(extras or {})
        out.append(report)
    return out


def _store(db_dir: Path, sessions):
    """Store sessions with ReFrame's own storage backend (what `reframe` does after a run)."""
    db_dir.mkdir(parents=True, exist_ok=True)
    with store._reframe_storage(db_dir / "results.db") as backend:
        for s in sessions:
            backend.store(s, "run-report.json")


def _day(day):
    return datetime.fromtimestamp(T0 + 86400 * day, UTC).strftime("%Y-%m-%d")


def _compare(tmp_path, capsys, *args, json_out=True, references=None):
    """`fabricsuite compare` of system local on a test machine whose references are those in
    `references` (a directory; by default none: no known noise, the ranks alone)."""
    argv = ["compare", "--system", "local", "--results", str(tmp_path), *args]
    saved = {k: os.environ.get(k) for k in ("RFM_REFERENCE_PREFIX", "FABRICSUITE_MACHINE")}
    os.environ["RFM_REFERENCE_PREFIX"] = str(references or tmp_path / "no-references")
    os.environ["FABRICSUITE_MACHINE"] = TEST_MACHINE
    try:
        status = cli.main([*argv, "--json"] if json_out else argv)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    out = capsys.readouterr()
    return status, (json.loads(out.out) if json_out else out.out), out.err


#: The machine key the compare tests stand in for (its references are the test's own).
TEST_MACHINE = "compare-test-box-1x2x1-1gib"


def _verdicts(data):
    return {v["variable"]: v["verdict"] for v in data["variables"]}


@pytest.fixture
def upgrade_db(tmp_path):
    """5 sessions before (day 0), 5 after (day 2) with bandwidth 20 % lower, tagged as an MPI
    upgrade would be; 2 unrelated sessions between them (day 1, tag 'other')."""
    _store(tmp_path, _sessions(5, 100, 0, seed=1, extras={"tag": "ompi-4.1"})
           + _sessions(2, 300, 1, seed=3, extras={"tag": "other"})
           + _sessions(5, 200, 2, factors=BANDWIDTH, seed=2,
                       extras={"tag": "ompi-5.0", "mpi": "openmpi-5.0.3"}))
    return tmp_path


# --- the statistics ----------------------------------------------------------------------------

def test_smallest_p_and_runs_needed():
    assert c.min_p_value(3, 3) == pytest.approx(0.1)  # 3 vs 3 can never reach 0.05
    assert c.min_p_value(4, 4) == pytest.approx(2 / 70)
    assert c.min_p_value(5, 7) == pytest.approx(2 / 792)
    assert c.min_p_value(0, 5) == 1.0
    assert c.runs_per_side_needed(0.05) == 4
    assert c.runs_per_side_needed(0.05 / 10) == 6
    assert c.runs_per_side_needed(0.05 / 100) == 8
    # Complete separation reaches that floor exactly.
    assert c.mann_whitney_p([1.0, 2, 3, 4, 5], [6.0, 7, 8, 9, 10]) == pytest.approx(2 / 252)


def test_ties_get_the_exact_permutation_p():
    """A count that moved 3 -> 4 in every run: the exact p is 2/70; the normal approximation
    (0.013) would claim more than 4 vs 4 runs can show."""
    assert c.mann_whitney_p([3.0] * 4, [4.0] * 4) == pytest.approx(2 / 70)
    assert c.mann_whitney_p([5.0] * 6, [5.0] * 6) == 1.0


def _series(values, key="0", better="higher", unit="MB/s"):
    s = h.Series(f"Check{key}", "local:default", "openmpi", "figure", unit,
                 levels=(("distance", "same-l3"),))
    s.points = [h.Point(1.8e9 + i, f"s{i}", float(v)) for i, v in enumerate(values)]
    s.directions = {better} if better else set()
    return s


def test_correction_across_variables_needs_more_runs():
    """A 20 % drop in one of 10 variables (the rest 1 % noise): with 5 vs 5 runs its p (2/252)
    passes 0.05 but not BH's first threshold 0.05 / 10, so it is unchanged; with 6 vs 6
    (p = 2/924) it is the one regression. The summary names the 6 runs per side."""
    for n, expected in ((5, "unchanged"), (6, "regression")):
        rng = np.random.default_rng(40 + n)
        before = [_series(100 * (1 + 0.01 * rng.normal(size=n)), str(i)) for i in range(10)]
        after = [_series(100 * (1 + 0.01 * rng.normal(size=n)), str(i)) for i in range(10)]
        after[0].points = [h.Point(p.time, p.session, 0.8 * p.value) for p in after[0].points]
        result = c.compare(before, after)
        drop = next(x for x in result if x.series.check == "Check0")
        assert drop.p == pytest.approx(c.min_p_value(n, n)) and drop.p < 0.05
        assert drop.verdict == expected
        assert [x.verdict for x in result].count("regression") == (expected == "regression")
        assert {x.verdict for x in result if x is not drop} == {"unchanged"}
    assert "among 10 needs p <= 0.005: 6 runs per side" in "\n".join(
        c.summary(result, 0.05, 0.05))


@pytest.mark.parametrize("better, factor, verdict", [
    ("lower", 1.2, "regression"), ("lower", 0.8, "improvement"),
    ("higher", 1.2, "improvement"), ("higher", 0.8, "regression"),
    ("equal", 1.25, "regression"), ("equal", 0.8, "regression"),
    (None, 0.8, "changed"),  # no declared direction: named, but no regression
])
def test_direction_decides_the_verdict(better, factor, verdict):
    rng = np.random.default_rng(8)
    before = _series(100 * (1 + 0.01 * rng.normal(size=5)), better=better)
    after = _series(factor * 100 * (1 + 0.01 * rng.normal(size=5)), better=better)
    (result,) = c.compare([before], [after])
    assert result.verdict == verdict and result.significant


def test_change_from_zero():
    """A count of errors (lower is better) from 0 to 3 in every run: a regression without a
    percentage."""
    (result,) = c.compare([_series([0] * 5, better="lower")], [_series([3] * 5, better="lower")])
    assert result.change is None and result.verdict == "regression"
    assert c._change_text(result) == "from 0"


def test_unit_change_is_not_compared():
    rng = np.random.default_rng(8)
    before = _series(100 * (1 + 0.01 * rng.normal(size=5)), unit="us")
    after = _series(100_000 * (1 + 0.01 * rng.normal(size=5)), unit="ns")
    (result,) = c.compare([before], [after])
    assert result.verdict == "insufficient data" and result.reason == \
        "unit changed from us to ns"


# --- verdicts on stored sessions ----------------------------------------------------------------

def test_bandwidth_drop_is_the_one_significant_regression(upgrade_db, capsys):
    """5 vs 5 sessions, bandwidth 20 % lower after, everything with 1 % noise: both bandwidth
    variables are regressions (p = 2/252, within BH's thresholds), the latencies unchanged."""
    status, data, err = _compare(upgrade_db, capsys, "--before-tag", "ompi-4.1",
                                 "--after-tag", "ompi-5.0")
    assert status == 1 and not err
    assert _verdicts(data) == {"bandwidth_1MiB_MBps": "regression",
                               "bandwidth_peak_MBps": "regression",
                               "latency_8B_median_us": "unchanged",
                               "latency_8B_min_us": "unchanged"}
    for v in data["variables"][:2]:
        assert v["change_pct"] == pytest.approx(-20, abs=3)
        assert v["p_value"] == pytest.approx(2 / 252) and v["significant"]
        assert v["p_value"] <= v["bh_threshold"] and v["better"] == "higher"
    for v in data["variables"][2:]:
        assert abs(v["change_pct"]) < 5 and not v["significant"]
    assert data["counts"]["regression"] == 2 and data["counts"]["unchanged"] == 2
    # The same in the table: regressions first, under their group.
    status, text, _ = _compare(upgrade_db, capsys, "--before-tag", "ompi-4.1",
                               "--after-tag", "ompi-5.0", json_out=False)
    lines = text.splitlines()
    group = lines.index("local:default openmpi distance same-l3")
    rows = [line.split()[:3] for line in lines[group + 1:group + 5]]
    assert [r[0] for r in rows] == ["REGRESSION", "REGRESSION", "unchanged", "unchanged"]
    assert {r[2] for r in rows[:2]} == {"bandwidth_1MiB_MBps", "bandwidth_peak_MBps"}
    assert rows[0][1] == "NetbenchPingPongBandwidth"
    assert "2 regression(s)" in text and "over 4 tested" in text
    assert max(len(line) for line in lines[group:group + 5]) <= 120


def test_a_regression_names_the_counters_that_moved_in_the_after_runs(tmp_path, capsys):
    after = _sessions(5, 200, 2, factors=BANDWIDTH, seed=2, extras={"tag": "ompi-5.0"})
    for report in after[:3]:
        for run in report["runs"]:
            for case in run["testcases"]:
                if case["name"].startswith("NetbenchPingPongBandwidth"):
                    case["counters"] = "net eth0 rx_dropped +12"
    _store(tmp_path, _sessions(5, 100, 0, seed=1, extras={"tag": "ompi-4.1"}) + after)
    args = ("--before-tag", "ompi-4.1", "--after-tag", "ompi-5.0")
    status, text, _ = _compare(tmp_path, capsys, *args, json_out=False)
    assert status == 1
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.split()[:1] == ["REGRESSION"])
    assert lines[first + 1] == "    counters moved: net eth0 rx_dropped +12 (3 of 5 runs)"
    _, data, _ = _compare(tmp_path, capsys, *args)
    moved = {v["variable"]: v["counters_after"] for v in data["variables"]}
    assert moved["bandwidth_1MiB_MBps"] == ["net eth0 rx_dropped +12"] * 3
    assert moved["latency_8B_min_us"] == []


def test_improvement_exits_0(tmp_path, capsys):
    _store(tmp_path, _sessions(5, 100, 0, seed=1)
           + _sessions(5, 200, 2, factors={"latency_8B_median_us": 0.7}, seed=2))
    status, data, _ = _compare(tmp_path, capsys, "--before-until", _day(1),
                               "--after-since", _day(1))
    assert status == 0
    assert _verdicts(data)["latency_8B_median_us"] == "improvement"
    assert data["variables"][0]["variable"] == "latency_8B_median_us"  # before the unchanged
    assert data["counts"]["regression"] == 0


def test_small_significant_change_is_unchanged_unless_min_change_lowered(tmp_path, capsys):
    """Bandwidth 3 % lower with 0.2 % noise: significant, but below the 5 % minimum."""
    _store(tmp_path, _sessions(6, 100, 0, seed=1, noise=0.002)
           + _sessions(6, 200, 2, factors=BANDWIDTH | {"bandwidth_1MiB_MBps": 0.97},
                       seed=2, noise=0.002))
    args = ["--before-until", _day(1), "--after-since", _day(1)]
    status, data, _ = _compare(tmp_path, capsys, *args)
    v = next(v for v in data["variables"] if v["variable"] == "bandwidth_1MiB_MBps")
    assert v["significant"] and v["verdict"] == "unchanged"
    assert _verdicts(data)["bandwidth_peak_MBps"] == "regression" and status == 1
    status, data, _ = _compare(tmp_path, capsys, *args, "--min-change", "2")
    assert _verdicts(data)["bandwidth_1MiB_MBps"] == "regression"


def test_too_few_runs_is_insufficient_not_a_verdict(tmp_path, capsys):
    """3 vs 3 runs of a 20 % drop: no verdict (p >= 0.1 > 0.05), and with no variable
    testable, exit 2 with one line saying how many runs are needed."""
    _store(tmp_path, _sessions(3, 100, 0, seed=1) + _sessions(3, 200, 2, factors=BANDWIDTH,
                                                               seed=2))
    status, data, err = _compare(tmp_path, capsys, "--before-until", _day(1),
                                 "--after-since", _day(1))
    assert status == 2
    assert set(_verdicts(data).values()) == {"insufficient data"}
    for v in data["variables"]:
        assert v["p_value"] is None and v["min_p_value"] == pytest.approx(0.1)
        assert "p cannot fall below 0.1" in v["reason"]
    assert len(err.strip().splitlines()) == 1 and "at least 4 per side" in err
    status, text, _ = _compare(tmp_path, capsys, "--before-until", _day(1),
                               "--after-since", _day(1), "--min-runs", "4", json_out=False)
    assert status == 2 and text.count("insufficient  ") == 4
    assert "fewer than 4 runs on a side" in text and "p 0." not in text


def _noise_references(directory: Path, spread: float) -> Path:
    """A reference file of the test machine whose _statistics give every variable of the
    same-l3 ping-pong and bandwidth cases the between-session spread `spread`."""
    lines = ["_statistics:"]
    for check, variables in (
            ("NetbenchPingPong", ("latency_8B_median_us", "latency_8B_min_us")),
            ("NetbenchPingPongBandwidth", ("bandwidth_1MiB_MBps", "bandwidth_peak_MBps"))):
        for variable in variables:
            lines.append(f"  {check} local:default openmpi same-l3 {variable}: "
                         f"{{n: 5, spread: {spread}, sessions: 5}}")
    lines.append(f"_machine: {{key: {TEST_MACHINE}}}")
    path = directory / "local" / f"{TEST_MACHINE}.yaml"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n")
    return directory


def test_a_shift_far_outside_the_known_noise_is_a_verdict_at_3_vs_3(tmp_path, capsys):
    """Issue 27: 3 vs 3 runs of a 20 % drop at 1 % noise, with the between-session spread the
    references recorded (2 %): the drop is a regression, the rest unchanged, and the output
    says which noise was used. With 1 vs 1 too; with runs noisier than the recorded spread,
    their own spread is used."""
    _store(tmp_path, _sessions(3, 100, 0, seed=1) + _sessions(3, 200, 2, factors=BANDWIDTH,
                                                               seed=2))
    refs = _noise_references(tmp_path / "refs", 0.02)
    args = ["--before-until", _day(1), "--after-since", _day(1)]
    status, data, _ = _compare(tmp_path, capsys, *args, references=refs)
    assert status == 1
    assert _verdicts(data) == {"bandwidth_1MiB_MBps": "regression",
                               "bandwidth_peak_MBps": "regression",
                               "latency_8B_median_us": "unchanged",
                               "latency_8B_min_us": "unchanged"}
    for v in data["variables"]:
        assert v["test"] == "known noise (z)" and v["noise_spread"] == 0.02, v
        assert "between-session spread" in v["noise_source"] and TEST_MACHINE in \
            v["noise_source"]
    status, text, _ = _compare(tmp_path, capsys, *args, references=refs, json_out=False)
    assert "against a noise of 2.00% (the between-session spread" in text
    assert "tested against a known noise (z-test)" in text
    # one run a side
    one = tmp_path / "one"
    _store(one, _sessions(1, 100, 0, seed=1) + _sessions(1, 200, 2, factors=BANDWIDTH, seed=2))
    status, data, _ = _compare(one, capsys, *args, references=refs)
    assert status == 1 and _verdicts(data)["bandwidth_1MiB_MBps"] == "regression"
    # runs that spread more than the recorded 2 % (15 % noise): judged by their own spread,
    # so the p-value is that of 8 %, not of 2 % (which would be below 1e-15)
    noisy = tmp_path / "noisy"
    _store(noisy, _sessions(3, 100, 0, seed=1, noise=0.15)
           + _sessions(3, 200, 2, factors=BANDWIDTH, seed=2, noise=0.15))
    status, data, _ = _compare(noisy, capsys, *args, references=refs)
    bandwidth = next(v for v in data["variables"] if v["variable"] == "bandwidth_1MiB_MBps")
    assert bandwidth["noise_spread"] > 0.05 and "runs' own spread" in bandwidth["noise_source"]
    assert bandwidth["p_value"] > 1e-3, bandwidth


def test_variable_with_too_few_runs_among_tested_ones(tmp_path, capsys):
    """5 vs 5 sessions, but the latency case failed sanity in 3 of the after sessions (its
    figures do not count): the latencies have 2 runs after, insufficient; the bandwidth drop
    is still a regression."""
    after = _sessions(5, 200, 2, factors=BANDWIDTH, seed=2)
    for session in after[:3]:
        case = next(t for t in session["runs"][0]["testcases"]
                    if t["name"].startswith("NetbenchPingPong %distance=same-l3"))
        case["result"], case["fail_phase"] = "fail", "sanity"
    _store(tmp_path, _sessions(5, 100, 0, seed=1) + after)
    status, data, _ = _compare(tmp_path, capsys, "--before-until", _day(1),
                               "--after-since", _day(1))
    assert status == 1
    lat = next(v for v in data["variables"] if v["variable"] == "latency_8B_median_us")
    assert lat["verdict"] == "insufficient data" and lat["n_after"] == 2
    assert lat["p_value"] is None and "fewer than 3 runs" in lat["reason"]
    assert data["method"]["tested"] == 2  # the correction counts only the tested variables
    assert [v["verdict"] for v in data["variables"]] == \
        ["regression", "regression", "insufficient data", "insufficient data"]


# --- selection ---------------------------------------------------------------------------------

def test_selection_by_tag_forms(upgrade_db, capsys):
    """`tag=NAME` extra, any extra's value, or KEY=VALUE; the 'other' sessions stay out."""
    for after_tag in ("ompi-5.0", "openmpi-5.0.3", "mpi=openmpi-5.0.3"):
        status, data, _ = _compare(upgrade_db, capsys, "--before-tag", "ompi-4.1",
                                   "--after-tag", after_tag)
        assert status == 1, after_tag
        assert [s["uuid"] for s in data["after"]["sessions"]] == \
            [_uuid(200 + i) for i in range(5)]
        assert data["after"]["sessions"][0]["extras"] == {"tag": "ompi-5.0",
                                                          "mpi": "openmpi-5.0.3"}
    assert len(data["before"]["sessions"]) == 5


def test_selection_by_uuid(upgrade_db, capsys):
    """Uuid prefixes (8 hex digits) on one side, full uuids on the other."""
    status, data, _ = _compare(upgrade_db, capsys,
                               "--before-session", *[_uuid(100 + i)[:8] for i in range(5)],
                               "--after-session", *[_uuid(200 + i) for i in range(5)])
    assert status == 1 and data["counts"]["regression"] == 2
    assert [s["uuid"] for s in data["before"]["sessions"]] == [_uuid(100 + i) for i in range(5)]
    # The other way round the drop is an improvement (bandwidth back up 25 %): exit 0.
    status, data, _ = _compare(upgrade_db, capsys,
                               "--before-session", *[_uuid(200 + i) for i in range(5)],
                               "--after-tag", "ompi-4.1")
    assert status == 0 and data["counts"]["improvement"] == 2
    assert data["variables"][0]["change_pct"] == pytest.approx(25, abs=4)


def test_selection_by_date_range_and_combined_selectors(upgrade_db, capsys):
    status, data, _ = _compare(upgrade_db, capsys, "--before-until", _day(1),
                               "--after-since", _day(2))
    assert status == 1
    assert len(data["before"]["sessions"]) == 5 and len(data["after"]["sessions"]) == 5
    # Day 1 onwards holds the 2 'other' sessions and the 5 after; the tag narrows it.
    status, data, _ = _compare(upgrade_db, capsys, "--before-tag", "ompi-4.1",
                               "--after-since", _day(1), "--after-tag", "ompi-5.0")
    assert status == 1 and len(data["after"]["sessions"]) == 5
    status, data, _ = _compare(upgrade_db, capsys, "--before-tag", "ompi-4.1",
                               "--after-since", _day(1), "--after-until", _day(2))
    assert [s["uuid"] for s in data["after"]["sessions"]] == \
        [_uuid(300), _uuid(301)]
    # Until is exclusive: a session starting exactly then is not in the set (ReFrame's time
    # query has the same end).
    exactly = datetime.fromtimestamp(T0 + 2 * 86400 + 3 * 3600, UTC).isoformat()
    status, data, _ = _compare(upgrade_db, capsys, "--before-tag", "ompi-4.1",
                               "--after-tag", "ompi-5.0", "--after-until", exactly)
    assert [s["uuid"] for s in data["after"]["sessions"]] == [_uuid(200 + i) for i in range(3)]


def test_real_sessions_before_and_after_a_transport_change(tmp_path, capsys):
    """The 12 real NetbenchOverlap sessions (tests/data/history/README.md): 5 over shared
    memory, then 7 over TCP. Split at the first TCP session's start: both overheads are
    regressions (every TCP run above every shared-memory run: p = 2/792), from the database and
    from the report files alike."""
    reports = sorted(REAL.glob("run-report-*.json"))
    sessions = store.report_sessions(reports)
    _store(tmp_path, sessions)
    first_tcp = sessions[5]["session_info"]["time_start"]  # ReFrame's 20261123T210133+0000
    status, data, _ = _compare(tmp_path, capsys, "--before-until", first_tcp,
                               "--after-since", first_tcp)
    assert status == 1
    assert _verdicts(data) == {"overhead_send_us": "regression",
                               "overhead_recv_us": "regression"}
    send = data["variables"][0]
    assert send["variable"] == "overhead_send_us"  # the larger change first
    assert send["median_before"] == 0.08199 and send["median_after"] == 6.104
    assert send["p_value"] == pytest.approx(2 / 792) and send["distance"] == "same-l3"
    status, text, _ = _compare(tmp_path, capsys, "--before-reports", *map(str, reports[:5]),
                               "--after-reports", *map(str, reports[5:]), json_out=False)
    assert status == 1 and "+7344.8%" in text and "5 vs 7" in text
    assert "from 5 run report file(s)" in text


def test_selection_through_report_files(tmp_path, capsys):
    before = _sessions(5, 100, 0, seed=1)
    after = _sessions(6, 200, 2, factors=BANDWIDTH, seed=2)
    paths = []
    for s in before + after:
        path = tmp_path / f"run-report-{s['session_info']['uuid']}.json"
        path.write_text(json.dumps(s))
        paths.append(str(path))
    # No database needed when both sides are files; a selector still filters the files.
    status, data, _ = _compare(tmp_path / "nodb", capsys, "--before-reports", *paths[:5],
                               "--after-reports", *paths[5:],
                               "--after-until", datetime.fromtimestamp(
                                   T0 + 2 * 86400 + 5 * 3600 - 1, UTC).isoformat())
    assert status == 1 and len(data["after"]["sessions"]) == 5
    assert data["after"]["source"] == "6 run report file(s)"
    # One side from files, the other from the database.
    _store(tmp_path / "db", before)
    status, data, _ = _compare(tmp_path / "db", capsys, "--before-since", _day(0),
                               "--after-reports", *paths[5:])
    assert status == 1 and data["before"]["source"].endswith("results.db since "
                                                             f"{_day(0)} 00:00Z")


# --- grouping and the JSON ---------------------------------------------------------------------

def _two_distances(sessions, factors_far, seed):
    """Each session's same-l3 cases also measured at distance other-package (copies of the real
    cases, figures scaled by `factors_far` with 1 % seeded noise)."""
    rng = np.random.default_rng(seed)
    for s in sessions:
        run = s["runs"][0]
        for case in [t for t in run["testcases"] if t.get("distance") == "same-l3"
                     and t["perfvalues"]]:
            far = copy.deepcopy(case)
            far["name"] = far["name"].replace("same-l3", "other-package")
            # another parameter point of the check: ReFrame names it by its index
            far["unique_name"] = (far["unique_name"].rsplit("_", 1)[0]
                                  + f"_{100 + len(run['testcases'])}")
            far["distance"] = "other-package"
            far["uuid"] = f"{s['session_info']['uuid']}:0:{len(run['testcases'])}"
            for name, perf in far["perfvalues"].items():
                perf[0] *= factors_far.get(name.split(":")[-1], 1.0) * (1 + 0.01 * rng.normal())
            run["testcases"].append(far)
    return sessions


def test_grouping_regressions_first_and_json_schema(tmp_path, capsys):
    """same-l3: bandwidth -20 % (regressions); other-package: latency -30 % (an improvement).
    The same-l3 group comes first although 'other-package' sorts before it, and in each group
    the changes come before the unchanged variables."""
    before = _two_distances(_sessions(5, 100, 0, seed=1), {}, 11)
    after = _two_distances(_sessions(5, 200, 2, factors=BANDWIDTH, seed=2),
                           {"latency_8B_median_us": 0.7, "bandwidth_1MiB_MBps": 1 / 0.8,
                            "bandwidth_peak_MBps": 1 / 0.8},
                           12)
    _store(tmp_path, before + after)
    args = ["--before-until", _day(1), "--after-since", _day(1)]
    status, data, _ = _compare(tmp_path, capsys, *args)
    assert status == 1
    rows = [(v["distance"], v["variable"], v["verdict"]) for v in data["variables"]]
    # Within a verdict the larger change comes first: which bandwidth is first is the noise's.
    assert sorted(rows[:2]) == [("same-l3", "bandwidth_1MiB_MBps", "regression"),
                                ("same-l3", "bandwidth_peak_MBps", "regression")]
    assert sorted(rows[2:4]) == [("same-l3", "latency_8B_median_us", "unchanged"),
                                 ("same-l3", "latency_8B_min_us", "unchanged")]
    changes = [abs(v["change_pct"]) for v in data["variables"]]
    assert changes[0] >= changes[1] and changes[2] >= changes[3]
    assert rows[4] == ("other-package", "latency_8B_median_us", "improvement")
    assert {r[2] for r in rows[5:]} == {"unchanged"}
    # The schema, for machines.
    assert set(data) == {"system", "before", "after", "method", "counts", "variables"}
    assert data["method"] == {"test": "mann-whitney u, two-sided",
                              "correction": "benjamini-hochberg", "fdr": 0.05,
                              "min_change_pct": 5.0, "min_runs": 3, "tested": 8,
                              "runs_per_side_for_one_change": 6}
    assert data["counts"] == {"regression": 2, "changed": 0, "improvement": 1,
                              "unchanged": 5, "insufficient data": 0}
    v = data["variables"][0]
    assert set(v) == {"check", "partition", "environ", "distance", "variable", "unit", "better",
                      "test", "noise_spread", "noise_source",
                      "verdict", "median_before", "median_after", "change_pct", "n_before",
                      "n_after", "p_value", "bh_threshold", "significant", "min_p_value",
                      "reason", "before", "after", "counters_after", "verdicts_before",
                      "verdicts_after"}
    assert v["check"] == "NetbenchPingPongBandwidth" and v["partition"] == "local:default"
    # each run compared with the verdict its session gave it (fabricsuite.data.session_verdict)
    assert len(v["verdicts_before"]) == len(v["before"]) and set(v["verdicts_before"]) <= {
        "passed", "recorded", "transient", "regression", "node outlier", "link degraded"}
    assert v["median_before"] == pytest.approx(np.median(v["before"]))
    assert len(v["before"]) == v["n_before"] == 5
    assert set(data["before"]) == {"selection", "source", "sessions"}
    assert data["before"]["selection"] == f"--before-until {_day(1)}"
    # The table: two group headings, same-l3 first.
    status, text, _ = _compare(tmp_path, capsys, *args, json_out=False)
    headings = [line for line in text.splitlines() if line.startswith("local:default")]
    assert headings == ["local:default openmpi distance same-l3",
                        "local:default openmpi distance other-package"]


# --- bad input ---------------------------------------------------------------------------------

BAD = [
    (["--system", "nosuch", "--before-tag", "ompi-4.1", "--after-tag", "ompi-5.0"],
     "no test case of system 'nosuch' in the selected sessions (systems in them: local)"),
    (["--system", "a b", "--before-tag", "x", "--after-tag", "y"], "not a ReFrame system name"),
    (["--system", "local", "--before-tag", "ompi-4.1", "--after-tag", "ompi-6"],
     "the after set is empty: none of the 12 session(s) stored in"),
    (["--system", "local", "--before-tag", "ompi-4.1", "--after-tag", "ompi-6"],
     "session extras found: mpi=openmpi-5.0.3 (5), tag=ompi-4.1 (5)"),
    (["--system", "local", "--before-since", _day(0), "--after-tag", "ompi-5.0"],
     "5 session(s) (000000c8, 000000c9, 000000ca, 000000cb, 000000cc) are in both the before "
     "and the after set; make the selections disjoint"),
    (["--system", "local", "--before-since", "last tuesday", "--after-tag", "x"],
     "--before-since 'last tuesday' is no date"),
    (["--system", "local", "--before-since", _day(2), "--before-until", _day(1),
      "--after-tag", "x"], "is not before --before-until"),
    (["--system", "local", "--before-session", "xyz!", "--after-tag", "x"],
     "'xyz!' is no session uuid"),
    (["--system", "local", "--before-session", "abcdef", "--after-tag", "ompi-5.0"],
     "--before-session abcdef: no session uuid starts with it among the 12 session(s)"),
    (["--system", "local", "--before-session", "0000006", "--after-tag", "ompi-5.0"],
     "--before-session 0000006 matches 5 sessions (00000064, 00000065, 00000066,"),
    (["--system", "local", "--after-tag", "ompi-5.0"], "no before set given"),
    (["--system", "local", "--before-tag", "ompi-4.1", "--after-tag", "ompi-5.0", "--fdr", "0"],
     "--fdr 0: give a false discovery rate between 0 and 1"),
    (["--system", "local", "--before-tag", "ompi-4.1", "--after-tag", "ompi-5.0",
      "--min-runs", "0"], "--min-runs 0: give 1 or more"),
    # a threshold that judges nothing (issue 53): NaN compares false, infinity is never reached
    (["--system", "local", "--before-tag", "ompi-4.1", "--after-tag", "ompi-5.0",
      "--min-change", "nan"], "--min-change nan: give a change in % of 0 or more"),
    (["--system", "local", "--before-tag", "ompi-4.1", "--after-tag", "ompi-5.0",
      "--min-change", "inf"], "--min-change inf: give a change in % of 0 or more"),
    (["--system", "local", "--before-tag", "ompi-4.1", "--after-tag", "ompi-5.0", "--fdr",
      "nan"], "--fdr nan: give a false discovery rate"),
    (["--system", "local", "--before-tag", "ompi-4.1", "--after-tag", "ompi-5.0",
      "--variable", "("], "is no regular expression"),
    (["--system", "local", "--before-tag", "ompi-4.1", "--after-tag", "ompi-5.0",
      "--variable", "xyz"], "no performance figures of system 'local' of a variable matching"),
    (["--system", "local", "--before-reports", "/nonexistent.json", "--after-tag", "x"],
     "/nonexistent.json: no such run report"),
]


@pytest.mark.parametrize("args, message", BAD, ids=[m[:40] for _, m in BAD])
def test_bad_input_is_one_line_and_exit_2(upgrade_db, capsys, args, message):
    assert cli.main(["compare", "--results", str(upgrade_db), *args]) == 2
    out = capsys.readouterr()
    assert message in out.err and len(out.err.strip().splitlines()) == 1, out.err
    assert out.err.startswith("fabricsuite compare: ") and not out.out


def test_missing_database_and_bad_report(tmp_path, capsys):
    assert cli.main(["compare", "--system", "local", "--results", str(tmp_path),
                     "--before-tag", "a", "--after-tag", "b"]) == 2
    err = capsys.readouterr().err
    assert f"no results database {tmp_path}/results.db" in err and "--results" in err
    assert len(err.strip().splitlines()) == 1
    (tmp_path / "bad.json").write_text('{"session_info": {}, "runs": []}')
    assert cli.main(["compare", "--system", "local", "--before-reports",
                     str(tmp_path / "bad.json"), "--after-reports", str(REPORT)]) == 2
    err = capsys.readouterr().err
    assert "bad.json is not a ReFrame run report" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "results.db").write_text("not sqlite\n" * 100)
    assert cli.main(["compare", "--system", "local", "--results", str(tmp_path),
                     "--before-tag", "a", "--after-tag", "b"]) == 2
    err = capsys.readouterr().err
    assert "results.db" in err and len(err.strip().splitlines()) == 1, err


def test_same_report_twice_in_one_set(tmp_path, capsys):
    assert cli.main(["compare", "--system", "local", "--before-reports", str(REPORT),
                     str(REPORT), "--after-reports", str(REAL / "run-report-01.json")]) == 2
    err = capsys.readouterr().err
    assert "is given twice in the before set" in err


def test_help_explains_selection_test_fdr_and_exit_codes(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["compare", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for needle in ("--session-extras tag=NAME", "Mann-Whitney U, two-sided",
                   "Benjamini-Hochberg", "3 vs 3: 0.1, 4 vs 4: 0.029",
                   "3 runs per side can never be significant at 0.05",
                   "1 variable(s): 4, 10 variable(s): 6, 100 variable(s): 8",
                   "Exit status: 0 no regression, 1 a significant regression, 2 bad input"):
        assert needle in text, needle


def test_extras_are_what_reframe_does_not_reserve():
    """The fallback key list is ReFrame 4.10's schema, so a tag is found either way."""
    from reframe.frontend.reporting import _reserved_session_info_keys

    assert store._SESSION_INFO_KEYS == _reserved_session_info_keys()
    info = json.loads(REPORT.read_text())["session_info"]
    assert store.session_extras(info) == {}
    assert store.has_tag({**info, "tag": "a=b"}, "a=b")
    assert store.has_tag({**info, "mpi": "x"}, "mpi=x")
    assert not store.has_tag({**info, "tag": "ompi"}, "hostname=" + info["hostname"])


def test_the_known_noise_is_the_worst_deviation_and_a_recorded_only_figure_has_none(
        tmp_path, monkeypatch):
    """An 8 B latency the file records only (worst deviation 240 %) was judged against its 3.9 %
    spread: the machine's own slow state read as a regression at p 2e-15 (issue 39). Its noise
    is at least its worst deviation, and a recorded-only figure has no known noise at all."""
    import yaml

    from fabricsuite.data.references import variable_noise

    latency = "NetbenchPingPong box:cpu openmpi same-l3 latency_8B_median_us"
    bandwidth = "NetbenchPingPongBandwidth box:cpu openmpi same-l3 bandwidth_1MiB_MBps"
    (tmp_path / "box.yaml").write_text(yaml.safe_dump({
        "_statistics": {latency: {"spread": 0.039, "worst": 2.4, "sessions": 8},
                        bandwidth: {"spread": 0.02, "worst": 0.05, "sessions": 8}},
        "_recorded_only": {latency.replace(" ", "."): "recorded only: too noisy to catch 2x"},
    }))
    monkeypatch.setenv("RFM_REFERENCE_PREFIX", str(tmp_path))
    noise = variable_noise("box")
    assert latency not in noise
    assert noise[bandwidth][0] == 0.05 and "worst deviation" in noise[bandwidth][1], noise
    # history takes a recorded-only figure's worst deviation as its least alarming shift
    assert variable_noise("box", recorded=True)[latency][0] == 2.4
