#!/bin/bash
# Installs what the suite needs on a Debian-like machine; quick (seconds) when all is present.
#   - Debian's Open MPI, MPICH and hwloc (apt-get, only the missing packages)
#   - Slurm and munge for the emulated cluster (ci/emucluster.sh), iproute2 for its namespaces
#   - SimGrid's SMPI (libsimgrid-dev) for simulated fabrics (fabricsuite simulate)
#   - a virtual environment .venv with the pinned ReFrame and this package (pip install -e .)
# Used by ci/run-local.sh and ci/test.sh; safe to run again.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${FABRICSUITE_VENV:-$REPO/.venv}"

say() { echo "[setup] $*" >&2; }

# --- system packages: command -> Debian package(s) ---------------------------------------------
missing=()
# daemons (slurmctld, munged) live in /usr/sbin, outside a user's PATH on Debian: an installed
# one must not read as missing to a user who is not root
need() { PATH="$PATH:/usr/sbin:/sbin" command -v "$1" >/dev/null 2>&1 || missing+=("${@:2}"); }
need gcc gcc
need make make
need mpicc.openmpi openmpi-bin libopenmpi-dev
need mpirun.openmpi openmpi-bin
need mpicc.mpich mpich libmpich-dev
need mpiexec.hydra mpich
need lstopo-no-graphics hwloc
[ -e /usr/include/hwloc.h ] || missing+=(libhwloc-dev)
# the emulated cluster (ci/emucluster.sh); no daemon starts by itself (the script starts them)
need ip iproute2
need slurmctld slurm-wlm
need munged munge
# headless browser: the report test opens `fabricsuite report`'s page in it (tests/test_report.py)
need chromium chromium
# SimGrid's SMPI (smpicc, smpirun): netbench's map on simulated fabrics (fabricsuite simulate)
need smpicc libsimgrid-dev
# a compiler cache for the tests' ~100 netbench builds of one checkout (ci/test.sh)
need ccache ccache
# Python >= 3.11 that can make a virtual environment (Debian keeps venv's ensurepip in
# python3-venv, absent from a minimal install): Debian 12's python3 is 3.11
pythons="${PYTHON:-python3.11 python3.12 python3.13 python3}"
python_with_venv() {
    local candidate
    for candidate in $pythons; do
        if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c \
                'import sys, ensurepip; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}
python_with_venv >/dev/null || missing+=(python3 python3-venv)
if [ ${#missing[@]} -gt 0 ]; then
    packages=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
    say "installing Debian packages: $packages"
    if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else
        echo "ci/setup.sh: missing packages ($packages) and not root; install them as root" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q >/dev/null
    # shellcheck disable=SC2086
    $SUDO apt-get install -y -q --no-install-recommends $packages >/dev/null
fi

# --- Python environment ------------------------------------------------------------------------
PYTHON="$(python_with_venv)" || {
    echo "ci/setup.sh: needs Python >= 3.11 with its venv module: apt-get install python3" \
         "python3-venv, or set PYTHON to such a Python (tried: $pythons)" >&2
    exit 1; }
if [ ! -x "$VENV/bin/python" ]; then
    say "creating virtual environment $VENV with $PYTHON"
    "$PYTHON" -m venv "$VENV" || {
        echo "ci/setup.sh: '$PYTHON -m venv' failed; install python3-venv" >&2; exit 1; }
fi
# Reinstall only when pyproject.toml (which pins ReFrame) changed since the last install.
stamp="$VENV/.fabricsuite-installed"
want="$(sha256sum "$REPO/pyproject.toml" | cut -d' ' -f1) $REPO"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    say "installing the pinned ReFrame and fabricsuite into $VENV"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-compile -e "$REPO[test]"
    echo "$want" > "$stamp"
fi
