"""Topology distance classes from an hwloc XML topology (`lstopo --of xml`).

For a node type we pick one pair of processing units (PUs) per distance class the node has:

    same-core      two PUs of one core (SMT siblings)
    same-l2        two cores that share an L2 cache
    same-l3        two cores with their own L2s under one L3 cache
    same-package   one package, but another L3 cache or another NUMA node
    other-package  two packages (sockets)
    other-node     two nodes (needs no topology: one rank per node)

A class the node lacks is skipped with the reason, never faked. Pairs use OS indexes (what
`sched_getaffinity`, `taskset` and netbench's `cpus_bound` use); the first PU allowed for the job
is one end of every pair where possible, so that results of different classes share a core.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

#: classify's answer for two PUs whose relation the topology does not describe.
UNKNOWN = "unknown"
DISTANCES = ["same-core", "same-l2", "same-l3", "same-package", "other-package", "other-node"]
INTRA_NODE = DISTANCES[:-1]


class TopologyError(Exception):
    """The topology could not be read; the message names the file and the fix."""


@dataclass(frozen=True)
class PU:
    os_index: int
    # The enclosing object of each kind, named by its cpuset (unique among objects of one kind
    # in every hwloc XML format; gp_index is not always written), None when absent.
    core: str | None
    l2: str | None
    l3: str | None
    package: str | None
    numa: str             # the PU's nodeset (which NUMA node(s) it is local to)


@dataclass(frozen=True)
class Machine:
    """What a topology says of its machine, for a person and for the machine's fingerprint."""

    cpu_model: str        # the first package's CPUModel info, "" when the file has none
    packages: int         # Package objects (0 when the topology names none)
    cores: int            # Core objects (or PUs, in a topology without Core objects)
    pus: int
    memory_bytes: int     # the NUMA nodes' local memory, summed

    @property
    def threads_per_core(self) -> int:
        return max(1, round(self.pus / self.cores)) if self.cores else 1

    @property
    def cores_per_package(self) -> int:
        return max(1, round(self.cores / max(self.packages, 1)))


def _cpuset_bits(text: str | None) -> set[int]:
    """hwloc bitmap "0xffffffff,0x0000000f" (most significant word first) -> set of indexes."""
    if not text:
        return set()
    bits = set()
    # hwloc writes a zero word in the middle as nothing ("0x00000303,,0x03030303"): it still
    # counts as a word of 32 bits.
    words = text.split(",")
    for position, word in enumerate(reversed(words)):
        value = int(word, 16) if word else 0
        base = 32 * position
        index = 0
        while value:
            if value & 1:
                bits.add(base + index)
            value >>= 1
            index += 1
    return bits


def parse(xml_text: str, source: str = "<xml>") -> tuple[list[PU], set[int]]:
    """The PUs of a topology and the set of PUs the job may use (Machine's allowed cpuset)."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as err:
        raise TopologyError(f"{source}: not an hwloc XML topology ({err}); write one with "
                            "`lstopo --of xml FILE` on a compute node") from None
    machine = root.find("object")
    if root.tag != "topology" or machine is None:
        raise TopologyError(f"{source}: no <topology><object type=Machine>; write one with "
                            "`lstopo --of xml FILE` on a compute node")
    pus: list[PU] = []
    kinds = {"Core": "core", "L2Cache": "l2", "L3Cache": "l3", "Package": "package"}

    def walk(element: ET.Element, enclosing: dict[str, int | None]) -> None:
        kind = element.get("type")
        here = dict(enclosing)
        if kind in kinds:
            here[kinds[kind]] = element.get("cpuset") or element.get("gp_index") or "?"
        if kind == "PU":
            pus.append(PU(os_index=int(element.get("os_index", "-1")), core=here.get("core"),
                          l2=here.get("l2"), l3=here.get("l3"), package=here.get("package"),
                          numa=element.get("nodeset", "")))
        for child in element.findall("object"):
            walk(child, here)

    walk(machine, {})
    if not pus:
        raise TopologyError(f"{source}: the topology lists no PU")
    allowed = _cpuset_bits(machine.get("allowed_cpuset") or machine.get("cpuset"))
    return sorted(pus, key=lambda p: p.os_index), allowed or {p.os_index for p in pus}


def classify(a: PU, b: PU) -> str:
    """The distance class of two different PUs of one node."""
    if a.core is not None and a.core == b.core:
        return "same-core"
    if a.l2 is not None and a.l2 == b.l2:
        return "same-l2"
    if a.package is None or b.package is None:
        return UNKNOWN  # a topology without Package objects: above the caches nothing is known
    if a.package != b.package:
        return "other-package"
    if a.l3 is not None and a.l3 == b.l3 and a.numa == b.numa:
        return "same-l3"
    return "same-package"


def pairs(xml_text: str, source: str = "<xml>") -> dict[str, tuple[int, int]]:
    """One (os_index, os_index) pair per intra-node distance class the topology has."""
    pus, allowed = parse(xml_text, source)
    usable = [p for p in pus if p.os_index in allowed]
    found: dict[str, tuple[int, int]] = {}
    # The first usable PU is one end wherever possible; other pairs only fill missing classes.
    for a in usable:
        for b in usable:
            if b.os_index <= a.os_index:
                continue
            distance = classify(a, b)
            if distance != UNKNOWN:
                found.setdefault(distance, (a.os_index, b.os_index))
        if len(found) == len(INTRA_NODE):
            break
    return found


def missing_reason(distance: str, xml_text: str, source: str) -> str:
    """Why a topology has no pair for `distance` (for the skip message)."""
    pus, allowed = parse(xml_text, source)
    usable = [p for p in pus if p.os_index in allowed]
    cores = {p.core for p in usable}
    packages = {p.package for p in usable}
    if distance in ("same-package", "other-package") and None in packages:
        return (f"{source}: the topology names no package, so nothing above the caches is known "
                f"({len(usable)} usable PUs, {len(cores)} cores)")
    what = {
        "same-core": "no core with two usable PUs (no SMT)",
        "same-l2": "no L2 cache shared by two cores",
        "same-l3": "no L3 cache shared by two cores with their own L2",
        "same-package": "no package with two L3 caches or NUMA nodes",
        "other-package": f"{len(packages)} package(s)",
    }[distance]
    return f"{source}: {what} ({len(usable)} usable PUs, {len(cores)} cores)"


def machine(xml_text: str, source: str = "<xml>") -> Machine:
    """The machine a topology describes: CPU model, packages, cores, PUs and memory."""
    parse(xml_text, source)  # one message for a file that is no topology
    root = ET.fromstring(xml_text)
    counts = {"Package": 0, "Core": 0, "PU": 0}
    memory = 0
    model = ""
    for element in root.iter("object"):
        kind = element.get("type")
        if kind in counts:
            counts[kind] += 1
        if kind == "NUMANode" or (kind == "Machine" and element.get("local_memory")):
            memory += int(element.get("local_memory", "0") or 0)
        if kind == "Package" and not model:
            model = next((i.get("value", "") for i in element.findall("info")
                          if i.get("name") == "CPUModel"), "")
    return Machine(cpu_model=model.strip(), packages=counts["Package"],
                   cores=counts["Core"] or counts["PU"], pus=counts["PU"], memory_bytes=memory)


def _this_machine_counts() -> tuple[int, int | None]:
    """(online CPUs, packages) of the machine this runs on, from the kernel; packages None
    where /sys does not say."""
    cpus = os.cpu_count() or 0
    ids = set()
    for path in Path("/sys/devices/system/cpu").glob("cpu[0-9]*/topology/physical_package_id"):
        try:
            ids.add(path.read_text().strip())
        except OSError:
            continue
    return cpus, (len(ids) or None)


def check_cache_matches(xml_text: str, cache: Path) -> None:
    """Refuse a cached topology recorded on another machine (results directories travel and
    are shared): its PU or package count differs from this machine's."""
    recorded = machine(xml_text, str(cache))
    cpus, packages = _this_machine_counts()
    if recorded.pus != cpus or (packages is not None and recorded.packages not in (0, packages)):
        raise TopologyError(
            f"{cache} was recorded on another machine ({recorded.pus} PUs, {recorded.packages} "
            f"package(s); this one has {cpus} online CPUs, {packages or '?'} package(s)): remove "
            f"it and it is recorded again here")


def local_topology_xml(cache: Path) -> str:
    """This machine's topology, recorded once into `cache` with lstopo (hwloc); a cache that
    does not match this machine is refused (check_cache_matches)."""
    if cache.is_file():
        text = cache.read_text()
        check_cache_matches(text, cache)
        return text
    lstopo = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    if lstopo is None:
        raise TopologyError("lstopo not found; install hwloc (ci/setup.sh does)")
    proc = subprocess.run([lstopo, "--of", "xml", "-"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise TopologyError(f"lstopo --of xml failed: {proc.stderr.strip()}")
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(proc.stdout)
    tmp.replace(cache)
    return proc.stdout


#: hwloc's OS device kinds by osdev_type: hwloc 2.x numbers them (1 GPU, 2 NETWORK, 3
#: OPENFABRICS, 5 COPROC); hwloc 3.0 XML holds a bitmask (GPU 1<<2, COPROC 1<<3, NETWORK 1<<4,
#: OPENFABRICS 1<<5) (include/hwloc.h, include/hwloc/deprecated.h).
_OSDEV_V2 = {1: "GPU", 2: "NIC", 3: "NIC", 5: "GPU"}
_OSDEV_V3 = ((1 << 5, "NIC"), (1 << 4, "NIC"), (1 << 2, "GPU"), (1 << 3, "GPU"))


def devices_near(xml_text: str, source: str = "<xml>") -> list[str]:
    """Which NICs and GPUs of a node hang near which cores, as its hwloc topology (lstopo's
    XML, with I/O) says, one line per place: "package 0, NUMA 0: GPU nvml0, nvml1; NIC mlx5_0".
    A device is near the cores of its nearest ancestor that has CPUs (hwloc's
    get_non_io_ancestor_obj). [] where the topology has none (recorded without I/O)."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as err:
        raise TopologyError(f"{source}: not an hwloc XML topology ({err})") from None
    version3 = str(root.get("version", "")).startswith("3")
    near: dict[str, dict[str, list[str]]] = {}

    def kind_of(element: ET.Element) -> str | None:
        try:
            number = int(element.get("osdev_type", ""))
        except ValueError:
            return None
        if not version3:
            return _OSDEV_V2.get(number)
        return next((kind for bit, kind in _OSDEV_V3 if number & bit), None)

    def walk(element: ET.Element, place: str) -> None:
        if element.get("cpuset") is not None and element.get("type") != "PU":
            package = element.get("os_index") if element.get("type") == "Package" else None
            nodes = sorted(_cpuset_bits(element.get("nodeset")))
            numa = ("NUMA " + ",".join(map(str, nodes))) if nodes else ""
            if package is not None:
                place = ", ".join(p for p in (f"package {package}", numa) if p)
            elif element.get("type") in ("Group", "NUMANode", "Die") or not place:
                place = place or numa
        kind = kind_of(element) if element.get("type") == "OSDev" else None
        if kind and element.get("name"):
            near.setdefault(place or "the machine", {}).setdefault(kind, []).append(
                element.get("name"))
        for child in element.findall("object"):
            walk(child, place)

    walk(root, "")
    return [f"{place}: " + "; ".join(f"{kind} {', '.join(names)}"
                                     for kind, names in sorted(kinds.items()))
            for place, kinds in sorted(near.items())]
