"""Where the external suites' programs are and which MPI each links (no ReFrame here: the
checks, `fabricsuite.commands.suite_builds` and the tests share it).

A partition without Spack runs a program found in the suite's directory variable (for example
`FABRICSUITE_OSU_DIR`, directories or install prefixes, colon-separated) or on PATH; each
programming environment takes the first one linked with its own MPI (`ldd`).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from dataclasses import dataclass


@dataclass(frozen=True)
class Suite:
    title: str
    spack_spec: str  # the root spec in spack.yaml
    dir_variable: str  # environment variable naming the directory of its programs
    #: directories under the Spack install prefix that hold the programs
    prefix_dirs: tuple[str, ...] = ("bin",)


SUITES = {
    "osu": Suite("OSU Micro-Benchmarks", "osu-micro-benchmarks", "FABRICSUITE_OSU_DIR",
                 ("libexec/osu-micro-benchmarks/mpi/pt2pt",
                  "libexec/osu-micro-benchmarks/mpi/collective",
                  "libexec/osu-micro-benchmarks/mpi/pt2pt/standard",
                  "libexec/osu-micro-benchmarks/mpi/collective/blocking",
                  "libexec/osu-micro-benchmarks/mpi/collective/non_blocking", "bin")),
    "imb": Suite("Intel MPI Benchmarks", "intel-mpi-benchmarks", "FABRICSUITE_IMB_DIR"),
    "npb": Suite("NAS Parallel Benchmarks", "npb", "FABRICSUITE_NPB_DIR"),
    "npb-mz": Suite("NAS Parallel Benchmarks Multi-Zone", "npb-mz", "FABRICSUITE_NPB_MZ_DIR"),
    "beff": Suite("b_eff (HLRS)", "beff", "FABRICSUITE_BEFF_DIR"),
}


def find_program(names: list[str], suite: Suite, explicit: str | None = None,
                 mpi: str | None = None, search: str | None = None) -> str | None:
    """The first of `names` in the suite's directory variable (or `search`, a value of that
    form), then on PATH (None if absent).

    With `mpi` (the environment's MPI family), the first one linked with that MPI (or with an
    MPI ldd cannot tell) wins over an earlier one linked with another: a center keeps one build
    per MPI (`FABRICSUITE_OSU_DIR=/opt/osu-openmpi:/opt/osu-mpich`), and each environment of one
    session runs its own. Only builds of other MPIs found: the first of them (the caller skips,
    saying so)."""
    if explicit:
        return explicit
    # The variable holds directories (colon-separated) or install prefixes: a prefix is searched
    # where the suite installs its programs (OSU: libexec/osu-micro-benchmarks/mpi/...).
    directories = []
    if search is None:
        search = os.environ.get(suite.dir_variable, "")
    for entry in filter(None, search.split(":")):
        directories += [entry, *(os.path.join(entry, d) for d in suite.prefix_dirs)]
    candidates = []
    for name in names:
        candidates += [os.path.join(d, name) for d in directories
                       if os.access(os.path.join(d, name), os.X_OK)]
        found = shutil.which(name)
        if found:
            candidates.append(found)
    if mpi is not None:
        for candidate in candidates:
            if linked_mpi(candidate) in (mpi, None):
                return candidate
    return candidates[0] if candidates else None


#: shared-library name fragments -> MPI family
MPI_LIBRARIES = {"libmpi.so.40": "openmpi", "libmpi.so.12": "mpich", "libmpich": "mpich"}


@functools.lru_cache(maxsize=64)  # find_program and the check's own test ask for the same
def _linked(program: str) -> tuple[str, str] | None:
    """(MPI family, the library ldd resolved) of a dynamically linked program, or None."""
    try:
        out = subprocess.run(["ldd", program], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for fragment, family in MPI_LIBRARIES.items():
        if fragment in out:
            line = next((ln for ln in out.splitlines() if fragment in ln), "")
            library = line.split("=>")[-1].split("(")[0].strip() or line.strip()
            # Debian's MPICH also ships libmpi.so.12; Open MPI's libmpi lives under openmpi/
            if family == "mpich" and "openmpi" in line:
                return "openmpi", library
            return family, library
    return None


def linked_mpi(program: str) -> str | None:
    """The MPI family a dynamically linked program uses (from ldd), None when unknown."""
    found = _linked(program)
    return found[0] if found else None


def linked_library(program: str) -> str:
    """What the perflog records as the MPI library of an external suite's program: "openmpi
    (/usr/lib/.../libmpi.so.40)", or "" when ldd cannot tell."""
    found = _linked(program)
    return f"{found[0]} ({found[1]})" if found else ""
