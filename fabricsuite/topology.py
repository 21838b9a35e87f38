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

import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

DISTANCES = ["same-core", "same-l2", "same-l3", "same-package", "other-package", "other-node"]
INTRA_NODE = DISTANCES[:-1]


class TopologyError(Exception):
    """The topology could not be read; the message names the file and the fix."""


@dataclass(frozen=True)
class PU:
    os_index: int
    core: int | None      # gp_index of the enclosing object of each kind, None when absent
    l2: int | None
    l3: int | None
    package: int | None
    numa: str             # the PU's nodeset (which NUMA node(s) it is local to)


def _cpuset_bits(text: str | None) -> set[int]:
    """hwloc bitmap "0xffffffff,0x0000000f" (most significant word first) -> set of indexes."""
    if not text:
        return set()
    bits = set()
    words = [w for w in text.split(",") if w]
    for position, word in enumerate(reversed(words)):
        value = int(word, 16)
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
            here[kinds[kind]] = int(element.get("gp_index", "-1"))
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
            found.setdefault(classify(a, b), (a.os_index, b.os_index))
        if len(found) == len(INTRA_NODE):
            break
    return found


def missing_reason(distance: str, xml_text: str, source: str) -> str:
    """Why a topology has no pair for `distance` (for the skip message)."""
    pus, allowed = parse(xml_text, source)
    usable = [p for p in pus if p.os_index in allowed]
    cores = {p.core for p in usable}
    packages = {p.package for p in usable}
    what = {
        "same-core": "no core with two usable PUs (no SMT)",
        "same-l2": "no L2 cache shared by two cores",
        "same-l3": "no L3 cache shared by two cores with their own L2",
        "same-package": "no package with two L3 caches or NUMA nodes",
        "other-package": f"{len(packages)} package(s)",
    }[distance]
    return f"{source}: {what} ({len(usable)} usable PUs, {len(cores)} cores)"


def local_topology_xml(cache: Path) -> str:
    """This machine's topology, recorded once into `cache` with lstopo (hwloc)."""
    if not cache.is_file():
        lstopo = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
        if lstopo is None:
            raise TopologyError("lstopo not found; install hwloc (ci/setup.sh does)")
        proc = subprocess.run([lstopo, "--of", "xml", "-"], capture_output=True, text=True)
        if proc.returncode != 0:
            raise TopologyError(f"lstopo --of xml failed: {proc.stderr.strip()}")
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_suffix(".tmp")
        tmp.write_text(proc.stdout)
        tmp.replace(cache)
    return cache.read_text()
