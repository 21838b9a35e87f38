"""Lost coverage is a failure: after a ReFrame session, did it test what it was asked to?

ReFrame reports "PASSED, Ran 0/0" and exits 0 when nothing ran (an environment that does not
exist on the system, a filter that matched nothing, every case skipped). For a regression suite
that is a false pass. `python -m fabricsuite.session REPORT -- REFRAME_ARGS...` reads the
session's JSON run report and fails (exit 1, one line per problem) when

- no test case ran at all (every case skipped, or none selected);
- an environment named with `-p/--prgenv` ran no case;
- a partition named with `--system SYSTEM:PARTITION` ran no case.

It also prints each performance verdict that a confirmation round (`--max-retries`, see
fabricsuite/verdict.py) changed or upheld, with both figures, and for each variable that failed
its reference the value, the reference, the bound, the change and how many noise widths (the
spread `fabricsuite baseline` recorded in the reference file's `_statistics`) it lies away.

`ci/run-local.sh` calls it after every run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from .metrics import case_scope, series_key
from .references import ReferenceFileError, load_file, reference_file


def _requested(reframe_args: list[str]) -> tuple[list[str], list[str]]:
    """The -p/--prgenv patterns and the --system partitions named on reframe's command line."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-p", "--prgenv", action="append", default=[])
    parser.add_argument("--system")
    known, _ = parser.parse_known_args(reframe_args)
    partitions = [known.system] if known.system and ":" in known.system else []
    return known.prgenv, partitions


def problems(report: dict, reframe_args: list[str]) -> list[str]:
    # Fixtures (netbench's build) are not tests of the fabric: a session that only built counts
    # as having tested nothing.
    cases = [case for run in report.get("runs", []) for case in run.get("testcases", [])
             if not case.get("fixture")]
    ran = [c for c in cases if c.get("result") != "skip"]
    found = []
    if not ran:
        found.append(
            f"no test case ran ({len(cases)} selected, all skipped): nothing was tested; check "
            f"the -n/-p/--system filters and the skip reasons above"
        )
    prgenvs, partitions = _requested(reframe_args)
    for pattern in prgenvs:
        try:
            regex = re.compile(pattern)
        except re.error:
            continue  # ReFrame itself rejects it
        if ran and not any(regex.search(str(c.get("environ", ""))) for c in ran):
            environs = sorted({str(c.get("environ")) for c in ran})
            found.append(
                f"-p {pattern}: no case ran in a matching programming environment (ran only in "
                f"{', '.join(environs)}); is that MPI configured and installed on this system?"
            )
    for partition in partitions:
        system, _, name = partition.partition(":")
        if ran and not any(c.get("system") == system and c.get("partition") == name
                           for c in ran):
            found.append(f"--system {partition}: no case ran on that partition")
    return found


def _case_key(case: dict) -> tuple:
    # unique_name tells repeats (--repeat) apart; a retry keeps its case's
    return (case.get("unique_name") or case.get("name"), case.get("system"),
            case.get("partition"), case.get("environ"))


def _where(case: dict) -> str:
    check, partition, environ, levels = case_scope(case)
    return " ".join([check, partition, environ, *[value for _, value in levels]])


def _statistics(system: str, cache: dict) -> dict[str, Any]:
    if system not in cache:
        try:
            stats = load_file(reference_file(system)).get("_statistics") or {}
        except ReferenceFileError:
            stats = {}
        cache[system] = stats if isinstance(stats, dict) else {}
    return cache[system]


def _figure(perf: list) -> str:
    value, ref, lower, upper, unit = perf[:5]
    text = f"{value:g} {unit}" if isinstance(value, (int, float)) else f"{value} {unit}"
    if isinstance(ref, (int, float)) and ref:
        change = (value - ref) / abs(ref)
        bound = f"{lower:+.1%}" if lower is not None else f"{upper:+.1%}"
        text += f" (reference {ref:g}, {change:+.1%}, bound {bound})"
    return text


def verdict_lines(report: dict) -> list[str]:
    """Confirmed regressions and transients dispelled by confirmation, one line each."""
    runs = report.get("runs", [])
    if not runs:
        return []
    first: dict[tuple, dict] = {}
    for run in runs[:-1]:
        for case in run.get("testcases", []):
            if case.get("result") == "fail":
                first.setdefault(_case_key(case), case)
    lines, cache = [], {}
    for case in runs[-1].get("testcases", []):
        earlier = first.get(_case_key(case)) if len(runs) > 1 else None
        if case.get("result") == "pass" and earlier is not None:
            failed = {k: v for k, v in (earlier.get("perfvalues") or {}).items()
                      if len(v) > 5 and v[5] == "fail"}
            then = "; ".join(f"{k.split(':')[-1]} {_figure(v)}" for k, v in failed.items())
            lines.append(f"confirmation passed: {_where(case)}: first "
                         f"{then or earlier.get('fail_phase', 'failed')}, then within reference")
            continue
        if case.get("result") != "fail" or case.get("fail_phase") != "performance":
            continue
        stats = _statistics(str(case.get("system")), cache)
        for key, perf in (case.get("perfvalues") or {}).items():
            if len(perf) < 6 or perf[5] != "fail":
                continue
            variable = key.split(":")[-1]
            line = f"REGRESSION {_where(case)} {variable} = {_figure(perf)}"
            stat_key = series_key(*case_scope(case), variable)
            spread = (stats.get(stat_key) or {}).get("spread")
            value, ref = perf[0], perf[1]
            if spread and isinstance(ref, (int, float)) and ref:
                widths = abs(value - ref) / abs(ref) / spread
                line += f", {widths:.1f} noise widths (spread {spread:.2%})"
            if earlier is not None:
                before = (earlier.get("perfvalues") or {}).get(key)
                if before:
                    line += f"; confirmed: first run {before[0]:g} {perf[4]}"
            lines.append(line)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fabricsuite.session",
        description="Fail a ReFrame session that tested nothing or not what it was asked to.")
    parser.add_argument("report", help="the session's JSON run report")
    parser.add_argument("reframe_args", nargs=argparse.REMAINDER,
                        help="-- then the arguments the session was run with")
    args = parser.parse_args(argv)
    reframe_args = args.reframe_args[1:] if args.reframe_args[:1] == ["--"] else args.reframe_args
    try:
        report = json.loads(Path(args.report).read_text())
    except (OSError, json.JSONDecodeError) as err:
        why = "it wrote none" if isinstance(err, FileNotFoundError) else err
        print(f"fabricsuite: FAILED: no run report of the session ({args.report}: {why}): "
              f"ReFrame selected no test case (Ran 0/0) or did not finish, so nothing was "
              f"tested; check the -n/-p/--system filters and the output above", file=sys.stderr)
        return 1
    for line in verdict_lines(report):
        print(f"fabricsuite: {line}")
    found = problems(report, reframe_args)
    for line in found:
        print(f"fabricsuite: FAILED: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
