"""ReFrame building blocks for the external suites: OSU, IMB, NPB, NPB-MZ and the original b_eff.

Where a program comes from depends on the partition:

- A partition whose configuration says Spack is available (`extras: {"spack": {...}}`) builds the
  suite through ReFrame's Spack build system, in a Spack environment made from the project's
  `spack.yaml`, the site file named there (`"site": "config/spack/<system>.yaml"`: the MPI and
  compilers as externals) and the project's package repository. `"install_tree"` keeps the builds
  between runs (a nightly run reuses them). The concretized environment (`spack.lock`) and the
  specs used are kept with the run's results.
- Any other partition (the embedded `local` system) uses a program found on the path, in the
  suite's directory variable (for example `FABRICSUITE_OSU_DIR`) or named with
  `-S binary=/path/to/program`; without one the check is skipped, saying how to provide it.

Parsing lives in `fabricsuite.data.external`; references in reference/<system>.yaml, indexed
[$partition, $environ, scale] with scale "<nodes>x<ranks per node>" (NPB and NPB-MZ: [$partition,
$environ, kernel or benchmark, scale]).
"""

from __future__ import annotations

import math
import shlex
from pathlib import Path

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, run_before, sanity_function, variable
from reframe.core.exceptions import SanityError

from fabricsuite import REPO_ROOT
from fabricsuite.base.metrics import scale_label
from fabricsuite.checks import check_base
from fabricsuite.checks.judged_check import Judged
from fabricsuite.data.netbench_result import cpu_list, shared_cpus
from fabricsuite.data.programs import SUITES, find_program, linked_library, linked_mpi
from fabricsuite.data.spackenv import (
    SPACK_ENV,
    SPACK_PROVENANCE,
    SPEC_FORMAT,
    build_with_spack,
    environment_mpi,
    skip_other_mpi,
    spack_settings,
)

#: Provenance the job script writes in the stage (never on stdout, which is the program's):
#: the program that ran and, on Spack partitions, the installed spec (SPEC_FORMAT).
PROGRAM_USED_FILE = "program-used.txt"
SPACK_SPEC_USED_FILE = "spack-spec-used.txt"


#: Each rank writes where it runs into this directory of the stage (RECORD_PLACEMENT).
PLACEMENT_DIR = "placement"
RECORD_PLACEMENT = REPO_ROOT / "config" / "launchers" / "record-placement"


def read_placement(directory: Path) -> list[dict]:
    """The ranks' records of record-placement, by rank: rank, host, cpus_bound (a list, empty
    where unknown) and cpus_text as written."""
    ranks = []
    for path in sorted(directory.glob("rank-*")):
        try:
            rank, host, cpus = path.read_text().split()[:3]
        except (OSError, ValueError):
            continue  # a rank that could not write its record: nothing to check
        try:
            bound = cpu_list(cpus)
        except ValueError:
            bound = []
        ranks.append({"rank": int(rank) if rank.isdigit() else rank, "host": host,
                      "cpus_bound": bound, "cpus_text": cpus})
    # rank order (a rank the launcher did not number, "pid<N>", last)
    return sorted(ranks, key=lambda r: str(r["rank"]).zfill(12))


class ExternalSuiteCheck(Judged, rfm.RegressionTest):
    """One program of an external suite, run and parsed; see the module docstring."""

    #: key of SUITES (a class attribute, set by each check family)
    suite: str = ""
    #: the program's file names, first found wins (names differ between versions/builds)
    program_names = variable(typ.List[str])
    program_opts = variable(typ.List[str], value=[], loggable=True)
    #: -S binary=/path/to/program: use this one (partitions without Spack)
    binary = variable(str, type(None), value=None)
    #: -S spack_spec=...: the spec to build instead of the suite's default (Spack partitions)
    spack_spec = variable(str, type(None), value=None, loggable=True)
    #: what ran (provenance, in the perflog): the program's path ...
    program_used = variable(str, value="", loggable=True)
    #: ... and on Spack partitions the installed spec, `name@version variants /hash`
    spack_spec_used = variable(str, value="", loggable=True)
    scale = variable(str, value="", loggable=True)
    #: the MPI the program is linked with, "openmpi (/usr/lib/.../libmpi.so.40)" (ldd), or on
    #: Spack partitions the environment's MPI (the spec is in spack_spec_used): the perflog's
    #: mpi_library column, as for netbench's checks
    mpi_library = variable(str, value="", loggable=True)
    #: where each rank ran, "rank:host:cpus ..." (config/launchers/record-placement)
    placement = variable(str, value="", loggable=True)
    require_reference = True

    valid_systems = ["+mpi"]
    valid_prog_environs = ["+mpi"]
    sourcesdir = None
    time_limit = "20m"
    tags = {"external"}

    # Before compile, after every setup hook: the program names may depend on the scale.
    @run_before("compile")
    def choose_program(self):
        suite = SUITES[self.suite]
        partition = self.current_partition
        settings = spack_settings(partition)
        q = shlex.quote
        if settings is not None and not self.binary:
            skip_other_mpi(self, settings)
            spec = self.spack_spec or suite.spack_spec
            build_with_spack(self, settings, spec)
            # Every word from the suite, the check or -S is quoted; provenance goes to files in
            # the stage: stdout is the program's own output, parsed as a whole.
            self.prerun_cmds = [
                f"spack -e {SPACK_ENV} find --long --variants {q(spec)} > spack-specs.txt",
                f"spack -e {SPACK_ENV} find --format {q(SPEC_FORMAT)} {q(spec)} "
                f"> {SPACK_SPEC_USED_FILE}",
                f'rfm_prefix="$(spack -e {SPACK_ENV} location -i {q(spec)})"',
                "rfm_program=$(for d in " + " ".join(q(d) for d in suite.prefix_dirs)
                + "; do for p in " + " ".join(q(n) for n in self.program_names)
                + '; do [ -x "$rfm_prefix/$d/$p" ] && echo "$rfm_prefix/$d/$p" && break 2; '
                "done; done || true)",
                f'[ -n "$rfm_program" ] || {{ echo '
                f'{q("no " + " or ".join(self.program_names) + " under")} "$rfm_prefix" '
                f'{q(f"({spec})")} >&2; exit 1; }}',
                f"printf '%s\\n' \"$rfm_program\" > {PROGRAM_USED_FILE}",
            ]
            self.executable = '"$rfm_program"'
            self.mpi_library = f"{environment_mpi(self.current_environ) or ''} (Spack)".strip()
            self.keep_files = [*self.keep_files, *SPACK_PROVENANCE, SPACK_SPEC_USED_FILE,
                               PROGRAM_USED_FILE]
            check_base.record_exit_status(self)
            return
        expected = environment_mpi(self.current_environ)
        program = find_program(self.program_names, suite, self.binary, mpi=expected)
        self.skip_if(
            program is None,
            f"{suite.title}: {' or '.join(self.program_names)} not found on PATH or in "
            f"${suite.dir_variable}, and {partition.fullname} has no Spack (extras.spack); "
            f"install the suite and put it on PATH, set {suite.dir_variable}, or "
            f"-S binary=/path/to/{self.program_names[0]}",
        )
        linked = linked_mpi(program)
        self.mpi_library = linked_library(program) or (expected or "")
        self.skip_if(
            linked is not None and expected is not None and linked != expected,
            f"{program} is built with {linked}, environment {self.current_environ.name} "
            f"launches {expected} (a program with the other MPI's launcher runs as singletons "
            f"that wait forever); add a build with {expected} to ${suite.dir_variable} "
            f"(directories separated by ':', each environment takes the build of its MPI), or "
            f"run -p with the matching environment",
        )
        self.build_system = "CustomBuild"
        # Nothing to build: fail early and clearly when the program cannot run. The path may
        # come from -S binary=...: quoted wherever it reaches a shell.
        self.build_system.commands = [f"test -x {q(program)}"]
        self.executable = q(program)
        self.program_used = program
        check_base.record_exit_status(self)

    @run_after("setup")
    def set_options(self):
        # ReFrame joins the options into the job script unquoted; -S program_opts=... is input
        self.executable_opts = [shlex.quote(o) for o in self.program_opts]

    # After choose_program: every rank starts through record-placement, which writes where it
    # runs (host, CPUs) into the stage before it becomes the program.
    @run_before("run")
    def record_where_ranks_run(self):
        self.prerun_cmds = [*self.prerun_cmds,
                            f"rm -rf {PLACEMENT_DIR} && mkdir {PLACEMENT_DIR}"]
        self.executable_opts = [PLACEMENT_DIR, self.executable, *self.executable_opts]
        self.executable = shlex.quote(str(RECORD_PLACEMENT))

    # After every skip decision (program, node count, process count), before any build.
    @run_before("compile")
    def use_reference_file(self):
        check_base.load_references(self)

    def parse(self):
        """The parsed output (fabricsuite.data.external result); raises SuiteOutputError."""
        raise NotImplementedError

    def parsed(self):
        cached = getattr(self, "_parsed", None)
        if cached is None:
            cached = self.parse()
            self._parsed = cached
        return cached

    def problems(self, result) -> list[str]:
        """Check-specific sanity conditions on the parsed output; each one sentence."""
        return []

    @sanity_function
    def output_is_sound(self):
        from fabricsuite.data.external import SuiteOutputError

        # A job that did not run to its end with status 0 is never judged on its figures (an
        # output cut in the middle of a number parses to a wrong figure); what the output says
        # is added when it says why (OSU's own validation failure, a second table ...).
        not_judged = check_base.exit_status_problem(self)
        if not_judged:
            try:
                self.parsed()
            except (SuiteOutputError, OSError) as err:
                not_judged += f"; {err}"
            raise SanityError(not_judged)
        ranks = read_placement(Path(self.stagedir, PLACEMENT_DIR))
        self.placement = " ".join(f"{r['rank']}:{r['host']}:{r['cpus_text']}" for r in ranks)
        try:
            result = self.parsed()
            problems = self.problems(result)
            shared = shared_cpus(ranks) if self.metrics else None  # validation times nothing
            if shared:
                problems.insert(0, shared)
            values = {name: figure.extract(result) for name, figure in self.metrics.items()}
        except (SuiteOutputError, OSError) as err:
            raise SanityError(str(err)) from None
        bad = [f"{n}={v}" for n, v in values.items() if not (math.isfinite(v) and v >= 0)]
        if bad:
            problems.append(f"values out of range: {bad}")
        if problems:
            raise SanityError("; ".join(problems))
        if not self.program_used:
            # Spack partitions: what the job script found and installed (files in the stage)
            self.program_used = self._stage_line(PROGRAM_USED_FILE)
            self.spack_spec_used = self._stage_line(SPACK_SPEC_USED_FILE)
        return True

    def stdout_text(self) -> str:
        return Path(self.stagedir, self.job.stdout).read_text()

    def _stage_line(self, name: str) -> str:
        try:
            return Path(self.stagedir, name).read_text().strip()
        except OSError:
            return ""

    def parsed_result(self):
        return self.parsed()


class TwoRankCheck(ExternalSuiteCheck):
    """A point-to-point program on two ranks: on two nodes where the partition has them (the
    network), else on two cores of one node."""

    num_tasks = 2

    @run_after("setup")
    def place_ranks(self):
        nodes = int(self.current_partition.extras.get("nodes", 1))
        self.num_tasks_per_node = 1 if nodes >= 2 else 2
        self.scale = scale_label(2 // self.num_tasks_per_node, self.num_tasks_per_node)


class MultiRankExternalCheck(ExternalSuiteCheck):
    """A program on every core of `node_count` nodes (skipped beyond the partition's size)."""

    node_count = parameter(check_base.NODE_COUNTS, type=int, loggable=True)
    ranks_per_node = variable(int, type(None), value=None, loggable=True)
    #: see NetbenchMultiRankCheck: time even where emulated nodes share cores (mechanics only)
    timing_on_shared_cores = variable(typ.Bool, value=False, loggable=True)

    @run_after("setup")
    def set_scale(self):
        # validation runs (no performance variables) time nothing
        check_base.place_on_nodes(self, timed=bool(self.metrics))
        self.scale += self.scale_detail()

    def scale_detail(self) -> str:
        """What a suite adds to the scale "<nodes>x<ranks per node>" of the placed cores, where
        its references differ by more than the placement (NPB's class, NPB-MZ's split); the
        scale is set here and nowhere else."""
        return ""
