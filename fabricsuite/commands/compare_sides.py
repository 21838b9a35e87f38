"""The two sets `fabricsuite compare` compares: each chosen by start time, session uuid, tag or
report files (`Selection`), read once from ReFrame's results database or from the files, checked
(disjoint, of the system, with figures) and turned into `history.collect`'s series (`Side`).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricsuite.base.commandline import UsageError, results_dir
from fabricsuite.base.formats import iso_utc, shown_utc
from fabricsuite.commands.history import Series, collect
from fabricsuite.data.store import (
    StoreError,
    has_tag,
    parse_since,
    report_files,
    session_extras,
    stored_sessions,
)

SIDES = ("before", "after")
#: A session uuid or its start, as --before-session/--after-session take it.
_UUID_PREFIX = re.compile(r"^[0-9a-fA-F][0-9a-fA-F-]{0,35}$")


class CompareError(UsageError):
    """Bad input: one line that names the fix."""


def _info(session: Any, where: str) -> dict[str, Any]:
    info = session.get("session_info") if isinstance(session, dict) else None
    if not isinstance(info, dict) or not isinstance(session.get("runs"), list) \
            or not info.get("uuid"):
        raise CompareError(f"{where} is not a ReFrame run report (no session_info with a uuid, "
                           f"or no runs); pass run reports written by ReFrame 4.10")
    return info


def _start(info: dict[str, Any]) -> float | None:
    start = info.get("time_start_unix")
    return float(start) if isinstance(start, (int, float)) and not isinstance(start, bool) \
        else None


def _when(ts: float | None) -> str:
    if ts is None:
        return "?"
    return shown_utc(ts)


def _iso_or_unknown(ts: float | None) -> str:
    return "?" if ts is None else iso_utc(ts)


def _span(infos: list[dict[str, Any]]) -> str:
    starts = sorted(t for t in map(_start, infos) if t is not None)
    if not starts:
        return "no start times"
    return _when(starts[0]) if len(starts) == 1 else f"{_when(starts[0])} .. {_when(starts[-1])}"


@dataclass
class Selection:
    """How one set (before or after) is chosen; every selector given must hold."""

    side: str
    since: float | None = None
    until: float | None = None
    uuids: tuple[str, ...] = ()
    tag: str | None = None
    reports: tuple[Path, ...] = ()
    #: The selectors as given, for messages ("" when all the report files are the set).
    text: str = ""

    @classmethod
    def from_args(cls, args: Any, side: str) -> Selection:
        def opt(name: str) -> Any:
            return getattr(args, f"{side}_{name}", None)

        words = []
        bounds: dict[str, float] = {}
        for name in ("since", "until"):
            text = opt(name)
            if text is None:
                continue
            words.append(f"--{side}-{name} {text}")
            try:
                bounds[name] = parse_since(text)
            except StoreError:
                raise CompareError(f"--{side}-{name} {text!r} is no date; give e.g. "
                                   f"2026-11-23, 2026-11-23T20:00 (UTC), 20261123T2000 or "
                                   f"now-7d") from None
        if "since" in bounds and "until" in bounds and bounds["since"] >= bounds["until"]:
            raise CompareError(f"--{side}-since {opt('since')} is not before --{side}-until "
                               f"{opt('until')}: the {side} set would be empty; swap or "
                               f"widen them")
        uuids = tuple(opt("session") or ())
        for u in uuids:
            if not _UUID_PREFIX.match(u):
                raise CompareError(f"--{side}-session {u!r} is no session uuid (or its start): "
                                   f"hex digits and '-', e.g. 6f094fe9")
        if uuids:
            words.append(f"--{side}-session {' '.join(uuids)}")
        tag = opt("tag")
        if tag is not None:
            if not tag:
                raise CompareError(f"--{side}-tag is empty; give the tag the sessions were run "
                                   f"with (reframe --session-extras tag=NAME)")
            words.append(f"--{side}-tag {tag}")
        reports = tuple(Path(p) for p in opt("reports") or ())
        if not words and not reports:
            raise CompareError(f"no {side} set given: select it with --{side}-tag, "
                               f"--{side}-session, --{side}-since/--{side}-until or "
                               f"--{side}-reports")
        return cls(side, bounds.get("since"), bounds.get("until"), uuids, tag, reports,
                   " ".join(words))

    def choose(self, candidates: list[dict[str, Any]], where: str) -> list[dict[str, Any]]:
        """The candidate sessions that match; an empty or ambiguous choice is a CompareError
        that says what `where` (the candidates' source) holds."""
        infos = [_info(s, f"a session {where}") for s in candidates]
        chosen = list(range(len(candidates)))
        if self.uuids:
            wanted = set()
            for prefix in self.uuids:
                hits = [i for i, info in enumerate(infos)
                        if str(info["uuid"]).lower().startswith(prefix.lower())]
                if not hits:
                    raise CompareError(
                        f"--{self.side}-session {prefix}: no session uuid starts with it among "
                        f"the {len(infos)} session(s) {where} ({_span(infos)}); check the uuid "
                        f"(reframe --list-stored-sessions)")
                if len({infos[i]['uuid'] for i in hits}) > 1:
                    names = ", ".join(sorted({str(infos[i]['uuid'])[:8] for i in hits})[:5])
                    raise CompareError(f"--{self.side}-session {prefix} matches "
                                       f"{len(hits)} sessions ({names}); give more of the uuid")
                wanted.update(hits)
            chosen = [i for i in chosen if i in wanted]
        if self.since is not None or self.until is not None:
            lo = -math.inf if self.since is None else self.since
            hi = math.inf if self.until is None else self.until
            chosen = [i for i in chosen
                      if (t := _start(infos[i])) is not None and lo <= t < hi]
        if self.tag is not None:
            chosen = [i for i in chosen if has_tag(infos[i], self.tag)]
        if not chosen:
            raise CompareError(f"the {self.side} set is empty: none of the {len(infos)} "
                               f"session(s) {where} ({_span(infos)}) matches {self.text}; "
                               f"{_found_extras(infos)}")
        chosen.sort(key=lambda i: (_start(infos[i]) or 0.0, str(infos[i]["uuid"])))
        seen: dict[str, int] = {}
        for i in chosen:
            uuid = str(infos[i]["uuid"])
            if uuid in seen:
                raise CompareError(f"session {uuid[:8]} is given twice in the {self.side} set "
                                   f"(--{self.side}-reports); give each run report once")
            seen[uuid] = i
        return [candidates[i] for i in chosen]


def _found_extras(infos: list[dict[str, Any]]) -> str:
    counts = Counter(f"{k}={v}" for info in infos for k, v in session_extras(info).items())
    if not counts:
        return ("they have no session extras (tag a run with reframe --session-extras "
                "tag=NAME)")
    shown = ", ".join(f"{kv} ({n})" for kv, n in sorted(counts.items())[:6])
    more = f" and {len(counts) - 6} more" if len(counts) > 6 else ""
    return f"session extras found: {shown}{more}"


def _systems(sessions: list[dict[str, Any]]) -> str:
    names = sorted({str(c.get("system")) for s in sessions for run in s.get("runs") or []
                    if isinstance(run, dict) for c in run.get("testcases") or []
                    if isinstance(c, dict) and c.get("system")})
    return ", ".join(names) if names else "none"


@dataclass
class Side:
    """One selected set."""

    selection: Selection
    sessions: list[dict[str, Any]]
    #: Where the sessions came from: the database or the report files.
    source: str
    series: list[Series]

    def describe(self) -> str:
        infos = [s["session_info"] for s in self.sessions]
        chosen_by = f", {self.selection.text}" if self.selection.text else ""
        return f"{len(self.sessions)} session(s) {_span(infos)} from {self.source}{chosen_by}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "selection": self.selection.text,
            "source": self.source,
            "sessions": [{"uuid": s["session_info"]["uuid"],
                          "time_start": _iso_or_unknown(_start(s["session_info"])),
                          "extras": session_extras(s["session_info"])}
                         for s in self.sessions],
        }


def select_sides(args: Any, system: str, variable: re.Pattern | None) -> tuple[Side, Side]:
    """Both sets, read and checked (module docstring); CompareError/StoreError otherwise."""
    selections = [Selection.from_args(args, side) for side in SIDES]
    from_db = [s for s in selections if not s.reports]
    stored: list[dict[str, Any]] = []
    db_source = ""
    if from_db:
        db = results_dir(args) / "results.db"
        if not db.is_file():
            raise CompareError(f"no results database {db}: set --results or "
                               f"FABRICSUITE_RESULTS to the results directory, or give "
                               f"--before-reports/--after-reports")
        # One read of the database: from the earliest start any set asks for (all if one
        # set has no start); each set is then chosen among these.
        since = None
        if all(s.since is not None for s in from_db):
            since = min(s.since for s in from_db)
        stored = stored_sessions(db, since)
        db_source = str(db) + (f" since {_when(since)}" if since is not None else "")
    sides = []
    for sel in selections:
        if sel.reports:
            files = report_files(list(sel.reports), read_once=False)  # copies are refused
            for path, session in files:
                _info(session, str(path))
            candidates = [session for _, session in files]
            source = f"{len(sel.reports)} run report file(s)"
            chosen = sel.choose(candidates, f"in the --{sel.side}-reports files")
        else:
            candidates, source = stored, db_source
            chosen = sel.choose(candidates, f"stored in {source}")
        sides.append(Side(sel, chosen, source, []))
    before, after = sides
    shared = ({s["session_info"]["uuid"] for s in before.sessions}
              & {s["session_info"]["uuid"] for s in after.sessions})
    if shared:
        names = ", ".join(sorted(u[:8] for u in shared)[:5])
        raise CompareError(f"{len(shared)} session(s) ({names}) are in both the before and the "
                           f"after set; make the selections disjoint (e.g. --before-until "
                           f"DATE --after-since DATE)")
    counts = []
    for side in sides:
        side.series, n = collect(side.sessions, system, variable=variable,
                                 results=results_dir(args), rejudge=args.rejudge)
        counts.append(n)
    if not any(counts):
        raise CompareError(f"no test case of system {system!r} in the selected sessions "
                           f"(systems in them: {_systems(before.sessions + after.sessions)}); "
                           f"check --system")
    for side, n in zip(sides, counts, strict=True):
        if not n:
            raise CompareError(f"the {side.selection.side} set's {len(side.sessions)} "
                               f"session(s) hold no test case of system {system!r} (systems "
                               f"in them: {_systems(side.sessions)}); check the selection")
    if not before.series and not after.series:
        raise CompareError(f"the selected sessions hold no performance figures of system "
                           f"{system!r}" + (" of a variable matching --variable"
                                            if variable else ""))
    return before, after
