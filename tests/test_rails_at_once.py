"""Every rail at once in one job (NetbenchRailsAtOnce, checks/fabric_map.py): the launcher
wrapper run for real (config/launchers/rails-at-once: one launch per rail, each in its own
directory with its rail's environment), and the case's one result from its rails' maps, read
from real netbench matrix output (tests/data/switches)."""

import json
import subprocess
from pathlib import Path

from fabricsuite.checks.rails import RAILS_AT_ONCE, at_once_words, on_rail, worst_of_rails
from fabricsuite.data import findings, switches
from fabricsuite.data.netbench_result import load

DATA = Path(__file__).parent / "data" / "switches"
SHOW = 'printf "%s|%s|%s\\n" "${OMPI_MCA_btl_tcp_if_include:-}" "${UCX_NET_DEVICES:-}" "$*" > out'


def at_once(tmp_path, *words):
    return subprocess.run([str(RAILS_AT_ONCE), *words], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)


def test_each_rail_runs_at_once_in_its_own_directory_with_its_own_nic(tmp_path):
    (tmp_path / "rail2").mkdir()
    (tmp_path / "rail2" / "stale.json").write_text("{}")  # an earlier run's: made afresh
    words = at_once_words(["net/eth0", "net/eth1"], [])
    proc = at_once(tmp_path, *words, "sh", "-c", SHOW, "_", "--json-file", "a b.json", "$(id)")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "rail1" / "out").read_text() == "eth0|eth0|--json-file a b.json $(id)\n"
    assert (tmp_path / "rail2" / "out").read_text() == "eth1|eth1|--json-file a b.json $(id)\n"
    assert not (tmp_path / "rail2" / "stale.json").exists()
    assert [(tmp_path / f"rail{k}" / "exit-status").read_text() for k in (1, 2)] == ["0\n"] * 2


def test_a_rail_that_fails_fails_the_job_and_says_which(tmp_path):
    proc = at_once(tmp_path, "--rail", "net/eth0", "A=1", "--rail", "net/eth1", "A=2", "--",
                   "--", "sh", "-c", '[ "$A" = 2 ] && exit 7; exit 0')
    assert proc.returncode == 7
    assert "rails-at-once: rail 2 (net/eth1) exited with 7" in proc.stderr
    assert (tmp_path / "rail2" / "exit-status").read_text() == "7\n"


def test_words_it_cannot_use_are_refused_in_one_line(tmp_path):
    for words, said in ((["--", "--", "true"], "no --rail given"),
                        (["--rail", "net/eth0", "$(id)", "--", "--", "true"],
                         "'$(id)' is no KEY=VALUE of rail 1"),
                        (["--rail", "net/eth0", "--", "srun"],
                         "expected -- PROGRAM after the launcher")):
        proc = at_once(tmp_path, *words)
        assert proc.returncode == 2 and proc.stderr.strip() == f"rails-at-once: {said}"


def test_the_case_is_its_slowest_rail_and_the_sum_of_its_rails_bad_pairs():
    healthy = load(DATA / "matrix-uplink1-slow-noisy.json")
    slow = load(DATA / "matrix-uplink1-slow.json")
    merged = worst_of_rails([healthy, slow])
    for column, pick in (("bandwidth_median_MBps", min), ("bandwidth_min_MBps", min),
                         ("latency_median_us", max)):
        assert merged.summary[column] == pick(healthy.summary[column], slow.summary[column])
    assert merged.summary["bad_pairs"] == healthy.summary["bad_pairs"] + slow.summary["bad_pairs"]
    pairs = merged.table("pairs")
    assert len(pairs) == len(healthy.table("pairs")) + len(slow.table("pairs"))
    assert {p["rail"] for p in pairs} == {1, 2} and len(merged.ranks) == 16
    assert merged.problems() == []  # sound, as each rail's is
    # the case's faulty components are each rail's own, said with its rail
    slow.switch_tree = (DATA / "matrix-uplink1-slow-tree.txt").read_text()
    lines = [on_rail(line, "rail 2") for line in switches.verdict(slow).lines()]
    assert lines[0].startswith("faulty uplink leaf1 or uplink leaf2") and \
        lines[0].endswith(" (rail 2)")
    assert on_rail("BELOW PROMISE the fabric: median pair 0.60", "rail 2") == \
        "BELOW PROMISE rail 2: the fabric: median pair 0.60"


def test_an_at_once_cases_rails_are_compared_side_by_side_in_the_findings():
    """The session's findings of a NetbenchRailsAtOnce case as its run report holds it
    (rails_node_best_MBps): a node's rail 2 at half of its rail 1 is named by node and rail."""
    from case_support import report

    data = report("judged-own")
    data["runs"] = data["runs"][:1]  # the session's first run, its one case below
    case = next(c for c in data["runs"][0]["testcases"] if c.get("perfvalues"))
    best = {f"n{i}": 25.0 for i in range(1, 5)}
    data["runs"][0]["testcases"] = [dict(
        case, name="NetbenchRailsAtOnce %node_count=4 %placement=per-node", rail="every",
        display_name="NetbenchRailsAtOnce %node_count=4 %placement=per-node",
        rails_node_best_MBps={"rail1": best, "rail2": dict(best, n3=12.5)})]
    doc = findings.document(json.loads(json.dumps(data)))
    assert [(f["kind"], f["nodes"], f["component"]) for f in doc["findings"]] == [
        ("faulty-link", "n3", "node n3 rail 2")]


def test_a_node_an_at_once_map_names_on_every_rail_is_the_nodes():
    from case_support import report

    data = report("judged-own")
    data["runs"] = data["runs"][:1]  # the session's first run, its one case below
    case = next(c for c in data["runs"][0]["testcases"] if c.get("perfvalues"))
    data["runs"][0]["testcases"] = [dict(
        case, name="NetbenchRailsAtOnce %node_count=4 %placement=per-node", rail="every",
        display_name="NetbenchRailsAtOnce %node_count=4 %placement=per-node",
        at_once_rails=["net/eth0", "net/eth1"],
        components="; ".join(f"faulty node n3: 3 of 3 pairs through it bad, median 12.5 MB/s "
                             f"against 24.8 MB/s for the healthy pairs (-50%) (rail {k})"
                             for k in (1, 2)))]
    doc = findings.document(json.loads(json.dumps(data)))
    assert [(f["kind"], f["nodes"], f["component"]) for f in doc["findings"]] == [
        ("faulty-link", "n3", "node n3 every rail")]
