"""The session's verdict: one answer for every command and page (data layer).

The case model (fabricsuite.data.cases) gives each case its health from its runs; the session's
verdict of a case (`case_verdicts`, one `CaseVerdict` each) adds what needs the references'
records too: a pass whose first run failed only on nodes its references never saw is a NODE
OUTLIER (the node, not the fabric; suspected, never acted on, where that first run was
disturbed), a disturbed failure its confirmation upheld is broken (interference), one it did not
a transient, a disturbed pass a pass that says so, and a case whose run found a link down,
narrower or slower than the partition declares, or changed during its job (fabricsuite.data.links),
is LINK DEGRADED, whatever its figures. The session's own verdict (`classify`: its exit status and
its one line) comes from those and from the coverage it lost (`problems`).

The one-screen outcome, its exit status and JUnit (fabricsuite.commands.session), the findings file
(fabricsuite.data.findings) and the report page (fabricsuite.commands.report) all read it here; none
of them reads the fields of a run report a verdict is made of (`VERDICT_FIELDS`;
tests/test_architecture.py holds that), so none can decide differently.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from fabricsuite.base.formats import iso_utc, shortened
from fabricsuite.base.metrics import case_scope, is_finite_number, perf_variable, series_key
from fabricsuite.data import cases as casemodel
from fabricsuite.data.cases import BROKEN as BROKEN_HEALTH
from fabricsuite.data.cases import (
    DISTURBED,
    FAIL_DEPS,
    MISSING_REFERENCE,
    RECORDED,
    REGRESSION,
    TRANSIENT,
    unconfirmed,
)
from fabricsuite.data.limits import PHYSICS_ORIGIN
from fabricsuite.data.links import link_findings
from fabricsuite.data.references import ReferenceFileError, load_file, reference_file


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
#: confirmation on nodes they know (fabricsuite.checks.judged_check pins a confirmation there under
#: Slurm): the node, not the fabric. Exit 1 like a regression: a confirmed finding that needs a
#: person
#: (drain the node), never a pass; JUnit failure type "node-outlier".
NODE_OUTLIER = "node outlier"


#: The session's verdict of a case whose run found a link that misses the partition's promise
#: or changed during its job (`link_findings`, fabricsuite.data.links): the fabric fails its
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
    # suspicion, re-tested before any action (fabricsuite.data.findings).
    disturbed = casemodel.disturbance(first)
    return (f"{', '.join(unknown)}: first run {'; '.join(failed) or 'outside'} on "
            f"{', '.join(casemodel.evidence(first).nodes)}"
            + (f" while disturbed ({disturbed})" if disturbed else "")
            + f"; within the references on {', '.join(casemodel.evidence(case).nodes)} "
            f"(taken on {', '.join(known)})")


#: The fields of a ReFrame run report's test case that a verdict is made of: read in the data
#: layer alone (cases, session_verdict and their neighbours), so that every command and page
#: shows the one verdict decided here (tests/test_architecture.py).
VERDICT_FIELDS = ("result", "fail_phase", "fail_reason", "fail_info", "interference",
                  "cpu_wait_fraction", "judged", "fixture")


class CaseVerdict(NamedTuple):
    """One case under the session's verdict: what every command and page shows of it."""

    case: casemodel.Case
    #: A health class of the case model (cases.HEALTH) other than `disturbed`, NODE_OUTLIER or
    #: LINK_DEGRADED.
    verdict: str
    #: What the references knew when the case was judged, so that nothing shown later reads
    #: today's reference files: a node outlier's words (`node_outlier`), the nodes of its
    #: failing run (the first, else the last) the references never saw, those of its last run,
    #: and the nodes the references were taken on.
    outlier: str = ""
    unseen: tuple[str, ...] = ()
    unseen_last: tuple[str, ...] = ()
    known: tuple[str, ...] = ()

    @property
    def last(self) -> dict:
        return self.case.last

    @property
    def counted(self) -> str:
        """How the outcome's counts and the page count it: "passed" (within its references,
        transients included), "recorded" (measured without references of the machine) or
        "failed" (a regression, a node outlier, a degraded link, broken, interfered or
        interrupted)."""
        return ("passed" if self.verdict in WITHIN_VERDICTS else
                "recorded" if self.verdict == RECORDED else "failed")

    @property
    def fixture(self) -> bool:
        """A fixture (netbench's build), no case of the fabric: counted only where it broke."""
        return bool(self.last.get("fixture"))

    @property
    def passed_last(self) -> bool:
        """Its last round passed (ReFrame stops confirming at the first pass)."""
        return self.last.get("result") == "pass"

    @property
    def disturbed(self) -> str:
        """"" where its last run's node was quiet, else what took its CPUs."""
        return casemodel.disturbance(self.last)

    @property
    def interfered(self) -> bool:
        """Broken because it failed while disturbed and its confirmation upheld that."""
        return self.verdict == BROKEN_HEALTH and casemodel.is_interfered(self.last)

    @property
    def not_run(self) -> bool:
        """Not run because a case it depends on (the build) failed."""
        return self.last.get("result") == FAIL_DEPS

    @property
    def failing_run(self) -> dict:
        """The run that shows its failure: the last where it failed, else its first failed
        run (a node outlier, a regression whose last round lay inside), else the last."""
        if self.last.get("result") not in ("pass", "xfail") or self.case.first is None:
            return self.case.last_ran
        return self.case.first

    @property
    def phase(self) -> str:
        """Where it failed: "interrupted", "reference missing", else ReFrame's phase (or its
        result where it has none)."""
        if self.verdict == casemodel.INTERRUPTED:
            return "interrupted"
        run = self.failing_run
        if MISSING_REFERENCE in str(run.get("fail_reason") or ""):
            return "reference missing"
        if run.get("result") == "pass":
            return self.verdict  # a degraded link under figures that passed
        return str(run.get("fail_phase") or run.get("result"))

    @property
    def reason(self) -> str:
        """Why it failed, in words: its link findings where a link is degraded, else
        broken_reason of its failing run."""
        if self.verdict == LINK_DEGRADED:
            return "; ".join(sorted({line for run in self.case.rounds or (self.last,)
                                     for line in link_findings(run)}))
        return broken_reason(self.failing_run)

    @property
    def confirmed(self) -> set[str]:
        """The variables its rounds confirm outside (cases.confirmed_variables)."""
        return casemodel.confirmed_variables(self.last, self.case.first, list(self.case.rounds))


def verdicts(report: dict) -> list[tuple[dict, str]]:
    """(last run, what the session's verdict makes of it) of every case that ran
    (case_verdicts)."""
    return [(judged.last, judged.verdict) for judged in case_verdicts(report)]


def case_verdicts(report: dict) -> list[CaseVerdict]:
    """(case, what the session's verdict makes of it) of every case that ran: the case
    model's health (fabricsuite.data.cases), where a disturbed failure its confirmation upheld is
    broken (interference, exit 2), one it did not is a transient like any other, a disturbed
    pass is a pass that says so, and a pass whose first run failed on nodes the references
    never saw is a node outlier."""
    found, cache = [], {}
    for case in casemodel.read(report):
        found.append(_with_nodes(_case_verdict(case, cache), cache))
    return found


def _with_nodes(judged: CaseVerdict, cache: dict) -> CaseVerdict:
    """A case's verdict with what the references knew of its nodes, read once, now."""
    case = judged.case
    unseen, known = unknown_nodes(case.first or case.last, cache)
    unseen_last, known_last = unknown_nodes(case.last, cache)
    outlier = (node_outlier(case.last, case.first, cache) if judged.verdict == NODE_OUTLIER
               else "")
    return judged._replace(outlier=outlier, unseen=tuple(unseen),
                           unseen_last=tuple(unseen_last),
                           known=tuple(known or known_last))


def _case_verdict(case: casemodel.Case, cache: dict) -> CaseVerdict:
    """One case's verdict (case_verdicts)."""
    verdict = case.health
    runs = case.rounds or (case.last,)
    if verdict != casemodel.INTERRUPTED and any(link_findings(run) for run in runs):
        return CaseVerdict(case, LINK_DEGRADED)
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
        return CaseVerdict(case, NODE_OUTLIER)
    if verdict == DISTURBED:
        if case.last.get("result") != "fail":
            verdict = casemodel.RECORDED if case.last.get("judged") is False \
                else casemodel.PASSED
        elif unconfirmed(case.last, case.first, list(case.rounds)):
            verdict = TRANSIENT
        else:
            verdict = BROKEN_HEALTH
    return CaseVerdict(case, verdict)


#: Verdicts counted as within the references: passed, or outside in one run only and dispelled
#: by its confirmation (a transient).
WITHIN_VERDICTS = (casemodel.PASSED, TRANSIENT)


def tally(report: dict) -> dict[str, list[dict]]:
    """`SessionVerdict.tally` of `judge(report)`."""
    return judge(report).tally()


# --- why a case failed --------------------------------------------------------------------------


def failed_dependency(case: dict, report: dict) -> str:
    """For a case not run because a dependency failed: which one, and how ("NetbenchBuild
    ~local:default+openmpi (build: make did not produce src/netbench)")."""
    wanted = {(d[0], d[1] if len(d) > 1 else None, d[2] if len(d) > 2 else None)
              for d in case.get("dependencies_actual") or [] if d}
    for other in casemodel.final_cases(report):
        scope = (other.get("unique_name"), f"{other.get('system')}:{other.get('partition')}",
                 other.get("environ"))
        if scope in wanted and other.get("result") not in ("pass", "skip"):
            return (f"{other.get('name')} ({other.get('fail_phase') or other.get('result')}: "
                    f"{shortened(other.get('fail_reason'), 150)})")
    names = sorted(str(d[0]) for d in wanted)
    return ", ".join(names) or "a dependency"


def build_error(case: dict) -> str | None:
    """For a case that failed to build, the first line of its build's stderr that says error
    (else its last line): ReFrame's reason is only "build job failed with exit code: 1", while
    the cause (Spack's fetch error offline, the compiler's message) is in the stage's
    rfm_build.err, which ReFrame keeps for a failed case. None otherwise."""
    if not str(case.get("fail_phase") or "").startswith("compile"):
        return None
    try:
        text = Path(str(case.get("stagedir")), str(case.get("build_stderr"))).read_text(
            errors="replace")
    except (OSError, ValueError):
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if re.search(r"\berror\b", line, re.IGNORECASE)]
    return (errors or lines)[0] if lines else None


def broken_reason(case: dict) -> str:
    """Why a run failed, with its build's own error where ReFrame's reason has none."""
    if casemodel.is_interfered(case):
        failed = ", ".join(sorted(casemodel.failed_variables(case)))
        return f"{failed} outside while the node was disturbed: {case.get('interference')}"
    reason = str(case.get("fail_reason") or "")
    if case.get("counters"):
        reason += f"; counters moved: {case['counters']}"
    cause = build_error(case)
    return f"{reason}; {case.get('build_stderr')}: {cause}" if cause else reason


def how_recorded(recorded: list[dict]) -> str:
    """What judged the recorded cases: "2 judged only against the limits of their cores" (their
    efficiencies' physics floors, fabricsuite.data.limits), or "not judged"."""
    physics = sum(1 for c in recorded if c.get("reference_origin") == PHYSICS_ORIGIN)
    return f"{physics} judged only against the limits of their cores" if physics else "not judged"


# --- the session's verdict ------------------------------------------------------------------------

#: exit statuses of a classified session (`fabricsuite nightly`, `python -m
#: fabricsuite.commands.session --classify`)
WITHIN, REGRESSED, BROKEN = 0, 1, 2


def tested(report: dict) -> list[dict]:
    """The last run of every case of the session that is a test of the fabric (fixtures, the
    build, left out), skipped ones included."""
    return [case for case in casemodel.final_cases(report) if not case.get("fixture")]


def skipped(case: dict) -> bool:
    """A case ReFrame skipped (never a pass, never a failure)."""
    return case.get("result") == "skip"


def _requested(reframe_args: list[str]) -> tuple[list[str], list[str]]:
    """The -p/--prgenv patterns and the --system partitions named on reframe's command line."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("-p", "--prgenv", action="append", default=[])
    parser.add_argument("--system")
    known, _ = parser.parse_known_args(reframe_args)
    partitions = [known.system] if known.system and ":" in known.system else []
    return known.prgenv, partitions


def problems(report: dict, reframe_args: list[str]) -> list[str]:
    """The coverage a session lost, one line each: nothing ran, an environment or partition it
    was asked for ran nothing, a check skipped in one environment of a partition it ran in."""
    # Fixtures (netbench's build) are not tests of the fabric: a session that only built counts
    # as having tested nothing.
    cases = [case for run in casemodel.runs_of(report) for case in run
             if not case.get("fixture")]
    ran = [c for c in cases if not skipped(c)]
    found = []
    if not ran:
        found.append(
            f"no test case ran ({len(cases)} selected, all skipped): nothing was tested; check "
            f"the -n/-p/--system filters and the skip reasons above"
        )
    prgenvs, partitions = _requested(reframe_args)
    for pattern in prgenvs:
        try:
            regex = re.compile(pattern)
        except re.error:
            continue  # ReFrame itself rejects it
        if ran and not any(regex.search(str(c.get("environ", ""))) for c in ran):
            environs = sorted({str(c.get("environ")) for c in ran})
            found.append(
                f"-p {pattern}: no case ran in a matching programming environment (ran only in "
                f"{', '.join(environs)}); is that MPI configured and installed on this system?"
            )
    # Skips that depend on the environment are an external program missing for its MPI (or
    # built with the other one): where the same check ran in another environment, that
    # environment's coverage is lost, not a pass.
    by_check: dict[tuple[str, str], dict[str, list[bool]]] = {}
    for case in cases:
        check, partition, environ, _levels = case_scope(case)
        by_check.setdefault((check, partition), {}).setdefault(environ, []).append(
            not skipped(case))
    for (check, partition), environs in sorted(by_check.items()):
        ran_in = sorted(e for e, runs in environs.items() if any(runs))
        skipped_in = sorted(e for e, runs in environs.items() if not any(runs))
        if ran_in and skipped_in:
            found.append(
                f"{check} on {partition} ran in {', '.join(ran_in)} but every case was skipped "
                f"in {', '.join(skipped_in)} (see the skip reasons): that environment's "
                f"{check} was not tested"
            )
    for partition in partitions:
        system, _, name = partition.partition(":")
        if ran and not any(c.get("system") == system and c.get("partition") == name
                           for c in ran):
            found.append(f"--system {partition}: no case ran on that partition")
    return found


def broken_cases(report: dict) -> list[dict]:
    """The final cases that are broken: build, launch, sanity, a missing or invalid reference,
    an abort, a dependency that failed, or a failure while the node was disturbed that its
    confirmation upheld."""
    return [case for case, verdict in verdicts(report) if verdict == BROKEN_HEALTH]


# --- the verdict as one value ---------------------------------------------------------------------

#: The exit statuses of a judged session, the one table `fabricsuite nightly --help`, the README
#: and ci/run-local.sh cite (tests/test_outcome.py holds them to it).
EXIT_STATUSES = (
    (WITHIN, "every case within its references (a transient, outside in fewer than half of "
             "its rounds, and a case recorded without references of its machine included)"),
    (REGRESSED, "a confirmed finding that needs a person: a regression (outside in most of "
                "its rounds), a node outlier, a degraded or flapped link"),
    (BROKEN, "something broken (build, launch, sanity, a missing or unbelievable reference, "
             "interference, a stale known finding), a session interrupted or not stored, or "
             "nothing tested"),
)

def exit_status_lines() -> list[str]:
    """EXIT_STATUSES one line each: "0  every case within its references (...)"."""
    return [f"{code}  {words}" for code, words in EXIT_STATUSES]


#: The counts of a session's outcome, its page and its stored verdict, in the order shown.
COUNTS = ("ran", "passed", "failed", "recorded", "not run", "skipped")

#: The schema of a stored verdict (`verdict_document`).
VERDICT_SCHEMA = "fabricsuite-verdict/1"


@dataclass(frozen=True)
class SessionVerdict:
    """A session's verdict, decided once (`judge`) and handed to every consumer: the outcome,
    its JUnit and exit status, the findings file, the page, history and compare. Stored with
    the session (`write_verdict`), so that the past is shown as it was judged (`past`)."""

    session: str
    #: Every case that ran, with its verdict (fixtures among them where they broke).
    cases: tuple[CaseVerdict, ...]
    status: int
    why: str
    #: {name in COUNTS: number}: the cases of the fabric (fixtures left out).
    counts: MappingProxyType
    #: When it was judged (ISO UTC), and how a consumer came by it: "" when decided at the end
    #: of the session; "stored": read back; "re-judged": against today's references, on request.
    judged_at: str = ""
    origin: str = ""

    def tally(self) -> dict[str, list[dict]]:
        """The cases that ran (fixtures left out) by how they count: {"passed": [last runs],
        "recorded": [...], "failed": [...]}."""
        found: dict[str, list[dict]] = {"passed": [], "recorded": [], "failed": []}
        for judged in self.cases:
            if not judged.fixture:
                found[judged.counted].append(judged.last)
        return found


def judge(report: dict, reframe_args: list[str] | None = None, unstored: str | None = None,
          skipped: int | None = None) -> SessionVerdict:
    """The session's verdict (see SessionVerdict): every case judged once, against the
    references of now. `skipped`: the skips its console recorded, where it has them (else the
    report's); `unstored`: the session is missing from the results database (broken,
    whatever its cases say: history, compare and the page would not see it)."""
    judged = tuple(case_verdicts(report))
    status, why = _classify(report, reframe_args, judged)
    if unstored:
        status, why = max(status, BROKEN), (f"BROKEN: the session was not stored ({unstored}); "
                                            f"its cases: {why}")
    return SessionVerdict(_session_of(report), judged, status, why,
                          _counts(report, judged, skipped), iso_utc())


def _session_of(report: dict) -> str:
    info = report.get("session_info") if isinstance(report.get("session_info"), dict) else {}
    return str(info.get("uuid") or "")


def _counts(report: dict, judged: tuple[CaseVerdict, ...],
            skipped_count: int | None) -> MappingProxyType:
    cases = [j for j in judged if not j.fixture]
    ran = [c for c in tested(report) if not skipped(c)]
    counts = {"ran": len(ran)}
    for name in ("passed", "failed", "recorded"):
        counts[name] = sum(1 for j in cases if j.counted == name)
    counts["not run"] = sum(1 for j in cases if j.not_run)
    counts["skipped"] = skipped_count or sum(1 for c in tested(report) if skipped(c))
    return MappingProxyType(counts)


def verdict_document(verdict: SessionVerdict) -> dict:
    """A verdict as it is stored beside its session (`write_verdict`)."""
    return {"schema": VERDICT_SCHEMA, "session": verdict.session,
            "judged_at": verdict.judged_at, "status": verdict.status, "why": verdict.why,
            "counts": dict(verdict.counts),
            "cases": [{"key": list(casemodel.case_key(j.last)), "verdict": j.verdict,
                       "outlier": j.outlier, "unseen": list(j.unseen),
                       "unseen_last": list(j.unseen_last), "known": list(j.known)}
                      for j in verdict.cases]}


def verdict_path(results: Path, session: str) -> Path:
    """Where a session's verdict is stored: `verdicts/<session uuid>.json` of its results."""
    return Path(results) / "verdicts" / f"{session}.json"


def write_verdict(results: Path, verdict: SessionVerdict) -> Path:
    """Stores a verdict with its session, atomically (one verdict per session: a re-test of
    suspects is a session of its own)."""
    from fabricsuite.data.store import replace_file

    path = verdict_path(results, verdict.session or "unnamed")
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, json.dumps(verdict_document(verdict), indent=1) + "\n")
    return path


def stored(report: dict, document: dict) -> SessionVerdict | None:
    """The verdict `document` (verdict_document) stored for `report`'s session, with the cases
    read from the report; None where it is not that session's or not a verdict."""
    if (not isinstance(document, dict) or document.get("schema") != VERDICT_SCHEMA
            or document.get("session") != _session_of(report)
            or not isinstance(document.get("cases"), list)):
        return None
    by_key = {tuple(entry["key"]): entry for entry in document["cases"]
              if isinstance(entry, dict) and isinstance(entry.get("key"), list)}
    judged = []
    for case in casemodel.read(report):
        entry = by_key.get(casemodel.case_key(case.last))
        if entry is None:
            return None  # not the report it was judged from
        judged.append(CaseVerdict(case, str(entry.get("verdict")), str(entry.get("outlier", "")),
                                  tuple(entry.get("unseen") or ()),
                                  tuple(entry.get("unseen_last") or ()),
                                  tuple(entry.get("known") or ())))
    counts = document.get("counts") if isinstance(document.get("counts"), dict) else {}
    return SessionVerdict(_session_of(report), tuple(judged), int(document.get("status", BROKEN)),
                          str(document.get("why", "")),
                          MappingProxyType({name: int(counts.get(name, 0)) for name in COUNTS}),
                          str(document.get("judged_at", "")), "stored")


def past(report: dict, results: Path | None, rejudge: bool = False) -> SessionVerdict:
    """A stored session's verdict as it was judged (`stored`), else judged now; `rejudge`:
    judged against today's references all the same, and labelled so."""
    if results is not None and not rejudge:
        try:
            document = json.loads(verdict_path(results, _session_of(report)).read_text())
        except (OSError, ValueError):
            document = None
        found = stored(report, document) if document else None
        if found is not None:
            return found
    verdict = judge(report)
    return replace(verdict, origin="re-judged" if rejudge else "judged now")


def classify(report: dict, reframe_args: list[str] | None = None,
             unstored: str | None = None) -> tuple[int, str]:
    """(exit status, why) of `judge`."""
    verdict = judge(report, reframe_args, unstored)
    return verdict.status, verdict.why


def _classify(report: dict, reframe_args: list[str] | None,
              outcomes: tuple[CaseVerdict, ...]) -> tuple[int, str]:
    if casemodel.was_interrupted(report):
        # ended by a signal (to the nightly, or to ReFrame alone, by anyone): nothing of it is
        # judged, recorded or a sample, its passed cases included (cases.was_interrupted)
        aborted = [c for cases in casemodel.runs_of(report) for c in cases
                   if c.get("result") in casemodel.ABORTED]
        info = aborted[0].get("fail_info") if aborted else None
        why = shortened(info.get("exc_value") if isinstance(info, dict) else "", 80) \
            or "a signal"
        return BROKEN, (f"INTERRUPTED: ReFrame aborted {len(aborted)} case(s) ({why.strip(': ')}"
                        f"): the session was not judged, and counts nowhere; run it again")
    of = {verdict: [judged for judged in outcomes if judged.verdict == verdict]
          for verdict in {judged.verdict for judged in outcomes}}
    degraded = [judged.last for judged in of.get(LINK_DEGRADED, [])]
    if degraded:
        # before broken cases: a link below its promise is what they most likely fail of
        found = sorted({line for case in degraded for line in link_findings(case)})
        return REGRESSED, (f"LINK DEGRADED: {len(found)} link finding(s) against the "
                           f"partition's declared links ({found[0]}"
                           + (f"; and {len(found) - 1} more" if len(found) > 1 else "") + ")")
    broken = of.get(BROKEN_HEALTH, [])
    lost = problems(report, reframe_args or [])
    if broken or lost:
        not_run = [judged for judged in broken if judged.not_run]
        disturbed = [judged.last for judged in broken if judged.interfered]
        stale = [judged.last for judged in broken
                 if casemodel.stale_known_finding(judged.last)]
        failed = len(broken) - len(not_run) - len(disturbed) - len(stale)
        what = [f"{failed} case(s) broken"] if failed else []
        what += [f"{len(stale)} known finding(s) no longer fail ("
                 f"{sorted(casemodel.unexpected_passes(stale[0]))[0]} of "
                 f"{stale[0].get('display_name') or stale[0].get('name')} met its $xfail "
                 f"reference): the fabric or the MPI changed; update the reference"] \
            if stale else []
        what += [f"{len(not_run)} not run (a dependency failed)"] if not_run else []
        what += [f"{len(disturbed)} case(s) outside their references while the node was not "
                 f"quiet: interference, not the fabric ({disturbed[0].get('interference')})"
                 ] if disturbed else []
        what += lost[:1]
        return BROKEN, "BROKEN: " + "; ".join(what)
    regressed = of.get(REGRESSION, [])
    outliers = of.get(NODE_OUTLIER, [])
    if regressed or outliers:
        what = [f"{len(regressed)} case(s) outside their references"] if regressed else []
        if outliers:
            nodes = sorted({n for judged in outliers for n in judged.unseen})
            what.append(f"{len(outliers)} case(s) outside only on node(s) the references never "
                        f"saw ({', '.join(nodes)}): node outlier, not the fabric")
        return REGRESSED, ("REGRESSION: " if regressed else "NODE OUTLIER: ") + "; ".join(what)
    transients = of.get(TRANSIENT, [])
    recorded = [judged.last for judged in of.get(RECORDED, [])]
    if recorded:
        # The embedded default's first sessions on a machine: measured, judged at most against
        # the limits of their cores (fabricsuite.data.limits).
        judged_count = len(outcomes) - len(recorded)
        return WITHIN, (f"RECORDED: {len(recorded)} case(s) measured and recorded without "
                        f"references of this machine ({how_recorded(recorded)})"
                        + (f"; {judged_count} case(s) within their references"
                           if judged_count else ""))
    why = f"PASSED: {len(outcomes)} case(s) within their references"
    if transients:
        why += (f" ({len(transients)} of them outside in one run only, not confirmed by the "
                f"other: transients)")
    return WITHIN, why
