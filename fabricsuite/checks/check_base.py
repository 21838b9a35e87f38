"""The mechanics every check family shares (check layer): netbench's checks
(fabricsuite.checks.rfm_netbench) and the external suites' (fabricsuite.checks.rfm_external) both
build on fabricsuite.checks.judged_check's `Judged` and take from here how a job records that it
ran to its end
(`record_exit_status`, `exit_status_problem`), how a case finds its references
(`load_references`: the machine's own, the physics floors of its efficiencies, the fabric's
promise) and how a multi-rank case is placed on the nodes of its partition (`place_on_nodes`).
Neither family imports the other.
"""

from __future__ import annotations

import os
import shlex
import uuid
from pathlib import Path
from typing import Any

from reframe.core.logging import getlogger

from fabricsuite.base.metrics import absolute_references, scale_label
from fabricsuite.data import counters, limits, links
from fabricsuite.data.references import (
    NoReferenceFile,
    ReferenceFileError,
    external_reference,
    kind_references,
    known_findings,
    scoped_references,
)

#: Written by the job script right after the launcher returns: its exit status and the run id
#: of the job that wrote it, so that sanity judges only a complete run of this very job.
EXIT_STATUS_FILE = "launcher-exit-status"


def record_exit_status(test) -> None:
    """Make `test`'s job script remove stale outputs before the program runs and record the
    launcher's exit status with a fresh run id after it (see `exit_status_problem`)."""
    test.run_id = uuid.uuid4().hex
    stale = [EXIT_STATUS_FILE, *getattr(test, "fresh_outputs", [])]
    test.prerun_cmds = [*test.prerun_cmds, "rm -f " + " ".join(
        [*(shlex.quote(f) for f in stale), *counters.STALE])]
    # Directly after the launcher line: $? is the launcher's exit status.
    test.postrun_cmds = [f'echo "$? {test.run_id}" > {EXIT_STATUS_FILE}', *test.postrun_cmds]


def exit_status_problem(test) -> str | None:
    """None when this job's launcher ran to the end and exited 0; else why the figures of the
    job must not be judged."""
    path = os.path.join(test.stagedir, EXIT_STATUS_FILE)
    try:
        fields = Path(path).read_text().split()
    except OSError:
        return ("the job did not run to its end (no exit status recorded: killed, timed out or "
                "the job script failed before the program); its output is not judged")
    if len(fields) != 2 or fields[1] != getattr(test, "run_id", None):
        return (f"{EXIT_STATUS_FILE} was not written by this job (run id mismatch): a stale "
                f"stage; its output is not judged")
    if fields[0] != "0":
        return (f"the launcher exited with status {fields[0]}; a failed job is never judged on "
                f"its figures (see the job's stderr)")
    return None


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


def builtin_references(test) -> None:
    """The references of a check whose rules hold on every system (`reference_builtin`): 0 with
    no tolerance for every variable, and no baseline needed. The system's reference file may only
    add known findings (a violation of the installed library that the center has seen and filed),
    each an explicit entry with its reason in a comment; `fabricsuite baseline` never writes
    them. The embedded default on a machine without such a section takes those of another
    machine of its kind: a finding is the MPI library's, not the machine's."""
    where, known = known_findings(test.current_system.name, type(test).__name__,
                                  test.reference_scope(), test.perf_specs(),
                                  machine=test.machine or None)
    for name in known:
        getlogger().info(f"{test.display_name}: {name}: a known finding, reference "
                         f"{known[name]} from {where}")
    test.reference = {"*": {name: known.get(name, (0, None, 0, metric.unit))
                            for name, metric in test.metrics.items()}}


def load_references(test) -> None:
    """Point `test.reference` at reference/<system>.yaml (or $RFM_REFERENCE_PREFIX/<system>.yaml).

    The file is validated first: a missing or broken one stops the test with a message that
    names it, instead of ReFrame silently using no reference. (ReFrame 4.10.4's configuration
    schema rejects general/reference_prefix, so the environment variable is the one way to point
    elsewhere.) Bootstrapping a new system (`-S require_reference=false`): run without
    references, then derive them from the stored runs with `fabricsuite baseline`. A test without
    performance variables (validation) needs none.
    """
    if not test.metrics:
        return
    if test.reference_builtin:
        builtin_references(test)
        return
    name = type(test).__name__
    scope = test.reference_scope()
    system = test.current_system.name
    machine = test.machine  # the case's own machine key (judged_check.Judged, from its partition)
    specs = test.perf_specs()
    physics = {name: limits.physics_reference(figure)
               for name, figure in limits.efficiencies(test.metrics).items()}
    # counts no healthy run has on any machine (a bad pair of the map): judged from the first
    # day, and wherever the file has no entry of its own for them (metrics.Figure.absolute)
    absolute = absolute_references(test.metrics)
    # the fabric's promise, from the partition's contract: judged on every machine and day,
    # never replaced by a reference file's entry (a machine's own history)
    figures = links.promised_figures(test.metrics)
    promise = links.contract(test.current_partition.extras) if figures else None
    promised = {name: links.promise_reference(promise, figure)
                for name, figure in figures.items()} if promise else {}
    try:
        own = scoped_references(system, name, scope, specs, machine=machine) if machine else {}
        if machine and not own:
            # The embedded default on a machine without references of this case: measured and
            # recorded, never judged as this machine's own (fabricsuite.data.machine). Judged only
            # against what the hardware can do (its efficiencies' physics floors,
            # fabricsuite.data.limits); another machine of its kind is information in the outcome.
            test.require_reference = False
            test.judged = False
            kind_file, kind = kind_references(machine, name, scope, specs)
            if kind:
                test.kind_reference = kind
                test.kind_origin = kind_file.stem
            if physics or promised or absolute:
                test.reference = {test.current_partition.fullname: {**absolute, **physics,
                                                                    **promised}}
                test.reference_origin = limits.PHYSICS_ORIGIN
            getlogger().info(
                f"{test.display_name}: no references for this machine yet ({machine}): "
                f"measured and recorded" + (
                    f"; judged only against the limits of its cores ({', '.join(physics)})"
                    if physics else ", not judged"))
            return
        test.reference = external_reference(system, name, scope=scope, specs=specs,
                                            machine=machine)
        test.reference_origin = "machine" if machine else "system"
        if physics or promised or absolute:
            # The file's entries, and each efficiency it has none of judged by its physics floor
            # (a center's file from before the efficiencies still judges them from physics);
            # an efficiency the file bounds looser than physics, or records only, is held to
            # its physics floor (limits.within_physics).
            entries = dict(own or scoped_references(system, name, scope, specs))
            for variable, entry in entries.items():
                held = (limits.within_physics(entry, physics[variable])
                        if variable in physics and entry and entry[0] != "$xfail" else None)
                if held is not None:
                    entries[variable] = held
                    test.physics_bounded = [*test.physics_bounded, variable]
            test.reference = {test.current_partition.fullname: {
                **{variable: ref for variable, ref in {**absolute, **physics}.items()
                   if variable not in entries},
                **{variable: reframe_reference(ref) for variable, ref in entries.items()
                   if variable not in promised},
                **promised}}
    except ReferenceFileError as err:
        # a new system's acceptance runs without a file (-S require_reference=false); a file
        # that exists but cannot be believed (broken, another machine's or kind's) fails the
        # case with its one line, never a warning above a green outcome
        if test.require_reference or not isinstance(err, NoReferenceFile):
            raise
        getlogger().warning(f"{name}: running without references: {err}")
        if promised or absolute:
            # a new fabric's acceptance, before its references: judged against its promise,
            # and the counts no healthy run has
            test.reference = {test.current_partition.fullname: {**absolute, **promised}}


def reframe_reference(entry: tuple) -> Any:
    """A validated reference entry as ReFrame takes it in a `reference` dict: a tuple, or an
    expected failure (`["$xfail", reason, [value, lower, upper, unit]]`) as ReFrame's own
    reader of a reference file makes it."""
    if entry and entry[0] == "$xfail":
        from reframe.core.builtins import xfail

        return xfail(*entry[1:-1], tuple(entry[-1]))
    return tuple(entry)


def place_on_nodes(test, one_per_node: bool = False, timed: bool = True) -> None:
    """Give a multi-rank test `test.node_count` nodes of its partition, or skip with the reason.

    Ranks per node: `test.ranks_per_node` when set, else one (`one_per_node`) or one per core
    (the partition's processor information). Sets num_tasks, num_tasks_per_node and `scale`
    ("<nodes>x<ranks per node>", the reference index level).
    """
    partition = test.current_partition
    nodes = int(partition.extras.get("nodes", 1))
    test.skip_if(
        test.node_count > nodes,
        f"{partition.fullname} has {nodes} node(s), this case needs {test.node_count}",
    )
    cores = cores_per_node(partition)
    # Where the check also has the per-core case, that one runs on nodes of 1 core (the all-pairs
    # map has the per-node case only).
    has_per_core = "per-core" in type(test).param_space["placement"]
    test.skip_if(
        one_per_node and cores == 1 and not test.ranks_per_node and has_per_core,
        f"a node of {partition.fullname} has 1 core: per-node is the per-core case",
    )
    per_node = test.ranks_per_node or (1 if one_per_node else cores)
    test.skip_if(
        per_node is None,
        f"{partition.fullname}: no processor information (cores per node); add "
        f"'processor' to its configuration or set -S ranks_per_node=N",
    )
    test.skip_if(per_node * test.node_count < 2, "needs at least 2 ranks")
    # Emulated nodes share the machine's cores: beyond `timing_max_nodes` a timing is
    # meaningless (validation runs still go there: launch, placement, data).
    timing_max = partition.extras.get("timing_max_nodes")
    test.skip_if(
        timed and not test.timing_on_shared_cores and timing_max is not None
        and test.node_count > int(timing_max),
        f"{partition.fullname}: above {timing_max} nodes the nodes share cores, so timings "
        f"are meaningless there (validation runs cover this scale; "
        f"-S timing_on_shared_cores=true times it anyway, for the mechanics)",
    )
    test.num_tasks = per_node * test.node_count
    test.num_tasks_per_node = per_node
    test.scale = scale_label(test.node_count, per_node)
