"""Stored sessions derived from a real ReFrame run report, for the tests of the workflows that
read them (compare, history, report)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime


def as_session(report: dict, sid: str, start: float,
               figure: Callable[[str, float], float] | None = None) -> dict:
    """A copy of `report` as the session `sid` that started at `start` (Unix seconds): its
    uuids and every time moved, each performance figure replaced by ``figure(name, value)``
    (in the report's order, so that seeded noise draws the same numbers every time)."""
    report = copy.deepcopy(report)
    info = report["session_info"]
    shift = start - info["time_start_unix"]
    info["uuid"] = sid
    for key in ("time_start", "time_end"):
        info[f"{key}_unix"] += shift
        info[key] = datetime.fromtimestamp(info[f"{key}_unix"], UTC).strftime(
            "%Y%m%dT%H%M%S+0000")
    for run in report["runs"]:
        for index, case in enumerate(run["testcases"]):
            case["session_uuid"] = sid
            case["uuid"] = f"{sid}:{run.get('run_index', 0)}:{index}"
            if case.get("job_completion_time_unix"):
                case["job_completion_time_unix"] += shift
            if figure is not None:
                for name, perf in case["perfvalues"].items():
                    perf[0] = figure(name, perf[0])
    return report


def regression_lines(**evidence) -> list[str]:
    """The outcome's REGRESSION lines of a real run report (tests/data/baseline/
    run-report-pt2pt-local.json) whose failed cases carry `evidence` (case fields, e.g.
    counters="...")."""
    import json
    from pathlib import Path

    from fabricsuite.commands import session

    report = json.loads((Path(__file__).parent / "data" / "baseline" /
                         "run-report-pt2pt-local.json").read_text())
    for case in report["runs"][-1]["testcases"]:
        if case["result"] == "fail":
            case.update(evidence)
    return [ln for ln in session.verdict_lines(report) if ln.startswith("REGRESSION")]
