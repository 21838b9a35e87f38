"""`fabricsuite init` (fabricsuite/commands/init.py): a Slurm cluster onboarded in one command.

Unit tests of what it reads from Slurm, and the acceptance on the emulated cluster (real Slurm in
network namespaces, ci/emucluster.sh): `fabricsuite init --system emu2` on its head node writes a
configuration whose partition, node count, scheduler and launcher match the hand-written
`emucluster` system, with the node topology recorded through srun; the point-to-point checks
then run through srun at other-node; a second init overwrites nothing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import emu_support
import pytest

from fabricsuite import REPO_ROOT
from fabricsuite.commands import init
from fabricsuite.commands.emucluster import QUICK
from fabricsuite.data import topology

SINFO = """\
emu*|2|2|2|1|1|(null)|fsemu[1-2]
gpu|16|64|2|16|2|gpu:a100:4(S:0-1)|gn[001-016]
gpu|4|128|2|32|2|gpu:h100:8|gx[01,05-07]
"""


def test_sinfo_lines_become_node_types():
    emu, gpu, big = init.parse_sinfo(SINFO)
    assert (emu.partition, emu.nodes, emu.cpus, emu.label, emu.gpus) == ("emu", 2, 2, "2s1c1t",
                                                                         0)
    assert (gpu.partition, gpu.nodes, gpu.label, gpu.gpus) == ("gpu", 16, "2s16c2t", 4)
    assert big.gpus == 8
    assert [init.first_node(t.nodelist) for t in (emu, gpu, big)] == ["fsemu1", "gn001", "gx01"]
    with pytest.raises(init.UsageError, match="not %R"):
        init.parse_sinfo("emu|2|2\n")
    with pytest.raises(init.UsageError, match="no partition"):
        init.parse_sinfo("\n")


@pytest.mark.parametrize("line, message", [
    # each became a configuration with exit 0 (issue 53): N/A read as 1, --cpus-per-task=0,
    # --partition=, and a NUL byte a traceback
    ("emu|2|N/A|2|1|1|(null)|fsemu[1-2]", "partition 'emu': CPUs 'N/A' is not a positive number"),
    ("emu|2|0|2|1|1|(null)|fsemu[1-2]", "partition 'emu': CPUs '0' is not a positive number"),
    ("emu|2|2|2|0|1|(null)|fsemu[1-2]", "cores per socket '0' is not a positive number"),
    ("emu|N/A|2|2|1|1|(null)|fsemu[1-2]", "node count 'N/A' is not a number"),
    ("|2|2|2|1|1|(null)|fsemu[1-2]", "an empty partition name"),
    ("*|2|2|2|1|1|(null)|fsemu[1-2]", "an empty partition name"),
    ("emu\x00x|2|2|2|1|1|(null)|fsemu[1-2]", "a control character"),
])
def test_a_sinfo_field_that_is_no_number_is_refused_naming_it(line, message):
    with pytest.raises(init.UsageError, match=re.escape(message)):
        init.parse_sinfo(line + "\n")


def test_a_partition_without_nodes_may_say_n_a():
    (empty, work) = init.parse_sinfo("empty|0|N/A|N/A|N/A|N/A|(null)|\n"
                                     "work|2|2|2|1|1|(null)|n[1-2]\n")
    assert (empty.nodes, empty.cpus, work.cpus) == (0, 0, 2)


def test_a_partition_of_several_node_types_is_judged_by_its_smallest_nodes():
    types = init.parse_sinfo(SINFO)
    mpis = [init.MpiEnv("openmpi", "mpicc", "4.1.4", "/usr", [["SLURM_MPI_TYPE", "pmix"]])]
    hwloc = {t.key: f"hwloc/x-{t.partition}-{t.label}.xml" for t in types}
    fragment = init.system_config("x", types, mpis, {"AccountingStorageType":
                                                     "accounting_storage/slurmdbd"}, hwloc)
    emu, gpu = fragment["systems"][0]["partitions"]
    assert emu["scheduler"] == "slurm" and emu["launcher"] == "srun"
    assert emu["access"] == ["--partition=emu"] and emu["extras"]["nodes"] == 2
    assert gpu["extras"]["nodes"] == 20 and gpu["processor"]["num_cpus"] == 64
    assert gpu["devices"] == [{"type": "gpu", "num_devices": 4}] and "gpu" in gpu["features"]
    assert "mixed: 2s16c2t, 2s32c2t" in gpu["descr"]


# --- the emulated cluster ------------------------------------------------------------------------

PREFIX = emu_support.prefix("fsi")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    state = tmp_path_factory.mktemp("emucluster")
    for emu in emu_support.cluster(state, PREFIX, emu_support.port_base(24000), nodes=2):
        yield emu, state


def _hand_written(state: Path) -> dict:
    """The hand-written emucluster system, as ReFrame reads it for this cluster's state."""
    os.environ["FABRICSUITE_EMU_DIR"] = str(state)
    try:
        spec = importlib.util.spec_from_file_location(
            "_emucluster_config", REPO_ROOT / "config" / "systems" / "emucluster.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        del os.environ["FABRICSUITE_EMU_DIR"]
    return module.site_configuration


@pytest.mark.integration
@pytest.mark.emucluster(prefix=PREFIX)
def test_init_onboards_the_emulated_cluster(cluster, tmp_path):
    emu, state = cluster
    config, references = tmp_path / "config", tmp_path / "reference"
    args = ["init", "--system", "emu2", "--config-dir", str(config),
            "--reference-dir", str(references)]
    proc = emu("exec", str(Path(sys.executable).parent / "fabricsuite"), *args, timeout=300)
    system_file = config / "systems" / "emu2.py"
    for path in (system_file, config / "spack" / "emu2.yaml", references / "emu2.yaml"):
        assert f"wrote {path}" in proc.stdout, proc.stdout
    assert "fabricsuite baseline --system emu2 --acceptance" in proc.stdout
    # the configuration against the hand-written emucluster system
    spec = importlib.util.spec_from_file_location("_emu2", system_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (generated,) = module.site_configuration["systems"][0]["partitions"]
    hand = next(p for p in _hand_written(state)["systems"][0]["partitions"]
                if p["name"] == "nodes")
    for key in ("scheduler", "launcher", "access", "environs", "features"):
        assert generated[key] == hand[key], key
    assert generated["extras"]["nodes"] == hand["extras"]["nodes"] == 2
    # the contract of the links, as both nodes report them (issue 50): a person confirms it
    assert generated["extras"]["fabric"] == {"links": {"ports": "net/eth0", "count": 1,
                                                       "rate_gbps": 1.0}}, proc.stdout
    assert "emu: links read on 2 node(s): 1 x 1 Gb/s per node (net/eth0)" in proc.stdout
    assert "differs:" not in proc.stdout
    assert {e["name"] for e in module.site_configuration["environments"]} == {"openmpi", "mpich"}
    # the topology recorded on a node: the nodes are namespaces of this machine, so it is this
    # machine's (Slurm reports the machine's CPUs; the hand-written partition says 1 because
    # each slurmd is pinned to one core)
    xml = Path(generated["extras"]["hwloc_xml"]).read_text()
    recorded = topology.machine(xml)
    assert recorded.pus == os.cpu_count() == generated["processor"]["num_cpus"]
    # the point-to-point checks run through srun at other-node under it
    results = tmp_path / "results"
    run = emu_support.run_reframe(
        emu, results, "-c", "checks/pt2pt.py", "-p", "openmpi",
        "-n", "NetbenchPingPong%distance=other-node",
        "-n", "NetbenchPingPongBandwidth%distance=other-node", "-S", "require_reference=false",
        *QUICK, system="emu2", timeout=600,
        extra_env={"FABRICSUITE_CONFIG_PATH": str(config), "RFM_REFERENCE_PREFIX": str(references)})
    assert run.returncode == 0, run.stdout[-4000:]
    assert re.search(r"Ran 3/3 test case", run.stdout), run.stdout[-3000:]
    outs = list((results / "output").rglob("netbench.json"))
    assert len(outs) == 2
    for out in outs:
        assert len({r["host"] for r in json.loads(out.read_text())["ranks"]}) == 2
        assert "\nsrun " in (out.parent / "rfm_job.sh").read_text()
    # a second init of the system is refused and keeps every file as it is (it wrote new
    # topology files beside the first description, issue 53)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()
              and results not in p.parents}
    again = emu("exec", str(Path(sys.executable).parent / "fabricsuite"), *args, timeout=300,
                check=False)
    assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
    assert "system 'emu2' exists" in again.stderr and "choose another --system" in again.stderr
    assert {p for p in tmp_path.rglob("*") if p.is_file() and results not in p.parents} == set(
        before)
    assert {p: p.read_bytes() for p in before} == before


def test_init_outside_slurm_is_one_line(tmp_path):
    env = dict(os.environ, PATH=str(tmp_path))  # no sinfo, scontrol, srun
    proc = subprocess.run([sys.executable, "-m", "fabricsuite.commands.cli", "init", "--system",
                           "x",
                           "--config-dir", str(tmp_path / "c")], capture_output=True, text=True,
                          env=env, cwd=REPO_ROOT)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "login node" in proc.stderr, proc.stderr
    assert not (tmp_path / "c").exists()
    local = subprocess.run([sys.executable, "-m", "fabricsuite.commands.cli", "init", "--system",
                            "local"], capture_output=True, text=True, cwd=REPO_ROOT)
    assert local.returncode == 2 and "embedded default" in local.stderr


# --- what Slurm prints is not trusted (issue 39): fake sinfo, scontrol, srun, mpicc on PATH -----

TOPOLOGY = Path(__file__).parent / "data" / "hwloc" / "vm-2core.xml"


def fake_slurm(tmp_path: Path, sinfo: str, lstopo: Path = TOPOLOGY) -> dict:
    """An environment whose PATH holds only sh scripts answering as Slurm and Open MPI's
    wrapper would: sinfo prints `sinfo`, srun --mpi=list says pmix, srun ... lstopo prints
    `lstopo`'s file."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir(parents=True)
    (tmp_path / "sinfo.txt").write_text(sinfo)
    scripts = {
        "sinfo": f"exec /bin/cat {tmp_path / 'sinfo.txt'}",
        "scontrol": "echo 'AccountingStorageType   = accounting_storage/none'",
        "srun": 'case "$1" in --mpi=list) echo "MPI plugin types are... pmix";; '
                f'*) exec /bin/cat {lstopo};; esac',
        "mpicc.openmpi": "echo 'mpicc: Open MPI 4.1.4 (Language: C)'",
    }
    for name, body in scripts.items():
        (bindir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bindir / name).chmod(0o755)
    return dict(os.environ, PATH=str(bindir))


def run_init(tmp_path: Path, env: dict, config: Path | None = None):
    config = config or tmp_path / "site"
    return subprocess.run([sys.executable, "-m", "fabricsuite.commands.cli", "init", "--system",
                           "x",
                           "--config-dir", str(config), "--reference-dir",
                           str(tmp_path / "refs")], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT)


def test_a_partition_name_never_writes_outside_the_config_dir(tmp_path):
    env = fake_slurm(tmp_path, "../../../../escape|2|2|2|1|1|(null)|n[1-2]\n")
    proc = run_init(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    written = {p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()}
    assert all(str(p).startswith(("site/", "refs/", "fakebin/", "sinfo.txt")) for p in written), (
        written)
    (topology_file,) = (tmp_path / "site" / "hwloc").glob("*.xml")
    assert topology_file.name == "x-p____________escape-2s1c1t.xml"
    system = (tmp_path / "site" / "systems" / "x.py").read_text()
    assert "'name': 'p____________escape'" in system
    assert "'--partition=../../../../escape'" in system  # Slurm's own name, to sbatch


def test_two_partitions_of_one_reframe_name_are_refused_in_one_line(tmp_path):
    env = fake_slurm(tmp_path, "a.b|2|2|2|1|1|(null)|n[1-2]\na_b|2|2|2|1|1|(null)|m[1-2]\n")
    proc = run_init(tmp_path, env)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "'a.b' and 'a_b' both become the ReFrame partition 'a_b'" in proc.stderr
    assert not (tmp_path / "site").exists()


def test_a_partition_without_nodes_is_skipped_with_its_reason(tmp_path):
    env = fake_slurm(tmp_path, "empty|0|0|0|0|0|(null)|\nwork|2|2|2|1|1|(null)|n[1-2]\n")
    proc = run_init(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    assert "skipped Slurm partition 'empty': sinfo lists no node in it" in proc.stdout
    system = (tmp_path / "site" / "systems" / "x.py").read_text()
    assert "'name': 'work'" in system and "empty" not in system
    only_empty = fake_slurm(tmp_path / "e", "empty|0|0|0|0|0|(null)|\n")
    proc = run_init(tmp_path / "e", only_empty)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr


def test_a_bad_config_dir_and_a_topology_without_pus_are_one_line(tmp_path):
    env = fake_slurm(tmp_path, "work|2|2|2|1|1|(null)|n[1-2]\n")
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    proc = run_init(tmp_path, env, config=not_a_dir)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "is not a directory" in proc.stderr and "Traceback" not in proc.stderr
    empty = tmp_path / "empty.xml"
    empty.write_text('<topology><object type="Machine"/></topology>')
    proc = run_init(tmp_path / "t", fake_slurm(tmp_path / "t", "work|2|2|2|1|1|(null)|n[1-2]\n",
                                                empty))
    # the progress line of the topology job, then the one line of the error
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 2 and "recording the topology" in lines[0]
    assert "lists no PU" in lines[1] and "Traceback" not in proc.stderr


def test_an_existing_system_is_refused_before_anything_is_written(tmp_path):
    """A second init of a system wrote new topology and Spack files beside the first
    description (issue 53): now one line, and every file as it was."""
    env = fake_slurm(tmp_path, "work|2|2|2|1|1|(null)|n[1-2]\n")
    assert run_init(tmp_path, env).returncode == 0
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    (tmp_path / "sinfo.txt").write_text("work|2|2|2|1|1|(null)|n[1-2]\nother|2|2|1|2|1|(null)|m1\n")
    before[tmp_path / "sinfo.txt"] = (tmp_path / "sinfo.txt").read_bytes()
    again = run_init(tmp_path, env)
    assert again.returncode == 2 and again.stderr.count("\n") == 1, again.stderr
    assert "system 'x' exists" in again.stderr, again.stderr
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before
