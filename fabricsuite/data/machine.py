"""Which machine the embedded default `local` runs on, and the references it keeps of itself.

`local` is whatever machine checks the suite out, so its references cannot be one file: a
laptop 3x faster than the development VM would pass a 2x regression against the VM's figures,
and a slower one would fail everything. Nor can they be those of the machine's *kind*: a second
2-core VM of the development kind (same CPU model, counts and memory) has memory 13 % slower and
failed 14 cases against the development VM's figures. So each machine keeps its own file, keyed
by the machine itself:

    amd-epyc-1x2x1-24gib.3f9a2c1e      the kind (CPU model, packages x cores per package x
                                       threads per core, memory), then the host identity

The kind comes from the machine's hwloc topology (the CPU model, the counts) and the kernel
(memory). The host identity is 8 hex digits of a hash of the platform's machine identity (the
firmware's DMI product UUID where this user can read it, else the OS installation's
/etc/machine-id) and the host name: VMs cloned from one image share a machine-id, stateless
cluster nodes booted from one image too, so the host name separates them; `python -m
fabricsuite.data.machine` says what it was taken from. The MPI libraries are not part of the key: an
MPI upgrade is exactly what the suite must judge against the machine's references (the file
records the libraries its references were taken with). `FABRICSUITE_MACHINE=<key>` stands in
for another machine (a test of a fresh machine, or two machines that must share one file).

**Where a machine's own references live.** They are the state of that machine, not of the
repository: `<results>/reference/local/<key>.yaml` ($FABRICSUITE_RESULTS, default results/,
which git ignores, so that a `git pull` never conflicts with them and a fresh clone never
inherits another machine's), or `$RFM_REFERENCE_PREFIX/local/<key>.yaml` where that is set.
The repository's `reference/local/<kind>.yaml` holds references taken on *another* machine of a
kind (the development VM's, shipped): a comparison, never this machine's references.

A machine without references of its own of a test case is measured and recorded: the case runs
with `require_reference=false` and says so (`judged` false). It is judged only against what
the hardware can do: its efficiencies (a figure over the limit of its own cores, measured in
the same job) against physics floors that every healthy machine keeps (fabricsuite.data.limits:
gross breakage, such as a run fallen onto TCP loopback or two ranks on one core, still fails on
the first day). Where the repository holds references of its kind, the outcome shows how far
the machine lies from them: information, never a verdict (two machines of one kind differ by
2x in memory-bound figures). Once
SESSIONS_FOR_REFERENCES separate sessions hold healthy, quiet runs of a case (a run disturbed by
another process on its cores is set aside, fabricsuite.data.cases), `take_references` writes them
into the machine's file with `fabricsuite baseline`'s rule (median; bound from the runs' own
noise, floor DEFAULT_FLOOR; a figure too noisy to catch a 2x slowdown is recorded only, with its
reason), and the next session judges against them. When a figure is too noisy only because of
one session (a slow phase of a shared machine), the references wait for
baseline.OUTLIER_RUNS_FROM sessions, where that one run is set aside, rather than record the
figure unjudged for good.

Automatic, because the two commands of the README must give a meaningful first hour on any
machine without a person writing references; the outcome says how far apart the sessions were,
since a machine's figures drift between sessions and sessions hours apart give bounds that hold.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from fabricsuite import REFERENCE_DIR
from fabricsuite.base.commandline import UsageError
from fabricsuite.base.commandline import results_dir as commands_results_dir
from fabricsuite.data import topology
from fabricsuite.data.cases import REGRESSION, Case, is_sample, runs_of, was_interrupted
from fabricsuite.data.cases import read as read_cases
from fabricsuite.data.limits import PHYSICS_ORIGIN
from fabricsuite.data.store import readable_reports, report_identity

#: Overrides the fingerprint's key (tests stand in for a new machine with it).
OVERRIDE = "FABRICSUITE_MACHINE"
#: Separate sessions with healthy runs before a case's references are taken automatically.
SESSIONS_FOR_REFERENCES = 3
#: The embedded default's system name.
LOCAL_SYSTEM = "local"
#: The longest key accepted (a file name, with room for its directory).
KEY_MAX = 120
_KEY = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
#: A key of a machine: its kind, then "." and 8 hex digits of its host identity.
_MACHINE_KEY = re.compile(r"^(?P<kind>.+)\.(?P<host>[0-9a-f]{8})$")
#: Where the host identity is read, first readable wins: the firmware's, then the OS install's.
IDENTITY_SOURCES = ("/sys/class/dmi/id/product_uuid", "/etc/machine-id",
                    "/var/lib/dbus/machine-id")


class MachineError(UsageError):
    """This machine cannot be told (a bad FABRICSUITE_MACHINE, no topology): one line."""


@dataclass(frozen=True)
class Fingerprint:
    cpu_model: str
    packages: int
    cores_per_package: int
    threads_per_core: int
    memory_gib: int

    @property
    def key(self) -> str:
        model = re.sub(r"\((r|tm)\)|\bcpu\b|@", " ", self.cpu_model.lower())
        model = re.sub(r"[^a-z0-9]+", "-", model).strip("-") or "unknown-cpu"
        return (f"{model}-{self.packages}x{self.cores_per_package}x{self.threads_per_core}"
                f"-{self.memory_gib}gib")

    @property
    def description(self) -> str:
        def n(count: int, what: str) -> str:
            return f"{count} {what}{'' if count == 1 else 's'}"
        return (f"{self.cpu_model or 'unknown CPU'}, {n(self.packages, 'package')} x "
                f"{n(self.cores_per_package, 'core')} x {n(self.threads_per_core, 'thread')}, "
                f"{self.memory_gib} GiB")


def fingerprint(xml_text: str, memory_bytes: int | None = None,
                source: str = "<xml>") -> Fingerprint:
    """The fingerprint of the machine a topology describes; `memory_bytes` (the kernel's
    figure) wins over the topology's NUMA memory, which a VM may under-report."""
    m = topology.machine(xml_text, source)
    memory = memory_bytes if memory_bytes else m.memory_bytes
    return Fingerprint(cpu_model=m.cpu_model or _cpuinfo_model(), packages=max(m.packages, 1),
                       cores_per_package=m.cores_per_package,
                       threads_per_core=m.threads_per_core,
                       memory_gib=max(1, round(memory / 2**30)) if memory else 0)


def _cpuinfo_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.split(":")[0].strip() in ("model name", "cpu model", "Processor"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


def results_dir() -> Path:
    """RESULTS as every command reads it (commands.results_dir: $FABRICSUITE_RESULTS, else
    results/ in the repository)."""
    return commands_results_dir(None)


def topology_cache(partition: str = "local:default") -> Path:
    """Where a partition's topology (local scheduler: recorded here by lstopo) is cached."""
    return results_dir() / "topology" / f"{partition.replace(':', '-')}.xml"


def host_identity(sources: tuple[str, ...] = IDENTITY_SOURCES,
                  hostname: str | None = None) -> tuple[str, str]:
    """(8 hex digits, what they were taken from) of this host: a hash of the first readable
    platform identity in `sources` and the host name (see the module's docstring)."""
    parts, said = [], []
    for source in sources:
        try:
            text = Path(source).read_text().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text:
            parts.append(text)
            said.append(source)
            break
    host = socket.gethostname() if hostname is None else hostname
    parts.append(host)
    said.append(f"host name {host!r}")
    digest = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:8]
    return digest, " and ".join(said)


def kind_of(key: str) -> str:
    """The kind part of a machine's key ("amd-epyc-1x2x1-24gib" of
    "amd-epyc-1x2x1-24gib.3f9a2c1e"); a key without a host identity is its own kind."""
    found = _MACHINE_KEY.fullmatch(key)
    return found.group("kind") if found else key


def valid_key(key: str, what: str) -> str:
    """`key` when it can name a machine's reference file, else MachineError naming `what`."""
    if not _KEY.fullmatch(key) or len(key) > KEY_MAX or ".." in key:
        raise MachineError(f"{what}={key!r}: a key is up to {KEY_MAX} lower-case letters, "
                           f"digits, '.', '_' and '-', e.g. amd-epyc-1x2x1-24gib.3f9a2c1e")
    return key


def this_machine() -> tuple[str, str]:
    """(key, description) of the machine this runs on, or of FABRICSUITE_MACHINE."""
    override = os.environ.get(OVERRIDE)
    if override is not None:
        return valid_key(override, OVERRIDE), f"declared by {OVERRIDE}"
    try:
        xml = topology.local_topology_xml(topology_cache())
        found = fingerprint(xml, _memory_bytes(), "lstopo")
    except topology.TopologyError as err:
        raise MachineError(str(err)) from None
    host, _source = host_identity()
    return f"{found.key}.{host}", found.description


def reference_path(directory: Path, key: str) -> Path:
    """The file of machine (or kind) `key` under a reference directory."""
    return directory / LOCAL_SYSTEM / f"{key}.yaml"


def reference_dir() -> Path:
    """Where reference files live: $RFM_REFERENCE_PREFIX if set, else the repo's reference/."""
    env = os.environ.get("RFM_REFERENCE_PREFIX")
    return Path(env) if env else REFERENCE_DIR


def kind_reference_file(machine: str, directory: Path | None = None) -> Path | None:
    """The repository's references of `machine`'s kind (taken on another machine of that kind,
    fabricsuite.data.machine), or None when the key names no kind apart from itself."""
    kind = kind_of(machine)
    return None if kind == machine else reference_path(directory or reference_dir(), kind)


def own_reference_dir() -> Path:
    """Where the embedded default keeps this machine's own references: $RFM_REFERENCE_PREFIX
    where set, else <results>/reference (the machine's state, not the repository's)."""
    env = os.environ.get("RFM_REFERENCE_PREFIX")
    return Path(env) if env else results_dir() / "reference"


# --- the first sessions of a machine ------------------------------------------------------------

def own_runs(report: dict, key: str) -> list[dict]:
    """Every run (each round: a case confirmed again ran twice) of the embedded default on
    machine `key` that ran without references of its own and passed: the material of the
    machine's first references, quiet or disturbed (cases.sample_problem sets the disturbed
    aside, counting them). None of an interrupted session (cases.was_interrupted: ended by a
    signal to any of its processes), its passed cases included."""
    if was_interrupted(report):
        return []
    return [case for cases in runs_of(report) for case in cases
            if case.get("system") == LOCAL_SYSTEM and case.get("machine") == key
            and case.get("judged") is False and case.get("result") == "pass"
            and case.get("perfvalues")]


def kind_regressions(report: dict) -> list[Case]:
    """The cases of a session confirmed beyond the physics floors of their efficiencies (what
    every healthy machine keeps, fabricsuite.data.limits: gross breakage such as TCP loopback or two
    ranks on one core): such a session records nothing of the machine, since what its other
    cases measured may be broken the same way. (Sessions stored before the efficiencies were
    judged against another machine of the kind at 1.9x, origin "kind:<kind>": the same.)"""
    return [case for case in read_cases(report) if case.health == REGRESSION
            and (case.last.get("reference_origin") == PHYSICS_ORIGIN
                 or str(case.last.get("reference_origin") or "").startswith("kind:"))]


def recorded_sessions(reports_dir: Path, key: str) -> list[tuple[Path, dict]]:
    """(path, report) of the run reports under `reports_dir` that recorded runs of machine
    `key` (own_runs), oldest first; a session with a kind regression records none."""
    found, seen = [], set()
    for path, report in readable_reports(reports_dir):
        identity = report_identity(report)
        if identity in seen:
            continue  # a copied report is not another session
        seen.add(identity)
        if own_runs(report, key) and not kind_regressions(report):
            found.append((path, report))
    return found


def quiet_sessions(sessions: list[tuple[Path, dict]], key: str) -> list[tuple[Path, dict]]:
    """Those of the recorded `sessions` with a quiet run of machine `key` (cases.is_sample): the
    ones that count toward its first references (a session disturbed in every run is set
    aside; the outcome says how many)."""
    return [(path, report) for path, report in sessions
            if any(is_sample(case) for case in own_runs(report, key))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fabricsuite.data.machine",
        description="Print this machine's fingerprint (the key of its own references as the "
                    "embedded default `local`), where those references are, and how many "
                    "recorded sessions it has.")
    parser.parse_args(argv)
    try:
        key, descr = this_machine()
    except MachineError as err:
        print(f"fabricsuite machine: {err}", file=sys.stderr)
        return 2
    path = reference_path(own_reference_dir(), key)
    print(f"machine: {descr}")
    print(f"key: {key}")
    if os.environ.get(OVERRIDE) is None:
        print(f"host identity: {host_identity()[1]}")
    kind = kind_reference_file(key)
    if kind is not None and kind.is_file():
        print(f"kind: {kind_of(key)}: references of another machine of this kind in {kind} "
              f"(a comparison, judged at most with a 2x bound until this machine has its own)")
    if path.is_file():
        print(f"references: {path}")
    else:
        recorded = recorded_sessions(results_dir() / "reports", key)
        n = len(quiet_sessions(recorded, key))
        aside = f", {len(recorded) - n} more set aside: disturbed" if len(recorded) > n else ""
        print(f"references: none yet ({n} of {SESSIONS_FOR_REFERENCES} sessions recorded in "
              f"{results_dir() / 'reports'}{aside}); ci/run-local.sh records them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
