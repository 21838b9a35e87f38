"""Integration: the all-pairs map at 6 emulated nodes (issue 15's acceptance).

An emulated cluster of its own (ci/emucluster.sh, 6 nodes, 1 Gbit links, a prefix and state
directory of its own: the 4-node cluster of tests/test_emucluster.py is never touched), and
`netbench matrix` through srun, one rank per node: the concurrent schedule (5 tournament rounds
of 3 pairs), the verdict relative to the run (0.85 x the best bandwidth, not the default 0.93;
2.1 x the lowest latency) and the suspects re-tested alone. The 6 nodes share 2 cores, so a
healthy pair alone varies by more than the 7 % a real cluster's links keep: at 0.93, 9-13 of the
15 pairs were suspect in every run, and a CI run (99f3f51) confirmed a healthy pair alone at
under 0.93 x a best of 80 MB/s. The slow node's pairs deliver a seventh of the others'.

- one node's link slowed to 100 Mbit (`ci/emucluster.sh rate 100mbit 4`, tbf on its egress):
  exactly that node's 5 pairs are bad (suspect, and confirmed by the re-test alone), the node
  is named, nothing else is flagged;
- all links equal: nothing is flagged.
One run each in CI (RUNS); 5 of 5 each was measured here before (docs/measurements.md), and the
rates over many trials are bench/fault_localization.py's.
The 6 nodes share this machine's cores (2 here): the ranks yield when idle
(mpi_yield_when_idle) so that the pairs of a round, 3 nodes to a core, take turns instead of
spinning each other out; the bandwidth is bound by the shaped links.

A job that never reached the end of its first round (no progress line for it) is started once
more, at most once per test, and says so: the verdict is about completed runs. CI met one such
job in about 200: Open MPI's TCP connections to rank 0 stayed "in progress" until Slurm's time
limit killed the ranks (rank 0 with a segfault on the way out). A run normally takes 5-10 s, so
the jobs get 1 minute, not 5.
"""

import json
from pathlib import Path

import emu_support
import pytest

from fabricsuite.commands.emucluster import OPENMPI_TCP, srun_matrix

PREFIX = emu_support.prefix("fsm")  # unique per test run, distinct from test_emucluster's
pytestmark = emu_support.marks(PREFIX)
#: One run each in CI: the verdict, not its rate, is the point here; the rates over many trials
#: are bench/fault_localization.py's (issue 65: sensitivity and false alarms belong in bench/).
NODES, SLOW_NODE, RUNS = 6, 4, 1
BANDWIDTH_FRACTION = 0.85


@pytest.fixture(scope="module")
def six_nodes(tmp_path_factory):
    state = tmp_path_factory.mktemp("emucluster6")
    yield from emu_support.cluster(state, PREFIX, emu_support.port_base(30000), nodes=NODES)


@pytest.fixture(scope="module")
def netbench(netbench_program):
    return Path(netbench_program("openmpi"))


def round_line(done):
    """netbench matrix's progress line after round `done` of the whole tournament."""
    return f"round {done} of {NODES - 1} (concurrent, {NODES} ranks)"


def matrix(emu, netbench, out, restarts):
    """One `netbench matrix` job; `restarts` (a list) collects the stderr of a job that died
    before its first round, which is started again once per test."""
    while True:
        out.unlink(missing_ok=True)
        proc = emu("exec", *srun_matrix(
            netbench, NODES, out, "--max-size", "256K", "--repetitions", "3", "--time-cap-ms",
            "20", "--bandwidth-fraction", str(BANDWIDTH_FRACTION), "--progress-every", "0",
            minutes=1), extra_env=OPENMPI_TCP, check=False, timeout=200)
        if proc.returncode == 0 or round_line(1) in proc.stderr or restarts:
            break
        restarts.append(proc.stderr[-3000:])
        print(f"a job died before its first round (exit {proc.returncode}), started once more; "
              f"its stderr:\n{restarts[-1]}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert len({r["host"] for r in result["ranks"]}) == NODES, result["ranks"]
    assert result["parameters"]["schedule"] == "concurrent"
    assert result["parameters"]["bandwidth_fraction"] == BANDWIDTH_FRACTION
    assert result["summary"]["rounds"] == NODES - 1
    assert round_line(1) in proc.stderr and round_line(NODES - 1) in proc.stderr
    for name in ("matrix_bandwidth_MBps.csv", "matrix_latency_us.csv", "matrix_maps.json"):
        assert (out.parent / name).is_file(), name
    return result


def describe(result):
    s = result["summary"]
    return (f"best {s['bandwidth_best_MBps']} MB/s, lowest {s['latency_lowest_us']} us; "
            f"suspect {s['suspect_pairs']}, bad {s['bad_pairs']}, cleared {s['cleared_pairs']}, "
            f"bad nodes {[n['host'] for n in result['tables']['bad_nodes']]}; "
            f"{s['measure_s']:.1f} s rounds + {s['retest_s']:.1f} s re-tests")


def test_the_map_names_the_slow_node(six_nodes, netbench, tmp_path):
    slow = f"{PREFIX}{SLOW_NODE}"
    outcomes, restarts = [], []
    try:
        six_nodes("rate", "100mbit", str(SLOW_NODE))
        for run in range(RUNS):
            result = matrix(six_nodes, netbench, tmp_path / "matrix.json", restarts)
            pairs = result["tables"]["pairs"]
            assert len(pairs) == NODES * (NODES - 1) // 2
            with_slow = {(p["host_a"], p["host_b"]) for p in pairs
                         if slow in (p["host_a"], p["host_b"])}
            flagged = {(p["host_a"], p["host_b"]) for p in pairs if p["flagged"]}
            outcomes.append(f"run {run + 1}: {describe(result)}")
            assert flagged == with_slow, (outcomes[-1], pairs)
            for p in pairs:
                if p["flagged"]:  # confirmed: suspect first, then slow alone too
                    assert p["suspect"] and p["retest_bandwidth_MBps"] is not None, p
            assert [n["host"] for n in result["tables"]["bad_nodes"]] == [slow], outcomes[-1]
            assert result["summary"]["bad_pairs"] == NODES - 1
            assert result["summary"]["bad_nodes"] == 1
            # each confirmed by a second re-test alone, its figure in the warning
            assert result["summary"]["unconfirmed_pairs"] == 0
            assert sum("MB/s again" in w for w in result["warnings"]) == NODES - 1, \
                result["warnings"]
    finally:
        six_nodes("rate", "1gbit", check=False)
        print("\n".join(outcomes))


def test_equal_links_flag_nothing(six_nodes, netbench, tmp_path):
    six_nodes("rate", "1gbit")
    outcomes, restarts = [], []
    try:
        for run in range(RUNS):
            result = matrix(six_nodes, netbench, tmp_path / "matrix.json", restarts)
            outcomes.append(f"run {run + 1}: {describe(result)}")
            flagged = [p for p in result["tables"]["pairs"] if p["flagged"]]
            assert flagged == [], (outcomes[-1], flagged)
            assert result["tables"]["bad_nodes"] == []
    finally:
        print("\n".join(outcomes))


def test_a_pair_bad_alone_once_is_cleared_by_its_second_re_test(six_nodes, netbench, tmp_path):
    """A pair is bad only when a second re-test alone confirms the first (one slow phase rarely
    hits one pair twice; a slow link always does). The slow node's link is healed right after
    the last first re-test (its progress line), before the second ones measure bandwidth (each
    pair's latency phase comes first: 3 x 100 ms here, the rate takes 35 ms): its pairs, bad
    alone once, are cleared by the second (unconfirmed_pairs, a warning), nothing is bad or
    named. The module's fixed rule (0.85): healthy pairs at 1 Gbit on these shared cores fail
    the rule from the noise now and then, twice too."""
    out = tmp_path / "matrix.json"
    six_nodes("rate", "100mbit", str(SLOW_NODE))
    healed = False
    try:
        job = six_nodes.start("exec", *srun_matrix(
            netbench, NODES, out, "--max-size", "256K", "--repetitions", "3", "--time-cap-ms",
            "100", "--bandwidth-fraction", str(BANDWIDTH_FRACTION), "--progress-every", "0",
            minutes=1), env=OPENMPI_TCP)
        stderr = []
        for line in job.stderr:
            stderr.append(line)
            # "re-test of a pair alone K of K": the first re-tests are over
            first = line.partition("re-test of a pair alone ")[2].split(" (")[0].split(" of ")
            if not healed and len(first) == 2 and first[0] == first[1]:
                six_nodes("rate", "1gbit", str(SLOW_NODE))
                healed = True
        job.wait(timeout=200)
    finally:
        six_nodes("rate", "1gbit", check=False)
    said = "".join(stderr)
    assert job.returncode == 0 and healed, said[-3000:]
    assert "second re-test of a bad pair alone" in said, said[-3000:]
    result = json.loads(out.read_text())
    s = result["summary"]
    print(describe(result), f"unconfirmed {s['unconfirmed_pairs']}")
    assert s["unconfirmed_pairs"] == NODES - 1 and s["bad_pairs"] == 0, describe(result)
    assert result["tables"]["bad_nodes"] == []
    slow = f"{PREFIX}{SLOW_NODE}"
    # bad alone the first time: the table keeps that figure
    for p in result["tables"]["pairs"]:
        if slow in (p["host_a"], p["host_b"]):
            assert p["suspect"] and not p["flagged"] and \
                p["retest_bandwidth_MBps"] < BANDWIDTH_FRACTION * s["bandwidth_best_MBps"], p
    assert any(f"{NODES - 1} pair(s) bad alone once were cleared" in w
               for w in result["warnings"]), result["warnings"]
