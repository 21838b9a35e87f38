"""netbench matrix at scale: the tournament schedule, the relative verdict, the re-test of
suspects alone, the quick mode, progress and the N x N maps beside the result.

The schedule and the verdict are C code (src/analysis/pairmap.c): tested through `netbench matrix
--print-schedule N` (a dry run without MPI) and through libnbanalysis.so (ctypes), on given
numbers. The rest runs the real program under Open MPI with 2 ranks (3 where a run needs more
than one pair: oversubscribed, so its timings are flagged unreliable, but the mechanics hold).
"""

import csv
import ctypes
import json
import math
import shutil
import subprocess
import sys
from itertools import combinations

import pytest
from mpi_support import build_netbench, run, run_result

from fabricsuite.data.netbench_result import parse_human

pytestmark = pytest.mark.integration  # netbench matrix under mpirun (the mpi lane)

LAUNCH_2 = ["mpirun.openmpi", "-np", "2", "--bind-to", "core"]
LAUNCH_3 = ["mpirun.openmpi", "-np", "3", "--oversubscribe", "--bind-to", "none"]
#: Short measurements: seconds per run on this 2-core machine.
QUICK = ["--max-size", "64K", "--repetitions", "2", "--time-cap-ms", "1"]
#: What the first matrix wrote; a reader of that format must find all of it still.
OLD_PAIR_COLUMNS = ["rank_a", "rank_b", "host_a", "host_b", "latency_us", "bandwidth_MBps",
                    "flagged"]
OLD_SUMMARY = ["pairs", "latency_median_us", "latency_max_us", "bandwidth_median_MBps",
               "bandwidth_min_MBps", "flagged_pairs"]
OLD_PARAMETERS = ["ranks", "latency_size_bytes", "bandwidth_size_bytes", "flag_tolerance"]


@pytest.fixture(scope="module")
def netbench(tmp_path_factory):
    if shutil.which("mpicc.openmpi") is None:
        pytest.skip("mpicc.openmpi not installed (ci/setup.sh installs it)")
    return build_netbench(tmp_path_factory.mktemp("build-matrix"), "openmpi",
                          targets=("netbench", "libnbanalysis.so")).parent


@pytest.fixture(scope="module")
def program(netbench):
    return str(netbench / "netbench")


@pytest.fixture(scope="module")
def pairmap(netbench):
    lib = ctypes.CDLL(str(netbench / "libnbanalysis.so"))
    lib.nb_tournament_rounds.argtypes = [ctypes.c_int]
    lib.nb_tournament_partner.argtypes = [ctypes.c_int] * 3
    lib.nb_pair_thresholds_of.restype = Thresholds
    lib.nb_pair_thresholds_of.argtypes = [ctypes.POINTER(ctypes.c_double),
                                          ctypes.POINTER(ctypes.c_double), ctypes.c_size_t,
                                          ctypes.c_double, ctypes.c_double]
    lib.nb_pair_is_suspect.argtypes = [ctypes.POINTER(Thresholds), ctypes.c_double,
                                       ctypes.c_double]
    doubles = ctypes.POINTER(ctypes.c_double)
    lib.nb_pair_thresholds_from_noise.restype = Thresholds
    lib.nb_pair_thresholds_from_noise.argtypes = [doubles, doubles, doubles, ctypes.c_size_t,
                                                  ctypes.c_double, ctypes.c_double]
    lib.nb_reference_pairs.restype = ctypes.c_size_t
    lib.nb_reference_pairs.argtypes = [doubles, ctypes.POINTER(ctypes.c_ubyte), ctypes.c_size_t,
                                       ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)]
    lib.nb_alone_rule_of.restype = AloneRule
    lib.nb_alone_rule_of.argtypes = [doubles, ctypes.POINTER(ctypes.c_int), ctypes.c_size_t,
                                     doubles, doubles, ctypes.c_size_t, ctypes.c_double, doubles]
    lib.nb_resolvable_slowdown.restype = ctypes.c_double
    lib.nb_resolvable_slowdown.argtypes = [ctypes.POINTER(Thresholds), ctypes.POINTER(AloneRule)]
    lib.nb_bad_nodes.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int),
                                 ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int),
                                 doubles, ctypes.c_double, ctypes.POINTER(ctypes.c_int)]
    lib.nb_bandwidth_floor.restype = ctypes.c_double
    lib.nb_bandwidth_floor.argtypes = [ctypes.c_double, ctypes.c_double]
    lib.nb_group_gate.restype = ctypes.c_double
    lib.nb_group_gate.argtypes = [ctypes.c_size_t, ctypes.c_size_t, ctypes.c_double]
    return lib


class Thresholds(ctypes.Structure):
    _fields_ = [("best_bandwidth", ctypes.c_double), ("lowest_latency", ctypes.c_double),
                ("bandwidth_floor", ctypes.c_double), ("latency_ceiling", ctypes.c_double),
                ("noise", ctypes.c_double), ("suspect_slowdown", ctypes.c_double)]


class AloneRule(ctypes.Structure):
    _fields_ = [("reference_bandwidth", ctypes.c_double), ("noise", ctypes.c_double),
                ("bad_slowdown", ctypes.c_double), ("bandwidth_floor", ctypes.c_double),
                ("slow_references", ctypes.c_int)]


def schedule(program, ranks, *options):
    proc = run([program, "matrix", "--print-schedule", str(ranks), "--json", *options])
    assert proc.returncode == 0 and proc.stderr == "", proc
    return json.loads(proc.stdout)


# --- the schedule ---------------------------------------------------------------------------------

@pytest.mark.parametrize("ranks", range(2, 13))
def test_every_pair_exactly_once_in_disjoint_rounds(program, ranks):
    plan = schedule(program, ranks)
    rounds = plan["rounds"]
    # N-1 rounds for an even N; an odd N needs N: N (N-1) / 2 pairs, at most (N-1) / 2 a round
    assert plan["rounds_total"] == len(rounds) == (ranks - 1 if ranks % 2 == 0 else ranks)
    assert [r["round"] for r in rounds] == list(range(1, len(rounds) + 1))
    met = [tuple(p) for r in rounds for p in r["pairs"]]
    assert sorted(met) == list(combinations(range(ranks), 2))  # each pair once, a < b
    for r in rounds:
        busy = [rank for p in r["pairs"] for rank in p]
        assert len(busy) == len(set(busy)), r  # disjoint: nobody measures twice at once
        assert len(r["pairs"]) == ranks // 2
        idle = set(range(ranks)) - set(busy)
        assert idle == ({r["bye"]} if ranks % 2 else set()), r
    if ranks % 2:
        assert sorted(r["bye"] for r in rounds) == list(range(ranks))  # each sits out once


def test_the_library_and_the_dry_run_agree(program, pairmap):
    for ranks in (2, 7, 12, 1001):
        total = pairmap.nb_tournament_rounds(ranks)
        assert total == (ranks - 1 if ranks % 2 == 0 else ranks)
        for rnd in range(total):
            for rank in range(ranks):
                partner = pairmap.nb_tournament_partner(ranks, rnd, rank)
                assert partner != rank
                if partner >= 0:
                    assert pairmap.nb_tournament_partner(ranks, rnd, partner) == rank
    plan = schedule(program, 7)
    for r in plan["rounds"]:
        for a, b in r["pairs"]:
            assert pairmap.nb_tournament_partner(7, r["round"] - 1, a) == b
    assert pairmap.nb_tournament_rounds(1) == 0
    assert pairmap.nb_tournament_partner(4, 3, 0) == -1  # no round 3 of 3


def test_quick_mode_draws_fixed_rounds_from_the_seed(program):
    full = {r["round"]: r for r in schedule(program, 64)["rounds"]}
    quick = schedule(program, 64, "--rounds", "4", "--seed", "7")
    assert quick["rounds_total"] == 63 and len(quick["rounds"]) == 4
    numbers = [r["round"] for r in quick["rounds"]]
    assert numbers == sorted(set(numbers))
    assert all(r == full[r["round"]] for r in quick["rounds"])  # the tournament's own rounds
    assert schedule(program, 64, "--rounds", "4", "--seed", "7") == quick  # reproducible
    others = {tuple(r["round"] for r in schedule(program, 64, "--rounds", "4", "--seed",
                                                  str(s))["rounds"]) for s in range(1, 6)}
    assert len(others) > 1  # another seed, other rounds
    assert len(schedule(program, 6, "--rounds", "99")["rounds"]) == 5  # more than all: all
    human = run([program, "matrix", "--print-schedule", "5"]).stdout.splitlines()
    assert human[0] == "# schedule: 5 ranks, 5 of 5 rounds (the full map)"
    assert human[1] == "round 1: 1-4 2-3 (bye 0)"


# --- the verdict on given numbers -------------------------------------------------------------

def thresholds(pairmap, latency, bandwidth, fraction=0.93, factor=2.1):
    n = len(latency)
    return pairmap.nb_pair_thresholds_of((ctypes.c_double * n)(*latency),
                                         (ctypes.c_double * n)(*bandwidth), n, fraction, factor)


def suspect(pairmap, t, latency, bandwidth):
    return bool(pairmap.nb_pair_is_suspect(ctypes.byref(t), latency, bandwidth))


def test_verdict_is_relative_to_the_best_pair_of_the_run(pairmap):
    nan = math.nan
    latency = [1.0, 1.2, 2.0, 2.2, nan]
    bandwidth = [100.0, 93.0, 92.9, 99.0, nan]
    t = thresholds(pairmap, latency, bandwidth)
    assert (t.best_bandwidth, t.lowest_latency) == (100.0, 1.0)  # NaN: not measured, ignored
    assert t.bandwidth_floor == pytest.approx(93.0) and t.latency_ceiling == pytest.approx(2.1)
    verdicts = [suspect(pairmap, t, lat, bw) for lat, bw in zip(latency, bandwidth,
                                                                strict=True)]
    # 93.0 is not below 0.93 x 100, 92.9 is; 2.0 us is within 2.1 x 1.0, 2.2 us is not
    assert verdicts == [False, False, True, True, False]
    # an absolute level does not matter, only the spread: the same run 10x slower
    slow = thresholds(pairmap, [x * 10 for x in latency], [x / 10 for x in bandwidth])
    assert [suspect(pairmap, slow, lat * 10, bw / 10)
            for lat, bw in zip(latency, bandwidth, strict=True)] == verdicts
    # settable tolerances
    loose = thresholds(pairmap, latency, bandwidth, fraction=0.9, factor=3.0)
    assert not any(suspect(pairmap, loose, lat, bw)
                   for lat, bw in zip(latency[:4], bandwidth[:4], strict=True))
    # a re-test alone is judged against the same thresholds
    assert suspect(pairmap, t, 1.1, 92.0) and not suspect(pairmap, t, 1.1, 97.0)


def doubles(values):
    return (ctypes.c_double * len(values))(*values)


def test_thresholds_from_the_noise_follow_the_fault_sought_and_the_noise(pairmap):
    """Issue 41: the suspect floor is half the fault sought under the best pair, or 3 x the
    map's noise (the median of the pairs' own spreads) where that is more."""
    nan = math.nan
    bandwidth = [100.0] * 8 + [80.0, 78.0, nan]
    latency = [1.0] * 11
    quiet = [0.01] * 10 + [nan]
    t = pairmap.nb_pair_thresholds_from_noise(doubles(latency), doubles(bandwidth),
                                              doubles(quiet), 11, 0.2, 2.1)
    assert t.best_bandwidth == 100.0 and t.noise == pytest.approx(0.01)
    assert t.suspect_slowdown == pytest.approx(0.1) and t.bandwidth_floor == pytest.approx(90.0)
    assert [suspect(pairmap, t, 1.0, bw) for bw in (91.0, 89.0, 80.0)] == [False, True, True]
    # a noisy map: 5 % per pair, so 15 % below the best before a pair is suspect
    noisy = pairmap.nb_pair_thresholds_from_noise(doubles(latency), doubles(bandwidth),
                                                  doubles([0.05] * 11), 11, 0.2, 2.1)
    assert noisy.suspect_slowdown == pytest.approx(0.15)
    assert not suspect(pairmap, noisy, 1.0, 86.0) and suspect(pairmap, noisy, 1.0, 84.0)


def test_a_map_noisier_than_the_link_has_a_floor_of_0_never_a_negative_one(pairmap):
    """A 2-rank map in one of the VM's slow phases (CI on 2026-11-29): one pair whose repetitions
    spread 40 %, so 3 x the noise is a 120 % slowdown. The floor is 0 (no bandwidth is below it:
    nothing is suspect), not -20 % of the best, which the result's reader rightly refuses."""
    t = pairmap.nb_pair_thresholds_from_noise(doubles([1.0]), doubles([100.0]), doubles([0.4]),
                                              1, 0.2, 2.1)
    assert t.suspect_slowdown == pytest.approx(1.2) and t.bandwidth_floor == 0.0
    assert not suspect(pairmap, t, 1.0, 1.0)
    assert pairmap.nb_bandwidth_floor(0.25, 80.0) == pytest.approx(60.0)
    assert pairmap.nb_bandwidth_floor(1.0, 80.0) == 0.0
    assert math.isnan(pairmap.nb_bandwidth_floor(math.nan, 80.0))


def test_references_are_the_healthy_pairs_nearest_their_median(pairmap):
    bandwidth = [100.0, 96.0, 99.0, 50.0, 98.0, 101.0, math.nan]
    suspects = [0, 0, 0, 1, 0, 0, 0]
    out = (ctypes.c_size_t * 3)()
    found = pairmap.nb_reference_pairs(doubles(bandwidth),
                                       (ctypes.c_ubyte * 7)(*suspects), 7, 3, out)
    # healthy: 100, 96, 99, 98, 101 (median 99); the suspect and the unmeasured never
    assert found == 3 and sorted(out[:3]) == [0, 2, 4]
    none = pairmap.nb_reference_pairs(doubles([1.0, 2.0]), (ctypes.c_ubyte * 2)(1, 1), 2, 3, out)
    assert none == 0


def alone_rule(pairmap, references, retests, spreads, fault=0.2, pairs=None, state=None):
    """The rule from the references' re-tests in turn (pairs: which reference each was, by
    default each its own), every re-test and its spread; state: a list to receive the states."""
    pairs = list(range(len(references))) if pairs is None else pairs
    out = (ctypes.c_double * max(len(references), 1))()
    ids = (ctypes.c_int * max(len(pairs), 1))(*pairs)
    rule = pairmap.nb_alone_rule_of(doubles(references), ids,
                                    len(references), doubles(retests), doubles(spreads),
                                    len(retests), fault, out)
    if state is not None:
        state[:] = list(out)[:len(references)]
    return rule


def test_a_re_test_is_bad_only_beyond_the_noise_of_measuring_alone(pairmap):
    # quiet: the references agree, the re-tests are steady: bad below 90 % of the reference
    quiet = alone_rule(pairmap, [100.0, 101.0, 99.0], [100.0, 101.0, 99.0, 75.0],
                       [0.01, 0.01, 0.01, 0.01])
    assert quiet.reference_bandwidth == 100.0 and quiet.noise == pytest.approx(0.01482, rel=1e-3)
    assert quiet.bad_slowdown == pytest.approx(0.1) and quiet.bandwidth_floor == pytest.approx(90)
    assert quiet.slow_references == 0
    # healthy references that differ among themselves (placement) raise the noise: 1.4826 x
    # MAD 4 / 100
    spread = alone_rule(pairmap, [100.0, 105.0, 96.0], [100.0, 105.0, 96.0, 75.0], [0.01] * 4)
    assert spread.slow_references == 0 and spread.reference_bandwidth == 100.0
    assert spread.noise == pytest.approx(1.4826 * 0.04, rel=1e-3)
    assert spread.bad_slowdown == pytest.approx(3 * 1.4826 * 0.04, rel=1e-3)
    # one pair re-tested in turn that moves from one re-test to the next (a loaded machine's
    # phases): 1.4826 x MAD of the consecutive ratios x sqrt(0.75)
    state = []
    drifting = alone_rule(pairmap, [100.0, 80.0, 100.0, 80.0, 100.0], [100.0, 80.0],
                          [0.01] * 2, pairs=[7] * 5, state=state)
    assert drifting.noise == pytest.approx(1.4826 * 0.225 * math.sqrt(0.75), rel=1e-3)
    assert drifting.bad_slowdown == pytest.approx(3 * drifting.noise, rel=1e-3)
    assert state == pytest.approx([1.0, 0.8, 1.0, 0.8, 1.0])
    # without references: the best of the re-tests (the highest below 10 of them)
    alone = alone_rule(pairmap, [], [80.0, 90.0, 70.0], [0.02] * 3)
    assert alone.reference_bandwidth == 90.0 and alone.bad_slowdown == pytest.approx(0.1)
    # what the map resolves: each threshold plus 3 x its noise, the larger
    t = pairmap.nb_pair_thresholds_from_noise(doubles([1.0] * 4), doubles([100.0] * 4),
                                              doubles([0.02] * 4), 4, 0.2, 2.1)
    resolvable = pairmap.nb_resolvable_slowdown(ctypes.byref(t), ctypes.byref(quiet))
    assert resolvable == pytest.approx(max(0.1 + 0.06, 0.1 + 3 * 0.01482), rel=1e-3)
    # the references' spread alone: 3 x the noise for the threshold and 3 more to clear it
    assert pairmap.nb_resolvable_slowdown(ctypes.byref(t), ctypes.byref(spread)) == \
        pytest.approx(6 * 1.4826 * 0.04, rel=1e-3)


def test_a_slow_reference_is_left_out_and_mixes_no_placements_into_the_noise(pairmap):
    """Seen under load with a whole leaf 25 % slow: of the two references one was a pair of
    that leaf (unsuspected in a noisy map); in turn, healthy and slow, they read as a drift of
    30 % from one re-test to the next, and the leaf's pairs as noise. Each reference over its
    own level, the machine's state is steady; the slow one is left out of the level."""
    healthy, slow = [24.3, 24.0, 24.5, 24.2, 24.4], [18.5, 18.4, 18.6, 18.5, 18.3]
    in_turn = [x for both in zip(healthy, slow, strict=True) for x in both]
    state = []
    rule = alone_rule(pairmap, in_turn, in_turn + [18.5] * 20, [0.01] * 30, pairs=[4, 9] * 5,
                      state=state)
    assert rule.slow_references == 1
    assert rule.reference_bandwidth == pytest.approx(24.3)
    assert rule.noise < 0.02 and rule.bad_slowdown == pytest.approx(0.1)
    # the leaf's pairs at 18.5 are bad against 24.3 x the state around them (about 1)
    assert 18.5 < (1 - rule.bad_slowdown) * rule.reference_bandwidth
    assert state[0] == pytest.approx(1.0) and state[1] == pytest.approx(1.0)
    # every reference a slow-leaf pair, but healthy pairs among the suspects re-tested alone at
    # 24: the references are left out, the level is the 90th percentile of the re-tests
    retests = [18.5] * 16 + [24.0, 24.2, 24.4, 24.1]
    all_slow = alone_rule(pairmap, [18.5, 18.4, 18.6] * 3, retests, [0.01] * 20,
                          pairs=[0, 1, 2] * 3)
    assert all_slow.slow_references == 3 and all_slow.reference_bandwidth == pytest.approx(24.1)
    # two references that agree within the threshold are both kept: their median
    both = alone_rule(pairmap, [100.0, 95.0] * 3, [100.0] * 6, [0.01] * 6, pairs=[0, 1] * 3)
    assert both.slow_references == 0 and both.reference_bandwidth == pytest.approx(97.5)


def bad_nodes(pairmap, ranks, pairs, bad, bandwidth=None, noise=float("nan"), within=None):
    n = len(pairs)
    ints = ctypes.c_int * n
    out = (ctypes.c_int * ranks)()
    found = pairmap.nb_bad_nodes(ranks, n, ints(*[a for a, _ in pairs]),
                                 ints(*[b for _, b in pairs]), ints(*bad),
                                 doubles(bandwidth) if bandwidth else None, noise, out)
    named = [r for r in range(ranks) if out[r] == 1]
    if within is not None:
        within[:] = [r for r in range(ranks) if out[r] == 2]
    assert found == len(named)
    return named


def test_a_node_is_named_when_every_pair_of_it_is_bad(pairmap):
    pairs = list(combinations(range(6), 2))
    assert bad_nodes(pairmap, 6, pairs, [int(3 in p) for p in pairs]) == [3]
    # one good pair of node 3 among bad ones: the pairs are named, the node is not
    assert bad_nodes(pairmap, 6, pairs, [int(3 in p and p != (2, 3)) for p in pairs]) == []
    # a single bad link: no node
    assert bad_nodes(pairmap, 6, pairs, [int(p == (1, 4)) for p in pairs]) == []
    # two ranks: one pair, either end may be the culprit, so none is named
    assert bad_nodes(pairmap, 2, [(0, 1)], [1]) == []
    # nothing bad, nothing named
    assert bad_nodes(pairmap, 6, pairs, [0] * len(pairs)) == []


def test_a_node_within_the_maps_noise_is_not_named(pairmap):
    """Its pairs were bad alone, but in the map they lie, as a group, within the noise of the
    others (3 x 1.2533 x noise x sqrt(1/5 + 1/10): 8.7 % at a noise of 4 %), as when nearly
    every pair of a loaded map is suspect and a few references are all there is to compare."""
    pairs = list(combinations(range(6), 2))
    bad = [int(3 in p) for p in pairs]
    gate = pairmap.nb_group_gate(5, 10, 0.04)
    assert gate == pytest.approx(3 * 1.2533 * 0.04 * math.sqrt(1 / 5 + 1 / 10))
    slow = [75.0 if 3 in p else 100.0 for p in pairs]
    assert bad_nodes(pairmap, 6, pairs, bad, slow, 0.04) == [3]
    within = []
    slight = [95.0 if 3 in p else 100.0 for p in pairs]
    assert bad_nodes(pairmap, 6, pairs, bad, slight, 0.04, within) == [] and within == [3]
    # without the map's noise (--bandwidth-fraction) there is no gate
    assert bad_nodes(pairmap, 6, pairs, bad, slight) == [3]


# --- real runs ------------------------------------------------------------------------------------

def check_maps(directory, result):
    """The CSV and JSON maps beside the result hold the table's figures, symmetric."""
    ranks = result.parameters["ranks"]
    hosts = {r["rank"]: r["host"] for r in result.ranks}
    labels = [f"{r}:{hosts[r]}" for r in range(ranks)]
    maps = json.loads((directory / "matrix_maps.json").read_text())
    assert maps["format"] == "netbench-matrix-maps" and maps["ranks"] == ranks
    assert maps["hosts"] == [hosts[r] for r in range(ranks)]
    for name, column in (("matrix_bandwidth_MBps.csv", "bandwidth_MBps"),
                         ("matrix_latency_us.csv", "latency_us")):
        with open(directory / name, newline="") as f:
            rows = list(csv.reader(f))
        assert rows[0] == ["rank/host", *labels]
        assert [row[0] for row in rows[1:]] == labels
        grid = [row[1:] for row in rows[1:]]
        for r in range(ranks):
            assert grid[r][r] == "" and maps[column][r][r] is None
        for pair in result.table("pairs"):
            a, b = pair["rank_a"], pair["rank_b"]
            assert float(grid[a][b]) == float(grid[b][a]) == pytest.approx(pair[column])
            assert maps[column][a][b] == maps[column][b][a] == pytest.approx(pair[column])
            assert maps["round"][a][b] == pair["round"]
            assert maps["bad"][a][b] == pair["flagged"]
            assert maps["suspect"][a][b] == pair["suspect"]


@pytest.mark.parametrize("schedule_name", ["concurrent", "sequential"])
def test_two_ranks_keep_the_format_and_write_the_maps(program, tmp_path, schedule_name):
    out = tmp_path / "netbench.json"
    args = [] if schedule_name == "concurrent" else ["--schedule", "sequential"]
    proc, result = run_result([*LAUNCH_2, program, "matrix", *QUICK, *args, "--progress-every",
                               "0"], out)
    human = parse_human(proc.stdout)
    assert result.status == "ok", result.unreliable
    assert human.summary == result.summary and human.tables == result.tables
    # what the first matrix wrote is all still there ...
    assert all(k in result.parameters for k in OLD_PARAMETERS)
    assert all(k in result.summary for k in OLD_SUMMARY)
    (pair,) = result.table("pairs")
    assert all(c in pair for c in OLD_PAIR_COLUMNS)
    assert (pair["rank_a"], pair["rank_b"]) == (0, 1) and pair["flagged"] is False
    assert pair["latency_us"] > 0 and pair["bandwidth_MBps"] > 0
    # ... and the new figures beside it
    params = result.parameters
    assert params["schedule"] == schedule_name
    assert (params["thresholds"], params["smallest_fault"]) == ("noise", 0.2)
    assert params["latency_factor"] == 2.1 and "bandwidth_fraction" not in params
    summary = result.summary
    # suspect below the best by half the fault sought, or 3 noise sigmas where that is more
    slowdown = summary["suspect_slowdown"]
    assert params["flag_tolerance"] == slowdown
    assert slowdown == pytest.approx(max(0.1, 3 * summary["bandwidth_noise"]), rel=1e-3)
    assert (params["rounds"], params["rounds_total"]) == (1, 1)
    assert pair["round"] == 1 and pair["suspect"] is False
    # the one healthy pair is the reference, measured again alone (around every suspect; with
    # none, once)
    assert summary["reference_pairs"] == 1 and pair["retest_bandwidth_MBps"] > 0
    assert summary["slow_reference_pairs"] == 0  # the best figure alone is its own
    assert summary["reference_alone_MBps"] > 0
    assert "re-test of a pair alone 1 of 1" in proc.stderr
    assert summary["bad_slowdown"] >= 0.1 and summary["resolvable_slowdown"] > 0.1
    assert summary["bandwidth_best_MBps"] == pair["bandwidth_MBps"]
    # a noise of a third or more of the figure (this VM, 2026-12-06: a slowdown above 1) leaves
    # no floor to fall below: 0, never negative (pairmap.c, nb_bandwidth_floor)
    assert summary["bandwidth_floor_MBps"] == pytest.approx(
        max(0.0, 1 - slowdown) * pair["bandwidth_MBps"], rel=1e-3)
    assert summary["latency_ceiling_us"] == pytest.approx(2.1 * pair["latency_us"], rel=1e-3)
    assert (summary["suspect_pairs"], summary["bad_pairs"], summary["bad_nodes"]) == (0, 0, 0)
    assert summary["pairs"] == summary["pairs_total"] == 1
    assert summary["measure_s"] > 0
    per_step = "round_mean_s" if schedule_name == "concurrent" else "pair_mean_s"
    assert summary[per_step] > 0
    assert result.table("bad_nodes") == []
    check_maps(tmp_path, result)
    # progress, every step with --progress-every 0
    step = "round" if schedule_name == "concurrent" else "pair"
    assert f"netbench matrix: {step} 1 of 1 ({schedule_name}, 2 ranks)" in proc.stderr
    assert "s elapsed, about" in proc.stderr


def test_progress_waits_for_its_interval(program, tmp_path):
    proc = run([*LAUNCH_3, program, "matrix", *QUICK, "--progress-every", "3600", "--json-file",
                str(tmp_path / "r.json")])
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("netbench matrix: round")]
    assert lines == [lines[-1]] and "round 3 of 3" in lines[0]  # only the last one


def test_suspects_are_re_tested_alone_and_only_confirmed_ones_are_bad(program, tmp_path):
    """Tolerances of 1 make every pair but the best suspect: the re-test path runs for real."""
    out = tmp_path / "netbench.json"
    proc, result = run_result([*LAUNCH_3, program, "matrix", *QUICK, "--bandwidth-fraction", "1",
                               "--latency-factor", "1", "--progress-every", "0"], out)
    pairs, summary = result.table("pairs"), result.summary
    assert [(p["rank_a"], p["rank_b"]) for p in pairs] == [(0, 1), (0, 2), (1, 2)]
    assert sorted(p["round"] for p in pairs) == [1, 2, 3]
    suspects = [p for p in pairs if p["suspect"]]
    assert 1 <= len(suspects) == summary["suspect_pairs"] <= 3
    floor, ceiling = summary["bandwidth_floor_MBps"], summary["latency_ceiling_us"]
    assert floor == summary["bandwidth_best_MBps"] and ceiling == summary["latency_lowest_us"]
    unconfirmed = 0
    for p in pairs:
        first = p["bandwidth_MBps"] < floor or p["latency_us"] > ceiling
        assert p["suspect"] == first, p
        if p["suspect"]:
            alone = p["retest_bandwidth_MBps"] < floor or p["retest_latency_us"] > ceiling
            # bad only when the re-test alone confirms it, and a second re-test alone does
            # too (CI of ba05b50: a pair bad alone once at a tolerance of 1, fast the second
            # time)
            assert alone or not p["flagged"], p
            unconfirmed += alone and not p["flagged"]
        else:
            assert p["retest_bandwidth_MBps"] is None and p["flagged"] is False
    assert summary["unconfirmed_pairs"] == unconfirmed
    bad = sum(p["flagged"] for p in pairs)
    assert summary["bad_pairs"] == summary["flagged_pairs"] == bad
    assert summary["cleared_pairs"] == len(suspects) - bad
    assert f"re-test of a pair alone {len(suspects)} of {len(suspects)}" in proc.stderr
    # a fixed fraction: no references, no resolution from the noise
    assert result.parameters["thresholds"] == "fraction"
    assert summary["reference_pairs"] == 0 and summary["resolvable_slowdown"] is None
    named = [n["rank"] for n in result.table("bad_nodes")]
    for r in range(3):
        own = [p["flagged"] for p in pairs if r in (p["rank_a"], p["rank_b"])]
        assert (r in named) == all(own)
    assert sum(w.startswith("bad pair ") for w in result.warnings) == bad
    check_maps(tmp_path, result)


def test_quick_mode_measures_the_drawn_rounds_only(program, tmp_path):
    out = tmp_path / "netbench.json"
    proc, result = run_result([*LAUNCH_3, program, "matrix", *QUICK, "--rounds", "1", "--seed",
                               "5"], out)
    plan = schedule(program, 3, "--rounds", "1", "--seed", "5")
    (drawn,) = plan["rounds"]
    (pair,) = result.table("pairs")
    assert [pair["rank_a"], pair["rank_b"]] == drawn["pairs"][0]
    assert pair["round"] == drawn["round"]
    assert (result.parameters["rounds"], result.parameters["rounds_total"]) == (1, 3)
    assert (result.summary["pairs"], result.summary["pairs_total"]) == (1, 3)
    maps = json.loads((tmp_path / "matrix_maps.json").read_text())
    unmeasured = [(a, b) for a, b in combinations(range(3), 2) if [a, b] != drawn["pairs"][0]]
    assert all(maps["bandwidth_MBps"][a][b] is None for a, b in unmeasured)


@pytest.mark.parametrize("args, words", [
    (["--schedule", "random"], "--schedule"),
    (["--bandwidth-fraction", "1.5"], "--bandwidth-fraction"),
    (["--bandwidth-fraction", "0"], "--bandwidth-fraction"),
    (["--latency-factor", "0.5"], "--latency-factor"),
    (["--rounds", "0"], "--rounds"),
    (["--progress-every", "-1"], "--progress-every"),
    (["--print-schedule", "1"], "--print-schedule"),
    (["--tolerance", "0.2"], "--tolerance"),  # the first matrix's rule is gone, say so
    # one choice of two rules: the fraction would silently drop the fault sought (issue 53)
    (["--smallest-fault", "0.3", "--bandwidth-fraction", "0.9"], "exclude each other"),
    (["--bandwidth-fraction=0.9", "--smallest-fault=0.3"], "--smallest-fault"),
])
def test_bad_arguments_give_one_line_and_status_2(program, args, words):
    proc = run([program, "matrix", *args])
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("netbench: ") and words in lines[0], lines
    assert proc.stdout == ""
    # under mpirun: before any MPI traffic, reported once (mpirun adds its own notice)
    proc = run([*LAUNCH_2, program, "matrix", *args])
    assert proc.returncode == 2 and proc.stderr.count("netbench: ") == 1, proc.stderr


def test_help_states_and_justifies_the_defaults(program):
    text = run([program, "matrix", "--help"]).stdout
    for words in ("--schedule", "default concurrent", "--bandwidth-fraction",
                  "default: from the noise", "--smallest-fault", "default 0.2",
                  "ClusterKit: 0.93",
                  "--latency-factor", "default 2.1", "--rounds", "--seed", "--progress-every",
                  "default 60", "--print-schedule", "ClusterKit", "ALONE",
                  "matrix_bandwidth_MBps.csv", "matrix_maps.json"):
        assert words in text, words


def test_the_check_judges_bad_pairs_against_a_reference_of_0(program, tmp_path):
    """NetbenchMatrix's new variables: unit and direction declared, a reference of 0 pairs with
    an upper bound of 0 is valid (one without a bound on the bad side is refused), the counts'
    absolute reference of 0, and the figures come from a real result."""
    import importlib.util
    import sys

    from fabricsuite import REPO_ROOT
    from fabricsuite.base.metrics import LOWER, PerfSpec, declared_specs
    from fabricsuite.data.references import ReferenceFileError, check_tuple

    spec = importlib.util.spec_from_file_location("_matrix_check", REPO_ROOT / "checks" /
                                                  "fabric_map.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    declared = declared_specs(module.NetbenchMatrix)
    assert declared["matrix_bad_pairs"] == PerfSpec("pairs", LOWER)
    assert declared["matrix_bad_nodes"] == PerfSpec("nodes", LOWER)
    for kind in ("node_links", "uplinks", "switches"):  # fabricsuite.data.switches
        assert declared[f"matrix_faulty_{kind}"] == PerfSpec("components", LOWER)
    where = tmp_path / "emu.yaml"
    check_tuple(where, "matrix_bad_pairs", [0, None, 0, "pairs"], declared["matrix_bad_pairs"])
    with pytest.raises(ReferenceFileError, match="no upper bound"):
        check_tuple(where, "matrix_bad_pairs", [0, -0.1, None, "pairs"],
                    declared["matrix_bad_pairs"])
    # the counts are judged against 0 also where a file has no entry for them (a first day, a
    # re-test at another node count); the figures only by references
    from fabricsuite.base.metrics import absolute_references

    assert absolute_references(module.NetbenchMatrix.metrics) == {
        f"matrix_{name}": (0, None, 0, unit) for name, unit in (
            ("bad_pairs", "pairs"), ("bad_nodes", "nodes"), ("faulty_node_links", "components"),
            ("faulty_uplinks", "components"), ("faulty_switches", "components"))}

    out = tmp_path / "netbench.json"
    proc, result = run_result([*LAUNCH_2, program, "matrix", *QUICK], out)
    values = {name: m.extract(result) for name, m in module.NetbenchMatrix.metrics.items()}
    assert values["matrix_bad_pairs"] == values["matrix_bad_nodes"] == 0
    # no switch tree declared: one switch; nothing faulty on a healthy node
    assert (values["matrix_faulty_node_links"] == values["matrix_faulty_uplinks"] ==
            values["matrix_faulty_switches"] == 0)
    assert values["matrix_bandwidth_min_MBps"] == result.table("pairs")[0]["bandwidth_MBps"]


def test_one_optimistic_outlier_does_not_make_every_pair_suspect(pairmap):
    """15 pairs near 80 MB/s and one measured at 146 MB/s (above a 125 MB/s link: a shaper's
    burst; seen on the emulated cluster): from 10 pairs on, the best is the 90th percentile
    (here the second highest) and the lowest latency the 10th, so the outlier does not set the
    floor; one truly slow pair is still suspect. Below 10 pairs the extremes stay."""
    bandwidth = [146.0, 82.0, 81.0, 80.5, 80.0, 79.5, 79.0, 78.8, 78.5, 78.0, 77.5, 77.0,
                 76.8, 76.5, 12.0]
    latency = [20.0 + 0.1 * i for i in range(14)] + [1.0]  # one impossibly fast latency too
    t = thresholds(pairmap, latency, bandwidth)
    assert t.best_bandwidth == 82.0 and t.lowest_latency == pytest.approx(20.0)
    verdicts = [suspect(pairmap, t, lat, bw) for lat, bw in zip(latency, bandwidth,
                                                                strict=True)]
    assert verdicts == [False] * 14 + [True]  # only the 12 MB/s pair
    few = thresholds(pairmap, latency[:5], bandwidth[:5])
    assert few.best_bandwidth == 146.0


def test_quick_seed_crosses_every_uplink_with_the_program_s_own_draw(program, tmp_path):
    """fabricsuite.data.switches quick-seed (the job script of a quick NetbenchMatrix under Slurm)
    with this program's --print-schedule: 1 round of 8 ranks on 2 leaves."""
    from test_switches import NODES, TREE_CONF

    from fabricsuite.data import switches

    netbench = program
    tree = tmp_path / "tree.txt"
    tree.write_text(TREE_CONF)
    proc = subprocess.run([sys.executable, "-m", "fabricsuite.data.switches", "quick-seed",
                           "--tree",
                           str(tree), "--hosts", " ".join(NODES), "--rounds", "1", "--seed", "1",
                           "--netbench", str(netbench)], capture_output=True, text=True)
    seed = int(proc.stdout)
    rounds = subprocess.run([str(netbench), "matrix", "--print-schedule", "8", "--rounds", "1",
                             "--seed", str(seed), "--json"], capture_output=True, text=True)
    pairs = [tuple(p) for r in json.loads(rounds.stdout)["rounds"] for p in r["pairs"]]
    assert switches.uncovered_uplinks(switches.parse_topology(TREE_CONF), NODES, pairs) == set()
    bad = subprocess.run([sys.executable, "-m", "fabricsuite.data.switches", "quick-seed", "--tree",
                          str(tmp_path / "none"), "--hosts", "a b", "--rounds", "1", "--seed",
                          "7", "--netbench", str(netbench)], capture_output=True, text=True)
    assert bad.stdout.strip() == "7" and "keeping --seed 7" in bad.stderr
