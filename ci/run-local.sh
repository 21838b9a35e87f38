#!/bin/bash
# Runs the suite on the embedded default system `local` (this machine) and prints the
# performance report. Sets up what is missing first (ci/setup.sh). Extra arguments go to
# reframe, e.g. `ci/run-local.sh -n NetbenchPingPong` or `ci/run-local.sh -p openmpi`.
# Results stay in results/ (perflogs, run reports, results database, per-session output).
# Skipped cases are folded out of ReFrame's output (python -m fabricsuite.console) and the run
# ends with a one-screen outcome: counts, skips grouped by reason, every failure with its
# figures (python -m fabricsuite.session).
# Exit status: the session's verdict (python -m fabricsuite.session --classify): 0 every case
# within its references (a variable outside in the first run but not the last is a transient,
# not a regression), 1 a confirmed regression, 2 something broken or nothing tested ("Ran 0/0"
# is not a pass; no run report at all).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/ci/setup.sh"
cd "$REPO"
VENV="${FABRICSUITE_VENV:-$REPO/.venv}"
RESULTS="${FABRICSUITE_RESULTS:-$REPO/results}"
report="$RESULTS/reports/run-report-$(date -u +%Y%m%dT%H%M%SZ)-$$.json"
skips="${report%.json}.skips.jsonl"
mkdir -p "$RESULTS/reports"
# One session of this machine's cores at a time, with `fabricsuite nightly --system local` too
# (the same lock): two sessions timing on the same cores measure each other.
lock="${TMPDIR:-/tmp}/fabricsuite-nightly-local.lock"
exec 9>>"$lock"
if ! flock -n 9; then
    echo "ci/run-local.sh: another session of local is running ($(cat "$lock" 2>/dev/null || echo "holder unknown"); lock $lock): one at a time, so that no two sessions time on the same cores; wait for it to end" >&2
    exit 2
fi
printf 'PID %s since %s\n' "$$" "$(date -u '+%Y-%m-%d %H:%M:%S UTC')" > "$lock"
# Serial execution: concurrent timing checks on the same cores distort each other.
# --max-retries=3: confirm before alarm; a failed case is measured again after a pause, up to
# 3 rounds with longer pauses (20, 60, 180 s), and fails only if every confirmation fails too
# (fabricsuite/verdict.py, CONFIRM_ROUNDS).
status=0
"$VENV/bin/reframe" -C config/settings.py -c checks -R \
    --system local --exec-policy=serial -r --performance-report --report-file "$report" \
    --max-retries=3 "$@" 9>&- | "$VENV/bin/python" -m fabricsuite.console --skips "$skips" 9>&- ||
    status=$?
# The verdict decides (ReFrame fails a case whose confirmation disagreed with its first run; no
# report at all is 2 there). $status stays for the record: the outcome names ReFrame's failures.
verdict=0
"$VENV/bin/python" -m fabricsuite.session --classify --take-references --skips "$skips" "$report" \
    -- "$@" 9>&- ||
    verdict=$?
[ "$status" -eq 0 ] || echo "(reframe exited $status; the verdict above decides)" >&2
exit "$verdict"
