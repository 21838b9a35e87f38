#!/usr/bin/env python3
"""Does the map name exactly the faulty components of simulated fabrics? (issue 66's truth table)

    bench/simulated_fabrics.py [--nodes 64] [--per-leaf 16] [--fabrics tree tapered dragonfly]
                               [--seeds 2] [--first-seed 0] [--rounds K] [--fraction 0.75]
                               [--max-retests N] [--json FILE]

For each fabric and scenario, --seeds trials, the faulty component drawn at random per trial
(seeded): `fabricsuite simulate` (the real netbench built with smpicc, under smpirun, judged by
fabricsuite.data.switches) on

- tree:      a 2-level non-blocking fat tree, --per-leaf nodes a leaf;
- tapered:   the same, its uplinks 2:1;
- dragonfly: 4 groups of routers of 4 nodes (--nodes / 16 routers a group), one global link
             between each two groups;

with the scenarios: healthy; one node link at --fraction of its rate; one uplink (tree) or one
group's global links toward another group (dragonfly); a whole leaf (tree) or group
(dragonfly); three node links at once in two leaves (routers). A trial is `exact` when the map
named the faults and nothing else (healthy: nothing). Prints a row per fabric and scenario:
exact / trials, missed faults, healthy components named, wall seconds and simulated seconds of
the map (measured, re-tests) per trial.
"""

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fabricsuite.data import simfabric  # noqa: E402


def shape_options(fabric: str, nodes: int, per_leaf: int) -> tuple[list[str], simfabric.Fabric]:
    if fabric == "dragonfly":
        routers = max(nodes // 16, 1)
        opts = ["--fabric", "dragonfly", "--groups", "4", "--routers", str(routers),
                "--nodes-per-router", "4"]
        return opts, simfabric.dragonfly(4, routers, 4)
    leaves = max(nodes // per_leaf, 2)
    opts = ["--leaves", str(leaves), "--nodes-per-leaf", str(per_leaf)]
    taper = 2.0 if fabric == "tapered" else 1.0
    if taper > 1:
        opts += ["--taper", "2"]
    return opts, simfabric.fat_tree(leaves, per_leaf, taper)


def draw(scenario: str, fabric: simfabric.Fabric, rnd: random.Random) -> list[str]:
    """The faulty components of one trial."""
    leaves = sorted(set(fabric.leaf_of.values()))
    if scenario == "healthy":
        return []
    if scenario == "node link":
        return [f"link:{rnd.choice(fabric.hosts)}"]
    if scenario == "uplink":
        if fabric.kind == "dragonfly":
            groups = sorted(set(fabric.group_of.values()))
            g, h = sorted(rnd.sample(range(len(groups)), 2))
            return [f"global:g{g}~g{h}"]
        return [f"uplink:{rnd.choice(leaves)}"]
    if scenario == "leaf or group":
        if fabric.kind == "dragonfly":
            return [f"switch:{rnd.choice(sorted(set(fabric.group_of.values())))}"]
        return [f"switch:{rnd.choice(leaves)}"]
    # three node links in two leaves
    first, second = rnd.sample(leaves, 2)
    under = {leaf: [h for h in fabric.hosts if fabric.leaf_of[h] == leaf] for leaf in leaves}
    hosts = rnd.sample(under[first], min(2, len(under[first]))) + [rnd.choice(under[second])]
    return [f"link:{h}" for h in hosts]


SCENARIOS = ("healthy", "node link", "uplink", "leaf or group", "three node links")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--per-leaf", type=int, default=16)
    parser.add_argument("--fabrics", nargs="+", default=["tree", "tapered", "dragonfly"],
                        choices=["tree", "tapered", "dragonfly"])
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=SCENARIOS)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the first trial's seed (to split a row over processes)")
    parser.add_argument("--rounds", type=int, default=0, help="quick maps of K rounds")
    parser.add_argument("--fraction", type=float, default=0.75)
    parser.add_argument("--max-retests", type=int, default=0,
                        help="netbench's bound on the suspects re-tested alone (default its own: "
                             "4 a rank; at 1,024 nodes a re-test alone takes seconds of wall time)")
    parser.add_argument("--json", help="also write every trial as JSON")
    args = parser.parse_args()
    trials = []
    print("| fabric | scenario | exact | missed | healthy named | wall s | simulated s (map + "
          "re-tests) |\n| --- | --- | ---: | --- | --- | ---: | ---: |", flush=True)
    for fabric_name in args.fabrics:
        opts, fabric = shape_options(fabric_name, args.nodes, args.per_leaf)
        for scenario in args.scenarios:
            rows = []
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                faults = draw(scenario, fabric, random.Random(f"{fabric_name}{scenario}{seed}"))
                with tempfile.TemporaryDirectory() as out:
                    cmd = [sys.executable, "-m", "fabricsuite.commands.cli", "simulate", *opts,
                           "--out", out, *[o for f in faults for o in
                                           ("--fault", f"{f}={args.fraction}")]]
                    if args.rounds:
                        cmd += ["--rounds", str(args.rounds), "--seed", str(seed + 1)]
                    if args.max_retests:
                        cmd += ["--max-retests", str(args.max_retests)]
                    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
                    path = Path(out) / "verdict.json"
                    verdict = json.loads(path.read_text()) if path.exists() else {
                        "exact": False, "missed": faults, "healthy_named": [],
                        "error": (proc.stderr or proc.stdout).strip()[-300:]}
                verdict.update(fabric=fabric_name, scenario=scenario, seed=seed, injected=faults)
                rows.append(verdict)
            trials += rows
            sims = [(r.get("simulated_s") or {}) for r in rows]
            print(f"| {fabric_name} | {scenario} | {sum(r['exact'] for r in rows)}/{len(rows)} | "
                  f"{'; '.join(m for r in rows for m in r['missed']) or '-'} | "
                  f"{'; '.join(h for r in rows for h in r['healthy_named'])[:120] or '-'} | "
                  f"{statistics.median(r.get('wall_s', 0) for r in rows):.1f} | "
                  f"{statistics.median((s.get('map') or 0) for s in sims):.4g} + "
                  f"{statistics.median((s.get('retests') or 0) for s in sims):.4g} |", flush=True)
            for r in rows:
                if "error" in r:
                    print(f"  error: {r['error']}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(trials, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
