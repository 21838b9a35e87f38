"""Lost coverage is a failure: after a ReFrame session, did it test what it was asked to?

ReFrame reports "PASSED, Ran 0/0" and exits 0 when nothing ran (an environment that does not
exist on the system, a filter that matched nothing, every case skipped). For a regression suite
that is a false pass. `python -m fabricsuite.commands.session REPORT -- REFRAME_ARGS...` reads the
session's JSON run report and fails (exit 1, one line per problem) when

- no test case ran at all (every case skipped, or none selected);
- an environment named with `-p/--prgenv` ran no case;
- a partition named with `--system SYSTEM:PARTITION` ran no case;
- a check ran in one environment of a partition and every case of it was skipped in another
  (an external suite's program missing for that MPI, or built with the other MPI only).

It also prints each performance verdict that a confirmation round (`--max-retries`, see
fabricsuite/checks/judged_check.py) changed or upheld, with both figures, and for each variable that
failed its reference the value, the reference, the bound, the change and how many noise widths (the
spread `fabricsuite baseline` recorded in the reference file's `_statistics`) it lies away.

`ci/run-local.sh` calls it after every run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from fabricsuite.base.formats import shortened as _short
from fabricsuite.base.metrics import (
    case_scope,
    case_where,
    is_finite_number,
    series_key,
)
from fabricsuite.data import cases as casemodel
from fabricsuite.data.cases import BROKEN as BROKEN_HEALTH
from fabricsuite.data.cases import (
    RECORDED,
    REGRESSION,
    TRANSIENT,
    RunFigure,
    failed_variables,
    final_cases,
    run_figure,
    run_figures,
)
from fabricsuite.data.findings import document as findings_document
from fabricsuite.data.findings import step_lines
from fabricsuite.data.findings import write as write_findings
from fabricsuite.data.limits import PHYSICS_ORIGIN, efficiency_lines
from fabricsuite.data.links import evidence_lines, link_findings, promise_lines
from fabricsuite.data.references import recorded_only
from fabricsuite.data.session_verdict import (
    BROKEN,
    LINK_DEGRADED,
    NODE_OUTLIER,
    REGRESSED,
    WITHIN,
    CaseVerdict,
    SessionVerdict,
    broken_cases,
    classify,
    failed_dependency,
    how_recorded,
    judge,
    problems,
    reference_data,
    reference_statistics,
    skipped,
    tested,
    write_verdict,
)

#: The session's verdict and its parts, decided in the data layer (fabricsuite.data.session_verdict)
#: and shown here: kept under these names for the callers that import them from here.
__all__ = ["BROKEN", "REGRESSED", "WITHIN", "broken_cases", "classify", "main", "problems",
           "summary_lines", "verdict_lines", "write_junit"]


def recorded_only_lines(report: dict, cache: dict | None = None) -> list[str]:
    """The variables this session measured that its reference files record without judging
    them (`_recorded_only`: the machine moves them too much to catch a 2x slowdown), with the
    reason of the first few."""
    cache = {} if cache is None else cache
    found: dict[str, str] = {}
    for case in final_cases(report):
        figures = run_figures(case)
        if skipped(case) or not figures:
            continue
        check, partition, environ, levels = case_scope(case)
        data = reference_data(str(case.get("system")), cache, case.get("machine"))
        recorded = recorded_only(data)
        held = set(case.get("physics_bounded") or ())
        for variable in (f.variable for f in figures):
            if variable in held:
                continue  # still judged, against its physics floor (limits.within_physics)
            dotted = ".".join([check, partition, environ, *[v for _, v in levels], variable])
            if dotted in recorded:
                found[series_key(check, partition, environ, levels, variable)] = recorded[dotted]
    if not found:
        return []
    lines = [f"recorded, not judged: {len(found)} variable(s) this machine itself moves too "
             f"much to catch a 2x slowdown (the reference file's _recorded_only), e.g.:"]
    for key in sorted(found)[:3]:
        lines.append(f"  {key}: {_short(found[key], 110)}")
    return lines


#: Figures named one by one in the comparison with another machine of the same kind.
KIND_SHOWN = 3


def kind_comparison_lines(cases: list[dict]) -> list[str]:
    """How far this machine lies from the references of another machine of its kind, for the
    cases that have no references of this machine yet (each case's `kind_reference`, from
    fabricsuite.data.references.kind_references): information, never a verdict (two machines of one
    kind differ by 2x in memory-bound figures): "1 MiB ping-pong bandwidth 13 % below ..."."""
    worse: list[tuple[float, str]] = []
    kinds = set()
    for case in cases:
        kind_values = case.get("kind_reference") or {}
        if (not isinstance(kind_values, dict) or not kind_values
                or skipped(case) or casemodel.disturbance(case)):
            continue  # a disturbed run's figures say nothing of the machine
        kinds.add(str(case.get("kind_origin") or "?"))
        directions = case.get("perf_directions") or {}
        for figure in run_figures(case):
            variable = figure.variable
            other = kind_values.get(variable)
            if figure.number is None or not (is_finite_number(other) and other):
                continue
            change = (figure.number - other) / abs(other)
            sign = {"lower": 1.0, "higher": -1.0}.get(directions.get(variable))
            if sign is None:
                continue
            side = "above" if change > 0 else "below"
            worse.append((sign * change, f"{case_where(case)} {variable} {abs(change):.0%} {side} "
                                         f"({_number(figure.value)} against "
                                         f"{_number(other)})"))
    if not worse:
        return []
    worse.sort(key=lambda w: -w[0])
    median = sorted(w for w, _ in worse)[len(worse) // 2]
    bad = [text for badness, text in worse if badness > 0]
    # A machine better in every figure still shows how far it lies (the good side's farthest).
    shown = bad or [text for _, text in reversed(worse)]
    lines = [f"compared with another machine of this kind ({', '.join(sorted(kinds))}; "
             f"information, not a verdict: machines of one kind differ): {len(worse)} "
             f"figure(s), median {abs(median):.0%} {'worse' if median > 0 else 'better'}; "
             f"{'farthest on the bad side' if bad else 'none on the bad side; farthest'}:"]
    return lines + [f"  {text}" for text in shown[:KIND_SHOWN]]


def _number(value: Any) -> str:
    """A figure as the summary prints it; null where the run had none (an unresolved one)."""
    return f"{value:g}" if isinstance(value, (int, float)) else "null"


def _figure(figure: RunFigure) -> str:
    text = f"{_number(figure.value)} {figure.unit}"
    ref, lower, upper = figure.reference, figure.lower, figure.upper
    if isinstance(ref, (int, float)) and ref and isinstance(figure.value, (int, float)):
        change = (figure.value - ref) / abs(ref)
        bound = f"{lower:+.1%}" if lower is not None else f"{upper:+.1%}"
        text += f" (reference {ref:g}, {change:+.1%}, bound {bound})"
    return text


def _rounds_text(rounds: list[dict], key: str, unit: str) -> str:
    """"; outside in 2 of 3 rounds: 1878, 1933, 6954 MB/s" for a case measured in more than
    two rounds (the rule that weighs every round, fabricsuite.data.cases.confirmed_variables)."""
    figures = [run_figure(run, key) for run in rounds]
    figures = [f for f in figures if f is not None and f.result]
    if len(figures) < 3:
        return ""
    outside = sum(1 for f in figures if f.failed)
    return (f"; outside in {outside} of {len(figures)} rounds: "
            f"{', '.join(_number(f.value) for f in figures)} {unit}")


def verdict_lines(report: dict, verdict: SessionVerdict | None = None) -> list[str]:
    """Confirmed regressions and transients dispelled by confirmation, one line each, for the
    cases whose session verdict (fabricsuite.data.session_verdict; `judge(report)` where none is
    given) says so: a line never names a verdict the outcome does not count."""
    lines, cache = [], {}
    for judged in (verdict or judge(report)).cases:
        case, earlier, verdict_of = judged.last, judged.case.first, judged.verdict
        if judged.passed_last and judged.disturbed:
            lines.append(f"passed while disturbed: {case_where(case)}: {judged.disturbed}")
        if verdict_of == NODE_OUTLIER:
            lines.append(f"NODE OUTLIER {case_where(case)}: {judged.outlier}: the node, not "
                         f"the fabric")
            continue
        if (verdict_of in (casemodel.PASSED, RECORDED) and judged.passed_last
                and earlier is not None):
            then = "; ".join(f"{f.variable} {_figure(f)}" for f in run_figures(earlier)
                             if f.failed)
            lines.append(f"confirmation passed: {case_where(case)}: first "
                         f"{then or judged.phase}, then within reference")
            continue
        if verdict_of in (REGRESSION, TRANSIENT, LINK_DEGRADED):
            # its verdict weighed every round (a disturbed last one among quiet ones does not
            # decide it): the lines name what the outcome counts, and say the disturbance
            lines += [f"{line}; its last round disturbed ({judged.disturbed}), the quiet "
                      f"rounds decide" if judged.disturbed else line
                      for line in _outside_lines(judged, cache)]
    return lines


def _outside_lines(judged: CaseVerdict, cache: dict) -> list[str]:
    """The variables a case found outside its references, one line each: REGRESSION where its
    rounds confirm it, "not confirmed" where they do not."""
    case, earlier = judged.last, judged.case.first
    confirmed = judged.confirmed
    passed_last = judged.passed_last
    if (passed_last and not confirmed) or (not passed_last and judged.phase != "performance"):
        return []
    rounds = list(judged.case.rounds)
    stats = reference_statistics(str(case.get("system")), cache, case.get("machine"))
    lines = []
    for perf in run_figures(case):
        key, variable = perf.key, perf.variable
        if passed_last:
            # inside only in the last round: the line names the first run's figure
            if variable not in confirmed:
                continue
            perf = run_figure(earlier, key) or perf
        if not perf.result or (not perf.failed and not passed_last):
            continue
        before = run_figure(earlier, key)
        if variable not in confirmed:
            first_figure = f"{_number(before.value)} {perf.unit}" if before else "within"
            lines.append(f"not confirmed: {case_where(case)} {variable} = {_figure(perf)} in "
                         f"the confirmation run only (first run {first_figure}, within its "
                         f"reference): a transient, no regression")
            continue
        line = f"REGRESSION {case_where(case)} {variable} = {_figure(perf)}"
        if case.get("reference_origin") == PHYSICS_ORIGIN:
            line += (" [against the limits of its cores: beyond the physics floor that "
                     "every healthy machine measured keeps, fabricsuite.data.limits]")
        elif variable in (case.get("physics_bounded") or ()):
            line += (" [against the limits of its cores: beyond the physics floor, which "
                     "holds wherever this machine's references bound it looser or record "
                     "it only, fabricsuite.data.limits]")
        stat_key = series_key(*case_scope(case), variable)
        spread = (stats.get(stat_key) or {}).get("spread")
        value, ref = perf.value, perf.reference
        if spread and isinstance(ref, (int, float)) and ref and isinstance(value, (int, float)):
            widths = abs(value - ref) / abs(ref) / spread
            line += f", {widths:.1f} noise widths (spread {spread:.2%})"
        if earlier is not None:
            if before:
                line += f"; confirmed: first run {_number(before.value)} {perf.unit}"
            line += _rounds_text(rounds, key, perf.unit)
        if case.get("counters"):
            line += f"; counters moved: {case['counters']}"
        if judged.unseen_last:
            line += (f"; on node(s) the references never saw: {', '.join(judged.unseen_last)} "
                     f"(taken on {', '.join(judged.known)})")
        line += named_components(case)
        lines.append(line)
    return lines


# --- the one-screen outcome ------------------------------------------------------------------

#: skip reasons shown one line each; the rest are summed in one line
SKIP_GROUPS_SHOWN = 8


#: ReFrame's skip reason for such a case (printed as a SKIP, recorded by fabricsuite.base.console)
DEPS_SKIP_REASON = "dependencies failed"


def read_skips(path: Path | None) -> list[dict]:
    """The skipped cases recorded by fabricsuite.base.console (one JSON object per line)."""
    if path is None or not path.is_file():
        return []
    found = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(record, dict):
            found.append(record)
    return found


def skip_group(case: str, reason: str) -> str:
    """A skip reason with what varies from case to case masked by the parameter's name, so
    that one line stands for all cases skipped for the same reason: `cg.S.x not found` of
    `%kernel=cg` becomes `<kernel>.S.x not found`, `this case needs 4` of `%node_count=4`
    becomes `this case needs <node_count>` (a number only as the reason's last word: a `1`
    elsewhere is rarely the parameter)."""
    for name, value in re.findall(r"%([\w.]+)=(\S+)", case):
        if name.startswith("."):  # %.repeat_no
            continue
        if value.isdigit():
            reason = re.sub(rf"(?<![\w.]){re.escape(value)}$", f"<{name}>", reason)
        elif len(value) > 1:
            reason = re.sub(rf"(?<![\w-]){re.escape(value)}(?![\w-])", f"<{name}>", reason)
    return reason


def named_components(case: dict) -> str:
    """"; faulty uplink leaf1 ...": the fabric components an all-pairs map named as faulty or
    could not explain (checks/fabric_map.py's `components`), "" for none."""
    named = [part for part in str(case.get("components") or "").split("; ")
             if part.startswith(("faulty ", "no single component"))]
    return "".join(f"; {part}" for part in named)


def unjudged_lines(cases: list[dict]) -> list[str]:
    """The figures a run left out of its verdict because netbench flagged them unreliable (a
    check's `unjudged`, rfm_netbench), one line each: measured, unbounded, no sample."""
    found = [f"  {case_where(case)} {_short(line, 220)}" for case in cases
             for line in (case.get("unjudged") or []) if isinstance(line, str)]
    return (["not judged in this run, netbench flagged them unreliable (the case's other "
             "figures are judged):", *found] if found else [])


def no_number_lines(cases: list[dict]) -> list[str]:
    """The figures of the run report that are no number (NaN, inf: a report edited by hand, or
    a check that let one through), one line each: ReFrame passes them against any bound, and
    history, compare and baseline leave them out, so they are named here."""
    found = [f"  {case_where(case)} {figure.variable}={figure.value}"
             for case in cases for figure in run_figures(case)
             if isinstance(figure.value, float) and not is_finite_number(figure.value)]
    return (["figures that are no number (judged by nothing, left out of history, compare "
             "and baseline):", *found] if found else [])


def transport_lines(cases: list[dict]) -> list[str]:
    """What carried the cases that say it (fabricsuite.data.transport), per partition and
    environment: "carried by: local:default openmpi vader (36 cases)"."""
    carried: dict[tuple[str, str], int] = {}
    for case in cases:
        if case.get("transport"):
            where = f"{case.get('system')}:{case.get('partition')} {case.get('environ')}"
            key = (where, str(case["transport"]))
            carried[key] = carried.get(key, 0) + 1
    if not carried:
        return []
    return ["carried by (transport): " + "; ".join(
        f"{where} {transport} ({n} case{'s' if n > 1 else ''})"
        for (where, transport), n in sorted(carried.items()))]


def _selected_system(info: dict) -> str:
    """The system a session that ran no case was started on: its command line's --system, or
    ReFrame's own choice by hostname ("this machine's system")."""
    words = str(info.get("cmdline") or "").split()
    for i, word in enumerate(words):
        if word.startswith("--system="):
            return word.split("=", 1)[1]
        if word == "--system" and i + 1 < len(words):
            return words[i + 1]
    return f"the system of {info.get('hostname') or 'this machine'} (no case selected)"


def shown_skips(skips: list[dict]) -> list[dict]:
    """The skips the console recorded, less the cases not run for a failed dependency (counted,
    and shown, as such)."""
    return [r for r in skips if str(r.get("reason")) != DEPS_SKIP_REASON]


def summary_lines(report: dict, skips: list[dict], reframe_args: list[str] | None = None,
                  verdict: SessionVerdict | None = None, show_exit: bool = True,
                  machine_lines: list[str] | None = None) -> list[str]:
    """The session's outcome on one screen: `verdict` (`judge(report)` where none is given)
    in words (`machine_lines`: what the embedded default recorded of its machine,
    fabricsuite.commands.machine_references.take_references, just before the outcome)."""
    info = report.get("session_info", {})
    skips = shown_skips(skips)
    verdict = verdict or judge(report, reframe_args, skipped=len(skips))
    tests = tested(report)
    ran = [c for c in tests if not skipped(c)]
    judged = verdict.cases
    recorded = verdict.tally()["recorded"]
    phases: dict[str, int] = {}
    for case in judged:
        if case.counted == "failed" and not case.fixture:
            phases[case.phase] = phases.get(case.phase, 0) + 1
    systems = sorted({f"{c.get('system')}:{c.get('partition')}" for c in ran or tests}) or [
        _selected_system(info)]
    elapsed = info.get("time_elapsed")
    head = f"session {str(info.get('uuid', '?'))[:8]} on {', '.join(systems)}"
    if isinstance(elapsed, (int, float)):
        head += f", {elapsed / 60:.1f} min"
    lines = [f"==== fabricsuite outcome: {head} ===="]
    told = verdict.counts  # the counts the page and the stored verdict show too
    counts = f"ran {told['ran']} case(s): {told['passed']} passed, {told['failed']} failed"
    if recorded:
        counts += f", {len(recorded)} recorded without references ({how_recorded(recorded)})"
    if phases:
        counts += " (" + ", ".join(f"{n} {p}" for p, n in sorted(phases.items())) + ")"
    lines.append(counts + f"; {told['skipped']} skipped")
    groups: dict[str, int] = {}
    for record in skips:
        reason = _short(skip_group(str(record.get("case", "")), str(record.get("reason"))), 110)
        groups[reason] = groups.get(reason, 0) + 1
    if groups:
        lines.append("skipped, by reason:")
        ordered = sorted(groups.items(), key=lambda kv: (-kv[1], kv[0]))
        for reason, n in ordered[:SKIP_GROUPS_SHOWN]:
            lines.append(f"  {n:5d}  {reason}")
        rest = ordered[SKIP_GROUPS_SHOWN:]
        if rest:
            lines.append(f"  {sum(n for _, n in rest):5d}  ({len(rest)} other reasons)")
    verdict_texts = verdict_lines(report, verdict)
    broken = [j for j in judged if j.verdict == BROKEN_HEALTH]
    findings = sorted({line for j in judged if j.verdict == LINK_DEGRADED
                       for line in link_findings(j.last)})
    if findings:
        lines.append("links against their promise (fabricsuite.data.links):")
        lines += [f"  {line}" for line in findings]
    if verdict_texts or broken:
        lines.append("failures and confirmations:")
        lines += [f"  {line}" for line in verdict_texts]
        not_run: dict[str, int] = {}
        for case in broken:
            if case.not_run:
                dependency = failed_dependency(case.last, report)
                not_run[dependency] = not_run.get(dependency, 0) + 1
                continue
            if case.interfered:
                lines.append(f"  INTERFERENCE {case_where(case.last)}: "
                             f"{_short(case.reason, 300)}")
                continue
            lines.append(f"  BROKEN {case_where(case.last)}: {case.phase}: "
                         f"{_short(case.reason, 300)}")
        lines += [f"  NOT RUN {n} case(s): their dependency failed: {dependency}"
                  for dependency, n in sorted(not_run.items())]
    lines += recorded_only_lines(report)
    lines += unjudged_lines(ran)
    lines += no_number_lines(ran)
    lines += efficiency_lines(ran)
    lines += promise_lines(ran)
    lines += evidence_lines(ran)
    lines += kind_comparison_lines(ran)
    lines += transport_lines(ran)
    lines += step_lines(report, verdict)
    lines += machine_lines or []
    lines.append(f"outcome: {verdict.why}" + (f" (exit {verdict.status})" if show_exit else ""))
    return lines


def write_broken_junit(path: Path, why: str) -> bool:
    """A JUnit file that says the session is broken (a crash, an interruption), with `why`;
    False when it cannot be written either (a full disk)."""
    import xml.etree.ElementTree as ET

    suite = ET.Element("testsuite", name="fabricsuite", tests="1", failures="0", errors="1",
                       skipped="0")
    case = ET.SubElement(suite, "testcase", classname="fabricsuite", name="session", time="0")
    ET.SubElement(case, "error", type="broken", message=_short(why, 300)).text = why
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    try:
        _write_xml(root, path)
    except OSError:
        return False
    return True


def _write_xml(root: Any, path: Path) -> None:
    """An XML tree written atomically (store.replace_file)."""
    import xml.etree.ElementTree as ET

    from fabricsuite.data.store import replace_file

    replace_file(path, ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n")


def write_junit(report: dict, skips: list[dict], path: Path,
                verdict: SessionVerdict | None = None) -> None:
    """JUnit XML of the final outcome (`verdict`, else `judge(report)`), written atomically.
    ReFrame's own (--report-junit) counts a skipped case as passed and keeps no skip reason;
    here a skip is <skipped> with its reason, and a performance failure names the variables,
    figures and bounds."""
    import xml.etree.ElementTree as ET

    info = report.get("session_info", {})
    # every case that ran, a passed fixture (the build) too: its verdict is the session's
    # (fabricsuite.data.session_verdict), the outcome's answer
    judged = {casemodel.case_key(j.last): j for j in (verdict or judge(report)).cases}
    cases = [c for c in final_cases(report) if not skipped(c)]
    # a case whose dependency failed is ReFrame's fail_deps in the report and a SKIP on its
    # console: one <skipped> from the report, naming the dependency
    reasons = {str(r.get("case")): str(r.get("reason")) for r in skips
               if str(r.get("reason")) != DEPS_SKIP_REASON}
    suite = ET.Element("testsuite", name="fabricsuite", hostname=str(info.get("hostname", "")),
                       timestamp=str(info.get("time_start", "")))
    failures = errors = recorded = not_run = 0
    for case in cases:
        element = ET.SubElement(
            suite, "testcase", classname=str(case.get("name", "")).split(" ")[0],
            name=f"{case_where(case)} [{case.get('unique_name', '')}]",
            time=f"{float(case.get('time_total') or 0):.3f}")
        found = judged.get(casemodel.case_key(case))
        verdict = found.verdict if found else casemodel.PASSED  # a passed fixture: built
        if found is None or verdict == casemodel.PASSED:
            continue
        if verdict == RECORDED:
            # measured and stored, not judged (no references of this machine yet): not a pass
            recorded += 1
            ET.SubElement(element, "skipped", message=(
                f"recorded, not judged: no references of this machine "
                f"({case.get('machine_descr') or case.get('machine')}) yet"))
            continue
        if verdict == LINK_DEGRADED:
            failures += 1
            ET.SubElement(element, "failure", type="link-degraded", message=_short(
                "; ".join(link_findings(case)), 300))
            continue
        if verdict == NODE_OUTLIER:
            failures += 1
            ET.SubElement(element, "failure", type="node-outlier", message=_short(
                f"outside only on node(s) its references never saw: {found.outlier}", 300))
            continue
        if found.not_run:
            not_run += 1
            ET.SubElement(element, "skipped", message=_short(
                f"not run: its dependency failed: {failed_dependency(case, report)}", 300))
            continue
        if verdict == TRANSIENT:
            # a transient: outside in fewer than half of its rounds; a pass, with what was seen
            ET.SubElement(element, "system-out").text = (
                "not confirmed (outside in fewer than half of its rounds): "
                + ", ".join(sorted(failed_variables(case))))
            continue
        shown = found.failing_run
        if verdict != REGRESSION:
            errors += 1
            kind = "interference" if found.interfered else found.phase
            bad = ET.SubElement(element, "error", type=kind,
                                message=_short(found.reason, 300))
        else:
            failures += 1
            bad = ET.SubElement(element, "failure", type="performance",
                                message=_short(found.reason, 300))
        confirmed = found.confirmed
        bad.text = "\n".join(
            f"{f.variable} = {_figure(f)}" for f in run_figures(shown)
            if f.result and (f.failed if verdict != REGRESSION else f.variable in confirmed)
        ) or found.reason
    for name, reason in reasons.items():
        element = ET.SubElement(suite, "testcase", classname=name.split(" ")[0], name=name,
                                time="0")
        ET.SubElement(element, "skipped", message=_short(reason, 300))
    suite.set("tests", str(len(cases) + len(reasons)))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(len(reasons) + recorded + not_run))
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    _write_xml(root, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fabricsuite.commands.session",
        description="The one-screen outcome of a ReFrame session; fails a session that tested "
                    "nothing or not what it was asked to.")
    parser.add_argument("report", help="the session's JSON run report")
    parser.add_argument("--skips", help="skipped cases recorded by fabricsuite.base.console")
    parser.add_argument("--junit", help="write JUnit XML of the outcome here")
    parser.add_argument("--findings", metavar="FILE", help="write its findings here (JSON)")
    parser.add_argument("--classify", action="store_true",
                        help="exit 0 within references, 1 regression, 2 broken (default: 1 "
                             "only when the session tested nothing or not what was asked)")
    parser.add_argument("--take-references", action="store_true",
                        help="the embedded default: count the sessions recorded without "
                             "references of this machine, and take its references once there "
                             "are enough (fabricsuite.data.machine)")
    parser.add_argument("--unstored", metavar="WHY",
                        help="the session is missing from the results database (the nightly's "
                             "storage check): broken, whatever its cases say")
    parser.add_argument("reframe_args", nargs=argparse.REMAINDER,
                        help="-- then the arguments the session was run with")
    args = parser.parse_args(argv)
    reframe_args = args.reframe_args[1:] if args.reframe_args[:1] == ["--"] else args.reframe_args
    return outcome(Path(args.report), reframe_args, skips=args.skips and Path(args.skips),
                   junit=args.junit and Path(args.junit),
                   findings=args.findings and Path(args.findings), classify=args.classify,
                   take_references=args.take_references, unstored=args.unstored)


def outcome(report_path: Path, reframe_args: list[str], skips: Path | None = None,
            junit: Path | None = None, findings: Path | None = None,
            verdicts: Path | None = None, classify: bool = True, take_references: bool = False,
            unstored: str | None = None) -> int:
    """A session judged once (fabricsuite.data.session_verdict.judge) and said: the one-screen
    outcome, its JUnit, its findings and its verdict, stored in `verdicts` (the nightly's
    results directory: RESULTS/verdicts/<session>.json); returns the exit status (`classify`:
    the verdict's, EXIT_STATUSES; else 1 only for lost coverage)."""
    try:
        report = json.loads(Path(report_path).read_text())
    except (OSError, json.JSONDecodeError) as err:
        why = "it wrote none" if isinstance(err, FileNotFoundError) else err
        print(f"fabricsuite: FAILED: no run report of the session ({report_path}: {why}): "
              f"ReFrame selected no test case (Ran 0/0) or did not finish, so nothing was "
              f"tested; check the -n/-p/--system filters and the output above", file=sys.stderr)
        return BROKEN if classify else 1
    skipped_cases = read_skips(skips)
    # an unstored session: the verdict stands in words, but history, compare and the page will
    # not see it
    verdict = judge(report, reframe_args, unstored, skipped=len(shown_skips(skipped_cases)))
    machine_lines = []
    if take_references:
        from fabricsuite.commands import baseline
        from fabricsuite.commands.machine_references import take_references as take
        from fabricsuite.data.machine import own_reference_dir
        try:
            machine_lines = take(report, Path(report_path).parent, own_reference_dir())
        except (baseline.BaselineError, OSError) as err:
            machine_lines = [f"references of this machine not taken: {err}"]
    for line in summary_lines(report, skipped_cases, reframe_args, verdict, show_exit=classify,
                              machine_lines=machine_lines):
        print(line)
    found = problems(report, reframe_args)
    for line in found:
        print(f"fabricsuite: FAILED: {line}", file=sys.stderr)
    writes = [("--junit", junit, lambda path: write_junit(report, skipped_cases, path, verdict)),
              ("--findings", findings, lambda path: write_findings(
                  path, findings_document(report, name=Path(report_path).stem,
                                          verdict=verdict))),
              ("the verdict's directory", verdicts, lambda path: write_verdict(path, verdict))]
    for option, path, write in writes:
        if path is None:
            continue
        try:
            write(path)
        except OSError as err:
            print(f"fabricsuite: cannot write {option} {path}: {err.strerror or err}; check "
                  f"the directory", file=sys.stderr)
            return BROKEN if classify else 1
    if classify:
        return verdict.status
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
