"""What the NAS Parallel Benchmarks accept: process counts per kernel, zones per MZ class."""

from __future__ import annotations

import math

#: Zones of NPB-MZ per benchmark and class (x_zones * y_zones, NPB-MZ 3.3 README). LU-MZ has
#: 4 x 4 zones at every class.
_MZ_ZONES = {
    "bt-mz": {"S": 4, "W": 16, "A": 16, "B": 64, "C": 256, "D": 1024, "E": 4096, "F": 16384},
    "sp-mz": {"S": 4, "W": 16, "A": 16, "B": 64, "C": 256, "D": 1024, "E": 4096, "F": 16384},
    "lu-mz": {c: 16 for c in "SWABCDEF"},
}


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def npb_rejects(kernel: str, processes: int) -> str | None:
    """Why `kernel` (NPB 3.x MPI) cannot run on `processes` ranks, or None when it can."""
    kernel = kernel.lower()
    if processes < 1:
        return "needs at least one process"
    if kernel in ("bt", "sp"):
        root = math.isqrt(processes)
        if root * root != processes:
            return f"needs a square number of processes, not {processes}"
    elif kernel in ("cg", "ft", "is", "mg"):
        if not _power_of_two(processes):
            return f"needs a power of two processes, not {processes}"
    elif kernel not in ("ep", "lu"):
        return f"unknown NPB kernel {kernel!r}"
    return None


def mz_zones(benchmark: str, npb_class: str) -> int | None:
    """Zones of an NPB-MZ benchmark at a class (None when unknown)."""
    return _MZ_ZONES.get(benchmark.lower(), {}).get(npb_class.upper())
