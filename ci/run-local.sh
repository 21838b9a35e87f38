#!/bin/bash
# Runs the suite on the embedded default system `local` (this machine) and prints the
# performance report. Sets up what is missing first (ci/setup.sh). Extra arguments go to
# reframe, e.g. `ci/run-local.sh -n NetbenchPingPong` or `ci/run-local.sh -p openmpi`.
# Results stay in results/ (perflogs, run reports, results database, per-session output).
# Skipped cases are folded out of ReFrame's output (python -m fabricsuite.console) and the run
# ends with a one-screen outcome: counts, skips grouped by reason, every failure with its
# figures (python -m fabricsuite.session).
# Exit status: ReFrame's, and 1 when the session tested nothing or not what it was asked to:
# "Ran 0/0" is not a pass.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/ci/setup.sh"
cd "$REPO"
VENV="${FABRICSUITE_VENV:-$REPO/.venv}"
RESULTS="${FABRICSUITE_RESULTS:-$REPO/results}"
report="$RESULTS/reports/run-report-$(date -u +%Y%m%dT%H%M%SZ)-$$.json"
skips="${report%.json}.skips.jsonl"
mkdir -p "$RESULTS/reports"
# Serial execution: concurrent timing checks on the same cores distort each other.
# --max-retries=1: confirm before alarm; a failed case is measured again after a pause
# (fabricsuite/verdict.py) and fails only if the confirmation fails too.
status=0
"$VENV/bin/reframe" -C config/settings.py -c checks -R \
    --system local --exec-policy=serial -r --performance-report --report-file "$report" \
    --max-retries=1 "$@" | "$VENV/bin/python" -m fabricsuite.console --skips "$skips" || status=$?
"$VENV/bin/python" -m fabricsuite.session --skips "$skips" "$report" -- "$@" ||
    { [ "$status" -ne 0 ] || status=1; }
exit "$status"
