"""Tests of src/analysis/patterns.c through ctypes: who talks to whom in dense, b_eff and random
patterns.

The dense algorithms follow the Altix study §3.3, the b_eff rings and lengths Rabenseifner's
definition; the b_eff averaging is checked against the original b_eff's own output
(tests/data/beff-3.6/, see its README).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

BEFF_DATA = Path(__file__).parent / "data" / "beff-3.6"
RANK_COUNTS = list(range(2, 18)) + [31, 32, 64]


def phases(nb, algorithm, ranks, seed=1):
    count = nb.dense_phase_count(algorithm, ranks, 16)
    return [nb.dense_phase(algorithm, ranks, p, seed) for p in range(count)]


def assert_exchange_consistent(partners, where):
    """Every message sent is received by its target from its sender, once; nobody talks to
    itself; idle ranks neither send nor receive."""
    ranks = len(partners)
    receivers = {}
    for rank, (send_to, recv_from) in enumerate(partners):
        if send_to == -1:
            assert recv_from == -1, f"{where}: rank {rank} receives without sending"
            continue
        assert 0 <= send_to < ranks and 0 <= recv_from < ranks, f"{where}: rank {rank}"
        assert send_to != rank and recv_from != rank, f"{where}: rank {rank} talks to itself"
        assert send_to not in receivers, f"{where}: rank {send_to} receives twice"
        receivers[send_to] = rank
        assert partners[send_to][1] == rank, (
            f"{where}: rank {rank} sends to {send_to}, which receives from "
            f"{partners[send_to][1]}"
        )
    active = {r for r, (s, _) in enumerate(partners) if s != -1}
    assert set(receivers) == active, f"{where}: senders and receivers differ"


@pytest.mark.parametrize("algorithm", ["aapc", "pairwise", "cumulative", "random"])
@pytest.mark.parametrize("ranks", RANK_COUNTS)
def test_every_rank_sends_and_receives_at_most_once_per_phase(nb, algorithm, ranks):
    for p, partners in enumerate(phases(nb, algorithm, ranks)):
        assert_exchange_consistent(partners, f"{algorithm} P={ranks} phase {p + 1}")


def test_phase_counts(nb):
    assert nb.dense_phase_count("aapc", 8) == 7
    assert nb.dense_phase_count("pairwise", 8) == 7
    assert nb.dense_phase_count("cumulative", 8) == 4
    assert nb.dense_phase_count("cumulative", 9) == 4
    assert nb.dense_phase_count("random", 8, 16) == 16
    assert nb.dense_phase_count("random", 8, 3) == 3
    assert nb.dense_phase_count("aapc", 1) == 0


@pytest.mark.parametrize("ranks", RANK_COUNTS)
def test_aapc_phase_k_sends_k_ahead_and_nobody_idles(nb, ranks):
    all_targets = {r: set() for r in range(ranks)}
    for p, partners in enumerate(phases(nb, "aapc", ranks)):
        k = p + 1
        assert partners == [((r + k) % ranks, (r - k) % ranks) for r in range(ranks)]
        for r, (send_to, _) in enumerate(partners):
            all_targets[r].add(send_to)
    # over the P-1 phases every rank has sent to every other rank exactly once
    assert all(targets == set(range(ranks)) - {r} for r, targets in all_targets.items())


@pytest.mark.parametrize("ranks", RANK_COUNTS)
def test_pairwise_pairs_at_cyclic_distance_k_full_duplex(nb, ranks):
    for p, partners in enumerate(phases(nb, "pairwise", ranks)):
        k = p + 1
        idle = 0
        for r, (send_to, recv_from) in enumerate(partners):
            if send_to == -1:
                idle += 1
                continue
            assert send_to == recv_from, "pairwise is a full-duplex exchange with one partner"
            distance = (send_to - r) % ranks
            assert distance in (k, ranks - k), f"P={ranks} k={k}: {r} -> {send_to}"
        # one idle rank per odd cycle of the step-k permutation, none when cycles are even
        cycles = math.gcd(ranks, k)
        cycle_length = ranks // cycles
        assert idle == (cycles if cycle_length % 2 else 0)


def test_pairwise_first_and_last_phases_are_neighbours(nb):
    first, last = phases(nb, "pairwise", 8)[0], phases(nb, "pairwise", 8)[-1]
    assert first == [(1, 1), (0, 0), (3, 3), (2, 2), (5, 5), (4, 4), (7, 7), (6, 6)]
    assert all(abs(s - r) in (1, 7) for r, (s, _) in enumerate(last))


@pytest.mark.parametrize("ranks", RANK_COUNTS)
def test_cumulative_phase_j_has_j_pairs_across_the_middle(nb, ranks):
    half = ranks // 2
    previous = set()
    for p, partners in enumerate(phases(nb, "cumulative", ranks)):
        pairs = {tuple(sorted((r, s))) for r, (s, _) in enumerate(partners) if s != -1}
        assert len(pairs) == p + 1
        assert all(b - a == half for a, b in pairs)
        assert previous < pairs, "the pairs of a phase stay in the next one"
        previous = pairs
    assert len(previous) == half, "the last phase has all pairs"


@pytest.mark.parametrize("ranks", RANK_COUNTS)
def test_random_pairings_are_derangements(nb, ranks):
    for partners in phases(nb, "random", ranks):
        idle = [r for r, (s, _) in enumerate(partners) if s == -1]
        assert len(idle) == ranks % 2
        for r, (send_to, recv_from) in enumerate(partners):
            if send_to != -1:
                assert send_to != r and send_to == recv_from
                assert partners[send_to][0] == r, "a pairing is an involution"


def test_random_pairings_follow_the_seed(nb):
    a = phases(nb, "random", 16, seed=7)
    assert a == phases(nb, "random", 16, seed=7), "the same seed gives the same pairings"
    assert a != phases(nb, "random", 16, seed=8), "another seed gives other pairings"
    assert len({tuple(p) for p in a}) > 8, "phases draw new pairings"


def test_dense_algorithm_names(nb):
    for i, name in enumerate(nb.DENSE):
        assert nb.dense_algorithm_from_name(name) == i
    assert nb.dense_algorithm_from_name("alltoall") == -1


# ------------------------------------------------------------------------------------------------
# b_eff
# ------------------------------------------------------------------------------------------------


def test_beff_lengths_match_the_original_program(nb):
    # The original b_eff's "msglng=" line for MEMORY_PER_PROCESSOR = 128 MB (L_max = 1 MB).
    text = (BEFF_DATA / "run2.short").read_text()
    original = [int(v) for v in re.search(r"msglng=([\d ]+)", text).group(1).split()]
    assert nb.beff_lengths(1024 * 1024) == original


def test_beff_lengths_geometric_above_4k(nb):
    lengths = nb.beff_lengths(128 * 1024 * 1024)
    assert len(lengths) == 21
    assert lengths[:13] == [2**i for i in range(13)]
    assert lengths[-1] == 128 * 1024 * 1024
    ratios = [b / a for a, b in zip(lengths[12:], lengths[13:], strict=False)]
    assert all(r == pytest.approx(2 ** (15 / 8), rel=1e-3) for r in ratios)
    assert nb.beff_lengths(8191) is None, "below 8 KiB the 8 steps above 4 KiB collapse"


def rings_of(nb, ranks, pattern):
    table = nb.beff_ring(ranks, pattern)
    rings, seen = [], set()
    for start in range(ranks):
        if start in seen:
            continue
        ring, r = [], start
        while r not in ring:
            ring.append(r)
            r = table[r][0]
        assert r == start, f"P={ranks} pattern {pattern}: next does not close a ring"
        seen.update(ring)
        rings.append(ring)
    return table, rings


@pytest.mark.parametrize("ranks", list(range(2, 41)) + [64, 100, 128])
@pytest.mark.parametrize("pattern", range(6))
def test_beff_rings_are_closed_rings_of_consecutive_ranks(nb, ranks, pattern):
    table, rings = rings_of(nb, ranks, pattern)
    for ring in rings:
        assert ring == list(range(ring[0], ring[0] + len(ring))), "consecutive ranks"
        assert len(ring) >= 2
        for r in ring:
            nxt, prev, size = table[r]
            assert size == len(ring)
            assert table[nxt][1] == r, "prev is the inverse of next"
    sizes = {len(ring) for ring in rings}
    assert max(sizes) - min(sizes) <= 1, "ring sizes differ by at most one"
    nominal = [2, 4, 8, max(16, ranks // 4), max(32, ranks // 2), ranks][pattern]
    expected_rings = max(1, min(int(ranks / min(nominal, ranks) + 0.4), ranks // 2))
    assert len(rings) == expected_rings


def test_beff_ring_examples(nb):
    # 2 ranks: every ring pattern is the pair, next == prev (one message each way)
    assert all(nb.beff_ring(2, p) == [(1, 1, 2), (0, 0, 2)] for p in range(6))
    # 7 ranks, nominal size 2: three rings, 2 + 2 + 3
    assert [len(r) for r in rings_of(nb, 7, 0)[1]] == [2, 2, 3]
    # 9 ranks, nominal size 2: four rings, the larger one last ...
    assert [len(r) for r in rings_of(nb, 9, 0)[1]] == [2, 2, 2, 3]
    # ... unless the smaller size is odd: 7 ranks, nominal size 4, the even ring comes first
    assert [len(r) for r in rings_of(nb, 7, 1)[1]] == [4, 3]
    # 16 ranks, the last pattern: one ring over all
    assert rings_of(nb, 16, 5)[1] == [list(range(16))]


@pytest.mark.parametrize("ranks", [2, 3, 5, 16, 33])
def test_beff_random_ring_is_one_cycle_over_all_ranks(nb, ranks):
    for pattern in range(5):
        table = nb.beff_random_ring(ranks, 1, pattern)
        visited, r = [], 0
        for _ in range(ranks):
            visited.append(r)
            r = table[r][0]
        assert r == 0 and sorted(visited) == list(range(ranks))
        assert all(table[table[r][0]][1] == r for r in range(ranks))
    assert nb.beff_random_ring(16, 1, 0) != nb.beff_random_ring(16, 1, 1)
    assert nb.beff_random_ring(16, 1, 0) == nb.beff_random_ring(16, 1, 0)


def official_section(text: str) -> str:
    return text.split("official (1st) analysis path")[1].split("SECTION-BY-PATTERN-MSGLNG-END")[0]


def pattern_averages(text: str) -> dict[str, float]:
    """The original's official analysis table: per pattern the length-averaged bandwidth."""
    section = official_section(text)
    averages = {}
    for line in section.splitlines():
        m = re.match(r"\s*(p\d\d) (\S.*?)\s*:\(.*->\s*([\d.]+)\s*->\s*([\d.]+) MByte/s", line)
        if m:
            averages[m.group(1)] = float(m.group(3))
    return averages


def test_logavg_reproduces_the_original_b_eff(nb):
    text = (BEFF_DATA / "run2.short").read_text()
    averages = pattern_averages(text)
    rings = [averages[f"p{i:02d}"] for i in range(6)]
    randoms = [averages["p06"], averages["p07"]]  # -DTEST: 2 random patterns
    b_rings, b_random = nb.logavg(rings), nb.logavg(randoms)
    per_process = nb.logavg([b_rings, b_random])
    section = official_section(text)
    m = re.search(r"log_avg of all rings\s*:.*\|\|\s*([\d.]+)", section)
    assert b_rings == pytest.approx(float(m.group(1)), abs=2e-3)
    m = re.search(r"log_avg of all random :.*\|\|\s*([\d.]+)", section)
    assert b_random == pytest.approx(float(m.group(1)), abs=2e-3)
    m = re.search(r"b_eff =\s*([\d.]+) MByte/s on (\d+) processes", text)
    b_eff, processes = float(m.group(1)), int(m.group(2))
    assert per_process * processes == pytest.approx(b_eff, abs=5e-3)


def test_logavg_edge_cases(nb):
    assert nb.logavg([4.0, 9.0]) == pytest.approx(6.0)
    assert math.isnan(nb.logavg([]))
    assert math.isnan(nb.logavg([1.0, 0.0])), "a zero bandwidth has no logarithm"
