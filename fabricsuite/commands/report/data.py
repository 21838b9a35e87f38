"""What `fabricsuite report` reads: the per-size curves each check is drawn by, the stored
cases and their result files, their provenance, and the verdict summary of the newest session
(the page itself: fabricsuite.commands.report)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricsuite.base.commandline import UsageError
from fabricsuite.base.formats import figure, shown_utc
from fabricsuite.base.metrics import (
    case_scope,
    check_declarations,
    is_finite_number,
    series_key,
)
from fabricsuite.commands import history
from fabricsuite.commands.session import verdict_lines
from fabricsuite.data.cases import (
    RunFigure,
    case_key,
    final_cases,
    is_fixture,
    job_nodes,
    run_figure,
    run_figures,
    was_interrupted,
)
from fabricsuite.data.netbench_result import NetbenchResult, ResultError, load
from fabricsuite.data.session_verdict import (
    SessionVerdict,
    judge,
    reference_statistics,
    skipped,
)
from fabricsuite.data.store import session_runs

#: At most this many trend plots (series with a change point first).
TREND_PLOT_LIMIT = 12
#: Previous runs drawn faintly behind the newest per-size curve.
PREVIOUS_RUNS_SHOWN = 5
#: netbench's JSON result in a case's directory (rfm_netbench.RESULT_FILE; that module is not
#: imported here because it pulls in ReFrame's check machinery).
RESULT_FILE = "netbench.json"
#: The Spack spec the netbench build fixture recorded (rfm_netbench.NetbenchBuild).
SPACK_SPEC_FILE = "spack-spec.txt"
#: Ranks named one by one in a provenance line; more are summarised.
RANKS_NAMED = 4
#: Heat map cells are labelled with their value up to this many ranks.
ANNOTATED_RANKS = 12


class ReportError(UsageError):
    """Bad input: one line that names the fix."""


# --- what is plotted against message size ----------------------------------------------------

@dataclass(frozen=True)
class SizeCurve:
    """One curve of a check's result file against message size."""

    quantity: str  # "latency" or "bandwidth": the panel
    table: str
    size_column: str
    value_column: str
    unit: str
    label: str
    #: One curve per value of this column (dense: the algorithm).
    group_column: str | None = None


SIZE_CURVES: dict[str, list[SizeCurve]] = {
    "NetbenchPingPong": [SizeCurve("latency", "pingpong", "size_bytes", "latency_median_us",
                                   "us", "ping-pong")],
    "NetbenchPingPongBandwidth": [SizeCurve("bandwidth", "bibw", "size_bytes",
                                            "bandwidth_median_MBps", "MB/s", "ping-pong")],
    "NetbenchBothway": [SizeCurve("bandwidth", "bothway", "size_bytes",
                                  "bandwidth_per_direction_median_MBps", "MB/s",
                                  "both ways, per direction")],
    "NetbenchFlood": [SizeCurve("bandwidth", "flood_best", "size_bytes", "bandwidth_MBps",
                                "MB/s", "flood, best queue depth")],
    "NetbenchDense": [SizeCurve("bandwidth", "algorithms", "size_bytes", "bandwidth_mean_MBps",
                                "MB/s", "dense", group_column="algorithm")],
    "NetbenchBeff": [SizeCurve("bandwidth", "lengths", "length_bytes", "beff_per_process_MBps",
                               "MB/s", "b_eff per process")],
}
QUANTITIES = ("latency", "bandwidth")
#: NetbenchLogGP's performance variables and what they are (checks/pt2pt.py).
LOGGP_VARIABLES = {
    "loggp_L_us": "L",
    "loggp_g_us": "g (first range)",
    "loggp_o_s_us": "o_s (first range)",
    "loggp_o_r_us": "o_r (first range)",
    "loggp_G_large_ns_per_byte": "G (last range)",
    "loggp_M_bytes": "M = g / G",
    "loggp_protocol_ranges": "protocol ranges",
    "loggp_threshold_large_bytes": "threshold into the last range",
}


def reference_position(metric: Any, curve: SizeCurve, group: str | None) -> int | str | None:
    """Where a performance variable's reference belongs on `curve`, from the check's declaration
    of the variable (`metric`: a DeclaredMetric): the message size of a cell of the
    curve's own table and column (`cell("pingpong", "latency_median_us", size_bytes=8)` -> 8),
    "peak" for a summary peak figure in the curve's unit, or None (another figure: another
    column, such as a minimum on a median curve, another algorithm, another unit)."""
    if metric is None or metric.unit != curve.unit:
        return None  # none (declared_metrics leaves out the figures a check derives itself)
    if metric.table is None:
        return "peak" if "peak" in metric.column.split("_") else None
    if metric.table != curve.table or metric.column != curve.value_column:
        return None
    if curve.group_column is not None and metric.where.get(curve.group_column) != group:
        return None
    return metric.where.get(curve.size_column)


@dataclass(frozen=True)
class DeclaredMetric:
    """What a netbench check's variable reads (checks/declarations.json): `column` of the summary
    (`table` None) or of the row of `table` matching `where`, in `unit`."""

    table: str | None
    column: str
    where: dict[str, Any]
    unit: str


def declared_metrics(check: str) -> dict[str, DeclaredMetric]:
    """The variables a netbench check declares that read a netbench figure, from the checks'
    snapshot (no ReFrame loaded); a figure the check derives itself is left out."""
    variables = check_declarations().get(check, {}).get("variables", {})
    return {name: DeclaredMetric(declared["reads"]["table"], declared["reads"]["column"],
                                 declared["reads"]["where"], declared["unit"])
            for name, declared in variables.items() if declared.get("reads")}


# --- stored cases and their result files -----------------------------------------------------

@dataclass
class StoredCase:
    """A test case of the system as ReFrame stored it, with its session."""

    case: dict[str, Any]
    session: str
    when: float  # the job's completion, else the session's start (as history orders them)

    @property
    def check(self) -> str:
        return case_scope(self.case)[0]

    @property
    def scope(self) -> tuple[str, str, tuple[tuple[str, str], ...]]:
        """(system:partition, environment, index levels): one per-size figure each."""
        _, partition, environ, levels = case_scope(self.case)
        return partition, environ, levels

    @property
    def counts(self) -> bool:
        """Figures of a complete job: passed, or failed only against a reference."""
        return history.is_counted(self.case)


@dataclass
class LoadedResult:
    result: NetbenchResult
    path: Path
    started: str  # netbench's start_time_utc


@dataclass
class Provenance:
    what: str
    mpi_library: str
    netbench_version: str
    spack_spec: str
    hosts: str
    binding: str
    date: str
    source: str
    #: what carried the run (fabricsuite.data.transport; netbench checks)
    transport: str = "not recorded"
    #: the fabric counters that told of trouble during the run (fabricsuite.data.counters)
    counters: str = "not recorded"
    #: the links of the run's nodes as they reported them, and its findings against the
    #: partition's declared links (fabricsuite.data.links)
    links: str = "not recorded"


def _utc(ts: float | None) -> str:
    if ts is None or not math.isfinite(ts):
        return "?"
    return shown_utc(ts)


def _counters_text(case: dict) -> str:
    """What a case's counters said: the troubled ones that moved, "none moved", or not
    recorded (a run before issue 29, or an external suite); then what was not read, and why."""
    text = (str(case["counters"]) if case.get("counters") else
            "none moved" if "counter_deltas" in case else "not recorded")
    if case.get("counters_not_read"):
        text += f" (not read: {case['counters_not_read']})"
    return text


def _links_text(case: dict) -> str:
    """What a case's nodes said of their links, and its findings (a run before issue 50, or
    an external suite: not recorded)."""
    if "links" not in case:
        return "not recorded"
    text = str(case.get("links") or "none read")
    if case.get("link_findings"):
        text += f"; {case['link_findings']}"
    return _first_line(text, 400)


def _first_line(text: Any, limit: int = 300) -> str:
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _start_time(path: Path) -> str:
    """netbench's start_time_utc from a result file's header (JSON or human format)."""
    try:
        text = path.read_text()
    except OSError:
        return ""
    if text.lstrip().startswith("{"):
        try:
            return str(json.loads(text).get("start_time_utc") or "")
        except (ValueError, AttributeError):
            return ""
    for line in text.splitlines()[:12]:
        if line.startswith("# start_time_utc: "):
            return line.split(": ", 1)[1].strip()
    return ""


class Results:
    """Each case's netbench result, read once: where it was found, or why not."""

    def __init__(self) -> None:
        self._loaded: dict[int, LoadedResult | None] = {}
        self.unreadable: list[str] = []

    def get(self, stored: StoredCase) -> LoadedResult | None:
        key = id(stored.case)
        if key not in self._loaded:
            self._loaded[key] = self._find(stored)
        return self._loaded[key]

    def _find(self, stored: StoredCase) -> LoadedResult | None:
        case = stored.case
        directories = [Path(d) for d in (case.get("outputdir"), case.get("stagedir")) if d]
        stdout = Path(str(case.get("job_stdout") or "rfm_job.out")).name
        # The JSON file first; the job's stdout (the human format of the same run) otherwise.
        for path in [d / RESULT_FILE for d in directories] + [d / stdout for d in directories]:
            if not path.is_file():
                continue
            try:
                loaded = LoadedResult(load(path), path, _start_time(path))
            except (ResultError, OSError, UnicodeDecodeError) as err:
                self.unreadable.append(f"{path}: {_first_line(err)}")
                continue
            # the switch tree the job recorded beside an all-pairs map (checks/fabric_map.py)
            tree = path.parent / "switch-tree.txt"
            try:
                loaded.result.switch_tree = tree.read_text() if tree.is_file() else ""
            except (OSError, UnicodeDecodeError) as err:
                self.unreadable.append(f"{tree}: {_first_line(err)}")
            return loaded
        return None


def stored_cases(sessions: Iterable[dict[str, Any]], system: str, since: float | None
                 ) -> tuple[list[StoredCase], list[dict[str, Any]], list[dict[str, Any]]]:
    """Every case of `system` (from `since` on, by the case's time), the sessions that had
    one, and the interrupted sessions left out of both (cases.was_interrupted: ended by a
    signal, judged nowhere), all oldest first."""
    cases, had, interrupted = [], [], []
    for report in sessions:
        info, runs = session_runs(report, ReportError)
        if was_interrupted(report):
            interrupted.append(report)
            continue
        start = info.get("time_start_unix")
        found = False
        for run in runs:
            for case in (run.get("testcases") or []) if isinstance(run, dict) else []:
                if not isinstance(case, dict) or case.get("system") != system:
                    continue
                when = case.get("job_completion_time_unix")
                when = when if is_finite_number(when) else start
                if not is_finite_number(when) or (since is not None and when < since):
                    continue
                cases.append(StoredCase(case, str(info.get("uuid", "?")), float(when)))
                found = True
        if found:
            had.append(report)
    cases.sort(key=lambda c: c.when)
    for found_sessions in (had, interrupted):
        found_sessions.sort(key=lambda r: r["session_info"].get("time_start_unix") or 0.0)
    return cases, had, interrupted


def _where(levels: tuple[tuple[str, str], ...]) -> str:
    return " ".join(value for _, value in levels)


def _nodelist(case: dict) -> list[str]:
    """The job's nodes, one name each (fabricsuite.data.cases.job_nodes)."""
    return list(job_nodes(case))


def _hosts_and_binding(stored: StoredCase, loaded: LoadedResult | None) -> tuple[str, str]:
    if loaded is not None and loaded.result.ranks:
        ranks = sorted(loaded.result.ranks, key=lambda r: r.get("rank", 0))
        hosts = sorted({str(r.get("host", "?")) for r in ranks})
        named = [f"rank {r.get('rank')}: {r.get('host', '?')} CPUs "
                 f"{','.join(str(c) for c in r.get('cpus_bound') or []) or '?'}"
                 for r in ranks[:RANKS_NAMED]]
        if len(ranks) > RANKS_NAMED:
            named.append(f"... {len(ranks)} ranks")
        return ", ".join(hosts), "; ".join(named)
    hosts = ", ".join(_nodelist(stored.case)) or "?"
    cpus = stored.case.get("bound_cpus") or []
    binding = f"CPUs {','.join(str(c) for c in cpus)}" if cpus else "not recorded"
    return hosts, binding


class ProvenanceFinder:
    """Provenance of a case: its result file's header first, the run report otherwise."""

    def __init__(self, cases: list[StoredCase], results: Results) -> None:
        self.results = results
        # The build fixture a case depends on, by (session, unique name, partition, environ).
        self._builds = {(c.session, c.case.get("unique_name"), c.case.get("partition"),
                         c.case.get("environ")): c for c in cases if is_fixture(c.case)}

    def spack_spec(self, stored: StoredCase) -> str:
        spec = stored.case.get("spack_spec_used")  # external suites record it themselves
        if isinstance(spec, str) and spec.strip():
            return spec.strip()
        for dependency in stored.case.get("dependencies_actual") or []:
            if not isinstance(dependency, list) or len(dependency) < 3:
                continue
            partition = str(dependency[1]).split(":")[-1]
            build = self._builds.get((stored.session, dependency[0], partition, dependency[2]))
            if build is None:
                continue
            for directory in (build.case.get("outputdir"), build.case.get("stagedir")):
                path = Path(directory or "") / SPACK_SPEC_FILE
                if directory and path.is_file():
                    try:
                        return _first_line(path.read_text())
                    except (OSError, UnicodeDecodeError):
                        continue
        return ""

    def of(self, stored: StoredCase, what: str = "") -> Provenance:
        loaded = self.results.get(stored)
        case = stored.case
        hosts, binding = _hosts_and_binding(stored, loaded)
        if loaded is not None:
            mpi = _first_line(loaded.result.mpi_library)
            version = loaded.result.version
            date = loaded.started or _utc(stored.when)
            source = str(loaded.path)
        else:
            mpi = _first_line(case.get("mpi_library"))
            version = str(case.get("netbench_version") or "")
            date = _utc(stored.when)
            source = f"run report of session {stored.session[:8]} (result file not kept)"
        return Provenance(what or case_scope(case)[0], mpi or "not recorded",
                          version or "not recorded", self.spack_spec(stored) or "none",
                          hosts, binding, date, source,
                          str(case.get("transport") or "not recorded"),
                          _counters_text(case), _links_text(case))


# --- 1. the verdict summary ------------------------------------------------------------------

@dataclass
class FailedVariable:
    variable: str
    value: str
    reference: str
    bound: str
    change: str
    noise_widths: str
    first_run: str


@dataclass
class FailedCase:
    check: str
    name: str
    partition: str
    environ: str
    where: str
    phase: str
    reason: str
    variables: list[FailedVariable] = field(default_factory=list)
    #: The session's verdict of the case (fabricsuite.data.session_verdict): regression, node
    #: outlier, link degraded, broken, interrupted.
    verdict: str = ""


@dataclass
class Summary:
    session: str
    started: str
    cmdline: str
    failed: list[FailedCase]
    passed: int
    failed_count: int
    skipped: int
    cases: list[dict[str, str]]
    lines: list[str]
    #: The outcome's other counts (cases recorded without references, not run), and how the
    #: verdict was come by: "as judged when it ended (<time>)", or judged now.
    recorded: int = 0
    judged: str = ""

    @property
    def failed_by_verdict(self) -> str:
        """The failed cases by their session verdict: "1 regression, 2 broken" ("" for none)."""
        counts: dict[str, int] = {}
        for case in self.failed:
            counts[case.verdict] = counts.get(case.verdict, 0) + 1
        return ", ".join(f"{n} {verdict}" for verdict, n in sorted(counts.items()))



def _failed_variable(system: str, stored_case: dict[str, Any], perf: RunFigure,
                     earlier: dict[str, Any] | None, cache: dict) -> FailedVariable:
    value, ref, lower, upper, unit = perf.value, perf.reference, perf.lower, perf.upper, perf.unit
    variable = perf.variable
    reference = bound = change = widths = first = "-"
    if is_finite_number(value) and is_finite_number(ref) and ref:
        reference = f"{ref:g} {unit}"
        change = f"{(value - ref) / abs(ref):+.1%}"
        # The bound that was crossed: the lower one when below the reference.
        side = lower if (value < ref and lower is not None) or upper is None else upper
        if is_finite_number(side):
            bound = f"{side:+.1%} ({ref * (1 + side):.4g} {unit})"
        spread = (reference_statistics(system, cache).get(
            series_key(*case_scope(stored_case), variable)) or {}).get("spread")
        if is_finite_number(spread) and spread > 0:
            widths = f"{abs(value - ref) / abs(ref) / spread:.1f} (spread {spread:.2%})"
    if earlier is not None:
        before = run_figure(earlier, perf.key)
        if before is not None and before.number is not None:
            first = f"{before.number:g} {unit}"
    return FailedVariable(variable, f"{figure(value)} {unit}", reference, bound, change, widths,
                          first)


def summary(report: dict[str, Any], system: str,
            verdict: SessionVerdict | None = None) -> Summary:
    """The newest session's verdict (`verdict`, else `judge(report)`): failed cases first,
    then the outcome's counts, each case as the session's verdict judges it
    (fabricsuite.data.session_verdict): the outcome's answer, a case passed while disturbed
    passed here too."""
    verdict = verdict or judge(report)
    judged = {case_key(j.last): j for j in verdict.cases}
    failed, cases, cache = [], [], {}
    for case in final_cases(report):
        if case.get("system") != system:
            continue
        found = judged.get(case_key(case))
        # a case that ran nothing is skipped; a passed fixture (the build) is no case of the
        # verdict, counted as passed beside them
        kind = ("skipped" if skipped(case) else "passed" if found is None
                else "failed" if found.counted == "failed" else "passed")
        said = ("skipped" if skipped(case) else "passed" if found is None
                 else found.verdict)
        check, partition, environ, levels = case_scope(case)
        cases.append({"name": str(case.get("display_name") or case.get("name")),
                      "partition": partition, "environ": environ, "verdict": said,
                      "kind": kind})
        if found is None or kind != "failed":
            continue
        shown = found.failing_run
        entry = FailedCase(check, str(case.get("display_name") or case.get("name")), partition,
                           environ, _where(levels), found.phase, _first_line(found.reason),
                           verdict=found.verdict)
        for perf in run_figures(shown):
            if perf.failed:
                entry.variables.append(_failed_variable(
                    system, shown, perf,
                    found.case.first if shown is not found.case.first else None, cache))
        failed.append(entry)
    # Failed cases first, then the rest in the session's order.
    order = {"failed": 0, "passed": 1, "skipped": 2}
    cases.sort(key=lambda c: order[c["kind"]])
    info = report.get("session_info") or {}
    # the outcome's counts, not the page's own: the cases of the fabric (the build left out)
    told = verdict.counts
    judged_when = (f"as judged when it ended ({verdict.judged_at})" if verdict.origin == "stored"
                   else "re-judged now against today's references (--rejudge)"
                   if verdict.origin == "re-judged" else
                   "judged now: no verdict stored with it" if verdict.origin else "")
    return Summary(str(info.get("uuid", "?")), _utc(info.get("time_start_unix")),
                   str(info.get("cmdline", "")), failed, told["passed"], told["failed"],
                   told["skipped"], cases, verdict_lines(report, verdict),
                   recorded=told["recorded"], judged=judged_when)


