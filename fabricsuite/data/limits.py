"""What the hardware can do: a message figure read against the limits of the cores it ran on.

Every timed point-to-point check on one node, and the dense check on one node, runs `netbench
limits` on the job's own cores in the same job, just before its method (its *prologue*,
fabricsuite.checks.rfm_netbench): the floor a message can reach (`floor_oneway_median_us`, half a
cache line's round trip between the cores of ranks 0 and 1) and the ceiling of a copy per size
(`copy_one_core_median_MBps`: one core's memcpy, what a single-copy transfer reaches at best;
`copy_two_cores_median_MBps`: both cores copying at once, the ceiling of a pattern where both
send; `copy_all_ranks_median_MBps`: every rank copying at once, per core, the ceiling of a dense
pattern whose cores share the node's memory). An *efficiency* is a message figure over its
limit, declared like any figure (`Efficiency`: unit and direction):

- a bandwidth as a fraction of its ceiling (unit `fraction`, higher is better);
- a latency as a multiple of its floor (unit `x_floor`, lower is better).

Both limits move with the machine (a slow phase of a VM slows the copy and the message alike),
so an efficiency says how close a run came to what these cores could do at that moment, on any
machine. A fraction above 1 (or a latency below its floor) by more than the two measurements'
noise is a measurement error: the case fails sanity (`impossible`).

First-day verdicts from physics (PHYSICS_FLOORS): an efficiency's reference, where a reference
file gives none, is a floor chosen to hold on every healthy machine measured (docs/
measurements.md "Efficiencies against the limits of the cores") and still fail what is really
broken: a run fallen onto TCP loopback (a latency ~50-130 floors), two ranks on one core (a
bandwidth under 2 % of the ceiling, a cache-line floor of hundreds of microseconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fabricsuite.base.metrics import (
    HIGHER,
    LOWER,
    Figure,
    PerfSpec,
    is_finite_number,
    perf_variable,
)

#: The JSON result the prologue writes in the stage directory (`netbench limits --json-file`).
LIMITS_FILE = "limits.json"
#: The prologue's repetition settings: short (about 1 s per size list), its noise recorded.
PROLOGUE_OPTIONS = ("--repetitions", "5", "--time-cap-ms", "5")

#: `reference_origin` of a case judged only by its efficiencies' physics floors (a machine
#: without references of its own).
PHYSICS_ORIGIN = "physics"

#: Units of the efficiencies.
FRACTION = "fraction"
FLOOR_MULTIPLE = "x_floor"
FRACTION_SPEC = PerfSpec(FRACTION, HIGHER)
FLOOR_MULTIPLE_SPEC = PerfSpec(FLOOR_MULTIPLE, LOWER)

#: The ceilings and the floor an efficiency divides by: (limits table or None for the summary,
#: column).
ONE_CORE = ("limits_copy", "copy_one_core_median_MBps")
TWO_CORES = ("limits_copy", "copy_two_cores_median_MBps")
#: every rank of the job copying at once, per core: the ceiling of a dense pattern on one node
ALL_RANKS = ("limits_copy", "copy_all_ranks_median_MBps")
FLOOR = (None, "floor_oneway_median_us")
#: The noise of each limit (percent), which the impossibility rule allows for.
_NOISE = {ONE_CORE: "copy_one_core_noise_percent", TWO_CORES: "copy_two_cores_noise_percent",
          ALL_RANKS: "copy_all_ranks_noise_percent", FLOOR: "floor_noise_percent"}

#: An efficiency beyond its limit by more than this share (or three times the limit's noise,
#: whichever is larger) is a measurement error, not a fast fabric. A factor of two: the limits
#: are measured in the same job, seconds before the method, and a shared VM's slow phase (core
#: to core 2-4x for seconds to minutes) can hold the prologue and not the method: the CI host of
#: 2026-12-02 measured a healthy ping-pong at 0.85 x the floor its prologue had just taken
#: (0.10 failed it in sanity). A real measurement error (a clock, a size miscounted) is
#: off by far more.
IMPOSSIBLE_MARGIN = 1.0
#: A latency below its cache-line floor allows more: the floor is the noisiest limit. Between
#: runs on the development VM it measured 0.024-0.30 us (bench/efficiency_floors.py,
#: 2026-12-02 17:12), and CI that day failed a healthy 8 B ping-pong of 0.11 us as 0.38 x a
#: floor its prologue had taken at 0.29 us. Impossible below a quarter of the floor (4x under
#: the slowest floor seen, still far above a clock's or a miscount's error).
FLOOR_IMPOSSIBLE_MARGIN = 3.0

#: The physics floor of each efficiency by unit: a bandwidth at least this fraction of its
#: ceiling, a latency at most this many floors. Healthy here (2026-12-01): bandwidth fractions
#: 0.25-0.49; both ranks on one core 0.016 of the ceiling (docs/measurements.md). 0.05 is 5x
#: under the healthy fractions. The latency against its own floor (pingpong measures it in its
#: processes, 2026-12-02): healthy 2.1-2.8 floors with either MPI and either placement of the
#: vCPUs (floor 0.06 or 0.29 us); TCP loopback and MPICH's UCX on TCP 79-88 floors, 27-29
#: where the host placed the vCPUs apart. 12 floors: 4x over the healthy, 2.3x under TCP's
#: least. (25 until then, against the prologue's floor, which a placement between the two
#: programs moved 4.5x: TCP read 19 floors, a healthy latency 0.5.)
PHYSICS_FLOORS = {FRACTION: 0.05, FLOOR_MULTIPLE: 12.0}
#: The cache-line floor itself: no two cores of one node take longer to pass a line (a few
#: hundred ns across packages); two ranks on one core take a scheduler's time slice.
FLOOR_LIMIT_US = 5.0


@dataclass(frozen=True)
class Efficiency(Figure):
    """A message figure over the limit of its cores: `figure` (a netbench Metric of the
    method's result) divided by `limit` of the prologue's result (fraction), or `limit` divided
    into it (a latency's multiple of the floor). `size_bytes`: the size whose ceiling divides
    (None: the size the figure names, or for a peak the result's `peak_size` summary key)."""

    figure: Any = None
    limit: tuple[str | None, str] = ONE_CORE
    size_bytes: int | None = None
    peak_size: str | None = None
    #: This efficiency's first-day floor where it differs from PHYSICS_FLOORS' for its unit.
    first_day: float | None = None

    def _read_limit(self, result: Any, column: str) -> Any:
        """`column` of the prologue's result where this efficiency's limit lies: the summary for
        the floor, the copy table's row at the figure's size for a ceiling. The floor the
        method measured itself, where it did (pingpong: in its own processes, just before its
        first size), comes first: a VM's host places two idle vCPUs anew between programs
        (the floor 0.06 or 0.29 us between runs a second apart here, each stable while the
        ranks poll), so the prologue's floor may be another placement's (a healthy latency
        read 0.52 x it, TCP loopback 19 x)."""
        if self.limit[0] is None:
            own = _own_summary(result, column)
            if own is not None:
                return own
        limits = getattr(result, "limits", None)
        if limits is None:
            raise ValueError("no limits of the cores measured in this job (the prologue's "
                             f"{LIMITS_FILE})")
        table = self.limit[0]
        if table is None:
            return limits.value(None, column)
        return limits.value(table, column, size_bytes=self.size(result))

    def limit_value(self, result: Any) -> float:
        return self._read_limit(result, self.limit[1])

    def noise(self, result: Any) -> float:
        """The limit's relative noise (0.03 for 3 %), 0 when not recorded."""
        try:
            value = self._read_limit(result, _NOISE[self.limit])
        except (ValueError, KeyError):
            return 0.0
        return value / 100.0 if is_finite_number(value) else 0.0

    def size(self, result: Any) -> int:
        if self.size_bytes is not None:
            return self.size_bytes
        if self.peak_size is not None:
            return int(result.value(None, self.peak_size))
        return int(self.figure.where["size_bytes"])

    def extract(self, result: Any) -> float:
        value, limit = self.figure.extract(result), self.limit_value(result)
        if not (is_finite_number(value) and is_finite_number(limit) and limit > 0):
            return math.nan
        return value / limit

    def impossible(self, result: Any) -> str | None:
        """Why the figure cannot be true (beyond its limit by more than the noise), or None."""
        efficiency = self.extract(result)
        allowed = FLOOR_IMPOSSIBLE_MARGIN if self.limit == FLOOR else IMPOSSIBLE_MARGIN
        margin = max(allowed, 3.0 * self.noise(result))
        if self.spec.unit == FRACTION and efficiency > 1.0 + margin:
            return (f"{self.figure.column} is {efficiency:.2f} x its ceiling "
                    f"({self.limit[1]}): faster than the cores can copy, a measurement error")
        if self.spec.unit == FLOOR_MULTIPLE and efficiency < 1.0 / (1.0 + margin):
            return (f"{self.figure.column} is {efficiency:.2f} x its floor "
                    f"({self.limit[1]}): faster than a cache line between the cores, a "
                    f"measurement error")
        return None


def _own_summary(result: Any, column: str) -> float | None:
    """`column` of the method's own summary where it measured it (a finite number), else None
    (an older netbench, another method, or ranks on two nodes: null)."""
    try:
        value = result.value(None, column)
    except (ValueError, KeyError, AttributeError):
        return None
    return float(value) if is_finite_number(value) else None


#: A peak's first-day floor: the peak lies where the copy runs in cache (2-4x faster than at
#: 1 MiB), so its fraction is lower (0.11 healthy here for MPICH, 0.25 for Open MPI).
PEAK_FIRST_DAY = 0.025


def fraction_of_ceiling(figure: Any, limit: tuple[str | None, str] = ONE_CORE,
                        peak_size: str | None = None) -> Efficiency:
    """A bandwidth figure as a fraction of the copy ceiling at its size (higher is better);
    `peak_size` names the summary key of the size a peak was measured at."""
    return Efficiency(read=None, spec=FRACTION_SPEC, figure=figure, limit=limit,
                      peak_size=peak_size, first_day=PEAK_FIRST_DAY if peak_size else None)


def multiple_of_floor(figure: Any) -> Efficiency:
    """A latency figure as a multiple of the cache-line floor (lower is better)."""
    return Efficiency(read=None, spec=FLOOR_MULTIPLE_SPEC, figure=figure, limit=FLOOR)


def efficiencies(metrics: dict[str, Any]) -> dict[str, Efficiency]:
    """The efficiency figures among a check's `metrics`."""
    return {name: figure for name, figure in metrics.items() if isinstance(figure, Efficiency)}


def limit_sizes(metrics: dict[str, Any], required_sizes: list[int]) -> list[int]:
    """The sizes the prologue must measure for `metrics`' efficiencies: each one's size, every
    required size where one reads a peak, 8 B where only the floor is needed."""
    sizes: set[int] = set()
    for figure in efficiencies(metrics).values():
        if figure.limit == FLOOR:
            continue
        if figure.size_bytes is not None:
            sizes.add(figure.size_bytes)
        elif figure.peak_size is not None:
            sizes.update(required_sizes)
        else:
            sizes.add(int(figure.figure.where["size_bytes"]))
    return sorted(sizes) or [8]


def physics_reference(figure: Efficiency) -> tuple[float, float | None, float | None, str]:
    """The first-day reference of an efficiency (ReFrame's (value, lower, upper, unit)): at least
    its floor's fraction of the ceiling, at most its multiple of the floor."""
    spec = figure.spec
    floor = figure.first_day if figure.first_day is not None else PHYSICS_FLOORS[spec.unit]
    if spec.better == HIGHER:
        return (floor, 0.0, None, spec.unit)
    return (floor, None, 0.0, spec.unit)


def within_physics(entry: tuple, physics: tuple) -> tuple | None:
    """A reference file's entry for an efficiency, its bad-side bound held to the physics floor
    (physics_reference): a machine's own history may judge tighter than physics, never looser.
    None where the entry's own bound is already as tight (keep it as it is).

    A machine whose recording sessions moved a figure too much to judge (`_recorded_only`: no
    bound) or bounded it wide (-44 % where a noisy machine's own sessions spread) still fails
    what every healthy machine keeps: CI of 2026-12-02 passed TCP loopback at 350 floors against
    a recorded-only latency. The reference value stays the file's (its deviation is shown
    against this machine's own figure); where the file's value is itself beyond the floor (a
    machine whose references were taken while broken), the physics reference replaces it."""
    value, lower, upper, unit = entry
    floor = physics[0]
    if not (is_finite_number(value) and value > 0):
        return tuple(physics)
    if physics[1] is not None:  # higher is better: at least `floor`
        own = value * (1 + lower) if is_finite_number(lower) else -math.inf
        if own >= floor:
            return None
        return (value, floor / value - 1, upper, unit) if value > floor else tuple(physics)
    own = value * (1 + upper) if is_finite_number(upper) else math.inf
    if own <= floor:
        return None
    return (value, lower, floor / value - 1, unit) if value < floor else tuple(physics)


def floor_problem(limits: Any) -> str | None:
    """The cache-line floor itself beyond what two cores of one node take (FLOOR_LIMIT_US): the
    ranks are not on two cores (one core shared, a scheduler between them)."""
    try:
        floor = limits.value(None, FLOOR[1])
    except ValueError:
        return None
    if is_finite_number(floor) and floor > FLOOR_LIMIT_US:
        return (f"the cores' cache-line floor is {floor:.3g} us (floor_oneway_median_us; two "
                f"cores of one node pass a line in under {FLOOR_LIMIT_US:g} us): the ranks do "
                f"not run on two cores of their own")
    return None


#: nccl-tests' bus bandwidth (its doc/PERFORMANCE.md): busbw = algbw x factor, algbw = S / t
#: with S the operation's size as nccl-tests counts it, so that a collective's figure compares
#: with the link's rate whatever the rank count. netbench's size is per rank (allgather) or per
#: peer (alltoall), nccl-tests' the whole buffer: S = n x size there. Per collective: (S in
#: sizes per netbench size, factor), both functions of the rank count n.
BUS_FACTORS = {
    "allreduce": (lambda n: 1, lambda n: 2 * (n - 1) / n),
    "allgather": (lambda n: n, lambda n: (n - 1) / n),
    "alltoall": (lambda n: n, lambda n: (n - 1) / n),
    "bcast": (lambda n: 1, lambda n: 1.0),
    "reduce": (lambda n: 1, lambda n: 1.0),
}


def bus_bandwidth_MBps(collective: str, size_bytes: int, time_us: float, ranks: int) -> float:
    """nccl-tests' bus bandwidth of one call of `collective` at netbench's `size_bytes` taking
    `time_us` on `ranks` ranks, in MB/s (10^6 bytes per second = bytes per microsecond)."""
    sizes, factor = BUS_FACTORS[collective]
    if not (is_finite_number(time_us) and time_us > 0 and ranks > 1):
        return math.nan
    return size_bytes * sizes(ranks) / time_us * factor(ranks)


@dataclass(frozen=True)
class BusBandwidth(Figure):
    """A collective's median time at one size as nccl-tests' bus bandwidth (MB/s, higher is
    better): `time` is the netbench Metric of the call's time, the rank count the result's."""

    time: Any = None
    collective: str = ""

    def extract(self, result: Any) -> float:
        ranks = result.parameters.get("ranks")
        if not isinstance(ranks, int):
            raise ValueError("the result records no rank count (parameter ranks)")
        return bus_bandwidth_MBps(self.collective, int(self.time.where["size_bytes"]),
                                  self.time.extract(result), ranks)


def bus_bandwidth(time: Any) -> BusBandwidth:
    """`time` (a collective's time at a size, a netbench Metric) as its bus bandwidth."""
    return BusBandwidth(read=None, spec=PerfSpec("MB/s", HIGHER), time=time,
                        collective=str(time.where["collective"]))


#: Cases named one by one in the outcome's efficiency lines; the rest are counted.
EFFICIENCIES_SHOWN = 6


def efficiency_lines(cases: list[dict]) -> list[str]:
    """How close the session's runs came to what their cores can do, one line per case with
    efficiencies (its last run): "NetbenchPingPong local:default openmpi same-l3:
    latency_8B_floor_multiple 2.6 x floor"; disturbed runs are left out (their figures say
    nothing of the hardware)."""
    from fabricsuite.base.metrics import case_where

    shown = []
    for case in cases:
        if case.get("interference") or case.get("result") == "skip":
            continue
        parts = []
        for key, perf in sorted((case.get("perfvalues") or {}).items()):
            if not (isinstance(perf, list) and len(perf) > 4 and is_finite_number(perf[0])):
                continue
            variable = perf_variable(key)
            if perf[4] == FRACTION:
                parts.append(f"{variable} {perf[0]:.2f} of its ceiling")
            elif perf[4] == FLOOR_MULTIPLE:
                parts.append(f"{variable} {perf[0]:.1f} x its floor")
        if parts:
            shown.append(f"  {case_where(case)}: {'; '.join(parts)}")
    if not shown:
        return []
    head = ("against the limits of their cores (the same job's netbench limits: the copy "
            "ceiling, the cache-line floor):")
    rest = len(shown) - EFFICIENCIES_SHOWN
    return [head, *shown[:EFFICIENCIES_SHOWN]] + ([f"  ... and {rest} more case(s)"]
                                                  if rest > 0 else [])
