"""fabricsuite: the Python side of the interconnect regression suite.

The package is in four layers, one folder each, lower ones first (docs/architecture.md):
`base` (units, directions, formats, command-line plumbing), `data` (one reading of every file
the suite writes or is given, and the one verdict of a stored session), `checks` (the ReFrame
bases the test plans in the repository's `checks/` build on) and `commands` (`fabricsuite
<command>`). This module holds the repository's paths and a few constants every layer uses; it
imports no module of the package.
"""

import re
from pathlib import Path

#: The repository root (the package lives at its top level).
REPO_ROOT = Path(__file__).resolve().parent.parent
SOURCE_DIR = REPO_ROOT / "src"
#: The version, written once: netbench's (src/core/version.h), which pyproject.toml reads from here.
__version__ = re.search(r'NETBENCH_VERSION "([^"]+)"',
                        (SOURCE_DIR / "core" / "version.h").read_text()).group(1)
REFERENCE_DIR = REPO_ROOT / "reference"
#: ReFrame's names of the Slurm scheduler (with and without accounting): where `srun` and
#: `scontrol` reach the job's nodes.
SLURM_SCHEDULERS = ("slurm", "squeue")
#: The environment variable that carries a session's node rotation
#: (judged_check.Judged.node_rotation, set by `fabricsuite nightly --mode acceptance`).
ROTATION_ENV = "FABRICSUITE_NODE_ROTATION"
#: The run modes of config/settings.py, in its order: named by `fabricsuite nightly --help`
#: without loading the settings (they load every system, and a login node without MPI fails
#: there); tests/test_session_verdict.py holds the two equal.
RUN_MODES = ("nightly", "local", "acceptance", "after-upgrade")
#: The longest pause before the first confirmation round (`-S confirm_pause_s`, extras): the
#: rounds wait 3 and 9 times longer, so 600 s already spans 2 hours; a larger one is a typo that
#: would hold the nightly (and the machine's lock) for days. The check and the nightly refuse it.
MAX_CONFIRM_PAUSE_S = 600.0
#: What a confirmation round's fail_reason says (after ReFrame's "reframe error: ") where it
#: refused to measure again a case that failed before its figures were judged (build, sanity,
#: launch) in the first run and in its confirmation (fabricsuite.checks.judged_check): waiting
#: cannot change such a failure. The case's phase and reason are its last round that ran
#: (fabricsuite.data.cases.Case.last_ran).
NOT_MEASURED_AGAIN = "not measured again"
