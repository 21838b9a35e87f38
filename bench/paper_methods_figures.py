#!/usr/bin/env python3
"""Medians over repeated runs of the reuse, polling, vector, anysource, sendmodes, loaded figures.

Two ranks; the figures the papers' methods report (Zamani, Kutlug).

    bench/paper_methods_figures.py --mpi openmpi --repeats 5 [--json FILE] [--netbench PATH]

Builds nothing in the checkout: with --mpi openmpi it runs src/netbench (make -C src first);
with --mpi mpich it builds netbench in a temporary copy of src/ with MPICC=mpicc.mpich (as
bench/compare_pingpong.sh does), so the checkout's Open MPI build is left alone; --netbench PATH
runs that binary instead. Two ranks bound to cores, one MPI job at a time. Each repeat runs every
method once (the repeat loop outside, the method loop inside), so a slow phase of the machine hits
all methods alike. The options are those of the ReFrame checks (checks/buffers.py,
checks/completion.py, checks/multipair.py). Prints one table: figure, unit, median, min, max over
the runs, n (runs with a value) and flagged (runs in which netbench gave the figure no value or
listed it as unreliable). Run it on a quiet machine: concurrent work distorts every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
LAUNCHERS = {
    "openmpi": ["mpirun.openmpi", "--bind-to", "core", "-np", "2"],
    "mpich": ["mpiexec.hydra", "-bind-to", "core", "-np", "2"],
}
COMPILERS = {"openmpi": "mpicc.openmpi", "mpich": "mpicc.mpich"}
LIBRARY_NAMES = {"openmpi": "Open MPI", "mpich": "MPICH"}
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
KiB = 1024
SMALL, LARGE = 8, 64 * KiB

COMPLETION = ["--sizes", f"8,1024,{LARGE}", "--repetitions", "11", "--time-cap-ms", "2"]
#: Per method the options of its ReFrame check.
METHODS = {
    "reuse": ["--sizes", f"8,4096,{LARGE},{256 * KiB}", "--repetitions", "7",
              "--time-cap-ms", "3"],
    "polling": COMPLETION,
    "vector": ["--sizes", f"64,4096,{LARGE}", "--segments", "1,8,64", "--repetitions", "7",
               "--time-cap-ms", "3"],
    "anysource": COMPLETION,
    "sendmodes": COMPLETION,
    "loaded": ["--latency-size", "8", "--bandwidth-size", "64K", "--rate-size", "8",
               "--window", "64", "--time-cap-ms", "2"],
}
#: Unreliable entries that 2 ranks always give and that no figure below reads.
EXPECTED_UNRELIABLE = {"loaded_latency_cost_max_k_us"}


def row(result: dict, table: str, **match):
    """The row of `table` whose columns equal `match`, or None."""
    for r in result["tables"].get(table, []):
        if all(r.get(k) == v for k, v in match.items()):
            return r
    return None


def cell(table: str, column: str, **match):
    """A figure read from one table cell, flagged by netbench under `column[k=v,...]`."""
    keys = ",".join(f"{k}={v}" for k, v in match.items())

    def read(result):
        r = row(result, table, **match)
        return None if r is None else r.get(column)
    return read, [f"{column}[{keys}]"]


def summary(key: str):
    return (lambda result: result["summary"].get(key)), [key]


def difference(a, b):
    """a - b of two figures (signed; unpaired medians of one run)."""
    (read_a, flags_a), (read_b, flags_b) = a, b

    def read(result):
        x, y = read_a(result), read_b(result)
        return None if x is None or y is None else x - y
    return read, flags_a + flags_b


def figures() -> list[tuple[str, str, str, tuple]]:
    """(method, figure, unit, (reader, unreliable quantities that flag it))."""
    reuse = {p: cell("reuse", "latency_median_us", size_bytes=LARGE, reuse_percent=p)
             for p in (0, 100)}
    out = [
        ("reuse", "reuse 100 % latency @64K", "us", reuse[100]),
        ("reuse", "reuse 0 % latency @64K", "us", reuse[0]),
        ("reuse", "reuse 0 % extra (paired) @64K", "us", summary("cost_extra_us")),
        ("reuse", "reuse 0 %/100 % ratio (paired) @64K", "x",
         cell("reuse", "ratio", size_bytes=LARGE, reuse_percent=0)),
        ("reuse", "reuse 0 % - 100 % median lat. @64K", "us", difference(reuse[0], reuse[100])),
        ("polling", "polling blocking latency @8", "us", summary("blocking_latency_small_us")),
        ("polling", "polling busy MPI_Test latency @8", "us",
         summary("busy_poll_latency_small_us")),
        ("polling", "polling Test+yield latency @8", "us",
         summary("test_yield_latency_small_us")),
        ("polling", "polling blocking extra vs busy @8", "us", summary("blocking_cost_small_us")),
        ("polling", "polling blocking/busy ratio @8", "x", summary("blocking_cost_small_ratio")),
        ("polling", "polling yield/busy ratio @8", "x", summary("test_yield_cost_small_ratio")),
        ("polling", "polling one MPI_Test call", "us", summary("test_call_us")),
        ("vector", "vector contiguous latency @64K", "us",
         cell("contiguous", "latency_median_us", size_bytes=LARGE)),
        ("vector", "vector 64-seg latency @64K", "us",
         cell("vector", "latency_median_us", size_bytes=LARGE, segments=64)),
        ("vector", "vector 64-seg extra (paired) @64K", "us",
         cell("vector", "extra_us", size_bytes=LARGE, segments=64)),
        ("vector", "vector 64-seg/contig ratio @64K", "x",
         cell("vector", "ratio", size_bytes=LARGE, segments=64)),
        ("anysource", "anysource named latency @8", "us", summary("named_latency_small_us")),
        ("anysource", "anysource ANY_SOURCE latency @8", "us",
         summary("any_source_latency_small_us")),
        ("anysource", "anysource ANY_SOURCE extra @8", "us", summary("any_source_cost_small_us")),
        ("anysource", "anysource ANY_SOURCE ratio @8", "x", summary("any_source_cost_small_ratio")),
        ("anysource", "anysource +ANY_TAG latency @8", "us",
         summary("any_source_any_tag_latency_small_us")),
        ("anysource", "anysource +ANY_TAG extra @8", "us",
         summary("any_source_any_tag_cost_small_us")),
        ("anysource", "anysource +ANY_TAG ratio @8", "x",
         summary("any_source_any_tag_cost_small_ratio")),
    ]
    for size, label in ((SMALL, "@8"), (LARGE, "@64K")):
        for mode in ("standard", "synchronous", "buffered", "ready"):
            out.append(("sendmodes", f"sendmodes {mode} latency {label}", "us",
                        cell("sendmodes", "latency_median_us", size_bytes=size, send_mode=mode)))
        for mode in ("synchronous", "buffered", "ready"):
            out.append(("sendmodes", f"sendmodes {mode}/standard {label}", "x",
                        cell("sendmodes_ratio", "ratio_to_standard", size_bytes=size,
                             send_mode=mode)))
    out += [
        ("loaded", "loaded msg rate 1 pair @8", "msg/s", summary("message_rate_one_pair_per_s")),
        ("loaded", "loaded aggregate bandwidth @64K", "MB/s", summary("aggregate_bandwidth_MBps")),
        ("loaded", "loaded latency (no load) @8", "us", summary("loaded_latency_k0_us")),
    ]
    return out


def run(netbench: Path, mpi: str, method: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [*LAUNCHERS[mpi], str(netbench), method, *METHODS[method], "--json-file", str(out)]
        proc = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        return json.loads(out.read_text())


def build_mpich(workdir: Path) -> Path:
    """netbench built with mpicc.mpich in a copy of src/ (the checkout's build is left alone)."""
    src = workdir / "src"
    shutil.copytree(SRC, src)
    for step in (["make", "-s", "-C", str(src), "clean"],
                 ["make", "-s", "-C", str(src), "netbench", f"MPICC={COMPILERS['mpich']}"]):
        proc = subprocess.run(step, capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"{' '.join(step)} failed:\n{proc.stderr[-2000:]}")
    return src / "netbench"


def stale(netbench: Path) -> bool:
    built = netbench.stat().st_mtime
    return any(p.stat().st_mtime > built for p in [*SRC.glob("*.c"), *SRC.glob("*.h")])


def fmt(value) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.4e}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="\n".join(__doc__.splitlines()[2:]),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mpi", choices=sorted(LAUNCHERS), default="openmpi",
                        help="MPI library and its launcher (default openmpi)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of every method (default 5)")
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write the table as JSON")
    parser.add_argument("--netbench", metavar="PATH", type=Path,
                        help="netbench binary built for --mpi (default: src/netbench for "
                             "openmpi, a temporary MPICH build for mpich)")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.netbench is not None and not args.netbench.is_file():
        parser.error(f"--netbench {args.netbench}: no such file")
    if args.json is not None and args.json.is_dir():
        parser.error(f"--json {args.json}: is a directory")

    with tempfile.TemporaryDirectory() as workdir:
        if args.netbench is not None:
            netbench = args.netbench.resolve()
        elif args.mpi == "mpich":
            print("building netbench with mpicc.mpich in a temporary copy of src/",
                  file=sys.stderr)
            netbench = build_mpich(Path(workdir))
        else:
            netbench = SRC / "netbench"
            if not netbench.is_file():
                sys.exit("src/netbench is missing: make -C src")
            if stale(netbench):
                sys.exit("src/netbench is older than its sources: make -C src")

        start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        results: dict[str, list[dict]] = {m: [] for m in METHODS}
        for i in range(args.repeats):
            print(f"repeat {i + 1}/{args.repeats}", file=sys.stderr)
            for method in METHODS:
                results[method].append(run(netbench, args.mpi, method))
        end = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

    library = results["reuse"][0]["mpi"]["library"].splitlines()[0].split(",")[0].strip()
    if LIBRARY_NAMES[args.mpi] not in library:
        sys.exit(f"--mpi {args.mpi}, but netbench reports {library!r}: wrong binary")

    rows = []
    for method, name, unit, (read, quantities) in figures():
        values, flagged = [], 0
        for result in results[method]:
            value = read(result)
            unreliable = {u["quantity"] for u in result["unreliable"]}
            if value is None or unreliable & {*quantities, "timings"}:
                flagged += 1
            if value is not None:
                values.append(value)
        rows.append({"figure": name, "unit": unit,
                     "median": statistics.median(values) if values else None,
                     "min": min(values, default=None), "max": max(values, default=None),
                     "n": len(values), "flagged": flagged})

    # Per method and quantity (or warning): in how many runs, and the first run's reason.
    seen: dict[tuple[str, str], list] = {}
    for method, runs in results.items():
        for result in runs:
            entries = [(f"unreliable {u['quantity']}", u["reason"]) for u in result["unreliable"]
                       if u["quantity"] not in EXPECTED_UNRELIABLE]
            entries += [("warning", w) for w in result["warnings"]]
            for what, reason in entries:
                seen.setdefault((method, what), [0, reason])[0] += 1
    notes = [f"{method}: {what} in {count}/{args.repeats} runs (first: {reason})"
             for (method, what), (count, reason) in seen.items()]

    print(f"# {args.mpi} ({library}), 2 ranks bound to cores, repeats {args.repeats}, "
          f"{start} .. {end}")
    print(f"{'figure':38s} {'unit':5s} {'median':>10s} {'min':>10s} {'max':>10s} {'n':>3s} "
          f"{'flag':>4s}")
    for r in rows:
        print(f"{r['figure']:38s} {r['unit']:5s} {fmt(r['median']):>10s} {fmt(r['min']):>10s} "
              f"{fmt(r['max']):>10s} {r['n']:3d} {r['flagged']:4d}")
    if notes:
        print("\n# unreliable entries and warnings (besides the 2-rank loaded cost):")
        for note in notes:
            print(f"#   {note}")

    if args.json is not None:
        args.json.write_text(json.dumps({
            "mpi": args.mpi, "library": library, "repeats": args.repeats,
            "netbench": str(netbench), "start_utc": start, "end_utc": end,
            "options": METHODS, "figures": rows, "notes": notes}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
