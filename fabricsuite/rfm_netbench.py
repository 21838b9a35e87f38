"""ReFrame building blocks shared by every netbench check.

A check file only says *what* it measures: which netbench method with which options, which sizes
must be present, and which performance variables come from which table cell or summary value.
Building, running, parsing, sanity and the reference lookup live here, once.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (
    fixture,
    parameter,
    run_after,
    run_before,
    sanity_function,
    variable,
)
from reframe.core.exceptions import SanityError
from reframe.core.logging import getlogger

from . import SOURCE_DIR
from .netbench_result import NetbenchResult, ResultError, load
from .references import ReferenceFileError, external_reference

#: The JSON result netbench writes in the stage directory (`--json-file`).
RESULT_FILE = "netbench.json"


@dataclass(frozen=True)
class Metric:
    """Where a performance variable comes from in a netbench result.

    `table=None` reads `column` from the summary; otherwise the one row of `table` whose
    columns match `where` (for example ``{"size_bytes": 8}``).
    """

    column: str
    unit: str
    table: str | None = None
    where: dict[str, Any] = field(default_factory=dict)

    def extract(self, result: NetbenchResult) -> float:
        return result.value(self.table, self.column, **self.where)


def summary(column: str, unit: str) -> Metric:
    return Metric(column=column, unit=unit)


def cell(table: str, column: str, unit: str, **where: Any) -> Metric:
    return Metric(column=column, unit=unit, table=table, where=where)


def powers_of_two(first: int, last: int) -> list[int]:
    sizes, size = [], first
    while size <= last:
        sizes.append(size)
        size *= 2
    return sizes


class NetbenchBuild(rfm.CompileOnlyRegressionTest):
    """Builds src/ with the programming environment's MPI compiler wrapper (`make netbench`)."""

    descr = "Build the netbench MPI microbenchmark program from src/"
    build_system = "Make"
    sourcesdir = str(SOURCE_DIR)
    build_locally = True

    @run_before("compile")
    def set_make_target(self):
        # The stage holds a copy of src/, possibly with a netbench built by another MPI.
        self.prebuild_cmds = ["make clean"]
        self.build_system.flags_from_environ = False
        self.build_system.options = ["netbench", f"MPICC={self.current_environ.cc}"]

    @sanity_function
    def program_was_built(self):
        return sn.assert_true(
            os.path.isfile(os.path.join(self.stagedir, "netbench")),
            msg="make did not produce src/netbench (see the build's stderr)",
        )


class NetbenchCheck(rfm.RunOnlyRegressionTest):
    """Runs one netbench method on two ranks and checks its figures against reference/."""

    #: netbench subcommand (a method from the papers; see docs/output-format.md).
    method = variable(str, loggable=True)
    #: Options after the subcommand.
    netbench_options = variable(typ.List[str], value=[], loggable=True)
    #: Sizes that must appear in `size_table` for the run to count.
    required_sizes = variable(typ.List[int], value=[])
    size_table = variable(str, type(None), value=None)
    #: The MPI library netbench reported (provenance in the perflog).
    mpi_library = variable(str, value="", loggable=True)
    netbench_version = variable(str, value="", loggable=True)
    #: Performance variables: name -> Metric. Set by each check class.
    metrics: dict[str, Metric] = {}
    #: Regular expression of netbench `unreliable` quantities that do not fail the check because
    #: no performance variable uses them (they are logged as warnings instead).
    tolerated_unreliable = variable(str, type(None), value=None)

    netbench = fixture(NetbenchBuild, scope="environment")

    valid_systems = ["+mpi"]
    valid_prog_environs = ["+mpi"]
    num_tasks = 2
    num_tasks_per_node = 2
    time_limit = "10m"
    # A performance variable without a reference is a failure, not a silent pass.
    require_reference = True
    tags = {"pt2pt", "netbench"}

    @run_after("setup")
    def set_command_line(self):
        self.executable = os.path.join(self.netbench.stagedir, "netbench")
        self.executable_opts = [self.method, *self.netbench_options, "--json-file", RESULT_FILE]

    @run_after("setup")
    def use_reference_file(self):
        # reference/<system>.yaml, or $RFM_REFERENCE_PREFIX/<system>.yaml. (ReFrame 4.10.4's
        # configuration schema rejects general/reference_prefix, so the environment variable is
        # the one way to point elsewhere.) The file is validated first: a missing or broken file
        # stops here with a message that names it, instead of ReFrame silently using no
        # reference. ReFrame gets the absolute path, which os.path.join keeps as is.
        # Bootstrapping a new system (`-S require_reference=false`): run without references,
        # then derive them from the stored runs with `fabricsuite baseline`.
        if not self.metrics:
            return  # nothing to compare (validation checks)
        try:
            self.reference = external_reference(self.current_system.name, type(self).__name__)
        except ReferenceFileError as err:
            if self.require_reference:
                raise
            getlogger().warning(f"{type(self).__name__}: running without references: {err}")

    def extra_problems(self, result: NetbenchResult) -> list[str]:
        """Check-specific sanity conditions; each problem is one sentence."""
        return []

    def result(self) -> NetbenchResult:
        cached = getattr(self, "_netbench_result", None)
        if cached is None:
            cached = load(os.path.join(self.stagedir, RESULT_FILE))
            self._netbench_result = cached
        return cached

    @sanity_function
    def result_is_sound(self):
        try:
            result = self.result()
        except ResultError as err:
            raise SanityError(str(err)) from None
        tolerated = None
        if self.tolerated_unreliable:
            pattern = re.compile(self.tolerated_unreliable)

            def tolerated(quantity: str) -> bool:
                return bool(pattern.fullmatch(quantity))

            for entry in result.unreliable:
                if tolerated(entry.get("quantity", "")):
                    getlogger().warning(
                        f"{self.display_name}: netbench: {entry.get('quantity')} unreliable "
                        f"({entry.get('reason')}); not used by this check"
                    )
        problems = result.problems(self.required_sizes, self.size_table, tolerated)
        try:
            problems.extend(self.extra_problems(result))
        except ResultError as err:
            problems.append(str(err))
        for name, metric in self.metrics.items():
            try:
                metric.extract(result)
            except ResultError as err:
                problems.append(f"{name}: {err}")
        if problems:
            raise SanityError("; ".join(problems))
        self.mpi_library = result.mpi_library.splitlines()[0] if result.mpi_library else ""
        self.netbench_version = result.version
        return True

    @run_before("performance")
    def set_performance_variables(self):
        self.perf_variables = {
            name: sn.make_performance_function(_metric_value(self, metric), metric.unit)
            for name, metric in self.metrics.items()
        }


#: Node counts of the multi-rank checks. A partition with fewer nodes (its `extras: {"nodes": N}`,
#: 1 when not given) skips the larger counts, saying so.
NODE_COUNTS = [1, 2, 4]


def cores_per_node(partition) -> int | None:
    """Cores of one node of `partition` from its processor information (None when unknown)."""
    processor = partition.processor
    cores = getattr(processor, "num_cores", None)
    if cores:
        return int(cores)
    cpus = getattr(processor, "num_cpus", None)
    per_core = getattr(processor, "num_cpus_per_core", None) or 1
    return int(cpus) // int(per_core) if cpus else None


class NetbenchMultiRankCheck(NetbenchCheck):
    """A method where every rank communicates (dense, beff, collectives), at a node count.

    `node_count` is a parameter, so every count is its own test case with its own references
    (index [$partition, $environ, scale], scale = "<nodes>x<ranks per node>"). Ranks per node
    default to the cores of a node (the partition's processor information), one busy-polling
    rank per core.
    """

    node_count = parameter(NODE_COUNTS, loggable=True)
    #: Ranks per node; None = one per core of a node.
    ranks_per_node = variable(int, type(None), value=None, loggable=True)
    #: "<nodes>x<ranks per node>": the reference index level below the environment.
    scale = variable(str, value="", loggable=True)
    tags = {"multirank", "netbench"}

    @run_after("setup")
    def set_scale(self):
        partition = self.current_partition
        nodes = int(partition.extras.get("nodes", 1))
        self.skip_if(
            self.node_count > nodes,
            f"{partition.fullname} has {nodes} node(s), this case needs {self.node_count}",
        )
        per_node = self.ranks_per_node or cores_per_node(partition)
        self.skip_if(
            per_node is None,
            f"{partition.fullname}: no processor information (cores per node); add "
            f"'processor' to its configuration or set -S ranks_per_node=N",
        )
        self.skip_if(per_node * self.node_count < 2, "needs at least 2 ranks")
        self.num_tasks = per_node * self.node_count
        self.num_tasks_per_node = per_node
        self.scale = f"{self.node_count}x{per_node}"

    def extra_problems(self, result: NetbenchResult) -> list[str]:
        ranks = result.parameters.get("ranks")
        if ranks != self.num_tasks:
            return [f"netbench ran with {ranks} ranks, the check asked for {self.num_tasks}"]
        return []


class NetbenchValidationCheck(NetbenchMultiRankCheck):
    """The method's `--validate` mode: every received byte checked, nothing timed."""

    tags = {"multirank", "netbench", "validation"}

    @run_after("init")
    def add_validate_option(self):
        self.netbench_options = [*self.netbench_options, "--validate"]

    def extra_problems(self, result: NetbenchResult) -> list[str]:
        problems = super().extra_problems(result)
        checked = result.summary.get("validated_messages", result.summary.get("validated_calls"))
        errors = result.summary.get("validation_errors")
        if not checked:
            problems.append("validation checked nothing")
        if errors != 0:
            problems.append(f"validation found {errors} wrong bytes or values")
        return problems


@sn.deferrable
def _metric_value(test: NetbenchCheck, metric: Metric) -> float:
    return metric.extract(test.result())
