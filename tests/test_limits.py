"""Efficiencies against the limits of the cores (fabricsuite.data.limits), on real netbench output:
`netbench limits` beside the ping-pong and bandwidth it bounds, healthy and broken
(tests/data/netbench/limits/README.md)."""

import dataclasses
import math
from pathlib import Path

import pytest

from fabricsuite.data import limits
from fabricsuite.data.netbench_result import load

pytestmark = pytest.mark.unit

DATA = Path(__file__).parent / "data" / "netbench" / "limits"
MiB = 1024 * 1024


def _result(scenario: str, method: str):
    """`method`'s result of `scenario` with the limits its job measured (the dense runs': their
    own, every rank taking part)."""
    result = load(DATA / f"{scenario}-{method}.json")
    prologue = f"{scenario}-dense-limits.json" if method == "dense" else f"{scenario}-limits.json"
    result.limits = load(DATA / prologue)
    return result


def _cell(table, column, **where):
    from fabricsuite.checks.rfm_netbench import cell

    return cell(table, column, **where)


def _latency():
    return limits.multiple_of_floor(_cell("pingpong", "latency_median_us", size_bytes=8))


def _bandwidth():
    return limits.fraction_of_ceiling(_cell("bibw", "bandwidth_median_MBps", size_bytes=MiB))


def test_the_limits_parse_as_declared():
    result = load(DATA / "healthy-ompi-limits.json")
    assert result.method == "limits"
    assert [row["size_bytes"] for row in result.table("limits_copy")] == [8, MiB]
    floor = result.value(None, "floor_oneway_median_us")
    assert 0 < floor < limits.FLOOR_LIMIT_US
    assert result.value("limits_copy", "copy_one_core_median_MBps", size_bytes=MiB) > 1000


def test_an_efficiency_is_the_figure_over_its_limit():
    result = _result("healthy-ompi", "pp")
    latency = result.value("pingpong", "latency_median_us", size_bytes=8)
    floor = result.limits.value(None, "floor_oneway_median_us")
    assert _latency().extract(result) == pytest.approx(latency / floor)
    result = _result("healthy-ompi", "bw")
    bandwidth = result.value("bibw", "bandwidth_median_MBps", size_bytes=MiB)
    ceiling = result.limits.value("limits_copy", "copy_one_core_median_MBps", size_bytes=MiB)
    assert _bandwidth().extract(result) == pytest.approx(bandwidth / ceiling)
    assert _latency().spec.unit == "x_floor" and _latency().spec.better == "lower"
    assert _bandwidth().spec.unit == "fraction" and _bandwidth().spec.better == "higher"


def test_the_physics_floors_pass_the_healthy_run_and_fail_the_broken_ones():
    """Healthy: latency a few floors, bandwidth a quarter of the ceiling; TCP loopback: over
    100 floors; both ranks on one core: under 2 % of the ceiling, and a floor of a time slice."""
    floor_multiple = limits.physics_reference(_latency())[0]
    floor_fraction = limits.physics_reference(_bandwidth())[0]
    healthy_latency = _latency().extract(_result("healthy-ompi", "pp"))
    healthy_bandwidth = _bandwidth().extract(_result("healthy-ompi", "bw"))
    assert healthy_latency < floor_multiple and healthy_bandwidth > floor_fraction
    assert _latency().extract(_result("ompi-tcp", "pp")) > floor_multiple
    assert _bandwidth().extract(_result("ompi-onecore", "bw")) < floor_fraction
    assert limits.floor_problem(_result("healthy-ompi", "pp").limits) is None
    problem = limits.floor_problem(_result("ompi-onecore", "pp").limits)
    assert problem and "do not run on two cores of their own" in problem


def test_a_dense_pattern_is_read_against_every_rank_copying_at_once():
    """NetbenchDense's efficiencies (checks/dense.py) on real runs: the bandwidth per rank over
    the all-ranks copy of the same cores (with 2 ranks that is the two-core figure, not measured
    twice); healthy 0.2 of it, both ranks on one core under 1 %, below the physics floor."""
    import reframe as rfm

    from fabricsuite.checks.rfm_netbench import check_classes

    dense = check_classes(rfm.RegressionTest)["NetbenchDense"]
    efficiencies = limits.efficiencies(dense.metrics)
    assert sorted(efficiencies) == [f"{a}_bandwidth_1MiB_ceiling_fraction"
                                    for a in ("aapc", "cumulative", "pairwise", "random")]
    aapc = efficiencies["aapc_bandwidth_1MiB_ceiling_fraction"]
    assert aapc.limit == limits.ALL_RANKS and limits.limit_sizes(dense.metrics, []) == [MiB]
    healthy = _result("healthy-ompi", "dense")
    row = healthy.limits.table("limits_copy")[0]
    assert row["copy_all_ranks_median_MBps"] == row["copy_two_cores_median_MBps"]
    bandwidth = healthy.value("algorithms", "bandwidth_mean_MBps", algorithm="aapc",
                              size_bytes=MiB)
    assert aapc.extract(healthy) == pytest.approx(bandwidth / row["copy_all_ranks_median_MBps"])
    floor = limits.physics_reference(aapc)[0]
    assert all(f.extract(healthy) > 2 * floor for f in efficiencies.values())
    assert all(f.impossible(healthy) is None for f in efficiencies.values())
    one_core = _result("ompi-onecore", "dense")
    assert all(f.extract(one_core) < floor for f in efficiencies.values())


def test_a_figure_beyond_its_limit_is_a_measurement_error():
    result = _result("healthy-ompi", "bw")
    assert _bandwidth().impossible(result) is None
    ceiling = result.limits.value("limits_copy", "copy_one_core_median_MBps", size_bytes=MiB)
    row = result.row("bibw", size_bytes=MiB)
    row["bandwidth_median_MBps"] = ceiling * 1.5
    assert _bandwidth().impossible(result) is None  # within a slow phase's reach of the limit
    row["bandwidth_median_MBps"] = ceiling * 3
    assert "faster than the cores can copy" in _bandwidth().impossible(result)
    result = _result("healthy-ompi", "pp")
    assert _latency().impossible(result) is None
    floor = result.limits.value(None, "floor_oneway_median_us")
    # seen, healthy: 0.85 x and, with the floor taken in a slow moment (CI 2026-12-02), 0.38 x
    for seen in (0.85, 0.38):
        result.row("pingpong", size_bytes=8)["latency_median_us"] = floor * seen
        assert _latency().impossible(result) is None, seen
    result.row("pingpong", size_bytes=8)["latency_median_us"] = floor / 5
    assert "faster than a cache line" in _latency().impossible(result)


def test_without_the_limits_an_efficiency_says_what_is_missing():
    result = load(DATA / "healthy-ompi-bw.json")
    with pytest.raises(ValueError, match="prologue"):
        _bandwidth().extract(result)
    result.limits = dataclasses.replace(load(DATA / "healthy-ompi-limits.json"), tables={
        "limits_copy": []})
    with pytest.raises(ValueError):
        _bandwidth().extract(result)


def test_the_references_of_an_efficiency_and_the_prologue_sizes():
    assert limits.physics_reference(_bandwidth()) == (0.05, 0.0, None, "fraction")
    assert limits.physics_reference(_latency()) == (12.0, None, 0.0, "x_floor")
    peak = limits.fraction_of_ceiling(_cell("bibw", "bandwidth_median_MBps", size_bytes=MiB),
                                      peak_size="bandwidth_peak_size_bytes")
    assert limits.physics_reference(peak)[0] == limits.PEAK_FIRST_DAY
    metrics = {"lat": _latency(), "bw": _bandwidth(), "other": _cell("bibw", "iterations",
                                                                      size_bytes=8)}
    assert limits.limit_sizes(metrics, [8, 64]) == [MiB]
    assert limits.limit_sizes({"lat": _latency()}, [8]) == [8]
    assert limits.limit_sizes({"peak": peak}, [8, 64, MiB]) == [8, 64, MiB]
    assert set(limits.efficiencies(metrics)) == {"lat", "bw"}


def test_a_machines_own_reference_never_judges_looser_than_physics():
    latency = limits.physics_reference(_latency())
    bandwidth = limits.physics_reference(_bandwidth())
    # recorded only (no bound): held to 12 floors around the machine's own 4 (CI 2026-12-02:
    # TCP loopback at 350 floors passed against such an entry)
    held = limits.within_physics((4.0, None, None, "x_floor"), latency)
    assert held == (4.0, None, pytest.approx(12.0 / 4.0 - 1), "x_floor")
    assert limits.within_physics((4.0, None, 0.5, "x_floor"), latency) is None  # tighter: kept
    assert limits.within_physics((4.0, None, 9.0, "x_floor"), latency)[2] == pytest.approx(2.0)
    # a bandwidth's lower bound the same way: -44 % of 0.2 is 0.112, already over 0.05
    assert limits.within_physics((0.2, -0.44, None, "fraction"), bandwidth) is None
    assert limits.within_physics((0.2, -0.9, None, "fraction"), bandwidth)[1] == \
        pytest.approx(0.05 / 0.2 - 1)
    assert limits.within_physics((0.2, None, None, "fraction"), bandwidth)[1] == \
        pytest.approx(-0.75)
    # references taken beyond the floor (a machine broken while it recorded): physics judges
    assert limits.within_physics((40.0, None, None, "x_floor"), latency) == latency
    assert limits.within_physics((0.01, -0.1, None, "fraction"), bandwidth) == bandwidth
    assert limits.within_physics((0.0, None, None, "fraction"), bandwidth) == bandwidth


def test_a_latency_is_read_against_the_floor_its_own_processes_measured():
    """The host placed the two vCPUs anew between the prologue and the ping-pong: the prologue's
    floor 0.281 us, the ping-pong's own 0.057 (README.md here). Against its own floor the
    healthy latency is 2.5 floors; against the prologue's it read 0.51, and TCP loopback
    (5.1 us) stays far beyond the physics floor."""
    moved = _result("placement-ompi", "pp")
    own = moved.value(None, "floor_oneway_median_us")
    latency = moved.value("pingpong", "latency_median_us", size_bytes=8)
    assert moved.limits.value(None, "floor_oneway_median_us") > 4 * own
    assert _latency().extract(moved) == pytest.approx(latency / own)
    assert 2.0 < _latency().extract(moved) < 3.0
    assert _latency().noise(moved) == pytest.approx(
        moved.value(None, "floor_noise_percent") / 100)
    assert _latency().impossible(moved) is None
    multiple = limits.physics_reference(_latency())[0]
    assert _latency().extract(_result("ompi-tcp-ownfloor", "pp")) > 5 * multiple
    # a result without its own floor (an older netbench) is read against the prologue's
    older = _result("healthy-ompi", "pp")
    assert _latency().extract(older) == pytest.approx(
        older.value("pingpong", "latency_median_us", size_bytes=8)
        / older.limits.value(None, "floor_oneway_median_us"))


def test_a_null_floor_is_named_rather_than_read_as_a_number():
    # netbench writes the floor null where the ranks share no memory: sanity names it
    result = _result("healthy-ompi", "pp")
    result.limits.summary["floor_oneway_median_us"] = None
    with pytest.raises(ValueError, match="floor_oneway_median_us"):
        _latency().extract(result)
    result = _result("healthy-ompi", "pp")
    result.limits.summary["floor_oneway_median_us"] = 0.0
    assert math.isnan(_latency().extract(result))


def test_bus_bandwidth_is_nccl_tests_definition_on_a_real_collectives_run():
    """busbw = algbw x 2(n-1)/n for allreduce, x (n-1)/n for allgather and alltoall (whose
    nccl-tests size is n x netbench's per-rank or per-peer size), x 1 for bcast and reduce."""
    result = load(Path(__file__).parent / "data" / "netbench" / "collectives-openmpi.json")
    n = result.parameters["ranks"]
    for collective, expected in (("allreduce", lambda s, t: s / t * 2 * (n - 1) / n),
                                 ("allgather", lambda s, t: n * s / t * (n - 1) / n),
                                 ("alltoall", lambda s, t: n * s / t * (n - 1) / n),
                                 ("bcast", lambda s, t: s / t), ("reduce", lambda s, t: s / t)):
        time = _cell("collectives", "time_median_us", collective=collective, size_bytes=MiB)
        figure = limits.bus_bandwidth(time)
        assert figure.spec.unit == "MB/s" and figure.spec.better == "higher"
        assert figure.extract(result) == pytest.approx(expected(MiB, time.extract(result)))
    assert limits.bus_bandwidth_MBps("allreduce", MiB, 100.0, 4) == pytest.approx(
        MiB / 100.0 * 1.5)
    assert math.isnan(limits.bus_bandwidth_MBps("allreduce", MiB, 0.0, 4))
