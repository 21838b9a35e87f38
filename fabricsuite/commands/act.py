"""`fabricsuite act`: a session's findings turned into Slurm actions, under a contract.

    fabricsuite act                                   # report: the scontrol commands it would run
    fabricsuite act --mode comment                    # set the nodes' comment, drain nothing
    fabricsuite act --mode drain                      # take confirmed nodes out of service
    fabricsuite act --mode drain --retest             # its own drains into a re-test reservation
    fabricsuite act --mode drain --resume             # return those a session there passed on

Reads the newest findings file of RESULTS/findings/ (or FINDINGS; `fabricsuite nightly` writes
one per session, fabricsuite.data.findings) and Slurm's view of the nodes (`sinfo --json`), then:

- acts only on a node's own finding (a NODE OUTLIER, a LINK DEGRADED, a faulty node link named
  alone by the map) whose confidence is `confirmed` or `map`; a `suspected` one is reported as
  such, to be re-tested against nodes the references know before any action;
- reports a component above the nodes (an uplink, a leaf, the fabric) or a regression of the
  whole fabric, and never drains its nodes one by one;
- acts on nothing when the session itself cannot be trusted: a broken harness, interference or
  an interruption;
- acts on nothing when more nodes are named than the cap, the smaller of --max-nodes and
  --max-fraction of the partitions they are in: many bad nodes at once is the fabric or the
  harness, not the nodes;
- never touches a node that is down or drained by someone else, nor a reason or comment that is
  not its own: its own start with "fabricsuite:" (`REASON_PREFIX`), e.g. "fabricsuite: NODE
  OUTLIER NetbenchPingPongBandwidth -15% 3f2a9c1e";
- a drained node runs no job, so it is re-tested in a maintenance reservation: --retest moves
  the nodes whose drain it logged and whose reason is still its own there (`RETEST_RESERVATION`,
  with one node the session passed on to measure against; no user's job lands on them), and
  --resume, after a session in it, returns to service only the nodes that session passed on
  (started after the re-test began) and drains again those it named.

Modes (--mode, per finding kind with --mode-for KIND=MODE): `report` (the default) prints the
commands, `comment` sets the node's comment, `drain` drains it. Every action is logged before it
runs and when it ends (RESULTS/act/actions.jsonl, appended, one JSON object a line, under a
lock): an act killed half way is found by the next, which says so and records what Slurm
shows.

A session's action is taken once: `act` (drain or comment), --retest and --resume each leave
out an action the log shows done for that node, session and step, so that a node an
administrator returned to service is not drained again with the day-old reason (--force
REASON for a deliberate re-run, the reason logged); and a findings file of a nightly that
never finished (it died before writing them: killed, out of memory, a full disk) is refused,
never mistaken for the last good one.

Exit status: 0 it acted (or would) by the contract; 1 it refused to act (the cap, an
untrusted session, a session acted on, a nightly that never finished) or left a node
half-handled; 2 bad input or Slurm unreachable.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import math
import os
import re
import shlex
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricsuite.base.commandline import UsageError, command_output, one_line_errors, results_dir
from fabricsuite.base.formats import iso_utc
from fabricsuite.data import findings as findingsmod
from fabricsuite.data.findings import (
    ACTIONABLE,
    COMPONENT_KINDS,
    NODE_KINDS,
    NOTICE_KINDS,
    SESSION_KINDS,
    Finding,
    FindingsError,
)
from fabricsuite.data.hostlists import TopologyError, compress_hostlist, expand_hostlist

#: Every reason and comment the suite sets starts so; it touches no other.
REASON_PREFIX = "fabricsuite:"
MODES = ("report", "comment", "drain")
#: The cap per session: at most this many nodes ...
DEFAULT_MAX_NODES = 4
#: ... and at most this fraction of the partitions they are in (whichever is smaller).
DEFAULT_MAX_FRACTION = 0.2
#: Slurm's state flags and states of a node out of service (sinfo --json, Slurm 22.05). Not
#: MAINTENANCE: a node in a maintenance reservation (the suite's own re-test among them) is
#: reserved, not drained.
OUT_OF_SERVICE_FLAGS = {"DRAIN", "FAIL", "REBOOT_REQUESTED", "POWERED_DOWN", "POWERING_DOWN"}
OUT_OF_SERVICE_STATES = {"down", "error", "future", "unknown"}
#: The words a reason uses for a kind of finding.
LABELS = {findingsmod.NODE_OUTLIER_KIND: "NODE OUTLIER",
          findingsmod.LINK_DEGRADED_KIND: "LINK DEGRADED",
          findingsmod.FAULTY_LINK: "FAULTY LINK"}
#: The maintenance reservation the suite's drained nodes are re-tested in (--retest).
RETEST_RESERVATION = "fabricsuite-retest"
#: Seconds a Slurm command may take.
SLURM_TIMEOUT_S = 60

Runner = Callable[[list[str]], str]
#: The logged actions that change whether a node serves users.
NODE_CHANGES = ("drain", "retest", "resume")


class ActError(RuntimeError):
    """Slurm could not be read or did not take an action (one line naming the fix)."""


@dataclass(frozen=True)
class Node:
    """One node as Slurm reports it."""

    name: str
    state: str
    flags: tuple[str, ...]
    reason: str
    comment: str
    partitions: tuple[str, ...]
    reason_by: str = ""

    @property
    def out_of_service(self) -> bool:
        return (self.state.lower() in OUT_OF_SERVICE_STATES
                or bool(OUT_OF_SERVICE_FLAGS & set(self.flags)))

    @property
    def ours(self) -> bool:
        """Out of service with a reason of the suite's own."""
        return self.out_of_service and self.reason.startswith(REASON_PREFIX)

    def describe(self) -> str:
        state = "+".join([self.state.upper(), *self.flags])
        by = f" by {self.reason_by}" if self.reason_by else ""
        return f"{state}" + (f", reason {self.reason!r}{by}" if self.reason else "")


def parse_sinfo_json(text: str) -> dict[str, Node]:
    """{name: Node} of `sinfo --json` (Slurm 22.05 and later); ActError for another text."""
    try:
        data = json.loads(text)
        entries = data["nodes"]
        nodes = {}
        for entry in entries:
            nodes[str(entry["name"])] = Node(
                name=str(entry["name"]), state=str(entry.get("state") or ""),
                flags=tuple(str(f) for f in entry.get("state_flags") or []),
                reason=str(entry.get("reason") or ""), comment=str(entry.get("comment") or ""),
                partitions=tuple(str(p) for p in entry.get("partitions") or []),
                reason_by=str(entry.get("reason_set_by_user") or ""))
    except (ValueError, KeyError, TypeError) as err:
        raise ActError(f"`sinfo --json` printed no node list ({type(err).__name__}: {err}); "
                       f"this needs Slurm 21.08 or later with its JSON support") from None
    if not nodes:
        # a controller that is down or hung answers with no node (and its error, where it
        # says one): acting against no node would be refused by the cap, as if many were bad
        errors = [str(e.get("error") or e.get("description") or e) if isinstance(e, dict)
                  else str(e) for e in data.get("errors") or []]
        raise ActError(f"Slurm unreachable: `sinfo --json` lists no node"
                       f"{' (' + '; '.join(errors)[:200] + ')' if errors else ''}; is slurmctld "
                       f"up? nothing done")
    return nodes


def run_slurm(command: list[str]) -> str:
    """Runs one Slurm command (no shell), its stdout; ActError naming what failed."""
    return command_output(command, command[0], SLURM_TIMEOUT_S, "run on a node with Slurm's "
                          "commands (or inside `ci/emucluster.sh exec`)", ActError)


def reason_of(finding: Finding, session: str) -> str:
    """The suite's reason for a node: "fabricsuite: NODE OUTLIER <check> -15% <session>", with
    the rail where a rail map named it ("fabricsuite: FAULTY LINK NetbenchRailMatrix rail 2
    -34% 319ab2f4")."""
    change = re.search(r"[+-]\d+(?:\.\d+)?%", finding.evidence)
    rates = re.search(r"([\d.]+) Gb/s, (?:declared|its \d+ peer\(s\))(?: \d+X)? ([\d.]+) Gb/s",
                      finding.evidence)
    check = finding.check.split(" ", 1)[0]
    # a rail map's node: the rail its link was found on ("rail 2", "every rail")
    rail = re.search(r"\b(rail \d+|every rail)$", finding.component)
    words = [REASON_PREFIX, LABELS.get(finding.kind, finding.kind), check,
             rail[0] if rail else ""]
    if change:
        words.append(change[0])
    elif rates and float(rates[2]) > 0:
        # a link's rate against the declared one or its peers': "0.17 Gb/s, declared 0.2 Gb/s"
        words.append(f"{float(rates[1]) / float(rates[2]) - 1:+.0%}")
    words.append(session[:8] or "session?")
    return " ".join(w for w in words if w)


def update(node: str, **fields: str) -> list[str]:
    """`scontrol update NodeName=node Key=value ...` as arguments (no shell)."""
    return ["scontrol", "update", f"NodeName={node}", *(f"{k}={v}" for k, v in fields.items())]


@dataclass
class Action:
    """What act does (or would) to one node, and why."""

    node: str
    #: "drain", "comment", "resume", "uncomment"; "" for none
    action: str
    why: str
    command: list[str]
    #: the node's step: "suspected", "confirmed", "drained", "commented", "left alone", ...
    step: str
    #: whether its command ran and took (execute)
    ran: bool = False

    def line(self) -> str:
        if not self.command:
            return f"  {self.node}: {self.step}: {self.why}"
        verb = "ran" if self.ran else "failed" if self.step == "failed" else "would run"
        return f"  {self.node}: {self.step}: {self.why}\n    {verb}: {shlex.join(self.command)}"


class Log:
    """RESULTS/act/actions.jsonl: every action before it runs and when it ends, appended."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, entry: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"time": iso_utc(), **entry})
        with open(self.path, "a+b") as out:
            # a line a kill cut short stays a line of its own
            out.seek(0, os.SEEK_END)
            if out.tell():
                out.seek(-1, os.SEEK_END)
                if out.read(1) != b"\n":
                    out.write(b"\n")
            out.write(line.encode() + b"\n")
            out.flush()
            os.fsync(out.fileno())

    def entries(self) -> list[dict]:
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return []
        found = []
        for line in lines:
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict):
                    found.append(entry)
        return found  # a line cut by a kill is left out; its "started" twin says what it was

    def unfinished(self) -> list[dict]:
        """Actions logged as started with no end."""
        ended = {e.get("id") for e in self.entries() if e.get("status") != "started"}
        return [e for e in self.entries() if e.get("status") == "started"
                and e.get("id") not in ended]

    def last_actions(self, action: str) -> dict[str, str]:
        """{node: when} of the nodes whose last state change that took effect (a drain, a
        re-test, a resume) is `action`."""
        last: dict[str, tuple[str, str]] = {}
        for entry in self.entries():
            if entry.get("status") == "done" and entry.get("action") in NODE_CHANGES:
                last[str(entry.get("node"))] = (str(entry["action"]), str(entry.get("time")))
        return {node: when for node, (done, when) in last.items() if done == action}


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """One act at a time per results directory; a second is refused, saying so. A directory
    that cannot hold the log and the lock is one line, before anything is done."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        lock = open(directory / "act.lock", "a")  # noqa: SIM115 (held while acting)
    except OSError as err:
        raise UsageError(f"cannot keep act's log and lock in {directory} ({err.strerror or err})"
                         f"; give --log a file in a directory you can write") from None
    with lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"another fabricsuite act holds {directory / 'act.lock'}; wait "
                             f"for it to end") from None
        yield


def cap(named: set[str], nodes: dict[str, Node], max_nodes: int, max_fraction: float
        ) -> tuple[int, int]:
    """(the most nodes one session may act on, the size of the partitions they are in)."""
    partitions = {p for name in named if name in nodes for p in nodes[name].partitions}
    size = sum(1 for node in nodes.values() if partitions & set(node.partitions)) or len(nodes)
    return min(max_nodes, math.floor(max_fraction * size + 1e-9)), size


def plan(doc: dict, found: list[Finding], nodes: dict[str, Node], modes: dict[str, str],
         max_nodes: int, max_fraction: float) -> tuple[list[Action], list[str], bool]:
    """(the actions on nodes, the lines said of the session, whether act refused to act)."""
    session = str(doc.get("session") or "")
    lines: list[str] = []
    untrusted = [f for f in found if f.kind in SESSION_KINDS]
    for finding in found:
        if finding.kind in COMPONENT_KINDS:
            lines.append(f"reported, no node drained ({finding.kind}"
                         f"{' ' + finding.component if finding.component else ''}): "
                         f"{finding.evidence}")
        elif finding.kind in NOTICE_KINDS:
            lines.append(f"noted, nothing to act on ({finding.kind}): {finding.evidence}")
    if untrusted:
        kinds = ", ".join(sorted({f.kind for f in untrusted}))
        lines.append(f"REFUSED: the session cannot be trusted ({kinds}: "
                     f"{untrusted[0].evidence}); no node is acted on until a session runs "
                     f"sound")
        return [], lines, True
    by_node: dict[str, Finding] = {}
    actions = []
    for finding in found:
        if finding.kind not in NODE_KINDS:
            continue
        for name in finding.node_names():
            if finding.confidence not in ACTIONABLE:
                actions.append(Action(name, "", f"{finding.evidence}; re-test it against nodes "
                                      f"the references know before any action", [],
                                      "suspected"))
            else:
                by_node.setdefault(name, finding)
    limit, size = cap(set(by_node), nodes, max_nodes, max_fraction)
    if len(by_node) > limit:
        lines.append(f"REFUSED: {len(by_node)} node(s) named at once "
                     f"({compress_hostlist(by_node)}), above the cap of {limit} (the smaller of "
                     f"--max-nodes {max_nodes} and --max-fraction {max_fraction:g} of "
                     f"{size} nodes): many bad nodes at once is the fabric or the harness, not "
                     f"the nodes; nothing acted on")
        return actions, lines, True
    for name, finding in by_node.items():
        mode = modes.get(finding.kind, modes["default"])
        reason = reason_of(finding, session)
        node = nodes.get(name)
        if node is None:
            actions.append(Action(name, "", f"{finding.evidence}; not a node Slurm knows, "
                                  f"left alone", [], "left alone"))
        elif node.ours:
            actions.append(Action(name, "", f"already out of service by fabricsuite "
                                  f"({node.reason!r})", [], "drained"))
        elif node.out_of_service:
            actions.append(Action(name, "", f"{finding.evidence}; {node.describe()}: someone "
                                  f"else's, left alone", [], "left alone"))
        elif mode == "comment":
            if node.comment and not node.comment.startswith(REASON_PREFIX):
                actions.append(Action(name, "", f"{finding.evidence}; its comment "
                                      f"{node.comment!r} is someone else's, left alone", [],
                                      "left alone"))
            else:
                actions.append(Action(name, "comment", finding.evidence,
                                      update(name, Comment=reason), "commented"))
        else:
            actions.append(Action(name, "drain" if mode == "drain" else "",
                                  finding.evidence, update(name, State="DRAIN", Reason=reason),
                                  "drained" if mode == "drain" else "confirmed"))
    return actions, lines, False


def plan_retest(doc: dict, found: list[Finding], nodes: dict[str, Node], log: Log
                ) -> tuple[list[Action], list[str]]:
    """The suite's own drains back into a maintenance reservation (`RETEST_RESERVATION`, with
    one node the findings' session passed on, to measure against): a drained node runs no job,
    and a node in the reservation runs no user's. Then a session in the reservation (`-J
    --reservation=fabricsuite-retest`, or the partition's access options) and --resume."""
    drained = sorted(n for n in log.last_actions("drain") if n in nodes and nodes[n].ours)
    if not drained:
        return [], ["no node drained by fabricsuite to re-test"]
    # a partner to measure against: a node the session passed on, else one no finding named
    named = {name for f in found for name in f.node_names()}
    passed = expand_hostlist(str(doc.get("passed_nodes") or ""))
    partners = [n for n in [*passed, *sorted(nodes)] if n in nodes and n not in drained
                and n not in named and not nodes[n].out_of_service]
    members = compress_hostlist(drained + partners[:1])
    who = os.environ.get("SUDO_USER") or os.environ.get("USER") or "root"
    actions = [Action(members, "reserve", "the drained nodes and a node known good, kept from "
                      "users' jobs while they are re-tested",
                      ["scontrol", "create", "reservation", f"ReservationName="
                       f"{RETEST_RESERVATION}", f"Nodes={members}", f"Users={who}",
                       "StartTime=now", "Duration=UNLIMITED", "Flags=MAINT,IGNORE_JOBS"],
                      "reserved")]
    for name in drained:
        actions.append(Action(name, "retest", f"out of its drain ({nodes[name].reason!r}) into "
                              f"the reservation {RETEST_RESERVATION}",
                              update(name, State="RESUME",
                                     Comment=f"{REASON_PREFIX} re-test of: "
                                             f"{nodes[name].reason[len(REASON_PREFIX):].strip()}"),
                              "re-testing"))
    return actions, []


def plan_resume(doc: dict, found: list[Finding], nodes: dict[str, Node], log: Log
                ) -> tuple[list[Action], list[str]]:
    """The nodes under re-test (plan_retest) that the findings' session, run after the re-test
    began, passed on: back to service (their comment cleared, the reservation deleted once no
    node is left in it); those it named again: drained again."""
    if any(f.kind in SESSION_KINDS for f in found):
        return [], ["REFUSED: the session cannot be trusted; nothing returned to service"]
    passed = set(expand_hostlist(str(doc.get("passed_nodes") or "")))
    named = {name: f for f in found for name in f.node_names()}
    retesting = log.last_actions("retest")
    if not retesting:
        return [], [f"no node under re-test: `fabricsuite act --retest` first moves the suite's "
                    f"drains into the reservation {RETEST_RESERVATION}"]
    actions, lines, left = [], [], []
    for name, since in sorted(retesting.items()):
        node = nodes.get(name)
        if node is None:
            continue
        if str(doc.get("started") or "") < since:
            lines.append(f"{name}: the session started before its re-test ({since}): run one "
                         f"in the reservation {RETEST_RESERVATION}")
            left.append(name)
        elif node.out_of_service:
            lines.append(f"{name}: {node.describe()}: out of service by someone else since its "
                         f"re-test, left alone")
        elif name in passed:
            actions.append(Action(name, "resume", f"passed session {doc.get('session')}",
                                  update(name, Comment=""), "resumed"))
        elif name in named:
            actions.append(Action(name, "drain", named[name].evidence,
                                  update(name, State="DRAIN",
                                         Reason=reason_of(named[name], str(doc.get("session")))),
                                  "drained again"))
        else:
            lines.append(f"{name}: not in the session; it stays in the reservation")
            left.append(name)
    if not left:
        actions.append(Action(RETEST_RESERVATION, "unreserve", "no node left under re-test",
                              ["scontrol", "delete", f"ReservationName={RETEST_RESERVATION}"],
                              "reservation deleted"))
    return actions, lines


def reconcile(log: Log, nodes: dict[str, Node]) -> list[str]:
    """Actions an earlier act started and never ended: what Slurm shows now, logged."""
    lines = []
    for entry in log.unfinished():
        node = nodes.get(str(entry.get("node")))
        action = entry.get("action")
        if action in ("reserve", "unreserve"):
            status = "unknown"  # `scontrol show reservation` says
        else:
            took = node is not None and (
                (action == "drain" and node.ours) or
                (action == "retest" and not node.out_of_service
                 and node.comment.startswith(REASON_PREFIX)) or
                (action == "resume" and not node.comment.startswith(REASON_PREFIX)) or
                (action == "comment" and node.comment == entry.get("reason")))
            status = "done" if took else "not done"
        log.append({"id": entry.get("id"), "node": entry.get("node"), "action": action,
                    "session": entry.get("session"), "status": status,
                    "note": "found so after an act that did not end"})
        lines.append(f"half-handled: {entry.get('node')} {action} started {entry.get('time')} "
                     f"(session {entry.get('session')}) had no end logged; Slurm shows it "
                     f"{status}: {node.describe() if node else 'no such node'}")
    return lines


def execute(actions: list[Action], log: Log, session: str, runner: Runner, step: str = "act",
            forced: str = "") -> list[str]:
    """Runs each action's command, logged before and after with the session and the step it
    came from (and --force's reason); the failures, one line each."""
    failed = []
    for action in actions:
        if not action.action or not action.command:
            continue
        entry = {"id": uuid.uuid4().hex, "node": action.node, "action": action.action,
                 "session": session, "step": step, "why": action.why,
                 "command": action.command,
                 "reason": next((w.split("=", 1)[1] for w in action.command
                                 if w.startswith(("Reason=", "Comment="))), ""),
                 **({"forced": forced} if forced else {})}
        log.append({**entry, "status": "started"})
        try:
            runner(action.command)
        except ActError as err:
            log.append({"id": entry["id"], "node": action.node, "action": action.action,
                        "session": session, "step": step, "status": "failed",
                        "error": str(err)})
            failed.append(f"{action.node}: {err}")
            action.step = "failed"
            continue
        log.append({"id": entry["id"], "node": action.node, "action": action.action,
                    "session": session, "step": step, "status": "done"})
        action.ran = True
    return failed


#: The step of a logged action before steps were logged: a drain or a comment was act's own.
_OLD_STEPS = {"drain": "act", "comment": "act"}


def acted_on(log: Log, session: str, step: str) -> list[dict]:
    """The actions of `step` ("act", "retest", "resume") on `session` the log shows done."""
    return [e for e in log.entries() if e.get("status") == "done" and e.get("session") == session
            and e.get("step", _OLD_STEPS.get(str(e.get("action")), "")) == step]


def never_finished(doc: dict, path: Path) -> str | None:
    """The REFUSED line of the pending findings of a nightly that never finished, or None."""
    if not doc.get("pending"):
        return None
    return (f"REFUSED: {path} is the findings of a nightly that never finished (started "
            f"{doc.get('started') or '?'}; it died before writing them: killed, out of memory, "
            f"a full disk?): nothing is known of that session; act on the next nightly's "
            f"findings")


def without_repeats(actions: list[Action], log: Log, session: str, step: str
                    ) -> tuple[list[Action], list[str]]:
    """(the actions this session's step has not done yet, a line for each it has): a node an
    administrator returned to service is not drained again with the day-old reason when the
    same findings are read again (a comment, then a drain, of one session is no repeat)."""
    done = {(str(e.get("node")), str(e.get("action"))): e
            for e in acted_on(log, session, step)}
    kept, lines = [], []
    for action in actions:
        before = done.get((action.node, action.action)) if action.action else None
        if before is None:
            kept.append(action)
            continue
        lines.append(f"{action.node}: left alone: session {session[:8]} was acted on already "
                     f"({action.action} at {before.get('time')}; {log.path}): what changed "
                     f"since, an administrator's resume or drain, stands; --force REASON acts "
                     f"on it again")
    return kept, lines


def superseded(doc: dict, path: Path, results: Path) -> str | None:
    """The REFUSED line of findings older than another session's of the same system in
    RESULTS/findings/ (a nightly that died since is said as such), or None: yesterday's file,
    given by name, is not the present."""
    started, mine = str(doc.get("started") or ""), set(doc.get("systems") or ())
    if doc.get("pending") or not started:
        return None
    newer = []
    for other in (results / "findings").glob("*.json"):
        if other.resolve() == path.resolve():
            continue
        try:
            them = json.loads(other.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(them, dict) or str(them.get("started") or "") <= started:
            continue
        theirs = set(them.get("systems") or ())
        if mine and theirs and not mine & theirs:
            continue  # another system's session
        newer.append((str(them.get("started")), str(other), them))
    if not newer:
        return None
    when, other, them = max(newer, key=lambda entry: entry[:2])
    what = ("a nightly that never finished (it died before its findings)" if them.get("pending")
            else f"session {str(them.get('session'))[:8]}")
    return (f"REFUSED: {path} is session {str(doc.get('session'))[:8]} of {started}, and "
            f"{what} started since ({when}, {other}): these findings are not the present; act "
            f"on the newest, or give --force REASON to act on these")


def newest_findings(results: Path) -> Path:
    found = sorted((results / "findings").glob("*.json"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise UsageError(f"no findings in {results / 'findings'}; run `fabricsuite nightly` "
                         f"first, or give a findings file")
    return found[-1]


def modes_of(args: Any) -> dict[str, str]:
    modes = {"default": args.mode}
    for item in args.mode_for or []:
        kind, _, mode = item.partition("=")
        if kind not in NODE_KINDS or mode not in MODES:
            raise UsageError(f"--mode-for {item!r}: give KIND=MODE, KIND one of "
                             f"{', '.join(NODE_KINDS)} and MODE one of {', '.join(MODES)}")
        modes[kind] = mode
    return modes


def _commands(actions: list[Action]) -> bool:
    """Whether any of `actions` runs a command."""
    return any(a.action and a.command for a in actions)


def _decide(args: Any, doc: dict, found: list[Finding], path: Path, log: Log, session: str,
            step: str, modes: dict[str, str], runner: Runner, results: Path
            ) -> tuple[list[Action], list[str], bool, list[str]]:
    """(the actions, the lines said, whether act refused, the half-handled actions found) of
    one act, before anything runs. The findings of a nightly that never finished, and (unless
    --force) findings a later session of the system superseded, are refused before Slurm is
    asked anything."""
    refused_line = never_finished(doc, path) or (None if args.force
                                                 else superseded(doc, path, results))
    if refused_line:
        return [], [refused_line], True, []
    try:
        nodes = parse_sinfo_json(runner(["sinfo", "--json"]))
        half = reconcile(log, nodes)
    except ActError as err:
        raise UsageError(str(err)) from None
    refused = False
    if args.retest:
        actions, lines = plan_retest(doc, found, nodes, log)
    elif args.resume:
        actions, lines = plan_resume(doc, found, nodes, log)
    else:
        actions, lines, refused = plan(doc, found, nodes, modes, args.max_nodes,
                                       args.max_fraction)
    if args.mode != "report" and not args.force:
        planned = _commands(actions)
        actions, repeats = without_repeats(actions, log, session, step)
        lines += repeats
        # every action was done already: nothing new, said why
        refused = refused or (planned and not _commands(actions))
    if args.retest or args.resume:
        refused = refused or any(line.startswith("REFUSED") for line in lines)
        if args.mode == "report":
            for action in actions:
                action.action = ""  # report: the commands are printed, never run
                action.step = f"would be {action.step}"
    return actions, lines, refused, half


def act(args: Any, runner: Runner = run_slurm) -> int:
    if not (args.max_nodes >= 0 and 0.0 <= args.max_fraction <= 1.0):
        raise UsageError(f"--max-nodes {args.max_nodes} --max-fraction {args.max_fraction}: "
                         f"give a count of 0 or more and a fraction from 0 to 1")
    if args.force is not None and not args.force.strip():
        raise UsageError("--force needs a reason (it is logged with every action it takes)")
    modes = modes_of(args)
    results = results_dir(args)
    path = Path(args.findings) if args.findings else newest_findings(results)
    try:
        doc, found = findingsmod.read(path)
    except FindingsError as err:
        raise UsageError(str(err)) from None
    session = str(doc.get("session") or path.stem)
    log = Log(Path(args.log) if args.log else results / "act" / "actions.jsonl")
    if log.path.exists() and not log.path.is_file():
        raise UsageError(f"--log {log.path}: not a file; give the action log's file")
    step = "retest" if args.retest else "resume" if args.resume else "act"
    with locked(log.path.parent):
        actions, lines, refused, half = _decide(args, doc, found, path, log, session, step,
                                                modes, runner, results)
        for line in lines:
            if line.startswith("REFUSED"):
                log.append({"id": uuid.uuid4().hex, "node": "", "action": "none",
                            "session": session, "step": step, "status": "refused",
                            "why": line})
        failed = execute(actions, log, session, runner, step, args.force or "")
    print(f"fabricsuite act: session {session} ({doc.get('outcome', {}).get('line') or ''}), "
          f"findings {path}, mode {args.mode}"
          f"{' --retest' if args.retest else ' --resume' if args.resume else ''}")
    for line in half:
        print(f"  {line}")
    for line in lines:
        print(f"  {line}")
    for action in actions:
        print(action.line())
    if not actions and not lines:
        print("  nothing to act on")
    for line in failed:
        print(f"fabricsuite act: FAILED: {line}", file=sys.stderr)
    print(f"fabricsuite act: log {log.path}")
    return 1 if refused or failed or half else 0


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "act", help="turn a session's findings into Slurm actions (report, comment, drain) "
                    "under a safe contract",
        formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__)
    parser.add_argument("findings", nargs="?",
                        help="a findings file (default: the newest in RESULTS/findings/)")
    parser.add_argument("--mode", choices=MODES, default="report",
                        help="report (default: print the commands), comment, or drain")
    parser.add_argument("--mode-for", action="append", metavar="KIND=MODE",
                        help=f"the mode for one kind of node finding ({', '.join(NODE_KINDS)}),"
                             f" e.g. link-degraded=drain beside --mode comment (repeatable)")
    parser.add_argument("--max-nodes", type=int, default=DEFAULT_MAX_NODES, metavar="N",
                        help=f"act on no node when more than N are named at once (default "
                             f"{DEFAULT_MAX_NODES})")
    parser.add_argument("--max-fraction", type=float, default=DEFAULT_MAX_FRACTION,
                        metavar="F",
                        help=f"... or more than F of the partitions they are in (default "
                             f"{DEFAULT_MAX_FRACTION:g}); the smaller cap holds")
    parser.add_argument("--force", metavar="REASON",
                        help="take again an action the log shows this session's step "
                             "took already (logged with REASON): a deliberate re-run; a "
                             "nightly that never finished is refused all the same")
    step = parser.add_mutually_exclusive_group()
    step.add_argument("--retest", action="store_true",
                      help=f"move the nodes fabricsuite drained into the maintenance "
                           f"reservation {RETEST_RESERVATION} (with a node the findings' "
                           f"session passed on), where a session can re-test them")
    step.add_argument("--resume", action="store_true",
                      help="after a session in that reservation: return to service the nodes "
                           "under re-test it passed on, drain again those it named (nothing "
                           "else)")
    parser.add_argument("--results", default=None,
                        help="results directory (default: $FABRICSUITE_RESULTS, else results/)")
    parser.add_argument("--log", metavar="FILE",
                        help="the action log (default RESULTS/act/actions.jsonl)")


def _act(args: Any) -> int:
    try:
        return act(args)
    except TopologyError as err:
        raise UsageError(str(err)) from None


run = one_line_errors("act")(_act)
