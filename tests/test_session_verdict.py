"""The verdict as one value (issue 65): a session is judged once (session_verdict.judge), every
consumer is handed that value, it is stored with the session, and the past is shown as it was
judged; re-judging it against today's references is asked for and said. On the real stored
sessions of tests/data/cases (case_support) and the one table of exit statuses."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from case_support import DATA, on_nodes, report, session_of, sessions_of_every_verdict

from fabricsuite import REPO_ROOT
from fabricsuite.commands import history, session
from fabricsuite.commands.report.data import summary
from fabricsuite.data import findings, session_verdict
from fabricsuite.data.session_verdict import (
    EXIT_STATUSES,
    NODE_OUTLIER,
    judge,
    past,
    stored,
    verdict_document,
    write_verdict,
)


@pytest.mark.parametrize("name", sessions_of_every_verdict())
def test_a_stored_verdict_reads_back_as_it_was_judged(name, references_on_nodes):
    """Every health class (passed, recorded, transient, disturbed pass, node outlier,
    interference, interrupted, broken, link degraded): the stored document gives back the same
    verdict of every case, the same status, line and counts."""
    data = session_of(name)
    judged = judge(data)
    back = stored(data, json.loads(json.dumps(verdict_document(judged))))
    assert back is not None and back.origin == "stored"
    assert [(j.last.get("display_name"), j.verdict, j.outlier, j.unseen, j.known)
            for j in back.cases] == [(j.last.get("display_name"), j.verdict, j.outlier,
                                      j.unseen, j.known) for j in judged.cases]
    assert (back.status, back.why, dict(back.counts)) == (judged.status, judged.why,
                                                          dict(judged.counts))
    # another session's document is not this one's
    other = dict(verdict_document(judged), session="another")
    assert stored(data, other) is None


def test_a_past_node_outlier_stays_one_after_new_references_are_taken(references_on_nodes,
                                                                       tmp_path):
    """A session whose bandwidth case failed on n3, a node its references never saw, and
    passed on n1: a NODE OUTLIER. A baseline then takes references on n3 too. Judged again,
    the same session would pass; history and the page show it as it was judged, and say so;
    --rejudge judges it against today's references, and says that."""
    data = on_nodes(report("judged-own"), ["n3"], ["n1"], passed=True)
    then = judge(data)
    assert then.status == session.REGRESSED and then.why.startswith("NODE OUTLIER"), then.why
    results = tmp_path / "results"
    path = write_verdict(results, then)
    assert path == results / "verdicts" / f"{then.session}.json"
    # references taken on n3 as well (the file the fixture wrote)
    reference = references_on_nodes
    refs = yaml.safe_load(reference.read_text())
    for key, entry in refs["_statistics"].items():
        if key.startswith("NetbenchPingPongBandwidth "):
            entry["nodes"] = ["n1", "n2", "n3"]
    reference.write_text(yaml.safe_dump(refs))
    assert judge(data).status == session.WITHIN  # today's files would call it passed
    # the stored verdict stands
    kept = past(data, results)
    assert (kept.status, kept.why, kept.origin) == (then.status, then.why, "stored")
    bandwidth = next(j for j in kept.cases if j.case.check == "NetbenchPingPongBandwidth")
    assert bandwidth.verdict == NODE_OUTLIER and "n3" in bandwidth.outlier
    page = summary(data, "local", kept)
    assert [c.verdict for c in page.failed] == [NODE_OUTLIER]
    assert page.judged.startswith("as judged when it ended")
    assert any(line.startswith("NODE OUTLIER") for line in page.lines), page.lines
    series, _ = history.collect([data], "local", results=results)
    assert {p.verdict for s in series if s.check == "NetbenchPingPongBandwidth"
            for p in s.points} == {NODE_OUTLIER}
    # asked for: judged against today's references, and labelled so
    again = past(data, results, rejudge=True)
    assert again.status == session.WITHIN and again.origin == "re-judged"
    assert summary(data, "local", again).judged.startswith("re-judged now")
    series, _ = history.collect([data], "local", results=results, rejudge=True)
    assert NODE_OUTLIER not in {p.verdict for s in series for p in s.points}
    # no verdict stored (a session before verdicts were stored): judged now, and said so
    fresh = past(data, tmp_path / "elsewhere")
    assert fresh.origin == "judged now" and summary(data, "local", fresh).judged.startswith(
        "judged now")


def test_a_nightly_session_is_judged_once(references_on_nodes, tmp_path, monkeypatch, capsys):
    """The outcome, JUnit, the findings, the step lines and the stored verdict of one session
    all come from one judging of its cases (the nightly calls session.outcome directly)."""
    calls = []
    judge_cases = session_verdict.case_verdicts

    def counted(report_data):
        calls.append(1)
        return judge_cases(report_data)

    monkeypatch.setattr(session_verdict, "case_verdicts", counted)
    path = tmp_path / "run-report.json"
    path.write_text(json.dumps(on_nodes(report("judged-own"), ["n3"], ["n1"], passed=True)))
    status = session.outcome(path, ["--system", "local"], junit=tmp_path / "junit.xml",
                             findings=tmp_path / "findings.json", verdicts=tmp_path)
    said = capsys.readouterr().out
    assert len(calls) == 1, len(calls)
    assert status == session.REGRESSED
    (kept,) = (tmp_path / "verdicts").glob("*.json")
    assert said.splitlines()[-1] == f"outcome: {json.loads(kept.read_text())['why']} (exit 1)"
    doc = json.loads((tmp_path / "findings.json").read_text())
    assert doc["outcome"]["status"] == status and "node-outlier" in {
        f["kind"] for f in doc["findings"]}
    assert 'type="node-outlier"' in (tmp_path / "junit.xml").read_text()
    assert "nodes named, and their step" in said  # the step lines, from the same verdict


def test_one_table_of_exit_statuses_is_cited_by_the_help_the_readme_and_the_runner():
    import contextlib
    import io

    from fabricsuite.commands import cli

    def words(text: str) -> str:
        return " ".join(re.sub(r"^\s*#|\|", " ", text, flags=re.M).split())

    texts = {"README.md": (REPO_ROOT / "README.md").read_text(),
             "ci/run-local.sh": (REPO_ROOT / "ci" / "run-local.sh").read_text()}
    help_text = io.StringIO()
    with contextlib.redirect_stdout(help_text), contextlib.suppress(SystemExit):
        cli.main(["nightly", "--help"])
    texts["nightly --help"] = help_text.getvalue()
    assert [code for code, _ in EXIT_STATUSES] == [session.WITHIN, session.REGRESSED,
                                                   session.BROKEN]
    for name, text in texts.items():
        flat = words(text)
        for code, meaning in EXIT_STATUSES:
            assert f"{code} {words(meaning)}" in flat, (name, code)
    # every run mode of config/settings.py is named in --mode's help (without loading them)
    from fabricsuite import RUN_MODES
    from fabricsuite.commands.nightly import mode_names
    assert tuple(mode_names()) == RUN_MODES
    assert all(mode in words(texts["nightly --help"]).replace("- ", "-") for mode in RUN_MODES)


def test_the_page_counts_are_the_outcomes_for_every_stored_session(references_on_nodes):
    for name in sorted(p.stem for p in DATA.glob("*.json")):
        data = session_of(name)
        verdict = judge(data)
        (system,) = {c.get("system") for run in data["runs"] for c in run["testcases"]}
        page = summary(data, system, verdict)
        outcome = session.summary_lines(data, [], verdict=verdict)[1]
        assert outcome.startswith(f"ran {verdict.counts['ran']} case(s): {page.passed} passed, "
                                  f"{page.failed_count} failed"), (name, outcome)
        assert outcome.endswith(f"; {page.skipped} skipped"), (name, outcome)
        assert findings.document(data, verdict=verdict)["outcome"]["status"] == verdict.status


def test_a_regression_whose_last_round_was_disturbed_is_named_with_its_disturbance(
        tmp_path, monkeypatch):
    """A real emulated-cluster session (CI 2026-12-06): quiet first run and disturbed
    confirmation both outside; one of two rounds disturbed, so the quiet one decides: a
    regression, which the outcome counted without naming the case (its lines skipped any case
    whose last round was disturbed)."""
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "emucluster.yaml").write_text(
        (DATA / "regression-last-round-disturbed.refs.yaml").read_text())
    monkeypatch.setenv("RFM_REFERENCE_PREFIX", str(refs))
    data = report("regression-last-round-disturbed")
    verdict = session_verdict.judge(data, [], [], [])
    assert [c.verdict for c in verdict.cases if c.case.check.startswith("NetbenchPing")] == [
        "regression"]
    lines = [line for line in session.verdict_lines(data, verdict)
             if line.startswith("REGRESSION")]
    assert lines and all(line.startswith("REGRESSION NetbenchPingPongBandwidth emucluster:nodes "
                                         "openmpi other-node bandwidth_") for line in lines), lines
    assert all("its last round disturbed (rank 1 (fst71422, CPU 1) waited 15% of the run for "
               "its CPU" in line and "the quiet rounds decide" in line for line in lines), lines
