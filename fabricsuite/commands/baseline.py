"""Derive reference values from stored ReFrame run reports.

Only healthy test cases count: those that passed, and those that failed only because they had no
reference yet (ReFrame's performance-phase "no reference value found for ..."). A case that failed
its reference, its sanity check or anything else is left out and counted, so that a regression
never becomes the reference.

For every (check, partition, environment, index levels, variable) seen in those cases, the
reference is the median over the runs, and the bound on the bad side is sized from the noise seen
there, never from a constant chosen for the noisiest machine:

    bound = max(floor, NOISE_WIDTHS x spread, WORST_MARGIN x worst deviation on the bad side)

(from 5 runs on, "worst" is the worst but one: a single run that met a slow phase is set aside,
recorded as `set_aside` in `_statistics`; confirmation absorbs such a run, a bound must not.)

The runs must come from at least MIN_SESSIONS separate ReFrame sessions (`--min-sessions`): runs of
one session (`--repeat 5`) lie seconds apart and miss how a figure drifts between sessions. On the
emulated cluster the dense patterns' pairwise bandwidth moved 13-18 % between sessions minutes
apart while 5 back-to-back runs spread 2 %: a bound from one session raised 11 false alarms in 30
runs, bounds from 5 sessions none. A variable seen in fewer sessions keeps its old reference, with
a note; `_statistics` records each variable's session count and the hours its runs span.

`spread` is the robust relative standard deviation of the runs (1.4826 x MAD / median), `floor`
(a slowdown factor: +f for a lower-is-better figure, -f / (1 + f) for a higher-is-better one)
a property of the partition: its `extras: {"tolerance_floor": F}` in the system's configuration
(per unit where `extras.tolerance_floor_by_unit` says so, e.g. {"us": 0.35}), recorded with every
run as the test case's loggable `tolerance_floor` and `perf_floors` (default DEFAULT_FLOOR, 3 %,
for dedicated nodes; the shared 2-core development machine declares its own wide floor). The
file's `_statistics` records per variable the sample count, median, spread, worst deviation,
floor and bound; the checks use it to say how many noise widths a failing figure is from its
reference. A transient slow phase is not absorbed by a wider bound but by confirmation: a case
that fails is measured again after a pause (`--max-retries`, docs/verdicts.md, "Confirm before
alarm").

The bad side comes from the variable's declared direction (`fabricsuite.base.metrics`), stored with
every run as the test case's loggable variable `perf_directions`; it is never guessed from the
unit. A variable whose direction the reports do not give (reports from checks older than
`perf_directions`) is left out. Lower-is-better variables get an upper bound, higher-is-better
ones a lower bound, "equal" ones both: a count the seen range +-1, a size from a geometric sweep
(a protocol threshold, `perf_size_steps`) one sweep step beyond the seen range, any other figure
the noise bound on both sides. A variable
whose bound reaches TOO_NOISY_FOR_2X is recorded only: written without bounds and listed with
its reason in the file's `_recorded_only` (shown and trended, never judged); so is a figure
printed in steps too coarse for it (`perf_resolutions`: NPB's time of a class S run) and a
higher-is-better figure of 0 (an overlap of 0 % cannot get worse). A reference that
fails healthy runs is worse than none, and a bound that cannot fail a 2x slowdown only pretends
to judge.

The proposals are written into the reference file by `fabricsuite.commands.reference_file`.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from fabricsuite.base.commandline import UsageError
from fabricsuite.base.metrics import (
    COUNT_UNITS,
    DEFAULT_FLOOR,
    DIRECTIONS,
    EQUAL,
    HIGHER,
    LOWER,
    TOO_NOISY_FOR_2X,
    VariableSeries,
    case_scope,
    case_where,
    catches_2x,
    filled_levels,
    is_number,
    series_key,
    size_step_bounds,
    unjudgeable,
    unjudged_variables,
)
from fabricsuite.data.cases import (
    RunFigure,
    disturbance,
    disturbers,
    evidence,
    malformed_figures,
    ran_nothing,
    run_figures,
    runs_of,
    sample_problem,
    was_interrupted,
)
from fabricsuite.data.links import PROMISE_UNITS, failed_only_its_promise, missed_promises
from fabricsuite.data.machine import LOCAL_SYSTEM
from fabricsuite.data.store import load_report, report_identity

#: The bound is at least this many noise widths (robust relative standard deviations): with
#: normal noise a healthy figure lands beyond 4 widths once in ~30,000 runs.
NOISE_WIDTHS = 4.0
#: ... and at least this much wider than the worst deviation the baseline runs showed (with
#: OUTLIER_RUNS_FROM runs or more, the worst but one: see `noise`).
WORST_MARGIN = 1.5
OUTLIER_RUNS_FROM = 5
#: A lower bound never reaches -100 % (that would accept zero).
MAX_LOWER_BOUND = 0.95
#: Fewest healthy samples a variable needs before it gets a reference (--min-runs).
MIN_RUNS = 3
#: Fewest separate sessions (ReFrame runs, told apart by their session uuid) those samples must
#: come from (--min-sessions): the spread between sessions is what a bound must hold.
MIN_SESSIONS = 3

class BaselineError(UsageError):
    """Bad input (a report, an option, the reference file): one line that names the fix."""


@dataclass
class Samples(VariableSeries):
    """A variable's figures that its references are taken from (metrics.VariableSeries)."""

    values: list[float]
    #: Tolerance floors the partition declared in the test cases (`tolerance_floor`).
    floors: set[float] = field(default_factory=set)
    #: Sweep steps the test cases declared for the variable (`perf_size_steps`): a size from a
    #: geometric sweep, bounded in steps.
    size_steps: set[float] = field(default_factory=set)
    #: The step the program prints the variable in (`perf_resolutions`), where declared.
    resolutions: set[float] = field(default_factory=set)
    #: How the test cases declared the variable (`perf_counts`): True a count, False not,
    #: None when they predate the declaration (an "equal" variable was then a count).
    counts: set[bool | None] = field(default_factory=set)
    #: The sessions (report session uuid, else the report's path) the values come from.
    sessions: set[str] = field(default_factory=set)
    #: Start time (Unix seconds) of each of those sessions whose reports give it.
    session_starts: dict[str, float] = field(default_factory=dict)
    #: The values per set of nodes the runs ran on ("n1,n2": [...]; cases.Evidence.nodes):
    #: the references record the nodes they were taken on and the spread between them.
    node_values: dict[str, list[float]] = field(default_factory=dict)

    @property
    def floor(self) -> float:
        """The partition's declared floor (the widest, if runs of several configurations)."""
        return max(self.floors) if self.floors else DEFAULT_FLOOR



@dataclass
class Collected:
    """What the reports hold for one system."""

    samples: list[Samples]
    #: Test cases with performance figures that were used.
    used: int = 0
    #: Why test cases were left out -> how many.
    left_out: Counter = field(default_factory=Counter)
    #: Runs disturbed by another process on their cores, set aside: {variable's series key:
    #: {session: the disturbance}} (never a reference sample: fabricsuite.data.cases).
    set_aside: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Sessions per variable, quiet or disturbed: {series key: sessions}.
    sessions: dict[str, set[str]] = field(default_factory=dict)
    #: Reports left out as copies of a session already read ("name (a copy of other)").
    copies: list[str] = field(default_factory=list)
    #: What of the fabric's promise the runs missed (fabricsuite.data.links.missed_promises), one
    #: line per run and miss: "NetbenchPingPongBandwidth emucluster:nodes openmpi other-node:
    #: bandwidth_1MiB_line_fraction 0.49 of 1 Gb/s, promised 0.70".
    promise_misses: list[str] = field(default_factory=list)
    #: The machine keys the embedded default's cases ran on (their `machine` variable): the
    #: owner a machine's reference file names in `_machine`.
    machines: set[str] = field(default_factory=set)

    def set_aside_lines(self, shown: int = 3) -> list[str]:
        """"2 of 5 sessions set aside for VARIABLE: disturbed by f951, python" (variables set
        aside alike on one line, the most set-aside first)."""
        groups: dict[tuple[int, int, str], list[str]] = {}
        for key, causes in self.set_aside.items():
            names = ", ".join(sorted({n for cause in causes.values() for n in disturbers(cause)}))
            total = len(self.sessions.get(key) or causes)
            groups.setdefault((len(causes), total, names), []).append(key)
        ordered = sorted(groups.items(), key=lambda kv: (-kv[0][0], -len(kv[1]), kv[1][0]))
        lines = []
        for (aside, total, names), keys in ordered[:shown]:
            what = keys[0] if len(keys) == 1 else f"{len(keys)} variables (e.g. {min(keys)})"
            lines.append(f"{aside} of {total} sessions set aside for {what}: disturbed by "
                         f"{names}")
        if len(ordered) > shown:
            lines.append(f"(and {sum(len(k) for _g, k in ordered[shown:])} more variable(s) "
                         f"with disturbed sessions set aside)")
        return lines

    def summary(self, system: str) -> str:
        line = f"used {self.used} healthy test case(s) of system {system!r}"
        if self.left_out:
            reasons = ", ".join(f"{n} {why}" for why, n in self.left_out.most_common())
            line += f"; left out {sum(self.left_out.values())}: {reasons}"
        if self.copies:
            line += (f"; {len(self.copies)} report(s) left out as copies of a session already "
                     f"read: {', '.join(self.copies[:3])}")
        return line


def _not_a_report(path: Path, where: str, what: Any) -> BaselineError:
    return BaselineError(
        f"{path}: {where} is {what!r}, not what a ReFrame 4.10 run report holds; pass run "
        f"reports written by ReFrame (RESULTS/reports/run-report-*.json)"
    )


def read_reports(paths: list[Path], system: str | None = None,
                 waived: bool = False) -> Collected:
    """Collect the healthy samples per variable (of `system`, if given) from run report files."""
    return collect([load_report(path, BaselineError) for path in paths], paths, system, waived)


def collect(reports: list[dict[str, Any]], names: list[Any],
            system: str | None = None, waived: bool = False) -> Collected:
    """`read_reports` over reports already read (`names`: where each came from, for the
    messages and as the session of a report without a session uuid). A run that missed the
    fabric's promise (a link finding, a line fraction below it: fabricsuite.data.links) is left
    out and its misses listed, unless `waived` (baseline --waiver): then its other figures
    count as any healthy run's. A line fraction is never a sample: its reference is the
    promise."""
    table: dict[tuple[str, str, str, tuple, str], Samples] = {}
    collected = Collected([])
    read_sessions: dict[str, str] = {}
    for path, report in zip(names, reports, strict=True):
        path = Path(path)
        if not isinstance(report, dict) or not isinstance(report.get("runs"), list):
            raise _not_a_report(path, "the top level", type(report).__name__)
        info = report.get("session_info")
        info = info if isinstance(info, dict) else {}
        session = str(info.get("uuid") or path.resolve())
        copy_of = report_identity(report)
        if copy_of in read_sessions:
            # A copy of a report already read (the same session, the same runs) is not another
            # session: counted twice it would move the median to the copied values.
            collected.copies.append(f"{path.name} (a copy of {read_sessions[copy_of]})")
            continue
        read_sessions[copy_of] = path.name
        if was_interrupted(report):
            collected.left_out["were in a session ended by a signal (aborted cases)"] += sum(
                len(cases) for cases in runs_of(report))
            continue
        start = info.get("time_start_unix")
        start = float(start) if is_number(start) else None
        for r, run in enumerate(report["runs"]):
            cases = run.get("testcases") if isinstance(run, dict) else None
            if not isinstance(cases, list):
                raise _not_a_report(path, f"runs[{r}]", run)
            for c, case in enumerate(cases):
                where = f"runs[{r}].testcases[{c}]"
                if not isinstance(case, dict):
                    raise _not_a_report(path, where, case)
                if system is not None and case.get("system") != system:
                    continue
                if case.get("machine") and case.get("system") == LOCAL_SYSTEM:
                    collected.machines.add(str(case["machine"]))
                if ran_nothing(case):
                    continue
                if case.get("reference_builtin") is True:
                    continue  # rules that hold everywhere: their reference is in the check
                malformed = malformed_figures(case)
                if malformed:
                    key, entry = malformed[0]
                    raise _not_a_report(path, f"{where}.perfvalues"
                                        + (f"[{key!r}]" if key is not None else ""), entry)
                figures = run_figures(case)
                why = sample_problem(case)
                missed = missed_promises(case)
                if missed:
                    collected.promise_misses += [f"{case_where(case)}: {m}" for m in missed]
                    if not waived:
                        why = "missed the fabric's promise (a link finding or line fraction)"
                    elif why is not None and failed_only_its_promise(case):
                        why = None  # waived: its other figures are within their references
                for figure in figures:
                    collected.sessions.setdefault(
                        series_key(*case_scope(case), figure.variable), set()).add(session)
                if why is not None:
                    collected.left_out[why] += 1
                    if disturbance(case):
                        for figure in figures:
                            collected.set_aside.setdefault(
                                series_key(*case_scope(case), figure.variable),
                                {})[session] = disturbance(case)
                    continue
                if not figures:
                    continue  # a build or another case without figures
                collected.used += 1
                _add_case(table, case, figures, session, start)
    collected.samples = list(table.values())
    return collected


def _add_case(table: dict, case: dict[str, Any], figures: list[RunFigure], session: str,
              start: float | None) -> None:
    check, partition, environ, levels = case_scope(case)
    nodes = ",".join(sorted(evidence(case).nodes))
    directions = case.get("perf_directions")
    if not isinstance(directions, dict):
        directions = {}  # a report from checks that predate perf_directions, or '<undefined>'
    unjudged = unjudged_variables(case.get("unjudged"))
    for perf in figures:
        if perf.result in ("fail", "xfail"):
            continue  # a variable that missed its reference; never the case in a healthy case
        variable = perf.variable
        if variable in unjudged:
            continue  # netbench flagged it unreliable in this run: no sample
        value, unit = perf.number, perf.unit
        if value is None or unit in PROMISE_UNITS:
            continue  # a promised figure's reference is the fabric's promise, not its history
        k = (check, partition, environ, levels, variable)
        samples = table.setdefault(
            k, Samples(check, partition, environ, variable, unit, [], levels=levels)
        )
        samples.values.append(float(value))
        samples.sessions.add(session)
        if nodes:
            samples.node_values.setdefault(nodes, []).append(float(value))
        if start is not None:
            samples.session_starts.setdefault(session, start)
        better = directions.get(variable)
        if better is not None:
            samples.directions.add(str(better))
        steps = case.get("perf_size_steps")
        step = steps.get(variable) if isinstance(steps, dict) else None
        if is_number(step) and step > 1:
            samples.size_steps.add(float(step))
        counts = case.get("perf_counts")
        samples.counts.add(variable in counts if isinstance(counts, list) else None)
        resolutions = case.get("perf_resolutions")
        resolution = resolutions.get(variable) if isinstance(resolutions, dict) else None
        if is_number(resolution) and resolution > 0:
            samples.resolutions.add(float(resolution))
        floors = case.get("perf_floors")
        floor = floors.get(variable) if isinstance(floors, dict) else None
        if not is_number(floor):
            floor = case.get("tolerance_floor")
        if is_number(floor) and 0 <= floor < 1:
            samples.floors.add(float(floor))


def usable(samples: list[Samples], min_runs: int = MIN_RUNS,
           min_sessions: int = MIN_SESSIONS) -> tuple[list[Samples], list[str]]:
    """The samples that may become references, and one note per reason the others may not.
    Sessions needed: `min_sessions`, at most `min_runs` (each session gives a run or more)."""
    min_sessions = min(min_sessions, min_runs)
    unknown, invalid, conflicting, too_few, one_time, keep = [], [], [], [], [], []
    for s in samples:
        if not s.directions:
            unknown.append(s.key)
        elif not s.directions <= set(DIRECTIONS):
            invalid.append(f"{s.key} ({'/'.join(sorted(s.directions))})")
        elif s.better is None:
            conflicting.append(f"{s.key} ({'/'.join(sorted(s.directions))})")
        elif len(s.values) < min_runs:
            too_few.append(f"{s.key} ({len(s.values)})")
        elif len(s.sessions) < min_sessions:
            one_time.append(f"{s.key} ({len(s.sessions)})")
        else:
            keep.append(s)
    # each group of left-out variables: why, and what to do (the list of them follows)
    left_out = [
        (unknown, "whose direction the reports do not give (run by checks older than "
                  "perf_directions); re-run with the current checks: "),
        (invalid, f"whose perf_directions is none of {', '.join(DIRECTIONS)}; fix the check's "
                  f"declaration (fabricsuite/base/metrics.py) and re-run: "),
        (conflicting, "whose direction differs between the reports; baseline from runs of one "
                      "version of the checks: "),
        (too_few, f"with fewer than {min_runs} healthy runs (the reference there is unchanged); "
                  f"run the suite again or lower --min-runs: "),
        (one_time, f"whose runs come from fewer than {min_sessions} sessions (the reference "
                   f"there is unchanged): runs of one session miss the drift between sessions; "
                   f"run the suite in {min_sessions} separate sessions, hours apart on a shared "
                   f"machine, or lower --min-sessions: "),
    ]
    notes = [f"left out {len(keys)} variable(s) {why}" + ", ".join(sorted(keys))
             for keys, why in left_out if keys]
    return keep, notes


def noise(samples: Samples) -> dict[str, Any]:
    """What the runs say of a variable: count, median, robust relative spread (1.4826 x MAD /
    median) and the worst relative deviation on its bad side."""
    values = samples.values
    median = statistics.median(values)
    scale = abs(median) or 1.0
    mad = statistics.median(abs(v - median) for v in values)
    spread = 1.4826 * mad / scale
    if samples.better == HIGHER:
        deviations = sorted((median - v) / scale for v in values)
    elif samples.better == LOWER:
        deviations = sorted((v - median) / scale for v in values)
    else:
        deviations = sorted(abs(v - median) / scale for v in values)
    # From OUTLIER_RUNS_FROM runs on, the single worst run is set aside: one run in five that met
    # a slow phase is what confirmation absorbs (a failing case is measured again after a
    # pause); sizing the bound by it would widen every bound by the machine's worst moment.
    kept = deviations[:-1] if len(deviations) >= OUTLIER_RUNS_FROM else deviations
    stats = {"n": len(values), "median": _round(median), "spread": float(f"{spread:.3g}"),
             "worst": float(f"{max(kept[-1], 0.0):.3g}")}
    if samples.sessions:
        stats["sessions"] = len(samples.sessions)
    if len(samples.session_starts) > 1:
        starts = samples.session_starts.values()
        span = max(starts) - min(starts)
        stats["span_h"] = round(span / 3600.0, 2)
    if kept is not deviations:
        stats["set_aside"] = float(f"{max(deviations[-1], 0.0):.3g}")
    if samples.node_values:
        # The nodes the references were taken on; where on several sets of nodes, how far
        # their medians lie apart (a node outlier is judged against that, not the fabric).
        stats["nodes"] = sorted({n for key in samples.node_values for n in key.split(",")})
        if len(samples.node_values) > 1:
            medians = [statistics.median(v) for v in samples.node_values.values()]
            stats["between_nodes"] = float(f"{(max(medians) - min(medians)) / scale:.3g}")
    return stats


def propose(samples: Samples) -> tuple[list[Any], str | None, dict[str, Any]]:
    """The reference tuple for one variable, a note if it cannot catch a 2x slowdown, and the
    statistics it was sized from (recorded in the file's `_statistics`)."""
    values = samples.values
    median = statistics.median(values)
    unit = samples.unit
    better = samples.better
    stats = noise(samples)
    if better == EQUAL and samples.size_steps and median > 0:
        # A size from a geometric sweep (a protocol threshold): one step either way of the
        # range seen, never a percentage (the widest step, if runs of several sweeps).
        lower, upper = size_step_bounds(min(values), max(values), median,
                                        max(samples.size_steps))
        stats.update({"size_step": round(max(samples.size_steps), 6)})
        return [_round(median), lower, upper, unit], _equal_note(lower, upper, median), stats
    if better == EQUAL and samples.counts & {True, None}:
        # A count that must not move: allow one more or one fewer than seen.
        low, high = min(values), max(values)
        if median:
            # Rounded outwards: -1/3 must not become -0.333 (3 ranges - 0.999 would fail 2).
            lower = math.floor((low - 1 - median) / abs(median) * 1000) / 1000
            upper = math.ceil((high + 1 - median) / abs(median) * 1000) / 1000
        else:
            lower, upper = -1.0, 1.0  # ReFrame: a zero reference with bounds means exactly 0
        return ([_round(median), lower, upper, unit],
                _equal_note(lower, upper, median, count=True) if median else None, stats)
    if better not in DIRECTIONS:
        raise ValueError(f"{samples.key}: direction {better!r} is not one of "
                         f"{', '.join(DIRECTIONS)}")
    # lower/higher: the bad side; equal (a continuous figure such as M = g / G): both sides
    floor = samples.floor
    if better == HIGHER:
        # The floor is a slowdown the partition tolerates: latency x (1 + f) is bandwidth
        # / (1 + f), so a higher-is-better figure may drop by f / (1 + f) (35 % -> 25.9 %).
        floor = round(floor / (1.0 + floor), 3)
    bound = max(floor, NOISE_WIDTHS * stats["spread"], WORST_MARGIN * stats["worst"])
    if better == HIGHER:
        bound = min(bound, MAX_LOWER_BOUND)
    bound = round(bound, 3)
    stats.update({"floor": floor, "bound": bound})
    note = None
    if bound >= TOO_NOISY_FOR_2X[better]:
        note = (f"too noisy to catch 2x: spread {stats['spread']:.1%}, worst deviation "
                f"{stats['worst']:.0%} on the bad side; bound {bound:.0%}")
    why = unjudgeable(median, better, max(samples.resolutions, default=None),
                      count=bool(samples.counts & {True}) or unit in COUNT_UNITS)
    if why is not None:
        note = f"not judgeable: {why}"
    if better == HIGHER:
        return [_round(median), -bound, None, unit], note, stats
    if better == EQUAL:
        # the same factor both ways: x (1 + f) above, / (1 + f) below
        return [_round(median), -round(bound / (1.0 + bound), 3), bound, unit], note, stats
    return [_round(median), None, bound, unit], note, stats


def _equal_note(lower: float, upper: float, median: float, count: bool = False) -> str | None:
    """The note of a count or sweep size whose runs moved so far that its bounds in steps
    cannot fail a 2x change (metrics.catches_2x): recorded, not judged."""
    if catches_2x(EQUAL, lower, upper, median, count):
        return None
    return (f"too noisy to catch 2x: the runs moved from {median * (1 + lower):g} to "
            f"{median * (1 + upper):g} around {median:g} (bounds {lower:+.3f}, {upper:+.3f})")


def one_run_away(samples: Samples) -> str | None:
    """A note when the variable is too noisy to catch 2x only because of one run, with fewer
    than OUTLIER_RUNS_FROM runs (where that run would be set aside): more sessions decide
    whether the machine is that noisy or the run met a slow phase. None otherwise."""
    _entry, note, stats = propose(samples)
    if note is None or len(samples.values) >= OUTLIER_RUNS_FROM or len(samples.values) < 3:
        return None
    median = statistics.median(samples.values)
    sign = {HIGHER: -1.0, LOWER: 1.0}.get(samples.better)
    worst = max(samples.values, key=lambda v: (v - median) * sign if sign else abs(v - median))
    rest = list(samples.values)
    rest.remove(worst)
    if propose(replace(samples, values=rest))[1] is not None:
        return None
    return (f"{samples.key}: one run of {len(samples.values)} lies {stats['worst']:.0%} off "
            f"the median on the bad side, the others within the machine's noise")


def old_entry(existing: Any, s: Samples) -> list[Any] | None:
    """The entry `s` has in a reference file's data, or None."""
    entry = existing.get(s.check) if isinstance(existing, dict) else None
    index = entry.get("$index") if isinstance(entry, dict) else None
    fields = {str(f) for f in index or [] if not str(f).startswith("$")}
    node = existing
    for key in (s.check, s.partition, s.environ,
                *[v for _, v in filled_levels(s.levels, fields)], s.variable):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return list(node) if isinstance(node, list) and len(node) >= 3 else None


def _bound_text(entry: list[Any]) -> str:
    lower, upper = entry[1], entry[2]
    parts = [f"{b:+.1%}" for b in (lower, upper) if isinstance(b, (int, float))]
    return "/".join(parts) if parts else "none"


def diff_lines(samples: list[Samples], existing: Any) -> list[str]:
    """What a baseline changes in the reference file, one line per variable: new, changed
    (old -> new value and the change in %, old -> new bound) or unchanged; changes first."""
    changed, new, same = [], [], []
    for s in sorted(samples, key=lambda s: s.key):
        ref, _note, _stats = propose(s)
        old = old_entry(existing, s)
        unit = ref[3]
        if old is None:
            new.append(f"  new      {s.key}: {ref[0]:g} {unit}, bound {_bound_text(ref)}")
        elif old[:3] == ref[:3]:
            same.append(s.key)
        else:
            shift = ""
            if isinstance(old[0], (int, float)) and old[0]:
                shift = f" ({(ref[0] - old[0]) / abs(old[0]):+.1%})"
            changed.append(f"  changed  {s.key}: {old[0]:g} -> {ref[0]:g} {unit}{shift}, bound "
                           f"{_bound_text(old)} -> {_bound_text(ref)}")
    lines = changed + new
    if same:
        lines.append(f"  unchanged: {len(same)} variable(s)")
    return lines


def _round(value: float) -> float:
    if value == 0:
        return 0.0
    digits = 4 - int(math.floor(math.log10(abs(value))))
    return round(value, max(digits, 0))
