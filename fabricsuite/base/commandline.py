"""What every `fabricsuite` subcommand shares (history, compare, report, nightly, baseline).

- `add_selection_options`: --system, --results and, where the command has them, --since and
  --reports, with one wording;
- `results_dir`: RESULTS, from --results, else $FABRICSUITE_RESULTS, else results/;
- `check_system` and `SYSTEM_NAME`: the one check of a --system value;
- `UsageError` and `one_line_errors`: bad input is one line on stderr that names the fix,
  `fabricsuite COMMAND: ...`, and exit status 2, never a traceback;
- `is_within`: the one test of a threshold an option gives (finite, in its range: NaN and
  infinity compare false or true with anything and would judge nothing).

A module of its own, not part of fabricsuite/commands/cli.py: the subcommand modules import it and
cli imports them, and `python -m fabricsuite.commands.cli` runs cli as `__main__`, a second copy
whose exception class would not be the one the modules raise.
"""

from __future__ import annotations

import functools
import math
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fabricsuite import REPO_ROOT

#: A ReFrame system name, e.g. local or emucluster (re.fullmatch).
SYSTEM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
#: Exit status of bad input.
USAGE = 2


class UsageError(ValueError):
    """Bad input (an option, a file, no stored runs): one line that names the fix, exit 2."""


def add_selection_options(parser: Any, *, since: bool = False, reports: bool = False,
                          partition: bool = False, rejudge: bool = False) -> None:
    """Add --system (required; SYSTEM:PARTITION too with `partition`), --results and, if asked,
    --since DATE, --reports FILE... and --rejudge to a subcommand's parser."""
    parser.add_argument("--system", required=True,
                        help="ReFrame system (or system:partition) to run on, e.g. local"
                        if partition else "ReFrame system name, e.g. local")
    if since:
        parser.add_argument("--since", metavar="DATE",
                            help="only runs from DATE on: 2026-11-23, 2026-11-23T20:00 (UTC), "
                                 "20261123T2000 or now-7d")
    parser.add_argument("--results", default=None,
                        help="results directory (default: $FABRICSUITE_RESULTS, else results/)")
    if reports:
        parser.add_argument("--reports", nargs="+", metavar="FILE",
                            help="read these JSON run reports instead of the results database")
    if rejudge:
        parser.add_argument("--rejudge", action="store_true",
                            help="judge past sessions again against today's reference files "
                                 "(default: each session's verdict as stored when it ended, "
                                 "RESULTS/verdicts/; a session without one is judged now)")


def results_dir(args: Any) -> Path:
    """RESULTS: --results, else $FABRICSUITE_RESULTS, else results/ in the repository; a
    relative path is the caller's (resolved here: ReFrame runs in the repository)."""
    return Path(getattr(args, "results", None) or os.environ.get("FABRICSUITE_RESULTS")
                or REPO_ROOT / "results").absolute()


def check_system(system: str, *, partition: bool = False) -> str:
    """`system` if it is a ReFrame system name (or SYSTEM:PARTITION with `partition`), else a
    UsageError naming the fix."""
    names = system.split(":", 1) if partition else [system]
    if all(SYSTEM_NAME.fullmatch(name) for name in names):
        return system
    if partition:
        raise UsageError(f"--system {system!r} is not a ReFrame system name (letters, digits, "
                         f"'_', '-', '.'; or SYSTEM:PARTITION), e.g. --system local or "
                         f"--system emucluster:nodes")
    raise UsageError(f"--system {system!r} is not a ReFrame system name (letters, digits, '_', "
                     f"'-', '.'), e.g. --system local")


def variable_pattern(text: str | None, error: type[Exception] = UsageError) -> re.Pattern | None:
    """--variable REGEX compiled (None when not given), else `error` naming the option."""
    try:
        return re.compile(text) if text else None
    except re.error as err:
        raise error(f"--variable {text!r} is no regular expression ({err})") from None


def is_within(value: Any, low: float, high: float = math.inf, *, open_ends: bool = False) -> bool:
    """Whether `value` is a finite number in [low, high] ((low, high) with `open_ends`): a
    threshold that can judge something. NaN fails every comparison, so `value < 0` lets it
    through; infinity passes `>= 0` and then no change can reach it."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return False
    return low < value < high if open_ends else low <= value <= high


def fail(command: str, message: Any, status: int = USAGE) -> int:
    """Print `fabricsuite COMMAND: MESSAGE` as one line on stderr; return `status` (2)."""
    print(f"fabricsuite {command}: {message}", file=sys.stderr)
    return status


def one_line_errors(command: str) -> Callable[[Callable[[Any], int]], Callable[[Any], int]]:
    """Decorator of a subcommand's run(args): a UsageError it raises becomes one line on stderr
    (`fail`) and exit status 2."""
    def decorate(run: Callable[[Any], int]) -> Callable[[Any], int]:
        @functools.wraps(run)
        def guarded(args: Any) -> int:
            try:
                return run(args)
            except UsageError as err:
                return fail(command, err)
        return guarded
    return decorate


def command_output(cmd: list[str], what: str, timeout: float, where: str,
                   error: type[Exception] = UsageError) -> str:
    """The stdout of a query of the scheduler (`sinfo`, `scontrol`, `srun`; no shell), else
    `error` in one line: not installed (`where` says where to run instead), no answer in
    `timeout` s, or its last line of error output."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise error(f"{cmd[0]} not found: {where}") from None
    except subprocess.TimeoutExpired:
        raise error(f"{what} ({shlex.join(cmd)}) did not answer in {timeout:g} s; is "
                    f"slurmctld up?") from None
    if proc.returncode != 0:
        last = ((proc.stderr or proc.stdout).strip().splitlines() or ["no output"])[-1]
        raise error(f"{what} failed ({shlex.join(cmd)}): {last}")
    return proc.stdout
