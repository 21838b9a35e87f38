"""config/launchers/near-nic: a rail's rank on the cores hwloc places its NIC near, run for real
(hwloc-bind, taskset); where hwloc cannot place the port, the program runs as placed, and
rank 0 says so. The rail checks put it in front of netbench (fabricsuite.checks.rails)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fabricsuite.checks.rails import NEAR_NIC

AFFINITY = [sys.executable, "-c", "import os; print(sorted(os.sched_getaffinity(0)))"]


def near_nic(port: str, *program: str, env=None, cpus: str | None = None):
    words = [str(NEAR_NIC), port, *program]
    if cpus is not None:
        words = ["taskset", "-c", cpus, *words]
    return subprocess.run(words, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "OMPI_COMM_WORLD_RANK": "0", **(env or {})})


def hwloc_cpus(device: str) -> list[int] | None:
    """The PUs hwloc places an OS device near, or None where it does not know the device."""
    proc = subprocess.run(["hwloc-calc", "--intersect", "PU", f"os={device}"],
                          capture_output=True, text=True)
    if proc.returncode != 0 or not proc.stdout.strip():
        return None
    return sorted(int(pu) for pu in proc.stdout.strip().split(","))


@pytest.mark.skipif(shutil.which("hwloc-bind") is None, reason="hwloc-bind not installed "
                    "(ci/setup.sh installs hwloc)")
def test_a_rank_runs_on_the_cores_hwloc_places_its_nic_near():
    known = [(name, hwloc_cpus(name)) for name in sorted(os.listdir("/sys/class/net"))]
    known = [(name, cpus) for name, cpus in known if cpus]
    if not known:
        pytest.skip("hwloc knows no network device of this machine to place a rank near")
    name, cpus = known[0]
    # bound by the launcher to one CPU; near-nic moves it to the NIC's cores
    proc = near_nic(f"net/{name}", *AFFINITY, cpus=str(os.sched_getaffinity(0).pop()))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(cpus) and proc.stderr == ""


def test_a_port_hwloc_cannot_place_runs_as_placed_and_rank_0_says_so(tmp_path):
    proc = near_nic("infiniband/mlx5_9/1", *AFFINITY)
    assert proc.returncode == 0
    assert proc.stdout.strip() == str(sorted(os.sched_getaffinity(0)))
    assert proc.stderr.strip() == ("near-nic: hwloc cannot place infiniband/mlx5_9/1 (mlx5_9) "
                                   "on this node: cores as the launcher placed them")
    quiet = near_nic("net/nosuchnic0", "true", env={"OMPI_COMM_WORLD_RANK": "3"})
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_nothing_of_the_port_or_the_program_is_evaluated(tmp_path):
    marker = tmp_path / "evaluated"
    proc = near_nic(f"net/$(touch {marker})", "sh", "-c", 'printf "%s|" "$@"', "_",
                    "a b", "$(id)", "--json-file", "x y.json")
    assert not marker.exists()
    assert proc.stdout == "a b|$(id)|--json-file|x y.json|"
    assert "is no port (net/IF, infiniband/HCA/PORT, cxi/DEV)" in proc.stderr
    # the program's exit status is the rank's
    assert near_nic("net/lo", "sh", "-c", "exit 3").returncode == 3


def test_the_wrapper_is_executable_where_the_checks_find_it():
    assert Path(NEAR_NIC).is_file() and os.access(NEAR_NIC, os.X_OK)
