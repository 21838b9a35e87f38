#!/usr/bin/env python3
"""Does `fabricsuite act` drain the bad node and nothing else? (issue 52's acceptance)

    bench/act_emucluster.py [--trials 10] [--slower 0.15] [--scenarios node,port,...] [--json FILE]

Brings up 8 emulated nodes under 2 leaves (its own prefix, state directory and ports; node
links at 200 Mbit, uplinks unshaped, Slurm's topology/tree), then runs five scenarios
--trials times each, interleaved, each trial the real workflow: `fabricsuite nightly` of
NetbenchMatrix at 8 nodes (ReFrame through sbatch and srun; one confirmation round, `--
--max-retries=1`, to keep a trial near a minute), which writes the session's findings, then
`fabricsuite act --mode drain` against the cluster's real slurmctld, and what Slurm shows:

- healthy: every link at the rate: expected no node drained;
- node:    one node's link --slower slower (a different node each trial): expected that node
           drained, with the suite's reason, and no other;
- fabric:  every node link --slower slower, the partition declaring 200 Mbit: expected no node
           drained (every node's link degraded: over the cap) and the fabric reported;
- leaf:    leaf 1's uplink at a quarter of the rate: expected no node drained, the uplink
           reported;
- harness: netbench given an option it refuses (`matrix_options=--no-such-option`): expected no
           node drained and a broken-harness finding;
- port:    the switch port toward one node at half the rate (a fault no link reading sees: the
           node reports its link healthy), a quick map of one round (`-S NetbenchMatrix.rounds=1`)
           that measures the node in one pair only, and `nightly --retest-suspects`: the pair
           suspected, each node re-tested in a map of 4 with healthy nodes; expected that node
           drained alone (its mate cleared, or left suspected where its re-test was disturbed).

After each trial the suite's own drains are resumed. Prints right of trials per scenario, and
with --json writes every trial. Root, Slurm and munge needed (ci/setup.sh); about 1-3 minutes a
trial on the 2-core development VM.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from fabricsuite.commands import emucluster  # noqa: E402

BIN = Path(sys.executable).parent
SCENARIOS = ("healthy", "node", "fabric", "leaf", "harness", "port")
NODES, RATE_MBIT = 8, 200
MATRIX = "--max-size,256K,--repetitions,3,--time-cap-ms,20"


def slurm(emu) -> dict:
    """{node: (flags, reason, comment)} as Slurm reports them."""
    data = json.loads(emu("exec", "sinfo", "--json").stdout)
    return {n["name"]: (tuple(n["state_flags"]), n["reason"], n["comment"])
            for n in data["nodes"]}


def main() -> int:
    parser = emucluster.bench_parser(__doc__)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--slower", type=float, default=0.15)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, of {', '.join(SCENARIOS)} (default: all)")
    parser.add_argument("--json", help="write every trial here")
    args = parser.parse_args()
    chosen = tuple(s for s in args.scenarios.split(",") if s)
    if not chosen or set(chosen) - set(SCENARIOS):
        parser.error(f"--scenarios {args.scenarios!r}: give some of {', '.join(SCENARIOS)}")
    made = emucluster.bench_cluster("act_emucluster.py", "fsac", 31000)
    if made is None:
        return 2
    emu, work = made
    refs = work / "refs"
    refs.mkdir()
    (refs / "emucluster.yaml").write_text(emucluster.matrix_references(NODES))
    prefix = emu.env["FABRICSUITE_EMU_PREFIX"]
    slow = f"{round(RATE_MBIT * (1 - args.slower))}mbit"
    if not emucluster.bench_up(emu, "act_emucluster.py", "--nodes", str(NODES), "--leaves",
                               "2", "--rate", f"{RATE_MBIT}mbit", "--burst", "16kb"):
        return 1
    trials = []
    try:
        for trial in range(args.trials):
            for scenario in chosen:
                number = trial % NODES + 1
                node = f"{prefix}{number}"
                env = {"RFM_REFERENCE_PREFIX": str(refs), "MPIEXEC_TIMEOUT": "90",
                       "OMPI_MCA_mpi_yield_when_idle": "1"}
                options = ["-S", f"NetbenchMatrix.matrix_options={MATRIX}"]
                retest = []
                if scenario == "port":
                    emu("rate", f"{RATE_MBIT // 2}mbit", "--port", str(number))
                    options += ["-S", "NetbenchMatrix.rounds=1", "-S", "confirm_pause_s=1"]
                    retest = ["--retest-suspects"]
                elif scenario == "node":
                    emu("rate", slow, str(number))
                elif scenario == "fabric":
                    emu("rate", slow)
                    env["FABRICSUITE_EMU_DECLARED_GBPS"] = str(RATE_MBIT / 1000)
                elif scenario == "leaf":
                    emu("rate", f"{RATE_MBIT // 4}mbit", "--link", "uplink1")
                elif scenario == "harness":
                    options = ["-S", "NetbenchMatrix.matrix_options=--no-such-option"]
                results = work / f"{scenario}-{trial}"
                start = time.monotonic()
                try:
                    night = emu("exec", str(BIN / "fabricsuite"), "nightly", "--system",
                                "emucluster:nodes", "--results", str(results), *retest, "--",
                                "-n",
                                "NetbenchMatrix", "-p", "openmpi", "-P", f"node_count={NODES}",
                                "-S", "timing_on_shared_cores=true", "--max-retries=1",
                                # a job whose rank died in MPI_Init (an upstream Open MPI fault,
                                # 1 in ~200 emulated jobs) leaves the others waiting: 3 minutes
                                "-S", "time_limit=3m",
                                *options, env=env)
                finally:
                    emu("rate", f"{RATE_MBIT}mbit")
                    emu("rate", "none", "--link", "uplinks")
                acted = emu("exec", str(BIN / "fabricsuite"), "act", "--mode", "drain",
                            "--results", str(results))
                state = slurm(emu)
                drained = {name: reason for name, (flags, reason, _) in state.items()
                           if "DRAIN" in flags}
                try:
                    found = json.loads(max((results / "findings").glob("*.json")).read_text())
                    kinds = sorted({f["kind"] for f in found["findings"]})
                except ValueError:
                    kinds = ["no findings file"]
                ours = {n: r for n, r in drained.items() if r.startswith("fabricsuite:")}
                right = {
                    "healthy": not drained,
                    "node": list(drained) == [node] and list(ours) == [node],
                    "port": list(drained) == [node] and list(ours) == [node],
                    "fabric": not drained and "fabric" in kinds,
                    "leaf": not drained and ("uplink" in kinds or "leaf" in kinds),
                    "harness": not drained and "broken-harness" in kinds,
                }[scenario]
                trials.append({"scenario": scenario, "trial": trial + 1, "right": right,
                               "nightly_exit": night.returncode, "act_exit": acted.returncode,
                               "drained": drained, "kinds": kinds,
                               "seconds": round(time.monotonic() - start)})
                print(f"{scenario} {trial + 1}: {'right' if right else 'WRONG'}; nightly exit "
                      f"{night.returncode}, act exit {acted.returncode}; drained "
                      f"{drained or 'none'}; findings {kinds}", flush=True)
                for name in ours:
                    emu("exec", "scontrol", "update", f"NodeName={name}", "State=RESUME")
                for name, (_flags, _reason, comment) in state.items():
                    if comment.startswith("fabricsuite:"):
                        emu("exec", "scontrol", "update", f"NodeName={name}", "Comment=")
    finally:
        emu("down")
    return 0 if emucluster.bench_tally(trials, chosen, args.json, slower=args.slower) else 1


if __name__ == "__main__":
    sys.exit(main())
