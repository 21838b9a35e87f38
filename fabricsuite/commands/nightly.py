"""`fabricsuite nightly`: the nightly run of a system, with a verdict a scheduler can act on.

    fabricsuite nightly --system mycluster                      # from cron or a CI job
    ci/emucluster.sh exec .venv/bin/fabricsuite nightly --system emucluster

Runs ReFrame's `nightly` mode (config/settings.py: the timed checks once, serially, each
failed case measured again in up to 3 confirmation rounds after growing pauses; a variable
counts as outside when it is outside in most of its rounds) on the system, stores the session in
ReFrame's results database tagged with --tag (`--session-extras`: `fabricsuite compare
--before-tag` finds it), folds the skipped cases out of the output, prints the one-screen
outcome and writes JUnit XML (skips as <skipped> with their reason, which ReFrame's own JUnit
report counts as passes), the session's findings (RESULTS/findings/, fabricsuite.data.findings:
what `fabricsuite act` turns into Slurm actions) and its verdict (RESULTS/verdicts/, decided once:
history, compare and the page show it as it was judged).

Arguments after `--` go to reframe unchanged (e.g. `-- -n NetbenchPingPong -p openmpi`); where
every -n names its checks plainly (`-n '^NetbenchPingPong%'`), ReFrame loads only the check
files that hold them (fabricsuite.base.check_files: 1.6 s less a session). The exit statuses
(fabricsuite.data.session_verdict.EXIT_STATUSES; a bad option is 2 too) follow.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

from fabricsuite import MAX_CONFIRM_PAUSE_S, REPO_ROOT, ROTATION_ENV, RUN_MODES
from fabricsuite.base import console
from fabricsuite.base.check_files import narrow
from fabricsuite.base.commandline import (
    UsageError,
    add_selection_options,
    check_system,
    fail,
    is_within,
    one_line_errors,
    results_dir,
)
from fabricsuite.base.formats import file_utc, iso_utc
from fabricsuite.commands import session
from fabricsuite.data import findings, store
from fabricsuite.data.cases import was_interrupted
from fabricsuite.data.session_verdict import exit_status_lines

TAG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("nightly", help="run the nightly mode; summary, JUnit, exit 0/1/2",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=__doc__ + "\nExit status:\n" + "\n".join(
                           textwrap.fill(line, 92, initial_indent="  ",
                                         subsequent_indent="     ")
                           for line in exit_status_lines()))
    add_selection_options(p, partition=True)
    p.add_argument("--mode", default="nightly",
                   help=f"ReFrame run mode from config/settings.py (default nightly; one of "
                        f"{', '.join(RUN_MODES)})")
    p.add_argument("--tag", default="nightly",
                   help="stored with the session as session extra tag=TAG (default nightly)")
    p.add_argument("--junit", metavar="FILE",
                   help="JUnit XML file (default RESULTS/junit/<mode>-<UTC time>.xml)")
    p.add_argument("--progress-every", type=float, default=60.0, metavar="S",
                   help="seconds between progress lines (default 60)")
    p.add_argument("--retest-suspects", action="store_true",
                   help="after the session, measure each suspected node again and settle "
                        "the findings: confirmed or cleared (Slurm: -J--nodelist): a failure "
                        "on new nodes that a pair cannot pin on one, on the suspect and a node "
                        "its references know; a map's pair it cannot tell apart, by a map of "
                        "the suspect and three nodes the map measured healthy; with the "
                        "session's -S settings and --max-retries (at least 1)")
    p.add_argument("reframe_args", nargs=argparse.REMAINDER,
                   help="-- then further reframe options")


def mode_options(mode: str) -> list[str] | None:
    """The options of a run mode of config/settings.py, or None if there is no such mode.

    They are given to reframe as options, not as `--mode`: ReFrame 4.10 parses a mode's options
    first and the command line on top of them, so an appending option such as `-p openmpi` is
    added to the default `.*` and selects every environment."""
    for entry in _modes():
        if entry.get("name") == mode:
            return list(entry.get("options", []))
    return None


def mode_names() -> list[str]:
    """The run modes of config/settings.py, in its order."""
    return [str(entry.get("name")) for entry in _modes()]


def _modes() -> list[dict]:
    import importlib.util

    path = REPO_ROOT / "config" / "settings.py"
    spec = importlib.util.spec_from_file_location("fabricsuite_settings_for_modes", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.site_configuration.get("modes", []))


#: The run modes whose sessions are spread over a partition's nodes (Judged.node_rotation).
SPREAD_MODES = ("acceptance",)


def node_rotation(args: Any, results: Path, extra: list[str]) -> int | None:
    """The rotation (Judged.node_rotation) of a session of a SPREAD_MODES mode on a cluster: the
    number of earlier sessions of its tag and system in the results directory, so that
    references taken from several sessions come from several nodes. None on `local` (one
    machine), or where the session chooses its nodes itself (-J--nodelist, -J--exclude,
    --distribute, -S node_rotation)."""
    system = args.system.split(":")[0]
    if args.mode not in SPREAD_MODES or system == "local":
        return None
    chosen = " ".join(extra)
    if any(word in chosen for word in ("--nodelist", "--exclude", "-J-w", "-J-x", "-J -w",
                                       "-J -x", "--distribute", "node_rotation")):
        return None
    earlier = 0
    for _path, report in store.readable_reports(results / "reports"):
        info = report.get("session_info") or {}
        systems = {str(case.get("system", "")).split(":")[0]
                   for run in report.get("runs") or [] if isinstance(run, dict)
                   for case in run.get("testcases") or [] if isinstance(case, dict)}
        if store.has_tag(info, args.tag) and system in systems:
            earlier += 1
    print(f"fabricsuite nightly: {args.mode} session {earlier + 1} of tag {args.tag}: its cases "
          f"run on the nodes after those of the session before ({ROTATION_ENV}={earlier})",
          flush=True)
    return earlier


def _fail(message: str) -> int:
    """Something broke (not bad input): one line on stderr, exit status BROKEN (2)."""
    return fail("nightly", message, session.BROKEN)


@one_line_errors("nightly")
def run(args: Any) -> int:
    """The nightly, with its contract kept whatever happens: a crash of this process (a full
    disk, anything unforeseen) is exit 2 with one line naming the cause and, where one can be
    written, a JUnit file that says broken; never a traceback or the status of a regression."""
    # one time stamp names the session's report and its JUnit
    args.stamp = file_utc()
    try:
        return _run(args)
    except UsageError:
        raise
    except Exception as err:  # noqa: BLE001 - the contract: any crash is "broken", exit 2
        if isinstance(err, OSError) and err.strerror:
            cause = err.strerror + (f" ({err.filename})" if err.filename else "")
        else:
            cause = f"{type(err).__name__}: {err}"
        why = f"crashed: {cause} (FABRICSUITE_DEBUG=1 shows where)"
        if os.environ.get("FABRICSUITE_DEBUG"):
            import traceback

            traceback.print_exc()
        junit = _junit_path(args)
        if session.write_broken_junit(junit, why):
            why += f"; JUnit XML in {junit}"
        return _fail(f"BROKEN: {why}")


def _junit_path(args: Any) -> Path:
    """Where this nightly's JUnit goes: --junit, else RESULTS/junit/<mode>-<time>.xml."""
    if args.junit:
        return Path(args.junit).absolute()
    return results_dir(args) / "junit" / f"{args.mode}-{args.stamp}.xml"


def _check_results_path(results: Path) -> None:
    # ReFrame 4.10 starts a build or local job through a command line it splits on blanks, so a
    # stage directory with a space fails every case with a truncated path ("/tmp/my" of
    # "/tmp/my results"): refused here, with the fix.
    if any(c.isspace() for c in str(results)):
        raise UsageError(f"--results {str(results)!r} holds a blank, which ReFrame 4.10 cannot "
                         f"run jobs under (it splits the stage path); choose a path without "
                         f"blanks")


def _lock_paths(results: Path, system: str) -> list[Path]:
    """The locks a nightly of `system` holds: one per system and results directory and, for a
    system whose jobs run on this machine's cores (the embedded default, the emulated cluster),
    one per machine, so that two sessions never time on the same cores at once."""
    name = system.split(":")[0]
    paths = [results / f".nightly-{name}.lock"]
    if name in ("local", "emucluster"):
        paths.append(machine_lock_dir() / f"fabricsuite-nightly-{name}.lock")
    return paths


def machine_lock_dir() -> Path:
    """Where the one-session-per-machine lock lives: a directory of the machine, never
    $TMPDIR (a second session with another TMPDIR started beside the first): /run/lock where
    this user may write there, else /tmp."""
    for directory in (Path("/run/lock"), Path("/tmp")):
        if directory.is_dir() and os.access(directory, os.W_OK | os.X_OK):
            return directory
    return Path("/tmp")


def _run(args: Any) -> int:
    extra = args.reframe_args[1:] if args.reframe_args[:1] == ["--"] else args.reframe_args
    check_system(args.system, partition=True)
    if not TAG.match(args.tag):
        raise UsageError(f"--tag {args.tag!r}: use 1 to 64 of letters, digits, '_', '.', ':', "
                         f"'-' (it is stored as a session extra and matched by compare)")
    if not re.match(r"^[A-Za-z0-9_-]+$", args.mode):
        raise UsageError(f"--mode {args.mode!r} is no run mode name, e.g. nightly")
    if not is_within(args.progress_every, 0, open_ends=True):
        raise UsageError("--progress-every must be positive seconds, e.g. 60")
    _check_confirm_pause(extra)
    results = results_dir(args)
    _check_results_path(results)
    try:
        (results / "reports").mkdir(parents=True, exist_ok=True)
        junit = _junit_path(args)
        junit.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"cannot create {err.filename}: {err.strerror}; check --results or "
                         f"--junit") from None
    with contextlib.ExitStack() as held:
        for lock in _lock_paths(results, args.system):
            try:
                held.enter_context(store.exclusive_or_busy(lock))
            except store.Busy as busy:
                raise UsageError(
                    f"another nightly of {args.system.split(':')[0]} is running ({busy}): one "
                    f"at a time, so that no two sessions time on the same nodes; wait for it "
                    f"to end") from None
        return _session(args, results, junit, extra)


def _settings(extra: list[str]) -> list[str]:
    """The session's ReFrame settings, `[CHECK.]VAR=VAL` of each `-S X` and `-SX`, in order."""
    return [word[2:] if word != "-S" else extra[at + 1] for at, word in enumerate(extra)
            if word.startswith("-S") and (word != "-S" or at + 1 < len(extra))]


def retest_options(extra: list[str]) -> list[str]:
    """What a re-test of suspects takes from its session's ReFrame options: the settings (-S)
    and the confirmation rounds where the session gave them (`--max-retries`, at least 1: a
    point-to-point re-test is settled by a round on nodes the references know), never the
    selection (the re-test runs one check)."""
    options = [f"-S{setting}" for setting in _settings(extra)]
    given = None
    for at, word in enumerate(extra):
        value = (word.partition("=")[2] if word.startswith("--max-retries=") else
                 extra[at + 1] if word == "--max-retries" and at + 1 < len(extra) else None)
        if value is not None and value.strip().isdigit():
            given = int(value)  # the last one, as ReFrame reads them
    if given is not None:
        options.append(f"--max-retries={max(1, given)}")
    return options


def _check_confirm_pause(extra: list[str]) -> None:
    """A UsageError for `-S [CHECK.]confirm_pause_s=X` beyond 0..MAX_CONFIRM_PAUSE_S s: before
    ReFrame starts, in one line, not as every case failing its setup (judged_check.Judged says the
    same where ReFrame is run by hand)."""
    for setting in _settings(extra):
        name, _, value = setting.partition("=")
        if name.rsplit(".", 1)[-1] != "confirm_pause_s":
            continue
        try:
            seconds = float(value)
        except ValueError:
            seconds = math.nan
        if not is_within(seconds, 0, MAX_CONFIRM_PAUSE_S):
            raise UsageError(f"-S {setting}: give the pause before the first confirmation round "
                             f"in seconds, 0 to {MAX_CONFIRM_PAUSE_S:g}, e.g. -S "
                             f"confirm_pause_s=20")


def _session(args: Any, results: Path, junit: Path, extra: list[str]) -> int:
    stamp = args.stamp
    env = dict(os.environ, FABRICSUITE_RESULTS=str(results))
    os.environ["FABRICSUITE_RESULTS"] = str(results)  # read by config/settings.py
    options = mode_options(args.mode)
    if options is None:
        raise UsageError(f"--mode {args.mode!r}: no such run mode in config/settings.py "
                         f"({', '.join(mode_names())})")
    rotation = node_rotation(args, results, extra)
    if rotation is not None:
        env[ROTATION_ENV] = str(rotation)
    report = results / "reports" / f"run-report-{stamp}-{os.getpid()}.json"
    skips = report.with_suffix(".skips.jsonl")
    found = findings_path(results, args)
    # until the session's own findings replace it: a nightly that dies leaves it the newest,
    # and `fabricsuite act` refuses it (yesterday's would otherwise be acted on again)
    try:
        findings.write(found, findings.pending_document(iso_utc(), os.getpid()))
    except OSError as err:
        raise UsageError(f"cannot write the findings in {found.parent} ({err.strerror or err}); "
                         f"give --results a directory you can write") from None
    ran = _reframe(args, env, [*options, "--session-extras", f"tag={args.tag}", *extra],
                   report, skips)
    if isinstance(ran, int):
        found.unlink(missing_ok=True)  # ended before any session: nothing to act on
        return ran
    returncode, interrupted = ran
    if interrupted.signal is not None:
        return _interrupted(interrupted, report, junit, results, args)
    if _aborted_by_others(report):
        return _interrupted("(ReFrame aborted its cases on a signal this nightly did not send)",
                            report, junit, results, args)
    if not report.is_file():
        found.unlink(missing_ok=True)  # no session was judged: said below, nothing to act on
        if returncode == 0:
            return _fail("ReFrame selected no test case (it exited 0 without a run report): "
                         "nothing was tested; check -n, -x and -p against `reframe -l`")
        if returncode < 0:
            return _fail(f"ReFrame was killed by {signal.Signals(-returncode).name} before it "
                         f"wrote a run report: nothing was judged or recorded; run it again")
        return _fail(f"reframe exited {returncode} without a run report: nothing was tested "
                     f"(a bad option, system or mode? see its output above)")
    # checked first, so that the outcome's last line and its exit status say it
    unstored = _unstored(report, results)
    # judged once, said once, stored with the session (RESULTS/verdicts/); the embedded
    # default takes its machine's references after its first sessions
    status = session.outcome(report, ["--system", args.system, *extra], skips=skips,
                             junit=junit, findings=found, verdicts=results,
                             take_references=args.system.split(":")[0] == "local",
                             unstored=unstored)
    print(f"fabricsuite nightly: JUnit XML in {junit}; findings {found}; run report {report}")
    if unstored:
        print(f"fabricsuite nightly: BROKEN: the session was not stored: {unstored}; move "
              f"the database aside (ReFrame starts a new one), and read this session from its "
              f"run report (history, compare and report --reports {report})", file=sys.stderr)
    if args.retest_suspects:
        retested = _retest_suspects(args, env, options, extra, found, results, status)
        if retested is not None:
            return retested
    if status == session.WITHIN and returncode != 0:
        # ReFrame failed for a reason the report does not show (e.g. an error after the run)
        return _fail(f"reframe exited {returncode} although every case passed; see its output")
    return status


def _reframe(args: Any, env: dict, options: list[str], report: Path, skips: Path
             ) -> tuple[int, _Interrupted] | int:
    """One ReFrame session of `options` on the system, its report to `report`, its output
    folded (skips to `skips`): (ReFrame's exit status, how it was interrupted), or the nightly's
    exit status where it could not start."""
    reframe = Path(sys.executable).parent / "reframe"
    command = [str(reframe), "-C", str(REPO_ROOT / "config" / "settings.py"),
               "--system", args.system, "-r", "--report-file", str(report),
               *narrow(options, REPO_ROOT / "checks")]
    print(f"fabricsuite nightly: {shlex.join(command)}", flush=True)
    # every process of this ReFrame and its jobs inherits the mark (_leftovers)
    mark = f"{os.getpid()}-{time.time_ns()}"
    try:
        # its own session: a Ctrl-C at the terminal reaches the nightly only, which ends ReFrame
        # and its jobs in order (_Interrupted)
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, cwd=REPO_ROOT, env=dict(env, **{MARK_ENV: mark}),
                                bufsize=1, start_new_session=True, preexec_fn=_end_with_parent)
    except OSError as err:
        return _fail(f"cannot start reframe ({err.strerror}); run ci/setup.sh first")
    with _Interrupted(proc) as interrupted, open(skips, "a") as skip_log:
        console.fold(proc.stdout, sys.stdout, skip_log, args.progress_every)
        returncode = proc.wait()
    left = _leftovers(mark)
    if left:
        # a ReFrame killed outright (SIGKILL, the OOM killer) cancels nothing: its jobs, in
        # sessions of their own, measured on with the machine's lock released
        print(f"fabricsuite nightly: ReFrame (exit {returncode}) left {len(left)} process(es) "
              f"of its jobs running; ending them", file=sys.stderr, flush=True)
        _end(left)
    return returncode, interrupted


#: The environment variable that marks the processes of one ReFrame of a nightly and its jobs.
MARK_ENV = "FABRICSUITE_NIGHTLY_MARK"


def _leftovers(mark: str) -> set[tuple[int, str]]:
    """(pid, start time) of this user's processes whose environment carries `mark` (what a
    ReFrame of this nightly started, its jobs included, since the jobs inherit its environment;
    nothing else has it)."""
    wanted = f"{MARK_ENV}={mark}".encode()
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if entry.stat().st_uid != os.getuid():
                continue
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.add((int(entry.name), _start_time(int(entry.name))))
    return found


def _retest_suspects(args: Any, env: dict, options: list[str], extra: list[str],
                     found: Path, results: Path, status: int) -> int | None:
    """Each suspected node of the session's findings measured again (fabricsuite.data.findings.
    suspects): by its own check on it and a node its references know (`-J--nodelist`; the
    check's confirmation then runs on known nodes), a map suspect by a full map of it and three
    nodes the map measured healthy; and the findings settled (fabricsuite.data.findings.settle): a
    node that fails there is confirmed, one that passes cleared; then the outcome of the re-tests
    in one line with its exit status (the session's, at least 1 where a suspect was
    confirmed). None where nothing was re-tested, else the nightly's exit status."""
    try:
        doc, named = findings.read(found)
    except findings.FindingsError as err:
        print(f"fabricsuite nightly: no re-test of suspects: {err}", file=sys.stderr)
        return None
    retests = findings.suspects(named)
    if not retests:
        return None
    if args.system.split(":")[0] == "local":
        # one node: there is no other node to re-test against (and no Slurm for --nodelist)
        print("fabricsuite nightly: no re-test of suspects on the embedded default (one node)",
              file=sys.stderr)
        return None
    settings = retest_options(extra)
    settled: dict[str, list[str]] = {}
    for retest_of in retests:
        node, partner = retest_of.node, ",".join(retest_of.partners)
        stamp = file_utc()
        report = results / "reports" / f"run-report-{stamp}-retest-{node}.json"
        print(f"fabricsuite nightly: re-testing suspect {node} against {partner}: "
              f"{retest_of.check}", flush=True)
        ran = _reframe(args, env, [*options, "--session-extras", "tag=retest", "-n",
                                   f"^{re.escape(retest_of.check)}$", "-p",
                                   retest_of.finding.environ, f"-J--nodelist={node},{partner}",
                                   *settings, *(f"-S{s}" for s in retest_of.settings)],
                       report, report.with_suffix(".skips.jsonl"))
        if isinstance(ran, int):
            return ran
        if ran[1].signal is not None:
            return _interrupted(ran[1], report, _junit_path(args), results, args)
        if _aborted_by_others(report):
            return _interrupted("(the re-test's ReFrame aborted its cases on a signal this "
                                "nightly did not send)", report, _junit_path(args), results,
                                args)
        try:
            retest = json.loads(report.read_text())
        except (OSError, ValueError):
            retest = {}  # no report: undecided, the node stays suspected
        result = findings.settle(doc, node, partner, retest)
        settled.setdefault(result, []).append(node)
        print(f"fabricsuite nightly: suspect {node} re-tested against {partner}: {result}")
    findings.write(found, doc)
    after = max(status, session.REGRESSED) if "confirmed" in settled else status
    print("outcome after the re-test of suspects: " + "; ".join(
        f"{len(nodes)} {result} ({', '.join(nodes)})" for result, nodes in settled.items())
        + f"; findings {found} (exit {after})")
    return after


def _end_with_parent() -> None:
    """In ReFrame's process, before it runs: SIGTERM when the nightly dies, whatever ends it
    (SIGKILL included: ReFrame, in a session of its own, measured on with the machine's lock
    released). ReFrame answers SIGTERM by aborting its cases and cancelling their jobs. Linux's
    prctl(PR_SET_PDEATHSIG); elsewhere nothing."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _Interrupted:
    """SIGTERM, SIGINT or SIGHUP to the nightly (a cron or CI time-out, Ctrl-C, a closed
    terminal): ReFrame gets SIGTERM
    (it aborts its cases and cancels their jobs); whatever of its process tree is left after
    GRACE_S gets SIGTERM, then SIGKILL. Only processes started by this nightly are signalled."""

    # ReFrame aborts, cancels its jobs and writes its report: seconds, more on a slow host
    GRACE_S = 60.0

    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self.started = (proc.pid, _start_time(proc.pid))
        self.signal: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> _Interrupted:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, _frame: Any) -> None:
        if self.signal is not None:
            return
        self.signal = signum
        print(f"fabricsuite nightly: {signal.Signals(signum).name}: ending ReFrame and its jobs",
              file=sys.stderr, flush=True)
        tree = _descendants(self.proc.pid)
        with contextlib.suppress(ProcessLookupError):
            # ReFrame 4.10 answers SIGTERM by aborting the session and cancelling its jobs
            # ("force exit error: received signal 15"); SIGINT waits for the running case
            os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=self.GRACE_S)
        except subprocess.TimeoutExpired:
            # said, so that a session without its report says why it has none
            print(f"fabricsuite nightly: ReFrame did not end within {self.GRACE_S:.0f} s of "
                  f"SIGTERM; ending it and its jobs (it wrote no report)", file=sys.stderr,
                  flush=True)
        tree |= _descendants(self.proc.pid)
        _end(tree | {self.started})

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def _descendants(pid: int) -> set[tuple[int, str]]:
    """(pid, start time) of every process below `pid` (from /proc): the jobs a ReFrame started
    in sessions of their own are still its children."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add((child, _start_time(child)))
            todo.append(child)
    return found


def _start_time(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


def _end(processes: set[tuple[int, str]]) -> None:
    """SIGTERM, then after a grace SIGKILL, each (pid, start time) still the one recorded."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 0.0)):
        alive = [(pid, start) for pid, start in processes
                 if start and _start_time(pid) == start]
        for pid, _start in alive:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while alive and time.monotonic() < deadline:
            time.sleep(0.1)
            alive = [(pid, start) for pid, start in alive if _start_time(pid) == start]


def findings_path(results: Path, args: Any) -> Path:
    """Where this nightly's findings go (fabricsuite.data.findings; `fabricsuite act` reads the
    newest): RESULTS/findings/<mode>-<time>.json."""
    return results / "findings" / f"{args.mode}-{args.stamp}.json"


def _unstored(report: Path, results: Path) -> str | None:
    """Why the session of `report` is missing from RESULTS/results.db, or None (also where
    the report names no session: nothing to look for)."""
    uuid = _session_uuid(report)
    return store.storage_problem(results / "results.db", uuid) if uuid else None


def _aborted_by_others(report: Path) -> bool:
    """Whether ReFrame's report shows it was ended by a signal this nightly did not send (to
    ReFrame alone: cases.was_interrupted)."""
    try:
        return was_interrupted(json.loads(report.read_text()))
    except (OSError, ValueError, AttributeError, TypeError):
        return False


def _interrupted(interrupted: _Interrupted | str, report: Path, junit: Path, results: Path,
                 args: Any) -> int:
    """An interrupted session is not judged: its report is kept as interrupted-*.json (the
    workflows read run-report-*.json only), its session leaves the results database, and the
    JUnit says broken. Exit 2. `interrupted`: the nightly's signal, or what ended ReFrame."""
    how = interrupted if isinstance(interrupted, str) else \
        f"by {signal.Signals(interrupted.signal).name}"
    why = f"interrupted {how}: the session was not judged"
    uuid = None
    if report.is_file():
        kept = report.with_name(f"interrupted-{report.name}")
        report.replace(kept)
        uuid = _session_uuid(kept)
        if uuid:
            subprocess.run([str(Path(sys.executable).parent / "reframe"), "-C",
                            str(REPO_ROOT / "config" / "settings.py"),
                            "--delete-stored-sessions", uuid],
                           capture_output=True, text=True, cwd=REPO_ROOT,
                           env=dict(os.environ, FABRICSUITE_RESULTS=str(results)), timeout=120)
        why += f"; its report kept as {kept}, left out of history, compare and baseline"
    if session.write_broken_junit(junit, why):
        why += f"; JUnit XML in {junit}"
    # an interrupted session acts on nothing: its findings say so, and name no node
    with contextlib.suppress(OSError):
        findings.write(findings_path(results, args),
                       findings.interrupted_document(why, uuid or ""))
    return _fail(f"BROKEN: {why}")


def _session_uuid(report: Path) -> str | None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        uuid = json.loads(report.read_text()).get("session_info", {}).get("uuid")
        return uuid if isinstance(uuid, str) and re.fullmatch(r"[0-9a-f-]{36}", uuid) else None
    return None
