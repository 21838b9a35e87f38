#!/bin/bash
# Runs the tests: lint, unit tests and the integration tests (real MPI runs and a real ReFrame
# session on this machine). Sets up what is missing first (ci/setup.sh).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/ci/setup.sh"
cd "$REPO"
VENV="${FABRICSUITE_VENV:-$REPO/.venv}"
"$VENV/bin/ruff" check fabricsuite checks config tests bench
# --durations: where CI time goes (CI has 90 minutes; the target is 20, issue 51)
exec "$VENV/bin/python" -m pytest -ra --durations=40 "$@"
