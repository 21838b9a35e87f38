"""What every judged check shares, netbench and external suites alike: the noise floor of its
partition, confirmation before alarm, and the records that let a later tool judge its figures.

Confirm before alarm: a session run with ReFrame's `--max-retries=N` (ci/run-local.sh and the
run modes pass N = CONFIRM_ROUNDS) measures every case that failed again, round after round while
it fails; this mixin makes each round wait first (once per round, not per case):
`confirm_pause_s` seconds before round 1, CONFIRM_PAUSE_GROWTH times longer before each next
round (20, 60, 180 s by default), so that a slow phase (this VM's shared-memory latency doubles or
triples for tens of seconds, sometimes minutes) is over before the figure is taken again. A real
regression fails every round and costs only the time; a transient passes one. ReFrame stops
confirming a case at its first pass; the session's verdict weighs every round it ran
(fabricsuite.data.cases.confirmed_variables: outside in more than half of them is a regression).
Every figure stays in the perflog and in the run report (runs[0], runs[1], ...), and
`fabricsuite.commands.session` prints the first, the last and each round's figure. Only a
performance failure waits: a case refused in build or sanity (no result, another transport, a broken
binding) cannot change by waiting for a slow phase, so its confirmation runs at once (`_measured`),
once: a launch that failed by a race gets its second try, and a case refused in both is not
measured a third time (`refuse_a_third_try`: a session on TCP loopback spent 4.7 of its 6.4
minutes running refused cases again).

The pause is taken in a hook that ReFrame has (run_before("run") of a round's first case): ReFrame
4.10 has none between retry rounds. Timing checks run with the serial policy, so nothing of the
session runs meanwhile; under the async policy the pause also holds back the polling of jobs
already running, which delays their end, not their figures.
"""

from __future__ import annotations

import os
import re
import time

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, variable
from reframe.core.exceptions import ReframeError
from reframe.core.logging import getlogger
from reframe.core.runtime import runtime
from reframe.frontend import dependencies

from fabricsuite import MAX_CONFIRM_PAUSE_S, NOT_MEASURED_AGAIN, ROTATION_ENV
from fabricsuite.base.commandline import is_within
from fabricsuite.base.metrics import DEFAULT_FLOOR, INDEX_FIELDS, PerfSpec, key_levels
from fabricsuite.checks import rfm_loading

# before any check class is instantiated: its loading without the warnings nobody sees
rfm_loading.install()

#: Partition default for the pause before a confirmation round (extras.confirm_pause_s).
DEFAULT_CONFIRM_PAUSE_S = 20.0
#: Confirmation rounds the run commands ask ReFrame for (--max-retries): a failed case is measured
#: up to this many more times and judged on all its rounds (session_verdict: the median round).
#: The CI run of 2026-11-24 met a slow phase that outlasted one round after 20 s (collectives 2x
#: slow in both runs, minutes apart).
CONFIRM_ROUNDS = 3
#: Each confirmation round waits this many times longer than the one before.
CONFIRM_PAUSE_GROWTH = 3.0

_paused_before_round = 0
#: The cases whose sanity returned in some round (their figures were judged), by `_identity`: only a
#: performance failure waits for a slow phase to pass. A failure in build or sanity (no result,
#: a wrong transport, a broken binding) does not change by waiting: its confirmation round runs
#: at once (a launch that failed by a race still gets its second try), without the pauses.
_measured: set = set()


def _identity(check) -> tuple:
    return (check.unique_name, check.current_partition.fullname, check.current_environ.name)


# An upstream-compatible wrapper, not a change of ReFrame's behaviour elsewhere. ReFrame 4.10.4
# resolves the dependencies of a retry round's cases among the failed cases of the round before
# only (executors.Runner._retry_failed: `build_deps(failed_cases, cases)`, then
# `cases = failed_cases`), so from the second round on a case whose fixture passed in the first
# run (every netbench check's NetbenchBuild) is dropped with "could not resolve dependency".
# Keeping the session's own cases as the last fallback lets --max-retries=N retry such a case N
# times; nothing else calls build_deps with a fallback, and a call without one passes through.
# tests/test_verdicts.py pins the ReFrame code this relies on: when an upgrade changes it, that
# test fails and names this wrapper.
_session_cases: list = []
_build_deps = dependencies.build_deps


def retry_fallback(default_cases: list) -> list:
    """The cases a retry round may resolve its dependencies among: those ReFrame passes (the
    round before's), then the session's own cases (remembered from the first retry round, whose
    fallback is the whole session) that are not among them."""
    if not _session_cases:
        _session_cases.extend(default_cases)
        return default_cases
    known = {case.check.unique_name for case in default_cases}
    return [*default_cases,
            *(case for case in _session_cases if case.check.unique_name not in known)]


def _build_deps_with_session_fallback(cases, default_cases=None):
    if default_cases is not None:
        default_cases = retry_fallback(default_cases)
    return _build_deps(cases, default_cases)


dependencies.build_deps = _build_deps_with_session_fallback


@sn.deferrable
def _figure_value(check, figure) -> float:
    return figure.extract(check.parsed_result())


def confirm_pause_error(value: object) -> str | None:
    """None, or why `value` cannot be the pause before the first confirmation round (a finite
    number of seconds, 0 to MAX_CONFIRM_PAUSE_S): a negative or NaN one fails in time.sleep with
    a message that names no option, a huge one holds the session for days."""
    if is_within(value, 0, MAX_CONFIRM_PAUSE_S):
        return None
    return (f"confirm_pause_s={value!r}: give the pause before the first confirmation round in "
            f"seconds, 0 to {MAX_CONFIRM_PAUSE_S:g} (-S confirm_pause_s=N, or the partition's "
            f"extras.confirm_pause_s; default {DEFAULT_CONFIRM_PAUSE_S:g})")


def confirm_pause(round_no: int, base_s: float) -> float:
    """Seconds to wait before confirmation round `round_no` (1, 2, ...): `base_s`, then
    CONFIRM_PAUSE_GROWTH times longer each round, so that the rounds together span a slow phase
    that one short pause would not."""
    return base_s * CONFIRM_PAUSE_GROWTH ** max(0, round_no - 1)


#: A node name that may reach `--nodelist` (a reference file is text a person may edit).
_NODE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
#: sbatch options that choose or exclude nodes, long and short forms.
_NODE_OPTIONS = ("--nodelist", "-w", "--exclude", "-x")


def without_node_options(options: list[str]) -> list[str]:
    """`options` less those that choose or exclude nodes ("--nodelist=a,b", "-w a", "-wa",
    "--exclude b"): a confirmation round on known nodes replaces the session's own choice
    (`-J--nodelist=...`), which sbatch would otherwise apply after it, or refuse beside it."""
    kept = []
    for option in options:
        word = option.strip().split("=", 1)[0].split(None, 1)[0] if option.strip() else ""
        if word in _NODE_OPTIONS or any(word.startswith(short) and word != short
                                        for short in ("-w", "-x")):
            continue
        kept.append(option)
    return kept


def natural_key(name: str) -> list:
    """node2 before node10: names sorted as a person reads them."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def rotated_nodes(nodes: list[str], needed: int, rotation: int) -> list[str]:
    """The `needed` nodes session `rotation` of an acceptance runs a case on: the partition's
    nodes in natural order, taken `needed` at a time from node rotation*needed on, round the
    list, so that successive sessions measure other nodes. [] where the case needs every node
    (the all-pairs map, the largest scale): then the scheduler chooses."""
    ordered = sorted(set(nodes), key=natural_key)
    if needed < 1 or needed >= len(ordered):
        return []
    start = (rotation * needed) % len(ordered)
    return [ordered[(start + i) % len(ordered)] for i in range(needed)]


def contract_problems(check_class: type) -> list[str]:
    """What a judged check class breaks of Judged's contract, one line each naming the variable
    and the fix; [] when it keeps it."""
    name = check_class.__name__
    problems = []
    metrics = getattr(check_class, "metrics", None)
    if not isinstance(metrics, dict):
        problems.append(f"{name}.metrics is {type(metrics).__name__}, not a dict of "
                        f"{{variable: Figure}}")
        metrics = {}
    for variable_name, figure in metrics.items():
        if not isinstance(variable_name, str) or not variable_name.isidentifier():
            problems.append(f"{name}.metrics: {variable_name!r} is no variable name (letters, "
                            f"digits and '_')")
        spec = getattr(figure, "spec", None)
        if not callable(getattr(figure, "extract", None)) or not isinstance(spec, PerfSpec):
            problems.append(f"{name}.metrics[{variable_name!r}] is {type(figure).__name__}, not "
                            f"a fabricsuite.base.metrics.Figure (a reader, a unit and a direction)")
    if metrics and check_class.parsed_result is Judged.parsed_result:
        problems.append(f"{name} declares metrics but no parsed_result(): each check family "
                        f"reads its job's output there")
    return problems


class Judged(rfm.RegressionTestPlugin):
    """Variables and hooks shared by every check whose figures are judged.

    The contract a child keeps (checked by `check_contract` once the case is set up, naming
    what is missing or wrong; tests/test_references.py checks every check class offline):

    - by class definition: `metrics`, {variable name: fabricsuite.base.metrics.Figure}, each with a
      reader of the parsed result, a unit and a direction (empty for a check that times
      nothing, such as a validation run);
    - by the performance phase: `parsed_result()`, the job's output parsed once, which every
      Figure reads (the check family implements it: netbench's result file, an external
      suite's parser);
    - nothing else: the floors, confirmation, node placement under Slurm and the records a later
      tool needs (directions, steps, counts) are this base's, from `metrics` and the partition.
    """

    #: Which way is better for each performance variable ("lower", "higher", "equal"), from the
    #: check's declaration; stored with every run so that `fabricsuite baseline` never guesses.
    perf_directions = variable(typ.Dict[str, str], value={}, loggable=True)
    #: Sweep step of each variable that is a size from a geometric sweep (a protocol threshold),
    #: from the check's declaration: `fabricsuite baseline` bounds it in steps.
    perf_size_steps = variable(typ.Dict[str, float], value={}, loggable=True)
    #: Variables that are counts (judged +-1 by `fabricsuite baseline`), from the declaration.
    perf_counts = variable(typ.List[str], value=[], loggable=True)
    #: The step each variable is printed in, where the declaration gives one (PerfSpec
    #: resolution): `fabricsuite baseline` records a figure of too few steps without judging it.
    perf_resolutions = variable(typ.Dict[str, float], value={}, loggable=True)
    #: True for a check whose reference is built in (rules that hold on every system): its runs
    #: never become references through `fabricsuite baseline`.
    reference_builtin = variable(typ.Bool, value=False, loggable=True)
    #: The partition's tolerance floor (extras.tolerance_floor): the narrowest bound a baseline
    #: may give this partition's references, as a fraction. Stored with every run.
    tolerance_floor = variable(float, value=DEFAULT_FLOOR, loggable=True)
    #: The floor of each performance variable: the partition's `tolerance_floor`, or its
    #: `extras.tolerance_floor_by_unit` entry for the variable's unit (an emulated node's
    #: latency is the host's kernel TCP path, with its slow phases; its bandwidth is the shaped
    #: link's). Stored with every run; `fabricsuite baseline` sizes each bound from it.
    perf_floors = variable(typ.Dict[str, float], value={}, loggable=True)
    #: Seconds to wait before the first confirmation round: `-S confirm_pause_s=N` on the
    #: command line, else the partition's extras.confirm_pause_s, else DEFAULT_CONFIRM_PAUSE_S
    #: (None until setup: a value given with -S must win over the partition's).
    confirm_pause_s = variable(float, type(None), value=None)
    #: The machine's key on the embedded default `local` (its own references:
    #: reference/local/<key>.yaml, fabricsuite.data.machine); empty on a center's system.
    machine = variable(str, value="", loggable=True)
    #: The machine's fingerprint in words (CPU model, packages x cores x threads, memory).
    machine_descr = variable(str, value="", loggable=True)
    #: The memory the case's messages leave from and land in: "host" for every check today
    #: (an index level, fabricsuite.base.metrics.INDEX_FIELDS, left out of keys at "host", so
    #: stored references and history stay valid when device-memory cases come).
    memory = variable(str, value="host", loggable=True)
    #: False when the case was measured and recorded without references of its machine (the
    #: embedded default's first sessions); the outcome never calls such a case a pass.
    judged = variable(typ.Bool, value=True, loggable=True)
    #: Whose references judged the case: "machine" (the embedded default's own), "physics"
    #: (none of its own yet: only its efficiencies, against the limits of its cores,
    #: fabricsuite.data.limits),
    #: "system" (a center's reference/<system>.yaml), "" (none).
    reference_origin = variable(str, value="", loggable=True)
    #: The efficiencies whose bad-side bound is their physics floor although a reference file
    #: has an entry for them (recorded only, or bounded looser than physics:
    #: fabricsuite.data.limits.within_physics); the outcome says so beside such a regression.
    physics_bounded = variable(typ.List[str], value=[], loggable=True)
    #: The values another machine of this machine's kind has for this case (the repository's
    #: reference/local/<kind>.yaml), shown in the outcome as information, never a verdict; {}
    #: where the machine has references of its own or the kind has none.
    kind_reference = variable(typ.Dict[str, float], value={}, loggable=True)
    #: That file's kind ("amd-epyc-1x2x1-24gib"); "" without one.
    kind_origin = variable(str, value="", loggable=True)
    #: Run id of this job (check_base.record_exit_status).
    run_id = variable(str, value="")
    #: Files the job writes that must not survive from an earlier run in the stage.
    fresh_outputs = variable(typ.List[str], value=[])
    #: Spread sessions over a Slurm partition's nodes: the first round of session number
    #: `node_rotation` (0, 1, ...) runs a case of N nodes on the partition's available nodes
    #: rotation*N+1 .. rotation*N+N in natural order, round the list (`rotated_nodes`). The
    #: acceptance mode sets it from the count of earlier sessions of its tag (fabricsuite
    #: nightly, through ROTATION_ENV: `-S` would also reach the build fixtures, which have no
    #: such variable), so that its references come from several nodes; None: the scheduler
    #: chooses.
    node_rotation = variable(int, type(None), value=None)

    @run_after("setup", always_last=True)
    def check_contract(self):
        """A child that breaks the contract above fails here, in setup, naming what to fix,
        instead of later with an attribute error or a figure that judges nothing."""
        problems = contract_problems(type(self))
        if problems:
            raise ReframeError("; ".join(problems))

    # last: a child may leave out variables that do not apply to the case at init
    # (rfm_netbench's efficiencies across nodes)
    @run_after("init", always_last=True)
    def declare_directions(self):
        specs = self.perf_specs()
        self.perf_directions = {name: spec.better for name, spec in specs.items()}
        self.perf_size_steps = {name: spec.size_step for name, spec in specs.items()
                                if spec.size_step is not None}
        self.perf_counts = sorted(name for name, spec in specs.items() if spec.count)
        self.perf_resolutions = {name: spec.resolution for name, spec in specs.items()
                                 if spec.resolution is not None}
        # a variable a later hook left out (a promise the partition does not declare) keeps
        # no floor either: the run records the floors of what it judged
        self.perf_floors = {name: floor for name, floor in self.perf_floors.items()
                            if name in specs}

    #: The performance variables: name -> fabricsuite.base.metrics.Figure (how to read it from the
    #: job's parsed result, its unit and direction); the one language of every check family.
    metrics: dict = {}

    def perf_specs(self) -> dict:
        """{variable: fabricsuite.base.metrics.PerfSpec} from `metrics` (for the reference
        loader)."""
        return {name: figure.spec for name, figure in self.metrics.items()}

    def parsed_result(self):
        """The job's output, parsed (each check family implements it)."""
        raise NotImplementedError

    @run_before("performance")
    def set_performance_variables(self):
        self.perf_variables = {
            name: sn.make_performance_function(_figure_value(self, figure), figure.spec.unit)
            for name, figure in self.metrics.items()
        }

    def reference_scope(self) -> dict[str, str]:
        """Where this case's references sit in a reference file: its partition, environment
        and index levels ({"$partition": "local:default", "$environ": "openmpi", "distance":
        "same-l3"}), for every family's reference lookups (fabricsuite.checks.check_base)."""
        scope = {"$partition": self.current_partition.fullname,
                 "$environ": self.current_environ.name}
        for level in INDEX_FIELDS:
            if getattr(self, level, None):
                scope[level] = str(getattr(self, level))
        return scope

    def key_scope(self) -> list[str]:
        """This case's partition, environment and index values as the variables' names across
        tools hold them (metrics.series_key: `_statistics`, history): a level at its default
        (memory "host") left out, as key_levels leaves it."""
        scope = self.reference_scope()
        levels = key_levels({k: v for k, v in scope.items() if not k.startswith("$")})
        return [scope["$partition"], scope["$environ"], *[value for _, value in levels]]

    @run_after("setup")
    def take_partition_tolerances(self):
        extras = self.current_partition.extras
        self.machine = str(extras.get("machine", ""))
        self.machine_descr = str(extras.get("machine_descr", ""))
        self.tolerance_floor = float(extras.get("tolerance_floor", self.tolerance_floor))
        by_unit = extras.get("tolerance_floor_by_unit") or {}
        self.perf_floors = {name: float(by_unit.get(spec.unit, self.tolerance_floor))
                            for name, spec in self.perf_specs().items()}
        pause_s = self.confirm_pause_s
        if pause_s is None:
            pause_s = extras.get("confirm_pause_s", DEFAULT_CONFIRM_PAUSE_S)
        why = confirm_pause_error(pause_s)
        if why:
            raise ValueError(why)  # the case fails in setup, with the one line that names it
        self.confirm_pause_s = float(pause_s)

    @run_before("run")
    def confirm_on_known_nodes(self):
        """Under Slurm, a confirmation round runs on nodes the case's references were taken on
        (`--nodelist`): a failure on a node they never saw then tells a node outlier (passes on
        known nodes) from a regression (fails there too):
        fabricsuite.data.session_verdict.node_outlier."""
        from fabricsuite import SLURM_SCHEDULERS
        from fabricsuite.data.references import ReferenceFileError, reference_nodes

        partition = self.current_partition
        if (runtime().current_run == 0
                or partition.scheduler.registered_name not in SLURM_SCHEDULERS):
            return
        try:
            known = reference_nodes(self.current_system.name, type(self).__name__,
                                    self.key_scope(), machine=self.machine or None)
        except ReferenceFileError:
            return  # the reference loader names a broken file
        needed = self.nodes_needed()
        known = [n for n in known if _NODE_NAME.fullmatch(n)]  # reaches sbatch: names only
        if known and len(known) >= needed:
            self.pin_to(known[:needed])
            getlogger().info(f"{self.display_name}: confirming on {', '.join(known[:needed])}, "
                             f"nodes its references were taken on")

    @run_before("run")
    def spread_over_nodes(self):
        """The first round of an acceptance session runs on the nodes its rotation names
        (`node_rotation`), under Slurm, where the case needs fewer nodes than the partition's
        available ones; the confirmation rounds are confirm_on_known_nodes'."""
        from reframe.core.exceptions import JobSchedulerError

        from fabricsuite import SLURM_SCHEDULERS

        if self.node_rotation is None and os.environ.get(ROTATION_ENV, "").isdigit():
            self.node_rotation = int(os.environ[ROTATION_ENV])
        partition = self.current_partition
        if (self.node_rotation is None or runtime().current_run != 0
                or partition.scheduler.registered_name not in SLURM_SCHEDULERS
                or not self.num_tasks or self.num_tasks < 1):
            return
        scheduler = partition.scheduler
        try:
            nodes = scheduler.filternodes_by_state(
                scheduler.filternodes(self.job, scheduler.allnodes()), "avail")
        except JobSchedulerError as err:
            getlogger().warning(f"{self.display_name}: not spread over nodes, the scheduler "
                                f"could not list them ({err}); Slurm chooses")
            return
        chosen = rotated_nodes([n.name for n in nodes if _NODE_NAME.fullmatch(n.name)],
                               self.nodes_needed(), self.node_rotation)
        if chosen:
            self.pin_to(chosen)
            getlogger().info(f"{self.display_name}: on {', '.join(chosen)} (acceptance session "
                             f"{self.node_rotation + 1}: sessions spread over the nodes)")

    def nodes_needed(self) -> int:
        """How many nodes the case's job takes: its node count, else its tasks per node."""
        per_node = self.num_tasks_per_node or self.num_tasks or 1
        return getattr(self, "node_count", None) or -(-(self.num_tasks or 1) // per_node)

    def pin_to(self, nodes: list[str]) -> None:
        """Run the job on exactly `nodes` (ReFrame's own pinning, as --distribute does), and
        drop the session's node choice from the job options, which sbatch would apply after
        it (ReFrame 4.10 keeps -J options in the job's private _cli_options)."""
        self.job.pin_nodes = list(nodes)
        self.job.options = without_node_options(list(self.job.options))
        if hasattr(self.job, "_cli_options"):
            self.job._cli_options = without_node_options(list(self.job.cli_options))

    # after sanity, not before performance: ReFrame 4.10 enters the performance stage of a case
    # whose sanity failed too (its pre-performance hooks run), so only a sanity that returned
    # marks the case as measured
    @run_after("sanity")
    def note_measured(self):
        _measured.add(_identity(self))

    # declared before pause_before_confirming: a refused case neither waits nor runs
    @run_before("run")
    def refuse_a_third_try(self):
        """A case that failed before its figures were judged in the first run and in its
        confirmation fails its next rounds at once, without running: waiting cannot change a
        wrong transport or a broken binding. Its phase and reason are its last round that ran
        (fabricsuite.data.cases.Case.last_ran)."""
        # ReFrame runs a case in round 2 only when it failed in rounds 0 and 1; one not
        # `_measured` failed in both before its figures were judged
        if runtime().current_run >= 2 and _identity(self) not in _measured:
            raise ReframeError(
                f"{NOT_MEASURED_AGAIN}: it failed before its figures were judged in the first run "
                f"and in its confirmation (build, sanity or launch), which waiting cannot change; "
                f"the reason is the round before")

    @run_before("run")
    def pause_before_confirming(self):
        global _paused_before_round
        current = runtime().current_run
        if current > _paused_before_round and _identity(self) in _measured:
            _paused_before_round = current
            pause_s = confirm_pause(current, self.confirm_pause_s)
            getlogger().info(
                f"confirmation round {current}: measuring the failed cases again after a "
                f"{pause_s:g} s pause (a transient slow phase must not fail a check)"
            )
            time.sleep(pause_s)
