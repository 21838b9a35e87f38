#!/usr/bin/env python3
"""Link findings against ground truth on the emulated cluster (issue 50).

    bench/link_findings.py [--trials 10] [--nodes 4] [--out FILE]

Brings up --nodes emulated nodes at 1 Gbit that declare 1 Gbit links (ci/emucluster.sh up
--declare 1gbit, its own prefix and state directory), then runs the FabricLinks check
(checks/links.py: every node's links as its OS reports them, through one srun task per node)
--trials times in each of two scenarios, interleaved:

- degraded: one node's link (a different node each trial) shaped to half the declared rate:
  expected exactly one finding, "LINK DEGRADED <that node> net/eth0: 0.5 Gb/s, declared 1 Gb/s",
  and the session's verdict LINK DEGRADED (exit 1);
- healthy: every link at the declared rate: expected no finding, PASSED (exit 0).

Each trial is a real ReFrame session through sbatch/srun; no MPI program runs, so a trial takes
seconds. Root, Slurm and munge needed (ci/setup.sh). Prints a table (right of trials per
scenario, seconds per trial) and, with --out, writes it as JSON.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from fabricsuite.commands import session  # noqa: E402
from fabricsuite.commands.emucluster import bench_cluster, bench_parser, bench_up  # noqa: E402
from fabricsuite.data.session_verdict import LINK_DEGRADED, verdicts  # noqa: E402

BIN = Path(sys.executable).parent
SCENARIOS = ("degraded", "healthy")


def read_links(emu, results: Path) -> tuple[int, list[str], str]:
    """One FabricLinks session: (ReFrame's exit status, the findings, the session's verdict)."""
    proc = emu("exec", str(BIN / "reframe"), "-C", "config/settings.py", "-c", "checks/links.py",
               "--system", "emucluster:nodes", "-n", "FabricLinks", "-p", "openmpi",
               "--exec-policy=serial", "-r", env={"FABRICSUITE_RESULTS": str(results)})
    reports = sorted((results / "reports").glob("run-report-*.json"))
    if not reports:
        return proc.returncode, [f"no report: {proc.stdout[-500:]}"], "?"
    report = json.loads(reports[-1].read_text())
    findings = sorted({line for case, verdict in verdicts(report) if verdict == LINK_DEGRADED
                       for line in str(case.get("link_findings") or "").split("; ") if line})
    return proc.returncode, findings, session.classify(report)[1].split(":")[0]


def main() -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--trials", type=int, default=10, help="sessions per scenario")
    parser.add_argument("--nodes", type=int, default=4, help="emulated nodes (2 or more)")
    parser.add_argument("--out", help="JSON result file (default: print only)")
    args = parser.parse_args()
    if args.trials < 1 or args.nodes < 2:
        parser.error("--trials at least 1, --nodes at least 2")
    made = bench_cluster("link_findings.py", "fsl", 27000)
    if made is None or not bench_up(made[0], "link_findings.py", "--nodes", str(args.nodes),
                                    "--rate", "1gbit", "--declare", "1gbit"):
        return 2
    emu, work = made
    prefix = emu.env["FABRICSUITE_EMU_PREFIX"]
    table = {s: {"trials": 0, "right": 0, "seconds": [], "outcomes": {}} for s in SCENARIOS}
    try:
        for trial in range(args.trials):
            for scenario in SCENARIOS:
                slow = trial % args.nodes + 1
                if scenario == "degraded":
                    emu("rate", "500mbit", str(slow))
                start = time.monotonic()
                try:
                    code, findings, verdict = read_links(emu, work / f"{scenario}-{trial}")
                finally:
                    emu("rate", "1gbit")
                seconds = time.monotonic() - start
                expected = ([f"LINK DEGRADED {prefix}{slow} net/eth0: 0.5 Gb/s, declared 1 Gb/s"]
                            if scenario == "degraded" else [])
                right = findings == expected and (verdict == "LINK DEGRADED") == bool(expected)
                row = table[scenario]
                row["trials"] += 1
                row["right"] += right
                row["seconds"].append(round(seconds, 1))
                word = verdict + (f" ({'; '.join(findings)})" if findings else "")
                row["outcomes"][word] = row["outcomes"].get(word, 0) + 1
                print(f"trial {trial + 1} {scenario}: exit {code}, {word}, {seconds:.0f} s",
                      flush=True)
    finally:
        emu("down")
    rows = [f"{name:<10} {row['right']:>4} of {row['trials']:<3} "
            f"{statistics.median(row['seconds']):>8.1f}  {len(row['outcomes'])} distinct"
            for name, row in table.items()]
    print("\n".join(["", f"{'scenario':<10} {'right':>10}  {'median s':>8}  outcomes", *rows]))
    if args.out:
        Path(args.out).write_text(json.dumps({"nodes": args.nodes, "scenarios": table},
                                             indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
