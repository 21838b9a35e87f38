"""The netbench program itself, built and run for real with Debian's Open MPI and MPICH."""

import json
import os
import shutil
import subprocess

import pytest

from fabricsuite import SOURCE_DIR
from fabricsuite.netbench_result import parse_json

pytestmark = pytest.mark.integration

MPIS = {
    "openmpi": ("mpicc.openmpi", ["mpirun.openmpi", "-np", "2", "--bind-to", "core"]),
    "mpich": ("mpicc.mpich", ["mpiexec.hydra", "-np", "2", "-bind-to", "core"]),
}
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")


@pytest.fixture(scope="module", params=sorted(MPIS))
def netbench(request, tmp_path_factory):
    """(path to netbench built with this MPI, launcher command)."""
    compiler, launcher = MPIS[request.param]
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed (ci/setup.sh installs it)")
    build = tmp_path_factory.mktemp(f"build-{request.param}") / "src"
    shutil.copytree(SOURCE_DIR, build, ignore=shutil.ignore_patterns("netbench", "*.so", "*.o"))
    proc = subprocess.run(["make", "-C", str(build), "netbench", f"MPICC={compiler}"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # -Werror is part of the build: a warning fails it, so a clean build means no warnings.
    assert "warning" not in proc.stderr.lower(), proc.stderr
    return str(build / "netbench"), launcher


def run(cmd, timeout=300):
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=timeout)


def test_help_lists_every_subcommand(netbench):
    program, _ = netbench
    proc = run([program, "--help"])
    assert proc.returncode == 0
    for method in ("pingpong", "bibw", "bothway", "flood", "overlap", "loggp"):
        assert method in proc.stdout
        sub = run([program, method, "--help"])
        assert sub.returncode == 0 and "--repetitions" in sub.stdout, (method, sub.stdout)


@pytest.mark.parametrize("args, words", [
    (["pingpong", "--max-size", "3X"], "--max-size"),
    (["pingpong", "--repetitions", "0"], "--repetitions"),
    (["flood", "--queue-depths", "3,abc"], "--queue-depths"),
    (["loggp", "--pfact", "-1"], "--pfact"),
    (["warp"], "warp"),
    (["pingpong", "--no-such-option"], "--no-such-option"),
])
def test_bad_arguments_give_one_line_and_status_2(netbench, args, words):
    program, _ = netbench
    proc = run([program, *args])
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert words in lines[0] and lines[0].startswith("netbench: ")
    assert proc.stdout == ""


def test_bad_arguments_under_mpirun_are_reported_once(netbench):
    program, launcher = netbench
    proc = run([*launcher, program, "pingpong", "--sizes", "8,zz"])
    assert proc.returncode == 2
    assert proc.stderr.count("netbench: ") == 1, proc.stderr


def test_one_rank_is_refused_clearly(netbench):
    program, launcher = netbench
    proc = run([*launcher[:1], "-np", "1", program, "pingpong", "--sizes", "8"])
    assert proc.returncode == 2
    assert "2 MPI ranks" in proc.stderr or "two MPI ranks" in proc.stderr, proc.stderr


def test_pingpong_run_is_sound_and_both_renderings_agree(netbench, tmp_path):
    program, launcher = netbench
    json_file = tmp_path / "out.json"
    proc = run([*launcher, program, "pingpong", "--sizes", "8,1K,64K", "--repetitions", "3",
                "--json-file", str(json_file)])
    assert proc.returncode == 0, proc.stderr
    result = parse_json(json_file.read_text())
    assert result.problems([8, 1024, 65536], "pingpong") == []
    assert proc.stdout.startswith("# netbench ") and "# status: ok" in proc.stdout
    assert result.value("pingpong", "latency_median_us", size_bytes=8) > 0
    ranks = result.ranks
    assert [r["rank"] for r in ranks] == [0, 1]
    assert all(r["cpus_bound"] and r["host"] for r in ranks)


def test_loggp_on_shared_memory_finds_positive_g_and_G(netbench):
    """Acceptance: at least one protocol range with g > 0 and G > 0, never a negative one."""
    program, launcher = netbench
    proc = run([*launcher, program, "loggp", "--json"], timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = parse_json(proc.stdout)
    ranges = result.table("ranges")
    assert len(ranges) >= 1
    assert any(r["g_us"] > 0 and r["G_ns_per_byte"] > 0 for r in ranges), ranges
    for r in ranges:
        assert (r["g_us"] is None or r["g_us"] >= 0) and (
            r["G_ns_per_byte"] is None or r["G_ns_per_byte"] >= 0), r
    assert json.loads(proc.stdout)["format"] == "netbench-result"
