"""The embedded default system `local`: whatever machine ReFrame runs on.

Local scheduler, `mpirun` launcher, one programming environment per MPI (Debian's Open MPI and
MPICH: `mpicc.openmpi`, `mpicc.mpich`), both by default; `FABRICSUITE_LOCAL_MPIS=openmpi` declares
a machine with one. A declared MPI that is not installed is never dropped silently: its checks fail
naming what is missing; with no MPI at all, one line names the fix. The `mpirun` each
environment sees is a small wrapper in config/launchers/<mpi>/ so that it is that MPI's launcher,
whatever the machine's `mpirun` alternative points to, with ranks bound to cores.

Its references are the machine's own: reference/local/<fingerprint>.yaml (fabricsuite.data.machine).
A machine without them is measured and recorded, not judged, until three sessions give them.

A center's cluster is another file next to this one (`fabricsuite init`, or by hand).
"""

import os
import re
import shutil
import sys
from pathlib import Path

from fabricsuite.data.machine import MachineError, this_machine
from fabricsuite.data.transport import SHARED_MEMORY

LAUNCHERS = Path(__file__).resolve().parent.parent / "launchers"

_CANDIDATES = [
    {
        "name": "openmpi",
        "descr": "Debian's Open MPI through mpicc.openmpi / mpirun.openmpi",
        "cc": "mpicc.openmpi",
        "launcher_binary": "mpirun.openmpi",
        "packages": "apt-get install openmpi-bin libopenmpi-dev",
        "env_vars": [
            ["PATH", f"{LAUNCHERS / 'openmpi'}:$PATH"],
            # Allowed as root (CI and containers); harmless otherwise.
            ["OMPI_ALLOW_RUN_AS_ROOT", "1"],
            ["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"],
            # One rank per core, always: Open MPI binds to NUMA/socket above 2 ranks otherwise.
            ["OMPI_MCA_hwloc_base_binding_policy", "core"],
        ],
    },
    {
        "name": "mpich",
        "descr": "Debian's MPICH through mpicc.mpich / mpiexec.hydra",
        "cc": "mpicc.mpich",
        "launcher_binary": "mpiexec.hydra",
        "packages": "apt-get install mpich libmpich-dev",
        "env_vars": [["PATH", f"{LAUNCHERS / 'mpich'}:$PATH"]],
    },
]


def _fail(message: str):
    # One line, no traceback: ReFrame would show a traceback for an exception raised here.
    print(f"config/systems/local.py: {message}", file=sys.stderr)
    sys.exit(2)


def _declared_mpis() -> list[str]:
    """The MPIs this machine is declared to have: $FABRICSUITE_LOCAL_MPIS (comma-separated),
    by default every candidate. A declared MPI that is not installed is not dropped: its
    environment stays, and its checks fail saying what is missing (a silent drop would report
    a run that tested one MPI, or none, as passed)."""
    names = [c["name"] for c in _CANDIDATES]
    declared = os.environ.get("FABRICSUITE_LOCAL_MPIS")
    if declared is None:
        return names
    chosen = [n.strip() for n in declared.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in names]
    if unknown or not chosen:
        _fail(f"FABRICSUITE_LOCAL_MPIS={declared!r}: expected a comma-separated list of "
              f"{', '.join(names)}")
    return chosen


def missing_programs(env: dict) -> list[str]:
    """The compiler wrapper and launcher of a candidate environment that are not on PATH."""
    return [p for p in (env["cc"], env["launcher_binary"]) if not shutil.which(p)]


def _environments():
    declared = _declared_mpis()
    candidates = [env for env in _CANDIDATES if env["name"] in declared]
    if all(missing_programs(env) for env in candidates):
        _fail("no MPI found (" + "; ".join(
            f"{env['name']}: {' and '.join(missing_programs(env))} not on PATH"
            for env in candidates) + "); run ci/setup.sh, or apt-get install openmpi-bin "
            "libopenmpi-dev mpich libmpich-dev")
    found = []
    for env in candidates:
        entry = {k: v for k, v in env.items()
                 if k not in ("launcher_binary", "descr", "packages")}
        entry.update({"features": ["mpi"], "target_systems": ["local"]})
        missing = missing_programs(env)
        if missing:
            # Kept, so that its checks fail naming the fix (fabricsuite.checks.rfm_netbench).
            entry["extras"] = {"missing": (
                f"{' and '.join(missing)} not on PATH: install {env['name']} "
                f"({env['packages']}) or leave it out with "
                f"FABRICSUITE_LOCAL_MPIS={','.join(n for n in declared if n != env['name'])}"
            )}
        found.append(entry)
    return found


def _processor():
    """CPUs this process may use and SMT siblings per core: the multi-rank checks run one
    rank per core. (Topology distances from hwloc are a separate matter; see README.)"""
    cpus = len(os.sched_getaffinity(0))
    siblings = Path("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list")
    try:
        per_core = 0
        for part in siblings.read_text().strip().split(","):  # e.g. "0,32" or "0-1"
            first, _, last = part.partition("-")
            per_core += int(last or first) - int(first) + 1
    except (OSError, ValueError):
        per_core = 1
    per_core = max(1, min(per_core, cpus))
    return {"num_cpus": cpus, "num_cpus_per_core": per_core}


def _extras():
    extras = {"nodes": 1}  # one node: the multi-rank checks skip their 2- and 4-node cases
    # One node: every rank's messages go through shared memory, whatever the MPI; a run forced
    # or fallen onto TCP measures the loopback instead and fails, naming it. A person measuring
    # another transport on purpose names it (a regular expression), or `any` to judge none.
    expected = os.environ.get("FABRICSUITE_LOCAL_TRANSPORT", SHARED_MEMORY)
    try:
        re.compile(expected)
    except re.error as err:
        _fail(f"FABRICSUITE_LOCAL_TRANSPORT={expected!r} is not a regular expression ({err}); "
              f"give one such as 'tcp', or 'any'")
    if expected != "any":
        extras["transport"] = {env["name"]: expected for env in _CANDIDATES}
    # Whose references: this machine's own (reference/local/<key>.yaml; fabricsuite.data.machine).
    try:
        extras["machine"], extras["machine_descr"] = this_machine()
    except MachineError as err:
        _fail(str(err))
    # No floor of its own: the bounds come from this machine's measured noise (the default
    # floor of 3 % only keeps a bound off zero). A person may widen it for a machine known to
    # be noisier than its references' sessions showed.
    floor = os.environ.get("FABRICSUITE_LOCAL_TOLERANCE_FLOOR")
    if floor is not None:
        try:
            extras["tolerance_floor"] = float(floor)
            if not 0 <= extras["tolerance_floor"] < 1:
                raise ValueError
        except ValueError:
            _fail(f"FABRICSUITE_LOCAL_TOLERANCE_FLOOR={floor!r}: expected a fraction in "
                  f"[0, 1), e.g. 0.03 for 3 %")
    # Opt-in: FABRICSUITE_LOCAL_SPACK=<install tree> builds the external suites with the
    # `spack` on PATH (site file config/spack/local.yaml: Debian's Open MPI as external), as a
    # center's Spack partition does; unset, they use programs on the path or are skipped.
    install_tree = os.environ.get("FABRICSUITE_LOCAL_SPACK")
    if install_tree:
        if not shutil.which("spack"):
            raise RuntimeError(
                "config/systems/local.py: FABRICSUITE_LOCAL_SPACK is set but `spack` is not on "
                "PATH; source Spack's setup-env.sh first, or unset FABRICSUITE_LOCAL_SPACK"
            )
        extras["spack"] = {
            "site": "config/spack/local.yaml",
            "install_tree": os.path.abspath(install_tree),
            "mpi": "openmpi",  # what local.yaml builds with: other environments skip
        }
    return extras


_environments = _environments()

site_configuration = {
    "systems": [
        {
            "name": "local",
            "descr": "This machine (embedded default): local scheduler, mpirun launcher",
            "hostnames": [".*"],
            "modules_system": "nomod",
            "partitions": [
                {
                    "name": "default",
                    "descr": "All cores of this machine",
                    "scheduler": "local",
                    "launcher": "mpirun",
                    "environs": [env["name"] for env in _environments],
                    "features": ["mpi"],
                    "processor": _processor(),
                    "extras": _extras(),
                    # Timing checks must not overlap: concurrent benchmarks distort each other.
                    "max_jobs": 1,
                }
            ],
        }
    ],
    "environments": _environments,
}
