#!/usr/bin/env python3
"""Node-aware verdicts against ground truth on the emulated cluster (issue 38, section 3).

    bench/node_outliers_emucluster.py [--trials 10] [--slower 0.15] [--mpi openmpi]
                                      [--acceptance-sessions 3] [--act] [--out FILE]

Brings up 4 emulated nodes at 1 Gbit (ci/emucluster.sh, its own prefix and state directory),
takes references from acceptance sessions on nodes 1-2 (`fabricsuite nightly --mode acceptance
-- -J--nodelist=...`, then `fabricsuite baseline --acceptance`: the references record the nodes
they were taken on), then runs `fabricsuite nightly` on nodes 3-4 (`-J--nodelist`), --trials
times in each of five scenarios, interleaved:

- outlier: node 3's link --slower slower, both directions: expected NODE OUTLIER naming node 3
  (or nodes 3 and 4: one pair cannot split them), not a regression of the fabric;
- fabric: every link --slower slower: expected REGRESSION (its confirmation on nodes 1-2, which
  the references know, fails too);
- healthy: every link at the rate: expected PASSED;
- no-netbench: the netbench program removed after its build (the build fixture's
  `postbuild_cmds`), a harness fault: expected BROKEN, a `broken-harness` finding, no node named;
- broken-mpi: the MPI broken on every node (Open MPI's point-to-point layer set to one that does
  not exist, `OMPI_MCA_pml`; MPICH's UCX transports, `UCX_TLS`): expected BROKEN, a
  `broken-harness` finding, no node named.

Each nightly is the real workflow: ReFrame through sbatch/srun, the nightly mode's confirmation
rounds (pauses of 1, 3, 9 s instead of the partition's 10, 30, 90), the outcome and exit status.
Checks: NetbenchPingPongBandwidth at other-node. Root, Slurm and munge needed (ci/setup.sh).
About 1 minute a trial on the 2-core development VM. Prints a table (right of trials per
scenario) and, with --out, writes it as JSON.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from fabricsuite.commands.emucluster import QUICK, bench_cluster, bench_parser, bench_up  # noqa: E402

BIN = Path(sys.executable).parent
CHECK = "NetbenchPingPongBandwidth%distance=other-node"
RATE_MBIT = 1000
SCENARIOS = ("outlier", "fabric", "healthy", "no-netbench", "broken-mpi")
EXPECTED = {"outlier": "NODE OUTLIER", "fabric": "REGRESSION", "healthy": "PASSED",
            "no-netbench": "BROKEN", "broken-mpi": "BROKEN"}
#: The harness faults: ReFrame options and environment of the nightly.
HARNESS_FAULTS = {
    "no-netbench": (("-S", "NetbenchBuild.postbuild_cmds=rm -f netbench"), {}),
    "broken-mpi": ((), {"OMPI_MCA_pml": "no-such-pml", "UCX_TLS": "no-such-transport"}),
}


def finding_kinds(results: Path) -> list[str]:
    """The kinds of the findings a nightly wrote under `results` (fabricsuite.data.findings)."""
    kinds = []
    for path in sorted((results / "findings").glob("*.json")):
        try:
            kinds += [f.get("kind", "?") for f in json.loads(path.read_text())["findings"]]
        except (OSError, ValueError, KeyError, TypeError):
            kinds.append("unreadable")
    return kinds


def outcome_of(stdout: str) -> str:
    """The nightly's outcome word(s): PASSED, REGRESSION, NODE OUTLIER, BROKEN, ... or ?"""
    found = re.findall(r"^outcome: ([A-Z][A-Z ]*[A-Z])", stdout, re.M)
    return found[-1] if found else "?"


def named_nodes(stdout: str) -> list[str]:
    """The nodes a NODE OUTLIER line names first (before the first colon after its case)."""
    for line in stdout.splitlines():
        if line.strip().startswith("NODE OUTLIER "):
            found = re.search(r": ([\w.-]+(?:, [\w.-]+)*): first run", line)
            return found.group(1).split(", ") if found else []
    return []


def act_on(emu, results: Path) -> list[str]:
    """`fabricsuite act --mode drain` on a nightly's findings (a cap of half the 4 nodes): the
    nodes it drained, returned to service afterwards."""
    acted = emu("exec", str(BIN / "fabricsuite"), "act", "--mode", "drain", "--max-fraction",
                "0.5", "--results", str(results))
    print("\n".join(ln for ln in acted.stdout.splitlines() if ln.startswith("  ")), flush=True)
    data = json.loads(emu("exec", "sinfo", "--json").stdout)
    drained = sorted(n["name"] for n in data["nodes"] if "DRAIN" in n["state_flags"])
    for name in drained:
        emu("exec", "scontrol", "update", f"NodeName={name}", "State=RESUME")
    return drained


def judge(scenario: str, stdout: str, results: Path, nodes: list[str],
          drained: list[str] | None) -> tuple[bool, list[str]]:
    """(whether a trial's nightly was right, what it named) against the scenario's truth;
    `drained`: what `fabricsuite act` drained after it (None: not acted on)."""
    named = named_nodes(stdout)
    right = outcome_of(stdout) == EXPECTED[scenario] and (
        scenario != "outlier" or (nodes[2] in named and nodes[0] not in named
                                  and nodes[1] not in named))
    if scenario in HARNESS_FAULTS:
        # the harness, not a node: a broken-harness finding and no node named
        kinds = finding_kinds(results)
        right = right and "broken-harness" in kinds and not named and not any(
            k in ("node-outlier", "link-degraded", "faulty-link") for k in kinds)
        named = named + [f"findings: {', '.join(kinds) or 'none'}"]
    if drained is not None:
        # the suspects re-tested, then `fabricsuite act --mode drain`: node 3 alone drained
        # where it is slow, nothing otherwise
        right = right and drained == ([nodes[2]] if scenario == "outlier" else [])
        named = named + [f"drained: {', '.join(drained) or 'none'}"]
    return right, named


def parse_args():
    parser = bench_parser(__doc__)
    parser.add_argument("--trials", type=int, default=10, help="nightly runs per scenario")
    parser.add_argument("--slower", type=float, default=0.15,
                        help="how much slower the slow link(s) are (fraction, default 0.15)")
    parser.add_argument("--acceptance-sessions", type=int, default=3,
                        help="acceptance sessions on nodes 1-2 (3 repeats each)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--out", help="JSON result file (default: print only)")
    parser.add_argument("--act", action="store_true",
                        help="issue 52: the nightly re-tests its suspects (--retest-suspects), "
                             "then `fabricsuite act --mode drain`; right only where node 3 "
                             "alone is drained in the outlier scenario and nothing otherwise")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    scenarios = [s for s in args.scenarios.split(",") if s]
    if (args.trials < 1 or args.acceptance_sessions < 1 or not 0 < args.slower < 1
            or any(s not in SCENARIOS for s in scenarios)):
        print("node_outliers_emucluster.py: --trials and --acceptance-sessions at least 1, "
              f"--slower between 0 and 1, --scenarios of {', '.join(SCENARIOS)}",
              file=sys.stderr)
        return 2
    made = bench_cluster("node_outliers_emucluster.py", "fso", 26000)
    if made is None:
        return 2
    emu, work = made
    prefix = emu.env["FABRICSUITE_EMU_PREFIX"]
    slow = f"{round(RATE_MBIT * (1 - args.slower))}mbit"
    nodes = [f"{prefix}{i}" for i in range(1, 5)]
    refs = work / "refs"
    refs.mkdir()

    def nightly(results: Path, mode: str, on: list[str], *more: str,
                refs_dir: Path | None = refs, faults: dict | None = None
                ) -> subprocess.CompletedProcess:
        env = {"MPIEXEC_TIMEOUT": "90", **(faults or {})}
        if refs_dir is not None:
            env["RFM_REFERENCE_PREFIX"] = str(refs_dir)
        retest = ["--retest-suspects"] if args.act and mode == "nightly" else []
        return emu("exec", str(BIN / "fabricsuite"), "nightly", "--system", "emucluster:nodes",
                   "--mode", mode, "--tag", mode, "--results", str(results), *retest, "--",
                   "-n", CHECK, "-p", args.mpi, f"-J--nodelist={','.join(on)}",
                   "-S", "confirm_pause_s=1", *QUICK, *more, env=env)

    if not bench_up(emu, "node_outliers_emucluster.py", "--nodes", "4", "--rate",
                    f"{RATE_MBIT}mbit"):
        return 1
    table = {s: {"trials": 0, "right": 0, "outcomes": {}} for s in scenarios}
    try:
        accepted = work / "acceptance"
        for i in range(args.acceptance_sessions):
            proc = nightly(accepted, "acceptance", nodes[:2], "-S", "require_reference=false",
                           refs_dir=work / "no-refs")
            print(f"acceptance session {i + 1}: exit {proc.returncode}, "
                  f"{outcome_of(proc.stdout)}", flush=True)
        reports = sorted((accepted / "reports").glob("run-report-*.json"))
        made = subprocess.run(
            [str(BIN / "fabricsuite"), "baseline", "--system", "emucluster", "--acceptance",
             "--min-sessions", str(args.acceptance_sessions), "--output",
             str(refs / "emucluster.yaml"), *map(str, reports)],
            capture_output=True, text=True, cwd=REPO)
        if made.returncode != 0:
            raise RuntimeError(f"baseline failed: {made.stdout[-2000:]}{made.stderr}")
        print(made.stdout.strip().splitlines()[-1] if made.stdout.strip() else "", flush=True)
        for trial in range(args.trials):
            for scenario in scenarios:
                if scenario == "outlier":
                    emu("rate", slow, "3")
                elif scenario == "fabric":
                    emu("rate", slow)
                start = time.monotonic()
                options, faults = HARNESS_FAULTS.get(scenario, ((), {}))
                try:
                    proc = nightly(work / f"{scenario}-{trial}", "nightly", nodes[2:], *options,
                                   faults=faults)
                    if args.act:
                        drained = act_on(emu, work / f"{scenario}-{trial}")
                finally:
                    emu("rate", f"{RATE_MBIT}mbit")
                outcome = outcome_of(proc.stdout)
                right, named = judge(scenario, proc.stdout, work / f"{scenario}-{trial}", nodes,
                                     drained if args.act else None)
                row = table[scenario]
                row["trials"] += 1
                row["right"] += right
                word = outcome + (f" ({', '.join(named)})" if named else "")
                row["outcomes"][word] = row["outcomes"].get(word, 0) + 1
                print(f"trial {trial + 1} {scenario}: exit {proc.returncode}, {word}, "
                      f"{time.monotonic() - start:.0f} s", flush=True)
                if not right:
                    print("\n".join(ln for ln in proc.stdout.splitlines()
                                    if ln.startswith(("outcome", "REGRESSION", "NODE OUTLIER",
                                                      "TRANSIENT", "BROKEN"))), flush=True)
    finally:
        emu("down")
    print(f"\n{'scenario':<10} {'expected':<14} {'right':>10}  outcomes")
    for scenario, row in table.items():
        print(f"{scenario:<10} {EXPECTED[scenario]:<14} {row['right']:>4} of {row['trials']:<3} "
              f"{row['outcomes']}")
    if args.out:
        Path(args.out).write_text(json.dumps({"slower": args.slower, "mpi": args.mpi,
                                              "scenarios": table}, indent=2))
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
