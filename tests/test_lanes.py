"""The test lanes (tests/conftest.py): the unit lane's guard refuses what would make it slow or
need a machine of its own, and every test has exactly one lane."""

import subprocess
import sys

import conftest
import pytest

from fabricsuite import REPO_ROOT


@pytest.mark.parametrize("argv, started", [
    (["mpirun.openmpi", "-np", "2", "netbench"], "mpirun.openmpi"),
    (["/usr/bin/mpiexec.hydra", "-n", "2"], "mpiexec.hydra"),
    ([f"{sys.prefix}/bin/reframe", "-C", "config/settings.py", "-r"], "reframe"),
    ([sys.executable, f"{sys.prefix}/bin/reframe", "-l"], "reframe"),
    (["ip", "netns", "add", "x"], "ip"),
    (["/tmp/build/src/netbench", "pingpong"], "netbench"),
    ([str(REPO_ROOT / "ci" / "emucluster.sh"), "up"], "emucluster.sh up"),
    ([str(REPO_ROOT / "ci" / "emucluster.sh"), "status"], None),
    ([str(conftest.LAUNCHERS / "openmpi" / "mpirun"), "-np", "2"], None),
    (["make", "-C", "src", "libnbanalysis.so"], None),
    (["bash", "-c", "true"], None),
])
def test_the_unit_guard_names_what_a_unit_test_must_not_start(argv, started):
    assert conftest.heavy(argv) == started


def test_a_unit_test_that_starts_mpi_fails_naming_its_lane():
    with pytest.raises(pytest.fail.Exception, match="mark it integration"):
        subprocess.run(["mpirun.openmpi", "--version"], capture_output=True)


def test_every_test_has_one_lane():
    lanes = {}
    for lane in ("unit", "mpi", "reframe", "emucluster"):
        out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", lane,
                              "-p", "no:cacheprovider"], capture_output=True, text=True,
                             cwd=REPO_ROOT).stdout
        lanes[lane] = {line for line in out.splitlines() if "::" in line}
    everything = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                                 "-p", "no:cacheprovider"], capture_output=True, text=True,
                                cwd=REPO_ROOT).stdout
    every = {line for line in everything.splitlines() if "::" in line}
    assert sum(map(len, lanes.values())) == len(every) == len(set().union(*lanes.values()))
    assert all(lanes.values()), {lane: len(tests) for lane, tests in lanes.items()}
    assert not any("test_reframe_local" in t or "test_matrix" in t for t in lanes["unit"])
