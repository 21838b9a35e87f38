"""Which fabric counters moved during a job (fabricsuite.data.counters), from real readings of
config/launchers/read-counters (tests/data/counters/README.md)."""

import shutil
import subprocess
from pathlib import Path

import pytest

from fabricsuite import REPO_ROOT
from fabricsuite.data import counters
from fabricsuite.data.counters import CountersError

DATA = Path(__file__).resolve().parent / "data" / "counters"


def reading(name: str) -> dict[str, int]:
    return counters.parse((DATA / f"{name}.txt").read_text())


def test_a_shaped_link_shows_the_shaper_s_drops_and_overlimits():
    moved = counters.deltas(reading("tbf-before"), reading("tbf-after"))
    assert moved["net/lo/tx_bytes"] == 224001 and moved["tc/lo/tbf-835e/sent_packets"] == 16
    assert counters.trouble(moved) == {"tc/lo/tbf-835e/dropped": 5,
                                       "tc/lo/tbf-835e/overlimits": 5}
    assert counters.describe(counters.trouble(moved)) == (
        "tc lo tbf-835e dropped +5, tc lo tbf-835e overlimits +5")


def test_an_idle_link_shows_no_movement():
    before, after = reading("idle-before"), reading("idle-after")
    assert before and counters.deltas(before, after) == {}


def test_every_line_of_a_reading_is_a_counter_or_a_skipped_source():
    for name in ("tbf-before", "tbf-after", "idle-before", "idle-after", "default-sources"):
        text = (DATA / f"{name}.txt").read_text()
        lines = text.splitlines()
        assert len(counters.parse(text)) + len(counters.skipped(text)) == len(lines)
        assert all(line.split("/", 1)[0] in counters.SOURCES for line in lines
                   if not line.startswith("#"))


def test_a_source_the_node_lacks_is_skipped_with_the_reason():
    text = (DATA / "default-sources.txt").read_text()
    assert counters.skipped(text) == {
        "infiniband": "no /sys/class/infiniband/*/ports (no InfiniBand or RoCE adapter)",
        "cxi": "no /sys/class/cxi/*/device/telemetry (no Slingshot CXI adapter)"}
    assert "net/lo/rx_bytes" in counters.parse(text)


def test_read_counters_names_its_file_after_the_node(tmp_path):
    # the real script: "%n" is the Slurm node's name; one that could reach a path is refused
    script = REPO_ROOT / "config/launchers/read-counters"
    for node, expected in (("node7", "node7"), ("../x y", "node")):
        subprocess.run([script, str(tmp_path / "c-%n.txt"), "cxi"], check=True,
                       env={"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": node})
        assert (tmp_path / f"c-{expected}.txt").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c-node.txt", "c-node7.txt"]


def stage_with(tmp_path: Path, readings: dict[str, tuple[str, str | None]]) -> str:
    """A stage directory holding, per node, the named readings before and after a job."""
    for node, (before, after) in readings.items():
        shutil.copy(DATA / f"{before}.txt",
                    tmp_path / counters.BEFORE.replace("%n", node))
        if after:
            shutil.copy(DATA / f"{after}.txt", tmp_path / counters.AFTER.replace("%n", node))
    return str(tmp_path)


def test_a_job_s_readings_are_judged_node_by_node(tmp_path):
    judged = counters.read_job(stage_with(tmp_path, {"node1": ("idle-before", "idle-after"),
                                                  "node2": ("tbf-before", "tbf-after")}))
    assert judged.trouble == ("node2 tc lo tbf-835e dropped +5, "
                              "node2 tc lo tbf-835e overlimits +5")
    assert judged.moved["node2/net/lo/tx_bytes"] == 224001
    assert not any(name.startswith("node1/") for name in judged.moved)
    assert judged.not_read == ""


def test_a_node_without_its_reading_after_the_job_is_named(tmp_path):
    judged = counters.read_job(stage_with(tmp_path, {"node1": ("default-sources", None),
                                                  "node2": ("idle-before", "idle-after")}))
    assert judged.trouble == "" and judged.moved == {}
    assert judged.not_read == "node1: no reading after the job"
    judged = counters.read_job(stage_with(tmp_path, {"node1": ("default-sources",
                                                            "default-sources")}))
    assert judged.not_read.startswith("node1 infiniband: no /sys/class/infiniband")
    assert counters.read_job(str(tmp_path / "nothing")).not_read == "no reading before the job"


def test_a_device_that_vanishes_or_appears_and_a_bad_value_are_named(tmp_path):
    """Issue 39: a counter that disappears or appears during a job, and a value that is no
    count, were dropped silently."""
    before = (DATA / "tbf-before.txt").read_text()
    (tmp_path / counters.BEFORE.replace("%n", "node1")).write_text(
        before + "net/eth9/rx_dropped 7\nnet/eth9/rx_bytes 100\nnet/lo/rx_errors -5\n")
    (tmp_path / counters.AFTER.replace("%n", "node1")).write_text(
        (DATA / "tbf-after.txt").read_text() + "net/ib0/rx_dropped 99999\nnet/ib0/tx_bytes 0\n"
        "net/lo/tx_errors n/a\n")
    judged = counters.read_job(str(tmp_path))
    assert "node1: net/eth9 (2 counters) gone during the job" in judged.not_read
    assert "node1: net/ib0 (2 counters) appeared during the job" in judged.not_read
    assert "node1: unreadable net/lo/rx_errors=-5, net/lo/tx_errors=n/a" in judged.not_read
    assert "node1 net ib0 rx_dropped +99999" in judged.trouble, judged.trouble


def test_a_counter_that_went_backwards_is_a_reset_said_never_negative_trouble(tmp_path):
    """Issue 53: a counter reset (a driver reload, a re-trained port) or a 32-bit wrap showed as
    negative trouble (`rx_errors -7`)."""
    before = (DATA / "tbf-before.txt").read_text()
    (tmp_path / counters.BEFORE.replace("%n", "node1")).write_text(
        before + "net/eth0/rx_errors 7\nnet/eth0/rx_bytes 4294967000\n")
    (tmp_path / counters.AFTER.replace("%n", "node1")).write_text(
        (DATA / "tbf-after.txt").read_text() + "net/eth0/rx_errors 0\nnet/eth0/rx_bytes 200\n")
    judged = counters.read_job(str(tmp_path))
    assert "eth0" not in judged.trouble and " -" not in judged.trouble, judged.trouble
    assert not any(change < 0 for change in judged.moved.values()), judged.moved
    assert ("node1: net/eth0/rx_bytes 4294967000->200, net/eth0/rx_errors 7->0 went backwards "
            "during the job (reset or wrapped: change unknown)") in judged.not_read
    assert judged.trouble.startswith("node1 tc lo tbf-835e dropped +5")  # the rest as before


def test_a_counter_present_once_only_is_not_a_change():
    # an interface that came up during the job (or a source that failed once) moves nothing
    assert counters.deltas({"net/a/rx_errors": 1}, {"net/b/rx_errors": 5}) == {}


@pytest.mark.parametrize("declared", ["net", ["net", "ethtool"], [1],
                                      {"sources": ["ethtool"]}])
def test_a_bad_declaration_is_one_line_naming_the_sources(declared):
    with pytest.raises(CountersError) as caught:
        counters.declared({"counters": declared})
    assert "net, infiniband, cxi, tc" in str(caught.value)


@pytest.mark.parametrize("declared", [{"nodes": "all"}, {"sources": ["net"], "node": "every"}])
def test_a_bad_node_declaration_is_one_line_naming_the_choices(declared):
    with pytest.raises(CountersError, match="'first' or 'every'"):
        counters.declared({"counters": declared})


def test_the_default_reading():
    assert counters.declared({}) == counters.Reading(["net", "infiniband", "cxi", "links"], "first")
    assert counters.declared({"counters": ["tc"]}) == counters.Reading(["tc"], "first")
    assert counters.declared({"counters": {"nodes": "every"}}) == counters.Reading(
        ["net", "infiniband", "cxi", "links"], "every")


def test_the_job_script_reads_the_first_node_or_every_node_through_srun():
    first = counters.commands(counters.Reading(["net", "tc"]), "/opt/fab suite/read-counters",
                              "local")
    assert first == ("'/opt/fab suite/read-counters' counters-before-%n.txt net tc",
                     "'/opt/fab suite/read-counters' counters-after-%n.txt net tc")
    before, _after = counters.commands(counters.Reading(["net"], "every"), "/r", "squeue")
    assert before == ("srun --nodes=$SLURM_JOB_NUM_NODES --ntasks=$SLURM_JOB_NUM_NODES "
                      "--ntasks-per-node=1 /r counters-before-%n.txt net")
    with pytest.raises(CountersError, match="scheduler is pbs; declare \"first\""):
        counters.commands(counters.Reading(["net"], "every"), "/r", "pbs")


def test_a_regression_names_the_counters_that_moved():
    from report_support import regression_lines

    lines = regression_lines(counters="tc eth0 tbf-8001 overlimits +3021")
    assert lines and all(ln.endswith("; counters moved: tc eth0 tbf-8001 overlimits +3021")
                         for ln in lines), lines


def test_a_link_that_went_down_and_came_back_during_the_job_flapped():
    """Real readings of a veth whose peer went down for 2 s (tests/data/counters/README.md):
    up before and after, so only its carrier changes tell; LINK FLAPPED, a confirmed finding
    of the node."""
    from fabricsuite.data import findings, links

    judged = counters.read_job(str(DATA / "flap"))
    assert judged.moved["node2/net/eth0/carrier_changes"] == 2
    assert links.judge(str(DATA / "flap"), None)[1] == ""  # the states agree: no LINK CHANGED
    assert counters.flapped(judged.moved, None) == [
        "LINK FLAPPED node2 net/eth0: down 1 time(s) during the job (carrier_changes +2)",
        "LINK FLAPPED node2 net/peer0: down 1 time(s) during the job (carrier_changes +2)"]
    promise = links.Contract("net/eth0", 1, 10.0)
    (line,) = counters.flapped(judged.moved, promise)
    (found,) = findings.link_findings_of([line], {})
    assert (found.kind, found.confidence, found.nodes) == ("link-degraded", "confirmed", "node2")
    assert links.is_finding(line)
    # a port the job's link findings name already (down after the job too) is left to them
    assert counters.flapped(judged.moved, promise, "LINK CHANGED node2 net/eth0 during the "
                                                    "job: 10 Gb/s -> down") == []
