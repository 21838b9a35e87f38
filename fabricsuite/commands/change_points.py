"""The series of a variable's figures over time and their change points (`fabricsuite history`'s
method; `fabricsuite.commands.history` reads the series from the store and shows them).

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
import statistics
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricsuite.base.commandline import UsageError, is_within
from fabricsuite.base.formats import iso_utc
from fabricsuite.base.metrics import EQUAL, HIGHER, LOWER, VariableSeries
from fabricsuite.base.stats import (
    FDR,
    MIN_SIZE,
    PERMUTATIONS,
    SEED,
    Test,
    benjamini_hochberg,
    e_divisive,
    runs_needed,
    smallest_p,
)

#: Default smallest relative shift that is an alarm (5 %).
MIN_SHIFT = 0.05


class HistoryError(UsageError):
    """Bad input (no stored runs, a bad date, a bad pattern): one line that names the fix."""


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
