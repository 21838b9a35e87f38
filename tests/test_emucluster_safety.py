"""Safety of the emulated cluster's scripts (ci/emucluster.sh, its rsh stand-in nsagent, the
launcher wrappers in config/launchers/, config/systems/emucluster.py):

- nothing that reaches a shell is evaluated: a host name such as `$(touch MARKER)` given to
  nsagent, an MPI rank in bind-rank's environment, a state directory written into ReFrame's job
  script, the arguments the mpirun wrappers pass on;
- the settings are checked before use: a prefix such as `.*` (once used as a pattern, matching
  everyone's namespaces) is refused with one line naming the rule, and so are a bad port, subnet
  or state directory;
- the script touches only what it started, as recorded in its state directory: a namespace of
  another cluster (even with the same prefix) survives `up` and `down`, a second cluster with
  the same names fails to come up and leaves the first one running, and a recorded PID that now
  belongs to another process is not signalled;
- an `up` that fails (inside a function: an invalid --rate once Slurm runs, a name already taken
  in the middle of building the network) leaves no namespace and no daemon behind.

Real namespaces and a real Slurm, as in tests/test_emucluster.py, with names and state
directories of this test run only; each bring-up is 1 or 2 nodes and takes about a second.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import emu_support
import pytest

from fabricsuite import REPO_ROOT
from fabricsuite.commands.emucluster import EMU, EmuCluster

LAUNCHERS = REPO_ROOT / "config" / "launchers"
PREFIX = emu_support.prefix("fss")  # unique per test run: never touches another cluster
AGENT = f"{PREFIX}a"  # the cluster the nsagent tests share; each other test has its own letter
PORT = 30000 + os.getpid() % 5000 * 4
SUBNET = "10.213.0"  # the script's default


def needs_cluster(test):
    for mark in emu_support.marks(PREFIX, ("ip", "tc", "nsenter", "unshare", "slurmctld",
                                           "slurmd", "munged", "munge", "sinfo")):
        test = mark(test)
    return test


def namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.strip()}


def ours(prefix: str) -> set[str]:
    """The namespaces the script names with this prefix: PREFIXfab, PREFIXh, PREFIX<n>."""
    return {n for n in namespaces()
            if n.startswith(prefix) and re.fullmatch(r"fab|h|[0-9]+", n[len(prefix):])}


def processes_of(state: Path) -> list[int]:
    """PIDs whose command line or SLURM_CONF names the state directory (the daemons of it)."""
    found = []
    needle = str(state).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in cmdline or b"SLURM_CONF=" + needle in environ:
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Emu(EmuCluster):
    def __init__(self, state: Path, prefix: str = PREFIX, port: int = PORT):
        super().__init__(prefix, state, port, timeout=120)
        self.state = state


@pytest.fixture(scope="module", autouse=True)
def leave_nothing_behind(tmp_path_factory):
    """Whatever a test (or a regression in the script) leaves of this run's names and state
    directories is removed afterwards: namespaces named PREFIX..., processes of our state."""
    base = tmp_path_factory.getbasetemp()
    yield
    for pid in processes_of(base):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for name in namespaces():
        if name.startswith(PREFIX):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


@pytest.fixture()
def emu(tmp_path):
    cluster = Emu(tmp_path / "state", prefix=f"{PREFIX}e")
    yield cluster
    cluster("down")


# ------------------------------------------------------------------------------------------------
# settings
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("prefix", [".*", "fs.*", "a b", "x$(touch MARKER)", "-x", "fs;true",
                                    "a" * 13, "fs\nemu", "fs/x"])
def test_a_prefix_outside_the_rule_is_refused_with_one_line(tmp_path, prefix):
    # `status` and `rate` only: the script before this fix would have used `.*` as a pattern.
    for command in (["status"], ["rate", "1gbit"]):
        proc = Emu(tmp_path / "state", prefix=prefix)(*command)
        assert proc.returncode != 0, (prefix, command, proc.stdout)
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, lines
        assert "FABRICSUITE_EMU_PREFIX" in lines[0] and "1 to 12 of A-Z a-z 0-9 _ -" in lines[0]
        assert proc.stdout == ""
    assert not (REPO_ROOT / "MARKER").exists() and not (tmp_path / "MARKER").exists()


@pytest.mark.parametrize("variable, value", [
    ("FABRICSUITE_EMU_PORT", "PATH[$(touch MARKER)]"), ("FABRICSUITE_EMU_PORT", "80"),
    ("FABRICSUITE_EMU_SUBNET", "10.213.0.0"), ("FABRICSUITE_EMU_SUBNET", "10.213.$(touch MARKER)"),
    ("FABRICSUITE_EMU_DIR", "/tmp/emu $(touch MARKER)"), ("FABRICSUITE_EMU_DIR", "/tmp/a\nb"),
])
def test_other_settings_outside_their_rule_are_refused_with_one_line(tmp_path, variable, value):
    proc = Emu(tmp_path / "state")("status", env={variable: value})
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and variable in lines[0] and "refused" in lines[0], lines


@needs_cluster
def test_a_bad_port_never_reaches_arithmetic(tmp_path):
    """The port went into $((PORT + 1)), where bash evaluates the text of a variable (a set
    variable's subscript runs its command substitution)."""
    marker = tmp_path / "MARKER"
    emu = Emu(tmp_path / "state", prefix=f"{PREFIX}p")
    try:
        proc = emu("up", "--nodes", "1", env={"FABRICSUITE_EMU_PORT": f"PATH[$(touch {marker})]"})
    finally:
        emu("down")
    assert proc.returncode != 0
    assert not marker.exists()
    assert not ours(f"{PREFIX}p")


# ------------------------------------------------------------------------------------------------
# nsagent, the rsh stand-in
# ------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory):
    emu = Emu(tmp_path_factory.mktemp("agent") / "state", prefix=AGENT, port=PORT + 2)
    proc = emu("up", "--nodes", "2", "--rate", "1gbit")
    assert proc.returncode == 0, proc.stderr
    try:
        yield emu
    finally:
        emu("down")


@pytest.mark.parametrize("host", [
    f"{AGENT}1+x[$(touch {{marker}})]",       # arithmetic on the node number (bash subscript)
    f"{SUBNET}.x[$(touch {{marker}})]",       # the same through the address form
    f"{AGENT}1$(touch {{marker}})",
    f"{AGENT}1`touch {{marker}}`",
    f"{AGENT}1;touch {{marker}}",
    f"{AGENT}1 true; touch {{marker}};",
    "$(touch {marker})",
    f"{AGENT}3", f"{AGENT}0", f"{AGENT}01", f"{SUBNET}.254", "",
])
@needs_cluster
def test_nsagent_never_evaluates_its_host(two_nodes, tmp_path, host):
    marker = tmp_path / "MARKER"
    proc = subprocess.run([str(two_nodes.state / "nsagent"), host.format(marker=marker), "true"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 255, (proc.returncode, proc.stderr)
    assert "is not an emulated node" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not marker.exists()


@needs_cluster
def test_nsagent_runs_the_command_line_on_the_node_as_rsh_would(two_nodes):
    agent = str(two_nodes.state / "nsagent")
    # the command is one line for the node's shell (rsh semantics: mpirun quotes for it)
    proc = subprocess.run([agent, f"{AGENT}2", 'echo "$(hostname)" "a  b";', "echo next"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [f"{AGENT}2 a  b", "next"]
    proc = subprocess.run([agent, f"{SUBNET}.1", "hostname; ip -o -4 addr show dev eth0"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == f"{AGENT}1" and f"{SUBNET}.1/24" in proc.stdout


# ------------------------------------------------------------------------------------------------
# only what it started
# ------------------------------------------------------------------------------------------------

@needs_cluster
def test_a_foreign_namespace_with_the_prefix_survives_up_and_down(emu):
    prefix = f"{PREFIX}e"
    foreign = f"{prefix}9"
    subprocess.run(["ip", "netns", "add", foreign], check=True)
    sleeper = subprocess.Popen(["ip", "netns", "exec", foreign, "sleep", "120"])
    try:
        proc = emu("up", "--nodes", "1")
        assert proc.returncode == 0, proc.stderr
        assert ours(prefix) == {f"{prefix}fab", f"{prefix}h", f"{prefix}1", foreign}
        proc = emu("down")
        assert proc.returncode == 0, proc.stderr
        assert ours(prefix) == {foreign}
        assert sleeper.poll() is None, "a process in the foreign namespace was killed"
    finally:
        sleeper.kill()
        sleeper.wait()
        subprocess.run(["ip", "netns", "del", foreign])


@needs_cluster
def test_up_on_a_cluster_that_is_up_is_refused_and_ends_nothing(emu):
    """`up` twice with one state directory ran `down` first and killed what ran on the nodes
    (issue 27): the second `up` is refused with one line and the cluster keeps running."""
    proc = emu("up", "--nodes", "1")
    assert proc.returncode == 0, proc.stderr
    daemons = sorted(processes_of(emu.state))
    on_node = subprocess.Popen(["ip", "netns", "exec", f"{PREFIX}e1", "sleep", "120"])
    try:
        again = emu("up", "--nodes", "2")
        assert again.returncode != 0
        assert again.stderr.strip() == (
            f"emucluster: already up (1 nodes {PREFIX}e1..1, state in {emu.state}); run "
            f"ci/emucluster.sh down first"), again.stderr
        assert on_node.poll() is None, "up killed a process on a node of the running cluster"
        assert all(alive(pid) for pid in daemons)
        assert ours(f"{PREFIX}e") == {f"{PREFIX}efab", f"{PREFIX}eh", f"{PREFIX}e1"}
    finally:
        on_node.kill()
        on_node.wait()
    # after `down`, `up` works again
    assert emu("down").returncode == 0
    proc = emu("up", "--nodes", "1")
    assert proc.returncode == 0, proc.stderr


@needs_cluster
def test_a_second_cluster_with_the_same_names_fails_and_leaves_the_first_running(tmp_path):
    prefix = f"{PREFIX}s"
    first = Emu(tmp_path / "first", prefix=prefix, port=PORT + 4)
    second = Emu(tmp_path / "second", prefix=prefix, port=PORT + 6)
    daemons: list[int] = []
    try:
        proc = first("up", "--nodes", "1")
        assert proc.returncode == 0, proc.stderr
        daemons = sorted(processes_of(first.state))
        assert len(daemons) >= 3  # munged, slurmctld, slurmd
        proc = second("up", "--nodes", "1")
        assert proc.returncode != 0
        assert "File exists" in proc.stderr  # its first namespace is the first cluster's
        assert ours(prefix) == {f"{prefix}fab", f"{prefix}h", f"{prefix}1"}
        assert all(alive(pid) for pid in daemons)
        assert processes_of(second.state) == []
        sinfo = first("exec", "sinfo", "-h", "-o", "%D %t")
        assert sinfo.stdout.split() == ["1", "idle"], sinfo.stderr
        # and its `down` has nothing of the first to end either
        assert second("down").returncode == 0
        assert all(alive(pid) for pid in daemons)
        assert len(ours(prefix)) == 3
    finally:
        first("down")
    assert not ours(prefix)
    assert not any(alive(pid) for pid in daemons)


def start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


@needs_cluster
def test_a_recorded_pid_now_of_another_process_is_not_signalled(tmp_path):
    """The PID a daemon had may belong to another process by the time of `down`: the record holds
    the start time, and a process that started at another time is left alone."""
    emu = Emu(tmp_path / "state", prefix=f"{PREFIX}r")
    run = emu.state / "run"
    run.mkdir(parents=True)
    unrelated = subprocess.Popen(["sleep", "120"])
    recorded = subprocess.Popen(["sleep", "120"])
    try:
        pid, start = unrelated.pid, int(start_time(unrelated.pid))
        # the daemons' own PID files (what the script read before) and its records
        for name in ("slurmctld.pid", "munged.pid", f"slurmd-{PREFIX}r1.pid"):
            (run / name).write_text(f"{pid}\n")
        (run / "daemons").write_text(
            f"slurmctld {pid} {start - 7}\n"                              # started earlier
            f"munged {pid} not-a-time\n"
            f"slurmd-{PREFIX}r1 {recorded.pid} {start_time(recorded.pid)}\n")  # really ours
        (emu.state / "nodes").write_text("1\n")
        proc = emu("down")
        assert proc.returncode == 0, proc.stderr
        assert unrelated.poll() is None, "an unrelated process with a recorded PID was killed"
        assert f"PID {pid} is no longer the slurmctld that up started: left alone" in proc.stderr
        # the one whose start time matches is ended: the records do work
        assert recorded.wait(timeout=10) == -signal.SIGTERM
    finally:
        for process in (unrelated, recorded):
            process.kill()
            process.wait()


# ------------------------------------------------------------------------------------------------
# a failed up
# ------------------------------------------------------------------------------------------------

@needs_cluster
def test_an_up_failing_once_slurm_runs_leaves_nothing_behind(emu):
    # set_rate (a function) fails on the rate, after the namespaces and every daemon are up
    proc = emu("up", "--nodes", "2", "--rate", "fastest")
    assert proc.returncode != 0
    assert "Slurm up" in proc.stderr and "bring-up failed" in proc.stderr, proc.stderr
    assert not ours(f"{PREFIX}e")
    assert processes_of(emu.state) == []


@needs_cluster
@pytest.mark.parametrize("args, message", [
    (["up", "--nodes", "2", "--leaves", "3"], "--leaves 3: use 1 to 16, at most one per node"),
    (["up", "--nodes", "2", "--leaves", "1;true"], "--leaves 1\\;true: use 1 to 16"),
    (["link", "1", "down"], "not up; run: ci/emucluster.sh up"),
    (["rate", "1gbit", "--link", "uplink1"], "not up; run: ci/emucluster.sh up"),
])
def test_a_bad_topology_or_link_is_refused_with_one_line(emu, args, message):
    proc = emu(*args)
    assert proc.returncode != 0
    assert len(proc.stderr.splitlines()) == 1 and message in proc.stderr, proc.stderr
    assert not ours(f"{PREFIX}e")


@needs_cluster
def test_an_up_of_two_leaves_failing_on_its_uplinks_leaves_nothing_behind(emu):
    # the uplinks are shaped last, after the namespaces, the bridges and every daemon
    proc = emu("up", "--nodes", "2", "--leaves", "2", "--uplink-rate", "fastest")
    assert proc.returncode != 0
    assert "tc tbf rate fastest failed" in proc.stderr and "bring-up failed" in proc.stderr, (
        proc.stderr)
    assert not ours(f"{PREFIX}e")
    assert processes_of(emu.state) == []


@needs_cluster
def test_an_up_failing_while_building_the_network_leaves_nothing_and_no_one_else_is_touched(
        emu):
    # A link named as node 2's veth already exists (someone else's): `ip link add` fails under
    # set -e inside add_namespace, with the bridge and head namespace and node 1 made already.
    foreign_link = f"{PREFIX}ev2"
    subprocess.run(["ip", "link", "add", foreign_link, "type", "bridge"], check=True)
    try:
        proc = emu("up", "--nodes", "3")
        assert proc.returncode != 0
        assert "bring-up failed" in proc.stderr, proc.stderr
        assert not ours(f"{PREFIX}e")
        assert processes_of(emu.state) == []
        links = subprocess.run(["ip", "-o", "link", "show", foreign_link], capture_output=True,
                               text=True)
        assert links.returncode == 0 and foreign_link in links.stdout
    finally:
        subprocess.run(["ip", "link", "del", foreign_link])


@needs_cluster
def test_an_interrupted_up_leaves_nothing_behind(emu, tmp_path):
    # an `sinfo` that never reports the nodes idle holds `up` in its wait once every daemon runs
    fake = tmp_path / "bin" / "sinfo"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nsleep 0.1\necho 0\n")
    fake.chmod(0o755)
    env = dict(emu.env, PATH=f"{fake.parent}:{os.environ['PATH']}")
    process = subprocess.Popen([EMU, "up", "--nodes", "2"], env=env, cwd=REPO_ROOT,
                               stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while len(processes_of(emu.state)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)  # munged, slurmctld, 2 slurmd
    assert len(ours(f"{PREFIX}e")) == 4
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode != 0, err
    assert "bring-up failed" in err
    assert not ours(f"{PREFIX}e")
    assert processes_of(emu.state) == []


# ------------------------------------------------------------------------------------------------
# launcher wrappers and the system configuration
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_bind_rank_never_evaluates_its_rank(tmp_path, shell):
    """Under bash (sh on some systems) $((rank + 1)) evaluated the rank's text."""
    marker = tmp_path / "MARKER"
    for variable in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"):
        env = {k: v for k, v in os.environ.items()
               if k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")}
        env[variable] = f"x[$(touch {marker})]"
        proc = subprocess.run([shell, str(LAUNCHERS / "bind-rank"), "0,1", "true"], env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 2 and "not a number" in proc.stderr, proc.stderr
        assert not marker.exists()
    # a CPU that is not a number is refused too; a good one binds and passes the arguments on
    env = dict(os.environ, OMPI_COMM_WORLD_RANK="0")
    proc = subprocess.run([shell, str(LAUNCHERS / "bind-rank"), "0-1,1", "true"], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "not a CPU number" in proc.stderr
    args = ["$(touch MARKER)", "a  b", "*", "-n", "\\n", ""]
    proc = subprocess.run([shell, str(LAUNCHERS / "bind-rank"), "0", sys.executable, "-c",
                           "import sys; print(repr(sys.argv[1:]))", *args], env=env,
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == repr(args)
    assert not (tmp_path / "MARKER").exists()


@pytest.mark.parametrize("mpi, program", [("openmpi", "mpirun.openmpi"),
                                          ("mpich", "mpiexec.hydra")])
def test_mpirun_wrappers_pass_their_arguments_through_untouched(tmp_path, mpi, program):
    fake = tmp_path / "bin" / program
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport sys\nprint(repr(sys.argv[1:]))\n")
    fake.chmod(0o755)
    args = ["-np", "2", "$(touch MARKER)", "`touch MARKER`", "a  b", "*", "x;touch MARKER", ""]
    env = dict(os.environ, PATH=f"{fake.parent}:{os.environ['PATH']}",
               FABRICSUITE_MPICH_BINDING="$(touch MARKER)")
    proc = subprocess.run([str(LAUNCHERS / mpi / "mpirun"), *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    expected = (["-bind-to", "$(touch MARKER)"] if mpi == "mpich" else []) + args
    assert proc.stdout.strip() == repr(expected)
    assert not (tmp_path / "MARKER").exists()


def test_the_system_config_quotes_its_paths_for_the_job_script(tmp_path):
    """ReFrame writes env_vars into the job script as `export K=V`, verbatim: a state directory
    with shell syntax in its name must arrive as the path, not run."""
    marker = tmp_path / "MARKER"
    state = tmp_path / f"emu $(touch {marker}) `touch {marker}`"
    code = (
        "import importlib.util, json, sys\n"
        "spec = importlib.util.spec_from_file_location('emu', sys.argv[1])\n"
        "module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n"
        "config = module.site_configuration\n"
        "env = [kv for p in config['systems'][0]['partitions'] for kv in p.get('env_vars', [])]\n"
        "env += [kv for e in config['environments'] for kv in e['env_vars']]\n"
        "print(json.dumps(env))\n")
    loaded = subprocess.run(
        [sys.executable, "-c", code, str(REPO_ROOT / "config" / "systems" / "emucluster.py")],
        env=dict(os.environ, FABRICSUITE_EMU_DIR=str(state)), capture_output=True, text=True)
    assert loaded.returncode == 0, loaded.stderr
    env_vars = json.loads(loaded.stdout)
    script = "".join(f"export {k}={v}\n" for k, v in env_vars)  # as ReFrame's runtime writes
    script += 'printf "%s\\n" "$OMPI_MCA_plm_rsh_agent" "$HYDRA_HOST_FILE" "$PATH"\n'
    run = subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    agent, hostfile, path = run.stdout.splitlines()
    assert agent == str(state / "nsagent") and hostfile == str(state / "hostfile.hydra")
    assert path.split(":")[0] == str(LAUNCHERS / "mpich")
    assert not marker.exists()
