"""What every performance variable is: its unit and which way is better, declared once.

A check declares each performance variable with a `PerfSpec` (netbench checks through
`rfm_netbench.Metric`, external suites through `rfm_external`); everything that judges a figure
takes the direction from there, never from the unit string:

- the reference loader (`references.check_tuple`) requires the reference's unit to be the
  variable's unit and a bound on the variable's bad side;
- `fabricsuite baseline` sizes the bound on the bad side (the direction travels with every stored
  run as the loggable variable `perf_directions` of the test case).

Directions:

- ``lower``: lower is better (latency, time, gap, overhead); the bad side is above, the
  reference needs an upper bound.
- ``higher``: higher is better (bandwidth, Mop/s, messages/s, overlap %); the bad side is below,
  the reference needs a lower bound.
- ``equal``: a figure that must not move either way; both bounds. `fabricsuite baseline` sizes
  them by what the figure is: a count (`PerfSpec.count`: the number of protocol ranges) may be
  one more or one fewer than seen; a size from a geometric sweep (a protocol threshold in bytes,
  `PerfSpec.size_step` set) may be one sweep step off the seen range, never a percentage; any
  other figure (M = g / G) gets the noise rule on both sides.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fabricsuite import REPO_ROOT

LOWER = "lower"
HIGHER = "higher"
EQUAL = "equal"
DIRECTIONS = (LOWER, HIGHER, EQUAL)


#: A partition's tolerance floor when its configuration declares none (extras.tolerance_floor):
#: the narrowest bound a baseline gives. A dedicated node repeats within about 1 %; 3 % keeps a
#: 10 % regression well outside.
DEFAULT_FLOOR = 0.03

def is_number(value: Any) -> bool:
    """An int or float from a report, not a bool (JSON's true and false are no figures)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_finite_number(value: Any) -> bool:
    """`is_number`, and neither NaN nor infinite."""
    return is_number(value) and math.isfinite(value)


#: The unit of a figure counted in whole units (violations, ranges).
COUNT_UNIT = "count"
#: Every unit counted in whole units: a reference of 0 of them is judged on absolute bounds.
COUNT_UNITS = (COUNT_UNIT, "pairs", "nodes", "links", "components", "ranges")


@dataclass(frozen=True)
class PerfSpec:
    """A performance variable's unit and direction."""

    unit: str
    #: "lower", "higher" or "equal" (see the module docstring).
    better: str
    #: For a size taken from a geometric sweep (a protocol threshold): the ratio of adjacent
    #: sizes of the sweep (2 ** (1/4) for 4 sizes per doubling). Judged in sweep steps.
    size_step: float | None = None
    #: A count that moves by whole units (the number of protocol ranges): judged +-1.
    count: bool = False
    #: The step the program prints the figure in (NPB's `Time in seconds`: 0.01 s). A figure
    #: below MIN_RESOLUTION_STEPS steps is recorded, never judged: the printed step alone would
    #: be more than 1 % of it (class S's IS printed 0.00 s in 6 of 8 runs).
    resolution: float | None = None

    @property
    def whole_units(self) -> bool:
        """Counted in whole units (a count that must not move, or a figure in `count`s such as
        violations): a reference of 0 is judged on absolute bounds, as ReFrame reads them."""
        return self.count or self.unit in COUNT_UNITS

    def __post_init__(self):
        if self.better not in DIRECTIONS:
            raise ValueError(f"direction {self.better!r} is not one of {', '.join(DIRECTIONS)}")
        if not self.unit:
            raise ValueError("a performance variable needs a unit")
        if self.size_step is not None and not (self.better == EQUAL and self.size_step > 1.0):
            raise ValueError("size_step (> 1) is for an 'equal' size from a geometric sweep")
        if self.count and (self.better != EQUAL or self.size_step is not None):
            raise ValueError("count is for an 'equal' whole number, not a sweep size")
        if self.resolution is not None and not self.resolution > 0:
            raise ValueError("resolution is the positive step the program prints")


#: A figure printed in steps of PerfSpec.resolution is judged from this many steps up (the step
#: is then at most 1 % of it: a bound of a few percent is not a matter of rounding).
MIN_RESOLUTION_STEPS = 100


def unjudgeable(value: float, better: str, resolution: float | None = None,
                count: bool = False) -> str | None:
    """Why no bound on a figure of this value could judge it, or None: printed in steps too
    coarse for it (PerfSpec.resolution), a higher-is-better figure of 0 or less (an overlap
    of 0 % cannot get worse), or any other figure of 0 but a `count` (ReFrame reads the bounds
    of a zero reference as absolute values, not fractions of it: [0, null, 1000, us] would be
    a 1 ms ceiling). The baseline records such a figure without bounds and the reference
    loader refuses it as a judging reference."""
    if resolution is not None and abs(value) < MIN_RESOLUTION_STEPS * resolution:
        return (f"printed in steps of {resolution:g}: {value:g} is under "
                f"{MIN_RESOLUTION_STEPS} steps ({MIN_RESOLUTION_STEPS * resolution:g}), so "
                f"rounding alone moves it more than 1 %")
    if better == HIGHER and value <= 0:
        return f"a higher-is-better figure of {value:g} cannot get worse: no bound can fail"
    if value == 0 and not count:
        return ("a reference of 0: ReFrame reads its bounds as absolute values, not fractions "
                "of it, so no relative bound judges it")
    return None


def size_step_bounds(low: float, high: float, median: float, step: float) -> tuple[float, float]:
    """Relative (lower, upper) bounds around `median` that admit one sweep step below `low` and
    one above `high` (the range seen), rounded outwards to 3 decimals. With low = high = median
    and 4 sizes per doubling: (-0.160, +0.190)."""
    lower = math.floor((low / step / median - 1.0) * 1000 - 1e-6) / 1000
    upper = math.ceil((high * step / median - 1.0) * 1000 + 1e-6) / 1000
    return lower, upper


#: A bound on the bad side at or beyond this cannot fail a 2x slowdown: +100 % for a
#: lower-is-better variable, -50 % for a higher-is-better one (and +100 % either way for an
#: "equal" one). The baseline records such a variable only (_recorded_only); a reference file
#: that judges with such a bound must say why (_wide_bounds).
TOO_NOISY_FOR_2X = {LOWER: 1.0, EQUAL: 1.0, HIGHER: 0.5}


#: A count (PerfSpec.count) may move by this many whole units however small it is: a count of 1
#: whose bounds admit 2 still catches 3 (the 2x rule alone would refuse any bound on a count of 1).
COUNT_SLACK = 2


def catches_2x(better: str, lower: float | None, upper: float | None,
               reference: float | None = None, count: bool = False) -> bool:
    """Whether a reference's bounds on the bad side of `better` fail a 2x slowdown (a
    lower-is-better figure doubled, a higher-is-better one halved). An "equal" figure (a sweep
    size, a ratio, a count) must fail a 2x change either way: doubled and halved; a count
    (`count`, with its `reference` value) may also move by COUNT_SLACK whole units."""
    if better == LOWER:
        return upper is not None and upper < TOO_NOISY_FOR_2X[LOWER]
    if better == HIGHER:
        return lower is not None and lower > -TOO_NOISY_FOR_2X[HIGHER]
    above, below = TOO_NOISY_FOR_2X[LOWER], TOO_NOISY_FOR_2X[HIGHER]
    if count and reference:
        above = max(above, COUNT_SLACK / abs(reference))
        below = max(below, COUNT_SLACK / abs(reference))
    return (lower is not None and upper is not None and upper < above and lower > -below)


def bad_sides(better: str) -> tuple[str, ...]:
    """Which bounds of a reference tuple guard the bad side: ("upper",), ("lower",) or both."""
    if better == LOWER:
        return ("upper",)
    if better == HIGHER:
        return ("lower",)
    if better == EQUAL:
        return ("lower", "upper")
    raise ValueError(f"direction {better!r} is not one of {', '.join(DIRECTIONS)}")


@dataclass(frozen=True)
class Figure:
    """A performance variable in the one language of every check (`metrics = {name: ...}`): how
    to read it from the job's parsed result, and its PerfSpec. netbench's checks declare theirs
    with `rfm_netbench.cell` and `summary` (a Figure read from a table cell or a summary key, its
    unit and direction held to netbench's own declaration by a test); the external suites'
    through the same reader protocol (`reads`, fabricsuite.base.readout), e.g.
    ``Figure(reads("osu", "latency_us", size_bytes=8), US)``."""

    read: Callable[[Any], float]
    spec: PerfSpec
    #: The reference this figure has on every machine from its first day, (value, lower, upper)
    #: as ReFrame reads them, without the unit: a count a healthy run never has, whatever the
    #: hardware (a pair the all-pairs map confirmed bad alone, against the map's own best
    #: pairs). A reference file's own entry for the figure takes its place (a site's choice);
    #: where the file has none (a new machine, a node count it has no references at) this
    #: judges it. None: judged by references only (`absolute_references`).
    absolute: tuple[float, float | None, float | None] | None = None

    def extract(self, result: Any) -> float:
        return self.read(result)


def absolute_references(metrics: dict[str, Any]) -> dict[str, tuple]:
    """ReFrame's (value, lower, upper, unit) of each figure of `metrics` with an absolute
    reference (Figure.absolute)."""
    return {name: (*figure.absolute, figure.spec.unit) for name, figure in metrics.items()
            if isinstance(figure, Figure) and figure.absolute is not None}


@dataclass(frozen=True)
class Metric(Figure):
    """A Figure read from a netbench result (`rfm_netbench.cell` and `summary` make them):
    `column` of the summary (`table=None`), or of the one row of `table` whose columns match
    `where` (for example ``{"size_bytes": 8}``). A Figure that is not a Metric is one the check
    derives itself (fabricsuite.data.declarations.derived)."""

    column: str = ""
    table: str | None = None
    where: dict[str, Any] = field(default_factory=dict)

    @property
    def unit(self) -> str:
        return self.spec.unit

    @property
    def better(self) -> str:
        return self.spec.better


def reads(table: str | None, column: str, **where: Any) -> Callable[[Any], float]:
    """How a Figure reads its value from any parsed result, through the one reader protocol
    (fabricsuite.base.readout): `reads("osu", "latency_us", size_bytes=8)`, `reads(None,
    "mops_total")` for a summary figure."""
    def read(result: Any) -> float:
        return result.value(table, column, **where)
    return read


#: The two specs most external figures share: times (lower is better), bandwidths (higher).
US = PerfSpec("us", "lower")
MBPS = PerfSpec("MB/s", "higher")


#: Every check's declared variables (PerfSpec fields; for a netbench variable also the table,
#: column and row it reads), method and options: a snapshot of checks/*.py that commands read
#: without loading ReFrame (the report), held to the checks by tests/test_check_declarations.py.
CHECK_DECLARATIONS_FILE = REPO_ROOT / "checks" / "declarations.json"


@functools.cache
def check_declarations() -> dict[str, Any]:
    """checks/declarations.json: {check class: {"variables", "method", "options"}}."""
    return json.loads(CHECK_DECLARATIONS_FILE.read_text())


def declared_specs(check_class) -> dict[str, PerfSpec]:
    """{variable: PerfSpec} of a check class from its `metrics` declaration (name -> Figure)."""
    specs = {}
    for name, metric in getattr(check_class, "metrics", {}).items():
        spec = getattr(metric, "spec", None)
        if not isinstance(spec, PerfSpec):
            raise TypeError(f"{check_class.__name__}.{name}: no PerfSpec (unit and direction) "
                            f"declared")
        specs[name] = spec
    return specs


#: Check variables that are reference index levels below the environment, outermost first:
#: the topology distance (point-to-point netbench checks), the NPB kernel or NPB-MZ benchmark
#: (each its own reference: their Mop/s differ 100x), the scale (multi-rank checks), the rail
#: (a node's NIC and switch plane, "rail2", or "striped" over every rail: checks/rails.py), the
#: memory the messages leave from and land in ("host" for every figure today; "device" where a
#: GPU's memory comes). A case without a level, or with a level at its default value
#: (LEVEL_DEFAULTS), has none in its key, so files written before a level came read unchanged.
INDEX_FIELDS = ("distance", "kernel", "benchmark", "scale", "rail", "memory")
#: The value of a level that every figure had before the level came: left out of keys.
LEVEL_DEFAULTS = {"memory": "host"}


def key_levels(values: dict) -> tuple[tuple[str, str], ...]:
    """The index levels of a case's key from its values ({"scale": "2x1", "memory": "host"}):
    the INDEX_FIELDS it has, in their order, without a level at its default value."""
    return tuple((f, str(values[f])) for f in INDEX_FIELDS
                 if values.get(f) and str(values[f]) != LEVEL_DEFAULTS.get(f))


def filled_levels(levels: tuple[tuple[str, str], ...],
                  fields: set[str]) -> tuple[tuple[str, str], ...]:
    """`levels` with each of `fields` it lacks at its default value (LEVEL_DEFAULTS), in
    INDEX_FIELDS order: one check's entries in a reference file share one `$index`, so once a
    check has a "device" figure, its host figures sit under "host"."""
    have = dict(levels)
    return tuple((f, have.get(f, LEVEL_DEFAULTS.get(f, ""))) for f in INDEX_FIELDS
                 if f in have or (f in fields and f in LEVEL_DEFAULTS))


def scale_label(nodes: int, ranks_per_node: int) -> str:
    """The `scale` index level of a multi-rank case: "<nodes>x<ranks per node>"."""
    return f"{nodes}x{ranks_per_node}"


def case_scope(case: dict) -> tuple[str, str, str, tuple[tuple[str, str], ...]]:
    """(check class, system:partition, environment, index levels) of a test case as ReFrame
    stores it (run report or results database); a variable's history is one such scope."""
    check = str(case.get("name", "")).split(" ")[0].split("%")[0]
    partition = f"{case.get('system')}:{case.get('partition')}"
    levels = key_levels(case)
    return check, partition, str(case.get("environ")), levels


def perf_variable(key: object) -> str:
    """The variable a run report's perfvalues key names: 'local:default:latency_8B_median_us'
    (system, partition, variable) gives 'latency_8B_median_us'."""
    return str(key).split(":")[-1]


def case_where(case: dict) -> str:
    """Where a case ran, in one phrase: "NetbenchPingPong local:default openmpi same-l3"."""
    check, partition, environ, levels = case_scope(case)
    return " ".join([check, partition, environ, *[value for _, value in levels]])


def series_key(check: str, partition: str, environ: str,
               levels: tuple[tuple[str, str], ...], variable: str) -> str:
    """One variable's name across tools: `_statistics` in reference files, baseline notes,
    history and the session summary, e.g. 'NetbenchPingPong local:default openmpi same-l3
    latency_8B_median_us'."""
    return " ".join([check, partition, environ, *[value for _, value in levels], variable])


@dataclass
class VariableSeries:
    """One variable's figures in one scope, the one series type of every tool: where it was
    measured (check, system:partition, environment, index levels), its unit and the directions
    its runs declared. `change_points.Series` holds its figures over time (points),
    `baseline.Samples` the figures a reference is taken from (values); both are this with their
    figures."""

    check: str
    partition: str  # system:partition
    environ: str
    variable: str
    unit: str
    #: Index levels below the environment: ("distance", "same-l3") for the point-to-point
    #: checks, ("scale", "1x2") for the multi-rank ones; empty for a check without them.
    levels: tuple[tuple[str, str], ...] = field(default=(), kw_only=True)
    #: Directions ("lower", "higher", "equal") stated by the runs' `perf_directions`.
    directions: set[str] = field(default_factory=set, kw_only=True)

    @property
    def key(self) -> str:
        """The variable's name across tools (series_key)."""
        return series_key(self.check, self.partition, self.environ, self.levels, self.variable)

    @property
    def better(self) -> str | None:
        """lower/higher/equal, or None when the runs do not state exactly one valid direction."""
        if len(self.directions) == 1 and next(iter(self.directions)) in DIRECTIONS:
            return next(iter(self.directions))
        return None


def unjudged_variables(unjudged: object) -> set[str]:
    """The variables a run left out of its verdict: a case's `unjudged` lines ("variable:
    netbench flagged ... unreliable: reason", rfm_netbench.NetbenchCheck), by name. Their
    figures are in the run's perfvalues, unbounded; no baseline, history or compare takes
    them."""
    if not isinstance(unjudged, list):
        return set()
    return {str(line).split(" ", 1)[0].rstrip(":") for line in unjudged if str(line).strip()}
