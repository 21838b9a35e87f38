#!/usr/bin/env python3
"""A link that goes down and comes back during a job, on the emulated cluster (issue 67).

    bench/link_flaps.py [--trials 5] [--down-s 2] [--json FILE]

Brings up 2 emulated nodes at 1 Gbit (ci/emucluster.sh up, its own prefix and state
directory) and, --trials times, runs `fabricsuite nightly` on NetbenchPingPongBandwidth
other-node (a real ReFrame session through sbatch and srun; --mpi, Open MPI by default); once
the job has read its counters on both nodes and measures, node 2's link is taken down for
--down-s seconds and up again (`ci/emucluster.sh link 2 down|up`). Right: the nightly exits
1, its outcome says `LINK FLAPPED <node 2> net/eth0`, and its findings file holds a confirmed
link-degraded finding of node 2 and nothing of node 1. Then one healthy session (no flap):
exit 0 and no LINK FLAPPED. Root, Slurm and munge needed (ci/setup.sh); about 15 s a trial
here.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from fabricsuite.commands import emucluster  # noqa: E402

BIN = Path(sys.executable).parent


def nightly(emu, results: Path, flap_s: float | None, mpi: str) -> tuple[int, str, list[dict]]:
    """One nightly, node 2's link down for `flap_s` seconds while it measures (None: none):
    (its exit status, its output, its findings)."""
    done: dict = {}
    run = threading.Thread(target=lambda: done.setdefault("proc", emu(
        "exec", str(BIN / "fabricsuite"), "nightly", "--system", "emucluster:nodes",
        "--results", str(results), "--", "-n", "NetbenchPingPongBandwidth%distance=other-node",
        "-p", mpi, "--max-retries=0", *emucluster.QUICK)))
    run.start()
    try:
        if flap_s is not None:
            deadline = time.monotonic() + 300
            while len(list(results.glob("stage/**/counters-before-*"))) < 2:
                if time.monotonic() > deadline or not run.is_alive():
                    break
                time.sleep(0.2)
            time.sleep(1.0)  # MPI is up and measuring
            emu("link", "2", "down")
            time.sleep(flap_s)
    finally:
        emu("link", "2", "up")
        run.join()
    proc = done["proc"]
    found = []
    for path in sorted((results / "findings").glob("*.json")):
        found += json.loads(path.read_text()).get("findings") or []
    return proc.returncode, proc.stdout + proc.stderr, found


def main() -> int:
    parser = emucluster.bench_parser(__doc__)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--down-s", type=float, default=2.0)
    parser.add_argument("--json", help="write the trials here")
    args = parser.parse_args()
    if args.trials < 1 or not args.down_s > 0:
        parser.error("--trials 1 or more, --down-s above 0")
    made = emucluster.bench_cluster("link_flaps.py", "fsf", 29000)
    if made is None or not emucluster.bench_up(made[0], "link_flaps.py", "--nodes", "2",
                                               "--rate", "1gbit"):
        return 2
    emu, work = made
    prefix = emu.env["FABRICSUITE_EMU_PREFIX"]
    trials = []
    try:
        for trial in range(1, args.trials + 2):
            flapped = trial <= args.trials
            code, said, found = nightly(emu, work / f"trial-{trial}",
                                        args.down_s if flapped else None, args.mpi)
            named = sorted((f["kind"], f["confidence"], f["nodes"]) for f in found)
            flap_lines = [line.strip() for line in said.splitlines() if "LINK FLAPPED" in line]
            if flapped:
                right = (code == 1 and any(f"LINK FLAPPED {prefix}2 net/eth0" in line
                                           for line in flap_lines)
                         and ("link-degraded", "confirmed", f"{prefix}2") in named
                         and not any(n == f"{prefix}1" for _, _, n in named))
            else:
                right = code == 0 and not flap_lines and not named
            scenario = "flap" if flapped else "healthy"
            trials.append({"scenario": scenario, "trial": trial, "right": right, "exit": code,
                           "named": named, "said": flap_lines[:2]})
            print(f"{scenario}-{trial}: {'right' if right else 'WRONG'}; exit {code}; "
                  f"{flap_lines[:1] or 'no LINK FLAPPED'}; findings {named}", flush=True)
    finally:
        emu("down")
    emucluster.bench_tally(trials, ("flap", "healthy"), args.json, down_s=args.down_s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
