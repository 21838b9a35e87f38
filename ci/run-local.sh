#!/bin/bash
# Runs the suite on the embedded default system `local` (this machine) and prints the
# performance report. Sets up what is missing first (ci/setup.sh). Extra arguments go to
# reframe, e.g. `ci/run-local.sh -n NetbenchPingPong` or `ci/run-local.sh -p openmpi`.
# Results stay in results/ (perflogs, run reports, results database, stage directories).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/ci/setup.sh"
cd "$REPO"
# Serial execution: concurrent timing checks on the same cores distort each other.
exec "${FABRICSUITE_VENV:-$REPO/.venv}/bin/reframe" -C config/settings.py -c checks -R \
    --system local --exec-policy=serial -r --performance-report "$@"
