#!/usr/bin/env python3
"""The line fractions against ground truth on the emulated cluster (issue 50): how close the
inter-node bandwidth checks come to a declared 1 Gbit line rate when the links run at it, and
when they run at half of it.

    bench/line_fractions.py [--sessions 3] [--out FILE]

Brings up 2 emulated nodes at 1 Gbit that declare 1 Gbit links (ci/emucluster.sh up --declare
1gbit), then runs NetbenchPingPongBandwidth, NetbenchBothway and NetbenchFlood at other-node
(short sweeps, sizes up to 1 MiB), with Open MPI and MPICH, --sessions times with the links at
the declared rate (healthy) and at 500 Mbit (half), interleaved. Prints each variable's line
fractions per scenario and MPI (median, range) and how many runs fell below the promise (0.7
unless the partition declares another): healthy ones below it are false alarms, half-rate ones
above it misses. Root, Slurm and munge needed (ci/setup.sh); about 40 s a session here.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from fabricsuite.commands.emucluster import QUICK, bench_cluster, bench_parser, bench_up  # noqa: E402
from fabricsuite.data.links import DEFAULT_BANDWIDTH_FRACTION, LINE_FRACTION  # noqa: E402

BIN = Path(sys.executable).parent
CHECKS = ("NetbenchPingPongBandwidth", "NetbenchBothway", "NetbenchFlood")
RATES = {"healthy": "1gbit", "half": "500mbit"}


def main() -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--sessions", type=int, default=3, help="sessions per scenario and MPI")
    parser.add_argument("--out", help="JSON result file (default: print only)")
    args = parser.parse_args()
    if args.sessions < 1:
        parser.error("--sessions at least 1")
    made = bench_cluster("line_fractions.py", "fsf", 28000)
    if made is None or not bench_up(made[0], "line_fractions.py", "--nodes", "2", "--rate",
                                    "1gbit", "--declare", "1gbit"):
        return 2
    emu, work = made
    seen: dict[tuple[str, str, str], list[float]] = {}
    try:
        for session in range(args.sessions):
            for scenario, rate in RATES.items():
                emu("rate", rate)
                for mpi in ("openmpi", "mpich"):
                    results = work / f"{scenario}-{mpi}-{session}"
                    names = [arg for check in CHECKS
                             for arg in ("-n", f"{check}%distance=other-node")]
                    emu("exec", str(BIN / "reframe"), "-C", "config/settings.py", "-c",
                        "checks/pt2pt.py", "--system", "emucluster:nodes", *names, "-p", mpi,
                        "--exec-policy=serial", "-r", "-S", "require_reference=false", *QUICK,
                        env={"FABRICSUITE_RESULTS": str(results), "RFM_REFERENCE_PREFIX":
                             str(work / "no-refs"), "MPIEXEC_TIMEOUT": "90"})
                    for report in (results / "reports").glob("run-report-*.json"):
                        for run in json.loads(report.read_text())["runs"]:
                            for case in run["testcases"]:
                                for key, perf in (case.get("perfvalues") or {}).items():
                                    if perf[4] == LINE_FRACTION and perf[0] is not None:
                                        seen.setdefault((scenario, mpi, key.split(":")[-1]),
                                                        []).append(perf[0])
                    print(f"session {session + 1} {scenario} {mpi}: "
                          f"{sum(len(v) for k, v in seen.items() if k[:2] == (scenario, mpi))}"
                          f" figures so far", flush=True)
            emu("rate", "1gbit")
    finally:
        emu("down")
    promise = DEFAULT_BANDWIDTH_FRACTION
    print(f"\n{'scenario':<8} {'mpi':<8} {'variable':<38} {'median':>7} {'range':>13}  "
          f"below {promise}")
    table = []
    for (scenario, mpi, variable), values in sorted(seen.items()):
        below = sum(v < promise for v in values)
        print(f"{scenario:<8} {mpi:<8} {variable:<38} {statistics.median(values):>7.3f} "
              f"{min(values):>6.3f}-{max(values):<6.3f}  {below} of {len(values)}")
        table.append({"scenario": scenario, "mpi": mpi, "variable": variable,
                      "values": [round(v, 4) for v in values], "below_promise": below})
    if args.out:
        Path(args.out).write_text(json.dumps({"promise": promise, "figures": table}, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
