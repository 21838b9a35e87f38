"""Lost coverage is a failure: after a ReFrame session, did it test what it was asked to?

ReFrame reports "PASSED, Ran 0/0" and exits 0 when nothing ran (an environment that does not
exist on the system, a filter that matched nothing, every case skipped). For a regression suite
that is a false pass. `python -m fabricsuite.session REPORT -- REFRAME_ARGS...` reads the
session's JSON run report and fails (exit 1, one line per problem) when

- no test case ran at all (every case skipped, or none selected);
- an environment named with `-p/--prgenv` ran no case;
- a partition named with `--system SYSTEM:PARTITION` ran no case.

`ci/run-local.sh` calls it after every run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


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
    found = problems(report, reframe_args)
    for line in found:
        print(f"fabricsuite: FAILED: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
