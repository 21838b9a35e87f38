"""fabricsuite history: E-Divisive means change points, Benjamini-Hochberg across series, the
direction of each shift, and reading stored runs (ReFrame's results database, run reports).

Synthetic series are seeded; the statistical properties (false-alarm rates) are measured on
fixed seeds, so each assertion is deterministic and its bound is the stated level plus the
binomial slack of the sample.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import uuid
from pathlib import Path

import numpy as np
import pytest
from report_support import as_session

from fabricsuite.base import stats
from fabricsuite.base.formats import iso_utc
from fabricsuite.commands import cli
from fabricsuite.commands import history as h
from fabricsuite.data import store

DATA = Path(__file__).parent / "data"
REPORT = DATA / "baseline" / "run-report-pt2pt-local.json"
REAL = DATA / "history"


def _series(values, variable="bandwidth_1MiB_MBps", better="higher", unit="MB/s", key="A",
            t0=1.8e9):
    s = h.Series(f"Check{key}", "local:default", "openmpi", variable, unit,
                 levels=(("distance", "same-l3"),))
    s.points = [h.Point(t0 + 3600 * i, f"session-{i:03d}", float(v)) for i, v in
                enumerate(values)]
    if better:
        s.directions = {better}
    return s


def _noise(rng, n=30, level=100.0, sd=0.01):
    return level * (1 + sd * rng.normal(size=n))


def _step(rng, n=30, at=20, step=-0.10, sd=0.01):
    x = _noise(rng, n, sd=sd)
    x[at:] *= 1 + step
    return x


# --- the statistic and the test ----------------------------------------------------------------

def _naive_q(x, tau):
    a, b = x[:tau], x[tau:]
    m, k = len(a), len(b)
    cross = np.mean([abs(i - j) for i in a for j in b])
    wl = np.mean([abs(a[i] - a[j]) for i, j in itertools.combinations(range(m), 2)])
    wr = np.mean([abs(b[i] - b[j]) for i, j in itertools.combinations(range(k), 2)])
    return m * k / (m + k) * (2 * cross - wl - wr)


def test_q_curve_is_the_energy_statistic():
    x = np.random.default_rng(1).normal(size=13)
    q = stats.q_curve(x)
    assert np.allclose(q, [_naive_q(x, t) for t in range(stats.MIN_SIZE, 13 - stats.MIN_SIZE + 1)])
    batch = np.stack([x, x[::-1]])
    assert np.allclose(stats.q_curve(batch)[1], stats.q_curve(x[::-1]))


def test_step_of_ten_percent_found_at_its_index():
    """30 points, a 10 % step at index 20, 1 % noise: the change point is index 20, p < 0.05."""
    x = _step(np.random.default_rng(7))
    tests = stats.e_divisive(x)
    first = tests[0]
    assert first.index == 20 and first.screened and first.p < 0.05
    assert first.p == pytest.approx(1 / (stats.PERMUTATIONS + 1))
    # The bisection went on and stopped on a non-significant test.
    assert not tests[-1].screened
    hist = h.detect([_series(x)])
    (cp,) = hist.change_points
    assert cp.index == 20 and cp.p < 0.05 and cp.alarm
    assert cp.shift == pytest.approx(-0.10, abs=0.01)
    assert cp.point.session == "session-020"


@pytest.mark.parametrize("at", [4, 10, 26])
def test_step_found_near_the_ends(at):
    x = _step(np.random.default_rng(at), at=at, step=0.2)
    assert stats.e_divisive(x)[0].index == at


def test_two_steps_both_found():
    x = _noise(np.random.default_rng(3), n=40)
    x[15:] *= 0.85
    x[30:] *= 1.2
    hist = h.detect([_series(x)])
    assert sorted(c.index for c in hist.change_points) == [15, 30]
    first, second = sorted(hist.change_points, key=lambda c: c.index)
    assert first.shift == pytest.approx(-0.15, abs=0.02)
    assert second.shift == pytest.approx(0.20, abs=0.02)  # against the segment between the two


def test_no_change_in_pure_noise_per_series_rate():
    """Property: on 1000 seeded pure-noise series (30 points, normal and heavy-tailed), the
    first test of E-Divisive rejects at 0.05 in at most 5 % + 3 binomial sd (6.9 %)."""
    false = 0
    n = 1000
    for i in range(n):
        rng = np.random.default_rng(10_000 + i)
        x = _noise(rng) if i % 2 else 100 + rng.standard_t(3, size=30)
        false += stats.e_divisive(x, seed=i)[0].screened
    rate = false / n
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / n), rate


def test_many_noise_series_controlled_by_benjamini_hochberg():
    """100 noise series: at most the expected false alarms. With every series unchanged, BH at
    q bounds the chance of any false change point by q; over 10 families of 100 series the
    families with one are at most 2 (expected 0.5 at q = 0.05); without the correction (each
    series at 0.05) there would be about 5 per family."""
    families_with_alarm = 0
    uncorrected = 0
    for f in range(10):
        rng = np.random.default_rng(500 + f)
        series = [_series(_noise(rng), key=str(i)) for i in range(100)]
        hist = h.detect(series, min_shift=0, seed=f)
        families_with_alarm += bool(hist.change_points)
        uncorrected += sum(t.screened for tests in hist.tests.values() for t in tests)
    assert families_with_alarm <= 2
    assert uncorrected >= 20  # the correction is what keeps them out


def test_one_real_step_among_100_noise_series_found():
    rng = np.random.default_rng(42)
    series = [_series(_noise(rng), key=str(i)) for i in range(100)]
    series.append(_series(_step(rng), key="step"))
    hist = h.detect(series)
    assert [(c.series.key, c.index) for c in hist.alarms] == [(series[-1].key, 20)]
    assert hist.permutations >= 2 * 101 / stats.FDR


def test_benjamini_hochberg_by_hand():
    p = [0.01, 0.04, 0.03, 0.005, 0.5]
    rejected, thresholds = stats.benjamini_hochberg(p, 0.05)
    # sorted: 0.005 (<= .01), 0.01 (<= .02), 0.03 (<= .03), 0.04 (> .04? no: .04 <= .04), 0.5
    assert rejected == [True, True, True, True, False]
    assert thresholds[3] == pytest.approx(0.01) and thresholds[4] == pytest.approx(0.05)
    rejected, _ = stats.benjamini_hochberg([0.02, 0.03, 0.04], 0.01)
    assert rejected == [False, False, False]


def test_deterministic_and_independent_of_other_series():
    rng = np.random.default_rng(5)
    a = _series(_step(rng, step=-0.03), key="a")
    b = _series(_noise(rng), key="b")
    one = h.detect([a, b], permutations=199)
    two = h.detect([b, copy.deepcopy(a)], permutations=199)
    assert {k: [(t.index, t.p) for t in v] for k, v in one.tests.items()} == \
        {k: [(t.index, t.p) for t in v] for k, v in two.tests.items()}


def test_constant_series_has_no_change():
    hist = h.detect([_series([5.0] * 12)])
    assert not hist.change_points and hist.tests[_series([5.0]).key][0].p == 1.0


# --- direction and minimum shift --------------------------------------------------------------

@pytest.mark.parametrize("variable, better, step, kind", [
    ("bandwidth_1MiB_MBps", "higher", -0.10, "regression"),
    ("bandwidth_1MiB_MBps", "higher", +0.10, "improvement"),
    ("latency_8B_median_us", "lower", -0.10, "improvement"),
    ("latency_8B_median_us", "lower", +0.10, "regression"),
    ("loggp_protocol_ranges", "equal", +0.25, "regression"),
    ("old_variable", None, -0.10, "shift"),
])
def test_direction_from_perf_directions(variable, better, step, kind):
    x = _step(np.random.default_rng(11), step=step)
    hist = h.detect([_series(x, variable, better)])
    (cp,) = hist.alarms
    assert cp.kind == kind
    assert hist.regressions == ([cp] if kind == "regression" else [])


def test_tiny_shift_of_a_quiet_series_is_no_alarm():
    """1 % step, 0.05 % noise: significant, but under the 5 % minimum shift."""
    x = _step(np.random.default_rng(2), step=-0.01, sd=0.0005)
    hist = h.detect([_series(x)])
    cp = next(c for c in hist.change_points if c.index == 20)
    assert cp.significant and cp.shift == pytest.approx(-0.01, abs=0.002)
    assert not hist.alarms and not hist.regressions
    assert [c.index for c in h.detect([_series(x)], min_shift=0.005).regressions] == [20]
    assert "significant shift(s) below 5%" in h.table(hist)


def test_a_shift_within_the_noise_between_sessions_is_no_alarm():
    """Issue 39: an 8 B latency the references record only (slow phases: worst deviation 240 %
    between sessions) sits at 2.5x for the last 10 of 30 runs, a slow phase of the machine: the
    test finds the step, and it is no alarm against that noise; a quiet figure (worst deviation
    10 %) with the same step is a regression. The table and the JSON say which noise raised the
    least shift."""
    x = _step(np.random.default_rng(5), step=1.5)
    latency = _series(x, variable="latency_8B_median_us", better="lower", unit="us")
    noise = {latency.key: (2.4, "the worst deviation between sessions (box.yaml _statistics)")}
    hist = h.detect([latency], noise=noise)
    cp = next(c for c in hist.change_points if c.index == 20)
    assert cp.significant and cp.kind == "regression" and not cp.alarm
    assert cp.min_shift == 2.4 and not hist.regressions
    assert "1 series noisier than that between sessions" in h.table(hist)
    assert "below 5% or their series' noise" in h.table(hist)
    data = h.to_json(hist, "box", None)
    assert data["series"][0]["noise"]["relative"] == 2.4
    assert data["series"][0]["change_points"][0]["min_shift_pct"] == 240.0
    quiet = h.detect([latency], noise={latency.key: (0.1, "spread")})
    assert [c.index for c in quiet.regressions] == [20] and quiet.raised
    # a noise below --min-shift changes nothing
    assert not h.detect([latency], noise={latency.key: (0.01, "spread")}).raised


def test_table_regressions_first_and_json():
    rng = np.random.default_rng(9)
    series = [_series(_step(rng, step=0.2), "latency_8B_median_us", "lower", "us", key="lat"),
              _series(_step(rng, step=0.2), key="bw"),
              _series(_step(rng, step=-0.3), key="bw2")]
    hist = h.detect(series)
    kinds = [c.kind for c in hist.alarms]
    assert kinds == ["regression", "regression", "improvement"]
    assert hist.alarms[0].series.key == series[2].key  # the larger regression first
    text = h.table(hist)
    assert text.splitlines()[1].startswith("REGRESSION")
    assert "session-" in text and "2 regression shift(s)" in text
    data = json.loads(json.dumps(h.to_json(hist, "local", None)))
    assert data["method"]["correction"] == "benjamini-hochberg"
    assert [a["kind"] for a in data["alarms"]] == kinds
    assert len(data["series"]) == 3 and len(data["series"][0]["points"]) == 30
    assert data["alarms"][0]["distance"] == "same-l3" and data["alarms"][0]["index"] == 20


# --- reading stored runs ------------------------------------------------------------------------

def _variants(n, at, factor, report=REPORT):
    """`n` sessions derived from a real run report: new uuids and times, the same-l3 figures
    scaled by `factor` from session `at` on (with 1 % seeded noise)."""
    base = json.loads(report.read_text())
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        scale = factor if i >= at else 1.0

        def figure(_, value, scale=scale):
            return value * (scale * (1 + 0.01 * rng.normal()))

        start = base["session_info"]["time_start_unix"] + 86400.0 * (i - n)
        out.append(as_session(base, str(uuid.UUID(int=i + 1)), start, figure))
    return out


def test_collect_from_a_real_report():
    series, sessions = h.collect(store.report_sessions([REPORT]), "local")
    assert sessions == 1
    keys = {s.key: s for s in series}
    # The failed-reference bandwidth case counts (a regression fails its reference).
    bw = keys["NetbenchPingPongBandwidth local:default openmpi same-l3 bandwidth_1MiB_MBps"]
    assert bw.better == "higher" and bw.unit == "MB/s" and bw.points[0].value == 1337.036
    lat = keys["NetbenchPingPong local:default openmpi same-l3 latency_8B_median_us"]
    assert lat.better == "lower" and lat.levels == (("distance", "same-l3"),)
    assert h.collect(store.report_sessions([REPORT]), "other")[1] == 0


def test_sanity_failure_left_out_since_and_variable_filter():
    sessions = _variants(6, 99, 1.0)
    case = sessions[0]["runs"][0]["testcases"][3]
    case["result"], case["fail_phase"] = "fail", "sanity"
    series, _ = h.collect(sessions, "local")
    lat = next(s for s in series if s.variable == "latency_8B_median_us")
    bw = next(s for s in series if s.variable == "bandwidth_1MiB_MBps")
    assert len(lat.points) == 5 and len(bw.points) == 6
    since = sessions[3]["session_info"]["time_start_unix"]
    series, _ = h.collect(sessions, "local", since=since)
    assert {len(s.points) for s in series} == {3}
    import re
    series, _ = h.collect(sessions, "local", variable=re.compile("bandwidth"))
    assert {s.variable for s in series} == {"bandwidth_1MiB_MBps", "bandwidth_peak_MBps"}


def test_a_confirmed_case_counts_once_with_its_last_run():
    """A case measured again to confirm a failure (--max-retries) is one point of its session,
    the last run's, as the session's verdict judges it; its first run is not a second sample."""
    sessions = _variants(3, 99, 1.0)
    report = sessions[1]
    first = next(c for c in report["runs"][0]["testcases"]
                 if c["name"].startswith("NetbenchPingPong ") and c["perfvalues"])
    retry = copy.deepcopy(first)
    for perf in first["perfvalues"].values():
        perf[0] *= 3.0  # the slow first run, failed on performance
    first["result"], first["fail_phase"] = "fail", "performance"
    retry["result"], retry["fail_phase"] = "pass", None
    report["runs"].append({"testcases": [retry]})
    series, _ = h.collect(sessions, "local")
    lat = next(s for s in series if s.variable == "latency_8B_median_us"
               and s.check == "NetbenchPingPong" and s.levels == first_levels(first))
    mine = [p for p in lat.points if p.session == report["session_info"]["uuid"]]
    retried = next(v for k, v in retry["perfvalues"].items()
                   if k.endswith(":latency_8B_median_us"))[0]
    assert [p.value for p in mine] == [retried], mine
    assert len(lat.points) == 3


def first_levels(case):
    from fabricsuite.base.metrics import case_scope
    return case_scope(case)[3]


def _store(db_dir: Path, sessions):
    """Store sessions with ReFrame's own storage backend (what `reframe` does after a run)."""
    db_dir.mkdir(parents=True, exist_ok=True)
    with store._reframe_storage(db_dir / "results.db") as backend:
        for s in sessions:
            backend.store(s, "run-report.json")


def test_cli_reads_reframes_results_database(tmp_path, capsys):
    """12 sessions in ReFrame's database; from the 8th on the bandwidth fell by 20 %: exit 1,
    the bandwidth variables named as regressions at the 8th session, latency (which rose 20 %
    too, lower is better) as well; --variable latency still finds its regression."""
    sessions = _variants(12, 7, 0.8)
    _store(tmp_path, sessions)
    assert cli.main(["history", "--system", "local", "--results", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "12 session(s)" in out
    assert "bandwidth_1MiB_MBps" in out and "bandwidth_peak_MBps" in out
    assert str(uuid.UUID(int=8))[:8] in out  # the 8th session is where the level shifted
    assert cli.main(["history", "--system", "local", "--results", str(tmp_path), "--json",
                     "--variable", "^bandwidth_1MiB"]) == 1
    data = json.loads(capsys.readouterr().out)
    (alarm,) = data["alarms"]
    assert alarm["kind"] == "regression" and alarm["session_uuid"] == str(uuid.UUID(int=8))
    assert alarm["shift_pct"] == pytest.approx(-20, abs=2) and alarm["p_value"] < 0.05
    # Only the sessions before the drop: nothing changed.
    since = iso_utc(sessions[0]["session_info"]["time_start_unix"] - 1)
    until_drop = _variants(7, 99, 1.0)
    other = tmp_path / "before"
    _store(other, until_drop)
    assert cli.main(["history", "--system", "local", "--results", str(other),
                     "--since", since]) == 0
    assert "0 regression shift(s)" in capsys.readouterr().out


def test_a_16x_shift_in_too_few_runs_is_named_never_no_shift(tmp_path, capsys):
    """Issue 27: 8 nightlies, 4 at the real latency then 4 at 16x it. 4 + 4 runs cannot reach
    p below 0.029, above the first Benjamini-Hochberg threshold: the series is said to be too
    short, with the runs needed, and the 16x move is listed; exit 2 (inconclusive), not 0."""
    _store(tmp_path, _variants(8, 4, 16.0))
    status = cli.main(["history", "--system", "local", "--results", str(tmp_path)])
    out = capsys.readouterr().out
    assert status == 2, out
    moved = [ln for ln in out.splitlines() if ln.startswith("  REGRESSION? ")]
    assert moved and all("latency_8B_m" in ln and "insufficient runs: 4 + 4, at least" in ln
                         for ln in moved), out
    assert all("+1500.0%" in ln or "+15" in ln for ln in moved), moved
    assert "series too short for the test to reach the level" in out
    assert "with a clear move shown above" in out
    # for machines: every series says whether its runs were too few, and the moves are listed
    cli.main(["history", "--system", "local", "--results", str(tmp_path), "--json"])
    data = json.loads(capsys.readouterr().out)
    moves = data["untested_clear_moves"]
    assert {m["variable"] for m in moves} == {"latency_8B_median_us", "latency_8B_min_us"}
    assert all(m["runs_before"] == 4 and m["runs_after"] == 4 and m["smallest_p"] ==
               pytest.approx(2 / 70) and m["runs_needed"] > 8 for m in moves), moves
    # with enough runs the same shift is a regression found by the test (exit 1)
    more = tmp_path / "more"
    _store(more, _variants(16, 8, 16.0))
    assert cli.main(["history", "--system", "local", "--results", str(more)]) == 1
    assert "REGRESSION? " not in capsys.readouterr().out


def test_cli_improvement_exits_0(tmp_path, capsys):
    _store(tmp_path, _variants(10, 5, 1.3))  # bandwidth up, latency up
    assert cli.main(["history", "--system", "local", "--results", str(tmp_path),
                     "--variable", "bandwidth"]) == 0
    assert "improvement" in capsys.readouterr().out


@pytest.mark.parametrize("args, message", [
    (["--system", "local"], "no results database"),
    (["--system", "local", "--since", "last tuesday"], "is no date"),
    (["--system", "local", "--variable", "("], "is no regular expression"),
    (["--system", "nosuch", "--reports", str(REPORT)], "no stored runs of system 'nosuch'"),
    (["--system", "local", "--reports", str(REPORT), "--variable", "xyz"],
     "no performance figures of a variable matching"),
    (["--system", "local", "--reports", "/nonexistent.json"], "no such run report"),
    (["--system", "local", "--reports", str(REPORT), "--fdr", "2"], "false discovery rate"),
    # a threshold that judges nothing (issue 53), refused before any run is read
    (["--system", "local", "--min-shift", "nan"], "--min-shift nan: give a shift in %"),
    (["--system", "local", "--min-shift", "inf"], "--min-shift inf: give a shift in %"),
    (["--system", "local", "--fdr", "nan"], "--fdr nan: give a false discovery rate"),
    (["--system", "a b"], "not a ReFrame system name"),
])
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    assert cli.main(["history", "--results", str(tmp_path), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_cli_no_stored_runs_since(tmp_path, capsys):
    _store(tmp_path, _variants(3, 99, 1.0))
    assert cli.main(["history", "--system", "local", "--results", str(tmp_path),
                     "--since", "now+1d"]) == 2
    assert "no stored runs of system 'local'" in capsys.readouterr().err


def test_real_stored_sessions(tmp_path, capsys):
    """Twelve real sessions of NetbenchOverlap (tests/data/history/README.md), the last seven
    with Open MPI over TCP instead of shared memory, stored with ReFrame's storage backend as
    `reframe` stores them at the end of a session: the send overhead's regression is named at
    the first TCP session; both overhead variables are series with their direction."""
    reports = sorted(REAL.glob("run-report-*.json"))
    assert len(reports) == 12
    sessions = store.report_sessions(reports)
    _store(tmp_path, sessions)
    args = ["history", "--system", "local", "--results", str(tmp_path)]
    assert cli.main([*args, "--json"]) == 1
    data = json.loads(capsys.readouterr().out)
    overhead = [s for s in data["series"] if s["variable"].startswith("overhead_")]
    assert {s["variable"] for s in overhead} == {"overhead_send_us", "overhead_recv_us"}
    for s in overhead:
        assert s["better"] == "lower" and s["distance"] == "same-l3" and s["unit"] == "us"
        assert len(s["points"]) == 12
        assert [p["time"] for p in s["points"]] == sorted(p["time"] for p in s["points"])
    sixth = sessions[5]["session_info"]["uuid"]
    send = [a for a in data["alarms"] if a["variable"] == "overhead_send_us"]
    assert len(send) == 1 and send[0]["kind"] == "regression"
    assert send[0]["session_uuid"] == sixth and send[0]["index"] == 5
    assert send[0]["shift_pct"] > 1000 and send[0]["p_value"] < 0.05
    # The same through the report files.
    assert cli.main(["history", "--system", "local", "--reports", *map(str, reports)]) == 1
    assert sixth[:8] in capsys.readouterr().out
    # From the first TCP session on there is no shift to name.
    since = sessions[5]["session_info"]["time_start"]  # ReFrame's 20261123T210133+0000
    assert cli.main([*args, "--since", since]) == 0
    assert "7 session(s)" in capsys.readouterr().out


def test_cli_not_a_database(tmp_path, capsys):
    (tmp_path / "results.db").write_text("not sqlite\n" * 100)
    assert cli.main(["history", "--system", "local", "--results", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "results.db" in err and len(err.strip().splitlines()) == 1, err


def test_measure_false_alarms_command():
    """`python -m fabricsuite.commands.history` (README): the measurement runs and is seeded."""
    one = h.measure_false_alarms(families=2, per_family=20, points=12)
    assert one == h.measure_false_alarms(families=2, per_family=20, points=12)
    assert one["series"] == 40 and 0 <= one["per_series_rate"] <= 0.25


def test_a_copied_report_is_read_once(tmp_path, capsys):
    """Issue 39: a copy of a run report is the same session: history and compare read it once
    (counted twice it would weigh its figures double), and say so."""
    import shutil

    copy = tmp_path / "copy.json"
    shutil.copy(REPORT, copy)
    sessions = store.report_sessions([REPORT, copy])
    assert len(sessions) == 1
    err = capsys.readouterr().err
    assert f"{copy} is a copy of {REPORT} (the same session): read once" in err
    series, n = h.collect(sessions, "local")
    single, n1 = h.collect(store.report_sessions([REPORT]), "local")
    assert n == n1 and [len(s.points) for s in series] == [len(s.points) for s in single]
