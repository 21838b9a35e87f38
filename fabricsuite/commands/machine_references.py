"""The embedded default's first sessions on a machine: recorded, then its own references taken.

`ci/run-local.sh` (through `python -m fabricsuite.commands.session --take-references`) calls
`take_references` after every session of `local`. A machine without references of its own of a
case is measured and recorded (fabricsuite.data.machine); once SESSIONS_FOR_REFERENCES separate
sessions hold quiet runs of a case, its references are written into the machine's file with
`fabricsuite baseline`'s rule. A run disturbed by another process on its cores is never a
sample (fabricsuite.data.cases): it is set aside, counted and named ("2 of 5 sessions set aside for
...: disturbed by f951, python"), and the references wait for enough quiet sessions. A session
confirmed beyond the physics floors of its efficiencies (fabricsuite.data.limits) records nothing
(machine.recorded_sessions).
"""

from __future__ import annotations

from pathlib import Path

from fabricsuite.commands import baseline, reference_file
from fabricsuite.data.cases import unjudged
from fabricsuite.data.machine import (
    LOCAL_SYSTEM,
    SESSIONS_FOR_REFERENCES,
    kind_regressions,
    own_runs,
    quiet_sessions,
    recorded_sessions,
    reference_path,
)


def take_references(report: dict, reports_dir: Path, reference_dir: Path) -> list[str]:
    """After a session of the embedded default: the lines that say what was recorded, and,
    once SESSIONS_FOR_REFERENCES sessions hold quiet runs of a case, its references written
    into the machine's file under `reference_dir`. Nothing when the session judged every
    case."""
    keys = {c.get("machine") for run in report.get("runs", []) for c in run.get("testcases", [])
            if c.get("system") == LOCAL_SYSTEM and unjudged(c)}
    lines = []
    for key in sorted(k for k in keys if k):
        lines += _take_for_machine(str(key), report, reports_dir, reference_dir)
    return lines


def _take_for_machine(key: str, report: dict, reports_dir: Path,
                      reference_dir: Path) -> list[str]:
    descr = next((c.get("machine_descr") for run in report.get("runs", [])
                  for c in run.get("testcases", []) if c.get("machine") == key), key)
    path = reference_path(reference_dir, key)
    sessions = recorded_sessions(reports_dir, key)
    lines = []
    broken = kind_regressions(report)
    if broken:
        lines.append(f"this session is not recorded: {len(broken)} case(s) confirmed beyond "
                     f"what every healthy machine's cores keep (e.g. {broken[0].check} "
                     f"{broken[0].environ}): gross breakage, fix it first")
    # Runs of unjudged cases only: a case already judged keeps its references.
    samples = [{"session_info": data.get("session_info", {}),
                "runs": [{"testcases": own_runs(data, key)}]} for _path, data in sessions]
    paths = [p for p, _report in sessions]
    collected = baseline.collect(samples, paths, LOCAL_SYSTEM)
    set_aside = [f"  {line}" for line in collected.set_aside_lines()]
    n = len(quiet_sessions(sessions, key))
    # a machine whose file holds some cases already: the rest wait
    what = "some cases of this machine" if path.exists() else "this machine"
    if n < SESSIONS_FOR_REFERENCES:
        aside = len(sessions) - n
        return lines + [
            f"no references for {what} yet ({descr}; key {key}): session {n} of "
            f"{SESSIONS_FOR_REFERENCES} recorded" + (
                f" ({aside} more set aside: disturbed)" if aside else "") +
            ", judged only against the limits of its cores (efficiency floors)",
            f"  run the same command again {SESSIONS_FOR_REFERENCES - n} more time(s), best "
            f"hours apart on a quiet machine (figures drift between sessions; bounds must hold "
            f"that drift); the references are then taken into {path} and later runs are "
            f"judged against them",
        ] + set_aside
    if path.exists():
        # Only what the file lacks: a reference once taken is retaken by a person, never here.
        existing = reference_file.load_roundtrip(path)
        collected.samples = [s for s in collected.samples
                             if baseline.old_entry(existing, s) is None]
    usable, notes = baseline.usable(collected.samples, baseline.MIN_RUNS,
                                    SESSIONS_FOR_REFERENCES)
    if not usable:
        return lines + [
            f"no references for some cases of this machine yet ({descr}): recorded, not "
            f"judged; they are taken once {SESSIONS_FOR_REFERENCES} sessions hold quiet runs "
            f"of them" + (f" ({notes[0]})" if notes else "")] + set_aside
    # One run far off the others (a slow phase) would make a variable "recorded only" for good;
    # from baseline.OUTLIER_RUNS_FROM runs on, that one run is set aside, so wait for them.
    outliers = [note for s in usable if (note := baseline.one_run_away(s))]
    if outliers and n < baseline.OUTLIER_RUNS_FROM:
        return lines + [
            f"no references for {what} yet ({descr}): session {n} recorded; one session "
            f"lies far off the others, so the references wait for "
            f"{baseline.OUTLIER_RUNS_FROM} sessions, where a single outlying run is set aside",
            f"  e.g. {outliers[0]}" + (f" (and {len(outliers) - 1} more)" if outliers[1:] else ""),
            f"  run the same command again {baseline.OUTLIER_RUNS_FROM - n} more time(s); "
            f"meanwhile, only the limits of its cores judge (efficiency floors)",
        ] + set_aside
    mpis = sorted({str(c.get("mpi_library")) for s in samples for run in s["runs"]
                   for c in run["testcases"] if c.get("mpi_library")})
    _text, written, _notes = reference_file.update_file(
        path, usable, paths, SESSIONS_FOR_REFERENCES,
        machine={"key": key, "description": descr, "mpi_libraries": mpis})
    span = _span_hours([data for _path, data in sessions])
    recorded = [s for s in usable if baseline.propose(s)[1]]
    lines.append(
        f"references for this machine ({descr}) taken from {n} sessions over "
        f"{span:.1f} h: {len(usable) - len(recorded)} variable(s) judged from the next run on, "
        f"{len(recorded)} recorded only (the machine moves them too much to catch a 2x "
        f"slowdown) -> {path}" + (f" (previous version kept as {written})" if written else ""))
    if span < 1.0:
        lines.append("  the sessions lie less than an hour apart: if later runs fail on a "
                     "machine that drifts, retake them from sessions hours apart (fabricsuite "
                     "baseline --system local REPORTS)")
    lines += set_aside
    lines += [f"  note: {note}" for note in notes]
    return lines


def _span_hours(reports: list[dict]) -> float:
    starts = [r.get("session_info", {}).get("time_start_unix") for r in reports]
    starts = [float(t) for t in starts if isinstance(t, (int, float))]
    return (max(starts) - min(starts)) / 3600.0 if len(starts) > 1 else 0.0
