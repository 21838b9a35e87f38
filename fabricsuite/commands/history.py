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

Method: E-Divisive means (Matteson and James 2014, "A nonparametric approach for multiple change
point analysis of multivariate data", JASA 109:505), in the form MongoDB's signal processing
(Daly et al. 2020, ICPE) and Apache Otava use it, with alpha = 1 on one variable:

- For a segment of length L split at tau (left m = tau, right k = L - tau points), the energy
  statistic Q(tau) = m k / L * (2 mean|x_i - y_j| - mean_{i<i'}|x_i - x_i'| - mean_{j<j'}|y_j -
  y_j'|) measures how different the two sides' distributions are (location and spread, no
  normality assumed). The right end of a segment is its end (Otava's kappa = L; Matteson and
  James also maximise over kappa).
- Hierarchical bisection: the best split of every current segment is found (at least
  MIN_SIZE points on each side); the largest is the candidate. Its significance is a permutation
  test as in Matteson and James: the points are permuted within each current segment and the
  largest Q over all segments is computed again; p = the share of permutations whose Q reaches the
  observed one. Permutations stop early once SEQUENTIAL_HITS of them reached it (Besag and Clifford
  1991: p = hits / permutations, a valid p-value that saves time on series without change);
  otherwise p = (hits + 1) / (permutations + 1). A candidate with p <= the screening level (the
  FDR level q) is accepted and the bisection goes on in its two halves; the first one above it
  ends that series.
- Deterministic: each series' permutations come from numpy's generator seeded by (seed,
  CRC-32 of the series key), so a series' result does not depend on which others are read.

False alarms across variables: Benjamini-Hochberg over every permutation test made (all series'
candidates, the one that ended each series included), at false discovery rate q (default 0.05):
the tests sorted by p, the candidates up to the largest rank r with p_(r) <= r q / m are change
points. Why BH and not Bonferroni: a suite run stores hundreds of variables, and Bonferroni at
0.05 / m would need more permutations and longer histories than a center has before a real 10 %
shift counts; BH keeps the expected share of false change points among those reported at q,
and when no variable moved at all (every null true) the chance of any false change point at q
(the family-wise rate). Variables of one run are positively correlated (a slow phase of a shared
machine moves many at once), a dependence under which BH remains valid (Benjamini and Yekutieli
2001, PRDS). The number of permutations is raised to at least 2 x series / q so that a single
real change among all series can reach BH's smallest threshold.

Minimum shift: a change point whose relative shift (median of the segment after it against the
median of the segment before it, between the neighbouring change points) is below
`min_shift` (default 5 %) is reported but is no alarm: a very quiet series makes a 0.5 % move
significant, and that is no fabric regression. Where the system's references record a
variable's noise between sessions (`_statistics`: the worst deviation, recorded-only figures
included), a shift within that noise is no alarm either: a machine's own slow phases (an 8 B
latency at 2-3x for minutes) are not a change of the fabric. A shift is a regression when it
goes the bad way of the variable's direction (up for lower-is-better, down for
higher-is-better, any move for an "equal" count), an improvement otherwise; a variable without
a direction is a "shift".

Limits: a permutation test cannot be more significant than the number of distinct splits allows
(five points before and two after: 21 splits, p >= ~0.05), so a change needs a few runs on each
side before it can be named; the newest run alone is judged by the references, not here.
"""

from __future__ import annotations

import math
import re
import statistics
import sys
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricsuite.base.commandline import (
    UsageError,
    add_selection_options,
    check_system,
    is_within,
    one_line_errors,
    variable_pattern,
)
from fabricsuite.base.formats import figure, iso_utc
from fabricsuite.base.metrics import (
    EQUAL,
    HIGHER,
    LOWER,
    VariableSeries,
    case_scope,
    is_number,
    perf_variable,
    unjudged_variables,
)
from fabricsuite.base.stats import (
    FDR,
    MIN_SIZE,
    PERMUTATIONS,
    SEED,
    SEQUENTIAL_HITS,
    Test,
    benjamini_hochberg,
    e_divisive,
    runs_needed,
    smallest_p,
)
from fabricsuite.data.cases import (
    DISTURBED,
    MEASURED,
    case_key,
    disturbers,
    final_cases,
    health,
    was_interrupted,
)
from fabricsuite.data.cases import read as read_cases
from fabricsuite.data.references import variable_noise
from fabricsuite.data.session_verdict import case_verdicts
from fabricsuite.data.store import parse_since, read_sessions, session_runs

#: Default smallest relative shift that is an alarm (5 %).
MIN_SHIFT = 0.05
#: Results of a test case whose figures are the check's complete job (see the module docstring).


class HistoryError(UsageError):
    """Bad input (no stored runs, a bad date, a bad pattern): one line that names the fix."""


# --- the series --------------------------------------------------------------------------------

@dataclass
class Point:
    time: float  # the job's completion (Unix seconds), else the session's start
    session: str
    value: float
    #: the fabric counters of its run that told of trouble (fabricsuite.data.counters), "" for none
    counters: str = ""
    #: the session's verdict of its case (fabricsuite.data.session_verdict): what the outcome, JUnit
    #: and the page said of it
    verdict: str = ""


@dataclass
class Series(VariableSeries):
    """A variable's figures over time (metrics.VariableSeries)."""

    points: list[Point] = field(default_factory=list)


def is_counted(case: dict[str, Any], first: dict[str, Any] | None = None) -> bool:
    """Whether a case's figures count: the check's complete job on a quiet node (the case
    model's MEASURED classes: passed, recorded, a transient or a regression); a disturbed run
    is no history point, nor a compare sample."""
    return health(case, first) in MEASURED


def collect(sessions: Iterable[dict[str, Any]], system: str, since: float | None = None,
            variable: re.Pattern | None = None) -> tuple[list[Series], int]:
    """The series of `system` in the stored sessions (run reports); returns (series, sessions
    that had a test case of the system)."""
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
        judged = {case_key(j.last): j for j in case_verdicts({"runs": cases,
                                                               "session_info": info})}
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
    perfvalues = case.get("perfvalues")
    if not isinstance(perfvalues, dict):
        return
    check, partition, environ, levels = case_scope(case)
    directions = case.get("perf_directions")
    if not isinstance(directions, dict):
        directions = {}  # runs of checks older than perf_directions ('<undefined>')
    unjudged = unjudged_variables(case.get("unjudged"))
    for key, perf in perfvalues.items():
        name = perf_variable(key)
        if (variable is not None and not variable.search(name)) or name in unjudged:
            continue  # not asked for, or flagged unreliable in this run: no point
        if not isinstance(perf, list) or len(perf) < 5 or not is_number(perf[0]):
            continue
        value = float(perf[0])
        if not math.isfinite(value):
            continue
        k = (check, partition, environ, levels, name)
        series = table.setdefault(k, Series(check, partition, environ, name, str(perf[4]),
                                            levels=levels))
        series.points.append(Point(when, session, value, str(case.get("counters") or ""),
                                   verdict))
        if name in directions:
            series.directions.add(str(directions[name]))


# --- detection over all series -----------------------------------------------------------------

class _Move:
    """A move of a series' level from the median `before` to the median `after` (a change point,
    or the best split of a series too short to test)."""

    series: Series
    before: float
    after: float
    min_shift: float

    @property
    def shift(self) -> float | None:
        """Relative shift (after - before) / |before|; None from a level of 0."""
        return None if self.before == 0 else (self.after - self.before) / abs(self.before)

    @property
    def kind(self) -> str:
        """regression, improvement, or shift (the variable's direction is unknown)."""
        return kind_of(self.series.better, self.after > self.before)

    @property
    def large(self) -> bool:
        """At least min_shift (a shift from 0 always is)."""
        shift = self.shift
        return shift is None or abs(shift) >= self.min_shift


@dataclass
class ChangePoint(_Move):
    series: Series
    index: int
    p: float
    bh_threshold: float
    significant: bool
    before: float  # median of the segment before (from the previous change point)
    after: float  # median of the segment after (to the next change point)
    min_shift: float

    @property
    def alarm(self) -> bool:
        """Significant after BH and at least min_shift (a shift from 0 always is)."""
        return self.significant and self.large

    @property
    def point(self) -> Point:
        return self.series.points[self.index]

    def as_dict(self) -> dict[str, Any]:
        shift = self.shift
        return {
            "kind": self.kind,
            "alarm": self.alarm,
            "index": self.index,
            "session_uuid": self.point.session,
            "time": iso_utc(self.point.time),
            "before": self.before,
            "after": self.after,
            "shift_pct": None if shift is None else round(100 * shift, 3),
            "p_value": self.p,
            "bh_threshold": self.bh_threshold,
            "min_shift_pct": round(100 * self.min_shift, 3),
        }


@dataclass
class TooShort(_Move):
    """A series the test could not have found a change in at the correction's level: its runs
    are too few (`smallest_p` > the first Benjamini-Hochberg threshold), and what its best split
    shows: a clear move there is reported, never read as "no shift"."""

    series: Series
    index: int  # the best split: the first point after it
    smallest_p: float
    fdr: float
    tests: int  # tests made in all: the first BH threshold is fdr / tests
    before: float  # median before the split
    after: float  # median after it
    #: The two sides do not overlap (every run after beyond every run before).
    apart: bool
    min_shift: float

    @property
    def level(self) -> float:
        return self.fdr / max(1, self.tests)

    @property
    def needed(self) -> int:
        return runs_needed(self.level)

    @property
    def clear_move(self) -> bool:
        """Apart and at least min_shift: what a person must look at although it is untested."""
        return self.apart and self.large

    def text(self) -> str:
        n = len(self.series.points)
        return (f"insufficient runs: {self.index} + {n - self.index}, at least {self.needed} "
                f"needed (p cannot fall below {self.smallest_p:.2g}; one change among "
                f"{self.tests} tests at FDR {self.fdr:g} needs p <= {self.level:.2g})")

    def as_dict(self) -> dict[str, Any]:
        shift = self.shift
        return {"kind": self.kind, "clear_move": self.clear_move, "index": self.index,
                "runs_before": self.index, "runs_after": len(self.series.points) - self.index,
                "before": self.before, "after": self.after,
                "shift_pct": None if shift is None else round(100 * shift, 3),
                "smallest_p": self.smallest_p, "level": self.level,
                "runs_needed": self.needed}


def kind_of(better: str | None, up: bool) -> str:
    """regression, improvement, or shift (the variable's direction is unknown) of a move."""
    if better == EQUAL:
        return "regression"
    if better == LOWER:
        return "regression" if up else "improvement"
    if better == HIGHER:
        return "improvement" if up else "regression"
    return "shift"


@dataclass
class History:
    series: list[Series]
    #: Per series key: every test made.
    tests: dict[str, list[Test]]
    change_points: list[ChangePoint]
    fdr: float
    min_shift: float
    permutations: int
    seed: int
    too_short: int
    #: Series whose runs are too few for the test to reach the correction's level.
    untestable: list[TooShort] = field(default_factory=list)
    #: Per series key: the noise between sessions that raised its least shift above min_shift.
    raised: dict[str, tuple[float, str]] = field(default_factory=dict)

    @property
    def clear_moves(self) -> list[TooShort]:
        """Untestable series whose best split shows a clear move the bad (or unknown) way."""
        return [u for u in self.untestable if u.clear_move and u.kind != "improvement"]

    @property
    def alarms(self) -> list[ChangePoint]:
        return sorted((c for c in self.change_points if c.alarm), key=alarm_rank)

    @property
    def regressions(self) -> list[ChangePoint]:
        return [c for c in self.alarms if c.kind == "regression"]

    @property
    def n_tests(self) -> int:
        return sum(len(t) for t in self.tests.values())


def alarm_rank(c: ChangePoint) -> tuple:
    """Sort key of change points: regressions, shifts, improvements; the larger shift first."""
    order = {"regression": 0, "shift": 1, "improvement": 2}[c.kind]
    shift = c.shift
    return (order, -(math.inf if shift is None else abs(shift)), c.series.key, c.index)


def check_options(fdr: float, min_shift: float) -> None:
    """A HistoryError naming the option unless both thresholds can judge (finite, in range)."""
    if not is_within(fdr, 0, 1, open_ends=True):
        raise HistoryError(f"--fdr {fdr}: give a false discovery rate between 0 and 1, e.g. 0.05")
    if not is_within(min_shift, 0):
        raise HistoryError(f"--min-shift {100 * min_shift:g}: give a shift in % of 0 or more "
                           f"(a finite number), e.g. {100 * MIN_SHIFT:g}")


def detect(series: list[Series], *, fdr: float = FDR, min_shift: float = MIN_SHIFT,
           permutations: int = PERMUTATIONS, seed: int = SEED,
           min_size: int = MIN_SIZE,
           noise: dict[str, tuple[float, str]] | None = None) -> History:
    """E-Divisive means on every series, Benjamini-Hochberg at `fdr` over all tests made.
    `noise`: per series key, the variable's noise between sessions and where it comes from
    (`references.variable_noise`): a shift within it is no alarm, whatever `min_shift` says
    (the machine's own slow phases are not a change of the fabric)."""
    check_options(fdr, min_shift)
    # The series whose noise between sessions is wider than min_shift: their least shift.
    noise = noise or {}
    raised = {s.key: noise[s.key] for s in series
              if s.key in noise and noise[s.key][0] > min_shift}

    def least_shift(s: Series) -> float:
        return raised[s.key][0] if s.key in raised else min_shift

    testable = [s for s in series if len(s.points) >= 2 * min_size]
    # Enough permutations that one real change among all series can pass BH's first threshold.
    permutations = max(permutations, math.ceil(2 * max(1, len(testable)) / fdr))
    tests: dict[str, list[Test]] = {}
    for s in testable:
        tests[s.key] = e_divisive(
            [p.value for p in s.points], screen=fdr, permutations=permutations,
            seed=[seed, zlib.crc32(s.key.encode())], min_size=min_size)
    flat = [t for key in tests for t in tests[key]]
    rejected, thresholds = benjamini_hochberg([t.p for t in flat], fdr)
    for t, r, th in zip(flat, rejected, thresholds, strict=True):
        t.significant, t.bh_threshold = r, th
    change_points = []
    for s in testable:
        found = sorted((t for t in tests[s.key] if t.significant), key=lambda t: t.index)
        cuts = [0, *[t.index for t in found], len(s.points)]
        values = [p.value for p in s.points]
        for i, t in enumerate(found, start=1):
            before = statistics.median(values[cuts[i - 1]:cuts[i]])
            after = statistics.median(values[cuts[i]:cuts[i + 1]])
            change_points.append(ChangePoint(s, t.index, t.p, t.bh_threshold or 0.0, True,
                                             before, after, least_shift(s)))
    # A series the test could not have found anything in: too few runs for its best split to
    # reach BH's first threshold. Its split is shown, so that no move reads as "no shift".
    n_tests = max(1, len(flat))
    untestable = []
    for s in testable:
        first = tests[s.key][0] if tests[s.key] else None
        if first is None or any(t.significant for t in tests[s.key]):
            continue
        floor = smallest_p(len(s.points), first.index)
        if floor <= fdr / n_tests:
            continue
        values = [p.value for p in s.points]
        left, right = values[:first.index], values[first.index:]
        apart = max(left) < min(right) or min(left) > max(right)
        untestable.append(TooShort(s, first.index, floor, fdr, n_tests,
                                   statistics.median(left), statistics.median(right), apart,
                                   least_shift(s)))
    return History(series, tests, change_points, fdr, min_shift, permutations, seed,
                   len(series) - len(testable), untestable, raised)


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
    add_selection_options(p, since=True, reports=True)
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
    series, n_sessions = collect(sessions, args.system, since, pattern)
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


# --- measured false-alarm rates ----------------------------------------------------------------

def measure_false_alarms(families: int = 50, per_family: int = 100, points: int = 30,
                         noise: float = 0.01, fdr: float = FDR, seed: int = 70_000) -> dict:
    """False alarms on pure noise (normal, `noise` relative sd, no change), seeded:

    - per series: the share of single series whose first test rejects at `fdr` (no correction);
    - per family: the share of families of `per_family` series with any change point after
      Benjamini-Hochberg at `fdr` (every null true: BH bounds it by `fdr`).

    `python -m fabricsuite.commands.history` prints them for the defaults.
    """
    single = 0
    with_alarm = 0
    change_points = 0
    for f in range(families):
        rng = np.random.default_rng([seed, f])
        family = []
        for i in range(per_family):
            s = Series(f"Noise{i}", "sim:sim", "sim", "figure", "s")
            s.points = [Point(float(j), f"f{f}", float(v))
                        for j, v in enumerate(100 * (1 + noise * rng.normal(size=points)))]
            s.directions = {LOWER}
            family.append(s)
        hist = detect(family, fdr=fdr, min_shift=0, seed=seed + f)
        single += sum(tests[0].p <= fdr for tests in hist.tests.values())
        with_alarm += bool(hist.change_points)
        change_points += len(hist.change_points)
    return {"series": families * per_family, "points": points,
            "per_series_rate": single / (families * per_family),
            "families": families, "per_family_rate": with_alarm / families,
            "change_points": change_points}


if __name__ == "__main__":
    print(measure_false_alarms())
