#!/usr/bin/env python3
"""The line fractions against ground truth on the emulated cluster (issue 50): how close the
inter-node bandwidth checks come to a declared 1 Gbit line rate when the links run at it, and
when they run at half of it; and the ping-pong latency at 8 B as a multiple of a promised one.

    bench/line_fractions.py [--sessions 3] [--promised-latency-us 20] [--out FILE]

Brings up 2 emulated nodes at 1 Gbit that declare 1 Gbit links (ci/emucluster.sh up --declare
1gbit) and promise a latency at 8 B (FABRICSUITE_EMU_PROMISED_LATENCY_US), then runs
NetbenchPingPong, NetbenchPingPongBandwidth, NetbenchBothway and NetbenchFlood at other-node
(short sweeps, sizes up to 1 MiB), with Open MPI and MPICH, --sessions times with the links at
the declared rate (healthy) and at 500 Mbit (half), interleaved. Prints each promised figure per
scenario and MPI (median, range) and how many runs missed the promise (a line fraction below
0.7 unless the partition declares another, a latency multiple above 1): healthy ones that
missed are false alarms, half-rate line fractions that kept it misses. Root, Slurm and munge
needed (ci/setup.sh); about 50 s a session here.
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
from fabricsuite.data.links import (  # noqa: E402
    DEFAULT_BANDWIDTH_FRACTION,
    PROMISE_MULTIPLE,
    PROMISE_UNITS,
)

BIN = Path(sys.executable).parent
CHECKS = ("NetbenchPingPong", "NetbenchPingPongBandwidth", "NetbenchBothway", "NetbenchFlood")
RATES = {"healthy": "1gbit", "half": "500mbit"}


def main() -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--sessions", type=int, default=3, help="sessions per scenario and MPI")
    parser.add_argument("--promised-latency-us", type=float, default=20.0,
                        help="the latency at 8 B the partition promises (default 20 us)")
    parser.add_argument("--out", help="JSON result file (default: print only)")
    args = parser.parse_args()
    if args.sessions < 1:
        parser.error("--sessions at least 1")
    if not args.promised_latency_us > 0:
        parser.error("--promised-latency-us above 0")
    made = bench_cluster("line_fractions.py", "fsf", 28000)
    if made is None or not bench_up(made[0], "line_fractions.py", "--nodes", "2", "--rate",
                                    "1gbit", "--declare", "1gbit"):
        return 2
    emu, work = made
    seen: dict[tuple[str, str, str, str], list[float]] = {}
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
                             str(work / "no-refs"), "MPIEXEC_TIMEOUT": "90",
                             "FABRICSUITE_EMU_PROMISED_LATENCY_US":
                             str(args.promised_latency_us)})
                    for report in (results / "reports").glob("run-report-*.json"):
                        for run in json.loads(report.read_text())["runs"]:
                            for case in run["testcases"]:
                                for key, perf in (case.get("perfvalues") or {}).items():
                                    if perf[4] in PROMISE_UNITS and perf[0] is not None:
                                        seen.setdefault((scenario, mpi, key.split(":")[-1],
                                                         perf[4]), []).append(perf[0])
                    print(f"session {session + 1} {scenario} {mpi}: "
                          f"{sum(len(v) for k, v in seen.items() if k[:2] == (scenario, mpi))}"
                          f" figures so far", flush=True)
            emu("rate", "1gbit")
    finally:
        emu("down")
    promise = DEFAULT_BANDWIDTH_FRACTION
    print(f"\n{'scenario':<8} {'mpi':<8} {'variable':<38} {'median':>7} {'range':>13}  missed "
          f"(a line fraction below {promise}, a latency multiple above 1)")
    table = []
    for (scenario, mpi, variable, unit), values in sorted(seen.items()):
        missed = sum(v > 1 if unit == PROMISE_MULTIPLE else v < promise for v in values)
        print(f"{scenario:<8} {mpi:<8} {variable:<38} {statistics.median(values):>7.3f} "
              f"{min(values):>6.3f}-{max(values):<6.3f}  {missed} of {len(values)}")
        table.append({"scenario": scenario, "mpi": mpi, "variable": variable,
                      "values": [round(v, 4) for v in values], "missed_promise": missed})
    if args.out:
        Path(args.out).write_text(json.dumps(
            {"promise": promise, "promised_latency_us": args.promised_latency_us,
             "figures": table}, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
