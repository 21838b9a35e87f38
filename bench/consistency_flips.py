#!/usr/bin/env python3
"""Does a self-consistency rule flip between sessions on a healthy machine? The measurement
behind NetbenchSelfConsistency's rule_margin (checks/collective_models.py).

Runs --sessions real ReFrame sessions of NetbenchSelfConsistency on the embedded default
(`local`, both MPIs, 1x2), each with the check's margin and (--margins both), alternating so
that a slow phase hits both, with `-S rule_margin=0` (the guideline as written), against an
empty reference directory (the built-in reference: 0 violations, no known findings), with the
README's confirmation (--max-retries=3, pauses from --confirm-pause-s). A rule counts as
violated in a session when its violation was confirmed (outside in the first run and the last,
fabricsuite.data.cases.confirmed_variables), as the session's verdict judges it; a run whose node
was disturbed is left out. Prints, per margin, MPI, rule and size, in how many sessions the rule
was violated; a rule violated in some sessions and not in others flips. Run it on an otherwise
idle machine: a test suite beside it disturbs it.

    python bench/consistency_flips.py --sessions 10 [--margins check|both]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from fabricsuite.data.cases import case_key, confirmed_variables, final_cases, first_runs  # noqa: E402

REFRAME = str(Path(sys.executable).parent / "reframe")


def session(results: Path, margin: str | None, pause_s: float) -> list[tuple[dict, set]]:
    """(final case, confirmed violated variables) of the SelfConsistency cases of one session
    (the check's own margin: None)."""
    empty = results / "no-references"
    empty.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, FABRICSUITE_RESULTS=str(results), RFM_REFERENCE_PREFIX=str(empty))
    report = results / "report.json"
    cmd = [REFRAME, "-C", "config/settings.py", "-c", "checks/collective_models.py",
           "--system", "local", "--exec-policy=serial", "-r", "-n",
           "NetbenchSelfConsistency", "--report-file", str(report), "--max-retries=3",
           "-S", f"confirm_pause_s={pause_s:g}"]
    if margin is not None:
        cmd += ["-S", f"rule_margin={margin}"]
    subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    data = json.loads(report.read_text())
    first = first_runs(data)
    return [(c, confirmed_variables(c, first.get(case_key(c))) if c["result"] == "fail"
             else set()) for c in final_cases(data)
            if c["name"].startswith("NetbenchSelfConsistency") and c["result"] != "skip"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=10, help="sessions per margin")
    parser.add_argument("--margins", choices=("check", "both"), default="both",
                        help="the check's margin only, or also margin 0 (default both)")
    parser.add_argument("--confirm-pause-s", type=float, default=20.0,
                        help="first confirmation pause (the partition's default: 20)")
    args = parser.parse_args()
    counts: dict[tuple, list[int]] = defaultdict(list)
    disturbed = defaultdict(int)
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(args.sessions):
            for margin in (None, "0") if args.margins == "both" else (None,):
                label = "check's margin" if margin is None else "margin 0"
                where = Path(tmp) / f"{n}-{'margin0' if margin else 'check'}"
                for case, confirmed in session(where, margin, args.confirm_pause_s):
                    if case.get("interference"):
                        disturbed[label] += 1
                        continue
                    for key in case.get("perfvalues") or {}:
                        variable = key.split(":")[-1]
                        counts[(label, case["environ"], variable)].append(
                            int(variable in confirmed))
                print(f"session {n + 1} ({label}) done", file=sys.stderr)
    flips = 0
    for (label, environ, variable), values in sorted(counts.items()):
        if any(values):
            flip = 0 < sum(values) < len(values)
            flips += flip
            print(f"{label:15s} {environ:8s} {variable:45s} violated in {sum(values)} of "
                  f"{len(values)} sessions{'  FLIPS' if flip else ''}")
    for label in ("check's margin", "margin 0"):
        rules = [v for (lab, _e, _v), v in counts.items() if lab == label]
        flipping = sum(1 for v in rules if 0 < sum(v) < len(v))
        print(f"{label}: {flipping} of {len(rules)} rule sizes flip; {disturbed[label]} "
              f"disturbed case(s) left out")
    return 0


if __name__ == "__main__":
    sys.exit(main())
