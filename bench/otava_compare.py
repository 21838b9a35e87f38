"""Change points: `fabricsuite history` (fabricsuite.commands.history.detect) against Apache Otava
0.8 on the same series, with the truth known. Why history keeps its own E-Divisive (history.py's
docstring quotes this benchmark).

A suite run stores hundreds of variables; a nightly history asks of every one whether it moved.
So: NULL series of pure noise (a center's quiet variables) and STEP series with one step of
STEP_PCT % (a regression), all of LENGTH runs with the step STEP_AT runs before the end, noise
NOISE_PCT % (normal, relative), and optionally a share of runs in a slow phase (twice the value).
Per method: the false alarms (noise series with any change
point), the detected steps (a change point within 2 runs of the true one) and the time.

- history: `detect` over all series at once: E-Divisive means with permutation tests,
  Benjamini-Hochberg at FDR 0.05 across every test of every series (its default), and its 5 %
  minimum shift for an alarm.
- otava: `otava.analysis.compute_change_points` per series (Hunter: windowed E-Divisive, t-test
  significance; max_pvalue 0.001, Otava's default) and `compute_change_points_orig` (Matteson
  and James, 100 permutations, max_pvalue 0.001). Otava has no correction across series.

Usage (Otava is not a dependency of the suite; install it beside it to run this):
    python3 -m venv /tmp/otava && /tmp/otava/bin/pip install apache-otava==0.8.0
    .venv/bin/python bench/otava_compare.py --otava-site /tmp/otava/lib/python3.11/site-packages
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fabricsuite.commands.history import Point, Series, detect  # noqa: E402


def make_series(nulls: int, steps: int, length: int, step_at: int, step_pct: float,
                noise_pct: float, slow_share: float,
                seed: int) -> tuple[list[list[float]], list[int | None]]:
    """The series and each one's true change point (None for a noise series). A share
    `slow_share` of the runs, at random, met a slow phase: twice the value (this VM's
    shared-memory latency, a busy node)."""
    rng = np.random.default_rng(seed)
    values, truth = [], []
    for i in range(nulls + steps):
        x = 10.0 * (1.0 + rng.normal(0.0, noise_pct / 100.0, length))
        x[rng.random(length) < slow_share] *= 2.0
        if i >= nulls:
            x[length - step_at:] *= 1.0 + step_pct / 100.0
            truth.append(length - step_at)
        else:
            truth.append(None)
        values.append([float(v) for v in x])
    return values, truth


def score(found: list[list[int]], truth: list[int | None]) -> tuple[int, int]:
    """(noise series with any change point, step series with one within 2 runs of the truth)."""
    false_alarms = sum(1 for f, t in zip(found, truth, strict=True) if t is None and f)
    detected = sum(1 for f, t in zip(found, truth, strict=True)
                   if t is not None and any(abs(i - t) <= 2 for i in f))
    return false_alarms, detected


def run_history(values: list[list[float]]) -> tuple[list[list[int]], list[list[int]]]:
    """Change points (significant after BH) and alarms (those beyond the minimum shift)."""
    series = []
    for n, v in enumerate(values):
        s = Series("Bench", "sys:part", "env", f"var{n}", "us", directions={"lower"})
        s.points = [Point(float(t), f"s{t}", x) for t, x in enumerate(v)]
        series.append(s)
    history = detect(series)
    found: dict[str, list[int]] = {s.key: [] for s in series}
    alarms: dict[str, list[int]] = {s.key: [] for s in series}
    for cp in history.change_points:
        found[cp.series.key].append(cp.index)
        if cp.alarm:
            alarms[cp.series.key].append(cp.index)
    return [found[s.key] for s in series], [alarms[s.key] for s in series]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--otava-site", required=True, help="site-packages holding otava")
    parser.add_argument("--nulls", type=int, default=200)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--length", type=int, default=30)
    parser.add_argument("--step-at", type=int, default=10)
    parser.add_argument("--step-pct", type=float, default=10.0)
    parser.add_argument("--noise-pct", type=float, default=3.0)
    parser.add_argument("--slow-share", type=float, default=0.0,
                        help="share of runs in a slow phase (twice the value), e.g. 0.05")
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    sys.path.append(args.otava_site)
    from otava.analysis import compute_change_points, compute_change_points_orig

    methods = {
        "history (BH 0.05 across series)": None,
        "otava compute_change_points": lambda v: [int(cp.index) for cp in
                                                  compute_change_points(v)[0]],
        "otava compute_change_points_orig": lambda v: [int(cp.index) for cp in
                                                       compute_change_points_orig(v, seed=1)[0]],
    }
    print(f"{args.nulls} noise series + {args.steps} with a {args.step_pct:g} % step "
          f"{args.step_at} runs before the end; {args.length} runs each, noise "
          f"{args.noise_pct:g} %, {100 * args.slow_share:g} % of runs slow (2x); {args.seeds} "
          f"seeds")
    rows: dict[str, list[tuple[int, int, float]]] = {}
    for seed in range(args.seeds):
        values, truth = make_series(args.nulls, args.steps, args.length, args.step_at,
                                    args.step_pct, args.noise_pct, args.slow_share, seed)
        for name, method in methods.items():
            start = time.perf_counter()
            if method is None:
                found, alarms = run_history(values)
                rows.setdefault("history, alarms (shift >= 5 %)", []).append(
                    (*score(alarms, truth), time.perf_counter() - start))
            else:
                found = [method(v) for v in values]
            rows.setdefault(name, []).append((*score(found, truth), time.perf_counter() - start))
    print(f"{'method':40} {'false alarms':>14} {'steps found':>12} {'seconds':>8}")
    for name, runs in rows.items():
        fa = " ".join(str(r[0]) for r in runs)
        det = " ".join(str(r[1]) for r in runs)
        print(f"{name:40} {fa:>14} {det:>12} {statistics.median(r[2] for r in runs):8.2f}")
    print(f"(per seed; of {args.nulls} noise series and {args.steps} steps; seconds: median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
