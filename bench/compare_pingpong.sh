#!/bin/bash
# Does our harness add overhead? Runs a plain hand-written MPI ping-pong (plain_pingpong.c) and
# `netbench pingpong --sizes 8` alternately, ROUNDS times each, between the same two ranks, and
# prints the median 8-byte latency of each and their ratio. With BASE (a git revision), netbench
# as built from that revision runs in the same alternation: did a change of netbench move it?
#   bench/compare_pingpong.sh [openmpi|mpich] [ROUNDS] [BASE]
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MPI="${1:-openmpi}"; ROUNDS="${2:-10}"; BASE="${3:-}"
WORK="$(mktemp -d)"; trap 'rm -rf "$WORK"' EXIT
case "$MPI" in
    openmpi) CC=mpicc.openmpi; RUN=(mpirun.openmpi -np 2 --bind-to core)
             export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 ;;
    mpich)   CC=mpicc.mpich; RUN=(mpiexec.hydra -np 2 -bind-to core) ;;
    *) echo "compare_pingpong.sh: MPI must be openmpi or mpich, not '$MPI'" >&2; exit 2 ;;
esac
"$CC" -O2 -o "$WORK/plain" "$REPO/bench/plain_pingpong.c"
# Build netbench in a copy of src/ so that the checkout's build is left alone.
cp -r "$REPO/src" "$WORK/src"; make -s -C "$WORK/src" clean >/dev/null
make -s -C "$WORK/src" netbench MPICC="$CC" >/dev/null
if [ -n "$BASE" ]; then
    mkdir -p "$WORK/base"
    git -C "$REPO" archive "$BASE" src | tar -x -C "$WORK/base"
    make -s -C "$WORK/base/src" netbench MPICC="$CC" >/dev/null
fi
# Read each result after its run: a pipe would start python3 during the measurement.
latency() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tables"]["pingpong"][0]["latency_median_us"])' "$1"; }
plain=(); ours=(); base=()
for ((i = 0; i < ROUNDS; i++)); do
    plain+=("$("${RUN[@]}" "$WORK/plain")")
    "${RUN[@]}" "$WORK/src/netbench" pingpong --sizes 8 --json-file "$WORK/ours.json" >/dev/null
    ours+=("$(latency "$WORK/ours.json")")
    if [ -n "$BASE" ]; then
        "${RUN[@]}" "$WORK/base/src/netbench" pingpong --sizes 8 --json-file "$WORK/base.json" \
            >/dev/null
        base+=("$(latency "$WORK/base.json")")
    fi
done
python3 - "${plain[*]}" "${ours[*]}" "$MPI" "${base[*]}" "$BASE" <<'PY'
import statistics, sys
plain = [float(x) for x in sys.argv[1].split()]
ours = [float(x) for x in sys.argv[2].split()]
base = [float(x) for x in sys.argv[4].split()]
mp, mo = statistics.median(plain), statistics.median(ours)
print(f"{sys.argv[3]}: {len(plain)} alternating rounds, 8 B one-way latency, median of medians")
print(f"  plain ping-pong   {mp:.4f} us   (runs: {' '.join(f'{x:.3f}' for x in plain)})")
print(f"  netbench pingpong {mo:.4f} us   (runs: {' '.join(f'{x:.3f}' for x in ours)})")
if base:
    mb = statistics.median(base)
    print(f"  netbench at {sys.argv[5]} {mb:.4f} us   (runs: {' '.join(f'{x:.3f}' for x in base)})")
    print(f"  ratio netbench/base = {mo / mb:.3f}, base/plain = {mb / mp:.3f}")
print(f"  ratio netbench/plain = {mo / mp:.3f}")
PY
