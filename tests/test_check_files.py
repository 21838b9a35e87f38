"""The check files a nightly's name selection needs (fabricsuite.base.check_files): the unit
tests read the real checks/ without importing it; the integration test lists, with ReFrame, what
each selection selects from the whole directory and from the narrowed files: the same cases."""

import re
import subprocess

import pytest
from mpi_support import REFRAME_COMMAND

from fabricsuite import REPO_ROOT
from fabricsuite.base.check_files import narrow, registered_tests

CHECKS = REPO_ROOT / "checks"


def _files(options: list[str]) -> list[str]:
    return [options[i + 1].rpartition("/")[2] for i, word in enumerate(options) if word == "-c"]


def test_each_check_file_registers_the_classes_it_decorates():
    assert registered_tests(CHECKS / "pt2pt.py") == {
        "NetbenchPingPong", "NetbenchPingPongBandwidth", "NetbenchBothway", "NetbenchFlood",
        "NetbenchOverlap", "NetbenchLogGP"}
    # the build is a fixture of the checks, not a registered test of any file
    assert not any("NetbenchBuild" in registered_tests(p) for p in CHECKS.glob("*.py"))


@pytest.mark.parametrize("pattern, files", [
    ("^NetbenchPingPong%distance=same-l3", ["pt2pt.py"]),
    ("^NetbenchLogGP", ["pt2pt.py"]),
    ("^NetbenchMatrix$", ["fabric_map.py"]),
    ("^NetbenchPingPong%|^NetbenchDense%", ["dense.py", "pt2pt.py"]),  # plain alternatives
    ("^NetbenchPingPong(Bandwidth)?%", ["pt2pt.py"]),  # a group inside the class name
    ("^Netbench(Dense|Beff)Validation$", ["beff.py", "dense.py"]),
    # the re-test of a suspect: its display name, escaped, anchored at both ends
    (f"^{re.escape('NetbenchPingPongBandwidth%distance=other-node')}$", ["pt2pt.py"]),
    # every class it names, in every file
    ("^(Netbench(Beff|Collectives|Dense)|OsuAllreduce)Validation%node_count=1",
     ["beff.py", "collectives.py", "dense.py", "osu.py"]),
])
def test_a_plain_selection_loads_only_the_files_of_its_classes(pattern, files):
    options = ["-c", str(CHECKS), "--exec-policy=serial", "-n", pattern, "-p", "openmpi"]
    narrowed = narrow(options, CHECKS)
    assert _files(narrowed) == files
    assert narrowed[-4:] == options[-4:]  # the rest as given, in order


@pytest.mark.parametrize("names", [
    [],  # no selection: every check
    ["-n", "Validation"],  # anywhere in the name: a parameter's value could hold it
    # not anchored: `1%placement` would select node_count=1 of every multi-rank check
    ["-n", "NetbenchPingPongBandwidth%distance=other-node"],
    ["-n", "1%placement=per-core"],
    ["-n", "^(Netbench|Osu)\\w*Validation%node_count=1"],  # an escape: not read here
    ["-n", "^Netbench.*%distance=same-l3"],  # a wildcard: it may match across the `%`
    ["-n", "Ping(Pong)?%"],  # a group not anchored at the start
    ["-n", "^NetbenchPingPong|Flood"],  # an alternative that is not plain
    ["-nNetbenchPingPong"],  # a form not read here
    ["-n", "/4f2a9c1e"],  # a hash
    ["-n", "NetbenchPingPong@2"],  # a variant
    ["-n", "^NOSUCHCHECK$"],  # selects nothing: ReFrame says so, as before
    ["-n", "^NetbenchPingPong$", "-n", "Overlap"],  # one pattern not plain is enough
])
def test_any_other_selection_keeps_the_whole_directory(names):
    options = ["-c", str(CHECKS), "--exec-policy=serial", *names]
    assert narrow(options, CHECKS) == options


def test_a_check_path_given_by_the_caller_is_kept():
    options = ["-c", str(CHECKS), "-c", str(CHECKS / "pt2pt.py"), "-n", "^NetbenchLogGP"]
    assert narrow(options, CHECKS) == options


def _listed(*options: str) -> list[str]:
    proc = subprocess.run([*REFRAME_COMMAND, "--system", "local", *options, "-l"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return sorted(re.findall(r"^- (\S.*?) /[0-9a-f]+$", proc.stdout, re.M))


@pytest.mark.integration
@pytest.mark.parametrize("pattern", [
    "^NetbenchPingPong%distance=same-l3",
    "^(Netbench(Beff|Collectives|Dense)|OsuAllreduce)Validation%node_count=1",
    "^NetbenchBeff",
    "^Netbench(PingPong|Dense)(Validation)?%node_count=1|^NetbenchLogGP%",
])
def test_reframe_selects_the_same_cases_from_the_narrowed_files(pattern):
    options = ["-c", str(CHECKS), "-n", pattern]
    narrowed = narrow(options, CHECKS)
    assert narrowed != options
    everything = _listed(*options)
    assert everything and _listed(*narrowed) == everything
