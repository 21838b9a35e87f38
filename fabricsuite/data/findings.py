"""A session's findings: what it found wrong, by kind, with the Slurm names each concerns.

One findings file per session (`RESULTS/findings/<mode>-<time>.json`, written by `fabricsuite
nightly`, or `python -m fabricsuite.commands.session --findings FILE`), the machine-readable
contract between the verdict and whatever acts on it (`fabricsuite act`, a center's own glue).
Schema
(docs/findings.md; `SCHEMA`, `VERSION`; a reader refuses another version):

    {"schema": "fabricsuite-findings", "version": 1, "session": UUID, "started": ISO time,
     "outcome": {"status": 0|1|2, "line": the outcome's verdict line},
     "nodes": hostlist of every node the session ran a case on,
     "passed_nodes": hostlist of the nodes no case failed on: a case that failed counts
                     against the nodes its findings name where they name nodes of their own
                     only, else against all its nodes,
     "findings": [{"kind": KIND, "confidence": CONFIDENCE, "nodes": hostlist or "",
                   "component": "uplink leaf1" or "", "check": display name,
                   "partition": "system:partition", "environ": ..., "evidence": one line,
                   "rounds": runs of the case, "against": known nodes of a suspect,
                   "retest_with": healthy nodes of the map to re-test a map suspect with}],
     "retests": [{"node": suspect, "against": known node(s), "session": UUID,
                  "result": "confirmed" | "cleared" | "fabric" | "broken" | "undecided"}]
     (optional)}

Kinds (`KINDS`): a node's own fault (`node-outlier`, `link-degraded`, `faulty-link`), a
component above the nodes (`uplink`, `leaf`, `fabric`), a regression of the whole fabric
(`regression`), and the findings that name no node: the harness broke (`broken-harness`),
another process took the CPUs (`interference`), the session was interrupted (`interrupted`);
and notices nothing acts on: a known finding's reference is stale (`stale-reference`), a map
could not resolve the smallest fault it looks for (`could-not-resolve`).

Confidence (`CONFIDENCES`), the only ground an action may stand on:
- ``confirmed``: the node failed where the references never saw it (the only such node of its
  case) and passed its confirmation on nodes they know (a NODE OUTLIER), or the operating
  system itself reports its link below the partition's contract (LINK DEGRADED);
- ``map``: the all-pairs map named this one component beyond the map's own noise, its pairs
  re-tested alone (fabricsuite.data.switches);
- ``suspected``: named, but not yet confirmed: a node outlier whose first run met two new
  nodes (the pair cannot say which) or was disturbed (another process took a CPU), a
  regression on nodes the references never saw that no known node could confirm, a link
  that changed during a job, a map finding the pairs cannot tell from another component
  (two nodes that shared the only pair a quick map measured of them), a bad pair no single
  component explains. Re-test before any action (`suspects`, `settle`).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import NamedTuple

from fabricsuite.base.formats import iso_utc, shortened
from fabricsuite.base.metrics import case_scope, is_finite_number, perf_variable
from fabricsuite.data import cases as casemodel
from fabricsuite.data.hostlists import TopologyError, compress_hostlist, expand_hostlist
from fabricsuite.data.links import link_findings
from fabricsuite.data.session_verdict import (
    LINK_DEGRADED,
    NODE_OUTLIER,
    CaseVerdict,
    SessionVerdict,
    judge,
)

SCHEMA, VERSION = "fabricsuite-findings", 1

NODE_OUTLIER_KIND, LINK_DEGRADED_KIND, FAULTY_LINK = "node-outlier", "link-degraded", "faulty-link"
UPLINK, LEAF, FABRIC, REGRESSION = "uplink", "leaf", "fabric", "regression"
#: A whole rail of a multi-rail fabric (its switch plane) below its promise on every node
RAIL = "rail"
BROKEN_HARNESS, INTERFERENCE, INTERRUPTED = "broken-harness", "interference", "interrupted"
#: Findings of a node's own: the only kinds an action may take a node out of service for.
NODE_KINDS = (NODE_OUTLIER_KIND, LINK_DEGRADED_KIND, FAULTY_LINK)
#: Findings of a component above the nodes or of the whole fabric: reported, never drained
#: node by node.
COMPONENT_KINDS = (UPLINK, LEAF, FABRIC, REGRESSION, RAIL)
#: Findings that say the session itself cannot be trusted: nothing is acted on beside them.
SESSION_KINDS = (BROKEN_HARNESS, INTERFERENCE, INTERRUPTED)
#: A known finding ($xfail) that no longer fails: its reference is stale, a person updates it
#: (names no node; acted on by no one).
STALE_REFERENCE = "stale-reference"
#: A map that could not resolve the smallest fault it looks for (its own noise too large: a
#: loaded machine, too few repetitions or pairs): a fault that small would pass unnamed, so a
#: pass says less than it seems (names no node; acted on by no one).
UNRESOLVED = "could-not-resolve"
#: Findings a person reads and nothing acts on; they leave the case's verdict as it is.
NOTICE_KINDS = (STALE_REFERENCE, UNRESOLVED)
KINDS = NODE_KINDS + COMPONENT_KINDS + SESSION_KINDS + NOTICE_KINDS

CONFIRMED, MAP, SUSPECTED = "confirmed", "map", "suspected"
#: Best ground first.
CONFIDENCES = (CONFIRMED, MAP, SUSPECTED)
#: A case on at least this many nodes whose every node's link is degraded is a finding of the
#: fabric (two nodes cannot say it is all of them).
FABRIC_NODES = 3
#: The confidences a node may be drained on.
ACTIONABLE = (CONFIRMED, MAP)


class FindingsError(ValueError):
    """A findings file that cannot be used (one line naming the fix)."""


@dataclass(frozen=True)
class Finding:
    """One finding of a session (see the module's docstring)."""

    #: one of KINDS
    kind: str
    #: one of CONFIDENCES
    confidence: str
    #: Slurm host list of the nodes it concerns ("" for none)
    nodes: str
    #: what was found, one line with its figures
    evidence: str
    #: the component above the nodes ("uplink leaf1", "leaf leaf2", "the fabric"), or the node
    #: link the map named ("node n3"); "" for none
    component: str = ""
    #: the runs of its case (the first and each confirmation round)
    rounds: int = 1
    #: the check's display name ("NetbenchMatrix %node_count=8")
    check: str = ""
    #: its ReFrame partition ("system:partition") and environment
    partition: str = ""
    environ: str = ""
    #: for a suspect: per node of `nodes` (in that order), a node its references were taken on
    #: to re-test it against, comma-separated ("" where none is known; `partners`)
    against: str = ""
    #: for a map suspect: the nodes the same map measured healthy (a host list), to re-test
    #: each of `nodes` with in a map of their own (`suspects`); "" for none
    retest_with: str = ""

    def node_names(self) -> list[str]:
        return expand_hostlist(self.nodes) if self.nodes else []


def _failed_figures(run: dict) -> str:
    """"bandwidth_1MiB_MBps 900 MB/s against 1000 (-10%)" of each variable outside."""
    found = []
    for key, perf in sorted((run.get("perfvalues") or {}).items()):
        if isinstance(perf, list) and len(perf) > 5 and perf[5] == "fail":
            text = f"{perf_variable(key)} {perf[0]:g} {perf[4]}" \
                if is_finite_number(perf[0]) else f"{perf_variable(key)}"
            if is_finite_number(perf[0]) and is_finite_number(perf[1]) and perf[1]:
                text += f" against {perf[1]:g} ({(perf[0] - perf[1]) / abs(perf[1]):+.0%})"
            found.append(text)
    return ", ".join(found)


def _line(text: object, width: int = 300) -> str:
    return shortened(text, width)


_LINK = re.compile(r"\b(LINK DEGRADED|LINKS DIFFER|LINK CHANGED|LINK FLAPPED) (\S+?):? ")
_BELOW = re.compile(r"\bBELOW PROMISE (?:(rail \d+|striped over every rail): )?"
                    r"(the fabric|leaf (.+?) \(|node (\S+?):)")
#: The rail a rail map's finding names at its end, "... (rail 2)" (checks/fabric_map.py)
_ON_RAIL = re.compile(r" \((rail \d+)\)$")
_FAULTY = re.compile(r"^faulty ((?:node|uplink|link|switch|group) \S+?"
                     r"(?: or (?:node|uplink|link|switch|group) \S+?)*): ")


def link_findings_of(lines: list[str], base: dict) -> list[Finding]:
    """Findings of a case's link lines (fabricsuite.data.links.link_findings): a link the operating
    system reports below the contract is confirmed, one that changed during the job suspected;
    the map's BELOW PROMISE lines name a node (map), a leaf or the fabric."""
    found = []
    for line in lines:
        link, below = _LINK.search(line), _BELOW.search(line)
        if link:
            # the kernel counted the link below its contract, or down during the job (a flap,
            # NHC's fault of its own): confirmed; a state that differs before and after: not yet
            # links that differ with no figure most nodes share: the slower suspected
            found.append(Finding(LINK_DEGRADED_KIND,
                                 SUSPECTED if link[1] in ("LINK CHANGED", "LINKS DIFFER")
                                 else CONFIRMED,
                                 compress_hostlist([link[2]]), _line(line), **base))
        elif below and below[4]:
            found.append(Finding(FAULTY_LINK, MAP, compress_hostlist([below[4]]), _line(line),
                                 component=_on(f"node {below[4]}", below[1]), **base))
        elif below and below[3]:
            found.append(Finding(LEAF, MAP, "", _line(line),
                                 component=_on(f"leaf {below[3]}", below[1]), **base))
        elif below and below[1]:
            # the whole rail: its switch plane, not the nodes
            found.append(Finding(RAIL, MAP, "", _line(line), component=below[1], **base))
        elif below:
            found.append(Finding(FABRIC, MAP, "", _line(line), component="the fabric", **base))
    return found


def _on(component: str, rail: str | None) -> str:
    """A component with the rail it was found on: "node n3 rail 2"."""
    return f"{component} {rail}" if rail else component


def map_findings_of(components: str, base: dict, nodes: tuple[str, ...] | list[str] = ()
                    ) -> list[Finding]:
    """Findings of a map's `components` (fabricsuite.data.switches.Explanation.lines) on `nodes`
    (the map's): a faulty node link, uplink or switch named alone is `map`; node links the
    pairs cannot tell apart (the only pair a quick map measured of two nodes) and each bad pair
    no single component explains are `suspected`, each with the map's healthy nodes to re-test
    it with (`retest_with`: the map's nodes none of its findings name)."""
    found = []
    for line in str(components or "").split("; "):
        match = _FAULTY.match(line.strip())
        unexplained = _UNEXPLAINED.match(line.strip())
        if line.strip().startswith(_UNRESOLVED):
            found.append(Finding(UNRESOLVED, CONFIRMED, "", _line(line.strip()),
                                 component="the map", **base))
            continue
        if unexplained:
            found += [Finding(FAULTY_LINK, SUSPECTED, compress_hostlist(pair), _line(
                f"bad pair {'-'.join(pair)} that no single component of the map explains: "
                f"each node re-tested with nodes the map measured healthy"),
                component=f"pair {'-'.join(pair)}", **base)
                for text in unexplained[1].split(", ") if (pair := _pair_of(text, nodes))]
            continue
        if not match:
            continue
        named = [part.split(" ", 1) for part in match[1].split(" or ")]
        confidence = MAP if len(named) == 1 else SUSPECTED
        # the kind of the smallest component named (first): what the map's counts count it as
        names = [name for kind, name in named if kind == "node"]
        kind = (FAULTY_LINK if named[0][0] == "node" else UPLINK
                if named[0][0] in ("uplink", "link") else LEAF)
        rail = _ON_RAIL.search(line.strip())
        found.append(Finding(kind, confidence, compress_hostlist(names) if kind == FAULTY_LINK
                             else "", _line(line),
                             component=_on(match[1], rail[1] if rail else None), **base))
    named = {name for finding in found for name in finding.node_names()}
    healthy = compress_hostlist([node for node in nodes if node not in named])
    return [replace(f, retest_with=healthy) if f.confidence == SUSPECTED and f.nodes else f
            for f in found]


#: How the map says its noise hides the smallest fault it looks for (switches.NoiseRule.lines).
_UNRESOLVED = "could not resolve a link "
_UNEXPLAINED = re.compile(r"^no single component explains \d+ bad pair\(s\): (.+)$")


def _pair_of(text: str, nodes: tuple[str, ...] | list[str]) -> list[str]:
    """The two nodes of a map's pair "a-b" (switches.Explanation.lines), where host names may
    hold a "-" themselves: the split whose both halves are nodes of the map; [] for none."""
    for at, char in enumerate(text):
        if char == "-" and text[:at] in nodes and text[at + 1:] in nodes:
            return [text[:at], text[at + 1:]]
    return []


def partners(run: dict | None, unknown: list[str], known: list[str]) -> str:
    """For each of `unknown` (sorted, as a finding's host list expands), the known node to
    re-test it against: the one in its mate's place, the next place of the run's node list
    among the known nodes, so that the re-test is the run with the other node replaced (node i
    of the confirmation's known nodes took node i's place)."""
    if not known:
        return ""
    order = list(casemodel.evidence(run).nodes) if run else []
    found = []
    for node in sorted(unknown):
        place = order.index(node) if node in order else 0
        found.append(known[(place + 1) % len(known)] if len(known) > 1 else known[0])
    return ",".join(found)


def _once(found: list[Finding]) -> list[Finding]:
    """One finding per component a case named: the map's node named below the promise and as
    a faulty link, or in each of its rounds with other figures, is one finding (the last said,
    the map's own explanation of its last round)."""
    kept: dict[tuple, Finding] = {}
    for finding in found:
        key = (finding.kind, finding.nodes, finding.component or finding.evidence)
        kept[key] = finding
    return list(kept.values())


def of_case(judged: CaseVerdict) -> list[Finding]:
    """The findings of one case under its session verdict (session_verdict.judge)."""
    case, verdict = judged.case, judged.verdict
    check, partition, environ, _levels = case_scope(case.last)
    base = {"check": str(case.last.get("display_name") or case.last.get("name") or check),
            "partition": partition, "environ": environ, "rounds": len(case.rounds) or 1}
    nodes = compress_hostlist(case.evidence.nodes)
    runs = case.rounds or (case.last,)
    if verdict == LINK_DEGRADED:
        lines = list(dict.fromkeys(line for run in runs for line in link_findings(run)))
        found = _once(link_findings_of(lines, base) + map_findings_of(
            case.last.get("components") or "", base, case.evidence.nodes))
        degraded = {name for f in found if f.kind == LINK_DEGRADED_KIND
                    for name in f.node_names()}
        if len(case.evidence.nodes) >= FABRIC_NODES and degraded >= set(case.evidence.nodes) \
                and not any(f.kind == FABRIC for f in found):
            # every node's link below the promise: the fabric (its firmware, its cables'
            # generation, a wrong declaration), not the nodes
            found.append(Finding(FABRIC, CONFIRMED, "", _line(
                f"every one of the {len(case.evidence.nodes)} nodes' links is degraded: the "
                f"fabric, not the nodes ({lines[0]}, ...)"), component="the fabric", **base))
        return found
    if verdict == NODE_OUTLIER:
        unknown, known = judged.unseen, judged.known
        # a pair of new nodes cannot say which of them is slow: draining both would take a
        # healthy node out with the bad one; each is re-tested against a known node first
        # and a first run that was disturbed never measured the new node quietly
        alone = len(unknown) == 1 and not casemodel.disturbance(case.first or case.last)
        return [Finding(NODE_OUTLIER_KIND, CONFIRMED if alone else SUSPECTED,
                        compress_hostlist(unknown),
                        _line(f"NODE OUTLIER {judged.outlier}"),
                        against="" if alone else partners(case.first, unknown, known), **base)]
    found = map_findings_of(case.last.get("components") or "", base, case.evidence.nodes)
    if verdict == casemodel.REGRESSION:
        if found:
            return found  # the map named what its bad pairs come from
        unknown, known = judged.unseen_last, judged.known
        # a regression whose last round passed (outside in most rounds): the first run's
        # figures, as the outcome's line names them
        failing = case.last if case.last.get("result") == "fail" else case.first or case.last
        figures = _failed_figures(failing)
        if unknown:
            # outside on nodes the references never saw, with no known node to confirm it on
            return [Finding(NODE_OUTLIER_KIND, SUSPECTED, compress_hostlist(unknown),
                            _line(f"REGRESSION {figures} on node(s) the references never saw "
                                  f"(taken on {compress_hostlist(known)}): re-test against "
                                  f"known nodes"), against=partners(case.last, unknown,
                                                                     known), **base)]
        return [Finding(REGRESSION, CONFIRMED, nodes, _line(f"REGRESSION {figures}"), **base)]
    if verdict == casemodel.BROKEN:
        if case.health == casemodel.DISTURBED:
            return [Finding(INTERFERENCE, CONFIRMED, "",
                            _line(f"INTERFERENCE {case.evidence.disturbance}"), **base)]
        if casemodel.stale_known_finding(case.last):
            met = ", ".join(sorted(casemodel.unexpected_passes(case.last)))
            return [Finding(STALE_REFERENCE, CONFIRMED, "",
                            _line(f"known finding no longer fails: {met} met its $xfail "
                                  f"reference; update the reference"), **base)]
        ran = case.last_ran  # not a round that refused to measure it again
        why = ran.get("fail_reason") or ran.get("result")
        return [Finding(BROKEN_HARNESS, CONFIRMED, "",
                        _line(f"BROKEN in {ran.get('fail_phase') or 'its run'}: {why}"),
                        **base)]
    if verdict == casemodel.INTERRUPTED:
        return [Finding(INTERRUPTED, CONFIRMED, "", "the session was interrupted", **base)]
    return found  # a map that passed may still say what it suspects


def document(report: dict, status: int | None = None, line: str = "",
             name: str = "", verdict: SessionVerdict | None = None) -> dict:
    """The findings document of one run report (see the module's docstring) under its session
    verdict (`verdict`, else `judge(report)`); `status` and `line` the outcome's, where given
    (else the verdict's)."""
    verdict = verdict or judge(report)
    status = verdict.status if status is None else status
    line = line or verdict.why
    info = report.get("session_info") if isinstance(report.get("session_info"), dict) else {}
    if casemodel.was_interrupted(report):
        # one finding for the session, naming no node: none of it passed or failed anything
        doc = interrupted_document(line.removeprefix("BROKEN: ") or "the session was "
                                   "interrupted", str(info.get("uuid") or name))
        doc["outcome"] = {"status": status, "line": line}
        return doc
    findings: list[Finding] = []
    ran: set[str] = set()
    troubled: set[str] = set()
    rails: dict[tuple[str, str, str], set[str]] = {}
    bests: dict[tuple[str, str, str], dict[int, tuple[str, dict]]] = {}
    for judged in verdict.cases:
        case, verdict_of = judged.case, judged.verdict
        ran.update(case.evidence.nodes)
        check, partition, environ, levels = case_scope(case.last)
        rail = dict(levels).get("rail", "")
        if rail.startswith("rail"):
            rails.setdefault((check, partition, environ), set()).add(f"rail {rail[4:]}")
            best = case.last.get("node_best_MBps")
            if isinstance(best, dict) and best and verdict_of not in (casemodel.BROKEN,
                                                                    casemodel.INTERRUPTED):
                bests.setdefault((check, partition, environ), {})[int(rail[4:])] = (
                    str(case.last.get("display_name") or check), best)
        if rail == "every":  # every rail of the partition at once in one job
            rails.setdefault((check, partition, environ), set()).update(
                f"rail {k}" for k in range(1, len(case.last.get("at_once_rails") or []) + 1))
        every = case.last.get("rails_node_best_MBps")
        if isinstance(every, dict) and verdict_of not in (casemodel.BROKEN, casemodel.INTERRUPTED):
            # every rail of one job at once (NetbenchRailsAtOnce): its rails side by side
            display = str(case.last.get("display_name") or check)
            bests[(check, partition, environ)] = {
                int(name[4:]): (display, best) for name, best in every.items()
                if str(name).startswith("rail") and str(name)[4:].isdigit()
                and isinstance(best, dict) and best}
        found = of_case(judged)
        findings += found
        named = {name for finding in found for name in finding.node_names()}
        if found and all(f.kind in NODE_KINDS and f.nodes for f in found):
            troubled.update(named)  # the nodes named; the case's others measured soundly
        elif verdict_of not in (casemodel.PASSED, casemodel.RECORDED, casemodel.TRANSIENT) \
                or found:
            troubled.update(case.evidence.nodes)
        troubled.update(named)
    for finding in slower_than_siblings(bests, findings):
        findings.append(finding)
        troubled.update(finding.node_names())
    started = info.get("time_start_unix")
    return {"schema": SCHEMA, "version": VERSION, "session": str(info.get("uuid") or name),
            "started": (iso_utc(started)
                        if is_finite_number(started) else ""),
            "outcome": {"status": status, "line": line},
            # the systems it ran on: `fabricsuite act` compares it with their later sessions
            "systems": sorted({str(j.last.get("system")) for j in verdict.cases
                               if j.last.get("system")}),
            "nodes": compress_hostlist(ran), "passed_nodes": compress_hostlist(ran - troubled),
            "findings": [asdict(f) for f in on_every_rail(findings, rails)]}


_RAIL_NODE = re.compile(r"^node (\S+) (rail \d+)$")


def on_every_rail(findings: list[Finding],
                  rails: dict[tuple[str, str, str], set[str]]) -> list[Finding]:
    """A node whose link a rail check named on every rail it ran (`rails`: {(check class,
    partition, environment): {"rail 1", ...}}) as one finding of the node ("node n3 every
    rail": the node, its host side, not one rail's cable), in place of one per rail."""
    on_node: dict[tuple[str, str, str, str], list[Finding]] = {}
    for finding in findings:
        match = _RAIL_NODE.match(finding.component)
        if finding.kind == FAULTY_LINK and match:
            key = (finding.check.split(" ")[0], finding.partition, finding.environ, match[1])
            on_node.setdefault(key, []).append(finding)
    merged: dict[int, Finding] = {}
    for (check, partition, environ, node), named in on_node.items():
        every = rails.get((check, partition, environ), set())
        if len(every) < 2 or {_RAIL_NODE.match(f.component)[2] for f in named} != every:
            continue
        merged[id(named[0])] = replace(named[0], check=check, component=f"node {node} every rail",
                                       evidence=_line(f"faulty node {node} on every rail "
                                                      f"({len(every)} of {len(every)}): the node, "
                                                      f"not one rail; {named[0].evidence}"))
        merged.update({id(f): None for f in named[1:]})
    return [merged.get(id(f), f) for f in findings if merged.get(id(f), f) is not None]


#: A node's rail below this fraction of its best sibling rail (each rail's best pair of the
#: node, fabricsuite.data.switches.node_best) delivers less than its siblings; healthy rails of
#: one node agree within 1 % on the emulated cluster (docs/measurements.md).
SIBLING_FRACTION = 0.85


def slower_than_siblings(bests: dict[tuple[str, str, str], dict[int, tuple[str, dict]]],
                         found: list[Finding]) -> list[Finding]:
    """The rails that deliver less than their siblings on the same node, from the rail maps
    of one session (`bests`: {(check class, partition, environment): {rail k: (the case's
    display name, {host: its best pair on rail k, MB/s})}}): a node's rail k below
    SIBLING_FRACTION of its best other rail is a `faulty-link` of "node X rail k", where the
    rail's other nodes keep up with their siblings; a rail slower on most of its nodes is the
    rail's (its switch: reported, never drained). A contract is not needed: the node's own
    rails are the reference. Components the maps already named are left as they were."""
    named = {f.component for f in found if f.component}
    out: list[Finding] = []
    for (_check, partition, environ), by_rail in sorted(bests.items()):
        if len(by_rail) < 2:
            continue
        for k, (display, hosts) in sorted(by_rail.items()):
            ratios = {}
            for host, figure in sorted(hosts.items()):
                siblings = [(other[host], j) for j, (_, other) in by_rail.items()
                            if j != k and is_finite_number(other.get(host))
                            and other[host] > 0]
                if siblings and is_finite_number(figure):
                    top, j = max(siblings)
                    ratios[host] = (figure / top, figure, j, top)
            slow = {host: r for host, r in ratios.items() if r[0] < SIBLING_FRACTION}
            if not slow:
                continue
            base = {"check": display, "partition": partition, "environ": environ}
            typical = sorted(r[0] for r in ratios.values())[len(ratios) // 2]
            if typical < SIBLING_FRACTION or len(ratios) < 3:
                if f"rail {k}" not in named:
                    # on most nodes, or on both of two (either node's link or the switch)
                    out.append(Finding(RAIL, CONFIRMED, "", _line(
                        f"RAIL SLOWER THAN ITS SIBLINGS rail {k}: on {len(slow)} of "
                        f"{len(ratios)} node(s) below {SIBLING_FRACTION:.2f} of the node's "
                        f"best other rail (median {typical:.2f}): the rail, not the nodes"),
                        component=f"rail {k}", **base))
                continue
            for host, (ratio, figure, j, top) in slow.items():
                component = f"node {host} rail {k}"
                if component in named or f"node {host} every rail" in named:
                    continue
                out.append(Finding(FAULTY_LINK, MAP, host, _line(
                    f"RAIL SLOWER THAN ITS SIBLINGS {host} rail {k}: best pair "
                    f"{figure:.1f} MB/s, {ratio - 1:+.0%} against rail {j} ({top:.1f} MB/s) on "
                    f"the same node; the rail's other nodes at {typical:.2f} of their "
                    f"siblings"), component=component, **base))
    return out


def pending_document(started: str, pid: int) -> dict:
    """The findings file a nightly writes as it starts, replaced by its session's findings when
    it ends: a nightly that dies before (SIGKILL, out of memory, a full disk) leaves this one the
    newest, which `fabricsuite act` refuses, where yesterday's would be acted on again."""
    return {"schema": SCHEMA, "version": VERSION, "session": "", "started": started,
            "pending": True,
            "outcome": {"status": None, "line": f"RUNNING: fabricsuite nightly (pid {pid}) "
                                                f"started {started}; still so after it ended: "
                                                f"it died before writing its findings"},
            "nodes": "", "passed_nodes": "", "findings": []}


def interrupted_document(why: str, session: str = "") -> dict:
    """The findings of a session ended by a signal: one, that names no node."""
    return {"schema": SCHEMA, "version": VERSION, "session": session, "started": "",
            "outcome": {"status": 2, "line": f"BROKEN: {why}"}, "nodes": "", "passed_nodes": "",
            "findings": [asdict(Finding(INTERRUPTED, CONFIRMED, "", _line(why)))]}


def write(path: Path, doc: dict) -> None:
    """Writes `doc` to `path` atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as out:
            json.dump(doc, out, indent=1)
            out.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: Path) -> tuple[dict, list[Finding]]:
    """(the document, its findings) of a findings file; FindingsError naming the fix."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise FindingsError(f"{path}: no such findings file; `fabricsuite nightly` writes one "
                            f"per session under RESULTS/findings/") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise FindingsError(f"{path}: not a findings file ({err}); give the file a session "
                            f"wrote (RESULTS/findings/*.json)") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise FindingsError(f"{path}: not a findings file (no \"schema\": \"{SCHEMA}\"); give "
                            f"the file a session wrote (RESULTS/findings/*.json)")
    if doc.get("version") != VERSION:
        raise FindingsError(f"{path}: findings version {doc.get('version')!r}, this "
                            f"fabricsuite reads version {VERSION}; use the fabricsuite that "
                            f"wrote it")
    edited = "the file was edited or truncated: run the session again"
    if not isinstance(doc.get("findings"), list):
        raise FindingsError(f"{path}: \"findings\" is {doc.get('findings')!r}, not a list of "
                            f"findings; {edited}")
    outcome = doc.get("outcome")
    if not (isinstance(outcome, dict) and outcome.get("status") in (0, 1, 2, None)
            and isinstance(outcome.get("line", ""), str)):
        raise FindingsError(f"{path}: \"outcome\" is {shortened(repr(outcome), 80)}, not "
                            f"{{\"status\": 0|1|2, \"line\": ...}}; {edited}")
    found = []
    for index, entry in enumerate(doc["findings"]):
        try:
            finding = Finding(**entry)
            if finding.kind not in KINDS or finding.confidence not in CONFIDENCES:
                raise ValueError(f"kind {finding.kind!r} or confidence {finding.confidence!r}")
            if finding.kind in NODE_KINDS and finding.confidence in ACTIONABLE \
                    and not finding.nodes:
                raise ValueError(f"a {finding.confidence} {finding.kind} finding that names "
                                 f"no node")
            expand_hostlist(finding.retest_with)  # the nodes a map suspect is re-tested with
        except (TypeError, ValueError, TopologyError) as err:
            raise FindingsError(f"{path}: finding {index + 1} cannot be read ({err}); "
                                f"{edited}") from None
        found.append(finding)
    for key in ("nodes", "passed_nodes"):
        try:
            expand_hostlist(str(doc.get(key) or ""))
        except TopologyError as err:
            raise FindingsError(f"{path}: {key}: {err}") from None
    return doc, found


def step_lines(report: dict, verdict: SessionVerdict | None = None) -> list[str]:
    """The outcome's lines on the nodes its findings name, each with its step: what `fabricsuite
    act` may do with it (docs/findings.md); [] where no finding names a node."""
    found = [Finding(**entry) for entry in document(report, verdict=verdict)["findings"]]
    named = [f for f in found if f.kind in NODE_KINDS and f.nodes]
    if not named:
        return []
    lines = ["nodes named, and their step (`fabricsuite act`, docs/findings.md):"]
    if any(f.kind in SESSION_KINDS for f in found):
        lines.append("  the session cannot be trusted (a broken harness, interference or an "
                     "interruption): no node is acted on")
    for finding in named:
        step = ("confirmed: may be drained (fabricsuite act --mode drain)"
                if finding.confidence in ACTIONABLE else
                "suspected: re-test against nodes the references know before any action")
        lines.append(f"  {finding.nodes}: {finding.kind}, {step}")
    return lines


class Retest(NamedTuple):
    """The re-test of one suspected node (`suspects`): its check, on it and `partners`."""

    node: str
    #: the nodes it is measured with, never a node a finding names
    partners: list[str]
    finding: Finding
    #: the check's display name as ReFrame's -n matches it (no spaces)
    check: str
    #: ReFrame settings (-S) of the re-test, after the session's own
    settings: tuple[str, ...] = ()


#: A map suspect is re-tested in a map of its own with this many of the map's healthy nodes
#: (a node count of the checks, fabricsuite.checks.check_base.NODE_COUNTS: 4): its link is then
#: named alone where its every pair is bad and the others' pairs good.
MAP_RETEST_PARTNERS = 3


def suspects(found: list[Finding]) -> list[Retest]:
    """The re-test of each suspected node of its own, the suspect itself never its partner:
    a node outlier's by its own check against the known node in its mate's place
    (`against`); a map suspect's by a full map (every pair, `rounds=0`) of it and the
    MAP_RETEST_PARTNERS nodes nearest it (in host-list order) of those the map measured
    healthy (`retest_with`); a map suspect with fewer healthy nodes is not re-tested."""
    named = {name for f in found for name in f.node_names()}
    retests = []
    for finding in found:
        if finding.kind not in NODE_KINDS or finding.confidence != SUSPECTED:
            continue
        check = finding.check.replace(" ", "")
        if finding.kind == NODE_OUTLIER_KIND:
            mates = finding.against.split(",") if finding.against else []
            retests += [Retest(node, [mate], finding, check)
                        for node, mate in zip(finding.node_names(), mates, strict=False)
                        if mate and mate not in named]
            continue
        healthy = [n for n in expand_hostlist(finding.retest_with) if n not in named] \
            if finding.retest_with else []
        if len(healthy) < MAP_RETEST_PARTNERS or not _NODE_COUNT.search(check):
            continue
        check = _NODE_COUNT.sub(f"%node_count={MAP_RETEST_PARTNERS + 1}", check)
        for node in finding.node_names():
            order = sorted([*healthy, node], key=_natural)  # n2 before n10, as Slurm lists
            nearest = sorted(healthy, key=lambda n: (abs(order.index(n) - order.index(node)),
                                                     order.index(n)))
            retests.append(Retest(node, nearest[:MAP_RETEST_PARTNERS], finding, check,
                                  tuple(f"{check.split('%', 1)[0]}.{setting}"
                                        for setting in MAP_RETEST_SETTINGS)))
    return retests


_NODE_COUNT = re.compile(r"%node_count=\d+")


def _natural(name: str) -> list:
    """A host name's sort key with its numbers as numbers ("n2" before "n10")."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]

#: A map suspect's re-test measures every pair (a quick map's one round would again meet it in
#: one pair only); the map's verdict is relative to its own pairs, so a partition without
#: references at the re-test's node count still names the link (its other figures recorded).
MAP_RETEST_SETTINGS = ("rounds=0", "require_reference=false")


def passed_on(report: dict, node: str) -> bool:
    """Whether a run of the report on `node` passed on a quiet node (its first round there:
    a confirmation elsewhere says nothing of it)."""
    return any(case.get("result") == "pass" and not casemodel.disturbance(case)
               and node in casemodel.evidence(case).nodes
               for cases in casemodel.runs_of(report) for case in cases
               if not case.get("fixture"))


def settle(doc: dict, node: str, partner: str, report: dict) -> str:
    """Merges the re-test of suspect `node` against `partner` (its node or nodes,
    comma-separated; that session's run report) into `doc`: "confirmed" (a finding of its own
    that may be acted on: it failed there and passed on nodes the references know, a confirmed
    node outlier, or a map of it and healthy nodes named its link alone), "cleared" (it passed
    there, on a quiet node: no longer named, one of the passed nodes), "fabric" (it failed on
    the known nodes too: not the node), "broken" (the re-test's harness broke, was disturbed or
    interrupted) or "undecided" (no run on it passed and none failed it: a disturbed round, no
    report, a re-test suspected again); the last two leave it suspected."""
    retest = document(report) if report else {}
    found = [Finding(**entry) for entry in retest.get("findings") or []]
    own = next((f for f in found if f.kind in NODE_KINDS and f.confidence in ACTIONABLE
                and f.node_names() == [node]), None)
    if any(f.kind in SESSION_KINDS for f in found):
        result = "broken"
    elif own:
        result = "confirmed"
    elif passed_on(report, node) and not any(node in f.node_names() for f in found):
        result = "cleared"
    elif not found or any(f.kind in NODE_KINDS and f.confidence == SUSPECTED
                          and node in f.node_names() for f in found):
        # a re-test suspected again (its own first round disturbed) decides nothing
        result = "undecided"
    else:
        result = "fabric"
    kept = []
    for entry in doc.get("findings") or []:
        finding = Finding(**entry)
        if (result in ("confirmed", "cleared") and finding.kind in NODE_KINDS
                and finding.confidence == SUSPECTED and node in finding.node_names()):
            rest = [n for n in finding.node_names() if n != node]
            if rest:
                kept.append(asdict(replace(finding, nodes=compress_hostlist(rest))))
            if own is not None:
                kept.append(asdict(replace(
                    finding, kind=own.kind, confidence=own.confidence, nodes=node, against="",
                    retest_with="", component=own.component,
                    evidence=_line(f"re-tested against {partner} (session "
                                   f"{retest.get('session', '')[:8]}): {own.evidence}"))))
            continue
        kept.append(entry)
    doc["findings"] = kept
    if result == "cleared":
        passed = set(expand_hostlist(str(doc.get("passed_nodes") or ""))) | {node}
        doc["passed_nodes"] = compress_hostlist(passed)
    doc.setdefault("retests", []).append({"node": node, "against": partner,
                                          "session": retest.get("session", ""),
                                          "result": result})
    return result
