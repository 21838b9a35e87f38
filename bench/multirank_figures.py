#!/usr/bin/env python3
"""Medians over repeated runs of the multi-rank methods: b_eff, dense worst/first, and the
collectives' individually timed median against the naive loop average.

    bench/multirank_figures.py --mpi openmpi --repeats 5 [--ranks 2]

Builds nothing: it runs src/netbench (make -C src [MPICC=mpicc.mpich] first) with the launcher
of the chosen MPI, ranks bound to cores, and prints one table per method. Run it on a quiet
machine: concurrent work distorts every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NETBENCH = REPO / "src" / "netbench"
LAUNCHERS = {
    "openmpi": ["mpirun.openmpi", "--bind-to", "core", "-np"],
    "mpich": ["mpiexec.hydra", "-bind-to", "core", "-np"],
}
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
KEY_SIZES = (8, 1024, 1024 * 1024)


def run(mpi: str, ranks: int, method: str, *options: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [*LAUNCHERS[mpi], str(ranks), str(NETBENCH), method, *options,
               "--json-file", str(out)]
        proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed:\n{proc.stderr[-2000:]}")
        return json.loads(out.read_text())


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mpi", choices=sorted(LAUNCHERS), default="openmpi")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ranks", type=int, default=2)
    args = parser.parse_args()
    if not NETBENCH.is_file():
        sys.exit("src/netbench is missing: make -C src (MPICC=mpicc.mpich for MPICH)")

    beff, dense, coll = [], [], []
    for i in range(args.repeats):
        print(f"repeat {i + 1}/{args.repeats}", file=sys.stderr)
        beff.append(run(args.mpi, args.ranks, "beff", "--lmax", "1M", "--random-patterns", "6",
                        "--repetitions", "3", "--time-cap-ms", "2"))
        dense.append(run(args.mpi, args.ranks, "dense"))
        coll.append(run(args.mpi, args.ranks, "collectives"))

    print(f"# {args.mpi}, {args.ranks} ranks, medians of {args.repeats} runs")
    print("\n## b_eff (L_max 1 MiB, 6 random patterns)")
    for key in ("b_eff_MBps", "b_eff_per_process_MBps", "b_eff_at_lmax_MBps",
                "b_eff_at_lmax_rings_MBps", "pingpong_bandwidth_lmax_MBps",
                "latency_rings_random_us", "pingpong_latency_us"):
        print(f"{key:34s} {median([r['summary'].get(key) for r in beff]):10.4g}")

    print("\n## dense: worst phase / first phase, mean bandwidth per rank (MB/s) at 1 MiB")
    for algorithm in ("aapc", "pairwise", "cumulative", "random"):
        rows = [next(x for x in r["tables"]["algorithms"]
                     if x["algorithm"] == algorithm and x["size_bytes"] == 1024 * 1024)
                for r in dense]
        print(f"{algorithm:12s} worst/first {median([x['worst_to_first'] for x in rows]):.3f}"
              f"  bandwidth {median([x['bandwidth_mean_MBps'] for x in rows]):9.1f}"
              f"  phases {rows[0]['phases']}")

    print("\n## collectives: individual median vs naive loop average (us)")
    print(f"{'collective':10s} {'size':>8s} {'individual':>11s} {'loop':>9s} {'loop/indiv':>10s}")
    names = [x["collective"] for x in coll[0]["tables"]["collectives"]]
    for name in dict.fromkeys(names):
        for size in ((0,) if name == "barrier" else KEY_SIZES):
            rows = [next(x for x in r["tables"]["collectives"]
                         if x["collective"] == name and x["size_bytes"] == size) for r in coll]
            individual = median([x["time_median_us"] for x in rows])
            loop = median([x["loop_average_us"] for x in rows])
            print(f"{name:10s} {size:8d} {individual:11.3f} {loop:9.3f} {loop / individual:10.2f}")
    ratio = median([r["summary"].get("loop_to_individual_median") for r in coll])
    print(f"median over all rows and runs of loop/individual: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
