"""Change points in the history of every performance variable (`fabricsuite history`).

Data. Every session is stored in ReFrame's results database (`storage` in config/settings.py,
`RESULTS/results.db`); it is read through ReFrame's own storage backend
(`reframe.frontend.reporting.storage`, the code behind `reframe --list-stored-sessions` and
`--performance-compare`), so that ReFrame's database lock, schema check and time query are used
as they are, and a later ReFrame that changes the schema fails with ReFrame's own message instead
of a wrong reading. Each stored session is the session's run report (the same JSON as
RESULTS/reports/run-report-*.json), so run report files can be given instead (`--reports`), e.g.
from a machine with the database disabled. The database is preferred because it is the one
record of every run: report files are per session and are rotated or deleted by hand.

Series. One per (check, partition, environment, distance or scale, variable), ordered by the job's
completion time, one point per test case (a session with `--repeat 3` gives three). A case counts
if it produced trustworthy figures: passed, or failed only in the performance phase (a regression
is exactly a figure that fails its reference; it must stay in the history). Cases that failed in
sanity, run or build, were aborted or skipped are left out: their figures are not the check's
complete job. The direction of each variable (lower, higher or equal is better) comes from the
case's loggable `perf_directions` (`fabricsuite.base.metrics`).

Method: change points by E-Divisive means with Benjamini-Hochberg across all series, a
minimum shift and the noise the references record (`fabricsuite.commands.change_points`,
whose docstring gives the method, its false alarms and its limits).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fabricsuite.base.commandline import (
    add_selection_options,
    check_system,
    one_line_errors,
    results_dir,
    variable_pattern,
)
from fabricsuite.base.formats import figure, iso_utc
from fabricsuite.base.metrics import (
    case_scope,
    is_number,
    unjudged_variables,
)
from fabricsuite.base.stats import (
    FDR,
    MIN_SIZE,
    PERMUTATIONS,
    SEED,
    SEQUENTIAL_HITS,
)
from fabricsuite.commands.change_points import (
    MIN_SHIFT,
    ChangePoint,
    History,
    HistoryError,
    Point,
    Series,
    check_options,
    detect,
    measure_false_alarms,
)
from fabricsuite.data.cases import (
    DISTURBED,
    MEASURED,
    case_key,
    disturbers,
    final_cases,
    health,
    run_figures,
    was_interrupted,
)
from fabricsuite.data.cases import read as read_cases
from fabricsuite.data.references import variable_noise
from fabricsuite.data.session_verdict import past
from fabricsuite.data.store import parse_since, read_sessions, session_runs


def is_counted(case: dict[str, Any], first: dict[str, Any] | None = None) -> bool:
    """Whether a case's figures count: the check's complete job on a quiet node (the case
    model's MEASURED classes: passed, recorded, a transient or a regression); a disturbed run
    is no history point, nor a compare sample."""
    return health(case, first) in MEASURED


def collect(sessions: Iterable[dict[str, Any]], system: str, since: float | None = None,
            variable: re.Pattern | None = None, results: Path | None = None,
            rejudge: bool = False) -> tuple[list[Series], int]:
    """The series of `system` in the stored sessions (run reports), each point with its
    session's verdict as stored in `results` when it ended (`rejudge`, or none stored: judged
    now); returns (series, sessions that had a test case of the system)."""
    table: dict[tuple, Series] = {}
    seen_sessions = set()
    for report in sessions:
        info, runs = session_runs(report, HistoryError)
        uuid = str(info.get("uuid", "?"))
        start = info.get("time_start_unix")
        # One point per test case and session: a case measured again to confirm a failure
        # (--max-retries) counts with its last run only, as the session's verdict judges it; its
        # first run would count the same session twice in a trend or a compare.
        cases = [{"testcases": [c for c in (run.get("testcases") or []) if isinstance(c, dict)]}
                 for run in runs if isinstance(run, dict)]
        # the case model's health decides what counts; the session's verdict is what a point
        # says of itself, the one answer of every command and page
        verdict = past({"runs": cases, "session_info": info}, results, rejudge)
        judged = {case_key(j.last): j for j in verdict.cases}
        interrupted = was_interrupted({"runs": cases})  # ended by a signal: no point counts
        for case in final_cases({"runs": cases}):
            if case.get("system") != system:
                continue
            seen_sessions.add(uuid)
            found = judged.get(case_key(case))
            if interrupted or found is None or found.case.health not in MEASURED:
                continue
            when = case.get("job_completion_time_unix")
            when = when if is_number(when) else start
            if not is_number(when) or (since is not None and when < since):
                continue
            _add(table, case, uuid, float(when), variable, found.verdict)
    for s in table.values():
        s.points.sort(key=lambda p: p.time)
    return sorted(table.values(), key=lambda s: s.key), len(seen_sessions)


def set_aside(sessions: Iterable[dict[str, Any]], system: str) -> str:
    """"" when no run of `system` was left out for its node; else one line: "3 run(s) in 2
    session(s) set aside: disturbed by f951, python" (fabricsuite.data.cases: a disturbed run is no
    history point and no compare sample)."""
    runs, names, seen = 0, set(), set()
    for report in sessions:
        for case in read_cases(report):
            if case.system == system and case.health == DISTURBED:
                runs += 1
                seen.add(case.session)
                names.update(disturbers(case.evidence.disturbance))
    if not runs:
        return ""
    return (f"{runs} run(s) in {len(seen)} session(s) set aside: disturbed by "
            f"{', '.join(sorted(names))}")


def _add(table: dict, case: dict[str, Any], session: str, when: float,
         variable: re.Pattern | None, verdict: str) -> None:
    check, partition, environ, levels = case_scope(case)
    directions = case.get("perf_directions")
    if not isinstance(directions, dict):
        directions = {}  # runs of checks older than perf_directions ('<undefined>')
    unjudged = unjudged_variables(case.get("unjudged"))
    for perf in run_figures(case):
        name = perf.variable
        if (variable is not None and not variable.search(name)) or name in unjudged:
            continue  # not asked for, or flagged unreliable in this run: no point
        value = perf.number
        if value is None:
            continue
        k = (check, partition, environ, levels, name)
        series = table.setdefault(k, Series(check, partition, environ, name, str(perf.unit),
                                            levels=levels))
        series.points.append(Point(when, session, value, str(case.get("counters") or ""),
                                   verdict))
        if name in directions:
            series.directions.add(str(directions[name]))


# --- output ------------------------------------------------------------------------------------

def _where(s: Series) -> str:
    return " ".join([s.environ] + [v for _, v in s.levels])


def to_json(history: History, system: str, since: float | None) -> dict[str, Any]:
    """Everything, for machines (issue 13's report and compare): the method, each series with
    its points and its change points, and the alarms, regressions first."""
    by_key: dict[str, list[ChangePoint]] = {}
    for c in history.change_points:
        by_key.setdefault(c.series.key, []).append(c)
    return {
        "system": system,
        "since": None if since is None else iso_utc(since),
        "method": {
            "name": "e-divisive means (Matteson & James 2014), permutation test",
            "correction": "benjamini-hochberg",
            "fdr": history.fdr,
            "min_shift": history.min_shift,
            "permutations": history.permutations,
            "sequential_hits": SEQUENTIAL_HITS,
            "min_size": MIN_SIZE,
            "seed": history.seed,
            "tests": history.n_tests,
        },
        "alarms": [
            {**_series_id(c.series), **c.as_dict()} for c in history.alarms
        ],
        "series": [
            {
                **_series_id(s),
                "points": [{"time": iso_utc(p.time), "session_uuid": p.session, "value": p.value,
                            "verdict": p.verdict} for p in s.points],
                "tested": s.key in history.tests,
                "noise": ({"relative": history.raised[s.key][0],
                           "source": history.raised[s.key][1]}
                          if s.key in history.raised else None),
                "change_points": [c.as_dict() for c in by_key.get(s.key, [])],
                "insufficient_runs": next((u.as_dict() for u in history.untestable
                                           if u.series.key == s.key), None),
            }
            for s in history.series
        ],
        "series_too_short": history.too_short,
        "untested_clear_moves": [{**_series_id(u.series), **u.as_dict()}
                                 for u in history.clear_moves],
    }


def _series_id(s: Series) -> dict[str, Any]:
    return {"check": s.check, "partition": s.partition, "environ": s.environ,
            **{f: v for f, v in s.levels}, "variable": s.variable, "unit": s.unit,
            "better": s.better}



def table(history: History, rows: int = 20) -> str:
    """The one-screen table: alarms (regressions first), then a summary line."""
    alarms = history.alarms
    below = [c for c in history.change_points if not c.alarm]
    lines = []
    if alarms:
        head = ("kind", "check", "partition", "where", "variable", "before -> after", "shift",
                "p", "run (session, date)")
        body = []
        for c in alarms[:rows]:
            s = c.series
            shift = c.shift
            body.append((
                c.kind.upper() if c.kind == "regression" else c.kind, s.check, s.partition,
                _where(s), s.variable, f"{figure(c.before)} -> {figure(c.after)} {s.unit}",
                "from 0" if shift is None else f"{100 * shift:+.1f}%", f"{c.p:.2g}",
                f"{c.point.session[:8]} {iso_utc(c.point.time)[:16]}Z"
                f" ({c.index + 1}/{len(s.points)})"))
        widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
        for r in [head, *body]:
            lines.append("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
        if len(alarms) > rows:
            lines.append(f"... and {len(alarms) - rows} more (--json for all)")
    moves = history.clear_moves
    if moves:
        lines.append(f"untested, too few runs to reach FDR {history.fdr:g}, but the runs "
                     f"moved apart by at least {100 * history.min_shift:g}% (look at these; "
                     f"not \"no shift\"):")
        for u in sorted(moves, key=lambda u: -abs(u.shift or math.inf))[:rows]:
            s = u.series
            shift = u.shift
            lines.append(
                f"  {u.kind.upper() if u.kind == 'regression' else u.kind}? {s.check} "
                f"{s.partition} {_where(s)} {s.variable}: {figure(u.before)} -> "
                f"{figure(u.after)} {s.unit} "
                f"({'from 0' if shift is None else f'{100 * shift:+.1f}%'}); {u.text()}")
    n_reg = len(history.regressions)
    summary = (f"{len(history.series)} series, {history.n_tests} test(s): {n_reg} regression "
               f"shift(s), {len(alarms) - n_reg} other shift(s) at FDR {history.fdr:g} "
               f"(Benjamini-Hochberg) and at least {100 * history.min_shift:g}% shift")
    if history.raised:
        summary += (f"; {len(history.raised)} series noisier than that between sessions need "
                    f"a shift beyond their noise (the references' worst deviation)")
    if below:
        summary += (f"; {len(below)} significant shift(s) below {100 * history.min_shift:g}%"
                    + (" or their series' noise" if history.raised else ""))
    if history.too_short:
        summary += f"; {history.too_short} series with fewer than {2 * MIN_SIZE} runs not tested"
    if history.untestable:
        needed = max(u.needed for u in history.untestable)
        summary += (f"; {len(history.untestable)} series too short for the test to reach the "
                    f"level (up to {needed} runs needed), {len(moves)} of them with a clear "
                    f"move shown above")
    lines.append(summary)
    return "\n".join(lines)


# --- the command -------------------------------------------------------------------------------

DESCRIPTION = f"""\
Find the runs where a performance variable's level shifted, in every series (check,
partition, environment, distance or scale, variable) of the runs stored in ReFrame's results
database (RESULTS/results.db), ordered by run time.

Method: E-Divisive means (Matteson & James 2014, as in MongoDB's signal processing and
Apache Otava): hierarchical bisection, each split tested by seeded permutations (at least
{PERMUTATIONS}; the same runs give the same answer). False alarms across the many variables:
Benjamini-Hochberg over all the tests made, at false discovery rate --fdr (default {FDR}).
A significant shift below --min-shift (default {100 * MIN_SHIFT:g} %), or below the variable's
noise between sessions where the system's references record a wider one (their worst
deviation, recorded-only figures included), is counted, no alarm.
Each shift is a regression or an improvement by the variable's declared direction
(perf_directions). Cases that failed only their reference count (a regression does that);
those that failed in sanity or earlier do not.

Prints one screen (regressions first) or, with --json, every series with its points and
change points. A series too short for the test to reach the level (4 runs before a shift
and 4 after cannot go below p = 0.029) is said to be so, with the runs it needs, and when its
runs moved apart by at least --min-shift it is listed: never read as "no shift".
Exit status: 0 no regression shift, 1 a regression shift found, 2 bad input (no stored runs, a
bad date or pattern, with one line naming the fix) or a clear move too few runs can test."""


def add_parser(sub: Any) -> None:
    """Register `fabricsuite history` on the CLI's subparsers."""
    import argparse

    p = sub.add_parser("history", help="change points in each variable's stored history",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=DESCRIPTION)
    add_selection_options(p, since=True, reports=True, rejudge=True)
    p.add_argument("--variable", metavar="REGEX",
                   help="only variables whose name matches REGEX (re.search), e.g. bandwidth")
    p.add_argument("--json", action="store_true", help="print JSON for machines")
    p.add_argument("--fdr", type=float, default=FDR, metavar="Q",
                   help=f"false discovery rate over all tests (default {FDR})")
    p.add_argument("--min-shift", type=float, default=100 * MIN_SHIFT, metavar="PCT",
                   help=f"smallest shift in %% that is an alarm (default {100 * MIN_SHIFT:g})")
    p.add_argument("--permutations", type=int, default=PERMUTATIONS, metavar="N",
                   help=f"least permutations per test (default {PERMUTATIONS}; raised to "
                        f"2 x series / fdr)")
    p.add_argument("--seed", type=int, default=SEED, help="seed of the permutations")


@one_line_errors("history")
def run(args: Any) -> int:
    """`fabricsuite history`: 0 no regression shift, 1 a regression shift, 2 bad input or a
    clear move too few runs can test."""
    import json

    check_system(args.system)
    pattern = variable_pattern(args.variable, HistoryError)
    if args.permutations < 1:
        raise HistoryError(f"--permutations {args.permutations}: give 1 or more")
    check_options(args.fdr, args.min_shift / 100)
    since = parse_since(args.since) if args.since else None
    sessions, where = read_sessions(args, since)
    series, n_sessions = collect(sessions, args.system, since, pattern, results_dir(args),
                                 args.rejudge)
    if not n_sessions:
        raise HistoryError(f"no stored runs of system {args.system!r} in {where}"
                           + (f" since {iso_utc(since)}" if since is not None else "")
                           + "; check --system and --since, or run the suite first")
    if not series:
        raise HistoryError(f"{n_sessions} stored session(s) of system {args.system!r} hold "
                           f"no performance figures"
                           + (f" of a variable matching {args.variable!r}" if pattern else ""))
    history = detect(series, fdr=args.fdr, min_shift=args.min_shift / 100,
                     permutations=args.permutations, seed=args.seed,
                     noise=variable_noise(args.system, recorded=True))
    if args.json:
        json.dump(to_json(history, args.system, since), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(f"fabricsuite history: system {args.system}, {n_sessions} session(s) in {where}")
        aside = set_aside(sessions, args.system)
        if aside:
            print(f"fabricsuite history: {aside}")
        print(table(history))
    if history.regressions:
        return 1
    # a clear move the runs are too few to test: inconclusive, never "no shift"
    return 2 if history.clear_moves else 0


if __name__ == "__main__":
    print(measure_false_alarms())
