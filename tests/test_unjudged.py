"""A figure netbench flags unreliable is left out of its run's verdict where the check says so
(`unjudged_when_unreliable`, fabricsuite.checks.rfm_netbench), named in the outcome, and fails
sanity anywhere else: the real flood output of a healthy host whose cache edge lies inside the G fit
(tests/data/netbench/README.md), and the outcome line of a real session's report."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricsuite.checks.rfm_netbench import cell, figure_problems, summary, unjudged_figures
from fabricsuite.commands import session
from fabricsuite.data.netbench_result import load

pytestmark = pytest.mark.unit

FLOOD = (Path(__file__).parent / "data" / "netbench" / "flood"
         / "unreliable-G-cache-edge-openmpi.json")
METRICS = {"flood_G_ns_per_byte": summary("G_ns_per_byte"),
           "flood_g_8B_us": summary("g_us"),
           "flood_bandwidth_1MiB_MBps": cell("flood_best", "bandwidth_MBps", size_bytes=1 << 20)}


def test_a_flagged_fit_is_left_out_of_the_verdict_where_the_check_says_so():
    result = load(str(FLOOD))
    assert [u["quantity"] for u in result.unreliable] == ["G_ns_per_byte"]
    (line,) = unjudged_figures(METRICS, result, "G_ns_per_byte")
    assert line.startswith("flood_G_ns_per_byte: netbench flagged G_ns_per_byte unreliable: "
                           "fit over 5 sizes in [65536, 1048576] B: rms residual 30.5%"), line
    # the run's other figures stay judged, and are sound
    assert result.problems(tolerated=lambda quantity: quantity == "G_ns_per_byte") == []


def test_anywhere_else_a_flagged_figure_fails_sanity():
    result = load(str(FLOOD))
    assert unjudged_figures(METRICS, result, None) == []
    assert unjudged_figures(METRICS, result, "g_us") == []  # g is sound: judged
    (problem,) = result.problems()
    assert problem.startswith("netbench flagged G_ns_per_byte as unreliable: fit over 5 sizes")


def test_the_outcome_names_what_a_run_left_out():
    case = {"name": "NetbenchFlood %distance=same-l3", "display_name":
            "NetbenchFlood %distance=same-l3", "system": "local", "partition": "default",
            "environ": "openmpi", "distance": "same-l3", "check_vars": {},
            "unjudged": ["flood_G_ns_per_byte: netbench flagged G_ns_per_byte unreliable: rms"]}
    lines = session.unjudged_lines([case])
    assert lines[0].startswith("not judged in this run, netbench flagged them unreliable")
    assert "flood_G_ns_per_byte: netbench flagged" in lines[1], lines
    assert session.unjudged_lines([{**case, "unjudged": []}]) == []


def test_an_unjudged_figure_is_no_history_point_and_no_baseline_sample(tmp_path):
    import copy
    import json

    from case_support import report

    from fabricsuite.base.metrics import unjudged_variables
    from fabricsuite.commands import baseline, history

    data = report("recorded-kind")
    assert unjudged_variables(["latency_8B_median_us: netbench flagged x unreliable: why",
                               ""]) == {"latency_8B_median_us"}
    assert unjudged_variables(None) == set()
    flagged = copy.deepcopy(data)
    for run in flagged["runs"]:
        for case in run["testcases"]:
            case["unjudged"] = ["latency_8B_median_us: netbench flagged it unreliable: why"]
    series = {s.variable for s in history.collect([data], "local")[0]}
    left = {s.variable for s in history.collect([flagged], "local")[0]}
    assert "latency_8B_median_us" in series and series - left == {"latency_8B_median_us"}
    (tmp_path / "a.json").write_text(json.dumps(flagged))
    samples = {s.variable for s in baseline.read_reports([tmp_path / "a.json"], "local").samples}
    assert samples and "latency_8B_median_us" not in samples


def test_a_figure_that_is_no_number_fails_sanity_naming_it():
    """NaN passes every bound ReFrame compares it with: a figure the check derives that comes
    out as no number (a line fraction without its line rate) fails sanity naming it; the
    figures read from netbench's output are refused by the reader already (a cell of inf)."""
    from fabricsuite.data.links import line_fraction

    metrics = {**METRICS, "flood_bandwidth_1MiB_line_fraction": line_fraction(
        METRICS["flood_bandwidth_1MiB_MBps"])}
    result = load(str(FLOOD))
    result.line_rate_gbps = 1.0
    assert figure_problems(metrics, result, set()) == []
    result.line_rate_gbps = None
    assert figure_problems(metrics, result, set()) == [
        "flood_bandwidth_1MiB_line_fraction: nan is no figure (derived from netbench's output, "
        "where a number belongs)"]
    # a figure the run left out of its verdict (unjudged) is not judged
    assert figure_problems(metrics, result, {"flood_bandwidth_1MiB_line_fraction"}) == []
    row = next(r for r in result.tables["flood_best"] if r["size_bytes"] == 1 << 20)
    row["bandwidth_MBps"] = float("inf")
    assert "flood_best[size_bytes=1048576].bandwidth_MBps is not a finite number: inf" in \
        figure_problems(METRICS, result, set())[0]


def test_a_report_figure_that_is_no_number_is_named_in_the_outcome():
    """A run report whose passed case holds NaN (edited by hand): ReFrame passed it against
    any bound and history leaves it out, so the outcome names it."""
    import json

    from case_support import report

    data = json.loads(json.dumps(report("recorded-kind")))
    case = next(c for run in data["runs"] for c in run["testcases"] if c.get("perfvalues"))
    key = next(iter(case["perfvalues"]))
    assert session.no_number_lines([case]) == []
    case["perfvalues"][key][0] = float("nan")
    lines = session.no_number_lines([case])
    assert lines[0].startswith("figures that are no number") and len(lines) == 2
    assert lines[1].endswith(f"{key.split(':')[-1]}=nan"), lines
