"""Tests of src/analysis/ (statistics, fits, protocol ranges, overlap knee) through ctypes.

The library is built with `make -C src libnbanalysis.so` (a C compiler is all it needs, no MPI).
Synthetic data only; every random draw comes from a seeded random.Random.
"""

from __future__ import annotations

import ctypes
import math
import random

import analysis_lib
import pytest

# --------------------------------------------------------------------------------------------
# Order statistics
# --------------------------------------------------------------------------------------------


def test_median_odd_and_even(nb):
    assert nb.stat("nb_median", [3.0, 1.0, 2.0]) == 2.0
    assert nb.stat("nb_median", [4.0, 1.0, 3.0, 2.0]) == 2.5
    assert nb.stat("nb_median", [7.0]) == 7.0


def test_min_max(nb):
    values = [3.0, -1.5, 8.25, 0.0]
    assert nb.stat("nb_min", values) == -1.5
    assert nb.stat("nb_max", values) == 8.25


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        ([1.0, 2.0, 3.0, 4.0], 0.25, 1.75),  # h = 0.75: 1 + 0.75 * (2 - 1)
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.5),
        ([4.0, 3.0, 2.0, 1.0], 0.0, 1.0),
        ([4.0, 3.0, 2.0, 1.0], 1.0, 4.0),
        ([10.0, 20.0, 30.0, 40.0, 50.0], 0.9, 46.0),  # h = 3.6: 40 + 0.6 * 10
        ([float(v) for v in range(1, 11)], 0.1, 1.9),  # h = 0.9
        ([5.0], 0.3, 5.0),
    ],
)
def test_quantile_type7(nb, values, q, expected):
    assert nb.quantile(values, q) == pytest.approx(expected, rel=1e-12)


def test_quantile_matches_statistics_module(nb):
    # statistics.quantiles(method="inclusive") is the type-7 definition.
    import statistics

    rng = random.Random(7)
    values = [rng.uniform(-5, 5) for _ in range(37)]
    cuts = statistics.quantiles(values, n=20, method="inclusive")
    for k, cut in enumerate(cuts, start=1):
        assert nb.quantile(values, k / 20) == pytest.approx(cut, rel=1e-12, abs=1e-12)


def test_mad(nb):
    # median 2; |x - 2| = 1 1 0 0 2 4 7 -> median 1
    assert nb.stat("nb_mad", [1.0, 1.0, 2.0, 2.0, 4.0, 6.0, 9.0]) == 1.0
    # median 2.5; deviations 1.5 0.5 0.5 1.5 -> 1.0
    assert nb.stat("nb_mad", [1.0, 2.0, 3.0, 4.0]) == 1.0
    assert nb.stat("nb_mad", [3.0, 3.0, 3.0]) == 0.0


@pytest.mark.parametrize("name", ["nb_min", "nb_max", "nb_median", "nb_mad", "nb_quantile"])
def test_input_not_modified(nb, name):
    values = [5.0, -2.0, 9.0, 1.0, 1.0, 7.5, 3.0]
    buf = (ctypes.c_double * len(values))(*values)
    fn = getattr(nb.lib, name)
    if name == "nb_quantile":
        fn(buf, len(values), 0.3)
    else:
        fn(buf, len(values))
    assert list(buf) == values


@pytest.mark.parametrize("name", ["nb_min", "nb_max", "nb_median", "nb_mad"])
def test_empty_gives_nan(nb, name):
    assert math.isnan(nb.stat(name, []))


def test_empty_quantile_gives_nan(nb):
    assert math.isnan(nb.quantile([], 0.5))


# --------------------------------------------------------------------------------------------
# Least squares
# --------------------------------------------------------------------------------------------


def test_ls_recovers_exact_line(nb):
    x = [1.0, 2.0, 4.0, 8.0, 16.0, 1024.0]
    y = [3.5 + 0.25 * v for v in x]
    fit = nb.fit_ls(x, y)
    assert fit.intercept == pytest.approx(3.5, rel=1e-12)
    assert fit.slope == pytest.approx(0.25, rel=1e-12)
    assert fit.rms_residual == pytest.approx(0.0, abs=1e-12)
    assert fit.points_used == len(x)
    assert fit.outliers == 0
    assert fit.constrained == 0
    assert fit.reliable == 1


def test_ls_uses_inclusive_subrange(nb):
    x = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    y = [100.0, 1.0, 3.0, 5.0, -100.0, 7.0]  # points 1..3 lie on y = 2x - 1
    fit = nb.fit_ls(x, y, 1, 3)
    assert fit.slope == pytest.approx(2.0)
    assert fit.intercept == pytest.approx(-1.0)
    assert fit.points_used == 3


def test_ls_residual_statistics(nb):
    # Residuals of the best line through (0,0) (1,2) (2,0) are -2/3, 4/3, -2/3.
    fit = nb.fit_ls([0.0, 1.0, 2.0], [0.0, 2.0, 0.0])
    assert fit.slope == pytest.approx(0.0, abs=1e-15)
    assert fit.intercept == pytest.approx(2.0 / 3.0)
    rms = math.sqrt((4 / 9 + 16 / 9 + 4 / 9) / 3)
    assert fit.rms_residual == pytest.approx(rms)
    assert fit.rms_relative == pytest.approx(rms / (2.0 / 3.0))


def test_ls_rejects_degenerate_input(nb):
    assert nb.fit_ls([1.0], [2.0]) is None
    assert nb.fit_ls([2.0, 2.0, 2.0], [1.0, 2.0, 3.0]) is None


def test_lsq_deviation_is_hoefler_eq6(nb):
    x = [0.0, 1.0, 2.0, 3.0]
    y = [0.0, 1.0, 1.0, 3.0]
    fit = nb.fit_ls(x, y)
    ssr = sum((fit.intercept + fit.slope * u - v) ** 2 for u, v in zip(x, y, strict=True))
    assert nb.lsq_deviation(x, y, 0, 3, fit) == pytest.approx(ssr / (4 - 2))
    # Against a given line rather than the fitted one: y = x, residuals 0 0 -1 0.
    line = analysis_lib.LinFit(intercept=0.0, slope=1.0)
    assert nb.lsq_deviation(x, y, 0, 3, line) == pytest.approx(1.0 / 2.0)
    assert math.isnan(nb.lsq_deviation(x, y, 0, 1, fit))


# --------------------------------------------------------------------------------------------
# Robust non-negative fit
# --------------------------------------------------------------------------------------------


def test_robust_ignores_gross_outliers(nb):
    x = [float(v) for v in range(1, 31)]
    y = [2.0 + 0.5 * v for v in x]
    y[3] += 200.0
    y[17] -= 12.0
    y[25] += 40.0
    fit = nb.fit_robust(x, y, max_rms_relative=0.05)
    assert fit.slope == pytest.approx(0.5, rel=1e-9)
    assert fit.intercept == pytest.approx(2.0, rel=1e-9)
    assert fit.outliers == 3
    assert fit.points_used == 27
    assert fit.reliable == 1
    # Plain least squares is visibly pulled by the same points.
    assert abs(nb.fit_ls(x, y).intercept - 2.0) > 1.0


def test_robust_true_negative_slope_is_clamped(nb):
    x = [float(v) for v in range(20)]
    y = [10.0 - 0.2 * v for v in x]
    fit = nb.fit_robust(x, y)
    assert fit.slope == 0.0
    assert fit.constrained == 1
    assert fit.intercept == pytest.approx(sum(y) / len(y))  # best constant


def test_robust_noise_driving_ols_negative_gives_zero_slope(nb):
    # A flat G (slope 0 truly) measured with noise: the OLS slope comes out negative.
    rng = random.Random(3)
    x = [float(2**k) for k in range(16)]
    y = [1.0 + rng.gauss(0.0, 0.05) for _ in x]
    assert nb.fit_ls(x, y).slope < 0.0  # precondition of the test
    fit = nb.fit_robust(x, y)
    assert fit.slope >= 0.0
    assert fit.intercept >= 0.0
    assert fit.constrained == 1


def test_robust_negative_intercept_goes_through_origin(nb):
    x = [float(v) for v in range(1, 21)]
    y = [-1.0 + 0.5 * v for v in x]
    assert nb.fit_ls(x, y).intercept < 0.0
    fit = nb.fit_robust(x, y, max_rms_relative=1.0)
    assert fit.intercept == 0.0
    assert fit.constrained == 1
    # Through the origin the least-squares slope is sum(xy) / sum(xx) over the points used;
    # a residual trend is no outlier, so all points stay.
    assert fit.outliers == 0
    expected = sum(u * v for u, v in zip(x, y, strict=True)) / sum(u * u for u in x)
    assert fit.slope == pytest.approx(expected)


def test_robust_is_never_negative(nb):
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(2, 25)
        x = sorted(rng.uniform(0.0, 1000.0) for _ in range(n))
        slope = rng.uniform(-0.5, 0.5)
        intercept = rng.uniform(-50.0, 50.0)
        y = [intercept + slope * u + rng.gauss(0.0, 20.0) for u in x]
        fit = nb.fit_robust(x, y)
        assert fit is not None
        assert fit.slope >= 0.0 and fit.intercept >= 0.0, (x, y)
        assert fit.points_used >= min(3, n)
        assert fit.points_used + fit.outliers == n


def test_robust_large_residuals_are_unreliable(nb):
    rng = random.Random(5)
    x = [float(2**k) for k in range(14)]
    y = [(1.0 + 0.01 * u) * (1.0 + rng.gauss(0.0, 0.4)) for u in x]
    fit = nb.fit_robust(x, y, max_rms_relative=0.1)
    assert fit.rms_relative > 0.1
    assert fit.reliable == 0


def test_robust_small_noise_is_reliable(nb):
    rng = random.Random(5)
    x = [float(2**k) for k in range(14)]
    y = [(1.0 + 0.01 * u) * (1.0 + rng.gauss(0.0, 0.01)) for u in x]
    fit = nb.fit_robust(x, y, max_rms_relative=0.1)
    assert fit.reliable == 1
    assert fit.constrained == 0
    assert fit.slope == pytest.approx(0.01, rel=0.05)


def test_robust_too_many_outliers_is_unreliable(nb):
    x = [float(v) for v in range(12)]
    y = [1.0 + 0.5 * v for v in x]
    for i in (1, 4, 6, 8, 10):  # 5 of 12 points: more than a third
        y[i] += 100.0
    fit = nb.fit_robust(x, y, max_rms_relative=1.0)
    assert fit.outliers == 5
    assert fit.reliable == 0


def test_robust_keeps_at_least_three_points(nb):
    fit = nb.fit_robust([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [1.0, 1.0, 1.0, 1e6, 1e3, 2.0])
    assert fit.points_used >= 3
    fit = nb.fit_robust([1.0, 2.0, 3.0], [1.0, 50.0, 2.0])
    assert fit.points_used == 3 and fit.outliers == 0


def test_robust_point_counts(nb):
    assert nb.fit_robust([1.0], [1.0]) is None
    fit = nb.fit_robust([1.0, 2.0], [1.0, 2.0])
    assert fit.slope == pytest.approx(1.0)
    assert fit.reliable == 0  # fewer than 3 points


# --------------------------------------------------------------------------------------------
# Overhead knee (Bell et al. 4.3)
# --------------------------------------------------------------------------------------------


def sweep(t0: float, o: float, step: float, count: int) -> tuple[list[float], list[float]]:
    compute = [step * i for i in range(count)]
    return compute, [max(t0, o + c) for c in compute]


@pytest.mark.parametrize(("t0", "o", "step"), [(5.0, 2.0, 0.25), (5.0, 2.0, 0.3), (3.1, 0.4, 0.07)])
def test_knee_recovers_overhead(nb, t0, o, step):
    compute, time = sweep(t0, o, step, 60)
    # Zero tolerance: the knee is the last compute at or before c_max = t0 - o.
    knee = nb.overlap_knee(compute, time, t0, 0.0)
    assert t0 - o - step - 1e-12 <= knee <= t0 - o + 1e-12
    assert t0 - knee == pytest.approx(o, abs=step)
    # With a tolerance the crossing of t0 (1 + tol) on the rising branch o + c is interpolated
    # exactly when both neighbours of the crossing lie on that branch.
    tol = 0.1
    knee = nb.overlap_knee(compute, time, t0, tol)
    assert knee == pytest.approx(t0 * (1 + tol) - o, abs=1e-9)


def test_knee_no_crossing_returns_last_compute(nb):
    compute, time = sweep(10.0, 1.0, 0.5, 10)  # o + c stays below t0
    assert nb.overlap_knee(compute, time, 10.0, 0.05) == compute[-1]


def test_knee_immediate_crossing_returns_zero(nb):
    compute = [0.5, 1.0, 1.5]
    assert nb.overlap_knee(compute, [6.0, 6.5, 7.0], 5.0, 0.05) == 0.0


def test_knee_empty_is_nan(nb):
    assert math.isnan(nb.overlap_knee([], [], 5.0, 0.05))
