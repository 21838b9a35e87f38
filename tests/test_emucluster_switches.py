"""Integration: the switch-aware all-pairs verdict through ReFrame on an emulated two-level
fabric (issue 30).

8 nodes under 2 leaf switches and a spine (`ci/emucluster.sh up --nodes 8 --leaves 2 --burst
16kb`), node links at 200 Mbit, uplinks unshaped, the shaper's burst small enough that one pair
alone measures the shaped rate at the map's bandwidth size (tested first); Slurm's
topology/tree reads the same tree, and the partition declares `extras.topology: "slurm"`, so the
job records `scontrol show topology` beside its map. NetbenchMatrix at 8 nodes (`-P
node_count=8`; timed on shared cores: the verdict is relative to the run's own best pair), with
references of 0 for bad pairs and faulty components:

- leaf 1's uplink at 50 Mbit, every node link healthy: the case fails on
  matrix_faulty_uplinks = 1 and names the uplink, no node (with leaf 2's: in a 2-leaf tree every
  pair that crosses one crosses the other), and the outcome's REGRESSION line says so;
- every uplink at 200 Mbit (4 node links of 200 Mbit share it: 4:1) and no fault: the case
  passes, the slow concurrent pairs crossing the uplinks cleared by the re-test alone and said
  to be congestion.

The 40 trials of the acceptance (10 per fault, precision and recall) are
bench/fault_localization.py's; docs/measurements.md has its figures. A job that dies while Open
MPI connects (rank 0 segfaulting in MPI_Init, about 1 in 200 emulated jobs, see
tests/test_emucluster_matrix.py) is run once more (run_reframe's --max-retries=1).
"""

import json
import os
import subprocess

import emu_support
import pytest
from emu_support import BIN, run_reframe

from fabricsuite import REPO_ROOT, switches
from fabricsuite.emucluster import OPENMPI_TCP

PREFIX = emu_support.prefix("fss")
pytestmark = emu_support.marks(PREFIX)
NODES, RATE, SLOW = 8, "200mbit", "50mbit"
REFERENCES = """\
NetbenchMatrix:
  $index: [$partition, $environ, scale]
  emucluster:nodes:
    openmpi:
      8x1:
        matrix_bandwidth_median_MBps: [25.0, null, null, MB/s]
        matrix_bandwidth_min_MBps: [25.0, null, null, MB/s]
        matrix_latency_median_us: [100.0, null, null, us]
        matrix_bad_pairs: [0, null, 0, pairs]
        matrix_bad_nodes: [0, null, 0, nodes]
        matrix_faulty_node_links: [0, null, 0, components]
        matrix_faulty_uplinks: [0, null, 0, components]
        matrix_faulty_switches: [0, null, 0, components]
_recorded_only:
""" + "".join(
    f"  'NetbenchMatrix.emucluster:nodes.openmpi.8x1.matrix_{name}': '{NODES} emulated nodes "
    f"share 2 cores: recorded; the verdict is the counts, relative to the run'\n"
    for name in ("bandwidth_median_MBps", "bandwidth_min_MBps", "latency_median_us"))


@pytest.fixture(scope="module")
def fabric(tmp_path_factory):
    state = tmp_path_factory.mktemp("emucluster-switches")
    yield from emu_support.cluster(state, PREFIX, emu_support.port_base(34000), nodes=NODES,
                                   rate=RATE, up=("--leaves", "2", "--burst", "16kb"))


def matrix_session(emu, tmp_path, rate, link):
    """One ReFrame session of NetbenchMatrix at 8 nodes while `link` is shaped to `rate`:
    (ReFrame's process, the case of its run report, the outcome's text)."""
    try:
        emu("rate", rate, "--link", link)
        return _session(emu, tmp_path)
    finally:
        emu("rate", "none", "--link", "uplinks")


def _session(emu, tmp_path, *more, env=None):
    refs = tmp_path / "refs"
    refs.mkdir()
    (refs / "emucluster.yaml").write_text(REFERENCES)
    results = tmp_path / "results"
    proc = run_reframe(
        emu, results, "-c", "checks/fabric_map.py", "-n", "NetbenchMatrix", "-p", "openmpi",
        "-P", f"node_count={NODES}", "-S", "timing_on_shared_cores=true",
        "-S", "NetbenchMatrix.matrix_options=--max-size,256K,--repetitions,3,--time-cap-ms,20",
        *more,
        extra_env={"RFM_REFERENCE_PREFIX": str(refs), "OMPI_MCA_mpi_yield_when_idle": "1",
                   **(env or {})})
    reports = sorted((results / "reports").glob("*.json"))
    assert reports, proc.stdout[-3000:] + proc.stderr[-2000:]
    report_path = reports[-1]
    case = next(c for c in json.loads(report_path.read_text())["runs"][-1]["testcases"]
                if c["name"].startswith("NetbenchMatrix"))
    outcome = subprocess.run([str(BIN / "python"), "-m", "fabricsuite.session",
                              str(report_path)], capture_output=True, text=True, cwd=REPO_ROOT,
                             env={**os.environ, "RFM_REFERENCE_PREFIX": str(refs)})
    return proc, case, outcome.stdout


#: The map's bandwidth size (NetbenchMatrix's --max-size here and in bench/fault_localization.py).
MAP_BANDWIDTH_SIZE = 256 * 1024


def test_one_pair_alone_measures_the_shaped_rate_at_the_maps_size(fabric, netbench_program,
                                                                   tmp_path):
    """A link shaped to R must measure R at the size the map judges bandwidth by, or a link 25 %
    slow reads as a few percent slow (issue 41: with a 64 KiB burst a 256 KiB ping-pong measured
    1.25 R at 200 Mbit). Two nodes of one leaf, ping-pong bandwidth at 256 KiB, at the fabric's
    rate and at three quarters of it: each within 6 % of the rate shaped."""
    program = netbench_program("openmpi")
    measured = {}
    try:
        for rate, rate_MBps in ((RATE, 25.0), ("150mbit", 18.75)):
            fabric("rate", rate)
            out = tmp_path / f"bibw-{rate}.json"
            fabric("exec", "srun", "-N2", "-n2", "--ntasks-per-node=1", "--time=2", "-w",
                f"{PREFIX}1,{PREFIX}2", program, "bibw", "--sizes", str(MAP_BANDWIDTH_SIZE),
                "--repetitions", "5", "--json-file", str(out), extra_env=OPENMPI_TCP)
            row = json.loads(out.read_text())["tables"]["bibw"][0]
            measured[rate] = row["bandwidth_median_MBps"] / rate_MBps
    finally:
        fabric("rate", RATE)
    print(f"ping-pong bandwidth at 256 KiB / shaped rate: {measured}")
    assert all(abs(ratio - 1.0) <= 0.06 for ratio in measured.values()), measured


def test_a_slow_uplink_is_named_and_fails_the_map(fabric, tmp_path):
    proc, case, outcome = matrix_session(fabric, tmp_path, SLOW, "uplink1")
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert case["result"] == "fail", case.get("fail_reason")
    values = {name: value[0] for name, value in case["perfvalues"].items()}
    faulty = {k.rsplit(":", 1)[-1]: v for k, v in values.items() if "faulty" in k}
    assert faulty == {"matrix_faulty_node_links": 0, "matrix_faulty_uplinks": 1,
                      "matrix_faulty_switches": 0}, case["perfvalues"]
    assert case["components"].startswith("faulty uplink leaf1 or uplink leaf2: 16 of 16 pairs "
                                         "through it bad"), case["components"]
    assert "node " not in case["components"]
    # thresholds from the map's own noise (the default), and what it could resolve said
    assert "noise" in case["components"] and "alone; bad beyond" in case["components"]
    # the job recorded the tree it was judged against
    tree = switches.parse_topology(
        next((tmp_path / "results").rglob("switch-tree.txt")).read_text())
    assert sorted(set(tree.leaf_of.values())) == ["leaf1", "leaf2"]
    regressions = [ln for ln in outcome.splitlines() if "matrix_faulty_uplinks" in ln]
    assert regressions and regressions[0].lstrip().startswith("REGRESSION"), outcome
    print(case["components"], *regressions, sep="\n")


def test_an_oversubscribed_healthy_uplink_is_congestion_not_a_fault(fabric, tmp_path):
    proc, case, _outcome = matrix_session(fabric, tmp_path, RATE, "uplinks")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert case["result"] == "pass"
    assert "faulty" not in case["components"]
    # concurrent pairs that crossed the 4:1 uplinks were slow, then fast alone
    assert "congestion, not a fault" in case["components"], case["components"]
    print(case["components"])


def test_a_quick_map_draws_rounds_that_cross_every_uplink(fabric, tmp_path):
    """Quick mode (`-S NetbenchMatrix.rounds=1`): the job chooses the first seed from 1 whose
    round crosses both uplinks (fabricsuite.switches quick-seed), so the one round measures
    them; healthy links, the case passes."""
    proc, case, _outcome = _session(fabric, tmp_path, "-S", "NetbenchMatrix.rounds=1")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert case["result"] == "pass" and "not measured" not in case["components"], case
    script = next((tmp_path / "results").rglob("rfm_job.sh")).read_text()
    assert "NB_SEED=$(" in script and '--seed "$NB_SEED"' in script, script
    result = json.loads(next((tmp_path / "results").rglob("netbench.json")).read_text())
    assert result["parameters"]["rounds"] == 1
    tree = switches.parse_topology(
        next((tmp_path / "results").rglob("switch-tree.txt")).read_text())
    crossing = [p for p in result["tables"]["pairs"]
                if tree.leaf_of[p["host_a"]] != tree.leaf_of[p["host_b"]]]
    assert crossing, result["tables"]["pairs"]


def test_a_fabric_uniformly_below_its_promise_is_named_though_no_pair_is_bad(fabric, tmp_path):
    """Issue 50: every node link at 60 % of the 200 Mbit the partition declares
    (FABRICSUITE_EMU_DECLARED_GBPS=0.2). The relative rule, each pair against the map's best,
    sees nothing (no bad pair, no faulty component); against the promise the map names the
    fabric, and the session's verdict is LINK DEGRADED, exit 1. bench/promise_map.py runs the
    leaf and node scenarios too."""
    from fabricsuite import session

    try:
        fabric("rate", "120mbit")
        proc, case, _outcome = _session(fabric, tmp_path,
                                        env={"FABRICSUITE_EMU_DECLARED_GBPS": "0.2"})
    finally:
        fabric("rate", RATE)
    values = {key.split(":")[-1]: perf[0] for key, perf in case["perfvalues"].items()}
    assert values["matrix_bad_pairs"] == 0 and values["matrix_faulty_uplinks"] == 0, values
    assert 0.45 < values["matrix_bandwidth_median_line_fraction"] < 0.7, values
    # the measured map names the fabric (here the nodes' shapers also report the lower rate:
    # each node's LINK DEGRADED beside it; a fabric whose links report their full rate and
    # deliver less is named by the map alone)
    (measured,) = [f for f in case["link_findings"].split("; ") if f.startswith("BELOW")]
    assert measured.startswith("BELOW PROMISE the fabric: median pair 0.") and \
        "of the 0.2 Gb/s line rate over 28 pair(s), promised 0.70" in measured, measured
    report = json.loads(max((tmp_path / "results" / "reports").glob("*.json")).read_text())
    code, why = session.classify(report)
    assert code == session.REGRESSED and why.startswith("LINK DEGRADED"), why
