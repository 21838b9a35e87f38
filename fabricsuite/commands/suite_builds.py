"""Run the by-hand build recipes of docs/building-the-suites.md as written, against sources a
center provides, and check that the checks find what they built.

The guide is the one source of the recipes: each suite's section holds one ```sh block, and this
module runs that block, unchanged but for three substitutions the guide itself asks for in its
introduction: the MPI's wrappers stand for `mpicc`, `mpicxx`, `mpif90` and `mpif77` (a directory
of links first on PATH), the MPI's name for `openmpi` in the install directories, and an install
root of the caller's for `/opt`. A recipe that no longer builds as written fails here, with its
log, instead of at a center.

A recipe starts in a scratch copy of the suite's source (the directory its first `cd` names,
found under the sources directory; b_eff: the directory holding `b_eff.c`) and must leave,
under the install root, programs that `programs.find_program` finds for that MPI: the
programs the checks run, linked with the MPI they were built with.

    python -m fabricsuite.commands.suite_builds --sources /path/to/sources --prefix /tmp/suites

Exit status: 0 every recipe whose source is present built and installed what the checks need,
1 one did not (its log's tail printed), 2 bad input (no such directory, no source at all).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fabricsuite import REPO_ROOT
from fabricsuite.data.programs import MPI_LIBRARIES, SUITES, find_program, linked_mpi

#: The guide whose recipes are run.
GUIDE = REPO_ROOT / "docs" / "building-the-suites.md"

#: The MPI families the checks tell apart (by the library a program links).
MPIS = tuple(dict.fromkeys(MPI_LIBRARIES.values()))

#: The wrapper names a recipe uses, each replaced by the MPI's (Debian: mpicc.openmpi, ...).
WRAPPERS = ("mpicc", "mpicxx", "mpif90", "mpif77")


@dataclass(frozen=True)
class Recipe:
    #: programs.SUITES key
    suite: str
    #: the guide's section heading
    heading: str
    #: programs the checks run that the recipe must install (class S, 1 and 2 ranks)
    programs: tuple[str, ...]


#: One per section of the guide, in its order.
RECIPES = (
    Recipe("osu", "OSU Micro-Benchmarks", ("osu_latency", "osu_bw", "osu_allreduce")),
    Recipe("imb", "Intel MPI Benchmarks", ("IMB-MPI1", "IMB-NBC")),
    Recipe("npb", "NPB (MPI)", ("cg.S.x", "ep.S.x", "is.S.x", "mg.S.x")),
    Recipe("npb-mz", "NPB-MZ (MPI x OpenMP)", ("bt-mz.S.2", "bt-mz.S.1", "sp-mz.S.2",
                                              "lu-mz.S.1")),
    Recipe("beff", "b_eff (the original)", ("b_eff",)),
)


class SuiteBuildError(ValueError):
    """Bad input or a guide without the expected recipe: one line that names the fix."""


def recipe_text(recipe: Recipe, guide: str) -> str:
    """The ```sh block of the recipe's section of the guide."""
    section = re.search(rf"^## {re.escape(recipe.heading)}\n(.*?)(?=^## |\Z)", guide,
                        re.S | re.M)
    block = section and re.search(r"^```sh\n(.*?)^```", section.group(1), re.S | re.M)
    if not block:
        raise SuiteBuildError(f"{GUIDE.name}: no ```sh block under '## {recipe.heading}'; "
                              f"keep one recipe per suite section")
    return block.group(1)


def source_name(text: str) -> str | None:
    """The directory the recipe starts in (its first `cd`), None for one without."""
    found = re.search(r"^cd\s+(\S+)", text, re.M)
    return found.group(1) if found else None


def for_mpi(text: str, mpi: str, prefix: Path) -> str:
    """The recipe with the guide's substitutions: install directories under `prefix`, named
    after `mpi` (the wrappers come from PATH, see `wrapper_dir`)."""
    return (text.replace("/opt/", f"{prefix}/")
            .replace("-openmpi", f"-{mpi}"))


def wrapper_dir(mpi: str, directory: Path) -> Path:
    """A directory of links mpicc, mpicxx, ... to the MPI's own wrappers (mpicc.<mpi>)."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in WRAPPERS:
        target = shutil.which(f"{name}.{mpi}")
        if target is None:
            raise SuiteBuildError(f"{name}.{mpi} is not on PATH: install the MPI's development "
                                  f"package (Debian: lib{mpi}-dev) or leave --mpi {mpi} out")
        (directory / name).symlink_to(target)
    return directory


def find_source(recipe: Recipe, text: str, sources: Path) -> Path | None:
    """The suite's source under `sources`: the directory the recipe cds into (or a directory
    whose name starts like it, another version), b_eff's directory holding b_eff.c."""
    name = source_name(text)
    if name is None:
        hits = sorted(sources.glob("b_eff.c")) + sorted(sources.glob("*/b_eff.c"))
        return hits[0].parent if hits else None
    if (sources / name).is_dir():
        return sources / name
    stem = re.split(r"[-_.]?\d", name, maxsplit=1)[0]
    hits = sorted(p for p in sources.glob(f"{stem}*") if p.is_dir())
    return hits[0] if hits else None


@dataclass
class Outcome:
    suite: str
    mpi: str
    ok: bool
    detail: str


def build(recipe: Recipe, guide: str, sources: Path, mpi: str, prefix: Path,
          log_dir: Path) -> Outcome | None:
    """Run one recipe for one MPI; None when its source is absent."""
    text = recipe_text(recipe, guide)
    source = find_source(recipe, text, sources)
    if source is None:
        return None
    with tempfile.TemporaryDirectory(prefix=f"suite-{recipe.suite}-{mpi}-") as scratch:
        work = Path(scratch)
        name = source_name(text)
        shutil.copytree(source, work / name if name else work, dirs_exist_ok=True,
                        symlinks=True)
        bindir = wrapper_dir(mpi, work / ".wrappers")
        env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
        log = log_dir / f"{recipe.suite}-{mpi}.log"
        with log.open("w") as out:
            proc = subprocess.run(["bash", "-e", "-o", "pipefail", "-c",
                                   for_mpi(text, mpi, prefix)],
                                  cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        return Outcome(recipe.suite, mpi, False,
                       f"the recipe exited {proc.returncode} (log {log}):\n{tail}")
    missing, wrong = [], []
    suite = SUITES[recipe.suite]
    installed = [str(p) for p in sorted(prefix.glob(f"*-{mpi}")) if p.is_dir()]
    for program in recipe.programs:
        found = find_program([program], suite, mpi=mpi, search=":".join(installed))
        if found is None or not found.startswith(str(prefix)):
            missing.append(program)
        elif linked_mpi(found) != mpi:
            wrong.append(f"{program} ({linked_mpi(found) or 'no MPI'})")
    if missing or wrong:
        return Outcome(recipe.suite, mpi, False,
                       "; ".join(filter(None, [
                           missing and f"not found by {suite.dir_variable}: "
                                       f"{', '.join(missing)}",
                           wrong and f"linked with another MPI: {', '.join(wrong)}"]))
                       + f" (log {log})")
    return Outcome(recipe.suite, mpi, True,
                   f"{', '.join(recipe.programs)} in {', '.join(installed)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fabricsuite.commands.suite_builds",
        description=__doc__.split("\n\n")[0] + " Each recipe runs once per MPI, in a scratch "
        "copy of its source; its log is kept beside the install root.")
    parser.add_argument("--sources", type=Path, required=True,
                        help="directory holding the suites' sources, as unpacked: "
                             "osu-micro-benchmarks-<version>/, mpi-benchmarks/, NPB3.4-MPI/, "
                             "NPB3.3-MZ-MPI/, a directory with b_eff.c")
    parser.add_argument("--prefix", type=Path, required=True,
                        help="install root standing for the guide's /opt (created)")
    parser.add_argument("--mpi", nargs="+", choices=MPIS, default=list(MPIS),
                        help="the MPIs to build with (default: both)")
    parser.add_argument("--suite", nargs="+", choices=[r.suite for r in RECIPES],
                        help="only these suites (default: every one whose source is present)")
    args = parser.parse_args(argv)
    try:
        if not args.sources.is_dir():
            raise SuiteBuildError(f"--sources {args.sources}: not a directory")
        args.prefix = args.prefix.resolve()
        args.prefix.mkdir(parents=True, exist_ok=True)
        log_dir = args.prefix / "logs"
        log_dir.mkdir(exist_ok=True)
        guide = GUIDE.read_text()
        outcomes, absent = [], []
        for recipe in RECIPES:
            if args.suite and recipe.suite not in args.suite:
                continue
            for mpi in args.mpi:
                print(f"suite_builds: {recipe.heading} with {mpi} ...", flush=True)
                outcome = build(recipe, guide, args.sources, mpi, args.prefix, log_dir)
                if outcome is None:
                    absent.append(recipe.heading)
                    break
                outcomes.append(outcome)
                print(f"  {'built' if outcome.ok else 'FAILED'}: {outcome.detail}", flush=True)
        if not outcomes:
            raise SuiteBuildError(f"--sources {args.sources}: no suite's source found "
                                  f"(expected the directories the guide's recipes cd into)")
    except SuiteBuildError as err:
        print(f"suite_builds: {err}", file=sys.stderr)
        return 2
    failed = [o for o in outcomes if not o.ok]
    print(f"suite_builds: {len(outcomes) - len(failed)} of {len(outcomes)} recipe run(s) built "
          f"what the checks run" + (f"; no source for {', '.join(absent)}" if absent else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
