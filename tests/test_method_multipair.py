"""netbench `connections` and `loaded` (src/methods/multipair.c) and their checks
(checks/multipair.py), run for real: 2 ranks bound to cores with Debian's Open MPI and MPICH,
4 oversubscribed ranks for the mechanics only (their timings mean nothing), and a ReFrame
session on the local system."""

import math
import re
import shutil

import pytest
from mpi_support import (
    NEEDS_OPEN_MPI,
    help_missing,
    mechanics_session,
    run,
    run_result,
    usage_error_line,
)

from fabricsuite.data.netbench_result import parse_human, parse_json

pytestmark = pytest.mark.integration

#: Short runs: the figures are checked for soundness, not for their values.
QUICK = ["--repetitions", "3", "--time-cap-ms", "1"]


def sound_costs(result, table):
    """Every cost is either within its noise floor or flagged unreliable under its name."""
    flagged = {u["quantity"] for u in result.unreliable}
    key = "peers" if table == "connections" else "loading_pairs"
    for row in result.table(table):
        assert row["noise_floor_us"] > 0, row
        quantity = f"cost_us[{key}={row[key]},size_bytes={row['size_bytes']}]"
        # a cost is never negative: 0 within the noise floor, null (and flagged) below it
        assert (row["cost_us"] is None) == (quantity in flagged), row
        if row["cost_us"] is not None:
            assert row["cost_us"] >= 0
            baseline = result.row(table, **{key: 0, "size_bytes": row["size_bytes"]})
            gap = row["latency_median_us"] - baseline["latency_median_us"]
            assert row["cost_us"] == pytest.approx(max(gap, 0.0), rel=0.01, abs=0.01), row


@pytest.mark.parametrize("method, words", [
    ("connections", ["Kutlug", "3.2.5", "4.2.4", "k = 0 (the baseline)", "--small-size",
                     "--large-size", "--setup-round-trips", "default 64K", "noise_floor_us",
                     "cost_us [us, lower is better]"]),
    ("loaded", ["Zamani", "5.1", "Fig. 6", "Fig. 9", "--window", "default 64",
                "--bandwidth-size", "--rate-size", "aggregate_bandwidth_MBps [MBps, higher is "
                "better]", "message_rate_per_s [per_s, higher is better]"]),
])
def test_help_explains_the_method(netbench, method, words):
    assert help_missing(netbench[0], method, words) == []


@pytest.mark.parametrize("args, words", [
    (["connections", "--small-size", "1M", "--large-size", "8"], "--small-size 1M is larger"),
    (["connections", "--setup-round-trips", "0"], "--setup-round-trips"),
    (["connections", "--large-size", "zz"], "--large-size"),
    (["loaded", "--window", "1025"], "--window"),
    (["loaded", "--bandwidth-size", "0"], "--bandwidth-size"),
    (["loaded", "--small-size", "8"], "--small-size"),  # connections' option
])
def test_bad_arguments_give_one_line_and_status_2(netbench, args, words):
    assert words in usage_error_line(netbench[0], args)


def test_connections_with_two_ranks_says_only_the_baseline_exists(netbench, tmp_path):
    program, launcher, _ = netbench
    out = tmp_path / "connections.json"
    proc, result = run_result([*launcher, program, "connections", *QUICK], out)
    assert result.parameters["peers"] == [0]
    rows = result.table("connections")
    assert [(r["peers"], r["size_bytes"]) for r in rows] == [(0, 8), (0, 65536)]
    assert all(r["latency_median_us"] > 0 and r["cost_us"] == 0 for r in rows)
    assert result.summary["cost_small_max_k_us"] is None
    flagged = {u["quantity"]: u["reason"] for u in result.unreliable}
    assert "only k = 0" in flagged["cost_small_max_k_us"] and result.status == "unreliable"
    # the human rendering says the same
    human = parse_human(proc.stdout)
    assert human.table("connections") == rows and human.unreliable == result.unreliable


def test_loaded_with_two_ranks_measures_one_pair(netbench, tmp_path):
    program, launcher, mpi = netbench
    out = tmp_path / "loaded.json"
    proc, result = run_result([*launcher, program, "loaded", *QUICK], out)
    assert [u["quantity"] for u in result.unreliable] == ["loaded_latency_cost_max_k_us"]
    latency, aggregate = result.table("loaded_latency"), result.table("aggregate")
    assert [r["loading_pairs"] for r in latency] == [0] and latency[0]["latency_median_us"] > 0
    assert [r["pairs"] for r in aggregate] == [1]
    s = result.summary
    # one pair: the aggregate is that pair's own figure, the scaling exactly 1
    assert s["aggregate_bandwidth_MBps"] == s["aggregate_bandwidth_one_pair_MBps"] > 0
    assert s["aggregate_bandwidth_scaling"] == 1.0
    assert s["message_rate_per_s"] > 0 and math.isfinite(s["message_rate_per_s"])
    # 64 messages per window: the rate is window / time per window, never above 1 per ns
    assert s["message_rate_per_s"] < 1e9
    print(f"{mpi}: aggregate bandwidth {s['aggregate_bandwidth_MBps']:.0f} MB/s at 64 KiB, "
          f"message rate {s['message_rate_per_s']:.3g} messages/s at 8 B")
    human = parse_human(proc.stdout)
    assert human.table("aggregate") == aggregate and human.summary == s


def oversubscribed(program, ranks, method, out):
    return [shutil.which("mpirun.openmpi"), "-np", str(ranks), "--oversubscribe",
            "--bind-to", "none", program, method, *QUICK, "--json-file", str(out)]


@pytest.mark.skipif(shutil.which("mpirun.openmpi") is None, reason="needs Debian's Open MPI")
def test_four_ranks_run_every_k(netbench, tmp_path):
    """The mechanics with more ranks than cores (timings meaningless, and flagged so)."""
    program, _, mpi = netbench
    if mpi != "openmpi":
        pytest.skip("the mechanics are the same with MPICH; Open MPI's --oversubscribe runs them")
    out = tmp_path / "connections.json"
    proc = run(oversubscribed(program, 4, "connections", out))
    assert proc.returncode == 0, proc.stderr
    result = parse_json(out.read_text())
    assert result.parameters["peers"] == [0, 1, 2]
    rows = result.table("connections")
    assert sorted((r["peers"], r["size_bytes"]) for r in rows) == [
        (k, size) for k in (0, 1, 2) for size in (8, 65536)]
    assert all(r["latency_median_us"] > 0 for r in rows)
    assert result.summary["max_k"] == 2
    # a summary cost is a figure (>= 0) unless flagged: a disturbed baseline on shared cores
    flagged = {u["quantity"] for u in result.unreliable}
    for key in ("cost_small_max_k_us", "cost_large_max_k_us"):
        assert (result.summary[key] is None) == (key in flagged), key
    sound_costs(result, "connections")

    out = tmp_path / "loaded.json"
    proc = run(oversubscribed(program, 5, "loaded", out))  # an odd rank only waits
    assert proc.returncode == 0, proc.stderr
    result = parse_json(out.read_text())
    assert any("rank 4 has no partner" in w for w in result.warnings)
    latency, aggregate = result.table("loaded_latency"), result.table("aggregate")
    assert [r["loading_pairs"] for r in latency] == [0, 1]
    # pair 0 was measured while pair 1 streamed, and not without it
    assert latency[0]["load_bandwidth_MBps"] == 0 and latency[1]["load_bandwidth_MBps"] > 0
    assert [r["pairs"] for r in aggregate] == [1, 2]
    two = aggregate[1]
    assert two["aggregate_bandwidth_MBps"] >= 2 * two["bandwidth_per_pair_min_MBps"] * 0.999
    assert result.summary["pairs"] == 2
    cost = result.summary["loaded_latency_cost_max_k_us"]
    flagged = {u["quantity"] for u in result.unreliable}
    assert (cost is None) == ("loaded_latency_cost_max_k_us" in flagged)
    sound_costs(result, "loaded_latency")


@NEEDS_OPEN_MPI
def test_checks_on_local(tmp_path):
    """A real ReFrame session: NetbenchLoaded runs with the machine's cores (2 = 1 pair) and
    reports its figures, NetbenchConnections skips, saying it needs 3 ranks."""
    proc = mechanics_session(tmp_path / "results", "checks/multipair.py",
                             "-n", "NetbenchLoaded|NetbenchConnections")
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    summary = re.findall(r"Ran (\d+)/(\d+) test case\(s\) .*\((\d+) failure.*?(\d+) skipped",
                         proc.stdout)
    # 2 checks x node counts 1, 2, 4 x 2 placements + the build; here the build and
    # NetbenchLoaded at 1x2 run, everything else skips
    assert summary and summary[0][:2] == ("2", "13") and summary[0][2] == "0", summary
    assert "connections needs 3" in proc.stdout
    figures = dict(re.findall(r"P: (\w+): (\S+) ", proc.stdout))
    for name in ("loaded_latency_8B_max_k_us", "aggregate_bandwidth_64KiB_MBps",
                 "message_rate_8B_per_s", "bandwidth_per_pair_min_64KiB_MBps"):
        assert float(figures[name]) > 0, (name, figures)
    assert "msg/s" in proc.stdout and "MB/s" in proc.stdout
