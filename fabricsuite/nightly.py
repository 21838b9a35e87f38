"""`fabricsuite nightly`: the nightly run of a system, with a verdict a scheduler can act on.

    fabricsuite nightly --system mycluster                      # from cron or a CI job
    ci/emucluster.sh exec .venv/bin/fabricsuite nightly --system emucluster

Runs ReFrame's `nightly` mode (config/settings.py: the timed checks once, serially, each
failed case confirmed up to 3 times after growing pauses) on the system, stores the session in
ReFrame's results database tagged with --tag (`--session-extras`: `fabricsuite compare
--before-tag` finds it), folds the skipped cases out of the output, prints the one-screen
outcome and writes JUnit XML (skips as <skipped> with their reason, which ReFrame's own JUnit
report counts as passes).

Exit status: 0 every case within its references; 1 a performance regression (confirmed by the
second measurement); 2 something broken: a build, launch or sanity failure, a missing reference,
nothing tested, or a bad option. Arguments after `--` go to reframe unchanged (e.g. `-- -n
NetbenchPingPong -p openmpi`).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from . import REPO_ROOT, console, session
from .commands import (
    UsageError,
    add_selection_options,
    check_system,
    fail,
    one_line_errors,
    results_dir,
)

TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("nightly", help="run the nightly mode; summary, JUnit, exit 0/1/2",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=__doc__)
    add_selection_options(p, partition=True)
    p.add_argument("--mode", default="nightly",
                   help="ReFrame run mode from config/settings.py (default nightly; also "
                        "after-upgrade, acceptance)")
    p.add_argument("--tag", default="nightly",
                   help="stored with the session as session extra tag=TAG (default nightly)")
    p.add_argument("--junit", metavar="FILE",
                   help="JUnit XML file (default RESULTS/junit/<mode>-<UTC time>.xml)")
    p.add_argument("--progress-every", type=float, default=60.0, metavar="S",
                   help="seconds between progress lines (default 60)")
    p.add_argument("reframe_args", nargs=argparse.REMAINDER,
                   help="-- then further reframe options")


def mode_options(mode: str) -> list[str] | None:
    """The options of a run mode of config/settings.py, or None if there is no such mode.

    They are given to reframe as options, not as `--mode`: ReFrame 4.10 parses a mode's options
    first and the command line on top of them, so an appending option such as `-p openmpi` is
    added to the default `.*` and selects every environment."""
    import importlib.util

    path = REPO_ROOT / "config" / "settings.py"
    spec = importlib.util.spec_from_file_location("fabricsuite_settings_for_modes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for entry in module.site_configuration.get("modes", []):
        if entry.get("name") == mode:
            return list(entry.get("options", []))
    return None


def _fail(message: str) -> int:
    """Something broke (not bad input): one line on stderr, exit status BROKEN (2)."""
    return fail("nightly", message, session.BROKEN)


@one_line_errors("nightly")
def run(args: Any) -> int:
    extra = args.reframe_args[1:] if args.reframe_args[:1] == ["--"] else args.reframe_args
    check_system(args.system, partition=True)
    if not TAG.match(args.tag):
        raise UsageError(f"--tag {args.tag!r}: use 1 to 64 of letters, digits, '_', '.', ':', "
                         f"'-' (it is stored as a session extra and matched by compare)")
    if not re.match(r"^[A-Za-z0-9_-]+$", args.mode):
        raise UsageError(f"--mode {args.mode!r} is no run mode name, e.g. nightly")
    if args.progress_every <= 0:
        raise UsageError("--progress-every must be positive seconds, e.g. 60")
    results = results_dir(args)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    try:
        (results / "reports").mkdir(parents=True, exist_ok=True)
        junit = Path(args.junit) if args.junit else results / "junit" / f"{args.mode}-{stamp}.xml"
        junit.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"cannot create {err.filename}: {err.strerror}; check --results or "
                         f"--junit") from None
    env = dict(os.environ, FABRICSUITE_RESULTS=str(results))
    os.environ["FABRICSUITE_RESULTS"] = str(results)  # read by config/settings.py
    options = mode_options(args.mode)
    if options is None:
        raise UsageError(f"--mode {args.mode!r}: no such run mode in config/settings.py "
                         f"(nightly, acceptance, after-upgrade)")
    report = results / "reports" / f"run-report-{stamp}-{os.getpid()}.json"
    skips = report.with_suffix(".skips.jsonl")
    reframe = Path(sys.executable).parent / "reframe"
    command = [str(reframe), "-C", str(REPO_ROOT / "config" / "settings.py"),
               "--system", args.system, *options, "-r",
               "--report-file", str(report), "--session-extras", f"tag={args.tag}", *extra]
    print(f"fabricsuite nightly: {shlex.join(command)}", flush=True)
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, cwd=REPO_ROOT, env=env, bufsize=1)
    except OSError as err:
        return _fail(f"cannot start reframe ({err.strerror}); run ci/setup.sh first")
    with open(skips, "a") as skip_log:
        console.fold(proc.stdout, sys.stdout, skip_log, args.progress_every)
    returncode = proc.wait()
    if not report.is_file():
        return _fail(f"reframe exited {returncode} without a run report: nothing was tested "
                     f"(a bad option, system or mode? see its output above)")
    # The embedded default takes its machine's references after its first sessions.
    take = ["--take-references"] if args.system.split(":")[0] == "local" else []
    argv = ["--skips", str(skips), "--junit", str(junit), "--classify", *take, str(report),
            "--", "--system", args.system, *extra]
    status = session.main(argv)
    print(f"fabricsuite nightly: JUnit XML in {junit}; run report {report}")
    if status == session.WITHIN and returncode != 0:
        # ReFrame failed for a reason the report does not show (e.g. an error after the run)
        return _fail(f"reframe exited {returncode} although every case passed; see its output")
    return status
