"""`fabricsuite baseline`'s command line: reference values from stored run reports, written
into a system's reference file (the method: fabricsuite.commands.baseline; the file:
fabricsuite.commands.reference_file)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fabricsuite.base.commandline import (
    UsageError,
    add_selection_options,
    check_system,
    one_line_errors,
    results_dir,
)
from fabricsuite.base.formats import iso_utc
from fabricsuite.commands.baseline import (
    MIN_RUNS,
    MIN_SESSIONS,
    propose,
    read_reports,
    usable,
)
from fabricsuite.commands.reference_file import update_file
from fabricsuite.data.machine import LOCAL_SYSTEM, this_machine
from fabricsuite.data.references import reference_file
from fabricsuite.data.store import run_report_paths


def add_parser(sub: Any) -> None:
    """Register `fabricsuite baseline` on the CLI's subparsers."""
    base = sub.add_parser(
        "baseline", help="derive reference values from stored ReFrame run reports",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="""\
Update reference/<system>.yaml from the median of stored runs, with the bound on each
variable's bad side sized from their spread (capped so that a 2x slowdown still fails).

Only healthy test cases count: passed ones, and ones that failed only for lack of a
reference ("no reference value found"); the others are left out and counted. The bad side
comes from each test case's perf_directions (lower, higher or equal); a variable whose
direction the reports do not give (older checks) is left out: re-run with the current checks.
A variable with fewer than --min-runs healthy runs, or with runs from fewer than
--min-sessions separate sessions, keeps its old reference (with --acceptance the whole
baseline is refused instead): runs of one session (--repeat) lie seconds apart and miss how a
figure drifts between sessions, which its bound must hold. Before writing, the changes against the
current file are printed (new, changed: old -> new value and bound, unchanged).

The file is locked while it is read and rewritten (concurrent baselines lose nothing), its
comments, other checks and other systems stay, the previous version is kept as
<file>.<UTC time>.bak, and every file is written atomically with the old file's mode.
Bad input stops with one line and exit status 2.""")
    add_selection_options(base)
    base.add_argument("--last", type=int, default=None, metavar="N",
                      help="use the newest N run reports in RESULTS/reports (default 5); an "
                           "error if there are fewer")
    base.add_argument("--min-runs", type=int, default=MIN_RUNS, metavar="N",
                      help=f"fewest healthy runs a variable needs to get a reference "
                           f"(default {MIN_RUNS}); --last below it is an error")
    base.add_argument("--min-sessions", type=int, default=MIN_SESSIONS, metavar="N",
                      help=f"fewest separate ReFrame sessions (report session uuids) a "
                           f"variable's runs must come from (default {MIN_SESSIONS}); 1 accepts "
                           f"the runs of one --repeat session")
    base.add_argument("--check", action="append", metavar="NAME",
                      help="baseline only this check (its class name, e.g. "
                           "NetbenchPingPongBandwidth; repeatable); the other checks keep "
                           "their references (default: every check in the reports)")
    base.add_argument("--output",
                      help="reference file (default: <system>.yaml in $RFM_REFERENCE_PREFIX, "
                           "else in reference/)")
    base.add_argument("--dry-run", action="store_true", help="print instead of writing")
    base.add_argument("--acceptance", action="store_true",
                      help="accepting a new fabric: refuse (exit 2, nothing written) unless "
                           "every variable has --min-runs healthy runs and can catch a 2x "
                           "slowdown; run after the acceptance mode's repeats")
    base.add_argument("--waiver", metavar="REASON",
                      help="accept runs that missed the fabric's promise (a LINK DEGRADED "
                           "finding, a line fraction below extras.fabric's): their other "
                           "figures become references, and the file's _waivers records the "
                           "reason, the date and what was waived; without it --acceptance "
                           "refuses such runs")
    base.add_argument("reports", nargs="*", help="run report files (default: the newest --last)")


def run(args: argparse.Namespace) -> int:
    """`fabricsuite baseline`: 0 written (or printed), 2 bad input."""
    return _run_baseline(args)


def _select_reports(args: argparse.Namespace) -> list[Path]:
    if args.reports:
        if args.last is not None:
            raise UsageError("give either report files or --last, not both")
        return [Path(p) for p in args.reports]
    last = 5 if args.last is None else args.last
    if last < 1:
        raise UsageError(f"--last {last}: give the number of newest run reports to use, 1 or "
                         f"more")
    if last < args.min_runs:
        raise UsageError(f"--last {last} is fewer than --min-runs {args.min_runs}: a "
                         f"reference needs at least {args.min_runs} runs; use --last "
                         f"{args.min_runs} or more")
    directory = results_dir(args) / "reports"
    found = run_report_paths(directory)
    if not found:
        raise UsageError(f"no run reports in {directory}; run the suite first "
                         f"(ci/run-local.sh), set FABRICSUITE_RESULTS or --results, or name "
                         f"report files")
    if last > len(found):
        raise UsageError(f"--last {last}: only {len(found)} run report(s) in {directory}; run "
                         f"the suite {last - len(found)} more time(s) or pass --last "
                         f"{len(found)}")
    return found[-last:]


def _owner(machines: set[str]) -> dict[str, str]:
    """The `_machine` of the embedded default's references from the reports: the one machine
    their cases ran on (this machine where they do not say). Reports of two machines are
    refused: a machine's references are its own."""
    if len(machines) > 1:
        names = ", ".join(sorted(machines))
        raise UsageError(f"the reports ran on {len(machines)} machines ({names}): a machine's "
                         f"references are its own; pass the reports of one")
    key, descr = this_machine()
    if machines and machines != {key}:
        return {"key": next(iter(machines)), "description": ""}
    return {"key": key, "description": descr}


def _baseline(args: argparse.Namespace) -> int:
    check_system(args.system)
    if args.min_runs < 1:
        raise UsageError(f"--min-runs {args.min_runs}: give 1 or more (default {MIN_RUNS})")
    if args.min_sessions < 1:
        raise UsageError(f"--min-sessions {args.min_sessions}: give 1 or more (default "
                         f"{MIN_SESSIONS})")
    reports = _select_reports(args)
    if args.waiver is not None and not args.waiver.strip():
        raise UsageError("--waiver needs the reason the fabric is accepted below its promise "
                         "(recorded in the reference file), e.g. --waiver 'vendor ticket 123: "
                         "rails 3-4 at HDR until the cables are swapped'")
    collected = read_reports(reports, system=args.system, waived=args.waiver is not None)
    print(f"fabricsuite baseline: {collected.summary(args.system)}", file=sys.stderr)
    for line in collected.set_aside_lines():
        print(f"fabricsuite baseline: {line}", file=sys.stderr)
    misses = sorted(set(collected.promise_misses))
    if args.acceptance and misses and args.waiver is None:
        # A fabric below its promise must not become its own reference unnoticed.
        raise UsageError(f"--acceptance refused, nothing written: {len(misses)} miss(es) of "
                         f"the fabric's promise (extras.fabric), e.g. {misses[0]}; fix the "
                         f"fabric and run the acceptance again, or accept it as it is with "
                         f"--waiver REASON (recorded in the reference file)")
    for miss in misses[:5] if args.waiver is not None else []:
        print(f"fabricsuite baseline: waived: {miss}", file=sys.stderr)
    if args.check:
        # Rebaseline some checks only: the others keep their references, whatever the reports
        # hold of them (their runs may span other sessions than these).
        seen = sorted({s.check for s in collected.samples})
        unknown = [name for name in args.check if name not in seen]
        if unknown:
            raise UsageError(f"--check {unknown[0]}: the reports hold no healthy values of "
                             f"that check on {args.system!r} (they hold: "
                             f"{', '.join(seen) or 'none'}); name one of those")
        collected.samples = [s for s in collected.samples if s.check in args.check]
    if not collected.samples:
        raise UsageError(f"the reports hold no healthy performance values for system "
                         f"{args.system!r}; check --system and the runs' results"
                         + (f" ({len(misses)} miss(es) of the fabric's promise left out, e.g. "
                            f"{misses[0]}: --waiver REASON accepts them)"
                            if misses and args.waiver is None else ""))
    # The effective rule: a session gives one run or more, so never more sessions than runs.
    min_sessions = min(args.min_sessions, args.min_runs)
    samples, notes = usable(collected.samples, args.min_runs, min_sessions)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    if args.acceptance:
        # Accepting a fabric: a reference is all or nothing; no variable may be left out for
        # too few runs, nor be too noisy to catch a 2x slowdown.
        too_few = len(collected.samples) - len(samples)
        noisy = [s.key for s in samples if propose(s)[1]]
        if too_few or noisy:
            what = ([f"{too_few} variable(s) without {args.min_runs} healthy runs from "
                     f"{min_sessions} sessions"] if too_few
                    else []) + ([f"{len(noisy)} too noisy to catch 2x ({noisy[0]}"
                                 + (", ..." if len(noisy) > 1 else "") + ")"] if noisy else [])
            raise UsageError(f"--acceptance refused, nothing written: {'; '.join(what)}; run "
                             f"the acceptance mode again (more --repeat) on quiet nodes, see "
                             f"the notes")
    if not samples:
        raise UsageError("no variable is left to baseline (see the notes above); nothing "
                         "written")
    owner = _owner(collected.machines) if args.system == LOCAL_SYSTEM else None
    output = Path(args.output) if args.output else reference_file(
        args.system, machine=owner["key"] if owner else None)
    if not output.parent.is_dir() and (args.output or args.system != "local"):
        raise UsageError(f"cannot write {output}: directory {output.parent} does not exist; "
                         f"create it or pass --output")

    def show(changes: list[str]) -> None:
        print(f"fabricsuite baseline: changes to {output}:", file=sys.stderr)
        for line in changes:
            print(line, file=sys.stderr)

    waiver = None
    if args.waiver is not None:
        waiver = {"date_utc": iso_utc(),
                  "reason": args.waiver.strip(), "reports": [p.name for p in reports],
                  "waived": misses or ["(nothing missed the promise in these reports)"]}
    text, saved, noisy = update_file(output, samples, reports, min_sessions,
                                     dry_run=args.dry_run, show_changes=show, waiver=waiver,
                                     machine=owner)
    if args.dry_run:
        sys.stdout.write(text)
    else:
        print(f"wrote {output}" + (f" (previous version kept as {saved})" if saved else ""))
    for note in noisy:
        print(f"note: {note}", file=sys.stderr)
    return 0


@one_line_errors("baseline")
def _run_baseline(args: argparse.Namespace) -> int:
    try:
        return _baseline(args)
    except PermissionError as err:
        where = err.filename or args.output or "the reference directory"
        raise UsageError(f"cannot write {where}: permission denied; make its directory "
                         f"writable or pass --output") from None
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        raise UsageError(f"{where}{err.strerror or err}; check the path and the disk, or pass "
                         f"--output") from None
