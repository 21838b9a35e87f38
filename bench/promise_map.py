#!/usr/bin/env python3
"""Does the all-pairs map name what lies below the fabric's promise? (issue 50)

    bench/promise_map.py [--trials 3] [--nodes 8] [--leaves 4] [--rate 200mbit]
                         [--fraction 0.6] [--json FILE]

Brings up an emulated cluster of its own (ci/emucluster.sh up --leaves L --burst 16kb, node
links at RATE, uplinks unshaped), whose partition would declare RATE per node, and runs three
scenarios of --trials each, the slow part a different one each trial:

- fabric: every node link at --fraction of RATE: expected "BELOW PROMISE the fabric";
- leaf:   one leaf's uplink at --fraction of RATE (both directions), every node link at RATE:
          expected that leaf ("BELOW PROMISE leaf leafL (its uplink)");
- node:   one node's link at --fraction of RATE: expected that node;
- healthy: nothing slow: expected no finding.

A trial is one `netbench matrix` job through srun (one rank per node, the full map, suspects
re-tested alone, as NetbenchMatrix runs it), judged by fabricsuite.data.map_promise.below_promise
against RATE and the default promise (fabricsuite.data.links.DEFAULT_BANDWIDTH_FRACTION). The
relative rule
(each pair against the map's best) is printed beside it: it cannot see the fabric scenario.
Root, Slurm and munge needed; about 30-60 s a trial here.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from fabricsuite.commands.emucluster import OPENMPI_TCP, EmuCluster, bench_tally, srun_matrix  # noqa: E402
from fabricsuite.data import map_promise, switches  # noqa: E402
from fabricsuite.data.links import DEFAULT_BANDWIDTH_FRACTION, tc_rate_gbps  # noqa: E402

MATRIX_OPTIONS = ("--max-size", "256K", "--repetitions", "3", "--time-cap-ms", "20",
                  "--progress-every", "0")
SCENARIOS = ("fabric", "leaf", "node", "healthy")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--leaves", type=int, default=4)
    parser.add_argument("--rate", default="200mbit")
    parser.add_argument("--fraction", type=float, default=0.6)
    parser.add_argument("--json", help="write the trials here")
    args = parser.parse_args()
    if os.geteuid() != 0 or not shutil.which("slurmctld"):
        print("promise_map.py: needs root and Slurm (ci/setup.sh)", file=sys.stderr)
        return 2
    rate_gbps = tc_rate_gbps(args.rate)
    if rate_gbps is None or args.leaves < 3 or args.trials < 1 or not 0 < args.fraction < 1:
        print("promise_map.py: --rate a tc rate (200mbit), --leaves 3 or more (two leaves' "
              "uplinks are crossed by the same pairs), --trials 1 or more, --fraction in (0, 1)",
              file=sys.stderr)
        return 2
    slow = f"{round(rate_gbps * 1000 * args.fraction)}mbit"
    trials = []
    with tempfile.TemporaryDirectory(prefix="promise-map-") as tmp:
        work = Path(tmp)
        build = work / "src"
        shutil.copytree(REPO / "src", build, ignore=shutil.ignore_patterns("netbench", "*.so"))
        subprocess.run(["make", "-C", str(build), "netbench", "MPICC=mpicc.openmpi"],
                       capture_output=True, check=True)
        prefix = f"fspm{os.getpid() % 10000}"
        emu = EmuCluster(prefix, work / "emu", 29000 + os.getpid() % 1000 * 2, timeout=600)
        up = emu("up", "--nodes", str(args.nodes), "--leaves", str(args.leaves), "--rate",
                 args.rate, "--burst", "16kb")
        if up.returncode != 0:
            print(f"promise_map.py: emucluster up failed: {up.stderr[-2000:]}", file=sys.stderr)
            return 1
        try:
            for trial in range(args.trials):
                for scenario in SCENARIOS:
                    leaf = trial % args.leaves + 1
                    node = trial % args.nodes + 1
                    expected = {"fabric": "BELOW PROMISE the fabric",
                                "leaf": f"BELOW PROMISE leaf leaf{leaf} (its uplink)",
                                "node": f"BELOW PROMISE node {prefix}{node}",
                                "healthy": None}[scenario]
                    if scenario == "fabric":
                        emu("rate", slow)
                    elif scenario == "leaf":
                        emu("rate", slow, "--link", f"uplink{leaf}")
                    elif scenario == "node":
                        emu("rate", slow, str(node))
                    out = work / "matrix.json"
                    out.unlink(missing_ok=True)
                    try:
                        job = emu("exec", *srun_matrix(build / "netbench", args.nodes, out,
                                                       *MATRIX_OPTIONS, minutes=3),
                                  env=OPENMPI_TCP, timeout=300)
                    finally:
                        emu("rate", args.rate)
                        emu("rate", "none", "--link", "uplinks")
                    if not out.exists():
                        # a failed job (the product's check calls it broken and tries again),
                        # never a finding: said with what the job said last
                        said = (job.stderr.strip().splitlines() or [""])[-1][:200]
                        why = f"no map (the job exited {job.returncode}: {said})"
                        print(f"{scenario} {trial + 1}: {why}", flush=True)
                        trials.append({"scenario": scenario, "trial": trial + 1, "right": False,
                                       "found": [why]})
                        continue
                    result = json.loads(out.read_text())
                    pairs = switches.pairs_of(result["tables"]["pairs"])
                    tree = switches.parse_topology(emu("exec", "scontrol", "show",
                                                       "topology").stdout)
                    found = map_promise.below_promise(tree, pairs, rate_gbps,
                                                   DEFAULT_BANDWIDTH_FRACTION)
                    right = ([f.split(":")[0] for f in found] == [expected] if expected
                             else not found)
                    trials.append({"scenario": scenario, "trial": trial + 1, "right": right,
                                   "found": found,
                                   "relative_bad_pairs": result["summary"]["bad_pairs"]})
                    print(f"{scenario} {trial + 1}: {'right' if right else 'WRONG'}; "
                          f"{found or 'no finding'}; relative rule: "
                          f"{result['summary']['bad_pairs']} bad pair(s)", flush=True)
        finally:
            emu("down")
    bench_tally(trials, SCENARIOS, args.json, rate=args.rate, fraction=args.fraction)
    return 0


if __name__ == "__main__":
    sys.exit(main())
