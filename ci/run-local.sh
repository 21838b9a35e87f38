#!/bin/bash
# Runs the suite on the embedded default system `local` (this machine) and prints the
# performance report. Sets up what is missing first (ci/setup.sh). Extra arguments go to
# reframe, e.g. `ci/run-local.sh -n NetbenchPingPong` or `ci/run-local.sh -p openmpi`.
# Results stay in results/ (perflogs, run reports, results database, per-session output).
# Skipped cases are folded out of ReFrame's output (python -m fabricsuite.base.console) and the run
# ends with a one-screen outcome: counts, skips grouped by reason, every failure with its
# figures (python -m fabricsuite.commands.session).
# Exit status: the session's verdict (fabricsuite nightly; the one table,
# fabricsuite.data.session_verdict.EXIT_STATUSES):
#   0  every case within its references (a transient, outside in fewer than half of its
#      rounds, and a case recorded without references of its machine included)
#   1  a confirmed finding that needs a person: a regression (outside in most of its rounds),
#      a node outlier, a degraded or flapped link
#   2  something broken (build, launch, sanity, a missing or unbelievable reference,
#      interference, a stale known finding), a session interrupted or not stored, or nothing
#      tested
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$REPO/ci/setup.sh"
cd "$REPO"
VENV="${FABRICSUITE_VENV:-$REPO/.venv}"
# The nightly's runner (fabricsuite nightly, mode "local" of config/settings.py: every check,
# serially, --max-retries=3: a failed case is measured again after growing pauses, 20, 60,
# 180 s, and fails only if every confirmation fails too), so that both keep one contract: one
# session of this machine's cores at a time (the same lock), ReFrame and its jobs end with it
# whatever signal ends it, an interrupted session is kept apart, never stored as a run.
exec "$VENV/bin/python" -m fabricsuite.commands.cli nightly --system local --mode local --tag local \
    -- "$@"
