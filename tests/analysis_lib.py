"""ctypes binding for src/libnbanalysis.so (the MPI-free analysis code of netbench)."""

from __future__ import annotations

import ctypes
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src"
LIBRARY = SRC / "libnbanalysis.so"


class LinFit(ctypes.Structure):
    _fields_ = [
        ("intercept", ctypes.c_double),
        ("slope", ctypes.c_double),
        ("rms_residual", ctypes.c_double),
        ("rms_relative", ctypes.c_double),
        ("points_used", ctypes.c_size_t),
        ("outliers", ctypes.c_size_t),
        ("constrained", ctypes.c_int),
        ("reliable", ctypes.c_int),
        ("intercept_clamped", ctypes.c_int),
        ("slope_clamped", ctypes.c_int),
    ]


class Range(ctypes.Structure):
    _fields_ = [("first", ctypes.c_size_t), ("last", ctypes.c_size_t)]


class BootstrapCI(ctypes.Structure):
    _fields_ = [
        ("intercept_low", ctypes.c_double),
        ("intercept_high", ctypes.c_double),
        ("slope_low", ctypes.c_double),
        ("slope_high", ctypes.c_double),
        ("resamples_used", ctypes.c_size_t),
    ]


_D = ctypes.c_double
_PD = ctypes.POINTER(ctypes.c_double)
_SZ = ctypes.c_size_t


def build() -> Path:
    """Build the shared library with `make -C src libnbanalysis.so` (needs only a C compiler)."""
    subprocess.run(
        ["make", "-C", str(SRC), "libnbanalysis.so"],
        check=True,
        capture_output=True,
        text=True,
    )
    return LIBRARY


def _array(values: Sequence[float]) -> ctypes.Array:
    return (ctypes.c_double * len(values))(*values)


@dataclass
class Analysis:
    """Thin Python wrappers around the C functions of analysis.h."""

    lib: ctypes.CDLL

    def __post_init__(self) -> None:
        lib = self.lib
        for name in ("nb_min", "nb_max", "nb_median", "nb_mad"):
            fn = getattr(lib, name)
            fn.argtypes = [_PD, _SZ]
            fn.restype = _D
        lib.nb_quantile.argtypes = [_PD, _SZ, _D]
        lib.nb_quantile.restype = _D
        lib.nb_fit_ls.argtypes = [_PD, _PD, _SZ, _SZ, ctypes.POINTER(LinFit)]
        lib.nb_fit_ls.restype = ctypes.c_int
        lib.nb_lsq_deviation.argtypes = [_PD, _PD, _SZ, _SZ, ctypes.POINTER(LinFit)]
        lib.nb_lsq_deviation.restype = _D
        lib.nb_fit_robust_nonneg.argtypes = [_PD, _PD, _SZ, _SZ, _D, ctypes.POINTER(LinFit)]
        lib.nb_fit_robust_nonneg.restype = ctypes.c_int
        lib.nb_detect_ranges.argtypes = [
            _PD,
            _PD,
            _PD,
            _SZ,
            ctypes.c_int,
            _D,
            _SZ,
            ctypes.POINTER(Range),
            _SZ,
        ]
        lib.nb_detect_ranges.restype = _SZ
        lib.nb_split_gain.argtypes = [_PD, _PD, _PD, _SZ, _SZ, _SZ, _D]
        lib.nb_split_gain.restype = _D
        lib.nb_bootstrap_fit_ci.argtypes = [
            _PD, _PD, _SZ, _SZ, _D, _SZ, ctypes.c_ulonglong, _D, ctypes.POINTER(BootstrapCI),
        ]
        lib.nb_bootstrap_fit_ci.restype = _SZ
        lib.nb_bootstrap_median_ci.argtypes = [
            _PD, _SZ, _SZ, _SZ, ctypes.c_ulonglong, _D, _PD, _PD,
        ]
        lib.nb_bootstrap_median_ci.restype = None
        lib.nb_overlap_knee.argtypes = [_PD, _PD, _SZ, _D, _D]
        lib.nb_overlap_knee.restype = _D
        lib.nb_despike.argtypes = [_PD, _SZ, _SZ, _D, _D, _PD]
        lib.nb_despike.restype = _SZ
        lib.nb_keep_fast_state.argtypes = [
            _PD, _PD, _SZ, _SZ, _D, ctypes.POINTER(_SZ), _PD, ctypes.POINTER(_SZ),
        ]
        lib.nb_keep_fast_state.restype = _SZ
        lib.nb_segment_optimal.argtypes = [_PD, _PD, _SZ, _SZ, _D, _D, _SZ,
                                           ctypes.POINTER(Range), _SZ]
        lib.nb_segment_optimal.restype = _SZ
        lib.nb_recheck_flags.argtypes = [_PD, _SZ, _SZ, _D, ctypes.POINTER(ctypes.c_ubyte)]
        lib.nb_recheck_flags.restype = _SZ
        # patterns.h
        _I, _PI = ctypes.c_int, ctypes.POINTER(ctypes.c_int)
        lib.nb_dense_phase_count.argtypes = [_I, _I, _I]
        lib.nb_dense_phase_count.restype = _I
        lib.nb_dense_partners.argtypes = [_I, _I, _I, _I, ctypes.c_uint64, _PI, _PI]
        lib.nb_dense_partners.restype = None
        lib.nb_dense_algorithm_from_name.argtypes = [ctypes.c_char_p]
        lib.nb_dense_algorithm_from_name.restype = _I
        lib.nb_beff_message_lengths.argtypes = [_SZ, ctypes.POINTER(_SZ)]
        lib.nb_beff_message_lengths.restype = _I
        lib.nb_beff_ring.argtypes = [_I, _I, _I, _PI, _PI]
        lib.nb_beff_ring.restype = _I
        lib.nb_beff_random_ring.argtypes = [_I, ctypes.c_uint64, _I, _I, _PI, _PI]
        lib.nb_beff_random_ring.restype = None
        lib.nb_logavg.argtypes = [_PD, _SZ]
        lib.nb_logavg.restype = _D

    def stat(self, name: str, values: Sequence[float]) -> float:
        return getattr(self.lib, name)(_array(values), len(values))

    def quantile(self, values: Sequence[float], q: float) -> float:
        return self.lib.nb_quantile(_array(values), len(values), q)

    def fit_ls(
        self, x: Sequence[float], y: Sequence[float], first: int = 0, last: int | None = None
    ) -> LinFit | None:
        last = len(x) - 1 if last is None else last
        fit = LinFit()
        rc = self.lib.nb_fit_ls(_array(x), _array(y), first, last, ctypes.byref(fit))
        return fit if rc == 0 else None

    def lsq_deviation(
        self, x: Sequence[float], y: Sequence[float], first: int, last: int, fit: LinFit
    ) -> float:
        return self.lib.nb_lsq_deviation(_array(x), _array(y), first, last, ctypes.byref(fit))

    def fit_robust(
        self,
        x: Sequence[float],
        y: Sequence[float],
        max_rms_relative: float = 0.1,
        first: int = 0,
        last: int | None = None,
    ) -> LinFit | None:
        last = len(x) - 1 if last is None else last
        fit = LinFit()
        rc = self.lib.nb_fit_robust_nonneg(
            _array(x), _array(y), first, last, max_rms_relative, ctypes.byref(fit)
        )
        return fit if rc == 0 else None

    def detect_ranges(
        self,
        x: Sequence[float],
        y: Sequence[float],
        noise_var: Sequence[float] | None = None,
        lookahead: int = 3,
        pfact: float = 2.0,
        min_points: int = 3,
        max_ranges: int = 64,
    ) -> list[tuple[int, int]]:
        """Ranges as (first, last) index pairs, inclusive."""
        count, ranges = self.detect_ranges_raw(
            x, y, noise_var, lookahead, pfact, min_points, max_ranges
        )
        assert count <= max_ranges, "more ranges than max_ranges"
        return ranges

    def detect_ranges_raw(
        self,
        x: Sequence[float],
        y: Sequence[float],
        noise_var: Sequence[float] | None,
        lookahead: int,
        pfact: float,
        min_points: int,
        max_ranges: int,
    ) -> tuple[int, list[tuple[int, int]]]:
        """The C return value and the ranges actually written."""
        out = (Range * max(max_ranges, 1))()
        nv = _array(noise_var) if noise_var is not None else None
        count = self.lib.nb_detect_ranges(
            _array(x), _array(y), nv, len(x), lookahead, pfact, min_points, out, max_ranges
        )
        return count, [(out[i].first, out[i].last) for i in range(min(count, max_ranges))]

    def segment_optimal(
        self,
        x: Sequence[float],
        y: Sequence[float],
        min_points: int = 5,
        rel_floor: float = 0.03,
        margin: float = 50.0,
        max_segments: int = 8,
    ) -> list[tuple[int, int]]:
        """nb_segment_optimal: the (first, last) ranges of the chosen segmentation."""
        out = (Range * max(len(x), 1))()
        count = self.lib.nb_segment_optimal(
            _array(x), _array(y), len(x), min_points, rel_floor, margin, max_segments, out,
            max(len(x), 1),
        )
        return [(out[i].first, out[i].last) for i in range(count)]

    def split_gain(
        self,
        x: Sequence[float],
        y: Sequence[float],
        first: int,
        split: int,
        last: int,
        noise_var: Sequence[float] | None = None,
        rel_floor: float = 0.01,
    ) -> float:
        nv = _array(noise_var) if noise_var is not None else None
        return self.lib.nb_split_gain(_array(x), _array(y), nv, first, split, last, rel_floor)

    def bootstrap_fit_ci(
        self,
        x: Sequence[float],
        y: Sequence[float],
        first: int = 0,
        last: int | None = None,
        max_rms_relative: float = 0.2,
        resamples: int = 1000,
        seed: int = 1,
        level: float = 0.95,
    ) -> BootstrapCI:
        last = len(x) - 1 if last is None else last
        ci = BootstrapCI()
        self.lib.nb_bootstrap_fit_ci(
            _array(x), _array(y), first, last, max_rms_relative, resamples, seed, level,
            ctypes.byref(ci),
        )
        return ci

    def bootstrap_median_ci(
        self,
        v: Sequence[float],
        first: int = 0,
        last: int | None = None,
        resamples: int = 1000,
        seed: int = 1,
        level: float = 0.95,
    ) -> tuple[float, float]:
        last = len(v) - 1 if last is None else last
        low, high = ctypes.c_double(), ctypes.c_double()
        self.lib.nb_bootstrap_median_ci(
            _array(v), first, last, resamples, seed, level, ctypes.byref(low), ctypes.byref(high)
        )
        return low.value, high.value

    def overlap_knee(
        self, compute: Sequence[float], time: Sequence[float], time0: float, tolerance: float
    ) -> float:
        return self.lib.nb_overlap_knee(
            _array(compute), _array(time), len(compute), time0, tolerance
        )

    def despike(
        self, y: Sequence[float], half_window: int = 2, z: float = 3.5, floor_relative: float = 0.01
    ) -> tuple[int, list[float]]:
        """(points replaced, filtered series)."""
        out = (ctypes.c_double * max(len(y), 1))()
        count = self.lib.nb_despike(_array(y), len(y), half_window, z, floor_relative, out)
        return count, list(out)[: len(y)]

    def keep_fast_state(
        self, probe: Sequence[Sequence[float]], key: Sequence[Sequence[float]], ratio: float
    ) -> tuple[list[int], int, float, int]:
        """probe[pass][size], key[pass][size] -> (kept pass per size, sizes with no fast-state
        pass, lowest probe, passes not in the fast state)."""
        made, count = len(key), len(key[0])
        kept = (_SZ * count)()
        fast = _D()
        slow_passes = _SZ()
        slow_sizes = self.lib.nb_keep_fast_state(
            _array([v for row in probe for v in row]), _array([v for row in key for v in row]),
            made, count, ratio, kept, ctypes.byref(fast), ctypes.byref(slow_passes),
        )
        return list(kept), slow_sizes, fast.value, slow_passes.value

    def recheck_flags(
        self, y: Sequence[float], half_window: int = 2, excess: float = 0.10,
        flags: Sequence[int] | None = None,
    ) -> tuple[int, list[int]]:
        """(points of y flagged, flags after the call; `flags` are the flags before it)."""
        out = (ctypes.c_ubyte * max(len(y), 1))(*(flags or []))
        count = self.lib.nb_recheck_flags(_array(y), len(y), half_window, excess, out)
        return count, list(out)[: len(y)]

    # ---- patterns.h -------------------------------------------------------------------------

    DENSE = ("aapc", "pairwise", "cumulative", "random")

    def dense_phase_count(self, algorithm: str, ranks: int, random_phases: int = 16) -> int:
        return self.lib.nb_dense_phase_count(self.DENSE.index(algorithm), ranks, random_phases)

    def dense_phase(
        self, algorithm: str, ranks: int, phase: int, seed: int = 1
    ) -> list[tuple[int, int]]:
        """(send_to, recv_from) of every rank in one phase; (-1, -1) = idle."""
        out = []
        for rank in range(ranks):
            send, recv = ctypes.c_int(), ctypes.c_int()
            self.lib.nb_dense_partners(
                self.DENSE.index(algorithm), ranks, phase, rank, seed,
                ctypes.byref(send), ctypes.byref(recv),
            )
            out.append((send.value, recv.value))
        return out

    def dense_algorithm_from_name(self, name: str) -> int:
        return self.lib.nb_dense_algorithm_from_name(name.encode())

    def beff_lengths(self, lmax: int) -> list[int] | None:
        out = (ctypes.c_size_t * 21)()
        rc = self.lib.nb_beff_message_lengths(lmax, out)
        return list(out) if rc == 0 else None

    def beff_ring(self, ranks: int, pattern: int) -> list[tuple[int, int, int]]:
        """(next, prev, ring size) of every rank."""
        out = []
        for rank in range(ranks):
            nxt, prev = ctypes.c_int(), ctypes.c_int()
            size = self.lib.nb_beff_ring(
                ranks, pattern, rank, ctypes.byref(nxt), ctypes.byref(prev)
            )
            out.append((nxt.value, prev.value, size))
        return out

    def beff_random_ring(self, ranks: int, seed: int, pattern: int) -> list[tuple[int, int]]:
        out = []
        for rank in range(ranks):
            nxt, prev = ctypes.c_int(), ctypes.c_int()
            self.lib.nb_beff_random_ring(ranks, seed, pattern, rank, ctypes.byref(nxt),
                                         ctypes.byref(prev))
            out.append((nxt.value, prev.value))
        return out

    def logavg(self, values: Sequence[float]) -> float:
        return self.lib.nb_logavg(_array(values), len(values))


def load(path: Path | None = None) -> Analysis:
    """Load the library (building it first when no path is given)."""
    return Analysis(ctypes.CDLL(str(path if path is not None else build())))

