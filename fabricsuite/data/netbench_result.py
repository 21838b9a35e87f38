"""Read netbench results (docs/output-format.md) and check that they are sound.

Both renderings are read into the same `NetbenchResult`: the JSON file the checks use, and the
human format a person pastes from a job's output. Every problem raises `ResultError` with one
message that says what is wrong and where.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricsuite.base.readout import Readout
from fabricsuite.data.declarations import signed_figures

FORMAT_NAME = "netbench-result"
SUPPORTED_FORMAT_VERSIONS = (1,)


class ResultError(ValueError):
    """A netbench result is missing, truncated, of an unknown format or not sound."""


@dataclass
class NetbenchResult(Readout):
    method: str
    version: str
    mpi_library: str
    ranks: list[dict[str, Any]]
    parameters: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]]
    summary: dict[str, Any]
    warnings: list[str] = field(default_factory=list)
    unreliable: list[dict[str, str]] = field(default_factory=list)
    status: str = "ok"
    source: str = "<memory>"
    #: The limits of the cores measured in the same job (`netbench limits`, the check's
    #: prologue: fabricsuite.data.limits), which the efficiency figures divide by; None without one.
    limits: NetbenchResult | None = None

    # -- lookups (fabricsuite.base.readout: table, row, value) -------------------------------------
    lookup_error = ResultError

    def readout_tables(self) -> dict[str, list[dict[str, Any]]]:
        return self.tables

    def readout_summary(self) -> dict[str, Any]:
        return self.summary

    def unsound_reason(self) -> str:
        return "; ".join(u.get("reason", "") for u in self.unreliable) or "no reason given"

    def column(self, table: str, column: str) -> list[Any]:
        return [r.get(column) for r in self.table(table)]

    # -- soundness -----------------------------------------------------------------------------
    def problems(self, required_sizes: list[int] | None = None,
                 size_table: str | None = None,
                 tolerated: Callable[[str], bool] | None = None,
                 timed: bool = True) -> list[str]:
        """Everything that makes this result unusable for a verdict (empty when sound).

        `tolerated(quantity)` exempts unreliable flags on figures the verdict does not use.
        `timed=False` (a validation run) accepts ranks that share a CPU: nothing is timed.
        """
        problems = []
        flagged = [u for u in self.unreliable
                   if tolerated is None or not tolerated(u.get("quantity", ""))]
        if flagged or (self.status != "ok" and not self.unreliable):
            for entry in flagged or [{"quantity": "?", "reason": f"status {self.status}"}]:
                problems.append(
                    f"netbench flagged {entry.get('quantity', '?')} as unreliable: "
                    f"{entry.get('reason', '')}"
                )
        for name, rows in self.tables.items():
            for row in rows:
                for key, val in row.items():
                    if isinstance(val, float) and not math.isfinite(val):
                        problems.append(f"table {name}: {key}={val} in row {row}")
        if required_sizes is not None and size_table is not None:
            present = {r.get("size_bytes") for r in self.tables.get(size_table, [])}
            missing = [s for s in required_sizes if s not in present]
            if missing:
                problems.append(f"table {size_table}: sizes missing: {missing}")
        shared = shared_cpus(self.ranks[:2]) if timed else None
        if shared:
            problems.append(shared)
        return problems


def shared_cpus(ranks: list[dict[str, Any]]) -> str | None:
    """The first two ranks (`rank`, `host`, `cpus_bound`) on one host whose CPUs overlap, as a
    problem, or None: busy-polling ranks on one core distort every timing (an unbound rank may
    run on all CPUs, so it overlaps too). Also for the external suites' jobs."""
    seen: dict[str, list[dict[str, Any]]] = {}
    for rank in ranks:
        cpus = set(rank.get("cpus_bound") or ())
        for other in seen.get(str(rank.get("host")), []):
            common = cpus & set(other.get("cpus_bound") or ())
            if common:
                return (f"ranks {other.get('rank')} and {rank.get('rank')} on {rank.get('host')} "
                        f"share CPUs {sorted(common)}: bind them to different cores "
                        f"(busy-polling ranks on one core distort timings)")
        seen.setdefault(str(rank.get("host")), []).append(rank)
    return None


# -- loading ---------------------------------------------------------------------------------------
def load(path: str | Path) -> NetbenchResult:
    """Read a result file, JSON or human format (detected from its first character)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ResultError(
            f"{path}: no netbench result file; did netbench run (see the job's stderr)?"
        ) from None
    if text.lstrip().startswith("{"):
        return parse_json(text, source=str(path))
    return parse_human(text, source=str(path))


def parse_json(text: str, source: str = "<json>") -> NetbenchResult:
    if not text.strip():
        raise ResultError(f"{source}: empty result (netbench did not finish?)")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ResultError(
            f"{source}: not valid JSON at line {err.lineno} column {err.colno} "
            f"({err.msg}); the file is truncated or not netbench output"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise ResultError(f"{source}: not a netbench result (no \"format\": \"{FORMAT_NAME}\")")
    if doc.get("format_version") not in SUPPORTED_FORMAT_VERSIONS:
        raise ResultError(
            f"{source}: format_version {doc.get('format_version')!r} is not supported by this "
            f"fabricsuite (supported: {SUPPORTED_FORMAT_VERSIONS}); update fabricsuite"
        )
    for key in ("method", "tables", "summary", "status", "ranks"):
        if key not in doc:
            raise ResultError(f"{source}: result has no {key!r} (truncated?)")
    for key, kind, example in (("tables", dict, '{"pingpong": [...]}'),
                               ("summary", dict, '{"g_us": 0.3}'),
                               ("ranks", list, '[{"rank": 0, ...}]')):
        if not isinstance(doc[key], kind):
            raise ResultError(
                f"{source}: {key!r} is a {type(doc[key]).__name__}, not a JSON "
                f"{'object' if kind is dict else 'array'} such as {example}; not netbench output"
            )
    for name, rows in doc["tables"].items():
        if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
            raise ResultError(
                f"{source}: table {name!r} is not a list of row objects; not netbench output"
            )
    _check_figures(doc["method"], doc["tables"], doc["summary"], source)
    return NetbenchResult(
        method=doc["method"],
        version=str(doc.get("version", "")),
        mpi_library=str((doc.get("mpi") or {}).get("library", "")),
        ranks=list(doc["ranks"]),
        parameters=dict(doc.get("parameters") or {}),
        tables={k: list(v) for k, v in doc["tables"].items()},
        summary=dict(doc["summary"]),
        warnings=list(doc.get("warnings") or []),
        unreliable=list(doc.get("unreliable") or []),
        status=doc["status"],
        source=source,
    )


def _check_figures(method: str, tables: dict[str, list[dict[str, Any]]],
                   summary: dict[str, Any], source: str) -> None:
    """Every figure of format version 1 (times, bandwidths, sizes, counts, ratios, indices) is
    non-negative: netbench reports a quantity it measured below zero as null with an
    `unreliable` entry (docs/output-format.md). A negative number is a corrupt or forged file,
    except in a column the method declares signed (NB_SIGNED: loggp's split_bic_gain)."""
    signed = signed_figures(method)
    places = [(name, f"table {name} row {index} ({_row_label(row)}):", row)
              for name, rows in tables.items() for index, row in enumerate(rows)]
    for table, where, figures in [*places, (None, "summary", summary)]:
        for key, val in figures.items():
            if _negative(val) and (table, key) not in signed:
                raise ResultError(
                    f"{source}: {where} {key}={val} is negative; netbench never reports a "
                    "negative figure (a quantity measured below zero is null and unreliable): "
                    "the file is corrupt"
                )


def _negative(val: Any) -> bool:
    return isinstance(val, (int, float)) and not isinstance(val, bool) and val < 0


def _row_label(row: dict[str, Any]) -> str:
    keys = [k for k in ("algorithm", "collective", "pattern", "side", "size_bytes") if k in row]
    return ", ".join(f"{k}={row[k]}" for k in keys) or "first column " + next(iter(row), "?")


def _scalar(text: str) -> Any:
    """A human-format field: '-' is null, numbers are numbers, true/false are booleans."""
    if text == "-":
        return None
    if text in ("true", "false"):
        return text == "true"
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def cpu_list(text: str) -> list[int]:
    """CPU numbers of a Linux list such as "0-3,8"."""
    cpus: list[int] = []
    for part in text.split(","):
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return cpus


def parse_human(text: str, source: str = "<text>") -> NetbenchResult:
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# netbench "):
        raise ResultError(f"{source}: not netbench output (no '# netbench' header line)")
    head = lines[0].split()
    version, method = (head[2], head[3]) if len(head) >= 4 else ("", "")
    mpi_library = ""
    ranks: list[dict[str, Any]] = []
    parameters: dict[str, Any] = {}
    tables: dict[str, list[dict[str, Any]]] = {}
    summary: dict[str, Any] = {}
    warnings: list[str] = []
    unreliable: list[dict[str, str]] = []
    status = None
    current_table: str | None = None
    columns: list[str] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        if line.startswith("# "):
            body = line[2:]
            if body.startswith("mpi: "):
                mpi_library = body[5:]
            elif body.startswith("rank "):
                label, _, fields = body.partition(": ")
                rank: dict[str, Any] = {"rank": int(label.split()[1])}
                for item in fields.split():
                    key, _, val = item.partition("=")
                    rank[key] = cpu_list(val) if key == "cpus_bound" else _scalar(val)
                ranks.append(rank)
            elif body.startswith("parameter "):
                key, _, val = body[len("parameter "):].partition("=")
                items = [_scalar(v) for v in val.split(",")]
                # A comma list of numbers is an integer-list parameter; text (e.g. the
                # `algorithms` names) stays the string it is in JSON.
                numeric = all(isinstance(v, (int, float)) for v in items)
                parameters[key] = items if "," in val and numeric else _scalar(val)
            elif body.startswith("table "):
                current_table = body[len("table "):].strip()
                tables[current_table] = []
                columns = []
            elif body.startswith("columns "):
                columns = body.split()[1:]
            elif body.startswith("summary "):
                for item in body[len("summary "):].split():
                    key, _, val = item.partition("=")
                    summary[key] = _scalar(val)
            elif body.startswith("warning: "):
                warnings.append(body[len("warning: "):])
            elif body.startswith("unreliable: "):
                quantity, _, reason = body[len("unreliable: "):].partition(": ")
                unreliable.append({"quantity": quantity, "reason": reason})
            elif body.startswith("status: "):
                status = body[len("status: "):].strip()
            continue
        if current_table is None or not columns:
            raise ResultError(f"{source}:{number}: data row before any '# table'/'# columns' line")
        fields = line.split()
        if len(fields) != len(columns):
            raise ResultError(
                f"{source}:{number}: {len(fields)} fields, but table {current_table} has "
                f"{len(columns)} columns (truncated line?)"
            )
        tables[current_table].append(dict(zip(columns, map(_scalar, fields), strict=True)))
    if status is None:
        raise ResultError(f"{source}: no '# status:' line; the output is truncated")
    _check_figures(method, tables, summary, source)
    return NetbenchResult(
        method=method, version=version, mpi_library=mpi_library, ranks=ranks,
        parameters=parameters, tables=tables, summary=summary, warnings=warnings,
        unreliable=unreliable, status=status, source=source,
    )
