"""Every netbench check's performance variables resolve offline, without building or running
anything: each is declared by the method the check runs (src/declarations.json, the snapshot of
`netbench METHOD --describe`), and where a real run of that method is recorded
(tests/data/netbench/, both MPIs) each reads a finite number from it, at the sizes the check
requires. A check that names a column its method does not write, a size its sweep does not
measure, or a figure the recorded output lacks fails here, in the unit lane, not in a nightly
run on a cluster.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import pytest

from fabricsuite.data.declarations import declaration_problems, default_sizes, derived, snapshot
from fabricsuite.data.netbench_result import load

RECORDED = Path(__file__).parent / "data" / "netbench"


@functools.cache
def netbench_checks() -> dict[str, type]:
    from fabricsuite.checks.rfm_netbench import NetbenchCheck, check_classes

    return check_classes(NetbenchCheck)


def method_of(cls: type) -> str:
    return str(cls.method)  # a ReFrame variable: as a string


def test_every_netbench_checks_metrics_are_its_methods_declarations():
    checks = netbench_checks()
    assert len(checks) >= 20, sorted(checks)  # the loader found them
    problems, resolved = [], 0
    for name, cls in sorted(checks.items()):
        description = snapshot()["methods"].get(method_of(cls))
        if description is None:
            problems.append(f"{name}: netbench has no method {method_of(cls)!r}")
            continue
        problems += [f"{name}.{line}" for line in declaration_problems(cls.metrics, description)]
        resolved += len(cls.metrics) - len(derived(cls.metrics))
    assert not problems, "\n".join(problems)
    assert resolved >= 80, resolved


def recorded_cases() -> list[tuple[str, str]]:
    methods = {path.name.split("-")[0] for path in RECORDED.glob("*-openmpi.json")}
    return [(name, mpi) for name, cls in sorted(netbench_checks().items())
            if method_of(cls) in methods for mpi in ("openmpi", "mpich")]


@pytest.mark.parametrize("check, mpi", recorded_cases())
def test_every_variable_reads_a_number_from_a_recorded_run(check, mpi):
    cls = netbench_checks()[check]
    result = load(RECORDED / f"{method_of(cls)}-{mpi}.json")
    values = {variable: metric.extract(result) for variable, metric in cls.metrics.items()
              if variable not in derived(cls.metrics)}
    assert values and all(math.isfinite(v) for v in values.values()), values
    # the sizes the check requires are the ones its method measures by default, or its own
    required = getattr(cls, "required_sizes", None) or []
    options = list(getattr(cls, "netbench_options", None) or [])
    if required and "--sizes" not in options and "--max-size" not in options:
        assert set(required) <= set(default_sizes(method_of(cls))), (check, required)


def test_the_sweep_a_check_requires_is_the_declared_default():
    """A check that runs its method with the default sizes requires exactly those
    (NetbenchPingPong & co. took a hand-written copy of them until `--describe` carried them)."""
    checks = netbench_checks()
    for name in ("NetbenchPingPong", "NetbenchPingPongBandwidth", "NetbenchBothway",
                 "NetbenchFlood"):
        cls = checks[name]
        assert list(cls.required_sizes) == default_sizes(method_of(cls)), name
        assert cls.required_sizes[0] == 8 and cls.required_sizes[-1] == 4 * 1024 * 1024


def test_every_required_variant_is_a_declared_table_and_column():
    """A check's `required_variants` (one row per variant at every required size) name a table
    of its method and that table's variant column: a typo fails here, not in every run."""
    problems, declared = [], 0
    for name, cls in sorted(netbench_checks().items()):
        tables = {t["name"]: {c["name"] for c in t["columns"]}
                  for t in snapshot()["methods"][method_of(cls)]["tables"]}
        for table, key, expected in cls.required_variants:
            declared += 1
            if key not in tables.get(table, set()):
                problems.append(f"{name}: {table}.{key} is not declared by {method_of(cls)}")
            if not expected or not cls.required_sizes:
                problems.append(f"{name}: {table} requires no variant or no size")
    assert not problems, problems
    assert declared >= 7, declared  # polling 2, anysource 2, sendmodes 2, reuse, vector


def test_a_missing_variant_is_named_with_its_size():
    """The variants rule on a real run (collectives: one row per collective and size): complete,
    it finds nothing; with one collective's row gone at 8 B, it names the table, the size, what
    it saw and what it expected."""
    from fabricsuite.checks.rfm_netbench import variant_problems

    result = load(RECORDED / "collectives-openmpi.json")
    at_8 = sorted(r["collective"] for r in result.table("collectives") if r["size_bytes"] == 8)
    assert len(at_8) >= 3, at_8
    assert variant_problems(result, [8], "collectives", "collective", at_8) == []
    result.tables["collectives"] = [r for r in result.table("collectives")
                                    if not (r["size_bytes"] == 8 and r["collective"] == at_8[0])]
    assert variant_problems(result, [8], "collectives", "collective", at_8) == [
        f"table collectives: size 8 has collective {at_8[1:]}, expected {at_8}"]


#: The units whose figures move continuously: a reference of 0 of them cannot judge (ReFrame
#: reads its bounds as absolute values), so it is refused. Every other unit a check declares
#: must be one of metrics.COUNT_UNITS.
CONTINUOUS_UNITS = {"B", "MB/s", "fraction", "line_fraction", "x_promise", "msg/s", "ns/B",
                    "ratio", "us", "x_floor", "%", "s", "Mop/s"}


def test_every_declared_unit_is_known_whole_or_continuous():
    """A unit missing from COUNT_UNITS made a healthy map's `[0, null, 0, components]` a
    reference error (CI 2026-12-02, every map check): a new unit must be classified here."""
    from fabricsuite.base.metrics import COUNT_UNITS

    units = {figure.spec.unit for cls in netbench_checks().values()
             for figure in cls.metrics.values()}
    assert units >= {"components", "pairs", "us"}, units  # the loader found them
    unknown = units - set(COUNT_UNITS) - CONTINUOUS_UNITS
    assert not unknown, f"classify these units (metrics.COUNT_UNITS or CONTINUOUS_UNITS): {unknown}"
    assert not set(COUNT_UNITS) & CONTINUOUS_UNITS


# --- the names the run code writes (issue 51) ---------------------------------------------------

#: A cell or summary figure the run code writes with its name as a literal:
#: nb_cell_real(table, "latency_median_us", ...), nb_summary_int(ctx->result, "ranks", ...).
_WRITE = re.compile(r'\bnb_(cell|summary)_(?:int|real|text|bool|null)\s*\(\s*[^,()]+'
                    r'(?:\([^()]*\))?\s*,\s*"([^"]+)"')
#: A method a file defines: const nb_method nb_method_pingpong = {...}.
_DEFINES = re.compile(r"\bconst nb_method nb_method_(\w+)\s*=")


def undeclared_writes(files: dict[str, str], methods: dict) -> tuple[int, list[str]]:
    """(names checked, problems): every literal column or summary name the C `files` write
    must be declared by a method the same file defines (src/declarations.json), or, in a file
    that defines none (core/: the measurement driver, the ping-pong loop), by some method."""
    columns = {m: {c["name"] for t in d["tables"] for c in t["columns"]}
               for m, d in methods.items()}
    figures = {m: {f["name"] for f in d["summary"]} for m, d in methods.items()}
    checked, problems = 0, []
    for path, text in sorted(files.items()):
        own = _DEFINES.findall(text)
        for kind, name in _WRITE.findall(text):
            checked += 1
            pool = columns if kind == "cell" else figures
            declared = set().union(*(pool[m] for m in (own or pool)))
            if name not in declared:
                where = ", ".join(own) if own else "any method"
                problems.append(f"{path}: nb_{kind}_* writes {name!r}, which {where} does not "
                                f"declare (its catalogue header, then src/declarations.json)")
    return checked, problems


def test_every_name_the_run_code_writes_is_declared_by_its_method():
    """Without this, a column name the run code mistypes aborts netbench only when that method
    runs (nb_cell_* refuses an undeclared name): on a cluster, at night. Names computed at run
    time (a variant's column) stay the program's own check."""
    source = Path(__file__).resolve().parents[1] / "src"
    files = {str(p.relative_to(source)): p.read_text() for p in source.rglob("*.[ch]")}
    checked, problems = undeclared_writes(files, snapshot()["methods"])
    assert checked > 300, checked  # the pattern still finds the calls
    assert not problems, "\n".join(problems)
    # and it catches a mistyped one: in pingpong's family, and in the shared core
    pt2pt = next(path for path, text in files.items() if "nb_method_pingpong =" in text)
    typo = dict(files)
    typo[pt2pt] += '\nvoid x(void) { nb_cell_real(table, "latency_medain_us", 1.0); }\n'
    typo["core/extra.c"] = 'void y(void) { nb_summary_real(ctx->result, "no_such_figure", 1); }'
    assert [p.split(":")[0] for p in undeclared_writes(typo, snapshot()["methods"])[1]] == [
        "core/extra.c", pt2pt]
