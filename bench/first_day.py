#!/usr/bin/env python3
"""The README's run command on the first day, session after session (issue 49's acceptance):
does a healthy machine without references of its own exit 0 and record every time, in its
fast and its slow phases?

Each session runs `ci/run-local.sh` (the README's command, unchanged) with a results directory
of its own, so each one is a machine's first day: no references of its own, judged only against
the limits of its cores (the physics floors of fabricsuite.data.limits), the kind's file shown as
information. Between sessions it waits `--gap` seconds, so the sessions sample the host's
phases. Reported per session: the exit status, the outcome line, the wall time, and the 8 B
ping-pong latency of each MPI with its multiple of the cache-line floor (a slow phase of this
VM moves the latency 2-4x; the floor multiple says how far from the 25 x floor it stayed).

    bench/first_day.py --sessions 5 --gap 60 --out /tmp/first-day [--json FILE] [-- REFRAME ARGS]
    bench/first_day.py --sessions 1 --env OMPI_MCA_btl=self,tcp --out /tmp/tcp -- -p openmpi

Extra arguments after `--` go to ci/run-local.sh (e.g. `-p openmpi` for a shorter series).
`--env NAME=VALUE` (repeatable) sets a variable for every session: the breakages issue 49 names
(Open MPI on TCP loopback `OMPI_MCA_btl=self,tcp`, its single-copy transfer off
`OMPI_MCA_btl_vader_single_copy_mechanism=none`, MPICH's UCX on TCP `UCX_TLS=tcp,self`), with
`FABRICSUITE_LOCAL_TRANSPORT=any` where TCP is declared as meant, so that the efficiencies and
not the transport check judge it. Each session's findings (its findings file: REGRESSION,
BROKEN, ... with the figure they name) are reported beside its outcome.
Run it alone: the timing checks need the cores to themselves.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fabricsuite.data import findings  # noqa: E402
from fabricsuite.data.cases import final_cases  # noqa: E402
from fabricsuite.data.store import readable_reports  # noqa: E402

#: The figures that show the phase of the host: the 8 B ping-pong latency and its efficiency.
PHASE_FIGURES = ("latency_8B_median_us", "latency_8B_floor_multiple")


def phase_figures(results: Path) -> dict[str, dict[str, float]]:
    """{MPI: {figure: median over its cases}} from the session's run reports."""
    seen: dict[str, dict[str, list[float]]] = {}
    for _path, report in readable_reports(results / "reports"):
        for case in final_cases(report):  # a retried case's last round
            if not case.get("name", "").startswith("NetbenchPingPong"):
                continue
            for key, perf in (case.get("perfvalues") or {}).items():
                name, value = key.rsplit(":", 1)[-1], perf[0] if perf else None
                if name in PHASE_FIGURES and isinstance(value, (int, float)):
                    seen.setdefault(case.get("environ", "?"), {}).setdefault(
                        name, []).append(float(value))
    return {mpi: {name: statistics.median(values) for name, values in figures.items()}
            for mpi, figures in seen.items()}


def session_findings(results: Path) -> list[str]:
    """The session's findings (its findings file, fabricsuite.data.findings: the verdict of every
    case that did not pass, the figure it names), one line each."""
    return [finding.evidence for path in sorted((results / "findings").glob("*.json"))
            for finding in findings.read(path)[1]]


def one_session(out: Path, index: int, extra: list[str],
                breakage: dict[str, str] | None = None) -> dict:
    results = out / f"session-{index}"
    env = dict(os.environ, **(breakage or {}), FABRICSUITE_RESULTS=str(results))
    started = time.monotonic()
    done = subprocess.run(["bash", str(REPO / "ci" / "run-local.sh"), *extra], env=env,
                          capture_output=True, text=True, check=False)
    (out / f"session-{index}.log").write_text(done.stdout + done.stderr)
    lines = done.stdout.splitlines()
    return {"session": index, "exit": done.returncode,
            "minutes": round((time.monotonic() - started) / 60, 1),
            "outcome": next((line for line in reversed(lines) if line.startswith("outcome:")),
                            "(no outcome line)"),
            "recorded": next((line.strip() for line in lines if "session 1 of 3 recorded" in line),
                             ""),
            "verdicts": session_findings(results),
            "phase": phase_figures(results)}


def table(sessions: list[dict]) -> str:
    mpis = sorted({mpi for one in sessions for mpi in one["phase"]})
    head = ["session", "exit", "min"] + [f"{mpi} 8 B us (x floor)" for mpi in mpis] + ["outcome"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for one in sessions:
        cells = [str(one["session"]), str(one["exit"]), str(one["minutes"])]
        for mpi in mpis:
            fig = one["phase"].get(mpi, {})
            cells.append(f"{fig.get('latency_8B_median_us', float('nan')):.3g} "
                         f"({fig.get('latency_8B_floor_multiple', float('nan')):.3g})")
        cells.append(one["outcome"].removeprefix("outcome: "))
        rows.append("| " + " | ".join(cells) + " |")
    for one in sessions:
        for line in one.get("verdicts", []):
            rows.append(f"\nsession {one['session']}: {line}")
    passed = sum(one["exit"] == 0 and bool(one["recorded"]) for one in sessions)
    rows.append(f"\nexit 0 and recorded: {passed} of {len(sessions)}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=5, help="sessions to run (default 5)")
    parser.add_argument("--gap", type=float, default=60.0,
                        help="seconds between sessions (default 60)")
    parser.add_argument("--out", type=Path, required=True,
                        help="a new directory for the sessions' results and logs")
    parser.add_argument("--json", type=Path, help="also write the sessions as JSON here")
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment variable for every session: a breakage (repeatable)")
    parser.add_argument("extra", nargs="*", help="arguments for ci/run-local.sh (after --)")
    args = parser.parse_args(argv)
    breakage = dict(item.split("=", 1) for item in args.env if "=" in item)
    if len(breakage) != len(args.env):
        parser.error("--env takes NAME=VALUE, e.g. --env OMPI_MCA_btl=self,tcp")
    if args.out.exists():
        parser.error(f"{args.out} exists: give a new directory, so no session sees another's "
                     "references")
    args.out.mkdir(parents=True)
    sessions = []
    for index in range(1, args.sessions + 1):
        if index > 1:
            time.sleep(args.gap)
        sessions.append(one_session(args.out, index, args.extra, breakage))
        print(f"session {index}: exit {sessions[-1]['exit']}, {sessions[-1]['minutes']} min, "
              f"{sessions[-1]['outcome']}", flush=True)
    print(table(sessions))
    if args.json:
        args.json.write_text(json.dumps(sessions, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
