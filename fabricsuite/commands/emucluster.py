"""ci/emucluster.sh, the emulated Slurm cluster, driven with one cluster's settings: its name
prefix, state directory and port base (the tests and the benchmarks that bring up their own)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from fabricsuite import REPO_ROOT

EMU = str(REPO_ROOT / "ci" / "emucluster.sh")


class EmuCluster:
    """``cluster("up", "--nodes", "2")`` runs ``ci/emucluster.sh up --nodes 2`` for this cluster;
    ``env`` adds variables to one call."""

    def __init__(self, prefix: str, state: Path, port: int, timeout: float = 600):
        self.env = dict(os.environ, FABRICSUITE_EMU_PREFIX=prefix,
                        FABRICSUITE_EMU_DIR=str(state), FABRICSUITE_EMU_PORT=str(port))
        self.timeout = timeout

    def __call__(self, *args: str, env: dict | None = None,
                 timeout: float | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([EMU, *args], env={**self.env, **(env or {})}, cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=timeout or self.timeout)

    def start(self, *args: str, env: dict | None = None) -> subprocess.Popen:
        """``ci/emucluster.sh ARGS`` started, not waited for: its stdout and stderr as text
        pipes, read while it runs (the caller waits for it)."""
        return subprocess.Popen([EMU, *args], env={**self.env, **(env or {})}, cwd=REPO_ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def bench_parser(doc: str):
    """The command line of an emulated-cluster benchmark: its docstring as help, and the MPI
    it runs (--mpi); the benchmark adds its own options."""
    import argparse

    parser = argparse.ArgumentParser(description=doc,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpi", default="openmpi", choices=["openmpi", "mpich"])
    return parser


def bench_cluster(script: str, letters: str, port_base: int) -> tuple[EmuCluster, Path] | None:
    """A benchmark's own emulated cluster (its prefix, state directory and ports, so that it
    never touches another) and its work directory; None, after one line on stderr, where this
    machine cannot run one (root and Slurm are needed: ci/setup.sh)."""
    import shutil
    import sys
    import tempfile

    if os.geteuid() != 0 or not shutil.which("slurmctld"):
        print(f"{script}: needs root and Slurm (ci/setup.sh)", file=sys.stderr)
        return None
    work = Path(tempfile.mkdtemp(prefix=f"fs-{letters}-"))
    cluster = EmuCluster(f"{letters}{os.getpid() % 10000}", work / "emu",
                         port_base + os.getpid() % 3000 * 2, timeout=3600)
    return cluster, work


def bench_up(cluster: EmuCluster, script: str, *args: str) -> bool:
    """`ci/emucluster.sh up ARGS` for a benchmark's own cluster; False, after one line on
    stderr naming the script and what failed, where it did not come up."""
    import sys

    up = cluster("up", *args)
    if up.returncode != 0:
        print(f"{script}: emucluster up failed: {up.stderr[-2000:]}", file=sys.stderr)
    return up.returncode == 0


def matrix_references(nodes: int, rails: int = 0, at_once: bool = False) -> str:
    """A reference file for NetbenchMatrix at `nodes` nodes of emucluster:nodes (Open MPI), or
    with `rails` for NetbenchRailMatrix on each rail (the level `rail`), or `at_once` for
    NetbenchRailsAtOnce (every rail in one job, the level `rail: every`): every count of bad
    pairs, nodes and faulty components judged against 0, the figures recorded only (emulated
    nodes share the host's cores: the verdict is the counts, relative to the run)."""
    counts = (("bad_pairs", "pairs"), ("bad_nodes", "nodes"), ("faulty_node_links",
              "components"), ("faulty_uplinks", "components"), ("faulty_switches", "components"))
    figures = (("bandwidth_median_MBps", "25.0", "MB/s"), ("bandwidth_min_MBps", "25.0", "MB/s"),
               ("latency_median_us", "100.0", "us"))
    check = ("NetbenchRailsAtOnce" if at_once else "NetbenchRailMatrix" if rails
             else "NetbenchMatrix")
    levels = ([f"{nodes}x1.every"] if at_once else
              [f"{nodes}x1.rail{k}" for k in range(1, rails + 1)] if rails else [f"{nodes}x1"])
    rails = rails or at_once
    lines = [f"{check}:", f"  $index: [$partition, $environ, scale{', rail' if rails else ''}]",
             "  emucluster:nodes:", "    openmpi:", f"      {nodes}x1:"]
    indent = "          " if rails else "        "
    for level in levels:
        if rails:
            lines.append(f"        {level.split('.')[1]}:")
        lines += [f"{indent}matrix_{name}: [{value}, null, null, {unit}]"
                  for name, value, unit in figures]
        lines += [f"{indent}matrix_{name}: [0, null, 0, {unit}]" for name, unit in counts]
    lines.append("_recorded_only:")
    lines += [f"  '{check}.emucluster:nodes.openmpi.{level}.matrix_{name}': '{nodes} emulated "
              f"nodes share 2 cores: recorded; the verdict is the counts, relative to the run'"
              for level in levels for name, _value, _unit in figures]
    return "\n".join(lines) + "\n"


def bench_tally(trials: list[dict], scenarios: tuple[str, ...], json_path: str | None,
                **settings: object) -> bool:
    """Prints how many trials of each scenario were right, writes them (with `settings`) to
    `json_path` where given; whether every trial was."""
    import json

    print()
    for scenario in scenarios:
        done = [t for t in trials if t["scenario"] == scenario]
        print(f"{scenario:<8} {sum(t['right'] for t in done)} of {len(done)} right")
    if json_path:
        Path(json_path).write_text(json.dumps({**settings, "trials": trials}, indent=2))
    return all(t["right"] for t in trials)


#: ReFrame options that keep a point-to-point check short where its verdict, not its curve, is
#: the point (the emulated links, and tests on this machine): 5 repetitions, sizes up to 1 MiB
#: (its variables need no larger size); the latency check at 8 B alone, the one size it judges
#: (a full sweep took 5 s of shared memory and 15 s at 1 Gbit, 8 B alone 0.5 s). ReFrame applies
#: -S in order, so the check's own options, given after, win over the first two.
QUICK = ("-S", "netbench_options=--repetitions,5,--max-size,1M",
         "-S", "required_sizes=" + ",".join(str(2 ** k) for k in range(3, 21)),
         "-S", "NetbenchPingPong.netbench_options=--repetitions,5,--max-size,8",
         "-S", "NetbenchPingPong.required_sizes=8")

#: Open MPI between emulated nodes: over TCP (the shaped links), yielding when idle (several
#: nodes share a core), as root.
OPENMPI_TCP = {"SLURM_MPI_TYPE": "pmix", "OMPI_MCA_btl": "tcp,self",
               "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
               "OMPI_MCA_mpi_yield_when_idle": "1"}


def srun_matrix(netbench: Path | str, nodes: int, out: Path | str, *options: str,
                minutes: int = 5) -> list[str]:
    """The arguments of ``ci/emucluster.sh exec`` that run `netbench matrix` through srun, one
    rank on each of `nodes` nodes, its result to `out` (environment: OPENMPI_TCP)."""
    return ["srun", f"-N{nodes}", f"-n{nodes}", "--ntasks-per-node=1", f"--time={minutes}",
            str(netbench), "matrix", *options, "--json-file", str(out)]
