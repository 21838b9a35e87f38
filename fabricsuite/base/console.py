"""ReFrame's console output, folded to what a person reads: `reframe ... | python -m
fabricsuite.base.console --skips FILE`.

ReFrame prints two lines for every test case it skips (`[ RUN ]` and `[ SKIP ] ... [reason]`);
on a small system most of the suite's cases are skipped (node counts and suites it does not
have), so the few that ran drown in them. This filter

- passes every other line through unchanged, as it arrives;
- drops each skipped case's RUN/SKIP pair and records it (case, reason) as one JSON line in
  --skips, for the session summary (fabricsuite/commands/session.py), which prints the skips grouped
  by reason with counts; ReFrame's run report does not keep skip reasons;
- prints a progress line at least every --every seconds while cases run (case n of N done,
  elapsed, an estimate of the time left at the pace so far), so that a long acceptance run or
  an all-pairs map shows where it is even when one case runs for many minutes.

It never changes the exit status: the shell takes ReFrame's (`${PIPESTATUS[0]}`).
"""

from __future__ import annotations

import argparse
import json
import queue
import re
import sys
import threading
import time
from pathlib import Path
from typing import IO

from fabricsuite.base.commandline import is_within

#: `[ SKIP ] (12/308) NetbenchPingPong %distance=other-node /3ab4 @local:default+openmpi [why]`
SKIP = re.compile(r"^\[\s*SKIP\s*\] \(\s*(\d+)/(\d+)\) (.+? @\S+) \[(.*)\]\s*$")
RUN = re.compile(r"^\[\s*RUN\s*\] (.+? @\S+)\s*$")
#: every finished case: OK, FAIL, ERROR, SKIP, ABORT, XFAIL, XPASS carry ReFrame's (n/N)
DONE = re.compile(r"^\[\s*(OK|FAIL|ERROR|SKIP|ABORT|XFAIL|XPASS)\s*\] \(\s*(\d+)/(\d+)\)")
#: ReFrame colours its status words even into a pipe
ANSI = re.compile(r"\x1b\[[0-9;]*m")
#: how long a RUN line is held back waiting to see whether its case is skipped: ReFrame prints
#: the SKIP right after it (the skip decision is in setup, before any job)
HOLD_S = 0.5


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


class Progress:
    """Counts finished cases and says where the session is."""

    def __init__(self, clock=time.monotonic) -> None:
        self.clock = clock
        self.start = clock()
        self.done = self.total = 0
        self.counts: dict[str, int] = {}

    def seen(self, line: str) -> None:
        m = DONE.match(line)
        if m:
            status, done, total = m.group(1), int(m.group(2)), int(m.group(3))
            if total != self.total:  # a retry round counts its own cases
                self.counts = {}
            self.done, self.total = done, total
            self.counts[status] = self.counts.get(status, 0) + 1

    def line(self) -> str:
        elapsed = self.clock() - self.start
        where = (f"case {self.done} of {self.total} done" if self.total else
                 "no case finished yet")
        parts = ", ".join(f"{n} {s.lower()}" for s, n in sorted(self.counts.items()))
        text = f"[ fabricsuite ] {where}" + (f" ({parts})" if parts else "")
        text += f", {_duration(elapsed)} elapsed"
        if 0 < self.done < self.total:
            left = elapsed / self.done * (self.total - self.done)
            text += f", about {_duration(left)} left at this pace"
        return text


def fold(source: IO[str], sink: IO[str], skips: IO[str] | None, every: float = 60.0,
         clock=time.monotonic) -> int:
    """Copy `source` to `sink` without skipped cases' lines; return how many were folded."""
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        for raw in source:
            lines.put(raw)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    progress = Progress(clock)
    held: str | None = None  # a RUN line whose case may yet be skipped
    held_since = 0.0
    last_progress = clock()
    folded = 0

    def emit(text: str) -> None:
        sink.write(text)
        sink.flush()

    # Python logging's report of a log record it could not write (ReFrame's log on a full
    # disk): a traceback per record, thousands of lines; counted, and one line said at the end.
    logging_errors, in_logging_error, logging_cause = 0, False, ""
    while True:
        timeout = HOLD_S if held is not None else max(0.1, every - (clock() - last_progress))
        try:
            raw = lines.get(timeout=min(timeout, every))
        except queue.Empty:
            raw = ""
        if raw is None:
            break
        now = clock()
        if raw:
            text = ANSI.sub("", raw.rstrip("\n"))
            if text == "--- Logging error ---" or in_logging_error:
                logging_errors += text == "--- Logging error ---"
                in_logging_error = not text.startswith("Arguments:")
                if re.match(r"^\w+(Error|Exception): ", text):
                    logging_cause = text
                continue
            progress.seen(text)
            skip = SKIP.match(text)
            if skip:
                folded += 1
                if held is not None and RUN.match(ANSI.sub("", held)).group(1) == skip.group(3):
                    held = None
                elif held is not None:
                    emit(held + "\n")
                    held = None
                if skips is not None:
                    try:
                        skips.write(json.dumps({"case": skip.group(3),
                                                "reason": skip.group(4)}) + "\n")
                        skips.flush()
                    except OSError as err:  # a full disk: the session goes on, unrecorded
                        emit(f"[ fabricsuite ] cannot record skipped cases any more "
                             f"({err.strerror}); the outcome counts them from the report\n")
                        skips = None
            else:
                if held is not None:
                    emit(held + "\n")
                    held = None
                if RUN.match(text):
                    held, held_since = raw.rstrip("\n"), now
                else:
                    emit(raw if raw.endswith("\n") else raw + "\n")
        if held is not None and now - held_since >= HOLD_S:
            emit(held + "\n")
            held = None
        if now - last_progress >= every:
            emit(progress.line() + "\n")
            last_progress = now
    if held is not None:
        emit(held + "\n")
    if logging_errors:
        emit(f"[ fabricsuite ] ReFrame could not write its log {logging_errors} time(s)"
             f"{f' ({logging_cause})' if logging_cause else ''}; those tracebacks are left "
             f"out\n")
    return folded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fabricsuite.base.console",
        description="Fold skipped cases out of ReFrame's output (recorded in --skips) and "
                    "print progress at least every --every seconds.")
    parser.add_argument("--skips", help="append one JSON line per skipped case here")
    parser.add_argument("--every", type=float, default=60.0, metavar="S",
                        help="seconds between progress lines (default 60)")
    args = parser.parse_args(argv)
    if not is_within(args.every, 0, open_ends=True):
        print("python -m fabricsuite.base.console: --every must be positive seconds, e.g. 60",
              file=sys.stderr)
        return 2
    try:
        if args.skips:  # ReFrame creates the reports directory only at the session's end
            Path(args.skips).parent.mkdir(parents=True, exist_ok=True)
        out = open(args.skips, "a") if args.skips else None  # noqa: SIM115 (closed below)
    except OSError as err:
        print(f"python -m fabricsuite.base.console: cannot write --skips {args.skips}: "
              f"{err.strerror}; check the directory", file=sys.stderr)
        out = None
    try:
        folded = fold(sys.stdin, sys.stdout, out, args.every)
    finally:
        if out is not None:
            out.close()
    if folded:
        print(f"[ fabricsuite ] {folded} skipped case(s) folded; the summary below groups "
              f"them by reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())
