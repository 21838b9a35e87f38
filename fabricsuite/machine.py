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
fabricsuite.machine` says what it was taken from. The MPI libraries are not part of the key: an
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
with `require_reference=false` and says so (`judged` false). Where the repository holds
references of its kind, the case is judged against them at most with a 2x bound
(KIND_SLOWDOWN: gross breakage, such as a run fallen onto TCP loopback, still fails on the
first day), and the outcome shows how far the machine lies from them. Once
SESSIONS_FOR_REFERENCES separate sessions hold healthy, quiet runs of a case (a run disturbed by
another process on its cores is set aside, fabricsuite.cases), `take_references` writes them
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

from . import REPO_ROOT, topology
from .commands import UsageError
from .store import readable_reports

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
    return Path(os.environ.get("FABRICSUITE_RESULTS", REPO_ROOT / "results"))


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


def own_reference_dir() -> Path:
    """Where the embedded default keeps this machine's own references: $RFM_REFERENCE_PREFIX
    where set, else <results>/reference (the machine's state, not the repository's)."""
    env = os.environ.get("RFM_REFERENCE_PREFIX")
    return Path(env) if env else results_dir() / "reference"


# --- the first sessions of a machine ------------------------------------------------------------

def _unjudged_cases(report: dict, key: str) -> list[dict]:
    """Healthy test cases of the embedded default on machine `key` that ran without
    references: the material of the machine's first references."""
    found = []
    for run in report.get("runs", []):
        for case in run.get("testcases", []):
            if (case.get("system") == LOCAL_SYSTEM and case.get("machine") == key
                    and case.get("judged") is False and case.get("result") == "pass"
                    and case.get("perfvalues")):
                found.append(case)
    return found


def recorded_sessions(reports_dir: Path, key: str) -> list[tuple[Path, dict]]:
    """(path, report) of the run reports under `reports_dir` with healthy unjudged runs of
    machine `key`, oldest first."""
    return [(path, report) for path, report in readable_reports(reports_dir)
            if _unjudged_cases(report, key)]


def take_references(report: dict, reports_dir: Path, reference_dir: Path) -> list[str]:
    """After a session of the embedded default: the lines that say what was recorded, and,
    once SESSIONS_FOR_REFERENCES sessions hold a case's runs, its references written into the
    machine's file. Nothing when the session judged every case."""
    keys = {c.get("machine") for run in report.get("runs", []) for c in run.get("testcases", [])
            if c.get("system") == LOCAL_SYSTEM and c.get("judged") is False}
    lines = []
    for key in sorted(k for k in keys if k):
        lines += _take_for_machine(str(key), report, reports_dir, reference_dir)
    return lines


def _take_for_machine(key: str, report: dict, reports_dir: Path,
                      reference_dir: Path) -> list[str]:
    from . import baseline

    descr = next((c.get("machine_descr") for run in report.get("runs", [])
                  for c in run.get("testcases", []) if c.get("machine") == key), key)
    sessions = recorded_sessions(reports_dir, key)
    path = reference_path(reference_dir, key)
    if len(sessions) < SESSIONS_FOR_REFERENCES:
        n = len(sessions)
        what = "some cases of this machine" if path.exists() else "this machine"
        return [
            f"no references for {what} yet ({descr}; key {key}): session {n} of "
            f"{SESSIONS_FOR_REFERENCES} recorded, judged against another machine's figures "
            f"at most for a 2x slowdown",
            f"  run the same command again {SESSIONS_FOR_REFERENCES - n} more time(s), best "
            f"hours apart (figures drift between sessions; bounds must hold that drift); the "
            f"references are then taken into {path} and later runs are judged against them",
        ]
    # Runs of unjudged cases only: a case already judged keeps its references.
    samples = []
    for _path, data in sessions:
        cases = _unjudged_cases(data, key)
        samples.append({"session_info": data.get("session_info", {}),
                        "runs": [{"testcases": cases}]})
    paths = [p for p, _report in sessions]
    collected = baseline.collect(samples, paths, LOCAL_SYSTEM)
    if path.exists():
        # Only what the file lacks: a reference once taken is retaken by a person, never here.
        existing = baseline.load_roundtrip(path)
        collected.samples = [s for s in collected.samples
                             if baseline.old_entry(existing, s) is None]
    usable, notes = baseline.usable(collected.samples, baseline.MIN_RUNS,
                                    SESSIONS_FOR_REFERENCES)
    if not usable:
        return [f"no references for some cases of this machine yet ({descr}): recorded, not "
                f"judged; they are taken once {SESSIONS_FOR_REFERENCES} sessions hold "
                f"healthy runs of them" + (f" ({notes[0]})" if notes else "")]
    # One run far off the others (a slow phase) would make a variable "recorded only" for good;
    # from baseline.OUTLIER_RUNS_FROM runs on, that one run is set aside, so wait for them.
    n = len(sessions)
    outliers = [note for s in usable if (note := baseline.one_run_away(s))]
    if outliers and n < baseline.OUTLIER_RUNS_FROM:
        return [
            f"no references for this machine yet ({descr}): session {n} recorded; one session "
            f"lies far off the others, so the references wait for "
            f"{baseline.OUTLIER_RUNS_FROM} sessions, where a single outlying run is set aside",
            f"  e.g. {outliers[0]}" + (f" (and {len(outliers) - 1} more)" if outliers[1:] else ""),
            f"  run the same command again {baseline.OUTLIER_RUNS_FROM - n} more time(s); "
            f"meanwhile, another machine's figures judge at most a 2x slowdown",
        ]
    mpis = sorted({str(c.get("mpi_library")) for s in samples for run in s["runs"]
                   for c in run["testcases"] if c.get("mpi_library")})
    _text, written, _notes = baseline.update_file(
        path, usable, paths, SESSIONS_FOR_REFERENCES,
        machine={"key": key, "description": descr, "mpi_libraries": mpis})
    span = _span_hours([report for _path, report in sessions])
    recorded = [s for s in usable if baseline.propose(s)[1]]
    lines = [
        f"references for this machine ({descr}) taken from {len(sessions)} sessions over "
        f"{span:.1f} h: {len(usable) - len(recorded)} variable(s) judged from the next run on, "
        f"{len(recorded)} recorded only (the machine moves them too much to catch a 2x "
        f"slowdown) -> {path}" + (f" (previous version kept as {written})" if written else ""),
    ]
    if span < 1.0:
        lines.append("  the sessions lie less than an hour apart: if later runs fail on a "
                     "machine that drifts, retake them from sessions hours apart (fabricsuite "
                     "baseline --system local REPORTS)")
    lines += [f"  note: {note}" for note in notes]
    return lines


def _span_hours(reports: list[dict]) -> float:
    starts = [r.get("session_info", {}).get("time_start_unix") for r in reports]
    starts = [float(t) for t in starts if isinstance(t, (int, float))]
    return (max(starts) - min(starts)) / 3600.0 if len(starts) > 1 else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fabricsuite.machine",
        description="Print this machine's fingerprint (the key of its own references as the "
                    "embedded default `local`), where those references are, and how many "
                    "recorded sessions it has.")
    parser.parse_args(argv)
    from .references import kind_reference_file
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
        n = len(recorded_sessions(results_dir() / "reports", key))
        print(f"references: none yet ({n} of {SESSIONS_FOR_REFERENCES} sessions recorded in "
              f"{results_dir() / 'reports'}); ci/run-local.sh records them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
