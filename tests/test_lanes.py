"""The test lanes (tests/conftest.py): the unit lane's guard refuses what would make it slow or
need a machine of its own, and every test has exactly one lane."""

import os
import subprocess
import sys

import conftest
import pytest
from lane_listing import LANE_NAMES

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
    # One collection, each test's lanes as the markers `-m LANE` selects by (tests/lane_listing.py)
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "-p", "lane_listing"],
                          capture_output=True, text=True, cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT / "tests")})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    # (node id, its lanes): a parametrized id may hold spaces, the lanes never do
    listed = [line.removeprefix("LANES ").rsplit(" ", 1) for line in lines
              if line.startswith("LANES ")]
    every = {line for line in lines if "::" in line and not line.startswith("LANES ")}
    lanes = {lane: {nodeid for nodeid, named in listed if lane in named.split(",")}
             for lane in LANE_NAMES}
    # every test collected is listed, each with exactly one lane
    assert {nodeid for nodeid, _ in listed} == every and len(listed) == len(every) > 1000
    assert all(named in LANE_NAMES for _, named in listed), [
        (nodeid, named) for nodeid, named in listed if named not in LANE_NAMES]
    assert all(lanes.values()), {lane: len(tests) for lane, tests in lanes.items()}
    assert not any("test_reframe_local" in t or "test_matrix" in t for t in lanes["unit"])
