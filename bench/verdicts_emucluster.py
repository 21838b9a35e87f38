#!/usr/bin/env python3
"""False-alarm and detection rates of the suite's verdicts on the emulated cluster (issue 12).

    bench/verdicts_emucluster.py [--repeats 30] [--detect-repeats 10] [--baseline-runs 5]
                                 [--baseline-gap-s 60] [--mpi openmpi]
                                 [--families pingpong,bandwidth,dense] [--together]

Brings up a 2-node emulated cluster (ci/emucluster.sh, its own prefix and state directory) at
1 Gbit, takes references through `fabricsuite baseline` (the partition's 7 % floor and the
measured spread) from --baseline-runs separate sessions of one run each, --baseline-gap-s
apart (as a center baselines from nightly runs; runs of one --repeat session miss the drift
between sessions, and `fabricsuite baseline` refuses them), then runs every check family
--repeats times at 1 Gbit (any failure is a false alarm) and --detect-repeats times at 900 Mbit
(-10 %) and 800 Mbit (-20 %) (a run that passes is a missed detection). A run that failed for
another reason than its figures (build, launch, sanity: e.g. an MPI that hangs in MPI_Finalize) is
counted apart as broken, neither an alarm nor a detection. Every run is a real ReFrame session
through sbatch/srun with confirmation (--max-retries=1, the partition's pause). Prints a table
per family and writes it as JSON beside the results (--out). Root, Slurm and munge needed
(ci/setup.sh). Takes long: about (baseline + repeats + 2 x detect) x the family's run time.

With --together, every run is one ReFrame session of all the families' checks, as a nightly run
of the emulated cluster's set would be, and a further row "whole set" counts a run once when any
of its checks alarmed (the issue's target: at most 1 false alarm in 30 runs for the whole set).

Measured on the 2-core development VM, 2026-11-24 12:23-14:27 (`--together`, Open MPI, baseline
from 5 sessions 60 s apart; false alarms of 30 / -10 % detected of 10 / -20 % detected of 10):
pingpong 0 / 0 / 0 (latency does not move with the rate), bandwidth 0 / 10 / 10, dense 0 / 10 / 10,
whole set 0 / 10 / 10; no broken run. One ping-pong first run at 1 Gbit (17.2 us against 7.67,
bound +46 %) passed its confirmation: a transient.

Families (checks at other-node / scale 2x1):
- pingpong: NetbenchPingPong (latency)
- bandwidth: NetbenchPingPongBandwidth
- dense: NetbenchDense at 2 nodes
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
from fabricsuite.commands.emucluster import bench_cluster, bench_parser, bench_up  # noqa: E402
from fabricsuite.data.cases import (  # noqa: E402
    BROKEN,
    DISTURBED,
    case_key,
    confirmed_variables,
    final_cases,
    first_runs,
    health,
    unconfirmed,
)


def is_broken(case: dict) -> bool:
    """Broken for the rates: the case model's broken or disturbed (not the fabric's)."""
    return case.get("result") == "fail" and health(case) in (BROKEN, DISTURBED)

BIN = Path(sys.executable).parent
FAMILIES = {
    "pingpong": ["-c", "checks/pt2pt.py", "-n", "NetbenchPingPong%distance=other-node"],
    "bandwidth": ["-c", "checks/pt2pt.py", "-n",
                  "NetbenchPingPongBandwidth%distance=other-node"],
    "dense": ["-c", "checks/dense.py", "-n", "NetbenchDense%node_count=2"],
}
SET = "whole set"


def family_of(case: dict) -> str:
    """The bench family a test case belongs to: the one whose `-n` selection names its check."""
    check = str(case.get("display_name") or case.get("name")).split()[0]
    return next((family for family, selection in FAMILIES.items()
                 if selection[-1].split("%")[0] == check), check)


def repeat_of(case: dict) -> int:
    """Which --repeat repetition a case is (ReFrame names it `%.repeat_no=N`)."""
    found = re.search(r"\.repeat_no=(\d+)", str(case.get("display_name")))
    return int(found.group(1)) if found else 0


def tally(outcomes: list[tuple[str, int, str]], families: list[str]) -> dict[str, tuple]:
    """(runs, runs with a confirmed regression, runs broken) per family, and for the whole set,
    where a run is a repetition number: it alarms once however many of its checks alarmed."""
    rows = {}
    for family in families:
        statuses = [status for f, _, status in outcomes if f == family]
        rows[family] = (len(statuses), statuses.count("regressed"), statuses.count("broken"))
    rows[SET] = (len({rep for _, rep, _ in outcomes}),
                 len({rep for _, rep, status in outcomes if status == "regressed"}),
                 len({rep for _, rep, status in outcomes if status == "broken"}))
    return rows


def session(emu, mpi: str, results: Path, group: list[str], repeats: int,
            refs: Path | None, *extra: str) -> list[tuple[str, int, str]]:
    """(family, repetition, outcome) of each case of one ReFrame session of `repeats`
    repetitions of the group's checks, from its run report (each case's last outcome, after
    confirmation); outcome is "passed", "regressed" or "broken"."""
    extra_env = {"FABRICSUITE_RESULTS": str(results), "MPIEXEC_TIMEOUT": "90"}
    if refs is not None:
        extra_env["RFM_REFERENCE_PREFIX"] = str(refs)
    selection = [arg for family in group for arg in FAMILIES[family]]
    proc = emu("exec", str(BIN / "reframe"), "-C", "config/settings.py", "--system",
               "emucluster:nodes", "--exec-policy=serial", "-r", "--max-retries=1",
               "-S", "time_limit=3m", "-p", mpi, "--repeat", str(repeats),
               *selection, *extra, env=extra_env)
    reports = sorted((results / "reports").glob("run-report-*.json"),
                     key=lambda p: p.stat().st_mtime)
    if not reports:
        raise RuntimeError(f"{group}: no run report:\n{proc.stdout[-3000:]}"
                           f"{proc.stderr[-2000:]}")
    report = json.loads(reports[-1].read_text())
    # A skipped case (per-node placement on one-core nodes is the per-core case) ran nothing:
    # neither an alarm nor a detection.
    cases = [c for c in final_cases(report)
             if not c.get("fixture") and c.get("result") != "skip"]
    first = first_runs(report)
    outcomes = []
    for c in cases:
        # The suite's verdict, as ci/run-local.sh and nightly give it: a case regressed when
        # a variable was outside its reference in both runs; different variables in the two
        # runs are a transient (fabricsuite.commands.session.unconfirmed), a pass.
        earlier = first.get(case_key(c))
        outcome = ("passed" if c.get("result") != "fail"
                   else "broken" if is_broken(c)
                   else "passed" if unconfirmed(c, earlier) else "regressed")
        outcomes.append((family_of(c), repeat_of(c), outcome))
        if c.get("result") == "fail":
            verdict = ("broken" if is_broken(c) else "transient" if unconfirmed(c, earlier)
                       else "confirmed " + ",".join(sorted(confirmed_variables(c, earlier))))
            print(f"  {family_of(c)}: {c.get('display_name')}: {c.get('fail_phase')}: "
                  f"{verdict}: {' '.join(str(c.get('fail_reason')).split())[:200]}",
                  flush=True)
    return outcomes


def print_table(table: dict) -> None:
    """The one-screen outcome: per family, false alarms and detections of -10 % and -20 %."""
    print(f"\n{'family':<10} {'false alarms':>16} {'-10 % detected':>16} "
          f"{'-20 % detected':>16} {'broken runs':>12}")
    for family, row in table.items():
        broken = row["same_broken"] + row["minus10_broken"] + row["minus20_broken"]
        print(f"{family:<10} {row['false_alarms']:>8} of {row['same_runs']:<5} "
              f"{row['minus10_detected']:>8} of {row['minus10_runs']:<5} "
              f"{row['minus20_detected']:>8} of {row['minus20_runs']:<5} {broken:>12}")


def main() -> int:
    parser = bench_parser(__doc__)
    parser.add_argument("--repeats", type=int, default=30, help="identical runs at 1 Gbit")
    parser.add_argument("--detect-repeats", type=int, default=10,
                        help="runs at each slower rate")
    parser.add_argument("--baseline-runs", type=int, default=5,
                        help="separate baseline sessions, one run each")
    parser.add_argument("--baseline-gap-s", type=float, default=60.0,
                        help="pause between two baseline sessions (seconds)")
    parser.add_argument("--families", default=",".join(FAMILIES),
                        help=f"comma-separated, of {', '.join(FAMILIES)}")
    parser.add_argument("--together", action="store_true",
                        help="run all the families' checks in one session per run and count "
                             "the whole set's false alarms per run")
    parser.add_argument("--out", help="JSON result file (default: print only)")
    parser.add_argument("--keep-reports", metavar="DIR",
                        help="copy every session's run report here, by family and phase "
                             "(the baseline sessions can then rebaseline a reference file)")
    args = parser.parse_args()
    families = [f for f in args.families.split(",") if f]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown or min(args.repeats, args.detect_repeats, args.baseline_runs) < 1:
        print(f"verdicts_emucluster.py: unknown families {unknown} or a count below 1",
              file=sys.stderr)
        return 2
    made = bench_cluster("verdicts_emucluster.py", "fsb", 24000)
    if made is None:
        return 2
    emu, work = made

    if not bench_up(emu, "verdicts_emucluster.py", "--nodes", "2", "--rate", "1gbit"):
        return 1
    table = {}
    groups = [families] if args.together else [[family] for family in families]
    try:
        for group in groups:
            name = "+".join(group)
            base = work / name / "base"
            # The baseline runs are judged against nothing (an empty reference directory): a
            # shipped reference taken on another day must not make them "unhealthy".
            no_refs = work / name / "no-refs"
            no_refs.mkdir(parents=True)
            baseline_outcomes = []
            for i in range(args.baseline_runs):
                if i:
                    time.sleep(args.baseline_gap_s)
                baseline_outcomes += session(emu, args.mpi, base, group, 1, no_refs,
                                             "-S", "require_reference=false")
                print(f"{name}: baseline session {i + 1} of {args.baseline_runs} done",
                      flush=True)
            refs = work / name / "refs"
            refs.mkdir(parents=True)
            reports = sorted((base / "reports").glob("*.json"))
            made = subprocess.run(
                [str(BIN / "fabricsuite"), "baseline", "--system", "emucluster", "--min-runs",
                 str(args.baseline_runs), "--min-sessions", str(args.baseline_runs),
                 "--output", str(refs / "emucluster.yaml"),
                 *map(str, reports)], capture_output=True, text=True, cwd=REPO)
            if made.returncode != 0:
                raise RuntimeError(f"{name}: baseline failed: {made.stderr}")
            rows = {family: {"baseline_runs": runs}
                    for family, (runs, _, _) in tally(baseline_outcomes, group).items()}
            rows[SET]["baseline_runs"] = args.baseline_runs  # sessions, each a run of the set
            phases = [("same", "1gbit", args.repeats), ("minus10", "900mbit", args.detect_repeats),
                      ("minus20", "800mbit", args.detect_repeats)]
            for label, rate, repeats in phases:
                emu("rate", rate)
                try:
                    outcomes = session(emu, args.mpi, work / name / rate, group, repeats, refs)
                finally:
                    emu("rate", "1gbit")
                for family, (runs, regressed, broken) in tally(outcomes, group).items():
                    key = "false_alarms" if label == "same" else f"{label}_detected"
                    rows[family].update({f"{label}_runs": runs, key: regressed,
                                         f"{label}_broken": broken})
                print(f"{name}: {label} at {rate}: {tally(outcomes, group)}", flush=True)
            for family, row in rows.items():
                if family != SET or args.together:
                    table[family] = row
                    print(f"{family}: {row}", flush=True)
    finally:
        emu("down")
    print_table(table)
    if args.out:
        Path(args.out).write_text(json.dumps(table, indent=2))
    if args.keep_reports:
        for report in work.glob("*/*/reports/run-report-*.json"):
            family, phase = report.parent.parent.parent.name, report.parent.parent.name
            dest = Path(args.keep_reports) / family / phase
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(report, dest / report.name)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
