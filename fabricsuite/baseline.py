"""Derive reference values from stored ReFrame run reports.

For every (check, partition, environment, variable) seen in the given reports, the reference is
the median over the runs, and the bound on the bad side is sized from the spread seen:

    bound = clamp(margin x worst relative deviation on the bad side, floor, cap)

Latency-like variables (lower is better) get an upper bound, bandwidth-like ones (unit MB/s) a
lower bound. The caps (+70 %, -45 %) keep every bound tight enough to catch a 2x slowdown; the
floors equal the caps because five runs on a shared VM under-sample its noise (shared-memory
bandwidth moves by a third between sessions). A
variable whose noise alone exceeds the cap gets a bound that covers it (NOISY_MARGIN x the worst
deviation) and is listed in `_provenance.too_noisy_to_catch_2x`: a reference that fails healthy
runs is worse than one that says openly what it cannot catch.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

#: How much wider than the worst deviation seen the bound is.
MARGIN = 2.0
LATENCY_FLOOR, LATENCY_CAP = 0.70, 0.70  # upper bounds for lower-is-better variables
BANDWIDTH_FLOOR, BANDWIDTH_CAP = 0.45, 0.45  # lower bounds (as -x) for MB/s variables
HIGHER_IS_BETTER_UNITS = {"MB/s", "ratio"}
COUNT_UNITS = {"ranges"}
NOISY_MARGIN = 1.25
#: Check variables that are reference index levels below the environment, outermost first.
INDEX_FIELDS = ("distance", "scale")


@dataclass
class Samples:
    check: str
    partition: str
    environ: str
    variable: str
    unit: str
    values: list[float]
    #: Index levels below the environment: ("distance", "same-l3") for the point-to-point
    #: checks, ("scale", "1x2") for the multi-rank ones; empty for a check without them.
    levels: tuple[tuple[str, str], ...] = ()


def read_reports(paths: list[Path]) -> list[Samples]:
    """Collect passed and failed-performance samples per variable from run report files."""
    table: dict[tuple[str, str, str, tuple, str], Samples] = {}
    for path in paths:
        try:
            report = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"{path}: not a readable ReFrame run report ({err})") from None
        for run in report.get("runs", []):
            for case in run.get("testcases", []):
                # A sanity failure gives no sound figure; a performance failure still does.
                if case.get("result") not in ("pass", "fail") or case.get("fail_phase") not in (
                    None, "performance"
                ):
                    continue
                check = case.get("name", "").split(" ")[0].split("%")[0]
                partition = f"{case.get('system')}:{case.get('partition')}"
                environ = case.get("environ")
                levels = tuple((f, str(case[f])) for f in INDEX_FIELDS if case.get(f))
                for key, perf in (case.get("perfvalues") or {}).items():
                    variable = key.split(":")[-1]
                    value, unit = perf[0], perf[4]
                    if value is None or not math.isfinite(value):
                        continue
                    k = (check, partition, environ, levels, variable)
                    table.setdefault(
                        k, Samples(check, partition, environ, variable, unit, [], levels)
                    )
                    table[k].values.append(float(value))
    return list(table.values())


def propose(samples: Samples) -> tuple[list[Any], str | None]:
    """The reference tuple for one variable and, if the noise exceeds the cap, a note."""
    values = samples.values
    median = statistics.median(values)
    unit = samples.unit
    if unit in COUNT_UNITS:
        low, high = min(values), max(values)
        # Allow one more or one fewer than seen.
        lower = (low - 1 - median) / median if median else None
        upper = (high + 1 - median) / median if median else None
        return [median, round(lower, 3), round(upper, 3), unit], None
    note = None
    if unit in HIGHER_IS_BETTER_UNITS:
        worst = max((median - v) / median for v in values) if median > 0 else 0.0
        bound = max(BANDWIDTH_FLOOR, MARGIN * worst)
        if bound > BANDWIDTH_CAP:
            bound = BANDWIDTH_CAP
            if worst > BANDWIDTH_CAP * 0.9:
                bound = min(0.95, NOISY_MARGIN * worst)
                note = (f"too noisy to catch 2x: runs fell {worst:.0%} below the median; "
                        f"bound -{bound:.0%}")
        return [_round(median), -round(bound, 3), None, unit], note
    worst = max((v - median) / median for v in values) if median > 0 else 0.0
    bound = max(LATENCY_FLOOR, MARGIN * worst)
    if bound > LATENCY_CAP:
        bound = LATENCY_CAP
        if worst > LATENCY_CAP * 0.9:
            bound = NOISY_MARGIN * worst
            note = (f"too noisy to catch 2x: runs rose {worst:.0%} above the median; "
                    f"bound +{bound:.0%}")
    return [_round(median), None, round(bound, 3), unit], note


def _round(value: float) -> float:
    if value == 0:
        return 0.0
    digits = 4 - int(math.floor(math.log10(abs(value))))
    return round(value, max(digits, 0))


def build_reference(samples: list[Samples], sources: list[Path],
                    existing: dict[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """Merge proposals into `existing` (other checks/partitions kept); returns (data, notes)."""
    data: dict[str, Any] = dict(existing or {})
    notes = []
    old_provenance = data.get("_provenance") or {}
    old_noisy = set(old_provenance.get("too_noisy_to_catch_2x") or [])
    reports = sorted(set(old_provenance.get("reports") or []) | {p.name for p in sources})
    runs_per_var = []
    order = sorted(samples, key=lambda s: (s.check, s.partition, s.environ, s.levels, s.variable))
    for s in order:
        entry = data.setdefault(s.check, {})
        # One level per index field the check has (distance, scale) below the environment.
        entry["$index"] = ["$partition", "$environ"] + [field for field, _ in s.levels]
        ref, note = propose(s)
        scope = entry.setdefault(s.partition, {}).setdefault(s.environ, {})
        for _field, value in s.levels:
            scope = scope.setdefault(value, {})
        scope[s.variable] = ref
        runs_per_var.append(len(s.values))
        where = " ".join([s.environ] + [value for _, value in s.levels])
        key = f"{s.check} {s.partition} {where} {s.variable}"
        old_noisy.discard(key)
        if note:
            notes.append(f"{key}: {note}")
            old_noisy.add(key)
    data["_provenance"] = {
        "produced_by": "fabricsuite baseline",
        "date_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runs_per_variable": f"{min(runs_per_var, default=0)}..{max(runs_per_var, default=0)}",
        "reports": reports,
        "rule": f"median; bound = clamp({MARGIN} x worst deviation, floor, cap): latency-like "
                f"+{LATENCY_FLOOR}..+{LATENCY_CAP}, MB/s -{BANDWIDTH_FLOOR}..-{BANDWIDTH_CAP}; "
                f"noisier than the cap: {NOISY_MARGIN} x worst deviation",
        "too_noisy_to_catch_2x": sorted(old_noisy),
    }
    return data, notes


def write_atomically(path: Path, data: dict[str, Any], header: str = "") -> Path | None:
    """Write YAML via a temporary file and rename; an existing file is kept as <name>.bak."""
    backup = None
    text = header + yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text)
        if path.exists():
            backup = path.with_name(path.name + ".bak")
            shutil.copy2(path, backup)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return backup
