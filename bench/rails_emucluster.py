#!/usr/bin/env python3
"""Nodes with two rails: does the suite pass a healthy multi-rail fabric and name a bad rail by
node and rail, or a whole rail, and nothing else? (issue 64)

    bench/rails_emucluster.py [--trials 10] [--nodes 4] [--rate 200mbit]
                              [--scenarios healthy,node,rail,rail80] [--at-once]
                              [--json FILE]

Brings up an emulated cluster of its own (ci/emucluster.sh up --nodes N --rails 2 --rate RATE
--burst 16kb --declare RATE: each node's eth0 on rail 1's switch, eth1 on rail 2's, the
partition declaring both rails at RATE) and runs, --trials times each, real ReFrame sessions and
the session's findings file, as the nightly writes them:

- healthy: NetbenchRailBandwidth (2 nodes, each rail with both MPIs and striped with Open MPI)
           and NetbenchRailMatrix (N nodes, each rail, Open MPI): expected every bandwidth case
           passed with its line fraction at least the promise, no BELOW in the outcome, and no
           finding;
- node:    one node's rail 2 at half RATE on the switch's side (`rate R/2 --port K --rail 2`:
           the node reads its link healthy), the node a different one each trial,
           NetbenchRailMatrix: expected exactly one finding, that node's link on rail 2
           (faulty-link, "node K rail 2");
- rail:    rail 2's switch at 60 % of RATE toward every node (`rate --switch 2`),
           NetbenchRailMatrix: expected exactly one finding, the rail ("rail 2"), no node;
- rail80:  rail 2's switch at 80 % of RATE toward every node: within the promise (0.70 of the
           line), so only the nodes' rails against each other can see it
           (findings.slower_than_siblings): expected exactly the rail ("rail 2"), no node.

With --at-once the maps are NetbenchRailsAtOnce's (every rail in one job, one rank per rail
per node: 8 ranks on the 2 cores for 4 nodes) in place of NetbenchRailMatrix's one rail after
the other; the healthy trials run the bandwidth cases as without.

A notice (the map could not resolve the smallest fault it looks for) names nothing and is
counted apart. Each line fraction of the healthy sessions is written to --json. Root, Slurm
and munge needed; about 25 s a map session and 70 s a bandwidth session here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from fabricsuite.commands import emucluster  # noqa: E402
from fabricsuite.data.findings import NOTICE_KINDS  # noqa: E402
from fabricsuite.data.links import tc_rate_gbps  # noqa: E402

SCENARIOS = ("healthy", "node", "rail", "rail80")
PYTHON = str(REPO / ".venv" / "bin" / "python")
REFRAME = (str(REPO / ".venv" / "bin" / "reframe"), "-C", "config/settings.py",
           "--system", "emucluster:nodes", "--exec-policy=serial", "-r", "-S", "time_limit=2m",
           "--max-retries=1")


def session(emu, work: Path, name: str, *args: str, refs: Path | None = None
            ) -> tuple[list[dict], list[dict], str]:
    """One ReFrame session in the cluster, then its outcome and findings: (each case's last
    run, the findings, the outcome's text)."""
    results = work / name
    env = {"FABRICSUITE_RESULTS": str(results), "OMPI_MCA_mpi_yield_when_idle": "1",
           **({"RFM_REFERENCE_PREFIX": str(refs)} if refs else {})}
    emu("exec", *REFRAME, *args, env=env, timeout=900)
    reports = sorted((results / "reports").glob("*.json"))
    if not reports:
        return [], [], f"no run report in {results}"
    last = {(c["name"], c["environ"]): c for run in json.loads(reports[-1].read_text())["runs"]
            for c in run["testcases"] if not c["name"].startswith("NetbenchBuild")}
    out = subprocess.run([PYTHON, "-m", "fabricsuite.commands.session", "--findings",
                          str(results / "findings.json"), str(reports[-1])], cwd=REPO,
                         capture_output=True, text=True, env={**os.environ, **env})
    found = json.loads((results / "findings.json").read_text())["findings"] \
        if (results / "findings.json").exists() else []
    return list(last.values()), found, out.stdout


def rail_map(emu, work: Path, name: str, nodes: int, refs: Path, check: str):
    return session(emu, work, name, "-c", "checks/fabric_map.py", "-n", f"^{check}",
                   "-p", "openmpi", "-P", f"node_count={nodes}",
                   "-S", "timing_on_shared_cores=true",
                   "-S", f"{check}.matrix_options=--max-size,256K,--repetitions,3,"
                         "--time-cap-ms,20", refs=refs)


def named(found: list[dict]) -> list[tuple[str, str, str]]:
    """What the findings name (notices, which name nothing and change no verdict, apart)."""
    return sorted((f["kind"], f["nodes"], f["component"]) for f in found
                  if f["kind"] not in NOTICE_KINDS)


def notices(found: list[dict]) -> list[str]:
    return [f["kind"] for f in found if f["kind"] in NOTICE_KINDS]


def fraction_of(case: dict) -> float | None:
    return next((v[0] for k, v in (case.get("perfvalues") or {}).items()
                 if k.endswith("line_fraction")), None)


def main() -> int:
    parser = emucluster.bench_parser(__doc__)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--nodes", type=int, default=4)
    parser.add_argument("--rate", default="200mbit")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--at-once", action="store_true",
                        help="the maps of every rail in one job (NetbenchRailsAtOnce)")
    parser.add_argument("--json", help="write the trials here")
    args = parser.parse_args()
    rate = tc_rate_gbps(args.rate)
    scenarios = tuple(args.scenarios.split(","))
    if rate is None or args.trials < 1 or args.nodes < 3 or set(scenarios) - set(SCENARIOS):
        print("rails_emucluster.py: --rate a tc rate (200mbit), --trials 1 or more, --nodes 3 "
              f"or more (a node's rail is named against its peers), --scenarios of "
              f"{','.join(SCENARIOS)}", file=sys.stderr)
        return 2
    half, sixty, eighty = (f"{round(rate * 1000 * f)}mbit" for f in (0.5, 0.6, 0.8))
    made = emucluster.bench_cluster("rails_emucluster.py", "fsrb", 37000)
    if made is None or not emucluster.bench_up(
            made[0], "rails_emucluster.py", "--nodes", str(args.nodes), "--rails", "2",
            "--rate", args.rate, "--burst", "16kb", "--declare", args.rate):
        return 1
    emu, work = made
    refs = work / "refs"
    refs.mkdir()
    (refs / "emucluster.yaml").write_text(emucluster.matrix_references(
        args.nodes, rails=2, at_once=args.at_once))
    check = "NetbenchRailsAtOnce" if args.at_once else "NetbenchRailMatrix"
    prefix = emu.env["FABRICSUITE_EMU_PREFIX"]
    trials = []
    try:
        for trial in range(1, args.trials + 1):
            node = (trial - 1) % args.nodes + 1
            for scenario in scenarios:
                tag = f"{scenario}-{trial}"
                fractions = {}
                if scenario == "healthy":
                    cases, _found, said = session(emu, work, f"{tag}-bw", "-c",
                                                  "checks/rails.py", "-n",
                                                  "NetbenchRailBandwidth",
                                                  "-S", "require_reference=false")
                    fractions = {f"{c['environ']} {c['rail']}": fraction_of(c) for c in cases
                                 if c["result"] != "skip"}
                    bandwidth_right = (len(fractions) == 5 and all(
                        c["result"] in ("pass", "skip") for c in cases)
                        and "BELOW" not in said)
                    cases, found, said = rail_map(emu, work, tag, args.nodes, refs, check)
                    expected: list = []
                    right = bandwidth_right and named(found) == expected
                else:
                    if scenario == "node":
                        emu("rate", half, "--port", str(node), "--rail", "2")
                        expected = [("faulty-link", f"{prefix}{node}",
                                     f"node {prefix}{node} rail 2")]
                    else:
                        emu("rate", sixty if scenario == "rail" else eighty, "--switch", "2")
                        expected = [("rail", "", "rail 2")]
                    try:
                        cases, found, said = rail_map(emu, work, tag, args.nodes, refs, check)
                    finally:
                        emu("rate", "none", "--switch", "2")
                    right = named(found) == expected
                trials.append({"scenario": scenario, "trial": trial, "right": right,
                               "found": named(found), "notices": notices(found),
                               "line_fractions": fractions})
                print(f"{tag}: {'right' if right else 'WRONG'}; found {named(found) or 'nothing'}"
                      + (f"; notices {notices(found)}" if notices(found) else "")
                      + (f"; line fractions {fractions}" if fractions else ""), flush=True)
    finally:
        emu("down")
    emucluster.bench_tally(trials, scenarios, args.json, rate=args.rate, nodes=args.nodes, rails=2,
                           check=check)
    return 0


if __name__ == "__main__":
    sys.exit(main())
