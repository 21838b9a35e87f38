"""The report's figures: per-size curves with their references, LogGP tables, trends with
their change points, heat maps of the all-pairs map and the dense phases (matplotlib, Agg,
embedded as data URIs)."""

from __future__ import annotations

import base64
import io
import math
import statistics
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fabricsuite.base.formats import figure as figure_text
from fabricsuite.base.metrics import case_scope, is_finite_number
from fabricsuite.commands import change_points, history
from fabricsuite.data import switches
from fabricsuite.data.cases import run_figures
from fabricsuite.data.netbench_result import NetbenchResult, ResultError

from .data import (
    ANNOTATED_RANKS,
    LOGGP_VARIABLES,
    PREVIOUS_RUNS_SHOWN,
    QUANTITIES,
    SIZE_CURVES,
    TREND_PLOT_LIMIT,
    Provenance,
    ProvenanceFinder,
    Results,
    SizeCurve,
    StoredCase,
    _first_line,
    _nodelist,
    _utc,
    _where,
    declared_metrics,
    reference_position,
)

# --- figures ---------------------------------------------------------------------------------

@dataclass
class PageFigure:
    id: str
    title: str
    src: str  # data URI
    alt: str
    caption: str
    provenance: list[Provenance]
    #: data-* attributes of the <figure> (what a reader or a test can check without the image).
    data: dict[str, str] = field(default_factory=dict)


def _new_figure(width: float, height: float):
    from matplotlib.figure import Figure as MplFigure

    return MplFigure(figsize=(width, height), layout="constrained")


def _embed(figure, fmt: str) -> str:
    """A matplotlib figure as a data URI: SVG with its text as text, or PNG."""
    import matplotlib

    buffer = io.BytesIO()
    # Fixed ids and no date: the same data give the same page.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "fabricsuite"}):
        figure.savefig(buffer, format=fmt, dpi=96, bbox_inches="tight",
                       metadata={"Date": None} if fmt == "svg" else {"Software": None})
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    return f"data:{mime};base64,{base64.b64encode(buffer.getvalue()).decode('ascii')}"


def _size_label(size: float, _position: Any = None) -> str:
    """8 B, 4 KiB, 1 MiB; a size that is no whole number of KiB stays in bytes (3444 B)."""
    for unit, factor in (("MiB", 1024**2), ("KiB", 1024)):
        if size >= factor and size % factor == 0:
            return f"{size // factor:g} {unit}"
    return f"{size:g} B"


def _cell_label(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _curve_points(result: NetbenchResult, curve: SizeCurve, group: str | None,
                  left_out: list[str] | None = None) -> tuple[list[float], list[float]]:
    """The (sizes, values) of one curve; a row whose size or value is no finite positive
    number (NaN, a negative figure) is left out, and named in `left_out` where given."""
    rows = [r for r in result.tables.get(curve.table) or []
            if group is None or r.get(curve.group_column) == group]

    def drawable(value: Any) -> bool:
        return is_finite_number(value) and value > 0

    points = sorted((r.get(curve.size_column), r.get(curve.value_column)) for r in rows
                    if drawable(r.get(curve.size_column)) and drawable(r.get(curve.value_column)))
    if left_out is not None and len(points) < len(rows):
        bad = [f"{r.get(curve.size_column)}: {r.get(curve.value_column)}" for r in rows
               if not (drawable(r.get(curve.size_column))
                       and drawable(r.get(curve.value_column)))]
        left_out.append(f"{curve.label}{' ' + group if group else ''}: {len(bad)} point(s) not "
                        f"drawn, no finite positive {curve.value_column} ({'; '.join(bad[:3])}"
                        f"{'; ...' if len(bad) > 3 else ''})")
    return [float(p[0]) for p in points], [float(p[1]) for p in points]


def _groups(result: NetbenchResult, curve: SizeCurve) -> list[str | None]:
    if curve.group_column is None:
        return [None]
    seen: list[str | None] = []
    for row in result.tables.get(curve.table) or []:
        value = row.get(curve.group_column)
        if value not in seen:
            seen.append(value)
    return seen


def _draw_references(ax, stored: StoredCase, curve: SizeCurve, group: str | None,
                     color: Any, labelled: set[str]) -> None:
    for perf in run_figures(stored.case):
        ref, lower, upper, unit = perf.reference, perf.lower, perf.upper, str(perf.unit)
        if not is_finite_number(ref) or ref <= 0 or unit != curve.unit:
            continue  # no reference (require_reference=false), or stored in another unit
        metric = declared_metrics(stored.check).get(perf.variable)
        where = reference_position(metric, curve, group)
        if where is None:
            continue
        low = ref * (1 + lower) if is_finite_number(lower) else ref
        high = ref * (1 + upper) if is_finite_number(upper) else ref
        if where == "peak":
            label = None if "peak" in labelled else "reference peak and bound"
            labelled.add("peak")
            ax.axhline(ref, color=color, linestyle=":", linewidth=1)
            ax.axhspan(low, high, color=color, alpha=0.08, label=label)
        else:
            label = None if "size" in labelled else "reference and bound"
            labelled.add("size")
            ax.errorbar([where], [ref], yerr=[[ref - low], [high - ref]], fmt="D", markersize=5,
                        color=color, markerfacecolor="white", capsize=4, linewidth=2,
                        label=label, zorder=5)


def size_figures(cases: list[StoredCase], results: Results,
                 provenance: ProvenanceFinder) -> tuple[list[PageFigure], list[str], int]:
    """Per scope (partition, environment, distance or scale) one figure with a latency and a
    bandwidth panel; returns (figures, notes, runs whose per-size data is gone)."""
    import matplotlib
    from matplotlib.ticker import FuncFormatter

    by_scope: dict[tuple, dict[str, list[StoredCase]]] = {}
    for stored in cases:
        if stored.check in SIZE_CURVES and stored.counts:
            by_scope.setdefault(stored.scope, {}).setdefault(stored.check, []).append(stored)
    figures, notes, missing_total = [], [], 0
    missing_by_check: dict[str, int] = {}
    colors = matplotlib.colormaps["tab10"].colors
    for number, (scope, checks) in enumerate(sorted(by_scope.items())):
        partition, environ, levels = scope
        quantities = [q for q in QUANTITIES
                      if any(c.quantity == q for check in checks for c in SIZE_CURVES[check])]
        figure = _new_figure(5.2 * len(quantities), 3.8)
        axes = dict(zip(quantities, figure.subplots(1, len(quantities), squeeze=False)[0],
                        strict=True))
        drawn, rows, missing, earlier = 0, [], 0, []
        labelled: dict[str, set[str]] = {q: set() for q in quantities}
        color_index = 0
        for check in sorted(checks):
            runs = sorted(checks[check], key=lambda c: c.when, reverse=True)
            kept = [r for r in runs if results.get(r) is not None]
            gone = len(runs) - len(kept)
            missing += gone
            missing_by_check[check] = missing_by_check.get(check, 0) + gone
            if not kept:
                continue
            newest, previous = kept[0], kept[1:1 + PREVIOUS_RUNS_SHOWN]
            rows.append(provenance.of(newest, f"{check} (newest)"))
            loaded = results.get(newest)
            absent = sorted({c.table for c in SIZE_CURVES[check]} - set(loaded.result.tables))
            if absent:
                notes.append(f"{check} {_utc(newest.when)}: {loaded.path} holds no "
                             f"{', '.join(absent)} table (a {loaded.result.method} result, not "
                             f"this check's): not drawn")
            left_out: list[str] = []
            for curve in SIZE_CURVES[check]:
                ax = axes[curve.quantity]
                for group in _groups(results.get(newest).result, curve):
                    color = colors[color_index % len(colors)]
                    color_index += 1
                    name = curve.label + (f" {group}" if group else "")
                    for i, run in enumerate(previous):
                        xs, ys = _curve_points(results.get(run).result, curve, group)
                        ax.plot(xs, ys, color=color, alpha=0.3, linewidth=0.9,
                                label=f"{name}: {len(previous)} previous" if i == 0 else None)
                    xs, ys = _curve_points(results.get(newest).result, curve, group,
                                           left_out)
                    if xs:
                        drawn += 1
                    ax.plot(xs, ys, color=color, marker="o", markersize=3, linewidth=1.5,
                            label=f"{name}: {_utc(newest.when)}")
                    _draw_references(ax, newest, curve, group, color,
                                     labelled[curve.quantity])
            notes += [f"{check} {_utc(newest.when)}: {line}" for line in left_out]
            if previous:
                earlier.append(f"{check}: {', '.join(_utc(r.when) for r in previous)}")
        missing_total += missing
        where = _where(levels)
        title = f"{partition} {environ} {where}".strip()
        if not drawn:
            notes.append(f"{title}: per-size data not kept for {missing} run(s); no curve "
                         f"to draw")
            continue
        for quantity, ax in axes.items():
            units = {c.unit for check in checks for c in SIZE_CURVES[check]
                     if c.quantity == quantity}
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.xaxis.set_major_formatter(FuncFormatter(_size_label))
            ax.tick_params(axis="x", labelrotation=45, labelsize=7)
            ax.set_xlabel("message size")
            ax.set_ylabel(f"{quantity} ({', '.join(sorted(units))})")
            ax.set_title(f"{quantity}: {title}", fontsize=9)
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(fontsize=6.5)
        caption = (f"{title}: median {', '.join(quantities)} per message size of the newest "
                   f"run of each check (solid), up to {PREVIOUS_RUNS_SHOWN} previous runs "
                   f"(faint), and the reference and bound each run was judged by.")
        if earlier:
            caption += f" Previous runs drawn: {'; '.join(earlier)}."
        if missing:
            caption += f" Per-size data not kept for {missing} run(s) of this scope."
        figures.append(PageFigure(f"size-{number}", title, _embed(figure, "svg"),
                              f"{', '.join(quantities)} against message size, {title}",
                              caption, rows, {"scope": title, "missing": str(missing)}))
    if missing_total:
        per_check = ", ".join(f"{check} {n}" for check, n in sorted(missing_by_check.items())
                              if n)
        notes.append(f"per-size data not kept for {missing_total} run(s) (their result files "
                     f"are no longer on disk: {per_check})")
    if not by_scope:
        notes.append(f"no run of a per-size check ({', '.join(SIZE_CURVES)}) is stored")
    return figures, notes, missing_total


# --- 3. LogGP ----------------------------------------------------------------------------------

@dataclass
class LogGPTable:
    title: str
    date: str
    ranges: list[dict[str, str]]
    figures: list[tuple[str, str, str]]  # (figure, value, reference)
    note: str
    provenance: Provenance


def _interval(row: dict[str, Any], value: str, low: str, high: str) -> str:
    text = figure_text(row.get(value))
    if is_finite_number(row.get(low)) or is_finite_number(row.get(high)):
        text += f" [{figure_text(row.get(low))}, {figure_text(row.get(high))}]"
    return text


def loggp_tables(cases: list[StoredCase], results: Results,
                 provenance: ProvenanceFinder) -> list[LogGPTable]:
    newest: dict[tuple, StoredCase] = {}
    for stored in cases:  # oldest first: the last one of a scope stays
        if stored.check == "NetbenchLogGP" and stored.counts:
            newest[stored.scope] = stored
    tables = []
    for scope, stored in sorted(newest.items()):
        partition, environ, levels = scope
        loaded = results.get(stored)
        perf = {f.variable: f for f in run_figures(stored.case)}
        figures = []
        for variable, meaning in LOGGP_VARIABLES.items():
            if variable in perf:
                value, ref, unit = (perf[variable].value, perf[variable].reference,
                                    perf[variable].unit)
                figures.append((f"{meaning} ({variable})", f"{figure_text(value)} {unit}",
                                f"{figure_text(ref)} {unit}" if is_finite_number(ref) and ref
                                else "-"))
        ranges, note = [], ""
        if loaded is not None:
            result = loaded.result
            for row in result.tables.get("ranges") or []:
                ranges.append({
                    "range": figure_text(row.get("range")),
                    "sizes": f"{_size_label(row.get('first_size_bytes') or 0)} - "
                             f"{_size_label(row.get('last_size_bytes') or 0)}",
                    "points": figure_text(row.get("points")),
                    "g_us": _interval(row, "g_us", "g_ci95_low_us", "g_ci95_high_us"),
                    "G_ns_per_byte": _interval(row, "G_ns_per_byte", "G_ci95_low_ns_per_byte",
                                               "G_ci95_high_ns_per_byte"),
                    "o_s_us": _interval(row, "o_s_us", "o_s_ci95_low_us", "o_s_ci95_high_us"),
                    "o_r_us": _interval(row, "o_r_us", "o_r_ci95_low_us", "o_r_ci95_high_us"),
                    "fit": ("reliable" if row.get("fit_reliable") else "unreliable")
                           + (", clamped" if row.get("fit_clamped") else ""),
                })
            s = result.summary
            for name, label, unit in (("threshold_small_bytes", "threshold into range 1", "B"),
                                      ("threshold_large_bytes", "threshold into the last range",
                                       "B"),
                                      ("protocol_ranges_detected",
                                       "ranges of the look-ahead test", "")):
                if name in s:
                    figures.append((f"{label} ({name}, result file)",
                                    f"{figure_text(s.get(name))} {unit}".strip(), "-"))
        else:
            note = ("per-range data not kept (the result file is no longer on disk): the "
                    "performance variables of the run report only")
        where = _where(levels)
        title = f"{partition} {environ} {where}".strip()
        tables.append(LogGPTable(title, _utc(stored.when), ranges, figures, note,
                                 provenance.of(stored)))
    return tables


# --- 4. trends ---------------------------------------------------------------------------------

def _relevance(series: history.Series) -> float:
    """How far the newest run lies from the median of the earlier ones (relative)."""
    values = [p.value for p in series.points]
    if len(values) < 2:
        return 0.0
    earlier = statistics.median(values[:-1])
    if earlier == 0:
        return 0.0 if values[-1] == 0 else math.inf
    return abs(values[-1] - earlier) / abs(earlier)


def _trend_provenance(series: history.Series, cases: list[StoredCase],
                      provenance: ProvenanceFinder) -> Provenance:
    sessions = {p.session for p in series.points}
    scope = (series.check, series.partition, series.environ, series.levels)
    mine = [c for c in cases if c.session in sessions and case_scope(c.case) == scope]
    libraries = sorted({_first_line(c.case.get("mpi_library")) for c in mine} - {""})
    versions = sorted({str(c.case.get("netbench_version") or "") for c in mine} - {""})
    hosts = sorted({h for c in mine for h in _nodelist(c.case)})
    bindings = sorted({",".join(str(x) for x in c.case.get("bound_cpus") or []) for c in mine}
                      - {""})
    specs = sorted({provenance.spack_spec(c) for c in mine} - {""})
    transports = sorted({str(c.case.get("transport") or "") for c in mine} - {""})
    first, last = series.points[0].time, series.points[-1].time
    return Provenance("history", "; ".join(libraries) or "not recorded",
                      ", ".join(versions) or "not recorded", "; ".join(specs) or "none",
                      ", ".join(hosts) or "?",
                      "; ".join(f"CPUs {b}" for b in bindings) or "not recorded",
                      f"{_utc(first)} .. {_utc(last)}",
                      f"run reports of {len(sessions)} session(s)",
                      "; ".join(transports) or "not recorded")


def _change_text(c: history.ChangePoint) -> str:
    shift = c.shift
    return (f"{c.kind}{'' if c.alarm else ' (below the minimum shift)'} at run "
            f"{c.index + 1}/{len(c.series.points)}, session {c.point.session[:8]} "
            f"{_utc(c.point.time)}: {figure_text(c.before)} -> {figure_text(c.after)} "
            f"{c.series.unit}"
            f" ({'from 0' if shift is None else f'{100 * shift:+.1f}%'}, p {c.p:.2g})")


def trend_figures(found: history.History, cases: list[StoredCase],
                  provenance: ProvenanceFinder) -> tuple[list[PageFigure], list[str],
                                                         list[dict[str, str]]]:
    """One small plot per series with a change point, then the most relevant others, at most
    TREND_PLOT_LIMIT; returns (figures, notes, every change point as a table row)."""
    from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

    by_key: dict[str, list[history.ChangePoint]] = {}
    for c in found.change_points:
        by_key.setdefault(c.series.key, []).append(c)
    ranked_changes = sorted(found.change_points, key=change_points.alarm_rank)
    with_change = list(dict.fromkeys(c.series.key for c in ranked_changes))
    plottable = [s for s in found.series if len(s.points) >= 2]
    others = sorted((s for s in plottable if s.key not in by_key),
                    key=lambda s: (-_relevance(s), s.key))
    series_by_key = {s.key: s for s in found.series}
    chosen = [series_by_key[k] for k in with_change] + others
    shown = chosen[:TREND_PLOT_LIMIT]
    figures = []
    for number, s in enumerate(shown):
        figure = _new_figure(4.6, 2.6)
        ax = figure.subplots()
        times = [datetime.fromtimestamp(p.time, UTC) for p in s.points]
        values = [p.value for p in s.points]
        ax.plot(times, values, marker="o", markersize=3, linewidth=1, color="#1f77b4")
        changes = sorted(by_key.get(s.key, []), key=lambda c: c.index)
        cuts = [0, *[c.index for c in changes], len(values)]
        for a, b in zip(cuts[:-1], cuts[1:], strict=True):
            level = statistics.median(values[a:b])
            ax.hlines(level, times[a], times[b - 1], colors="#555555", linestyles="-",
                      linewidth=0.8, alpha=0.7)
        for c in changes:
            # Between the last run of the old level and the first of the new one.
            middle = times[c.index - 1] + (times[c.index] - times[c.index - 1]) / 2
            line = ax.axvline(middle, color="#d62728" if c.kind == "regression" else "#ff7f0e",
                              linestyle="--", linewidth=1.2)
            line.set_gid(f"change-point-{c.index}")
        locator = AutoDateLocator()
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))
        ax.tick_params(labelsize=7)
        ax.set_ylabel(s.unit, fontsize=8)
        where = " ".join([s.environ, _where(s.levels)])
        ax.set_title(f"{s.check} {where}\n{s.variable}", fontsize=8)
        ax.grid(True, alpha=0.3)
        caption = "; ".join(_change_text(c) for c in changes) or (
            f"no change point; newest run {100 * _relevance(s):.1f}% from the median of the "
            f"earlier ones" if math.isfinite(_relevance(s)) else "no change point")
        figures.append(PageFigure(
            f"trend-{number}", s.key, _embed(figure, "svg"),
            f"history of {s.key} over {len(values)} runs", caption,
            [_trend_provenance(s, cases, provenance)],
            {"series": s.key, "change-points": str(len(changes)),
             "change-point-sessions": " ".join(c.point.session for c in changes)}))
    notes = [f"{len(found.series)} series; at most {TREND_PLOT_LIMIT} plots: every series "
             f"with a change point first ({len(with_change)}), then the series whose newest "
             f"run lies farthest from the median of its earlier runs; {len(shown)} shown, "
             f"{len(found.series) - len(shown)} left out"
             + (f" ({len(found.series) - len(plottable)} with a single run)"
                if len(plottable) < len(found.series) else "")]
    if len(with_change) > TREND_PLOT_LIMIT:
        notes.append(f"{len(with_change) - TREND_PLOT_LIMIT} series with a change point are "
                     f"not plotted; the table lists every change point")
    rows = [{"kind": c.kind if c.alarm else f"{c.kind} (below {100 * c.min_shift:g}%)",
             "series": c.series.key, "before": figure_text(c.before), "after": figure_text(c.after),
             "unit": c.series.unit,
             "shift": "from 0" if c.shift is None else f"{100 * c.shift:+.1f}%",
             "p": f"{c.p:.2g}", "run": f"{c.point.session[:8]} {_utc(c.point.time)} "
                                       f"({c.index + 1}/{len(c.series.points)})"}
            for c in ranked_changes]
    return figures, notes, rows


# --- 5. heat maps ------------------------------------------------------------------------------

def _newest_with_result(cases: list[StoredCase], check: str,
                        results: Results) -> tuple[dict[tuple, StoredCase], int]:
    """Per scope the newest counted case of `check` whose result file is on disk; and how many
    counted cases of it there are without one."""
    newest: dict[tuple, StoredCase] = {}
    gone = 0
    for stored in cases:
        if stored.check != check or not stored.counts:
            continue
        if results.get(stored) is None:
            gone += 1
        else:
            newest[stored.scope] = stored
    return newest, gone


def _result_figures(cases: list[StoredCase], results: Results, provenance: ProvenanceFinder,
                    check: str, slug: str, what: str, alt: str, draw, hint: str = ""
                    ) -> tuple[list[PageFigure], list[str]]:
    """One figure per scope from the newest run of `check` whose result file is on disk:
    ``draw(result, title)`` gives the matplotlib figure, its caption and extra attributes (`alt`
    leads its alternative text); a note where no run or only runs without their files are
    stored (`what` names the runs, `hint` says how to get one)."""
    newest, gone = _newest_with_result(cases, check, results)
    figures, notes = [], []
    for number, (scope, stored) in enumerate(sorted(newest.items())):
        partition, environ, levels = scope
        title = f"{partition} {environ} {_where(levels)}".strip()
        figure, caption, extra = draw(results.get(stored).result, title)
        figures.append(PageFigure(f"{slug}-{number}", title, _embed(figure, "png"),
                              f"{alt}, {title}", caption, [provenance.of(stored)], extra))
    if not newest:
        notes.append(f"no {what} run stored ({check})" + (
            f": {gone} run(s) stored, their result files are no longer on disk" if gone
            else hint))
    elif gone:
        notes.append(f"{gone} older {what} run(s) without their result files")
    return figures, notes


def matrix_figures(cases: list[StoredCase], results: Results,
                   provenance: ProvenanceFinder) -> tuple[list[PageFigure], list[str]]:
    return _result_figures(cases, results, provenance, "NetbenchMatrix", "matrix", "all-pairs",
                           "all-pairs node map", _draw_matrix,
                           "; run checks/fabric_map.py to map every pair of nodes")


def _rectangle(corner: tuple[float, float], width: float, height: float):
    from matplotlib.patches import Rectangle
    return Rectangle(corner, width, height, fill=False, edgecolor="red", linewidth=2)


def _draw_matrix(result, title: str):
    import numpy as np

    pairs = [p for p in result.tables.get("pairs") or []
             if isinstance(p.get("rank_a"), int) and isinstance(p.get("rank_b"), int)
             and min(p["rank_a"], p["rank_b"]) >= 0]
    ranks = max([int(result.parameters.get("ranks") or 0)]
                + [1 + max(p["rank_a"], p["rank_b"]) for p in pairs])
    hosts = [""] * ranks
    for p in pairs:
        hosts[p["rank_a"]], hosts[p["rank_b"]] = str(p.get("host_a")), str(p.get("host_b"))
    # Ordered by switch where the job recorded its tree; the named components marked.
    try:
        explanation = switches.verdict(result)
        tree = (switches.parse_topology(result.switch_tree)
                if getattr(result, "switch_tree", "") else None)
    except (switches.TopologyError, ResultError, KeyError, TypeError, ValueError):
        explanation, tree = None, None
    leaf = [tree.leaf_of.get(h, "") if tree else "" for h in hosts]
    order = sorted(range(ranks), key=lambda r: (leaf[r], r))
    at = {rank: position for position, rank in enumerate(order)}
    faulty_hosts, faulty_blocks = set(), set()
    for finding in explanation.findings if explanation else []:
        # the smallest kind a finding names (what it counts as), not the larger components
        # the pairs cannot tell from it (a 2-leaf tree's spine beside its uplinks)
        smallest = finding.components[0][0]
        for kind, name in finding.components:
            if kind != smallest:
                continue
            if kind == "node":
                faulty_hosts.add(name)
            elif kind == "switch" and tree:
                faulty_hosts |= tree.nodes_under(name)
            elif kind == "uplink" and tree:  # the block of nodes behind a faulty uplink
                faulty_blocks.add(frozenset(tree.nodes_under(name)))
    labels = [f"{r}:{hosts[r]}" + (f" [{leaf[r]}]" if leaf[r] else "") +
              (" !" if hosts[r] in faulty_hosts else "") for r in order]
    side = min(9.0, 2.2 + 0.45 * ranks)
    figure = _new_figure(2 * side + 1.0, side)
    panels = figure.subplots(1, 2, squeeze=False)[0]
    for ax, (column, name, cmap) in zip(panels, (("bandwidth_MBps", "bandwidth (MB/s)",
                                                  "viridis"),
                                                 ("latency_us", "latency (us)",
                                                  "viridis_r")), strict=True):
        grid = np.full((ranks, ranks), np.nan)
        for p in pairs:
            if is_finite_number(p.get(column)):
                a, b = at[p["rank_a"]], at[p["rank_b"]]
                grid[a, b] = grid[b, a] = p[column]
        image = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap)
        figure.colorbar(image, ax=ax, shrink=0.8)
        ax.set_xticks(range(ranks), labels, rotation=90, fontsize=7)
        ax.set_yticks(range(ranks), labels, fontsize=7)
        for tick in (*ax.get_xticklabels(), *ax.get_yticklabels()):
            if tick.get_text().endswith(" !"):
                tick.set_color("red")
        for position in range(1, ranks):  # a line between two switches' nodes
            if leaf[order[position]] != leaf[order[position - 1]]:
                ax.axhline(position - 0.5, color="white", linewidth=1.5)
                ax.axvline(position - 0.5, color="white", linewidth=1.5)
        for block in faulty_blocks:  # a red frame around the nodes behind a faulty uplink
            inside = [at[r] for r in range(ranks) if hosts[r] in block]
            if inside:
                low, high = min(inside) - 0.5, max(inside) + 0.5
                ax.add_patch(_rectangle((low, low), high - low, high - low))
        ax.set_title(name, fontsize=9)
        for p in pairs:
            if ranks <= ANNOTATED_RANKS and is_finite_number(p.get(column)):
                text = _cell_label(p[column]) + (" !" if p.get("flagged") else "")
                a, b = at[p["rank_a"]], at[p["rank_b"]]
                for y, x in ((a, b), (b, a)):
                    ax.text(x, y, text, ha="center", va="center", fontsize=7,
                            color="white" if column == "bandwidth_MBps" else "black")
    flagged = [p for p in pairs if p.get("flagged")]
    figure.suptitle(f"all-pairs node map: {title}", fontsize=10)
    params = result.parameters
    if "schedule" in params:  # the concurrent matrix: relative to the run's pairs
        how = ("one pair at a time" if params.get("schedule") == "sequential" else
               f"{params.get('rounds')} of {params.get('rounds_total')} tournament rounds, "
               f"the disjoint pairs of a round at once")
        rule = f"bad: {switches.bad_pair_rule(params)}"
    else:
        how = "one pair at a time"
        rule = (f"more than {figure_text(100 * (params.get('flag_tolerance') or 0))}% below the "
                f"median bandwidth")
    caption = (f"{title}: pairs of {ranks} ranks, {how}: ping-pong "
               f"bandwidth at {_size_label(params.get('bandwidth_size_bytes') or 0)}"
               f" and latency at "
               f"{_size_label(params.get('latency_size_bytes') or 0)}; "
               f"{len(flagged)} pair(s) flagged ({rule}, marked '!'). "
               + ("Ordered by switch (lines between switches). " if tree else "")
               + (f"{'; '.join(explanation.lines())} (nodes of a faulty link or switch in "
                  f"red; behind a faulty uplink, framed in red). "
                  if explanation and explanation.lines() else "")
               + f"Status {result.status}.")
    return figure, caption, {"ranks": str(ranks)}


def dense_figures(cases: list[StoredCase], results: Results,
                  provenance: ProvenanceFinder) -> tuple[list[PageFigure], list[str]]:
    return _result_figures(cases, results, provenance, "NetbenchDense", "dense",
                           "dense-pattern", "dense pattern phases", _draw_dense)


def _draw_dense(result, title: str):
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm

    phases = result.tables.get("phases") or []
    sizes = sorted({r["size_bytes"] for r in phases if is_finite_number(r.get("size_bytes"))})
    algorithms = list(dict.fromkeys(r.get("algorithm") for r in phases))
    rows = [(a, k) for a in algorithms
            for k in sorted({r.get("phase") for r in phases if r.get("algorithm") == a})]
    first = {(r.get("algorithm"), r.get("size_bytes")): r.get("bandwidth_mean_MBps")
             for r in phases if r.get("phase") == 1}
    grid = np.full((len(rows), len(sizes)), np.nan)
    for r in phases:
        base = first.get((r.get("algorithm"), r.get("size_bytes")))
        value = r.get("bandwidth_mean_MBps")
        if is_finite_number(base) and base > 0 and is_finite_number(value):
            grid[rows.index((r.get("algorithm"), r.get("phase"))),
                 sizes.index(r["size_bytes"])] = value / base
    finite = grid[np.isfinite(grid)]
    low = min(0.5, float(finite.min())) if finite.size else 0.5
    high = max(1.5, float(finite.max())) if finite.size else 1.5
    figure = _new_figure(7.5, max(2.6, 1.4 + 0.2 * len(rows)))
    ax = figure.subplots()
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="RdBu", aspect="auto",
                      norm=TwoSlopeNorm(vcenter=1.0, vmin=low, vmax=high))
    figure.colorbar(image, ax=ax, label="phase / first phase")
    ax.set_xticks(range(len(sizes)), [_size_label(s) for s in sizes], rotation=45,
                  fontsize=7)
    ax.set_yticks(range(len(rows)), [f"{a} {k}" for a, k in rows], fontsize=6)
    ax.set_xlabel("message size")
    ax.set_title(f"dense patterns, phase bandwidth: {title}", fontsize=9)
    caption = (f"{title}: mean bandwidth per rank of every phase of every algorithm, "
               f"relative to the algorithm's first phase at the same size (below 1: the "
               f"study's drop in the middle phases); {result.parameters.get('ranks')} "
               f"ranks. Status {result.status}.")
    return figure, caption, {"phases": str(len(rows))}


