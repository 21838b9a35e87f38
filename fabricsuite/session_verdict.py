"""The session's verdict of every case: one answer for every command and page.

The case model (fabricsuite.cases) gives each case its health from its runs; the session's
verdict of a case (`verdicts`) adds what needs the references' records too: a pass whose first
run failed only on nodes its references never saw is a NODE OUTLIER (the node, not the fabric;
suspected, never acted on, where that first run was disturbed),
a disturbed failure its confirmation upheld is broken (interference), one it did not a transient,
a disturbed pass a pass that says so, and a case whose run found a link down, narrower or
slower than the partition declares, or changed during its job (fabricsuite.links), is LINK
DEGRADED, whatever its figures. The one-screen outcome, its exit status and JUnit
(fabricsuite.session) and the report page (fabricsuite.report) all count from here.
"""

from __future__ import annotations

from typing import Any

from . import cases as casemodel
from .cases import BROKEN as BROKEN_HEALTH
from .cases import DISTURBED, TRANSIENT, unconfirmed
from .links import link_findings
from .metrics import case_scope, is_finite_number, perf_variable, series_key
from .references import ReferenceFileError, load_file, reference_file


def reference_data(system: str, cache: dict, machine: str | None = None) -> dict[str, Any]:
    """`system`'s reference file ({} without a valid one; `local`: `machine`'s file), kept in
    `cache`."""
    key = (system, machine)
    if key not in cache:
        try:
            cache[key] = load_file(reference_file(system, machine=machine or None))
        except (ReferenceFileError, ValueError, OSError):
            cache[key] = {}
    return cache[key]


def reference_statistics(system: str, cache: dict, machine: str | None = None) -> dict[str, Any]:
    """The `_statistics` of `system`'s reference file ({} without a valid one), kept in `cache`."""
    stats = reference_data(system, cache, machine).get("_statistics") or {}
    return stats if isinstance(stats, dict) else {}


def reference_nodes(case: dict, cache: dict) -> set[str]:
    """The nodes the references of a case's variables were taken on (`_statistics` nodes,
    `fabricsuite baseline`); empty where the file does not say."""
    stats = reference_statistics(str(case.get("system")), cache, case.get("machine"))
    nodes: set[str] = set()
    for key in case.get("perfvalues") or {}:
        entry = stats.get(series_key(*case_scope(case), perf_variable(key)))
        if isinstance(entry, dict) and isinstance(entry.get("nodes"), list):
            nodes.update(str(n) for n in entry["nodes"])
    return nodes


def unknown_nodes(case: dict, cache: dict) -> tuple[list[str], list[str]]:
    """(the case's nodes the references never saw, the nodes they were taken on); both empty
    where the references do not record nodes."""
    known = reference_nodes(case, cache)
    if not known:
        return [], []
    return sorted(set(casemodel.evidence(case).nodes) - known), sorted(known)


#: The session's verdict of a case that failed on nodes its references never saw and passed its
#: confirmation on nodes they know (fabricsuite.verdict pins a confirmation there under Slurm):
#: the node, not the fabric. Exit 1 like a regression: a confirmed finding that needs a person
#: (drain the node), never a pass; JUnit failure type "node-outlier".
NODE_OUTLIER = "node outlier"


#: The session's verdict of a case whose run found a link that misses the partition's promise
#: or changed during its job (`link_findings`, fabricsuite.links): the fabric fails its
#: contract, read from the operating system without a benchmark. Exit 1, before everything but
#: an interruption: a finding that needs a person, which the broken jobs it causes must not
#: hide; JUnit failure type "link-degraded".
LINK_DEGRADED = "link degraded"


def node_outlier(case: dict, first: dict | None, cache: dict) -> str:
    """"" unless the case's first run failed on nodes its references never saw and its last
    run passed on nodes they know; then what to say: "node3: first run bandwidth_1MiB_MBps
    -15.2% on node3; within the references on node1 (taken on node1, node2)"."""
    if first is None or case.get("result") != "pass":
        return ""
    unknown, known = unknown_nodes(first, cache)
    if not unknown or unknown_nodes(case, cache)[0]:
        return ""
    failed = []
    for key, perf in (first.get("perfvalues") or {}).items():
        if isinstance(perf, list) and len(perf) > 5 and perf[5] == "fail":
            change = ((perf[0] - perf[1]) / abs(perf[1])
                      if is_finite_number(perf[0]) and is_finite_number(perf[1]) and perf[1]
                      else None)
            failed.append(f"{perf_variable(key)}" + (f" {change:+.1%}" if change is not None
                                                       else ""))
    # A first run that was disturbed too: the new nodes were never measured quietly, and the
    # pass elsewhere says nothing of them. Never a PASSED that names nothing (the CI host,
    # 2026-12-02: -30 % on a node at 700 Mbit while a rank waited 14 % for its CPU); a
    # suspicion, re-tested before any action (fabricsuite.findings).
    disturbed = casemodel.disturbance(first)
    return (f"{', '.join(unknown)}: first run {'; '.join(failed) or 'outside'} on "
            f"{', '.join(casemodel.evidence(first).nodes)}"
            + (f" while disturbed ({disturbed})" if disturbed else "")
            + f"; within the references on {', '.join(casemodel.evidence(case).nodes)} "
            f"(taken on {', '.join(known)})")


def verdicts(report: dict) -> list[tuple[dict, str]]:
    """(last run, what the session's verdict makes of it) of every case that ran
    (case_verdicts)."""
    return [(case.last, verdict) for case, verdict in case_verdicts(report)]


def case_verdicts(report: dict) -> list[tuple[casemodel.Case, str]]:
    """(case, what the session's verdict makes of it) of every case that ran: the case
    model's health (fabricsuite.cases), where a disturbed failure its confirmation upheld is
    broken (interference, exit 2), one it did not is a transient like any other, a disturbed
    pass is a pass that says so, and a pass whose first run failed on nodes the references
    never saw is a node outlier."""
    found, cache = [], {}
    for case in casemodel.read(report):
        verdict = case.health
        runs = case.rounds or (case.last,)
        if verdict != casemodel.INTERRUPTED and any(link_findings(run) for run in runs):
            found.append((case, LINK_DEGRADED))
            continue
        if verdict == casemodel.REGRESSION and case.last.get("result") == "pass":
            # outside in most rounds, the last inside: where the first ran on nodes the
            # references never saw, only the rounds on nodes they know weigh
            known = [run for run in case.rounds if not unknown_nodes(run, cache)[0]]
            if known and not casemodel.confirmed_variables(case.last, case.first, known):
                verdict = casemodel.PASSED
        # a confirmation that passed on known nodes while disturbed passed all the same
        # (another process only slows a run): the quiet first run's failure on new nodes is
        # theirs, never a PASSED that names nothing (the CI host, 2026-12-02: -28 % on a node
        # at 700 Mbit, its confirmation on nodes 1-2 waited 13 % for a CPU)
        if verdict in (casemodel.PASSED, DISTURBED) and node_outlier(case.last, case.first,
                                                                     cache):
            found.append((case, NODE_OUTLIER))
            continue
        if verdict == DISTURBED:
            if case.last.get("result") != "fail":
                verdict = casemodel.RECORDED if case.last.get("judged") is False \
                    else casemodel.PASSED
            elif unconfirmed(case.last, case.first, list(case.rounds)):
                verdict = TRANSIENT
            else:
                verdict = BROKEN_HEALTH
        found.append((case, verdict))
    return found


#: Verdicts counted as within the references: passed, or outside in one run only and dispelled
#: by its confirmation (a transient).
WITHIN_VERDICTS = (casemodel.PASSED, TRANSIENT)


def tally(report: dict) -> dict[str, list[dict]]:
    """The cases of a session that ran (fixtures left out), by how the outcome and the page
    count their verdict: "passed" (within, transients included), "recorded" (measured without
    references of the machine), "failed" (a regression, a node outlier, broken, interfered or
    interrupted): {"passed": [last runs], "recorded": [...], "failed": [...]}."""
    found: dict[str, list[dict]] = {"passed": [], "recorded": [], "failed": []}
    for case, verdict in verdicts(report):
        if case.get("fixture"):
            continue
        kind = ("passed" if verdict in WITHIN_VERDICTS else
                "recorded" if verdict == casemodel.RECORDED else "failed")
        found[kind].append(case)
    return found
