"""The statistics of the suite's judging workflows, in one place: change points in a history
(E-Divisive means with permutation tests), Benjamini-Hochberg across many tests, and the
two-sample tests of `fabricsuite compare` (Mann-Whitney U through scipy; a z-test where the noise
is known). `history` and `compare` decide what to test and what a result means; this module
only computes.

Why not Apache Otava 0.8 for the change points (it implements E-Divisive too). Measured with
bench/otava_compare.py (200 noise series and 50 with one step, 30 runs each, 3 % normal noise,
three seeds; docs/measurements.md, 2026-11-27):

- Otava has no correction across series: a suite run stores hundreds of variables, and its
  per-series threshold gave 5-6 false change points among 200 quiet series
  (`compute_change_points`, Hunter) and 2-4 (`compute_change_points_orig`), against 0-4 here (BH
  at 0.05 over every test) and 0-3 alarms after the 5 % minimum shift.
- Hunter's t-test assumes normal noise. With 5 % of the runs in a slow phase (twice the value,
  as this VM's shared-memory latency or a busy node), it gave 24 false change points among 200
  quiet series and found 13-19 of 50 10 % steps; the permutation test here gave 0-1 and found
  28-31. Otava's original E-Divisive (100 permutations) gave 0-2 and found 12-15.
- Otava is faster (0.07 s for 250 series against 2-5 s here), which does not matter for a
  nightly history.
The energy statistic and the permutation test follow Matteson and James (2014) as Otava's
original algorithm does; change_points.py's docstring gives the details.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: Fewest points on each side of a change point (the within-side means need two).
MIN_SIZE = 2
#: Default false discovery rate (Benjamini-Hochberg) over all tests of one history call.
FDR = 0.05
#: Default (and least) number of permutations per test; raised to 2 x series / FDR.
PERMUTATIONS = 1999
#: Besag-Clifford sequential stop: this many permutations reaching the observed Q end a test.
SEQUENTIAL_HITS = 30
#: At most this many change points per series.
MAX_CHANGE_POINTS = 10
SEED = 20140101
#: Largest batch x L x L of one vectorised step (doubles; 4e6 = 32 MB).
_CELLS = 4_000_000
#: With ties, the exact permutation distribution up to this many splits (about 0.15 s).
EXACT_SPLITS = 20_000
#: Without ties, scipy's exact distribution up to this many runs in all (fast).
EXACT_RUNS = 200


# --- change points: E-Divisive means -------------------------------------------------------------

def q_curve(x: np.ndarray, min_size: int = MIN_SIZE) -> np.ndarray:
    """Q(tau) for tau = min_size .. L - min_size of every row of `x` (shape (B, L) or (L,)).

    Returns shape (B, T) (or (T,)): the E-Divisive energy statistic of splitting the row before
    index tau, from 2-D prefix sums of the distance matrix |x_i - x_j| (O(L^2) per row).
    """
    one = x.ndim == 1
    rows = np.atleast_2d(np.asarray(x, dtype=float))
    b, n = rows.shape
    if n < 2 * min_size:
        out = np.zeros((b, 0))
        return out[0] if one else out
    dist = np.abs(rows[:, :, None] - rows[:, None, :])
    prefix = np.zeros((b, n + 1, n + 1))
    prefix[:, 1:, 1:] = dist.cumsum(axis=1).cumsum(axis=2)
    taus = np.arange(min_size, n - min_size + 1)
    total = prefix[:, n, n][:, None]
    left = prefix[:, taus, taus]                 # sum over [0,tau)^2: 2 x within-left pairs
    cross = prefix[:, taus, n] - left            # [0,tau) x [tau,n)
    right = total - left - 2 * cross             # [tau,n)^2: 2 x within-right pairs
    m = taus.astype(float)
    k = n - m
    energy = 2 * cross / (m * k) - left / (m * (m - 1)) - right / (k * (k - 1))
    q = m * k / n * energy
    return q[0] if one else q


def _best_split(x: np.ndarray, bounds: list[int], min_size: int) -> tuple[float, int | None]:
    """Largest Q over the segments between `bounds` and the index where it splits."""
    best, where = -math.inf, None
    for a, c in zip(bounds[:-1], bounds[1:], strict=True):
        if c - a < 2 * min_size:
            continue
        q = q_curve(x[a:c], min_size)
        i = int(np.argmax(q))
        if q[i] > best:
            best, where = float(q[i]), a + min_size + i
    return best, where


def _permutation_p(x: np.ndarray, bounds: list[int], observed: float, rng: np.random.Generator,
                   permutations: int, min_size: int, hits_to_stop: int) -> tuple[float, int]:
    """Permutation p-value of `observed` (points permuted within each segment); returns
    (p, permutations made)."""
    segments = [(a, c) for a, c in zip(bounds[:-1], bounds[1:], strict=True)
                if c - a >= 2 * min_size]
    longest = max(c - a for a, c in segments)
    cap = max(1, _CELLS // (longest * longest))
    tolerance = 1e-9 * abs(observed)
    hits = done = 0
    batch = 16
    while done < permutations:
        size = min(batch, cap, permutations - done)
        stat = np.full(size, -math.inf)
        for a, c in segments:
            copies = rng.permuted(np.tile(x[a:c], (size, 1)), axis=1)
            stat = np.maximum(stat, q_curve(copies, min_size).max(axis=1))
        reached = np.flatnonzero(stat >= observed - tolerance)
        if hits + len(reached) >= hits_to_stop:
            # Besag-Clifford: stop at the permutation that made the hits_to_stop-th hit.
            made = done + int(reached[hits_to_stop - hits - 1]) + 1
            return hits_to_stop / made, made
        hits += len(reached)
        done += size
        batch *= 2
    return (hits + 1) / (done + 1), done


@dataclass
class Test:
    """One permutation test of one candidate split."""

    index: int  # the first point of the new level
    q: float
    p: float
    permutations: int
    #: Accepted at the screening level (the bisection went on).
    screened: bool
    #: Benjamini-Hochberg: a change point after the correction over all tests.
    significant: bool = False
    bh_threshold: float | None = None


def e_divisive(values: Iterable[float], *, screen: float = FDR, permutations: int = PERMUTATIONS,
               seed: int | list[int] = SEED, min_size: int = MIN_SIZE,
               max_change_points: int = MAX_CHANGE_POINTS,
               hits_to_stop: int = SEQUENTIAL_HITS) -> list[Test]:
    """E-Divisive means on one series: every permutation test made, in the order made.

    The accepted ones (`screened`, p <= `screen`) are the series' change points before any
    correction across series; the last test is the one that ended the bisection (unless
    `max_change_points` or the series' length ended it first).
    """
    x = np.asarray(list(values), dtype=float)
    rng = np.random.default_rng(seed)
    bounds = [0, len(x)]
    tests: list[Test] = []
    while len(tests) < max_change_points + 1:
        observed, where = _best_split(x, bounds, min_size)
        if where is None:
            break  # no segment long enough to split
        p, made = _permutation_p(x, bounds, observed, rng, permutations, min_size, hits_to_stop)
        accepted = p <= screen and len([t for t in tests if t.screened]) < max_change_points
        tests.append(Test(where, observed, p, made, accepted))
        if not accepted:
            break
        bounds = sorted([*bounds, where])
    return tests


def benjamini_hochberg(pvalues: list[float], q: float) -> tuple[list[bool], list[float]]:
    """Which hypotheses BH rejects at FDR q, and each one's threshold rank x q / m."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    thresholds = [0.0] * m
    last = 0
    for rank, i in enumerate(order, start=1):
        thresholds[i] = rank * q / m
        if pvalues[i] <= thresholds[i]:
            last = rank
    rejected = [False] * m
    for i in order[:last]:
        rejected[i] = True
    return rejected, thresholds


def smallest_p(length: int, before: int) -> float:
    """The smallest p-value the permutation test can give a split of `length` points after
    point `before`: only the two orders that put the same points on each side reach the
    observed statistic when the sides are completely apart, 2 / C(length, before)."""
    return min(1.0, 2 / math.comb(length, before))


def runs_needed(level: float) -> int:
    """Fewest runs (half before, half after a shift) whose smallest p-value is <= `level`."""
    n = 2 * MIN_SIZE
    while smallest_p(n, n // 2) > level:
        n += 1
    return n


# --- two samples: compare ------------------------------------------------------------------------

def min_p_value(n_before: int, n_after: int) -> float:
    """The smallest two-sided Mann-Whitney p-value of n_before vs n_after runs: both orders of
    complete separation, 2 / C(n1 + n2, n1) (ties can only make it larger)."""
    if n_before < 1 or n_after < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n_before + n_after, n_before))


def runs_per_side_needed(level: float) -> int:
    """Fewest runs per side (equal sides) whose smallest p-value is at most `level`."""
    n = 1
    while min_p_value(n, n) > level:
        n += 1
    return n


def mann_whitney_p(before: list[float], after: list[float]) -> float:
    """Two-sided Mann-Whitney U p-value, exact where that is affordable (module docstring)."""
    from scipy.stats import PermutationMethod, mannwhitneyu

    combined = before + after
    distinct = len(set(combined))
    if distinct == 1:
        return 1.0  # every run gave the same figure: nothing moved
    splits = math.comb(len(combined), len(before))
    if distinct == len(combined):
        method: Any = "exact" if len(combined) <= EXACT_RUNS else "asymptotic"
    elif splits <= EXACT_SPLITS:
        # Ties: scipy's exact method ignores them and the normal approximation is too small
        # for few runs (4 vs 4 constant counts: 0.013 instead of the true 0.029).
        method = PermutationMethod(n_resamples=splits)  # every split: exact, no randomness
    else:
        method = "asymptotic"
    result = mannwhitneyu(before, after, alternative="two-sided", method=method)
    return min(1.0, float(result.pvalue))


def observed_spread(before: list[float], after: list[float]) -> float | None:
    """The runs' own relative spread (pooled sample standard deviation of both sides over the
    median before), None with fewer than two runs on every side."""
    variances = [(statistics.variance(v), len(v) - 1) for v in (before, after) if len(v) >= 2]
    if not variances or not before:
        return None
    pooled = sum(var * dof for var, dof in variances) / sum(dof for _var, dof in variances)
    scale = abs(statistics.median(before)) or 1.0
    return math.sqrt(pooled) / scale


def known_noise_p(before: list[float], after: list[float], spread: float) -> float:
    """Two-sided p-value of the change of the means, in units of a known relative spread of one
    run (a z-test): with the noise known from elsewhere (the between-session spread the
    reference was sized from), one run a side can show a shift far outside it, where ranks of
    three runs a side cannot (Mann-Whitney's p >= 0.1)."""
    base = statistics.fmean(before)
    change = (statistics.fmean(after) - base) / (abs(base) or 1.0)
    width = spread * math.sqrt(1 / len(before) + 1 / len(after))
    if width == 0:
        return 0.0 if change else 1.0
    return math.erfc(abs(change) / width / math.sqrt(2))
