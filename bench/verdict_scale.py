#!/usr/bin/env python3
"""How long does the map's verdict code take at center scale? (issue 66, "cost at scale")

    bench/verdict_scale.py [--nodes 256 1024 4096] [--per-leaf 16] [--rounds K] [--json FILE]

For each N: a 2-level tree of N / --per-leaf leaves, a map of healthy pairs with 1 % of noise
(every pair of a full map, or the N/2 pairs of each of K tournament rounds with --rounds, as a
nightly's quick map measures), one node's pairs 25 % slow, and the two pieces of verdict code
the fabric map check runs on it: `switches.explain` (which components explain the bad pairs)
and `map_promise.below_promise` (which parts lie below the promise), on the matrix's `pairs`
rows read into columns once (`pairindex.PairIndex.of_rows`, as the check's `switches.map_of`
does). Prints the seconds of each and the process's peak memory after each N. No MPI, no
simulation: the verdict code alone, on rows drawn here (the figures a simulated or real map
gives are the input, not the point; reading netbench's JSON file is not timed).
"""

import argparse
import json
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fabricsuite.data import map_promise, pairindex, switches  # noqa: E402


def tree_of(nodes: int, per_leaf: int) -> switches.Tree:
    leaves = max(nodes // per_leaf, 1)
    text = "SwitchName=core Switches=" + ",".join(f"leaf{i}" for i in range(leaves)) + "\n"
    text += "".join(f"SwitchName=leaf{leaf} Nodes=" +
                    ",".join(f"n{leaf * per_leaf + j}" for j in range(per_leaf)) + "\n"
                    for leaf in range(leaves))
    return switches.parse_topology(text)


def rows_of(nodes: int, rounds: int, rnd: random.Random) -> list[dict]:
    """netbench matrix's `pairs` rows (the fields the verdict reads) of a map of `nodes`."""
    slow = "n3"
    if rounds:  # K rounds of the circle method: rank i with (r - i) mod (N - 1), and N - 1
        chosen = rnd.sample(range(nodes - 1), min(rounds, nodes - 1))
        wanted = set()
        for r in chosen:
            for i in range(nodes - 1):
                j = nodes - 1 if i == r % (nodes - 1) else (r - i) % (nodes - 1)
                wanted.add((min(i, j), max(i, j)))
        index = sorted(p for p in wanted if p[0] != p[1])
    else:
        index = [(a, b) for a in range(nodes) for b in range(a + 1, nodes)]
    out = []
    for a, b in index:
        ha, hb = f"n{a}", f"n{b}"
        bad = slow in (ha, hb)
        mbps = 24000 * (0.75 if bad else 1.0) * (1 + rnd.gauss(0, 0.01))
        out.append({"host_a": ha, "host_b": hb, "round": None, "bandwidth_MBps": mbps,
                    "suspect": bad, "flagged": bad, "retest_bandwidth_MBps":
                    mbps if bad else None})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[256, 1024, 4096])
    parser.add_argument("--per-leaf", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=0, help="a quick map of K rounds")
    parser.add_argument("--json", help="also write the rows as JSON")
    args = parser.parse_args()
    rows = []
    for n in args.nodes:
        tree, rnd = tree_of(n, args.per_leaf), random.Random(n)
        pairs = rows_of(n, args.rounds, rnd)
        # as the fabric map check reads a result (switches.map_of): the rows as columns
        # once, then both verdicts on them
        start = time.perf_counter()
        index = pairindex.PairIndex.of_rows(tree, pairs, switches.path)
        index_s = time.perf_counter() - start
        start = time.perf_counter()
        explanation = switches.explain(tree, index)
        explain_s = time.perf_counter() - start
        start = time.perf_counter()
        map_promise.below_promise(tree, index, 200.0, 0.9)
        below_s = time.perf_counter() - start
        named = [c for f in explanation.findings for c in f.components]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        row = {"nodes": n, "pairs": len(pairs), "rounds": args.rounds or None,
               "index_s": round(index_s, 3), "explain_s": round(explain_s, 3),
               "below_promise_s": round(below_s, 3), "peak_MiB": round(peak), "named": named}
        rows.append(row)
        print(f"{n:6d} nodes {len(pairs):9d} pairs: columns {index_s:6.2f} s, explain "
              f"{explain_s:6.2f} s, below_promise {below_s:6.2f} s, peak {peak:6.0f} MiB, "
              f"named {named}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
