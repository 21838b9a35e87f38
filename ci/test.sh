#!/bin/bash
# Runs the tests: lint, unit tests and the integration tests (real MPI runs and a real ReFrame
# session on this machine). Sets up what is missing first (ci/setup.sh).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/ci/setup.sh"
cd "$REPO"
VENV="${FABRICSUITE_VENV:-$REPO/.venv}"
"$VENV/bin/ruff" check fabricsuite checks config tests bench
# The tests build netbench from this one checkout in about 100 ReFrame sessions (each builds
# it once per MPI, as a center's session does): through a compiler cache, every build after
# the first of each MPI takes 0.2 s instead of 4 (docs/measurements.md, "CI time"). Debian's
# ccache stands in for gcc, which both MPIs' wrappers call; the cache lives in the checkout, so
# a fresh clone starts empty and a cache never outlives its checkout. Without ccache, plain gcc.
if [ -d /usr/lib/ccache ] && command -v ccache >/dev/null; then
    export PATH="/usr/lib/ccache:$PATH" CCACHE_DIR="$REPO/.ccache"
fi
# The whole suite (no selection given, at most --junitxml=FILE): the unit lane first, on both
# cores (pytest-xdist: it times nothing, 95 s on one core, 55 s on two), then the integration
# tests that time nothing, on both cores, then the rest, serially (their ranks busy-poll and
# must not share a core). A JUnit file asked for is written per step: FILE for the serial one,
# FILE with .unit and with .untimed before its suffix for the two parallel ones
# (bench/ci_lanes.py reads them all). Any other argument: one pytest run, as given.
junit=()
for arg in "$@"; do
    case "$arg" in
        --junitxml=*) junit=("$arg") ;;
        *) junit=(selected); break ;;
    esac
done
if [ "${junit[*]}" != selected ]; then
    unit_junit=() untimed_junit=()
    if [ ${#junit[@]} -eq 1 ]; then
        unit_junit=("${junit[0]%.xml}.unit.xml")
        untimed_junit=("${junit[0]%.xml}.untimed.xml")
    fi
    "$VENV/bin/python" -m pytest -q -m unit -n 2 "${unit_junit[@]}"
    # the integration tests that time nothing (dry runs, replayed outputs, builds, simulated
    # time; marker untimed, tests/conftest.py): on both cores too (141 s serially, 73 here)
    "$VENV/bin/python" -m pytest -q -m "untimed and not unit" -n 2 --dist worksteal \
        "${untimed_junit[@]}"
    set -- -m "not unit and not untimed" "$@"
fi
# --durations: where CI time goes (CI has 90 minutes; the target is 20, issue 65)
exec "$VENV/bin/python" -m pytest -ra --durations=40 "$@"
