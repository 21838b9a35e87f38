"""Trustworthy results (issue 11, sections 1, 2, 5 and the ReFrame half of 6), with real ReFrame
sessions and real MPI on this machine:

- the README's run command, exactly as written, exits 0 on this machine, and .ci/run calls the
  README's test command;
- a check judges only what its own job wrote: a failed job after a passed one in the same stage
  (--dont-restage) fails, it does not pass with the earlier figures;
- `-S netbench_options=...` never reaches the shell unquoted;
- an MPI that is missing is never dropped silently, and a machine without MPI gets one line;
- a session that tested nothing, or not the environment it was asked for, fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mpi_support import (
    NEEDS_OPEN_MPI,
    failed_on_noise_only,
    local_distance,
    local_session,
    readme_commands,
)

from fabricsuite import REPO_ROOT
from fabricsuite.commands.emucluster import QUICK

pytestmark = [
    pytest.mark.integration,
    NEEDS_OPEN_MPI,
]


def reframe(results: Path, *args: str, env: dict | None = None, action: str = "-r"):
    """checks/pt2pt.py on `local` (mpi_support.local_session)."""
    return local_session(results, ["checks/pt2pt.py"], *args, env=env, action=action)


# --- 1. the README's run command is green on this machine ----------------------------------------

def test_ci_run_calls_exactly_the_readme_test_command():
    _run, test = readme_commands()
    assert test == "ci/test.sh"
    lines = [ln for ln in (REPO_ROOT / ".ci" / "run").read_text().splitlines()
             if ln.strip() and not ln.startswith("#")]
    assert lines[-1] == f"exec bash {test}", lines


def test_only_noise_is_tried_again():
    def failure(phase, reason):
        return f"FAILURE INFO for X\n  * Failing phase: {phase}\n  * Reason: {reason}\n"

    head = "[ FAILED ]\nSUMMARY OF FAILURES\n"
    perf = failure("performance", "performance error: failed to meet reference(s)")
    noisy = failure("sanity", "sanity error: netbench flagged ranges[0] as unreliable: fit")
    broken = failure("sanity", "sanity error: the launcher exited with status 2")
    assert failed_on_noise_only(head + perf + noisy)
    assert not failed_on_noise_only(head + perf + broken)
    assert not failed_on_noise_only(head + failure("build", "build failed"))
    assert not failed_on_noise_only("no summary at all")


def test_readme_run_command_exits_0(readme_session):
    # The whole session is tried again (mpi_support.README_ATTEMPTS) only when every failure is
    # noise (mpi_support.failed_on_noise_only, tested below).
    run, _test = readme_commands()
    assert run == "ci/run-local.sh"
    results, proc = readme_session
    assert proc.returncode == 0, proc.stdout[-8000:] + proc.stderr[-3000:]
    summary = re.findall(r"Ran (\d+)/(\d+) test case", proc.stdout)
    assert summary and int(summary[-1][0]) >= 20, summary  # it really tested something
    # Node counts `local` cannot give are skipped for that reason, not failed on references:
    # the skips are folded out of the output and recorded with their reasons beside the report
    skips = [json.loads(line) for path in (results / "reports").glob("*.skips.jsonl")
             for line in path.read_text().splitlines()]
    matrix = [s["reason"] for s in skips if s["case"].startswith("NetbenchMatrix")]
    assert matrix and all("node(s)" in reason or "ranks" in reason for reason in matrix), matrix
    assert "no references for NetbenchMatrix" not in proc.stdout
    # A machine's own references are its results' (fabricsuite.data.machine): judged against them
    # where the results directory holds them (PASSED), else recorded (RECORDED), compared with
    # the references of another machine of its kind where the repository has them.
    from fabricsuite.data import machine
    from fabricsuite.data.references import kind_reference_file, reference_file

    env = dict(os.environ, FABRICSUITE_RESULTS=str(results))
    key = subprocess.run([sys.executable, "-m", "fabricsuite.data.machine"], env=env,
                         capture_output=True, text=True, check=True).stdout
    key = re.search(r"^key: (\S+)$", key, re.M).group(1)
    own = reference_file("local", machine.own_reference_dir() if "RFM_REFERENCE_PREFIX" in
                         os.environ else results / "reference", key)
    outcome = "PASSED" if own.is_file() else "RECORDED"
    assert "[     SKIP ]" not in proc.stdout and f"outcome: {outcome}" in proc.stdout
    kind = kind_reference_file(key)
    if outcome == "RECORDED" and kind is not None and kind.is_file():
        assert "compared with another machine of this kind" in proc.stdout, proc.stdout[-6000:]


# --- 2. a check judges only output its own job wrote ---------------------------------------------

def test_a_failed_job_never_passes_with_an_earlier_runs_figures(tmp_path):
    stage = tmp_path / "stage"
    common = ["-n", f"NetbenchPingPong%distance={local_distance()}", "-p", "openmpi",
              "--stage", str(stage), "--dont-restage", "--keep-stage-files",
              "-S", "require_reference=false", *QUICK]
    first = reframe(tmp_path / "results", *common)
    # The first run wrote its netbench.json into the stage (pass or fail on performance).
    written = list(stage.rglob("NetbenchPingPong_*/netbench.json"))
    assert written, first.stdout[-3000:]
    # The second job fails at once (netbench refuses an unknown option with status 2) in the
    # same, not restaged, stage where the first run's figures still lie.
    second = reframe(tmp_path / "results", *common,
                     "-S", "NetbenchPingPong.netbench_options=--no-such-option")
    assert second.returncode != 0, second.stdout[-3000:]
    failure = second.stdout.split("SUMMARY OF FAILURES")[-1]
    assert "Failing phase: sanity" in failure, failure
    assert "the launcher exited with status 2" in failure, failure


def test_every_session_keeps_its_own_output(tmp_path):
    results = tmp_path / "results"
    for _ in range(2):
        proc = reframe(results, "-n", f"NetbenchOverlap%distance={local_distance()}",
                       "-p", "openmpi", "-S", "require_reference=false",
                       "-S", "netbench_options=--repetitions,3")  # the files, not the figures
        assert "NetbenchOverlap" in proc.stdout, proc.stdout[-2000:]
        time.sleep(1.1)  # session directories are named to the second (and the process id)
    # A passed case's files are in output/<session>, a failed one's stay in stage/<session>
    # (a slow phase of the machine may fail either run): each session has its own directory.
    kept = sorted(results.glob("*/*/local/default/openmpi/NetbenchOverlap_*/netbench.json"))
    assert len(kept) == 2, sorted(str(p) for p in results.rglob("*.json"))
    sessions = {path.relative_to(results).parts[1] for path in kept}
    assert len(sessions) == 2, kept


# --- 6. nothing from the command line reaches a shell unquoted ----------------------------------

def test_netbench_options_are_quoted_in_the_job_script(tmp_path):
    marker = tmp_path / "injected"
    proc = reframe(tmp_path / "results", "-n", f"NetbenchPingPong%distance={local_distance()}",
                   "-p", "openmpi", "-S", f"netbench_options=--sizes=8$(touch {marker})")
    assert not marker.exists(), "a command in -S netbench_options ran"
    assert proc.returncode != 0  # netbench refused the odd size; the check failed, not passed
    scripts = list((tmp_path / "results").rglob("NetbenchPingPong_*/rfm_job.sh"))
    assert scripts and f"'--sizes=8$(touch {marker})'" in scripts[0].read_text()


# --- 5. lost coverage is never a pass -------------------------------------------------------------

def path_without(tmp_path: Path, *names: str) -> str:
    """A PATH with every program of this one except `names` (symbolic links in one directory)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for directory in reversed(os.environ["PATH"].split(os.pathsep)):
        if not os.path.isdir(directory):
            continue
        for entry in os.listdir(directory):
            target = os.path.join(directory, entry)
            if any(re.fullmatch(n, entry) for n in names) or not os.access(target, os.X_OK):
                continue
            link = bindir / entry
            if link.is_symlink():
                link.unlink()
            link.symlink_to(target)
    return str(bindir)


def test_a_machine_without_mpi_gets_one_line(tmp_path):
    env = dict(os.environ, PATH=path_without(tmp_path, r"mpi.*", r"ompi.*", r"orte.*",
                                             r"opal.*", r".*hydra.*"))
    proc = reframe(tmp_path / "results", env=env, action="-l")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no MPI found" in lines[0] and "ci/setup.sh" in lines[0], lines


def test_an_unknown_declared_mpi_gets_one_line(tmp_path):
    env = dict(os.environ, FABRICSUITE_LOCAL_MPIS="openmpi,intelmpi")
    proc = reframe(tmp_path / "results", env=env, action="-l")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "FABRICSUITE_LOCAL_MPIS" in proc.stderr


def test_a_missing_mpi_fails_its_environment_instead_of_vanishing(tmp_path):
    env = dict(os.environ, PATH=path_without(tmp_path, r"mpicc\.mpich", r"mpiexec\.hydra",
                                             r"mpirun\.mpich", r"mpiexec\.mpich"))
    proc = reframe(tmp_path / "results", "-n", f"NetbenchPingPong%distance={local_distance()}",
                   "-p", "mpich", env=env)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "mpicc.mpich and mpiexec.hydra not on PATH" in proc.stdout, proc.stdout[-3000:]
    assert "FABRICSUITE_LOCAL_MPIS=openmpi" in proc.stdout


def test_a_session_that_tests_nothing_fails(tmp_path):
    env = dict(os.environ, FABRICSUITE_RESULTS=str(tmp_path / "results"))
    for args, expected in [
        (["-p", "nosuchmpi"], "ReFrame selected no test case"),
        (["-n", "NetbenchPingPong%distance=other-node"], "no test case ran"),
    ]:
        proc = subprocess.run(["bash", "ci/run-local.sh", *args], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        # 2: nothing tested is no pass, and no regression either (the nightly's "broken")
        assert proc.returncode == 2, (args, proc.stdout[-2000:], proc.stderr[-2000:])
        assert expected in proc.stderr, (args, proc.stderr[-2000:])
