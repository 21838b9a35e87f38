"""One stored test case, as every workflow reads it: the data layer's case model.

A session's run report (ReFrame 4.10's JSON, RESULTS/reports/run-report-*.json, and the same
document in the results database) holds, per round (`runs`: the first run, then each
confirmation round of --max-retries), the test cases that ran in it. A *case* is one test case
of one session: its check and scope (partition, environment, distance or scale), its first run
and its last (a case retried ends in the last round that has it; --repeat gives separate
cases), its figures with their declarations, the evidence of where and how it ran, and one
health class. `baseline` and the automatic references, `history` and `compare`, the `report`
and the session's and nightly's verdicts read cases here and take this module's health rule;
none keeps its own.

Health classes (HEALTH), decided on the last run against the first:

- ``passed``: within its references (an expected failure that failed as expected counts too);
- ``recorded``: measured without references of its machine (the embedded default's first
  sessions; judged at most against another machine of its kind at a 2x bound);
- ``transient``: outside its references in no more than half of its rounds, per variable (the
  confirmation disagreeing: a slow phase);
- ``regression``: outside its references in more than half of the rounds that measured it, on
  some variable (the median round outside), even where the last round, at which ReFrame stops
  confirming, lay inside;
- ``disturbed``: its ranks waited for their CPUs beyond fabricsuite.data.interference's threshold
  (another process on its cores, seen or not): its figures say nothing about the fabric, pass
  or fail;
- ``broken``: no figure could be judged (build, launch, sanity, a missing reference, an abort,
  a dependency that failed), or its reference is stale (a known finding, `$xfail`, no longer
  fails: `stale_known_finding`);
- ``interrupted``: the session was ended by a signal before it could judge (`fabricsuite
  nightly` keeps such reports as interrupted-*.json).

A disturbed, broken or interrupted run is never a reference sample, a history point or a
compare sample (`is_sample`); a transient's and a regression's figures are history (a
regression is exactly a figure that fails its reference; it must stay in the history), but
only quiet passes and recorded runs become references.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

from fabricsuite import NOT_MEASURED_AGAIN
from fabricsuite.base.metrics import case_scope, is_number, perf_variable

PASSED, RECORDED, TRANSIENT, REGRESSION = "passed", "recorded", "transient", "regression"
DISTURBED, BROKEN, INTERRUPTED = "disturbed", "broken", "interrupted"
#: ReFrame's results of a case its session aborted.
ABORTED = ("abort", "aborted")
#: Every health class, best first.
HEALTH = (PASSED, RECORDED, TRANSIENT, REGRESSION, DISTURBED, BROKEN, INTERRUPTED)
#: Classes whose figures are the check's complete job on a quiet node: history and compare.
MEASURED = (PASSED, RECORDED, TRANSIENT, REGRESSION)

#: ReFrame's reason for a variable without a reference (`require_reference`)
MISSING_REFERENCE = "no reference value found"
#: ReFrame's result of a case it did not run because a case it depends on failed (the build)
FAIL_DEPS = "fail_deps"
#: ReFrame 4.10's performance-phase failure of a case without a reference for a variable
#: (reframe/core/pipeline.py, formatted by reframe.core.exceptions.what): its figures are sound.
_NO_REFERENCE_ONLY = re.compile(
    r"performance error: no reference value found for performance variable '[^'\n]*' "
    r"on system '[^'\n]*'")


def case_key(case: dict) -> tuple:
    """A test case's identity across a session's rounds: (test, system, partition, environ)."""
    # unique_name tells repeats (--repeat) apart; a retry keeps its case's
    return (case.get("unique_name") or case.get("name"), case.get("system"),
            case.get("partition"), case.get("environ"))


def runs_of(report: dict) -> list[list[dict]]:
    """The test cases of each round of a run report, malformed entries left out."""
    rounds = []
    for run in report.get("runs") or []:
        cases = run.get("testcases") if isinstance(run, dict) else None
        rounds.append([c for c in cases if isinstance(c, dict)] if isinstance(cases, list)
                      else [])
    return rounds


def final_cases(report: dict) -> list[dict]:
    """Each test case's last outcome: a case retried (--max-retries) ends in the last run
    that has it; repeats (--repeat) stay separate cases."""
    last: dict[tuple, dict] = {}
    for cases in runs_of(report):
        for case in cases:
            last[case_key(case)] = case
    return list(last.values())


def first_runs(report: dict) -> dict[tuple, dict]:
    """The first failed run of every case that was run again (--max-retries), by case_key."""
    first: dict[tuple, dict] = {}
    for cases in runs_of(report)[:-1]:
        for case in cases:
            if case.get("result") == "fail":
                first.setdefault(case_key(case), case)
    return first


def ran_nothing(case: dict) -> bool:
    """A case ReFrame skipped, or did not run because a case it depends on failed."""
    return case.get("result") in ("skip", FAIL_DEPS)


def is_fixture(case: dict) -> bool:
    """A fixture (netbench's build): no test of the fabric."""
    return bool(case.get("fixture"))


def unjudged(case: dict) -> bool:
    """Measured without references of its machine (the check's `judged` false): recorded."""
    return case.get("judged") is False


class RunFigure(NamedTuple):
    """One figure of a case's run as its run report holds it (an entry of ReFrame's
    `perfvalues`: [value, reference, lower, upper, unit, result]), by name: the one reading of
    those positions, so that no command indexes them (tests/test_architecture.py)."""

    #: The report's key ("local:default:bandwidth_1MiB_MBps").
    key: str
    value: Any
    reference: Any
    #: The bounds, fractions of the reference (None: unbounded on that side).
    lower: Any
    upper: Any
    unit: str
    #: ReFrame's verdict of the figure: "pass", "fail", "xfail", "xpass", "" where not recorded.
    result: str = ""

    @property
    def variable(self) -> str:
        return perf_variable(self.key)

    @property
    def failed(self) -> bool:
        return self.result == "fail"

    @property
    def number(self) -> float | None:
        """The value where it is a finite number, else None."""
        return float(self.value) if is_number(self.value) and math.isfinite(self.value) else None

    @property
    def change(self) -> float | None:
        """(value - reference) / |reference| where both are finite numbers and the reference
        is not 0."""
        ref = self.reference
        if self.number is None or not is_number(ref) or not math.isfinite(ref) or not ref:
            return None
        return (self.number - ref) / abs(ref)


def run_figures(case: dict | None) -> list[RunFigure]:
    """The figures of a case's run, in the report's order; an entry that is no [value,
    reference, lower, upper, unit(, result)] list is left out (`malformed_figures`)."""
    values = (case or {}).get("perfvalues")
    if not isinstance(values, dict):
        return []
    return [RunFigure(str(key), *entry[:5], str(entry[5]) if len(entry) > 5 else "")
            for key, entry in values.items() if isinstance(entry, list) and len(entry) >= 5]


def run_figure(case: dict | None, key: str) -> RunFigure | None:
    """The figure of `case` under the report's `key`, or None."""
    return next((f for f in run_figures(case) if f.key == key), None)


def malformed_figures(case: dict) -> list[tuple[str | None, Any]]:
    """(key, entry) of a case's `perfvalues` entries that are no figure: not a list of at least
    five, no unit, a value that is neither a number nor null; (None, it) where `perfvalues` is
    no table."""
    values = case.get("perfvalues") or {}
    if not isinstance(values, dict):
        return [(None, values)]  # no table of figures at all
    return [(key, entry) for key, entry in values.items()
            if not isinstance(entry, list) or len(entry) < 5 or not isinstance(entry[4], str)
            or not (entry[0] is None or is_number(entry[0]))]


def failed_variables(case: dict) -> set[str]:
    """The performance variables a case's run found outside their references."""
    return {f.variable for f in run_figures(case) if f.failed}


def unexpected_passes(case: dict) -> set[str]:
    """The variables whose expected failure ($xfail: a known finding) a case's run met
    unexpectedly (ReFrame's `xpass`; the case's result is `fail`)."""
    return {f.variable for f in run_figures(case) if f.result == "xpass"}


def stale_known_finding(case: dict) -> bool:
    """A run that failed only because known findings no longer fail (an $xfail reference met):
    the reference is stale, a person updates it; not a transient of the fabric (every round
    xpass had been read as outside in none, a transient, and PASSED)."""
    return (case.get("result") == "fail" and case.get("fail_phase") == "performance"
            and bool(unexpected_passes(case)) and not failed_variables(case))


def confirmed_variables(case: dict, first: dict | None,
                        rounds: list[dict] | None = None) -> set[str]:
    """The variables a regression is confirmed on. With `rounds` (every run of the case, first
    to last: rounds_by_case), the rule that weighs every round: a variable is confirmed when it
    lies outside its references in more than half of the rounds that measured it (the median
    round is outside), so a last round inside does not undo two rounds 5x outside, and one
    round outside against one inside is a transient. Without `rounds`, the rule before it
    (kept for the comparison in bench/confirmation_rules.py): the variables of the last run
    that were outside in its first run too; without a first run that failed on performance
    every failing variable counts."""
    if rounds:
        failing = set().union(*(failed_variables(run) for run in rounds))
        return {variable for variable in failing
                if _outside_in_most(variable_outside(rounds, variable))}
    failing = failed_variables(case)
    if first is None or first.get("fail_phase") != "performance":
        return failing
    return failing & failed_variables(first)


def variable_outside(rounds: list[dict], variable: str) -> list[bool]:
    """Per round that measured `variable`, whether it lay outside its references. A round
    refused in sanity measured nothing; a disturbed round is left out where the last round was
    quiet (its figure says nothing of the fabric); where the last round was disturbed every
    round counts (the question then is whether the rounds upheld the failure: interference, or
    a transient)."""
    measured = [run for run in rounds
                if run.get("result") in ("pass", "fail") and not did_not_measure(run)]
    # a last round disturbed: did the rounds uphold its failure (interference) or not
    # (a transient); else the quiet rounds alone
    weighed = measured if measured and disturbance(measured[-1]) else [
        run for run in measured if not disturbance(run)]
    flags = []
    for run in weighed:
        for key, perf in (run.get("perfvalues") or {}).items():
            if perf_variable(key) == variable and isinstance(perf, list) and len(perf) > 5:
                flags.append(perf[5] == "fail")
    return flags


def _outside_in_most(flags: list[bool]) -> bool:
    return sum(flags) * 2 > len(flags)


def rounds_by_case(report: dict) -> dict[tuple, list[dict]]:
    """Every run of every case, first round to last, by case_key."""
    found: dict[tuple, list[dict]] = {}
    for cases in runs_of(report):
        for case in cases:
            found.setdefault(case_key(case), []).append(case)
    return found


def did_not_measure(case: dict) -> bool:
    """Broken before any figure could be judged: build, launch, sanity, reference, abort."""
    if case.get("result") == FAIL_DEPS:
        return True  # not run: what it depends on (the build) is broken
    if case.get("result") not in ("fail", "abort", "aborted", "error"):
        return False
    return (case.get("fail_phase") != "performance"
            or MISSING_REFERENCE in str(case.get("fail_reason") or ""))


def unconfirmed(case: dict, first: dict | None, rounds: list[dict] | None = None) -> bool:
    """A performance failure that no variable confirms (confirmed_variables): the rounds
    disagree, a transient (a slow phase)."""
    return (case.get("result") == "fail" and not did_not_measure(case)
            and not confirmed_variables(case, first, rounds))


def disturbance(case: dict) -> str:
    """"" for a run whose node was quiet, else what took its ranks' CPUs (the check's
    `interference`, fabricsuite.data.interference: a program seen, or a wait nothing seen
    explains)."""
    return str(case.get("interference") or "")


def disturbed_rounds(case: dict, rounds: list[dict] | None) -> bool:
    """Whether the rounds that decide a case were disturbed, by the rule that decides a
    regression (the median round, confirmed_variables): more than half of its measured rounds
    (the last alone where it ran once). Three quiet rounds outside and a disturbed fourth are
    the quiet rounds' verdict, not interference."""
    measured = [r for r in rounds or [case] if not did_not_measure(r)] or [case]
    return sum(1 for r in measured if disturbance(r)) * 2 > len(measured)


def is_interfered(case: dict) -> bool:
    """A performance failure of a run whose node was not quiet: its ranks waited for their
    CPUs, so the figures say nothing about the fabric. A missing reference is not: it is
    missing whatever the node's noise (did_not_measure)."""
    return (case.get("result") == "fail" and case.get("fail_phase") == "performance"
            and not did_not_measure(case) and bool(disturbance(case)))


def health(case: dict, first: dict | None = None, interrupted: bool = False,
           rounds: list[dict] | None = None) -> str:
    """The one health class (HEALTH) of a case's last run `case`, `first` its first failed
    run where it was confirmed, `interrupted` for a session ended by a signal, `rounds` every
    run of it (the rule that weighs every round, confirmed_variables; without them the rule
    before it)."""
    if interrupted:
        return INTERRUPTED
    if stale_known_finding(case):
        return BROKEN  # its reference must change (session.classify names it)
    if did_not_measure(case) or case.get("result") not in ("pass", "fail", "xfail", "xpass"):
        if (case.get("result") == "fail" and case.get("fail_phase") == "performance"
                and _NO_REFERENCE_ONLY.fullmatch(str(case.get("fail_reason") or "").strip())
                and case.get("judged") is False):
            return RECORDED  # measured, nothing to judge it by (require_reference)
        return BROKEN
    if disturbance(case) and disturbed_rounds(case, rounds):
        return DISTURBED
    if case.get("result") in ("pass", "xfail", "xpass"):
        if case.get("result") == "pass" and rounds and len(rounds) > 1 and \
                confirmed_variables(case, first, rounds):
            # outside in most rounds, inside only in the last: ReFrame stops confirming at the
            # first pass, the median round still lies outside
            return REGRESSION
        # xpass: a known finding (an $xfail reference) no longer fails; not a reference sample
        return RECORDED if case.get("judged") is False else PASSED
    if unconfirmed(case, first, rounds):
        return TRANSIENT
    return REGRESSION


def sample_problem(case: dict) -> str | None:
    """For one run taken alone (every round counts in a baseline): None when its figures may
    become references, else why not, in words that follow a count ("3 were disturbed")."""
    result = case.get("result")
    if result in ("pass", "fail") and not did_not_measure(case) and disturbance(case):
        return "were disturbed (another process took their CPUs)"
    if result == "pass":
        return None
    phase = case.get("fail_phase")
    if result == "fail" and phase == "performance":
        if _NO_REFERENCE_ONLY.fullmatch(str(case.get("fail_reason") or "").strip()):
            return None
        return "failed their performance reference"
    if result == "fail":
        return f"failed in {phase or 'an unknown phase'}"
    if result == "xfail":
        return "failed an expected-failure ($xfail) reference"
    if result == "xpass":
        return "passed an expected-failure ($xfail) reference"
    if result == "abort":
        return "were aborted"
    return f"had result {result!r}"


def is_sample(case: dict) -> bool:
    """Whether a run's figures may become references (sample_problem is None)."""
    return sample_problem(case) is None


def disturbers(cause: str) -> list[str]:
    """The program names in a disturbance line ("... taken by: f951(25428):27%,
    python(10122):50%" gives ["f951", "python"]; a wait nothing seen explains gives
    ["unseen processes"])."""
    _, _, takers = cause.partition("taken by: ")
    names = []
    for entry in takers.split(", "):
        if entry.startswith("processes gone"):
            names.append("unseen processes")
        elif entry:
            names.append(entry.split("(", 1)[0])
    return names or (["another process"] if cause else [])


@dataclass(frozen=True)
class Evidence:
    """Where and how a case's last run ran."""

    #: The hosts its job ran on (ReFrame's job node list), by host name; the embedded default's
    #: stable host identity is its machine key (fabricsuite.data.machine).
    nodes: tuple[str, ...]
    #: The transport its MPI chose (fabricsuite.data.transport), "" where not recorded.
    transport: str
    #: The largest share of the run a rank waited for its CPU, None where not recorded.
    cpu_wait: float | None
    #: "" on a quiet node, else what took its CPUs.
    disturbance: str
    #: The troubled fabric counters that moved during the job, "" for none.
    counters: str


@dataclass(frozen=True)
class Case:
    """One test case of one session (see the module's docstring)."""

    check: str
    system: str
    #: "system:partition"
    partition: str
    environ: str
    #: The index levels below the environment: (("distance", "same-l3"),) or (("scale", ...),).
    levels: tuple[tuple[str, str], ...]
    session: str
    #: Session start (Unix seconds) or None.
    started: float | None
    last: dict
    first: dict | None
    health: str
    evidence: Evidence
    #: Every run of the case, first round to last (the first run, each confirmation round).
    rounds: tuple[dict, ...] = ()

    @property
    def machine(self) -> str:
        return str(self.last.get("machine") or "")

    @property
    def last_ran(self) -> dict:
        """Its last round that ran: a round that refused to measure again a case refused in
        build or sanity twice (NOT_MEASURED_AGAIN, fabricsuite.checks.judged_check) says only that;
        the failure it stands for is the round's before."""
        for run in reversed(self.rounds or (self.last,)):
            # ReFrame writes the refusal as "reframe error: not measured again: ..."
            if f"{NOT_MEASURED_AGAIN}: " not in str(run.get("fail_reason") or ""):
                return run
        return self.last

    def figures(self) -> dict[str, tuple[float, str, str | None]]:
        """{variable: (value, unit, direction)} of the last run's finite figures."""
        directions = self.last.get("perf_directions")
        directions = directions if isinstance(directions, dict) else {}
        found = {}
        for key, perf in (self.last.get("perfvalues") or {}).items():
            if (isinstance(perf, list) and len(perf) >= 5 and is_number(perf[0])
                    and math.isfinite(perf[0])):
                variable = perf_variable(key)
                found[variable] = (float(perf[0]), str(perf[4]), directions.get(variable))
        return found


def node_names(job_nodelist: object) -> tuple[str, ...]:
    """The nodes of a run report's `job_nodelist`, one name each: ReFrame stores a list under
    Slurm, whose entries may be Slurm host lists ("fsemu[1-2]"), and the host's name under
    `local`; an entry that is no valid host list stays as it is."""
    from fabricsuite.data.hostlists import TopologyError, expand_hostlist

    entries = (job_nodelist if isinstance(job_nodelist, list)
               else [job_nodelist] if isinstance(job_nodelist, str) and job_nodelist else [])
    names: list[str] = []
    for entry in entries:
        try:
            names += expand_hostlist(str(entry))
        except TopologyError:
            names.append(str(entry))
    return tuple(names)


#: ReFrame's node list of a Slurm job whose nodes sacct had not reported when the job ended
#: before the first poll (`scontrol show hostname None`): no node of the job.
UNREPORTED_NODE = "None"


def job_nodes(case: dict) -> tuple[str, ...]:
    """The nodes a case's job ran on: the scheduler's list, else (a job that ended before
    ReFrame's first poll, its Slurm node list unreported) the hosts its ranks reported
    (`rank_hosts`, netbench's checks)."""
    nodes = tuple(n for n in node_names(case.get("job_nodelist")) if n != UNREPORTED_NODE)
    hosts = case.get("rank_hosts")
    if not nodes and isinstance(hosts, list):
        nodes = tuple(str(host) for host in hosts if host)
    return nodes


def evidence(case: dict) -> Evidence:
    nodes = job_nodes(case)
    wait = case.get("cpu_wait_fraction")
    return Evidence(nodes=nodes, transport=str(case.get("transport") or ""),
                    cpu_wait=float(wait) if is_number(wait) else None,
                    disturbance=disturbance(case), counters=str(case.get("counters") or ""))


def was_interrupted(report: dict) -> bool:
    """Whether a session was ended by a signal: ReFrame aborts every case left on SIGTERM or
    SIGINT, so a report with an aborted case is one, also where no nightly survived to keep it
    apart (a SIGKILL). None of its cases is a sample, passed ones included."""
    return any(case.get("result") in ABORTED for cases in runs_of(report) for case in cases)


def read(report: dict, interrupted: bool = False, name: str = "") -> list[Case]:
    """The cases of one run report that ran, in its order: skips and passed fixtures left out
    (a failed fixture, the build, is a broken case of its own)."""
    info = report.get("session_info") if isinstance(report.get("session_info"), dict) else {}
    session = str(info.get("uuid") or name)
    start = info.get("time_start_unix")
    started = float(start) if is_number(start) else None
    first = first_runs(report)
    rounds = rounds_by_case(report)
    interrupted = interrupted or was_interrupted(report)
    found = []
    for case in final_cases(report):
        if case.get("result") == "skip" or (case.get("fixture") and case.get("result") == "pass"):
            continue  # a fixture (the build) counts only when it broke
        key = case_key(case)
        earlier = first.get(key)
        check, partition, environ, levels = case_scope(case)
        found.append(Case(check=check, system=str(case.get("system")), partition=partition,
                          environ=environ, levels=tuple(levels), session=session,
                          started=started, last=case, first=earlier,
                          health=health(case, earlier, interrupted, rounds.get(key)),
                          evidence=evidence(case), rounds=tuple(rounds.get(key, ()))))
    return found
