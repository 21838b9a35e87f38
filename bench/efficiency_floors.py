#!/usr/bin/env python3
"""Efficiencies against the limits of the cores, healthy and broken: the evidence for the
first-day floors of fabricsuite.data.limits (PHYSICS_FLOORS) and for whether an efficiency drifts
less than its figure. The latency is read against the floor pingpong measured in its own
processes (and, beside it, against the prologue's: the two differ where the host placed the
vCPUs anew between programs).

For each scenario, `--repeats` times in turn (so each repeat of a scenario lies minutes from
the next, like sessions): `netbench limits` on CPUs 0 and 1 as the checks' prologue runs it,
then `netbench pingpong --sizes 8`, `netbench bibw --sizes 1M` and `netbench dense --sizes 1M`
(as NetbenchDense runs it) on the same CPUs (config/launchers/bind-rank); the dense aapc
bandwidth per rank is read against every rank copying at once (`copy_all_ranks`). Reported
per scenario: the median of each figure and of its efficiency, their between-repeat spread
(1.4826 MAD / median), and whether the physics floors pass. Needs netbench built for each MPI
(`make -C src netbench MPICC=mpicc.openmpi`, into --build DIR/<mpi>/netbench).

    bench/efficiency_floors.py --build /tmp/nb --repeats 5 [--json FILE]
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
sys.path.insert(0, str(REPO))

from fabricsuite.data import limits  # noqa: E402
from fabricsuite.data.netbench_result import load  # noqa: E402

MiB = 1024 * 1024
BIND = REPO / "config" / "launchers" / "bind-rank"
LAUNCH = {"openmpi": ["mpirun.openmpi", "-np", "2", "--bind-to", "none"],
          "mpich": ["mpiexec.hydra", "-np", "2"]}
#: (name, MPI, CPUs, environment): healthy, then the breakages issue 49 names.
SCENARIOS = [
    ("healthy openmpi", "openmpi", "0,1", {}),
    ("healthy mpich", "mpich", "0,1", {}),
    ("openmpi on TCP loopback", "openmpi", "0,1", {"OMPI_MCA_btl": "self,tcp"}),
    ("openmpi single copy off", "openmpi", "0,1",
     {"OMPI_MCA_btl_vader_single_copy_mechanism": "none"}),
    ("mpich UCX on TCP", "mpich", "0,1", {"UCX_TLS": "tcp,self"}),
    ("both ranks on one core", "openmpi", "0,0", {}),
]


def run(build: Path, mpi: str, cpus: str, env: dict, out: Path) -> dict:
    program = build / mpi / "netbench"
    environ = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1",
               "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", **env}
    figures = {}
    for name, args in (("limits", ["limits", "--sizes", f"8,{MiB}", *limits.PROLOGUE_OPTIONS]),
                       ("pp", ["pingpong", "--sizes", "8"]),
                       ("bw", ["bibw", "--sizes", str(MiB)]),
                       ("dense", ["dense", "--sizes", str(MiB), "--phases", "16", "--seed", "1",
                                  "--min-iterations", "16"])):
        path = out / f"{name}.json"
        path.unlink(missing_ok=True)
        subprocess.run([*LAUNCH[mpi], str(BIND), cpus, str(program), *args, "--json-file",
                        str(path), "--timeout", "120"], env=environ, capture_output=True,
                       timeout=180, check=False)
    try:
        lim, pp, bw, dense = (load(out / f"{n}.json") for n in ("limits", "pp", "bw", "dense"))
    except ValueError:
        return {}
    prologue_floor = lim.value(None, "floor_oneway_median_us")
    # the latency's own floor, measured by pingpong in its processes (fabricsuite.data.limits)
    floor = pp.summary.get("floor_oneway_median_us") or prologue_floor
    ceiling = lim.value("limits_copy", "copy_one_core_median_MBps", size_bytes=MiB)
    latency = pp.value("pingpong", "latency_median_us", size_bytes=8)
    bandwidth = bw.value("bibw", "bandwidth_median_MBps", size_bytes=MiB)
    all_ranks = lim.value("limits_copy", "copy_all_ranks_median_MBps", size_bytes=MiB)
    aapc = dense.value("algorithms", "bandwidth_mean_MBps", algorithm="aapc", size_bytes=MiB)
    figures.update(floor_us=floor, prologue_floor_us=prologue_floor, ceiling_MBps=ceiling,
                   latency_8B_us=latency, latency_floor_multiple=latency / floor,
                   latency_prologue_floor_multiple=latency / prologue_floor,
                   bandwidth_1MiB_MBps=bandwidth,
                   bandwidth_ceiling_fraction=bandwidth / ceiling, dense_aapc_1MiB_MBps=aapc,
                   dense_ceiling_fraction=aapc / all_ranks)
    return figures


def spread(values: list[float]) -> float:
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values)
    return 1.4826 * mad / median if median else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=Path, required=True,
                        help="folder with <mpi>/netbench for openmpi and mpich")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path, help="also write every run here")
    args = parser.parse_args()
    seen: dict[str, list[dict]] = {name: [] for name, *_ in SCENARIOS}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for name, mpi, cpus, env in SCENARIOS:
                figures = run(args.build, mpi, cpus, env, Path(tmp))
                if figures:
                    seen[name].append(figures)
                print(f"[{repeat + 1}/{args.repeats}] {name}: "
                      + (", ".join(f"{k} {v:.3g}" for k, v in figures.items()) or "no result"),
                      file=sys.stderr)
    multiple, fraction = limits.PHYSICS_FLOORS["x_floor"], limits.PHYSICS_FLOORS["fraction"]
    print(f"| scenario | runs | latency 8 B us (spread) | x its own floor (spread) [range] | "
          f"x the prologue's floor [range] | bandwidth 1 MiB MB/s "
          f"(spread) | fraction (spread) | floors (<= {multiple:g} x, >= {fraction:g}) | "
          f"dense aapc 1 MiB MB/s (spread) | its fraction (spread) | dense floor |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, runs in seen.items():
        if not runs:
            print(f"| {name} | 0 | | | | | | no result | | | |")
            continue

        def cell(key: str, runs: list[dict] = runs) -> str:
            values = [r[key] for r in runs]
            return f"{statistics.median(values):.3g} ({spread(values):.0%})"

        def span(key: str, runs: list[dict] = runs) -> str:
            values = [r[key] for r in runs]
            return f"[{min(values):.3g}-{max(values):.3g}]"

        fails = sum(1 for r in runs if r["latency_floor_multiple"] > multiple
                    or r["bandwidth_ceiling_fraction"] < fraction
                    or r["prologue_floor_us"] > limits.FLOOR_LIMIT_US)
        print(f"| {name} | {len(runs)} | {cell('latency_8B_us')} | "
              f"{cell('latency_floor_multiple')} {span('latency_floor_multiple')} | "
              f"{span('latency_prologue_floor_multiple')} | {cell('bandwidth_1MiB_MBps')} | "
              f"{cell('bandwidth_ceiling_fraction')} | fail {fails} of {len(runs)} | "
              f"{cell('dense_aapc_1MiB_MBps')} | {cell('dense_ceiling_fraction')} | fail "
              f"{sum(1 for r in runs if r['dense_ceiling_fraction'] < fraction)} of "
              f"{len(runs)} |")
    if args.json:
        args.json.write_text(json.dumps(seen, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
