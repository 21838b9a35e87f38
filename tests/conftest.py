"""Shared fixtures (the MPI-free netbench library through ctypes, netbench built with each MPI,
the README's session) and the test lanes.

Lanes (markers, README "Tests"): `unit` is every test without another lane's marker; it runs no
MPI program, no ReFrame session and creates no namespace, and a guard below fails a unit test
that tries. `mpi` runs netbench (or another MPI program) with mpirun; `reframe` runs a ReFrame
session on this machine (with MPI); `emucluster` brings up the emulated Slurm cluster. Each of
the last three is also `integration`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import analysis_lib
import emu_support
import mpi_support
import pytest


@pytest.fixture(scope="session")
def nb() -> analysis_lib.Analysis:
    # NB_ANALYSIS_LIB=/path/to/lib.so tests a library built elsewhere (e.g. a mutant).
    prebuilt = os.environ.get("NB_ANALYSIS_LIB")
    if prebuilt:
        return analysis_lib.load(Path(prebuilt))
    try:
        path = analysis_lib.build()
    except subprocess.CalledProcessError as err:
        pytest.fail(f"make -C src libnbanalysis.so failed:\n{err.stdout}\n{err.stderr}")
    return analysis_lib.load(path)


@pytest.fixture(scope="session")
def netbench_program(tmp_path_factory):
    """netbench_program(MPI): the path of netbench built with that MPI from src/, built once per
    session (every test runs the program and writes nothing beside it; the temporary directory
    is on the file system the emulated nodes share)."""
    built: dict[str, str] = {}

    def program(mpi: str) -> str:
        if mpi not in built:
            built[mpi] = str(mpi_support.build_netbench(tmp_path_factory.mktemp(f"build-{mpi}"),
                                                        mpi))
        return built[mpi]
    return program


@pytest.fixture(scope="module", params=sorted(mpi_support.MPIS))
def netbench(request, netbench_program):
    """(netbench built with this MPI, launcher of 2 ranks bound to cores, MPI name); a test
    module may define its own `netbench` fixture instead."""
    compiler, launcher = mpi_support.MPIS[request.param]
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed (ci/setup.sh installs it)")
    return netbench_program(request.param), launcher, request.param


@pytest.fixture(scope="session")
def readme_session(tmp_path_factory):
    """(results directory, process) of the README's run command, as written, on this machine:
    a full session on `local` (every check, both MPIs). test_trust judges its exit status;
    test_reframe_local and test_reframe_multirank read what it wrote (the point-to-point and
    multi-rank cases, their skips and perflogs) instead of running those checks again."""
    return mpi_support.readme_session(tmp_path_factory.mktemp("readme"))


@pytest.fixture(scope="session")
def passing_session(readme_session):
    """The README's run command that exited 0 (every failure tried again after a pause was
    noise): its results directory and process. test_reframe_local and test_reframe_multirank
    read their cases from it instead of running them a second time."""
    results, proc = readme_session
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    return results, proc


#: Tests run before all others: the README's run command is a new user's first session on a fresh
#: machine. After half an hour of the other tests this VM stays slower for minutes (CI on
#: 2026-11-24: its first attempt found Open MPI's allreduce at 8 B 2x its reference in the first
#: run and in all three confirmation rounds, 5 minutes apart; the second attempt passed).
RUN_FIRST = ("tests/test_trust.py::test_readme_run_command_exits_0",)


#: The lane of every module with integration tests that is not an emulated-cluster module: a new
#: such module must say which (collection fails otherwise).
LANES = {
    "mpi": ("test_method_buffers", "test_method_completion", "test_method_models",
            "test_method_multipair", "test_netbench_program", "test_netbench_declarations",
            "test_matrix", "test_simulate",
            "test_suite_builds"),
    "reframe": ("test_check_files", "test_external_checks", "test_machine", "test_outcome",
                "test_reframe_local",
                "test_reframe_multirank", "test_trust", "test_verdicts"),
}
#: The integration modules that time nothing (dry runs, listings, replayed outputs, builds,
#: simulated time): ci/test.sh runs them on both cores beside each other (marker `untimed`),
#: before the lanes that time, one test at a time.
UNTIMED = ("test_check_files", "test_external_checks", "test_simulate", "test_suite_builds",
           "test_netbench_declarations")
#: What a unit test must not start: MPI launchers and compilers, Slurm, ReFrame, namespaces, the
#: emulated cluster's `up` and `exec`. The guard sees what a test starts itself, not what
#: that starts in turn: our launcher wrappers (config/launchers), which unit tests run against a
#: fake MPI on PATH, pass.
NOT_IN_UNIT = frozenset({
    "mpirun", "mpiexec", "mpirun.openmpi", "mpiexec.openmpi", "mpirun.mpich", "mpiexec.mpich",
    "mpiexec.hydra", "mpicc", "mpicc.openmpi", "mpicc.mpich", "srun", "sbatch", "salloc",
    "slurmctld", "slurmd", "munged", "reframe", "ip", "unshare", "nsenter", "netbench",
    "smpicc", "smpirun", "netbench-smpi",
})
LAUNCHERS = Path(__file__).resolve().parents[1] / "config" / "launchers"


def heavy(argv: list) -> str | None:
    """What in `argv` a unit test must not start, or None."""
    words = [str(word) for word in argv[:2]]
    if Path(words[0]).name.startswith(("python", "bash", "sh")) and len(words) > 1:
        words = words[1:]  # an interpreter: judge its script
    program = Path(words[0])
    if program.name == "emucluster.sh":
        command = str(argv[1]) if len(argv) > 1 else ""
        return f"emucluster.sh {command}" if command in ("up", "exec") else None
    if LAUNCHERS in program.parents:
        return None
    return program.name if program.name in NOT_IN_UNIT else None


def _module(item) -> str:
    """The test's module name without its package ("test_matrix")."""
    return item.module.__name__.rpartition(".")[2]


def _lane(item) -> str:
    if item.get_closest_marker("emucluster"):
        return "emucluster"
    if not item.get_closest_marker("integration"):
        return "unit"
    module = _module(item)
    for lane, modules in LANES.items():
        if module in modules:
            return lane
    raise pytest.UsageError(f"{item.nodeid}: an integration test of a module without a lane: "
                            "add it to LANES in tests/conftest.py")


def pytest_collection_modifyitems(session, config, items):
    for item in items:
        lane = _lane(item)
        item.add_marker(lane)
        if lane != "unit" and _module(item) in UNTIMED:
            item.add_marker("untimed")
    items.sort(key=lambda item: item.nodeid not in RUN_FIRST)  # stable: the rest keep their order


_cluster_reasons: dict = {}


def pytest_runtest_setup(item):
    """An emulated-cluster test on a machine that cannot run one is skipped with the reason,
    probed once per module's prefix when its first test is set up (not at collection)."""
    mark = item.get_closest_marker("emucluster")
    if mark and "prefix" in mark.kwargs:
        key = (mark.kwargs["prefix"], tuple(mark.kwargs.get("tools", emu_support.TOOLS)))
        if key not in _cluster_reasons:
            _cluster_reasons[key] = emu_support.why_not(*key)
        if _cluster_reasons[key]:
            pytest.skip(_cluster_reasons[key])


@pytest.fixture(autouse=True)
def _unit_runs_nothing_heavy(request, monkeypatch):
    """A unit test that starts MPI, Slurm, ReFrame or a namespace fails, naming what it started
    and where it belongs (the unit lane must stay fast and run anywhere)."""
    if request.node.get_closest_marker("unit") is None:
        return
    real_popen = subprocess.Popen

    class Guarded(real_popen):
        def __init__(self, args, *rest, **kwargs):
            argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
            if kwargs.get("shell"):
                argv = str(argv[0]).split()
            started = heavy(argv)
            if started:
                pytest.fail(f"a unit test started {started} ({argv!r}): mark it integration "
                            "and give its module a lane (tests/conftest.py)", pytrace=False)
            super().__init__(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Guarded)


@pytest.fixture
def references_on_nodes(tmp_path, monkeypatch):
    """(tests/test_cases.py, tests/test_findings.py) The file judged-own.json was judged by,
    recording the nodes its references were taken on (n1, n2), as `fabricsuite baseline`
    writes them; returns that file."""
    import yaml

    from fabricsuite import REFERENCE_DIR

    data = yaml.safe_load((REFERENCE_DIR / "local" / "amd-epyc-1x2x1-24gib.yaml").read_text())
    for key, entry in data["_statistics"].items():
        if key.startswith("NetbenchPingPongBandwidth "):
            entry["nodes"] = ["n1", "n2"]
    (tmp_path / "local").mkdir()
    path = tmp_path / "local" / "amd-epyc-1x2x1-24gib.yaml"
    path.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("RFM_REFERENCE_PREFIX", str(tmp_path))
    return path
