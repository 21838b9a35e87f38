"""What the method tests share: both MPIs, a netbench built with each, and a ReFrame session
that exercises checks without judging their figures against references.

Imported by tests/conftest.py (the `netbench` fixture) and by the tests themselves.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fabricsuite import REPO_ROOT, SOURCE_DIR
from fabricsuite.data.netbench_result import parse_json

#: MPI name -> (compiler wrapper, launcher of 2 ranks bound to cores)
MPIS = {
    "openmpi": ("mpicc.openmpi", ["mpirun.openmpi", "-np", "2", "--bind-to", "core"]),
    "mpich": ("mpicc.mpich", ["mpiexec.hydra", "-np", "2", "-bind-to", "core"]),
}
#: Open MPI refuses root without these (the CI machine runs as root).
ROOT_ALLOWED = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
MPI_ENV = dict(os.environ, **ROOT_ALLOWED)
#: The mark of a test that runs Debian's Open MPI (a ReFrame session on `local`, a real job).
NEEDS_OPEN_MPI = pytest.mark.skipif(shutil.which("mpicc.openmpi") is None,
                                    reason="needs Debian's Open MPI (ci/setup.sh installs it)")
REFRAME = str(Path(sys.executable).parent / "reframe")
#: ReFrame with the project's configuration: the start of every test's ReFrame command, here and
#: on the emulated cluster (emu_support.run_reframe).
REFRAME_COMMAND = (REFRAME, "-C", "config/settings.py")


#: The development VM's key (fabricsuite.data.machine): tests of its own recorded data name it.
VM_KEY = "amd-epyc-1x2x1-24gib"


def local_pairs() -> dict[str, tuple[int, int]]:
    """The intra-node distance classes of the machine the tests run on (its hwloc topology),
    each with the pair of CPUs the checks bind to."""
    from fabricsuite.data import topology

    lstopo = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    assert lstopo, "lstopo not installed (ci/setup.sh installs hwloc)"
    proc = subprocess.run([lstopo, "--of", "xml", "-"], capture_output=True, text=True,
                          check=True)
    return topology.pairs(proc.stdout, "lstopo")


def local_distance() -> str:
    """The distance class the live tests run their pair checks at: the first one this machine
    has (same-l3 on the 2-core development VM, same-core on a machine with SMT)."""
    pairs = local_pairs()
    assert pairs, "this machine has no two CPUs to place a pair on"
    return next(d for d in ("same-core", "same-l2", "same-l3", "same-package", "other-package")
                if d in pairs)


def missing_distance_reasons() -> tuple[str, ...]:
    """The skip reasons of the distance classes this machine lacks (other-node: one node)."""
    from fabricsuite.data import topology

    pairs = local_pairs()
    return (*(f"no {d} pair" for d in topology.INTRA_NODE if d not in pairs),
            "other-node needs 2")


def local_reference_file(directory: Path) -> Path:
    """The embedded default's reference file of this machine under a reference directory
    (RFM_REFERENCE_PREFIX), its folder created."""
    from fabricsuite.data.references import reference_file

    path = reference_file("local", directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def write_local_references(directory: Path, body: str) -> Path:
    """This machine's reference file under `directory` holding the YAML `body`, and the owner
    every machine's file names (`_machine.key`, as `fabricsuite baseline` writes it)."""
    from fabricsuite.data.machine import this_machine

    path = local_reference_file(directory)
    path.write_text(body + f"_machine: {{key: {this_machine()[0]}}}\n")
    return path


def vm_reference_file() -> Path:
    """The development VM's own committed references."""
    from fabricsuite import REFERENCE_DIR
    from fabricsuite.data.machine import reference_path

    return reference_path(REFERENCE_DIR, VM_KEY)


def run(cmd: list[str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, env=MPI_ENV, timeout=timeout)


def run_result(cmd: list[str], out: Path, timeout: float = 300):
    """Runs a netbench command line with ``--json-file out``; it must exit 0. Returns the process
    and the parsed result file."""
    proc = run([*cmd, "--json-file", str(out)], timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-1000:] + proc.stderr[-3000:]
    return proc, parse_json(out.read_text())


def help_missing(program: str, method: str, words: list[str]) -> list[str]:
    """What of `words` `netbench METHOD --help` does not say (white space folded)."""
    proc = run([program, method, "--help"])
    assert proc.returncode == 0, proc.stderr
    text = re.sub(r"\s+", " ", proc.stdout)
    return [word for word in words if word not in text]


def usage_error_line(program: str, args: list[str]) -> str:
    """The one line a refused command line gives (refused before MPI_Init, as under a launcher):
    status 2, nothing on stdout, one line on stderr that starts with "netbench: "."""
    proc = run([program, *args])
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and not proc.stdout, proc.stderr
    assert lines[0].startswith("netbench: "), lines
    return lines[0]


def build_netbench(directory: Path, mpi: str, source: Path = SOURCE_DIR,
                   targets: tuple[str, ...] = ("netbench",),
                   mutant: tuple[str, str, str] | None = None) -> Path:
    """netbench built with `mpi` from a copy of `source` (src/: the tests never touch the repo's
    build), with the other make `targets` asked for (libnbanalysis.so) beside it; `mutant`
    (file, original text, replacement) changes the copy first. The one netbench builder of the
    tests: -Werror is part of the build, and its output must hold no warning either."""
    build = directory / "src"
    shutil.copytree(source, build, ignore=shutil.ignore_patterns("netbench", "*.so", "*.o", ".obj"))
    if mutant is not None:
        name, original, mutated = mutant
        text = (build / name).read_text()
        assert original in text, f"{name} changed: update the mutant"
        (build / name).write_text(text.replace(original, mutated, 1))
    proc = run(["make", "-C", str(build), f"-j{os.cpu_count() or 1}", *targets,
                f"MPICC={MPIS[mpi][0]}"], timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning" not in proc.stderr.lower(), proc.stderr
    return build / "netbench"


@contextlib.contextmanager
def full_file_system(directory: Path, size: str = "256k", keep: tuple[str, ...] = ()):
    """`directory` as a small tmpfs filled to the last byte (root needed; skipped with its reason
    otherwise), with the empty directories `keep` made first; unmounted after."""
    directory.mkdir(parents=True, exist_ok=True)
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                            str(directory)], capture_output=True, text=True)
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill ({mount.stderr.strip()}); needs root")
    try:
        for name in keep:
            (directory / name).mkdir()
        with contextlib.suppress(OSError), open(directory / "filler", "wb") as filler:
            filler.write(b"\0" * (1 << 20))  # more than it holds: ENOSPC
        yield directory
    finally:
        subprocess.run(["umount", "-l", str(directory)])


def reframe(*args: str, results: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 600) -> subprocess.CompletedProcess:
    """The tests' one way to run ReFrame on this machine: the project's configuration, from the
    repository root, MPI allowed as root (ROOT_ALLOWED), `env` (default: this environment) with
    FABRICSUITE_RESULTS=`results` where given. (On the emulated cluster: emu_support.)"""
    full = {**(os.environ if env is None else env), **ROOT_ALLOWED}
    if results is not None:
        full["FABRICSUITE_RESULTS"] = str(results)
    return subprocess.run([*REFRAME_COMMAND, *args], cwd=REPO_ROOT,
                          env=full, capture_output=True, text=True, timeout=timeout)


def local_session(results: Path, check_files: list[str], *args: str,
                  reference_dir: Path | None = None, env: dict[str, str] | None = None,
                  action: str = "-r", timeout: float = 900) -> subprocess.CompletedProcess:
    """`check_files` on `local`, serially (`action`: -r runs them, -l lists them), results under
    `results`, references from `reference_dir` where given (RFM_REFERENCE_PREFIX)."""
    full = dict(os.environ if env is None else env)
    if reference_dir is not None:
        full["RFM_REFERENCE_PREFIX"] = str(reference_dir)
    checks = [word for path in check_files for word in ("-c", path)]
    return reframe(*checks, "--system", "local", "--exec-policy=serial", action, *args,
                   results=results, env=full, timeout=timeout)


def mechanics_session(results: Path, check_file: str, *args: str,
                      timeout: float = 600) -> subprocess.CompletedProcess:
    """A real ReFrame session of `check_file` on `local` with Open MPI, judged against an empty
    reference directory: build, run, sanity and the performance figures with their units are
    exercised, the verdict on values is not (the VM's slow phases make a 2-3x latency for
    minutes at a time; tests/test_verdicts.py and tests/test_trust.py judge against
    references, with confirmation and retries). Checks with built-in references (the
    self-consistency rules) are still judged."""
    no_references = results / "no-references"
    no_references.mkdir(parents=True, exist_ok=True)
    return reframe("-c", check_file, "--system", "local", "--exec-policy=serial", "-r", "-p",
                   "openmpi", "-S", "require_reference=false", *args, results=results,
                   env=dict(os.environ, RFM_REFERENCE_PREFIX=str(no_references)),
                   timeout=timeout)


def failed_on_noise_only(stdout: str) -> bool:
    """Whether every failure of a ReFrame session is noise, worth another session after a
    pause: a performance failure, or a sanity failure on a figure netbench itself flagged as
    unreliable (a fit too scattered to trust). Never a build, setup or other sanity failure."""
    blocks = stdout.split("SUMMARY OF FAILURES")[-1].split("FAILURE INFO for ")[1:]
    noise = [re.search(r"Failing phase: performance", block)
             or (re.search(r"Failing phase: sanity", block) and "as unreliable" in block)
             for block in blocks]
    return bool(blocks) and all(noise)


def readme_commands() -> tuple[str, str]:
    """The two commands of the README's "Two commands" block: (run, test)."""
    readme = (REPO_ROOT / "README.md").read_text()
    block = readme.split("## Two commands", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]
    assert len(commands) == 2, block
    return commands[0], commands[1]


#: Whole sessions of the README's run command tried before giving up, and the pause between
#: them. The machine's references describe it in both of its states (the development VM's
#: slow phases: shared-memory latency 2-3x for seconds to minutes; a figure they move by 2x is
#: recorded, not judged), so no session waits for a state; a second session is only for a
#: failure on noise alone (failed_on_noise_only), which must stay rare.
README_ATTEMPTS, README_PAUSE_S = 2, 20


def readme_session(results_root: Path) -> tuple[Path, subprocess.CompletedProcess]:
    """The README's run command exactly as written, each attempt with its own results directory
    under `results_root`: (results directory, process) of the last attempt."""
    run_command, _test = readme_commands()
    for attempt in range(README_ATTEMPTS):
        results = results_root / f"results-{attempt}"
        env = dict(os.environ, FABRICSUITE_RESULTS=str(results))
        start = time.monotonic()
        proc = subprocess.run(["bash", "-c", run_command], cwd=REPO_ROOT, env=env,
                              capture_output=True, text=True, timeout=1200)
        print(f"attempt {attempt + 1}: exit {proc.returncode} after "
              f"{time.monotonic() - start:.0f} s")
        if proc.returncode == 0 or not failed_on_noise_only(proc.stdout):
            break
        print(f"attempt {attempt + 1}: failures on noise only, trying again in "
              f"{README_PAUSE_S} s")
        time.sleep(README_PAUSE_S)
    return results, proc


def session_outcomes(report_path: Path) -> dict[tuple[str, str, str], str]:
    """{(check, parameters, environ): outcome} of every case a session ran (not skipped), as
    the session's one verdict judges it (fabricsuite.data.session_verdict): "pass" (passed, or
    recorded without references of the machine), "transient" (outside in no more than half of
    its rounds, which the session counts as within its references), or ReFrame's result
    ("fail", ...) for anything else."""
    from fabricsuite.data import cases
    from fabricsuite.data.session_verdict import verdicts

    report = json.loads(report_path.read_text())
    outcomes = {}
    for case, verdict in verdicts(report):
        if case.get("fixture"):
            continue
        check, _, parameters = case["name"].partition(" ")
        outcome = ("pass" if verdict in (cases.PASSED, cases.RECORDED) and case["result"] == "pass"
                   else "transient" if verdict == cases.TRANSIENT else case["result"])
        outcomes[(check, parameters, case["environ"])] = outcome
    return outcomes


def perflog_records(results: Path, check: str, variables: list[str]) -> list[str]:
    """The records of `check`'s perflog on local:default, after asserting that its header
    holds every one of `variables`."""
    perflog = results / "perflogs" / "local" / "default" / f"{check}.log"
    assert perflog.is_file(), sorted(str(p) for p in (results / "perflogs").rglob("*"))
    header, *records = perflog.read_text().splitlines()
    missing = [v for v in variables if f"{v}_value" not in header]
    assert not missing, (missing, header)
    return records


def assert_each_check_ran_once_per_mpi(results: Path, checks: tuple[str, ...], parameters: str,
                                       skip_reasons: tuple[str, ...]) -> None:
    """In the session under `results` (one run report): each of `checks` ran with `parameters`
    once per MPI of the session (Open MPI among them), and passed or was a transient its
    confirmation dispelled (session_outcomes); its other cases were skipped, with each of
    `skip_reasons` among their reasons (the skips file beside the report)."""
    (report_path,) = (results / "reports").glob("run-report-*.json")
    outcomes = session_outcomes(report_path)
    mpis = sorted({environ for _check, _parameters, environ in outcomes})
    assert "openmpi" in mpis, mpis
    skipped = [json.loads(line) for line in
               report_path.with_suffix(".skips.jsonl").read_text().splitlines()]
    for check in checks:
        ran = sorted((environ, case_parameters, outcome)
                     for (name, case_parameters, environ), outcome in outcomes.items()
                     if name == check)
        assert [(environ, case_parameters) for environ, case_parameters, _ in ran] == [
            (mpi, parameters) for mpi in mpis], (check, ran)
        assert all(outcome in ("pass", "transient") for *_, outcome in ran), (check, ran)
        reasons = " | ".join(s["reason"] for s in skipped
                             if s["case"].split(" ", 1)[0] == check)
        for reason in skip_reasons:
            assert reason in reasons, (check, reason, reasons)
