"""The reference file that `fabricsuite baseline` writes: its proposals merged into the YAML file.

The file is updated in place under an exclusive lock (a read-modify-write by two baselines at
once loses neither), with a round-trip YAML library so that hand-written comments stay, after a
dated backup of the previous version; every file is written atomically. Other checks,
partitions and comments in the file are kept; `_provenance`, `_statistics`, `_recorded_only`,
`_machine` and `_waivers` say where its figures came from.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

from fabricsuite.base.formats import iso_utc
from fabricsuite.base.metrics import DEFAULT_FLOOR, filled_levels
from fabricsuite.commands.baseline import (
    MIN_SESSIONS,
    NOISE_WIDTHS,
    WORST_MARGIN,
    BaselineError,
    Samples,
    diff_lines,
    propose,
)
from fabricsuite.data.store import locked, write_atomically


def _flow(items: list[Any]) -> CommentedSeq:
    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def _set_list(mapping: CommentedMap, key: str, items: list[Any]) -> None:
    """Set mapping[key] to a flow list, in place when one is there (its comments stay)."""
    old = mapping.get(key)
    if isinstance(old, list) and list(old) == items:
        return
    if isinstance(old, CommentedSeq):
        old[:] = items
    else:
        mapping[key] = _flow(items)


def _child(mapping: CommentedMap, key: str) -> CommentedMap:
    node = mapping.get(key)
    if not isinstance(node, dict):
        node = mapping[key] = CommentedMap()
    return node


def build_reference(samples: list[Samples], sources: list[Path],
                    existing: CommentedMap | None = None,
                    min_sessions: int = MIN_SESSIONS) -> tuple[CommentedMap, list[str]]:
    """Merge proposals into `existing` in place (other checks, partitions and comments kept).

    Every sample must have a direction (see `usable`). Returns (data, notes).
    """
    data = existing if existing is not None else CommentedMap()
    notes = []
    old_provenance = data.get("_provenance")
    if not isinstance(old_provenance, dict):
        old_provenance = {}
    recorded_only = data.get("_recorded_only")
    if not isinstance(recorded_only, dict):
        recorded_only = CommentedMap()
    reports = sorted(set(old_provenance.get("reports") or []) | {p.name for p in sources})
    runs_per_var = []
    order = sorted(samples, key=lambda s: (s.check, s.partition, s.environ, s.levels, s.variable))
    fields_of: dict[str, set[str]] = {}
    for s in order:
        fields_of.setdefault(s.check, set()).update(f for f, _ in s.levels)
    for s in order:
        entry = _child(data, s.check)
        # One level per index field the check has (distance, scale) below the environment; a
        # level left out of a key at its default (memory "host") is written where another
        # figure of the check has it.
        levels = filled_levels(s.levels, fields_of[s.check])
        _set_list(entry, "$index", ["$partition", "$environ"] + [f for f, _ in levels])
        ref, note, stats = propose(s)
        _child(data, "_statistics")[s.key] = stats
        scope = _child(_child(entry, s.partition), s.environ)
        for _field, value in levels:
            scope = _child(scope, value)
        dotted = ".".join([s.check, s.partition, s.environ, *[v for _, v in levels],
                           s.variable])
        recorded_only.pop(dotted, None)
        if note:
            # Too noisy to catch 2x: recorded (shown, trended), never judged; a bound that
            # cannot fail would only pretend to judge.
            ref = [ref[0], None, None, ref[3]]
            notes.append(f"{s.key}: {note}; recorded only")
            recorded_only[dotted] = f"recorded only: {note}"
        _set_list(scope, s.variable, ref)
        runs_per_var.append(len(s.values))
    provenance = data.get("_provenance")
    if not isinstance(provenance, CommentedMap):
        provenance = data["_provenance"] = CommentedMap()
    provenance.update({
        "produced_by": "fabricsuite baseline",
        "date_utc": iso_utc(),
        "runs_per_variable": f"{min(runs_per_var, default=0)}..{max(runs_per_var, default=0)}",
        "reports": reports,
        "rule": f"healthy runs only, from {min_sessions} sessions or more; median; bound on "
                f"the bad side of the variable's direction "
                f"(perf_directions) = max(partition floor (extras.tolerance_floor, default "
                f"{DEFAULT_FLOOR}), {NOISE_WIDTHS} x robust spread, {WORST_MARGIN} x worst "
                f"deviation); equal: a count the seen range +-1, a sweep size "
                f"(perf_size_steps) one step beyond the seen range, else the same bound on both "
                f"sides; a bound that cannot catch a 2x slowdown is not written: the variable "
                f"is recorded only (_recorded_only, no bounds); per variable in _statistics",
    })
    provenance.pop("too_noisy_to_catch_2x", None)  # older files: now _recorded_only
    if recorded_only:
        data["_recorded_only"] = CommentedMap(sorted(recorded_only.items()))
    else:
        data.pop("_recorded_only", None)
    return data, notes


HEADER = """\
# Reference values per partition, programming environment and topology distance (point-to-point
# checks) or scale, nodes x ranks per node (multi-rank checks), read by ReFrame 4.10 as external
# references ($ref). Each entry: [value, lower, upper, unit]; bounds are fractions, null = none
# (only for a variable listed in _recorded_only: shown, never judged).
# Produced by `fabricsuite baseline` from stored runs (see _provenance); edit with care.
"""


def update_file(path: Path, samples: list[Samples], sources: list[Path], min_sessions: int, *,
                dry_run: bool = False, machine: dict[str, Any] | None = None,
                show_changes: Any = None,
                waiver: dict[str, Any] | None = None) -> tuple[str, Path | None, list[str]]:
    """Merge the references of `samples` into the file at `path` under its lock (created with
    its directory when missing): (new text, backup of the old version or None, notes).
    `show_changes(lines)` sees the changes before anything is written; `dry_run` writes
    nothing; `machine` (the embedded default's fingerprint) is recorded as `_machine`;
    `waiver` (its reason, date and the promise's misses it waives) is appended to `_waivers`."""
    from fabricsuite.data.references import ReferenceFileError, load_file

    if not dry_run:
        path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        if not dry_run:
            stack.enter_context(locked(path))
        existing = None
        if path.exists():
            try:
                # validate: one message naming the entry and the fix (a file of an older
                # version without its owner gets `machine` now)
                load_file(path, owner_required=not machine)
            except ReferenceFileError as err:
                raise BaselineError(str(err)) from None
            existing = load_roundtrip(path)
        if show_changes is not None:
            show_changes(diff_lines(samples, existing))
        data, notes = build_reference(samples, sources, existing, min_sessions)
        if machine:
            data["_machine"] = CommentedMap(machine)
        if waiver:
            waivers = data.get("_waivers")
            if not isinstance(waivers, CommentedSeq):
                waivers = data["_waivers"] = CommentedSeq()
            waivers.append(CommentedMap(waiver))
        text = dump(data, "" if existing is not None else HEADER)
        saved = None if dry_run else write_atomically(path, text)
    return text, saved, notes


def _yaml() -> YAML:
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 100
    y.indent(mapping=2, sequence=4, offset=2)
    y.representer.add_representer(
        type(None), lambda r, _d: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    return y


def load_roundtrip(path: Path) -> CommentedMap:
    """The reference file as a round-trip mapping (comments kept); validate it first."""
    try:
        data = _yaml().load(path.read_text())
    except YAMLError as err:
        problem = getattr(err, "problem", None) or str(err).strip().split("\n")[0]
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise BaselineError(f"{path}: {problem}{where}; fix the file or restore it from a backup "
                            f"or from git") from None
    if not isinstance(data, CommentedMap):
        raise BaselineError(f"{path}: expected a mapping of check class names to references")
    return data


def dump(data: CommentedMap, header: str = "") -> str:
    out = io.StringIO()
    _yaml().dump(data, out)
    return header + out.getvalue()
