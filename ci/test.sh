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
# --durations: where CI time goes (CI has 90 minutes; the target is 20, issue 51)
exec "$VENV/bin/python" -m pytest -ra --durations=40 "$@"
