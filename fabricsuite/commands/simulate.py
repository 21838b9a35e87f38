"""`fabricsuite simulate`: the real netbench's all-pairs map on a simulated fabric, judged by the
suite's own verdict code, against the faults injected.

    fabricsuite simulate --leaves 4 --nodes-per-leaf 4                   # a healthy 16-node tree
    fabricsuite simulate --leaves 16 --nodes-per-leaf 16 --fault link:node-37=0.75
    fabricsuite simulate --leaves 8 --nodes-per-leaf 8 --taper 2 --fault uplink:leaf3=0.5
    fabricsuite simulate --fabric dragonfly --groups 4 --routers 4 --nodes-per-router 4

Writes a SimGrid platform of the fabric (fabricsuite.data.simfabric: every link named, faults
on any node link, uplink, dragonfly global link, switch, router or group), builds netbench with
SimGrid's smpicc (`make -C src smpi`, the same sources), runs `netbench matrix` under smpirun
with one rank per simulated node (every rank a thread of one process, in simulated time), then
judges the map with the suite's own code (fabricsuite.data.switches, the fabric map check's
verdict) against the fabric's topology as Slurm's topology/tree would describe it, and compares
what it named with what was injected.

Exit status: 0 when the map named exactly the faulty components (a healthy fabric: nothing),
1 when it missed one or named a healthy one, 2 on bad input or when the simulation could not
run. The files (platform, hosts, topology, the map's JSON, netbench's output, the verdict as
JSON) go to --out (default RESULTS/simulations/<UTC time>).

What a simulation shows is what its model assumes (the platform's comment, docs/simulation.md):
SimGrid's flow model, shortest-path routes, the profile's link figures and SMPI factors. A fault
found here is found by the real verdict code on figures the real netbench measured in that
model; it says nothing of a fabric's own noise (a simulated map has none).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from fabricsuite import SOURCE_DIR
from fabricsuite.base.commandline import UsageError, one_line_errors, results_dir
from fabricsuite.data import netbench_result, pathclasses, simfabric, switches

#: A simulated map is noise-free: 2 repetitions of a few round trips measure it exactly (a
#: 16-node map in 0.6 s of wall time instead of 36 s at netbench's defaults, the same verdict).
#: `--timing netbench` keeps netbench's own (5 repetitions of the round trips that fit in 5 ms):
#: a step then costs what it would on the modelled fabric (bench/matrix_cost.py's model).
TIMINGS = {"fast": ("--repetitions", "2", "--iterations", "4"), "netbench": ()}
#: netbench's watchdog counts wall seconds, which a simulation of hundreds of ranks spends
#: freely; --timeout here bounds the simulation instead
SIM_MATRIX_OPTIONS = ("--timeout", "0")
#: The suite's component kinds for the fault kinds of a simulated fabric.
KIND_OF_FAULT = {"link": "node", "uplink": "uplink", "global": "link", "switch": "switch"}


def build(make: str = "make") -> Path:
    """netbench-smpi, built (or brought up to date) with smpicc; UsageError where SimGrid is not
    installed."""
    if shutil.which("smpicc") is None or shutil.which("smpirun") is None:
        raise UsageError("smpicc/smpirun not found: install SimGrid's SMPI (apt-get install "
                         "libsimgrid-dev; bash ci/setup.sh does)")
    proc = subprocess.run([make, "-s", "-C", str(SOURCE_DIR), "smpi"], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise UsageError(f"building netbench with smpicc failed: {' / '.join(last)}")
    return SOURCE_DIR / "netbench-smpi"


def make_fabric(args: Any) -> simfabric.Fabric:
    """The fabric the options describe, faults injected."""
    if args.fabric == "fat-tree":
        fabric = simfabric.fat_tree(args.leaves, args.nodes_per_leaf, args.taper, args.profile,
                                    args.pods)
    else:
        fabric = simfabric.dragonfly(args.groups, args.routers, args.nodes_per_router,
                                     args.global_links, args.profile)
    for component, fraction in simfabric.parse_faults(args.fault or []):
        fabric.inject(component, fraction)
    return fabric


def _exit_on_signal(signum: int, _frame) -> None:
    raise SystemExit(128 + signum)


def run_map(fabric: simfabric.Fabric, out: Path, program: Path, matrix_options: list[str],
            timeout: float) -> tuple[netbench_result.NetbenchResult, float]:
    """netbench matrix under smpirun on `fabric`, its files in `out`: the result (its
    switch_tree set to the fabric's topology text) and the wall seconds it took."""
    topology = fabric.topology_conf()
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "platform.xml").write_text(fabric.platform_xml())
        (out / "hosts").write_text(fabric.hostfile())
        (out / "topology.conf").write_text(topology)
        (out / "path-classes").write_text(pathclasses.text(switches.parse_topology(topology)))
    except OSError as err:
        raise UsageError(f"--out {out}: cannot write there ({err.strerror}); give a directory "
                         f"you can write") from None
    cmd = ["smpirun", "-np", str(len(fabric.hosts)), "-platform", str(out / "platform.xml"),
           "-hostfile", str(out / "hosts"), *fabric.smpirun_options(),
           "--log=root.thres:warning", str(program), "matrix",
           "--json-file", str(out / "matrix.json"), "--path-classes", str(out / "path-classes"),
           *matrix_options]
    (out / "command").write_text(" ".join(cmd) + "\n")
    start = time.monotonic()
    # a SIGTERM (a scheduler's, a bench's) ends the command through the path below, as a
    # timeout or Ctrl-C does: by default it would end Python alone and leave the simulation
    # running without a parent (seen 2026-12-07)
    previous = signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        with open(out / "netbench.out", "w") as stdout, open(out / "netbench.err", "w") as err:
            proc = subprocess.Popen(cmd, stdout=stdout, stderr=err, cwd=out,
                                    start_new_session=True)
            try:
                proc.wait(timeout=timeout)
            except BaseException:
                # smpirun is a script and the simulation (smpimain) its child: both end here,
                # never left running (a 4,096-node one kept 11 GB after its timeout)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                raise
    except subprocess.TimeoutExpired:
        raise UsageError(f"the simulation did not end in {timeout:g} s of wall time (--timeout; "
                         f"fewer nodes or --rounds K)") from None
    finally:
        signal.signal(signal.SIGTERM, previous)
    wall_s = time.monotonic() - start
    if proc.returncode != 0:
        said = (out / "netbench.err").read_text().strip().splitlines()
        why = [ln for ln in said if "CRITICAL" in ln or (
            "netbench" in ln and "elapsed" not in ln)][:1] or said[-1:]
        raise UsageError(f"smpirun exited {proc.returncode}: {' / '.join(why)} "
                         f"(files in {out})")
    result = netbench_result.load(out / "matrix.json")
    result.switch_tree = topology
    return result, wall_s


def against_truth(explanation: switches.Explanation, fabric: simfabric.Fabric
                  ) -> dict[str, list[str]]:
    """What the map named against what was injected: `found` (faults named, alone or among
    components the pairs cannot tell apart), `missed`, `healthy_named` (findings naming no
    injected fault)."""
    injected = {}
    groups = set(fabric.group_of.values())
    for component in fabric.faults:
        kind, _, name = component.partition(":")
        kind = "group" if kind == "switch" and name in groups else KIND_OF_FAULT[kind]
        injected[(kind, name)] = component
    found, healthy = set(), []
    for finding in explanation.findings:
        hits = [injected[c] for c in finding.components if c in injected]
        found.update(hits)
        if not hits:
            healthy.append(" or ".join(f"{k} {n}" for k, n in finding.components))
    return {"found": sorted(found), "missed": sorted(set(injected.values()) - found),
            "healthy_named": healthy}


def summary_figure(result: netbench_result.NetbenchResult, name: str) -> float | None:
    value = (getattr(result, "summary", None) or {}).get(name)
    return float(value) if isinstance(value, (int, float)) else None


@one_line_errors("simulate")
def run(args: Any) -> int:
    try:
        fabric = make_fabric(args)
    except simfabric.FabricError as err:
        raise UsageError(str(err)) from None
    out = Path(args.out) if args.out else (
        results_dir(args) / "simulations" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    program = build()
    options = [*TIMINGS[args.timing], *SIM_MATRIX_OPTIONS]
    if args.rounds:
        options += ["--rounds", str(args.rounds), "--seed", str(args.seed), "--local-rounds"]
    if args.max_retests:
        options += ["--max-retests", str(args.max_retests)]
    print(f"simulating {fabric.describe()}", flush=True)
    print(f"netbench's progress: {out / 'netbench.err'}", flush=True)
    result, wall_s = run_map(fabric, out, program, options, args.timeout)
    explanation = switches.verdict(result)
    truth = against_truth(explanation, fabric)
    measure_s, retest_s = (summary_figure(result, "measure_s"),
                           summary_figure(result, "retest_s"))
    pairs = result.table("pairs")
    print(f"netbench matrix on {len(fabric.hosts)} simulated nodes: {len(pairs)} pairs"
          f"{f' in {args.rounds} round(s)' if args.rounds else ''}; simulated "
          f"{(measure_s or 0) + (retest_s or 0):.4g} s (map {measure_s or 0:.4g} s, re-tests "
          f"alone {retest_s or 0:.4g} s), {wall_s:.1f} s of wall time")
    for line in explanation.lines() or ["nothing named: every pair healthy"]:
        print(f"  {line}")
    exact = not truth["missed"] and not truth["healthy_named"]
    if exact:
        print("against the faults injected: "
              + (f"named exactly {', '.join(truth['found'])}" if truth["found"]
                 else "healthy, and nothing named"))
    else:
        print("against the faults injected: "
              + "; ".join(part for part in (
                  f"MISSED {', '.join(truth['missed'])}" if truth["missed"] else "",
                  f"NAMED HEALTHY {', '.join(truth['healthy_named'])}"
                  if truth["healthy_named"] else "",
                  f"found {', '.join(truth['found'])}" if truth["found"] else "") if part))
    verdict = {"fabric": fabric.describe(), "nodes": len(fabric.hosts), "faults": fabric.faults,
               "named": [[list(c) for c in f.components] for f in explanation.findings],
               "lines": explanation.lines(), **truth, "exact": exact,
               "simulated_s": {"map": measure_s, "retests": retest_s}, "wall_s": wall_s,
               "undecided": explanation.undecided,
               "pairs": len(pairs), "rounds": args.rounds}
    (out / "verdict.json").write_text(json.dumps(verdict, indent=1) + "\n")
    if args.json:
        print(json.dumps(verdict))
    print(f"files: {out}")
    return 0 if exact else 1


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "simulate", help="the real netbench's all-pairs map on a simulated fabric (SimGrid), "
                         "judged by the suite's verdict code against the faults injected",
        formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__)
    parser.add_argument("--fabric", choices=("fat-tree", "dragonfly"), default="fat-tree",
                        help="the fabric's shape (default fat-tree)")
    tree = parser.add_argument_group("fat tree")
    tree.add_argument("--leaves", type=int, default=4, help="leaf switches (per pod; default 4)")
    tree.add_argument("--nodes-per-leaf", type=int, default=4, help="nodes a leaf (default 4)")
    tree.add_argument("--taper", type=float, default=1.0,
                      help="uplink taper: 1 non-blocking (default), 2 for 2:1")
    tree.add_argument("--pods", type=int, default=1,
                      help="1: a 2-level tree (default); P > 1: a 3-level tree of P pods")
    fly = parser.add_argument_group("dragonfly")
    fly.add_argument("--groups", type=int, default=4, help="groups (default 4)")
    fly.add_argument("--routers", type=int, default=4, help="routers a group (default 4)")
    fly.add_argument("--nodes-per-router", type=int, default=2, help="nodes a router (2)")
    fly.add_argument("--global-links", type=int, default=1,
                     help="global links between each two groups (default 1)")
    parser.add_argument("--profile", choices=tuple(simfabric.PROFILES),
                        default=simfabric.DEFAULT_PROFILE,
                        help="link figures and SMPI factors, with their origin (docs/"
                             f"simulation.md; default {simfabric.DEFAULT_PROFILE})")
    parser.add_argument("--fault", action="append", metavar="COMPONENT=FRACTION",
                        help="a component at FRACTION of its healthy bandwidth: link:HOST, "
                             "uplink:SWITCH, global:gA~gB (a dragonfly's global links between "
                             "two groups), switch:SWITCH (a leaf, a router, or a dragonfly's "
                             "group) (repeatable; e.g. link:node-5=0.75)")
    parser.add_argument("--rounds", type=int, default=0, metavar="K",
                        help="a quick map of K tournament rounds (default: the full map)")
    parser.add_argument("--seed", type=int, default=1, help="the quick map's seed (default 1)")
    parser.add_argument("--max-retests", type=int, default=0, metavar="N",
                        help="netbench matrix's bound on the suspects re-tested alone (default "
                             "netbench's: 4 a rank, at least 64)")
    parser.add_argument("--timing", choices=tuple(TIMINGS), default="fast",
                        help="fast (default): 2 repetitions of 4 round trips a pair, enough for "
                             "the verdict on a noise-free map; netbench: netbench's own (5 "
                             "repetitions of 5 ms), the map's duration as on the modelled fabric")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="wall seconds the simulation may take (default 3600)")
    parser.add_argument("--out", help="where the files go (default RESULTS/simulations/TIME)")
    parser.add_argument("--results", default=None,
                        help="results directory (default: $FABRICSUITE_RESULTS, else results/)")
    parser.add_argument("--json", action="store_true", help="also print the verdict as JSON")
