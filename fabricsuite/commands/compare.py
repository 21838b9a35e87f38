"""Before/after comparison of two sets of stored sessions (`fabricsuite compare`).

The "after an upgrade" workflow: run the suite a few times before a change (a new MPI, a
firmware, a driver), a few times after, and ask per performance variable whether it moved more
than the run-to-run noise explains.

Data. Both sets come from ReFrame's results database (RESULTS/results.db, read through ReFrame's
own storage backend as `fabricsuite history` reads it) or from JSON run report files
(--before-reports/--after-reports). Each set is selected by the sessions' start time
(--before-since/--before-until), by session uuid (a prefix is enough) or by tag (a session
extra: `reframe --session-extras tag=ompi-5.0` stores `tag: ompi-5.0` in the report's
`session_info`); the selectors given for one set must all hold. A session in both sets is an
error. The series are those of `fabricsuite history` (`history.collect`): one per check,
partition, environment, distance or scale and variable, one value per counted test case (passed,
or failed only its reference), the direction from the cases' `perf_directions`.

Method, per variable: the medians before and after and the relative change; Mann-Whitney U
(two-sided, scipy) on the runs of both sets: no normality assumed, one outlier run cannot make a
change. Exact p-values: scipy's exact distribution without ties, the exact permutation
distribution with ties (up to EXACT_SPLITS splits; the normal approximation only beyond, where
it is good). Multiple testing across all variables: Benjamini-Hochberg at false discovery rate
--fdr (default 0.05), as in `fabricsuite history`. A significant change smaller than
--min-change (default 5 %) is "unchanged": a quiet variable makes a 0.5 % move significant.

The smallest p-value Mann-Whitney can give with n1 and n2 runs is 2 / C(n1 + n2, n1): 0.1 with 3
runs per side, so 3 vs 3 can never be significant at 0.05. A variable whose runs cannot reach
p <= FDR is "insufficient data", never "unchanged"; so is one with fewer than --min-runs runs on
a side. With m variables tested and a single one changed, BH needs p <= FDR / m of it (more runs
per side: `runs_per_side_needed`); when many changed, the thresholds are larger.

Few runs, known noise. A center compares the runs it has, one to three a side. Where the
ranks cannot decide (fewer than --min-runs, or p unable to reach the FDR), a variable is tested
against the noise the suite already measured: the between-session spread recorded with its
reference (`_statistics`, sized by `fabricsuite baseline` from sessions hours apart), or the
runs' own spread where that is wider; a z-test of the change of the means in units of that
spread (`known_noise_p`). A -20 % shift at 60 noise widths is then a verdict at 3 vs 3, and a
variable without a recorded spread stays "insufficient data". The output names the noise each
such verdict used.

Why not ReFrame's own `--performance-compare`: it aggregates each side (mean, median, ...) and
prints the difference in %, without a significance test, without the variables' directions and
without a correction across variables; a 5 % difference of two medians of three noisy runs looks
the same as a real 5 % regression. Its storage backend, session selection by uuid and time
period and run report format are used here as they are; what is added is the statistics.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from fabricsuite.base.commandline import (
    add_selection_options,
    check_system,
    is_within,
    one_line_errors,
    variable_pattern,
)
from fabricsuite.base.formats import figure
from fabricsuite.base.metrics import EQUAL, HIGHER, LOWER
from fabricsuite.base.stats import (
    FDR,
    benjamini_hochberg,
    known_noise_p,
    mann_whitney_p,
    min_p_value,
    observed_spread,
    runs_per_side_needed,
)
from fabricsuite.commands.compare_sides import SIDES, CompareError, Side, select_sides
from fabricsuite.commands.history import Series, set_aside
from fabricsuite.data.references import variable_noise

#: Default smallest relative change of the medians that is a regression or improvement (5 %).
MIN_CHANGE = 0.05
#: Default fewest runs (counted test cases) on each side of a variable.
MIN_RUNS = 3

REGRESSION = "regression"
CHANGED = "changed"  # significant and relevant, but the variable has no known direction
IMPROVEMENT = "improvement"
UNCHANGED = "unchanged"
INSUFFICIENT = "insufficient data"
VERDICTS = (REGRESSION, CHANGED, IMPROVEMENT, UNCHANGED, INSUFFICIENT)

@dataclass
class Comparison:
    """One variable: its runs before and after and the verdict."""

    #: Identity and direction (`better`) of the variable, from both sets.
    series: Series
    before: list[float]
    after: list[float]
    min_change: float
    #: Why the variable was not tested (insufficient data), else None.
    reason: str | None = None
    #: The known noise the test used instead of the runs' ranks (`known_noise_p`): relative
    #: spread of one run, and where it comes from; None for Mann-Whitney.
    noise: tuple[float, str] | None = None
    p: float | None = None
    bh_threshold: float | None = None
    significant: bool = False
    #: The troubled fabric counters of the after runs that moved (fabricsuite.data.counters)
    counters_after: list[str] = field(default_factory=list)
    #: the session verdict of each run compared (change_points.Point.verdict), in `before`'s and
    #: `after`'s order
    verdicts_before: list[str] = field(default_factory=list)
    verdicts_after: list[str] = field(default_factory=list)

    @property
    def median_before(self) -> float | None:
        return statistics.median(self.before) if self.before else None

    @property
    def median_after(self) -> float | None:
        return statistics.median(self.after) if self.after else None

    @property
    def change(self) -> float | None:
        """(median after - median before) / |median before|; None without both or from 0."""
        before, after = self.median_before, self.median_after
        if before is None or after is None or before == 0:
            return None
        return (after - before) / abs(before)

    @property
    def relevant(self) -> bool:
        """At least min_change (any move from a median of 0 is)."""
        change = self.change
        if change is None:
            return self.median_before is not None and self.median_before != self.median_after
        return abs(change) >= self.min_change

    @property
    def verdict(self) -> str:
        if self.p is None:
            return INSUFFICIENT
        if not (self.significant and self.relevant):
            return UNCHANGED
        better = self.series.better
        up = self.median_after > self.median_before
        if better == EQUAL:
            return REGRESSION
        if better == LOWER:
            return REGRESSION if up else IMPROVEMENT
        if better == HIGHER:
            return IMPROVEMENT if up else REGRESSION
        return CHANGED

    def rank(self) -> tuple:
        """Regressions first, then the larger change first."""
        change = self.change
        size = abs(change) if change is not None else (math.inf if self.relevant else 0.0)
        return VERDICTS.index(self.verdict), -size, self.series.key


def check_options(fdr: float, min_change: float, min_runs: int) -> None:
    if not is_within(fdr, 0, 1, open_ends=True):
        raise CompareError(f"--fdr {fdr:g}: give a false discovery rate between 0 and 1, "
                           f"e.g. {FDR}")
    if not is_within(min_change, 0):
        raise CompareError(f"--min-change {100 * min_change:g}: give a change in % of 0 or more "
                           f"(a finite number), e.g. {100 * MIN_CHANGE:g}")
    if min_runs < 1:
        raise CompareError(f"--min-runs {min_runs}: give 1 or more (default {MIN_RUNS})")


def compare(before: list[Series], after: list[Series], *, fdr: float = FDR,
            min_change: float = MIN_CHANGE, min_runs: int = MIN_RUNS,
            noise: dict[str, tuple[float, str]] | None = None) -> list[Comparison]:
    """Every variable of either set, tested where its runs allow, with Benjamini-Hochberg at
    `fdr` over the tested ones; in the order of `grouped`. `noise`: per series key, a known
    relative spread of one run and where it comes from (`references.variable_noise`): a variable too
    short of runs for Mann-Whitney is tested against it (`known_noise_p`), with at least one
    run a side, and never against less than the spread its own runs show."""
    noise = noise or {}
    check_options(fdr, min_change, min_runs)
    by_side = [{s.key: s for s in series} for series in (before, after)]
    comparisons = []
    for key in sorted(by_side[0].keys() | by_side[1].keys()):
        b, a = by_side[0].get(key), by_side[1].get(key)
        ref = a or b
        ident = Series(ref.check, ref.partition, ref.environ, ref.variable, ref.unit,
                       levels=ref.levels)
        ident.directions = (b.directions if b else set()) | (a.directions if a else set())
        c = Comparison(ident, [p.value for p in b.points] if b else [],
                       [p.value for p in a.points] if a else [], min_change)
        c.counters_after = [p.counters for p in a.points if p.counters] if a else []
        c.verdicts_before = [p.verdict for p in b.points] if b else []
        c.verdicts_after = [p.verdict for p in a.points] if a else []
        c.reason = _untestable(c, b, a, fdr, min_runs)
        known = noise.get(key)
        if c.reason is not None and known is not None and b is not None and a is not None \
                and b.unit == a.unit and c.before and c.after:
            seen = observed_spread(c.before, c.after)
            if seen is not None and seen > known[0]:
                c.noise = (seen, f"the runs' own spread, wider than {known[1]}'s "
                                 f"{known[0]:.2%}")
            else:
                c.noise = known
            c.reason = None
        comparisons.append(c)
    tested = [c for c in comparisons if c.reason is None]
    for c in tested:
        c.p = (known_noise_p(c.before, c.after, c.noise[0]) if c.noise is not None
               else mann_whitney_p(c.before, c.after))
    rejected, thresholds = benjamini_hochberg([c.p for c in tested], fdr)
    for c, r, t in zip(tested, rejected, thresholds, strict=True):
        c.significant, c.bh_threshold = r, t
    return grouped(comparisons)


def _untestable(c: Comparison, b: Series | None, a: Series | None, fdr: float,
                min_runs: int) -> str | None:
    nb, na = len(c.before), len(c.after)
    if b is None or a is None:
        return f"not in the {'before' if b is None else 'after'} set"
    if b.unit != a.unit:
        return f"unit changed from {b.unit} to {a.unit}"
    if min(nb, na) < min_runs:
        return f"fewer than {min_runs} runs on a side (--min-runs)"
    floor = min_p_value(nb, na)
    if floor > fdr:
        return (f"p cannot fall below {floor:.2g} > FDR {fdr:g} with these runs; "
                f"{runs_per_side_needed(fdr)} per side needed")
    return None


def _group_key(s: Series) -> tuple:
    return s.partition, s.levels, s.environ


def grouped(comparisons: list[Comparison]) -> list[Comparison]:
    """Per partition x distance or scale x environment; the group with the worst line first,
    in each group regressions first."""
    groups: dict[tuple, list[Comparison]] = {}
    for c in comparisons:
        groups.setdefault(_group_key(c.series), []).append(c)
    for members in groups.values():
        members.sort(key=Comparison.rank)
    order = sorted(groups, key=lambda g: (groups[g][0].rank(), g))
    return [c for g in order for c in groups[g]]


# --- output ------------------------------------------------------------------------------------


def _change_text(c: Comparison) -> str:
    change = c.change
    if change is not None:
        return f"{100 * change:+.1f}%"
    return "from 0" if c.relevant else "-"


def _levels_text(levels: tuple[tuple[str, str], ...]) -> str:
    return " ".join(f"{name} {value}" for name, value in levels)


def summary(comparisons: list[Comparison], fdr: float, min_change: float) -> list[str]:
    counts = Counter(c.verdict for c in comparisons)
    tested = sum(c.p is not None for c in comparisons)
    parts = [f"{counts[REGRESSION]} regression(s)", f"{counts[IMPROVEMENT]} improvement(s)"]
    if counts[CHANGED]:
        parts.append(f"{counts[CHANGED]} changed (direction unknown)")
    parts += [f"{counts[UNCHANGED]} unchanged", f"{counts[INSUFFICIENT]} insufficient data"]
    lines = [f"{len(comparisons)} variable(s): {', '.join(parts)}"]
    first = fdr / max(1, tested)
    known = sum(c.noise is not None for c in comparisons)
    if known:
        lines.append(f"{known} variable(s) with too few runs for Mann-Whitney tested against "
                     f"a known noise (z-test): the spread recorded with the references, or "
                     f"the runs' own where wider (named per variable)")
    lines.append(
        f"Mann-Whitney U (two-sided), Benjamini-Hochberg at FDR {fdr:g} over {tested} tested, "
        f"at least {100 * min_change:g}% change; one change alone among {max(1, tested)} needs "
        f"p <= {first:.2g}: {runs_per_side_needed(first)} runs per side")
    return lines


def table(before: Side, after: Side, comparisons: list[Comparison], fdr: float,
          min_change: float) -> str:
    """Per group a heading and one line per variable, then the summary."""
    rows: list[tuple[str, ...] | str] = []
    group = None
    for c in comparisons:
        s = c.series
        if _group_key(s) != group:
            group = _group_key(s)
            rows.append(" ".join(v for v in (s.partition, s.environ, _levels_text(s.levels)) if v))
        verdict = c.verdict
        label = {REGRESSION: "REGRESSION", INSUFFICIENT: "insufficient"}.get(verdict, verdict)
        detail = c.reason if c.p is None else f"p {c.p:.2g}"
        if c.noise is not None:
            detail += f" against a noise of {c.noise[0]:.2%} ({c.noise[1]})"
        rows.append((label, s.check, s.variable,
                     f"{figure(c.median_before)} -> {figure(c.median_after)} {s.unit}",
                     _change_text(c), f"{len(c.before)} vs {len(c.after)}", detail or ""))
        if verdict == REGRESSION and c.counters_after:
            rows.append(f"    counters moved: {_counters_text(c)}")
    cells = [r for r in rows if isinstance(r, tuple)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(cells[0]))] if cells else []
    lines = [f"before: {before.describe()}", f"after:  {after.describe()}"]
    for r in rows:
        if isinstance(r, str):
            lines.append(r)
        else:
            lines.append("  " + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True))
                         .rstrip())
    lines += summary(comparisons, fdr, min_change)
    return "\n".join(lines)


def to_json(system: str, before: Side, after: Side, comparisons: list[Comparison], fdr: float,
            min_change: float, min_runs: int) -> dict[str, Any]:
    tested = sum(c.p is not None for c in comparisons)
    counts = Counter(c.verdict for c in comparisons)
    return {
        "system": system,
        "before": before.as_dict(),
        "after": after.as_dict(),
        "method": {
            "test": "mann-whitney u, two-sided",
            "correction": "benjamini-hochberg",
            "fdr": fdr,
            "min_change_pct": 100 * min_change,
            "min_runs": min_runs,
            "tested": tested,
            "runs_per_side_for_one_change": runs_per_side_needed(fdr / max(1, tested)),
        },
        "counts": {v: counts[v] for v in VERDICTS},
        "variables": [_variable_dict(c) for c in comparisons],
    }


def _counters_text(c: Comparison) -> str:
    """The after runs' troubled counters, the most frequent first: "tc eth0 tbf-1 overlimits
    +3021 (2 of 3 runs)"."""
    seen: dict[str, int] = {}
    for line in c.counters_after:
        seen[line] = seen.get(line, 0) + 1
    return "; ".join(f"{line} ({n} of {len(c.after)} runs)"
                     for line, n in sorted(seen.items(), key=lambda kv: -kv[1])[:3])


def _variable_dict(c: Comparison) -> dict[str, Any]:
    s = c.series
    change = c.change
    return {
        "check": s.check, "partition": s.partition, "environ": s.environ,
        **{name: value for name, value in s.levels},
        "variable": s.variable, "unit": s.unit, "better": s.better,
        "verdict": c.verdict,
        "median_before": c.median_before, "median_after": c.median_after,
        "change_pct": None if change is None else round(100 * change, 3),
        "n_before": len(c.before), "n_after": len(c.after),
        "p_value": c.p, "bh_threshold": c.bh_threshold, "significant": c.significant,
        "min_p_value": min_p_value(len(c.before), len(c.after)),
        "reason": c.reason,
        "test": ("known noise (z)" if c.noise is not None
                 else "mann-whitney" if c.p is not None else None),
        "noise_spread": c.noise[0] if c.noise else None,
        "noise_source": c.noise[1] if c.noise else None,
        "before": c.before, "after": c.after,
        "counters_after": c.counters_after,
        "verdicts_before": c.verdicts_before, "verdicts_after": c.verdicts_after,
    }


# --- the command -------------------------------------------------------------------------------

def _min_p_lines() -> str:
    pairs = [f"{n} vs {n}: {min_p_value(n, n):.2g}" for n in range(3, 9)]
    return ", ".join(pairs[:3]) + ",\n" + ", ".join(pairs[3:])


def _needed_line() -> str:
    return ", ".join(f"{m} variable(s): {runs_per_side_needed(FDR / m)}"
                     for m in (1, 10, 100, 1000))


DESCRIPTION = f"""\
Compare two sets of stored sessions, e.g. before and after an upgrade: per performance
variable the median before and after, the change in %, and whether it is significant.

Selection. Sessions come from ReFrame's results database (RESULTS/results.db; RESULTS is
--results, else $FABRICSUITE_RESULTS, else results/) or from run report files
(--before-reports/--after-reports). Each set is chosen by start time (--X-since, --X-until;
until is exclusive), by session uuid (--X-session, the start of a uuid is enough), or by
tag (--X-tag NAME: sessions run with `reframe --session-extras tag=NAME`, or any session
extra whose value is NAME, or KEY=VALUE of one); selectors given for one set must all hold.
A session in both sets is an error. Counted runs: test cases that passed or failed only
their reference (as in `fabricsuite history`).

The test. Mann-Whitney U, two-sided, on the runs of both sets (exact p-values for few runs).
Multiple testing: Benjamini-Hochberg over all tested variables at false discovery rate --fdr
(default {FDR}). A change is a regression or an improvement (by the variable's declared
direction) only if it is significant after the correction and at least --min-change (default
{100 * MIN_CHANGE:g} %); otherwise unchanged.

How many runs. Mann-Whitney cannot give p below 2 / C(n1+n2, n1) with n1 and n2 runs:
{_min_p_lines()}.
3 runs per side can never be significant at 0.05; a variable whose runs cannot reach p <= FDR,
or with fewer than --min-runs (default {MIN_RUNS}) on a side, is tested against the noise
recorded with its reference (the between-session spread in the reference file's _statistics,
or the runs' own spread where wider: a z-test, named per variable), and without one is
"insufficient data". A change
in one variable alone among m tested needs p <= FDR / m; runs per side needed at FDR {FDR}:
{_needed_line()}.

Exit status: 0 no regression, 1 a significant regression, 2 bad input (unknown system, an empty
or overlapping selection, a bad date or uuid, no database, or no variable with enough runs to
be tested), with one line naming the fix."""


def add_parser(sub: Any) -> None:
    """Register `fabricsuite compare` on the CLI's subparsers."""
    import argparse

    p = sub.add_parser("compare", help="before/after comparison of stored sessions "
                                       "(after an upgrade)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=DESCRIPTION)
    add_selection_options(p, rejudge=True)
    for side in SIDES:
        g = p.add_argument_group(f"the {side} set (selectors combine)")
        g.add_argument(f"--{side}-since", metavar="DATE",
                       help="sessions started from DATE on: 2026-11-23, 2026-11-23T20:00 "
                            "(UTC), 20261123T2000 or now-7d")
        g.add_argument(f"--{side}-until", metavar="DATE", help="sessions started before DATE")
        g.add_argument(f"--{side}-session", nargs="+", metavar="UUID",
                       help="these sessions (a uuid or its start)")
        g.add_argument(f"--{side}-tag", metavar="TAG",
                       help="sessions run with reframe --session-extras tag=TAG (or with any "
                            "extra of value TAG, or KEY=VALUE)")
        g.add_argument(f"--{side}-reports", nargs="+", metavar="FILE",
                       help="JSON run report files instead of the database")
    p.add_argument("--variable", metavar="REGEX",
                   help="only variables whose name matches REGEX (re.search)")
    p.add_argument("--fdr", type=float, default=FDR, metavar="Q",
                   help=f"false discovery rate over all tested variables (default {FDR})")
    p.add_argument("--min-change", type=float, default=100 * MIN_CHANGE, metavar="PCT",
                   help=f"smallest change of the medians in %% that counts (default "
                        f"{100 * MIN_CHANGE:g})")
    p.add_argument("--min-runs", type=int, default=MIN_RUNS, metavar="N",
                   help=f"fewest runs per side for a verdict (default {MIN_RUNS})")
    p.add_argument("--json", action="store_true", help="print JSON for machines")


@one_line_errors("compare")
def run(args: Any) -> int:
    """`fabricsuite compare`: 0 no regression, 1 a significant regression, 2 bad input."""
    import json
    import sys

    check_system(args.system)
    pattern = variable_pattern(args.variable, CompareError)
    fdr, min_change = args.fdr, args.min_change / 100
    check_options(fdr, min_change, args.min_runs)
    before, after = select_sides(args, args.system, pattern)
    comparisons = compare(before.series, after.series, fdr=fdr, min_change=min_change,
                          min_runs=args.min_runs, noise=variable_noise(args.system))
    if args.json:
        json.dump(to_json(args.system, before, after, comparisons, fdr, min_change,
                          args.min_runs), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        print(f"fabricsuite compare: system {args.system}")
        for side in (before, after):
            aside = set_aside(side.sessions, args.system)
            if aside:
                print(f"fabricsuite compare: {side.selection.side}: {aside}")
        print(table(before, after, comparisons, fdr, min_change))
    if not any(c.p is not None for c in comparisons):
        n = runs_per_side_needed(fdr)
        raise CompareError(f"no variable has enough runs to be tested (at least "
                           f"{max(n, args.min_runs)} per side at FDR {fdr:g}); select more "
                           f"sessions")
    return 1 if any(c.verdict == REGRESSION for c in comparisons) else 0
