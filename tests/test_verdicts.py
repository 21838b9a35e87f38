"""Verdicts from measured noise (issue 12, items 1 and 2): the bound on the bad side comes from
the spread of the baseline runs with the partition's floor, the file records the statistics, and
the session summary reports a confirmed regression with both figures and its distance in noise
widths, and a transient that confirmation dispelled.

The run reports are variants of a real ReFrame 4.10 report (tests/data/baseline/)."""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path

import pytest
import yaml
from mpi_support import local_distance, local_reference_file, reframe, vm_reference_file
from test_baseline import LAT, LAT_MIN, latency_reports, pingpong, real, write_report

from fabricsuite import NOT_MEASURED_AGAIN
from fabricsuite.commands import session
from fabricsuite.commands.baseline import DEFAULT_FLOOR, NOISE_WIDTHS
from fabricsuite.commands.cli import main
from fabricsuite.commands.emucluster import QUICK
from fabricsuite.commands.session import verdict_lines


def bandwidth_case(report: dict) -> dict:
    return next(c for run in report["runs"] for c in run["testcases"]
                if c["name"].startswith("NetbenchPingPongBandwidth ")
                and c.get("distance") == "same-l3")


def reports_with(tmp_path, values: list[float], floor: float | None):
    """One passing report per bandwidth figure (1 MiB), the partition floor as given."""
    paths = []
    for i, value in enumerate(values):
        report = real()
        case = bandwidth_case(report)
        case["result"], case["fail_phase"], case["fail_reason"] = "pass", None, None
        for key, perf in case["perfvalues"].items():
            perf[0] = value if key.endswith(":bandwidth_1MiB_MBps") else value * 1.1
            perf[5] = "pass"
        if floor is not None:
            case["tolerance_floor"] = floor
        else:
            case.pop("tolerance_floor", None)
        paths.append(write_report(tmp_path / "reports", f"run-report-{i}.json", report,
                                  1_000_000 + i))
    return paths


def baseline(tmp_path, paths) -> dict:
    out = tmp_path / "ref.yaml"
    rc = main(["baseline", "--system", "local", "--output", str(out), *map(str, paths)])
    assert rc == 0
    return yaml.safe_load(out.read_text())


def bandwidth_ref(data: dict) -> list:
    return data["NetbenchPingPongBandwidth"]["local:default"]["openmpi"]["same-l3"][
        "bandwidth_1MiB_MBps"]


def test_a_quiet_variable_gets_the_partitions_floor_and_catches_10_percent(tmp_path):
    # The emulated 1 Gbit link: five runs within 0.4 %.
    data = baseline(tmp_path, reports_with(tmp_path, [123.1, 123.4, 123.5, 123.3, 123.2], None))
    value, lower, upper, unit = bandwidth_ref(data)
    assert (value, upper, unit) == (123.3, None, "MB/s")
    # the noise is far below the floor; for bandwidth the floor's slowdown 1 + f is 1 / (1 + f)
    assert lower == -round(DEFAULT_FLOOR / (1 + DEFAULT_FLOOR), 3)
    assert 123.3 * 0.9 < value * (1 + lower)  # -10 % fails
    stats = data["_statistics"]["NetbenchPingPongBandwidth local:default openmpi same-l3 "
                                "bandwidth_1MiB_MBps"]
    assert stats["n"] == 5 and stats["median"] == 123.3 and 0 < stats["spread"] < 0.004
    assert stats["floor"] == -lower and stats["bound"] == -lower


def test_the_floor_is_the_partitions_own(tmp_path):
    data = baseline(tmp_path, reports_with(tmp_path, [123.1, 123.4, 123.5], 0.35))
    assert bandwidth_ref(data)[1] == -0.259  # a 1.35x slowdown: 1 / 1.35 = 0.741


def test_a_unit_may_have_a_floor_of_its_own(tmp_path):
    """extras.tolerance_floor_by_unit, recorded per variable as perf_floors: here the median
    latency gets 35 % (the emulated cluster's latency: the host's TCP path, with slow phases),
    the minimum keeps the partition's 3 % and its measured spread."""
    def floors(report):
        pingpong(report)["perf_floors"] = {LAT: 0.35, LAT_MIN: 0.03}
    paths = latency_reports(tmp_path / "r", [0.33, 0.34, 0.35], edit=floors)
    out = tmp_path / "ref.yaml"
    assert main(["baseline", "--system", "local", "--output", str(out), *map(str, paths)]) == 0
    data = yaml.safe_load(out.read_text())
    scope = data["NetbenchPingPong"]["local:default"]["openmpi"]["same-l3"]
    assert scope[LAT][2] == 0.35, scope
    assert scope[LAT_MIN][2] < 0.35, scope
    stats = data["_statistics"]
    assert stats[f"NetbenchPingPong local:default openmpi same-l3 {LAT}"]["floor"] == 0.35


def test_the_emulated_cluster_declares_a_latency_floor():
    """What Judged.take_partition_tolerances turns into each variable's floor (perf_floors; a
    real run's are asserted in test_emucluster.py::test_pt2pt_checks_pass_at_2_nodes_through_
    srun): the partition's 7 %, 35 % for latency."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "emucluster_config",
        os.path.join(os.path.dirname(__file__), "..", "config", "systems", "emucluster.py"))
    config = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(config)
    extras = config._TOLERANCES
    assert extras["tolerance_floor"] == 0.07 and extras["tolerance_floor_by_unit"] == {"us": 0.35}


def test_a_noisy_variable_gets_a_bound_from_its_spread(tmp_path):
    values = [100.0, 90.0, 110.0, 95.0, 105.0]
    data = baseline(tmp_path, reports_with(tmp_path, values, 0.03))
    lower = bandwidth_ref(data)[1]
    stats = data["_statistics"]["NetbenchPingPongBandwidth local:default openmpi same-l3 "
                                "bandwidth_1MiB_MBps"]
    # spread = 1.4826 x MAD / median = 1.4826 x 5 / 100
    assert abs(stats["spread"] - 0.0741) < 1e-3
    assert lower == -round(NOISE_WIDTHS * stats["spread"], 3)
    assert all(v >= 100 * (1 + lower) for v in values)  # no healthy run would have failed


def session_report(first: float, second: float | None) -> dict:
    """A session whose bandwidth case failed (runs[0]) and was confirmed (runs[1])."""
    report = real()
    case = bandwidth_case(report)
    case["result"], case["fail_phase"] = "fail", "performance"
    for perf in case["perfvalues"].values():
        perf[:6] = [first, 123.3, -0.03, None, perf[4], "fail"]
    report["runs"] = [{"testcases": [case]}]
    if second is not None:
        retry = copy.deepcopy(case)
        for perf in retry["perfvalues"].values():
            perf[0] = second
            perf[5] = "fail" if second < 123.3 * 0.97 else "pass"
        if second >= 123.3 * 0.97:
            retry["result"], retry["fail_phase"] = "pass", None
        report["runs"].append({"testcases": [retry]})
    return report


def test_a_regression_whose_first_run_had_no_figure_is_named_with_null(tmp_path, monkeypatch):
    """CI of ca1c2ef: the first run of NetbenchLogGP failed with its threshold unresolved (null),
    the confirmation with a figure; the summary crashed formatting None. It says null now."""
    monkeypatch.setenv("RFM_REFERENCE_PREFIX", str(tmp_path / "no-references"))
    report = session_report(107.0, 106.7)
    for perf in report["runs"][0]["testcases"][0]["perfvalues"].values():
        perf[0] = None
    lines = verdict_lines(report)
    line = next(ln for ln in lines if "bandwidth_1MiB_MBps" in ln)
    assert line.startswith("REGRESSION") and "confirmed: first run null MB/s" in line, line
    last = report["runs"][1]["testcases"][0]["perfvalues"]
    for perf in last.values():
        perf[0] = None
    assert "= null MB/s" in next(ln for ln in verdict_lines(report) if "bandwidth_1MiB" in ln)


def test_a_confirmed_regression_names_both_figures_and_the_noise_widths(tmp_path,
                                                                         monkeypatch):
    ref = tmp_path / "refs"
    ref.mkdir()
    data = baseline(tmp_path, reports_with(tmp_path, [123.1, 123.4, 123.5, 123.3, 123.2], None))
    local_reference_file(ref).write_text(yaml.safe_dump(data))
    monkeypatch.setenv("RFM_REFERENCE_PREFIX", str(ref))
    lines = verdict_lines(session_report(107.0, 106.7))
    line = next(ln for ln in lines if "bandwidth_1MiB_MBps" in ln)
    assert line.startswith("REGRESSION NetbenchPingPongBandwidth local:default openmpi same-l3")
    assert "106.7 MB/s (reference 123.3, -13.5%, bound -3.0%)" in line, line
    assert "noise widths" in line and "confirmed: first run 107 MB/s" in line, line


def test_a_transient_dispelled_by_confirmation_is_reported_not_failed():
    lines = verdict_lines(session_report(60.0, 123.0))
    assert len(lines) == 1 and lines[0].startswith("confirmation passed:"), lines
    assert "first bandwidth_1MiB_MBps 60 MB/s" in lines[0]


def test_a_count_bound_is_rounded_outwards():
    from fabricsuite.commands.baseline import Samples, propose

    samples = Samples("NetbenchLogGP", "local:default", "openmpi", "loggp_protocol_ranges",
                      "ranges", [3.0, 3.0, 3.0], directions={"equal"}, counts={True})
    value, lower, upper, _unit = propose(samples)[0]
    assert value * (1 + lower) <= 2 and value * (1 + upper) >= 4, (lower, upper)


# --- the after-upgrade story of an MPI that changed its eager limit ------------------------------

@pytest.mark.integration
def test_a_reference_at_one_eager_limit_fails_after_the_limit_changes(tmp_path):
    """The shipped local references of NetbenchLogGP were taken at Open MPI's default
    shared-memory eager limit (4 KiB: the last protocol range starts at 4096 B). The same check
    with `btl_vader_eager_limit=1024`, as after an MPI update that lowered it, fails on the
    threshold variable, confirmed by a retry, and the summary names it with both figures.
    (1024: the check's sweep, up to 64 KiB, resolves it in 4 of 4 runs here; a limit of 16 KiB
    leaves too few sizes above it and comes out as one range, unresolved: a sanity failure;
    8 KiB came out at 4871 B in 1 of 4 runs, inside the reference's +19 % step.)"""
    import json

    if os.environ.get("FABRICSUITE_LOCAL_MPIS", "openmpi").find("openmpi") < 0:
        pytest.skip("Open MPI not declared on this machine (FABRICSUITE_LOCAL_MPIS)")
    results = tmp_path / "results"
    # The shipped (development VM's) threshold and range count, as this machine's own references
    # through the override: a protocol threshold is the MPI's, not the machine's speed.

    key, distance = "eager-limit-test-box", local_distance()
    data = yaml.safe_load(vm_reference_file().read_text())
    shipped = data["NetbenchLogGP"]
    prefix = "NetbenchLogGP.local:default.openmpi.same-l3."
    own = {"NetbenchLogGP": {"$index": shipped["$index"], "local:default": {"openmpi": {
        distance: shipped["local:default"]["openmpi"]["same-l3"]}}},
           "_machine": {"key": key}}
    for section in ("_recorded_only", "_wide_bounds"):
        own[section] = {k.replace(".same-l3.", f".{distance}."): v
                        for k, v in (data.get(section) or {}).items() if k.startswith(prefix)}
    (tmp_path / "reference" / "local").mkdir(parents=True)
    (tmp_path / "reference" / "local" / f"{key}.yaml").write_text(yaml.safe_dump(own))
    env = dict(os.environ, OMPI_MCA_btl_vader_eager_limit="1024", FABRICSUITE_MACHINE=key,
               RFM_REFERENCE_PREFIX=str(tmp_path / "reference"))
    # A slow phase can hide the threshold from LogGP's fit in a round of one session (the CI
    # host of 2026-12-01: ranges at 6889 B, o_s and G 2.5x, three rounds; CI of 2026-12-07: the
    # first round at 4871 B, the confirmation at 1024 B, rightly "not confirmed"): one more
    # session unless every round of this one saw the imposed threshold. The threshold is the
    # MPI's, not the machine's speed: each run waits at most 3 s for the fast state and makes at
    # most 4 passes (netbench's defaults, 30 s and 9, made this test 165 s in a slow phase, 35 s
    # in a quiet one: CI of 2026-12-07, issue 65).
    for attempt in range(2):
        proc = reframe("-c", "checks/pt2pt.py", "--system", "local",
                       "-n", f"^NetbenchLogGP%distance={local_distance()}", "-p", "openmpi",
                       "--exec-policy=serial", "-r", "--max-retries=1", "-S",
                       "confirm_pause_s=2", "-S",
                       "NetbenchLogGP.netbench_options=--state-wait-s,3,--max-passes,4",
                       "--report-file", str(tmp_path / "report.json"),
                       results=results / str(attempt), env=env, timeout=900)
        report = json.loads((tmp_path / "report.json").read_text())
        thresholds = [(c.get("perfvalues") or {}).get("local:default:loggp_threshold_large_bytes")
                      for run in report["runs"] for c in run["testcases"]
                      if c["name"].startswith("NetbenchLogGP")]
        if thresholds and all(t and t[5] == "fail" and t[0] <= 1218 for t in thresholds):
            break
    assert proc.returncode != 0, proc.stdout[-3000:]
    # a regression fails its confirmation round too (one short round here, 33 s of CI a round:
    # two of two rounds outside is the median rule's confirmation; the growing pauses of three
    # rounds are test_emucluster's workflows test). A round in a slow phase of the machine may
    # find LogGP's fit unsound (a sanity failure, CI on 2026-11-28), never a pass.
    assert len(report["runs"]) == 2, [len(r["testcases"]) for r in report["runs"]]
    assert "confirmation round 1: measuring the failed cases again after a 2 s pause" in (
        proc.stdout), proc.stdout[-3000:]
    rounds = [c for run in report["runs"] for c in run["testcases"]
              if c["name"].startswith("NetbenchLogGP")]
    assert [c["result"] for c in rounds] == ["fail"] * 2, [c["fail_reason"] for c in rounds]
    assert rounds[0]["fail_phase"] == "performance", rounds[0]["fail_reason"]
    final = rounds[-1]
    assert final["result"] == "fail" and final["fail_phase"] == "performance", final[
        "fail_reason"]
    failing = {k.split(":")[-1]: v for k, v in final["perfvalues"].items() if v[5] == "fail"}
    assert "loggp_threshold_large_bytes" in failing, final["perfvalues"]
    # what `fabricsuite baseline` needs to bound it in sweep steps travels with the run
    assert final["perf_size_steps"] == {"loggp_threshold_large_bytes": 2 ** 0.25}
    assert final["perf_counts"] == ["loggp_protocol_ranges"]
    # within one size step (2^(1/4)) of the imposed 1 KiB, not the reference's 4 KiB
    assert failing["loggp_threshold_large_bytes"][0] <= 1218
    lines = verdict_lines(report)
    named = [x for x in lines if "loggp_threshold_large_bytes" in x]
    assert named and "reference 4096" in named[0] and "confirmed: first run" in named[0], lines


def test_one_slow_run_in_five_is_set_aside_not_absorbed_by_the_bound():
    """A baseline run that met a slow phase (here at 40 % of the others) must not widen the bound
    to 1.5 x its deviation: from 5 runs on it is set aside (recorded), since confirmation absorbs
    such a run; with fewer runs nothing is set aside."""
    from fabricsuite.commands.baseline import Samples, propose

    five = Samples("NetbenchPingPongBandwidth", "local:default", "openmpi",
                   "bandwidth_1MiB_MBps", "MB/s", [100.0, 100.5, 99.5, 100.2, 40.0],
                   directions={"higher"}, floors={0.03})
    (value, lower, _upper, _unit), note, stats = propose(five)
    assert value == 100.0 and -0.05 < lower < 0 and note is None, (lower, stats)
    assert stats["set_aside"] == 0.6 and stats["worst"] < 0.01
    four = Samples("NetbenchPingPongBandwidth", "local:default", "openmpi",
                   "bandwidth_1MiB_MBps", "MB/s", [100.0, 100.5, 99.5, 40.0],
                   directions={"higher"}, floors={0.03})
    (_value, lower, _upper, _unit), _note, stats = propose(four)
    assert lower < -0.5 and "set_aside" not in stats


def test_a_regression_is_confirmed_per_variable():
    """Two runs of a case that failed on different variables (a slow phase in each) are no
    confirmed regression: the session passes and says so; the same variable outside in both runs
    is a regression."""
    from fabricsuite.commands.session import REGRESSED, WITHIN, classify

    report = session_report(60.0, 60.0)
    first, retry = report["runs"][0]["testcases"][0], report["runs"][1]["testcases"][0]
    names = sorted(first["perfvalues"])
    assert len(names) >= 2
    for key in names[1:]:
        first["perfvalues"][key][5] = "pass"  # the first run failed on names[0] only
    retry["perfvalues"][names[0]][5] = "pass"  # the retry on the others only
    code, why = classify(report)
    assert code == WITHIN and "not confirmed" in why, why
    lines = verdict_lines(report)
    assert lines and all(ln.startswith("not confirmed:") for ln in lines), lines
    assert "first run 60" in lines[0] and "a transient, no regression" in lines[0]

    retry["perfvalues"][names[0]][5] = "fail"  # now names[0] is outside in both runs
    code, why = classify(report)
    assert code == REGRESSED, why
    regression = [ln for ln in verdict_lines(report) if ln.startswith("REGRESSION")]
    assert len(regression) == 1 and names[0].split(":")[-1] in regression[0], regression


def test_the_retry_wrapper_still_matches_reframe():
    """fabricsuite.checks.judged_check wraps ReFrame's build_deps because ReFrame's retry loop
    resolves a round's dependencies among the round before's failed cases only. This pins that
    code: when a ReFrame upgrade changes it, this fails, and the wrapper is to be checked (and
    dropped where ReFrame keeps the session's cases itself)."""
    import inspect

    from reframe.frontend import dependencies
    from reframe.frontend.executors import Runner

    from fabricsuite.checks import judged_check

    retry = inspect.getsource(Runner._retry_failed)
    assert "dependencies.build_deps(failed_cases, cases)" in retry, retry
    assert "cases = failed_cases" in retry, retry
    assert "def build_deps(cases, default_cases=None):" in inspect.getsource(dependencies)
    assert dependencies.build_deps is judged_check._build_deps_with_session_fallback


def test_a_retry_round_falls_back_on_the_session_cases():
    from types import SimpleNamespace

    from fabricsuite.checks import judged_check

    def case(name):
        return SimpleNamespace(check=SimpleNamespace(unique_name=name))
    build, ping, flood = case("NetbenchBuild"), case("NetbenchPingPong"), case("NetbenchFlood")
    saved = list(judged_check._session_cases)
    judged_check._session_cases.clear()
    try:
        session = [build, ping, flood]
        # round 1: ReFrame passes the session
        assert judged_check.retry_fallback(session) == session
        round_1_failed = [case("NetbenchPingPong")]
        fallback = judged_check.retry_fallback(round_1_failed)
        assert fallback[0] is round_1_failed[0]  # the round before's own cases first
        assert [c.check.unique_name for c in fallback] == [
            "NetbenchPingPong", "NetbenchBuild", "NetbenchFlood"]
    finally:
        judged_check._session_cases[:] = saved


def test_every_run_command_asks_for_the_same_confirmation_rounds():
    """The run modes of config/settings.py (ci/run-local.sh runs its mode "local") pass
    --max-retries equal to fabricsuite.checks.judged_check.CONFIRM_ROUNDS; the pauses grow round by
    round."""
    from fabricsuite import REPO_ROOT
    from fabricsuite.checks.judged_check import CONFIRM_ROUNDS, confirm_pause

    wanted = f"--max-retries={CONFIRM_ROUNDS}"
    text = (REPO_ROOT / "config" / "settings.py").read_text()
    found = set(re.findall(r"--max-retries=\d+", text))
    assert found == {wanted}, found
    # the README's run command is the nightly's runner in the mode "local" of that file
    assert "nightly --system local --mode local" in (REPO_ROOT / "ci" / "run-local.sh").read_text()
    assert [confirm_pause(n, 20.0) for n in (1, 2, 3)] == [20.0, 60.0, 180.0]
    assert confirm_pause(1, 10.0) == 10.0


@pytest.mark.parametrize("pause", [-5, float("nan"), float("inf"), 1e9, "10", None, True])
def test_a_pause_that_cannot_be_waited_is_refused_naming_the_setting(pause):
    """-5 and NaN failed in time.sleep naming no option, 1e9 held the nightly (issue 53)."""
    from fabricsuite.checks.judged_check import confirm_pause_error

    assert "confirm_pause_s=" in confirm_pause_error(pause)
    assert "-S confirm_pause_s=N" in confirm_pause_error(pause)


def test_a_pause_in_range_is_taken():
    from fabricsuite.checks.judged_check import confirm_pause_error

    assert [confirm_pause_error(p) for p in (0, 0.5, 20, 600.0)] == [None] * 4


def test_three_confirmation_rounds_judge_each_case_by_its_own_last_round():
    """With --max-retries=3 a case that passed round 1 is absent from the later rounds: it still
    prints as `confirmation passed`, and a case that failed every round is the regression."""
    from fabricsuite.commands.session import REGRESSED, classify

    report = session_report(60.0, 124.0)  # case A: failed, then passed round 1
    transient = report["runs"][0]["testcases"][0]
    steady = copy.deepcopy(transient)  # case B: failed the first run and all three rounds
    steady["unique_name"] = steady["name"] = steady["display_name"] = "NetbenchSteadyLoss"
    report["runs"][0]["testcases"].append(steady)
    report["runs"][1]["testcases"].append(copy.deepcopy(steady))
    report["runs"] += [{"testcases": [copy.deepcopy(steady)]} for _ in range(2)]
    code, why = classify(report)
    assert code == REGRESSED and why.startswith("REGRESSION: 1 case(s)"), why
    lines = verdict_lines(report)
    assert any(ln.startswith("confirmation passed: NetbenchPingPongBandwidth") for ln in lines), (
        lines)
    regressions = [ln for ln in lines if ln.startswith("REGRESSION")]
    assert regressions and all("NetbenchSteadyLoss" in ln for ln in regressions), lines


@pytest.mark.integration
def test_a_sanity_failure_is_confirmed_at_once_without_the_pauses(tmp_path):
    """A case refused in sanity (here: the run fell onto TCP loopback, which the partition does
    not expect) cannot change by waiting for a slow phase: its confirmation runs at once, with
    none of the pauses a performance failure waits (fabricsuite.checks.judged_check: 20, 60, 180 s
    by default; 30 s here, which the test would wait twice), and once: the round after fails
    without running, and the outcome still names the sanity failure."""
    import json

    if os.environ.get("FABRICSUITE_LOCAL_MPIS", "openmpi").find("openmpi") < 0:
        pytest.skip("Open MPI not declared on this machine (FABRICSUITE_LOCAL_MPIS)")
    env = dict(os.environ, OMPI_MCA_btl="self,tcp")
    proc = reframe("-c", "checks/pt2pt.py", "--system", "local",
                   "-n", f"^NetbenchPingPong%distance={local_distance()}", "-p", "openmpi",
                   "--exec-policy=serial", "-r", "--max-retries=2", "-S", "confirm_pause_s=30",
                   *QUICK, "--report-file", str(tmp_path / "report.json"),
                   results=tmp_path / "results",
                   env=env, timeout=900)
    assert proc.returncode != 0, proc.stdout[-3000:]
    report = json.loads((tmp_path / "report.json").read_text())
    rounds = [c for run in report["runs"] for c in run["testcases"]
              if c["name"].startswith("NetbenchPingPong")]
    assert [(c["result"], c["fail_phase"]) for c in rounds[:2]] == [("fail", "sanity")] * 2, [
        c["fail_reason"] for c in rounds]
    assert "tcp" in rounds[0]["fail_reason"], rounds[0]["fail_reason"]
    assert len(rounds) == 3 and rounds[2]["result"] == "fail", rounds[2:]
    assert f"{NOT_MEASURED_AGAIN}: " in rounds[2]["fail_reason"], rounds[2]["fail_reason"]
    assert not rounds[2].get("job_stdout") or not (
        Path(rounds[2]["stagedir"]) / rounds[2]["job_stdout"]).exists(), "the third round ran"
    assert "confirmation round" not in proc.stdout, proc.stdout[-3000:]
    said = "\n".join(session.summary_lines(report, []))
    assert re.search(r"BROKEN NetbenchPingPong .*: sanity: .*carried by tcp", said), said
