"""ReFrame configuration of the suite: `reframe -C config/settings.py ...`.

Systems come from config/systems/*.py, one file per system, each defining `site_configuration`
with its `systems` and `environments`. A center adds its cluster by adding one file there (and
reference/<system>.yaml); nothing here changes. `local.py`, the embedded default that matches any
host, always comes last so that a center's own systems are matched first.

Results survive in $FABRICSUITE_RESULTS (default: results/ in the repository): perflogs, run
reports, ReFrame's results database, stage and output directories.
"""

import importlib.util
import os
import time
from pathlib import Path

from fabricsuite.base.commandline import results_dir

CONFIG_DIR = Path(__file__).resolve().parent
REPO_ROOT = CONFIG_DIR.parent
RESULTS = results_dir(None)  # the one reading of RESULTS every command shares
RESULTS.mkdir(parents=True, exist_ok=True)
#: One directory per session under output/ and stage/: a session never judges, nor overwrites,
#: another session's files (ReFrame reads this file once per session).
SESSION = f"{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"


def _system_files():
    """config/systems/*.py, then those of every directory in $FABRICSUITE_CONFIG_PATH
    (colon-separated; a center's own configuration, e.g. written by `fabricsuite init
    --config-dir DIR`: DIR/systems/*.py), the catch-all `local` last."""
    files = sorted((CONFIG_DIR / "systems").glob("*.py"))
    for extra in filter(None, os.environ.get("FABRICSUITE_CONFIG_PATH", "").split(":")):
        files += sorted((Path(extra) / "systems").glob("*.py"))
    return [f for f in files if f.name != "local.py"] + [CONFIG_DIR / "systems" / "local.py"]


def _load(path):
    spec = importlib.util.spec_from_file_location(f"fabricsuite_system_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.site_configuration


_systems, _environments = [], []
for _file in _system_files():
    _fragment = _load(_file)
    _systems += _fragment.get("systems", [])
    _environments += _fragment.get("environments", [])

for _system in _systems:
    # Stage and output directories under the results directory unless the system says otherwise,
    # one per session: results/output/<session>/<system>/<partition>/<environ>/<test> keeps
    # every run's netbench.json and job output; a stage is fresh (its stage of a passed test is
    # removed, a failed one kept for inspection).
    _system.setdefault("prefix", str(RESULTS))
    _system.setdefault("outputdir", str(Path(_system["prefix"], "output", SESSION)))
    _system.setdefault("stagedir", str(Path(_system["prefix"], "stage", SESSION)))

_CHECKS = str(REPO_ROOT / "checks")
# Concurrent checks distort timings; a failed case fails only after CONFIRM_ROUNDS confirmation
# rounds, each after a longer pause, failed too (fabricsuite/checks/judged_check.py; a test
# keeps the number here and in ci/run-local.sh equal to its CONFIRM_ROUNDS).
_TIMING = ["--exec-policy=serial", "--performance-report", "--max-retries=3"]
_MODES = [
    {
        # Every night: is the fabric as fast as yesterday? Timed checks once, smoke classes,
        # the external suites' quick programs; no validation runs (they time nothing).
        "name": "nightly",
        "options": ["-c", _CHECKS, *_TIMING, "-x", ".*Validation", "-S", "npb_class=S",
                    "-x", "BeffOriginal"],
    },
    {
        # The README's run command (ci/run-local.sh) on this machine: every check, validation
        # included, each failure confirmed; the machine's own references after its first
        # sessions.
        "name": "local",
        "options": ["-c", _CHECKS, "-R", *_TIMING],
    },
    {
        # Accepting a new interconnect: everything, validation included, acceptance classes,
        # three repeats so that the figures come with their spread.
        "name": "acceptance",
        "options": ["-c", _CHECKS, *_TIMING, "-S", "npb_class=C", "--repeat", "3"],
    },
    {
        # After an MPI, firmware, kernel or OS upgrade: first correctness (validation checks),
        # then the timed point-to-point and collective figures, repeated against the references.
        "name": "after-upgrade",
        "options": ["-c", _CHECKS, *_TIMING, "-S", "npb_class=S", "--repeat", "2",
                    "-x", "BeffOriginal"],
    },
]

#: Optional export of every performance record to a time-series store (Elasticsearch, an
#: HTTP-to-InfluxDB bridge, ...) through ReFrame's `httpjson` perflog handler: off unless
#: FABRICSUITE_PERFLOG_URL is set (see config/perflog-httpjson.example.py for a fuller one).
_EXPORT = []
if os.environ.get("FABRICSUITE_PERFLOG_URL"):
    _EXPORT.append({
        "type": "httpjson",
        "url": os.environ["FABRICSUITE_PERFLOG_URL"],
        "level": "info",
        "extras": {"facility": "fabricsuite"},
        # records carry the whole check; keep the series identity and the figures
        "ignore_keys": ["check_executable_opts", "check_env_vars", "check_variables",
                        "check_prerun_cmds", "check_postrun_cmds", "check_build_stdout",
                        "check_build_stderr"],
        # a store that is down must not stop the run: two quick retries, then give up
        "backoff_intervals": [0.5, 1],
        "retry_timeout": 5,
    })

site_configuration = {
    "systems": _systems,
    "environments": _environments,
    "general": [
        {
            "check_search_path": [str(REPO_ROOT / "checks")],
            "check_search_recursive": True,
            "report_file": str(RESULTS / "reports" / "run-report-{sessionid}.json"),
            # Never reuse a stage (ReFrame's default, restated): a check judges only what its
            # own job wrote. Each session's outputs stay in output/<session>/ (see above).
            "clean_stagedir": True,
            # How soon the end of a job is seen. ReFrame polls at 10 Hz first, each poll's rate
            # 10 % below the one before (poll_rate_decay 0.1), down to poll_rate_min: at 1 Hz, a
            # job of 1-20 s was seen 0.8 s after its end on average, 2.8 s at worst (every timed
            # case of a serial session pays it). A decay of 5 % and 2 Hz: 0.35 s, at most 1.2 s.
            # Serial timing sessions poll one job at a time: two squeue a second, 3.5 ms of CPU
            # each (measured on the emulated cluster: under 1 % of a core), are no load for a
            # scheduler (docs/measurements.md, "ReFrame sessions: their fixed cost").
            "poll_rate_decay": 0.05,
            "poll_rate_min": 2.0,
        },
        {
            # This machine's local scheduler polls with waitpid, no scheduler to ask: 2 % and
            # 4 Hz, seen 0.14 s after its end on average.
            "target_systems": ["local"],
            "poll_rate_decay": 0.02,
            "poll_rate_min": 4.0,
        },
    ],
    # Named run modes: `reframe -C config/settings.py --mode nightly -r` (add --system ...).
    "modes": _MODES,
    "storage": [{"enable": True, "sqlite_db_file": str(RESULTS / "results.db")}],
    "logging": [
        {
            "level": "debug",
            "handlers": [
                {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
                {
                    "type": "file",
                    "name": str(RESULTS / "reframe.log"),
                    "level": "debug",
                    "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                    "append": True,
                },
            ],
            "handlers_perflog": [
                {
                    # One file per check under perflogs/<system>/<partition>/, appended to.
                    "type": "filelog",
                    "basedir": str(RESULTS / "perflogs"),
                    "prefix": "%(check_system)s/%(check_partition)s",
                    "level": "info",
                    "format": (
                        "%(check_job_completion_time)s|%(check_result)s|%(check_display_name)s|"
                        "%(check_system)s|%(check_partition)s|%(check_environ)s|%(check_num_tasks)s|"
                        "%(check_mpi_library)s|%(check_netbench_version)s|"
                        # external suites: the program run and, built by Spack, its spec
                        "%(check_program_used)s|%(check_spack_spec_used)s|"
                        # netbench: the troubled fabric counters that moved during the job
                        # (fabricsuite.data.counters; added 2026-11-27: ReFrame kept the files
                        # written before as NAME.log.h0, a header change)
                        "%(check_counters)s|%(check_perfvalues)s"
                    ),
                    "format_perfvars": (
                        "%(check_perf_value)s|%(check_perf_unit)s|%(check_perf_ref)s|"
                        "%(check_perf_lower_thres)s|%(check_perf_upper_thres)s|"
                        "%(check_perf_result)s|"
                    ),
                    "append": True,
                },
                *_EXPORT,
            ],
        }
    ],
}
