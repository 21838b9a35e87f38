"""ReFrame building blocks shared by every netbench check.

A check file only says *what* it measures: which netbench method with which options, which sizes
must be present, and which performance variables come from which table cell or summary value.
Building, running, parsing, sanity and the reference lookup live here, once.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
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
from reframe.core.exceptions import EnvironError, SanityError
from reframe.core.logging import getlogger

from fabricsuite import REPO_ROOT, SOURCE_DIR
from fabricsuite.base.metrics import Metric, PerfSpec, is_finite_number, unjudged_variables
from fabricsuite.checks.check_base import (
    NODE_COUNTS,
    exit_status_problem,
    load_references,
    place_on_nodes,
    record_exit_status,
)
from fabricsuite.checks.judged_check import Judged
from fabricsuite.checks.rails import env_stripes
from fabricsuite.data import counters, limits, links, topology, transport
from fabricsuite.data.declarations import unit_and_direction
from fabricsuite.data.interference import describe as describe_interference
from fabricsuite.data.interference import worst_wait
from fabricsuite.data.machine import topology_cache
from fabricsuite.data.netbench_result import NetbenchResult, ResultError, load
from fabricsuite.data.spackenv import (
    SPACK_ENV,
    SPACK_PROVENANCE,
    SPEC_FORMAT,
    build_with_spack,
    netbench_spec,
    skip_other_mpi,
    spack_settings,
)

#: Reads the fabric's counters before and after a job (fabricsuite.data.counters).
READ_COUNTERS = REPO_ROOT / "config" / "launchers" / "read-counters"
#: Binds each rank to its CPU of the pair (config/launchers/bind-rank: taskset after the launcher).
BIND_RANK = REPO_ROOT / "config" / "launchers" / "bind-rank"

#: The JSON result netbench writes in the stage directory (`--json-file`).
RESULT_FILE = "netbench.json"


def summary(column: str, size_step: float | None = None, count: bool = False) -> Metric:
    """A summary value of the result, e.g. ``summary("g_us")``: its unit and direction are
    netbench's declaration of it (fabricsuite.data.declarations)."""
    unit, better = unit_and_direction(None, column)
    return Metric(read=lambda result: result.value(None, column),
                  spec=PerfSpec(unit, better, size_step, count), column=column)


def summaries(*columns: str, prefix: str = "") -> dict[str, Metric]:
    """``summary(column)`` of each column, named ``prefix + column``."""
    return {prefix + column: summary(column) for column in columns}


def cell(table: str, column: str, **where: Any) -> Metric:
    """A table cell, e.g. ``cell("pingpong", "latency_median_us", size_bytes=8)``: its unit and
    direction are netbench's declaration of the column (fabricsuite.data.declarations)."""
    unit, better = unit_and_direction(table, column)
    return Metric(read=lambda result: result.value(table, column, **where),
                  spec=PerfSpec(unit, better), column=column, table=table, where=where)


def each_collective_and_size(table: str, column: str, collectives: list[str],
                             sizes: dict[str, int], suffix: str) -> dict[str, Metric]:
    """``cell(table, column)`` of every collective at every size, named
    ``{collective}_{size label}_{suffix}`` (``sizes``: label -> bytes)."""
    return {f"{c}_{label}_{suffix}": cell(table, column, collective=c, size_bytes=size)
            for c in collectives for label, size in sizes.items()}


def value_list(values: list[int]) -> str:
    """A netbench list option's value, e.g. ``--sizes 8,1024,65536``."""
    return ",".join(str(value) for value in values)


def variant_problems(result: NetbenchResult, sizes: list[int], table: str, key: str,
                     expected: list) -> list[str]:
    """One problem per size of `sizes` at which `table` does not hold exactly one row per
    variant (`key`: the variant's column; `expected`: its values)."""
    problems = []
    for size in sizes:
        seen = sorted(row.get(key) for row in result.table(table) if row.get("size_bytes") == size)
        if seen != sorted(expected):
            problems.append(f"table {table}: size {size} has {key} {seen}, expected "
                            f"{sorted(expected)}")
    return problems


def count_problems(rows: list, expected: int, what: str) -> list[str]:
    """``["N <what>, expected M"]`` when a table has another number of rows than its run asked
    for (a method that stopped early or skipped a case), else ``[]``."""
    return [] if len(rows) == expected else [f"{len(rows)} {what}, expected {expected}"]


@functools.cache
def netbench_checks() -> dict[str, type]:
    """The netbench check classes of checks/*.py that declare performance variables, by name,
    loaded as ReFrame loads them: what `fabricsuite report` and the tests read the variables'
    tables, columns and sizes from."""
    return check_classes(NetbenchCheck)


def check_classes(base: type) -> dict[str, type]:
    """The classes of checks/*.py derived from `base` that declare performance variables, by
    name, loaded as ReFrame loads them."""
    import importlib.util
    import sys

    classes = {}
    for path in sorted((REPO_ROOT / "checks").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"_fabricsuite_checks_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # ReFrame's simple_test looks the class's file up
        spec.loader.exec_module(module)
        classes.update({key: obj for key, obj in vars(module).items()
                        if isinstance(obj, type) and issubclass(obj, base)
                        and obj.__module__ == module.__name__ and getattr(obj, "metrics", None)})
    return classes


class NetbenchBuild(rfm.CompileOnlyRegressionTest):
    """Builds src/ with the programming environment's MPI compiler wrapper (`make netbench`);
    on a partition with Spack, installs this checkout's commit with Spack instead."""

    descr = "Build the netbench MPI microbenchmark program from src/"
    build_system = "Make"
    sourcesdir = str(SOURCE_DIR)
    build_locally = True

    @run_before("compile")
    def set_make_target(self):
        # A declared MPI that is not installed fails here, saying so, instead of vanishing from
        # the run (config/systems/local.py keeps its environment for that reason).
        missing = self.current_environ.extras.get("missing")
        if missing:
            raise EnvironError(f"environment {self.current_environ.name}: {missing}")
        settings = spack_settings(self.current_partition)
        if settings is not None:
            skip_other_mpi(self, settings)
            spec = netbench_spec()
            build_with_spack(self, settings, spec)
            # the checks run <stage>/netbench, whichever way it was built
            self.postbuild_cmds = [
                f'ln -sf "$(spack -e {SPACK_ENV} location -i {spec})/bin/netbench" netbench',
                f"spack -e {SPACK_ENV} find --format "
                f"'{SPEC_FORMAT}' {spec} > spack-spec.txt",
            ]
            self.keep_files = [*SPACK_PROVENANCE[:1], "spack-spec.txt"]
            return
        # The stage holds a copy of src/, possibly with a netbench built by another MPI.
        self.prebuild_cmds = ["make clean"]
        self.build_system.flags_from_environ = False
        self.build_system.options = ["netbench", f"MPICC={self.current_environ.cc}"]
        # one object per source (src/Makefile): every core of the build host, up to 8
        self.build_system.max_concurrency = min(os.cpu_count() or 1, 8)

    @sanity_function
    def program_was_built(self):
        return sn.assert_true(
            os.path.isfile(os.path.join(self.stagedir, "netbench")),
            msg="make did not produce src/netbench (see the build's stderr)",
        )


class NetbenchCheck(Judged, rfm.RunOnlyRegressionTest):
    """Runs one netbench method on two ranks and checks its figures against reference/."""

    #: netbench subcommand (a method from the papers; see docs/output-format.md).
    method = variable(str, loggable=True)
    #: Options after the subcommand.
    netbench_options = variable(typ.List[str], value=[], loggable=True)
    #: Sizes that must appear in `size_table` for the run to count.
    required_sizes = variable(typ.List[int], value=[])
    size_table = variable(str, type(None), value=None)
    #: Tables that must hold one row per variant at every required size: (table, the variant's
    #: column, its values), e.g. ``("polling", "mode", ["blocking", "busy_poll", "test_yield"])``.
    required_variants: list[tuple[str, str, list]] = []
    #: The MPI library netbench reported (provenance in the perflog).
    mpi_library = variable(str, value="", loggable=True)
    netbench_version = variable(str, value="", loggable=True)
    #: Performance variables: name -> Metric. Set by each check class.
    metrics: dict[str, Metric] = {}
    #: Whether the job times anything: ranks then need cores of their own (a validation check,
    #: which times nothing, sets False).
    timed: bool = True
    #: Files the job writes that must not survive from an earlier run in the stage.
    fresh_outputs = [RESULT_FILE]
    #: Regular expression of netbench `unreliable` quantities that do not fail the check because
    #: no performance variable uses them (they are logged as warnings instead).
    tolerated_unreliable = variable(str, type(None), value=None)
    #: Regular expression of netbench summary quantities this check measures but leaves out of
    #: a run's verdict when netbench flags them unreliable (a fit a healthy host's cache edge can
    #: bend): that run's other figures are judged, the flagged ones keep their perflog column
    #: without a bound and are no sample (leave_out_the_unjudged), and the outcome names them
    #: (`unjudged`). Any other unreliable figure fails sanity.
    unjudged_when_unreliable = variable(str, type(None), value=None)
    #: The variables a run left out of its verdict, each with netbench's reason:
    #: "flood_G_ns_per_byte: netbench flagged G_ns_per_byte unreliable: fit over 5 sizes ...".
    unjudged = variable(typ.List[str], value=[], loggable=True)
    #: What carried rank 0's messages, from the MPI's own selection output
    #: (fabricsuite.data.transport): "vader", "ucx:tcp", "tcp (network), vader (node)", "unknown:
    #: ..."
    transport = variable(str, value="", loggable=True)
    #: The fabric counters that tell of trouble and moved during the job, on the nodes the
    #: partition reads, "node1 tc eth0 tbf-8001 overlimits +3021" (fabricsuite.data.counters); ""
    #: for none
    counters = variable(str, value="", loggable=True)
    #: Every counter that moved during the job, "NODE/SOURCE/NAME", with its change
    counter_deltas = variable(typ.Dict[str, int], value={}, loggable=True)
    #: What the partition declares and was not read, with the reason, "node1 infiniband: no
    #: /sys/class/infiniband/*/ports (...)"; "" when everything was read
    counters_not_read = variable(str, value="", loggable=True)
    #: The line rate of the path the case's messages take, Gb/s (one rail, or the rails they
    #: are striped over, fabricsuite.data.links), that the line fractions divide by; None:
    #: none declared
    line_rate_gbps = variable(float, type(None), value=None, loggable=True)
    #: The latency at 8 B the partition promises between two nodes, us (extras.fabric.promise
    #: latency_8B_us), that the latency's promise multiple divides by; None: none declared
    promised_latency_us = variable(float, type(None), value=None, loggable=True)
    #: The fabric's links on the nodes read, as their OS reported them before the job
    #: (fabricsuite.data.links): "node1 net/eth0 1 Gb/s, node2 net/eth0 1 Gb/s"
    links = variable(str, value="", loggable=True)
    #: A link below the partition's declared links, or one that changed during the job,
    #: "LINK DEGRADED node2 net/eth0: 0.5 Gb/s, declared 1 Gb/s"; "; "-joined, "" for none
    link_findings = variable(str, value="", loggable=True)
    #: The largest share of the run a rank waited for its CPU (fabricsuite.data.interference)
    cpu_wait_fraction = variable(float, type(None), value=None, loggable=True)
    #: Why the node was not quiet, "" when it was: the rank, its wait, what ran on its CPU
    interference = variable(str, value="", loggable=True)
    #: The hosts the ranks ran on, in rank order, each once (the result's own word): the case's
    #: nodes where the scheduler did not report them (a job that ended before ReFrame's first
    #: poll has a Slurm node list of "None"; fabricsuite.data.cases.job_nodes)
    rank_hosts = variable(typ.List[str], value=[], loggable=True)

    #: Whether the job runs `netbench limits` on the ranks' cores before the method (the
    #: efficiency figures' prologue, fabricsuite.data.limits); set at init where the check declares
    #: efficiencies and its ranks share a node.
    limits_prologue = variable(typ.Bool, value=False, loggable=True)

    netbench = fixture(NetbenchBuild, scope="environment")

    valid_systems = ["+mpi"]
    valid_prog_environs = ["+mpi"]
    # netbench's JSON result survives in the output directory beside ReFrame's own files.
    keep_files = [RESULT_FILE]
    num_tasks = 2
    num_tasks_per_node = 2
    time_limit = "10m"
    # A performance variable without a reference is a failure, not a silent pass.
    require_reference = True
    tags = {"pt2pt", "netbench"}

    @run_after("setup")
    def set_command_line(self):
        # Every word is quoted: ReFrame joins them into the job script unquoted, and
        # `-S netbench_options=...` comes from the command line.
        self.executable = shlex.quote(os.path.join(self.netbench.stagedir, "netbench"))
        self.executable_opts = [shlex.quote(word) for word in
                                [self.method, *self.netbench_options, *self.setup_options(),
                                 "--json-file", RESULT_FILE, transport.NETBENCH_OPTION]]
        record_exit_status(self)
        # The fabric's counters on the job's first or every node, just before and just after the
        # program (fabricsuite.data.counters); stale readings go with record_exit_status's clean-up.
        try:
            before, after = counters.commands(
                counters.declared(self.current_partition.extras), str(READ_COUNTERS),
                self.current_partition.scheduler.registered_name)
            links.contract(self.current_partition.extras)  # judged in sanity: refused here
        except (counters.CountersError, links.ContractError) as err:
            raise EnvironError(str(err)) from None
        self.prerun_cmds = [*self.prerun_cmds, before]
        self.postrun_cmds = [*self.postrun_cmds, after]

    @run_before("run")
    def use_reference_file(self):
        # After every setup hook, so that a case the partition cannot run is skipped for that
        # reason first. reference/<system>.yaml, validated first (see load_references).
        load_references(self)

    @run_after("setup")
    def take_the_promise(self):
        """The line rate and latency the partition declares (fabricsuite.data.links): the line
        fractions divide by the one, the latency's promise multiple by the other. A case has
        them only where a link is what limits it (one rank per node across nodes, timed) and
        the partition declares its links and the promise each one is judged by (only the
        bandwidth fraction has a default)."""
        promised = links.promised_figures(self.metrics)
        if not promised:
            return
        promise = links.contract(self.current_partition.extras)
        kept = {name for name, figure in promised.items()
                if promise is not None and self.timed and self.one_rank_per_node()
                and promise.promise_for(figure) is not None}
        if kept != set(promised):
            self.metrics = {name: figure for name, figure in self.metrics.items()
                            if name not in promised or name in kept}
            self.declare_directions()
        if kept:
            self.line_rate_gbps = promise.path_rate_gbps(self.path_rails(promise))
            self.promised_latency_us = promise.latency_8B_us

    def path_rails(self, promise: links.Contract) -> int:
        """Over how many of a node's rails this case's messages go: as the partition's MPI is
        configured (the contract's striped_over, or the environment's own extras.striped_over),
        unless the check binds them itself."""
        return min(env_stripes(self.current_environ, promise.striped_over), promise.count)

    def one_rank_per_node(self) -> bool:
        """Whether each rank of the case has a node of its own (its messages cross links)."""
        return False

    def extra_problems(self, result: NetbenchResult) -> list[str]:
        """Check-specific sanity conditions; each problem is one sentence."""
        return []

    def sharing_cores_with(self) -> tuple[str, ...]:
        """Programs this job's ranks share their cores with on purpose (not interference)."""
        return ()

    def on_one_node(self) -> bool:
        """Whether every rank of the job runs on one node (the efficiencies' condition)."""
        return False

    def limits_wrapper(self) -> list[str]:
        """The words in front of the prologue's netbench (the pair's binding wrapper)."""
        return []

    @run_after("init")
    def measure_the_limits(self):
        """Efficiencies need the limits of the job's own cores: on one node the job runs
        `netbench limits` there first; across nodes the cores are not what limits a message
        (the link is), so the efficiencies are left out of this case (before the base records
        the variables' directions and floors: judged_check.Judged.declare_directions)."""
        if not limits.efficiencies(self.metrics):
            return
        if not self.on_one_node() or not self.timed:
            self.metrics = {name: figure for name, figure in self.metrics.items()
                            if not isinstance(figure, limits.Efficiency)}
            return
        self.limits_prologue = True

    @run_before("run")
    def add_the_limits_prologue(self):
        if not self.limits_prologue:
            return
        # The launcher's command line for this job's ranks: ReFrame's run phase sets these two
        # on the job only just before it writes the script, after every run_before hook.
        self.job.num_tasks, self.job.num_tasks_per_node = self.num_tasks, self.num_tasks_per_node
        sizes = value_list(limits.limit_sizes(self.metrics, self.required_sizes))
        program = [*self.limits_wrapper(), os.path.join(self.netbench.stagedir, "netbench"),
                   "limits", "--sizes", sizes, *limits.PROLOGUE_OPTIONS, "--json-file",
                   limits.LIMITS_FILE]
        self.prerun_cmds = [
            *self.prerun_cmds, f"rm -f {limits.LIMITS_FILE}",
            " ".join([self.job.launcher.run_command(self.job),
                      *(shlex.quote(word) for word in program)]).strip()]
        self.keep_files = [*self.keep_files, limits.LIMITS_FILE]

    def result(self) -> NetbenchResult:
        cached = getattr(self, "_netbench_result", None)
        if cached is None:
            cached = load(os.path.join(self.stagedir, RESULT_FILE))
            if self.limits_prologue:
                cached.limits = load(os.path.join(self.stagedir, limits.LIMITS_FILE))
            cached.line_rate_gbps = self.line_rate_gbps
            cached.promised_latency_us = self.promised_latency_us
            self._netbench_result = cached
        return cached

    @sanity_function
    def result_is_sound(self):
        # First: a job that failed (a link down) still says which counters moved.
        readings = counters.read_job(self.stagedir)
        self.counters, self.counter_deltas = readings.trouble, readings.moved
        self.counters_not_read = readings.not_read
        try:
            self.links, self.link_findings = links.judge(self.stagedir,
                                                         self.current_partition.extras)
        except links.ContractError as err:  # ports that no node has: the contract, one line
            raise SanityError(str(err)) from None
        not_judged = exit_status_problem(self)
        if not not_judged:
            # a link that went down during a job that ran to its end and came back: the state
            # before and after agrees, its counters saw it (a job it broke names them above)
            flaps = counters.flapped(readings.moved, links.contract(self.current_partition.extras),
                                  self.link_findings)
            self.link_findings = "; ".join(f for f in [self.link_findings, *flaps] if f)
        if not_judged:
            # a job that failed still says what carried it, where its output names it: a run
            # forced onto TCP that then hung is named for the transport too
            nodes = set(getattr(self.job, "nodelist", None) or [])
            _, wrong_transport = transport.judge(self, len(nodes) > 1)
            raise SanityError("; ".join([not_judged, *wrong_transport]))
        try:
            result = self.result()
        except ResultError as err:
            raise SanityError(str(err)) from None
        # Before any figure: a run carried by another transport than the partition's measures
        # something else (fabricsuite.data.transport).
        self.rank_hosts = list(dict.fromkeys(str(rank["host"]) for rank in result.ranks
                                             if rank.get("host")))
        across_nodes = len(self.rank_hosts) > 1
        self.transport, wrong_transport = transport.judge(self, across_nodes)
        if wrong_transport:
            raise SanityError(wrong_transport[0])
        self.cpu_wait_fraction, _ = worst_wait(result.ranks)
        self.interference = describe_interference(result.ranks, own=self.sharing_cores_with())
        # netbench's own warnings (a sweep cut short, a size it could not allocate...) reach the
        # session's log and output, not only its result file
        for warning in result.warnings:
            getlogger().warning(f"{self.display_name}: netbench: {warning}")
        tolerated = None
        self.unjudged = self.unreliable_unjudged(result)
        for line in self.unjudged:
            getlogger().warning(f"{self.display_name}: {line}; not judged in this run")
        if self.tolerated_unreliable or self.unjudged:
            pattern = re.compile(self.tolerated_unreliable or "(?!)")
            left_out = unjudged_variables(self.unjudged)
            flagged_figures = {self.metrics[name].column for name in left_out}

            def tolerated(quantity: str) -> bool:
                return bool(pattern.fullmatch(quantity)) or quantity in flagged_figures

            for entry in result.unreliable:
                if pattern.fullmatch(entry.get("quantity", "")):
                    getlogger().warning(
                        f"{self.display_name}: netbench: {entry.get('quantity')} unreliable "
                        f"({entry.get('reason')}); not used by this check"
                    )
        problems = result.problems(self.required_sizes, self.size_table, tolerated,
                                   timed=self.timed)
        for table, key, expected in self.required_variants:
            problems += variant_problems(result, self.required_sizes, table, key, expected)
        try:
            problems.extend(self.extra_problems(result))
        except ResultError as err:
            problems.append(str(err))
        problems += figure_problems(self.metrics, result, unjudged_variables(self.unjudged))
        problems += limits_problems(result, self.metrics)
        if problems:
            raise SanityError("; ".join(problems))
        self.mpi_library = result.mpi_library.splitlines()[0] if result.mpi_library else ""
        self.netbench_version = result.version
        return True

    def parsed_result(self) -> NetbenchResult:
        return self.result()

    def setup_options(self) -> list[str]:
        """netbench options a check decides from its partition, once it is set up (read when
        the command line is made; a subclass's own setup hook would run after it)."""
        return []

    def unreliable_unjudged(self, result: NetbenchResult) -> list[str]:
        """The figures of this check the run leaves out of its verdict (unjudged_figures)."""
        return unjudged_figures(self.metrics, result, self.unjudged_when_unreliable)

    @run_before("performance")
    def leave_out_the_unjudged(self):
        """A variable this run left out of its verdict (`unjudged`) keeps its column in the
        perflog (every record of a perflog has the same columns) but no bound: ReFrame passes
        it, and no baseline, history or compare takes its figure (metrics.unjudged_variables)."""
        left_out = unjudged_variables(self.unjudged)
        if not left_out or not self.reference:
            return
        # ReFrame keeps `reference` as a ScopedDict: its keys are "system:partition:variable"
        for key in list(self.reference):
            name = str(key).rsplit(":", 1)[-1]
            if name in left_out:
                self.reference[key] = (0, None, None, self.metrics[name].unit)


class NetbenchPairCheck(NetbenchCheck):
    """A point-to-point method between two ranks at a topology distance.

    `distance` is a parameter: same-core, same-l2, same-l3, same-package, other-package (two PUs
    of one node, chosen from the node's hwloc topology) or other-node (one rank on each of two
    nodes). Classes the partition's nodes lack are skipped with the reason. The ranks are bound
    by config/launchers/bind-rank, and the check fails when netbench reports that a rank ran
    anywhere else. References are indexed [$partition, $environ, distance].

    Topology: the partition's `extras: {"hwloc_xml": "FILE"}` (recorded once per node type with
    `lstopo --of xml FILE`; relative to config/), or, for a partition with the local scheduler,
    this machine's topology from lstopo.
    """

    distance = parameter(topology.DISTANCES, loggable=True)
    #: The OS CPU indexes ranks 0 and 1 are bound to (empty for other-node).
    bound_cpus = variable(typ.List[int], value=[], loggable=True)

    @run_after("setup")
    def place_the_pair(self):
        partition = self.current_partition
        if self.distance == "other-node":
            nodes = int(partition.extras.get("nodes", 1))
            self.skip_if(nodes < 2, f"{partition.fullname} has {nodes} node(s); other-node needs 2")
            self.num_tasks_per_node = 1
            return
        cpus = getattr(partition.processor, "num_cpus", None)
        self.skip_if(cpus is not None and cpus < 2,
                     f"a node of {partition.fullname} has {cpus} CPU: no intra-node pair")
        xml, source = self._topology_xml(partition)
        pairs = topology.pairs(xml, source)
        if self.distance not in pairs:
            why = topology.missing_reason(self.distance, xml, source)
            self.skip(f"no {self.distance} pair: {why}")
        self.bound_cpus = list(pairs[self.distance])
        self.num_tasks_per_node = 2

    def _topology_xml(self, partition) -> tuple[str, str]:
        recorded = partition.extras.get("hwloc_xml")
        try:
            if recorded:
                path = REPO_ROOT / "config" / recorded
                return path.read_text(), str(path)
            if partition.scheduler.registered_name == "local":
                cache = topology_cache(partition.fullname)
                return topology.local_topology_xml(cache), f"lstopo on {partition.fullname}"
        except (OSError, topology.TopologyError) as err:
            raise SanityError(
                f"{partition.fullname}: cannot read the node topology: {err}"
            ) from None
        self.skip(f"{partition.fullname}: no node topology; record one with `lstopo --of xml "
                  f"FILE` on a compute node and set the partition's extras.hwloc_xml")

    @run_after("setup")
    def bind_the_pair(self):
        # After set_command_line: the binding wrapper goes in front of netbench.
        if self.bound_cpus:
            cpus = ",".join(str(c) for c in self.bound_cpus)
            self.executable_opts = [cpus, self.executable, *self.executable_opts]
            self.executable = shlex.quote(str(BIND_RANK))

    def on_one_node(self) -> bool:
        return self.distance != "other-node"

    def limits_wrapper(self) -> list[str]:
        return [str(BIND_RANK), ",".join(str(c) for c in self.bound_cpus)] \
            if self.bound_cpus else []

    def extra_problems(self, result: NetbenchResult) -> list[str]:
        return placement_problems(result, self.distance, self.bound_cpus)

    def one_rank_per_node(self) -> bool:
        return self.distance == "other-node"


def unjudged_figures(metrics: dict, result: NetbenchResult, pattern: str | None) -> list[str]:
    """"variable: netbench flagged QUANTITY unreliable: its reason" for each summary figure of
    `metrics` that `result` flags unreliable and `pattern` (a check's
    `unjudged_when_unreliable`) leaves out of the run's verdict; [] without a pattern."""
    if not pattern:
        return []
    matches = re.compile(pattern).fullmatch
    reasons = {str(entry.get("quantity", "")): str(entry.get("reason", ""))
               for entry in result.unreliable}
    return [f"{name}: netbench flagged {metric.column} unreliable: {reasons[metric.column]}"
            for name, metric in metrics.items()
            if isinstance(metric, Metric) and metric.table is None
            and metric.column in reasons and matches(metric.column)]


def figure_problems(metrics: dict, result: NetbenchResult, left_out: set[str]) -> list[str]:
    """"variable: why" for each figure of `metrics` the result cannot give, or gives as no
    number (NaN or inf passes every bound ReFrame compares it with); the figures `left_out` of
    the run's verdict (unjudged) need none."""
    problems = []
    for name, metric in metrics.items():
        try:
            value = metric.extract(result)
        except ResultError as err:
            problems.append(f"{name}: {err}")
            continue
        if not is_finite_number(value) and name not in left_out:
            problems.append(f"{name}: {value!r} is no figure (derived from netbench's output, "
                            f"where a number belongs)")
    return problems


def limits_problems(result: NetbenchResult, metrics: dict) -> list[str]:
    """Sanity of the efficiencies: a figure beyond its cores' limit (a measurement error) and
    a cache-line floor that two cores of their own never take (fabricsuite.data.limits)."""
    if result.limits is None:
        return []
    problems = []
    for figure in limits.efficiencies(metrics).values():
        try:
            problem = figure.impossible(result)
        except ValueError:
            continue  # a figure or limit not measured: named by the figure's own problem
        if problem:
            problems.append(problem)
    floor = limits.floor_problem(result.limits)
    return [*problems, floor] if floor else problems


def placement_problems(result: NetbenchResult, distance: str, bound_cpus: list[int]) -> list[str]:
    """Where ranks 0 and 1 really ran (netbench's report) against the distance's placement:
    one node (bound to `bound_cpus`) or two nodes for other-node."""
    problems = []
    ranks = sorted(result.ranks, key=lambda r: r.get("rank", 0))[:2]
    hosts = {r.get("host") for r in ranks}
    if distance == "other-node" and len(hosts) != 2:
        problems.append(f"other-node: both ranks ran on {hosts.pop()}; the launcher did not "
                        f"place one rank per node")
    if distance != "other-node" and len(hosts) != 1:
        problems.append(f"{distance}: the ranks ran on {sorted(hosts)}, not one node")
    for rank, cpu in zip(ranks, bound_cpus, strict=False):
        if rank.get("cpus_bound") != [cpu]:
            problems.append(
                f"{distance}: rank {rank.get('rank')} was bound to CPUs "
                f"{rank.get('cpus_bound')}, not to CPU {cpu} as intended; the binding was "
                f"not honoured, so this is not a {distance} measurement"
            )
    return problems


#: Node counts of the multi-rank checks. A partition with fewer nodes (its `extras: {"nodes": N}`,
#: 1 when not given) skips the larger counts, saying so.
class NetbenchMultiRankCheck(NetbenchCheck):
    """A method where every rank communicates (dense, beff, collectives), at a node count.

    `node_count` is a parameter, so every count is its own test case with its own references
    (index [$partition, $environ, scale], scale = "<nodes>x<ranks per node>"). `placement` is
    one too: per-core fills the nodes, one busy-polling rank per core (the partition's processor
    information); per-node puts one rank on each node.
    """

    node_count = parameter(NODE_COUNTS, type=int, loggable=True)
    #: per-core: full nodes, one rank per core; per-node: one rank per node (the network alone).
    placement = parameter(["per-core", "per-node"], loggable=True)
    #: Ranks per node; None = as `placement` says.
    ranks_per_node = variable(int, type(None), value=None, loggable=True)
    #: "<nodes>x<ranks per node>": the reference index level below the environment.
    scale = variable(str, value="", loggable=True)
    tags = {"multirank", "netbench"}
    #: Time even above the partition's `timing_max_nodes` (emulated nodes sharing cores): the
    #: figures then only exercise the mechanics (launch, scale, reference lookup), so the
    #: references at such scales must have wide bounds.
    timing_on_shared_cores = variable(typ.Bool, value=False, loggable=True)

    def sharing_cores_with(self) -> tuple[str, ...]:
        # Timed on shared cores on purpose: the job's own ranks take each other's CPU.
        return ("netbench",) if self.timing_on_shared_cores else ()

    @run_after("setup")
    def set_scale(self):
        place_on_nodes(self, one_per_node=self.placement == "per-node", timed=self.timed)

    def extra_problems(self, result: NetbenchResult) -> list[str]:
        ranks = result.parameters.get("ranks")
        if ranks != self.num_tasks:
            return [f"netbench ran with {ranks} ranks, the check asked for {self.num_tasks}"]
        return []

    def one_rank_per_node(self) -> bool:
        return self.node_count >= 2 and self.placement == "per-node"

    def on_one_node(self) -> bool:
        return self.node_count == 1


class NetbenchValidationCheck(NetbenchMultiRankCheck):
    """The method's `--validate` mode: every received byte checked, nothing timed."""

    tags = {"multirank", "netbench", "validation"}
    timed = False

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
