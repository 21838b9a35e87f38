#!/usr/bin/env python3
"""The CPU wait netbench records on a quiet node and with a busy process on a measuring rank's
core: the measurement behind fabricsuite.data.interference.DISTURBED_FROM.

Runs `netbench pingpong` (2 ranks bound to CPUs 0 and 1, Open MPI) --runs times quiet and
--runs times with a busy loop pinned to CPU 1 (the quiet and disturbed runs alternate, so that a
slow phase of the machine hits both), and prints per condition the largest cpu_wait_fraction of
the two ranks (median, max and min over the runs), the 8-byte median latency, and how many runs
`fabricsuite.data.interference.describe` calls disturbed.

    python bench/cpu_wait.py --runs 10
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from fabricsuite.data.interference import DISTURBED_FROM, describe, worst_wait  # noqa: E402

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


def one_run(netbench: Path, out: Path) -> dict:
    cmd = ["mpirun.openmpi", "-np", "2", "--bind-to", "none",
           str(REPO / "config" / "launchers" / "bind-rank"), "0,1", str(netbench), "pingpong",
           "--sizes", "8,64K", "--repetitions", "11", "--json-file", str(out)]
    proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise SystemExit(f"cpu_wait.py: netbench failed: {proc.stderr[-2000:]}")
    return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10, help="runs per condition (default 10)")
    args = parser.parse_args()
    if (os.cpu_count() or 1) < 2:
        print("cpu_wait.py: needs 2 CPUs", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="fs-cpuwait-"))
    made = subprocess.run(["make", "-C", str(REPO / "src"), "netbench"], capture_output=True,
                          text=True)
    if made.returncode != 0:
        print(f"cpu_wait.py: make failed: {made.stderr[-2000:]}", file=sys.stderr)
        return 2
    netbench = REPO / "src" / "netbench"
    # a script's process is named after the script: "busyloop" in /proc, as a user would see it
    hog_script = work / "busyloop"
    hog_script.write_text("#!/bin/sh\nwhile :; do :; done\n")
    hog_script.chmod(0o755)
    figures: dict[str, list[tuple[float, float, bool]]] = {"quiet": [], "busy loop on CPU 1": []}
    for i in range(args.runs):
        for condition in figures:
            hog = None
            if condition != "quiet":
                hog = subprocess.Popen(["taskset", "-c", "1", str(hog_script)])
            try:
                result = one_run(netbench, work / f"r{i}.json")
            finally:
                if hog is not None:
                    hog.kill()
                    hog.wait()
            wait, _ = worst_wait(result["ranks"])
            latency = result["tables"]["pingpong"][0]["latency_median_us"]  # 8 B
            figures[condition].append((wait, latency, bool(describe(result["ranks"]))))
    print(f"{'condition':22} {'wait median':>12} {'min':>8} {'max':>8} {'latency 8B us':>14} "
          f"{'disturbed':>10}")
    for condition, rows in figures.items():
        waits = [w for w, _, _ in rows]
        print(f"{condition:22} {statistics.median(waits):12.4f} {min(waits):8.4f} "
              f"{max(waits):8.4f} {statistics.median(lat for _, lat, _ in rows):14.3f} "
              f"{sum(d for _, _, d in rows):6d}/{len(rows)}")
    print(f"threshold (fabricsuite.data.interference.DISTURBED_FROM): {DISTURBED_FROM}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
