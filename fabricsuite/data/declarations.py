"""netbench's own declaration of every output figure, as the checks read it.

Every table column and summary figure of netbench is declared once, in C, with its unit and which
way is better; `netbench METHOD --describe` prints the declarations. The checks are Python that
ReFrame loads before anything is built, so they read a snapshot of them, `src/declarations.json`
(every method's `--describe`), and take each performance variable's unit and direction from it,
and a method's default sizes and option defaults (`default_sizes`, `option_default`):
`rfm_netbench.cell("pingpong", "latency_median_us", size_bytes=8)` is in us, lower is better,
because netbench says so. tests/test_netbench_declarations.py fails while the snapshot differs from
what the built program declares; after changing a declaration, write it again:

    make -C src netbench && .venv/bin/python -m fabricsuite.data.declarations src/netbench
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from fabricsuite import SOURCE_DIR
from fabricsuite.base.metrics import Metric

#: The snapshot of `netbench METHOD --describe` for every method.
DECLARATIONS_FILE = SOURCE_DIR / "declarations.json"
#: netbench's unit names (output.h) as the checks and the reference files write them; the others
#: (us, count, ratio, pairs, ...) are the same on both sides.
CHECK_UNITS = {"MBps": "MB/s", "ns_per_byte": "ns/B", "bytes": "B", "per_s": "msg/s"}


class DeclarationError(LookupError):
    """A figure netbench does not declare, or declares differently in two methods."""


def methods_of(program: str) -> list[str]:
    """The subcommands `netbench --help` lists."""
    text = subprocess.run([program, "--help"], capture_output=True, text=True, check=True,
                          timeout=60).stdout
    listed = text.split("subcommands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in listed.splitlines()]


def describe(program: str, method: str) -> dict[str, Any]:
    """`netbench METHOD --describe`, parsed."""
    out = subprocess.run([program, method, "--describe"], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return json.loads(out)


def describe_all(program: str) -> dict[str, Any]:
    """What the snapshot holds: every method's declarations, by method name."""
    return {"methods": {method: describe(program, method) for method in methods_of(program)}}


@functools.cache
def snapshot() -> dict[str, Any]:
    return json.loads(DECLARATIONS_FILE.read_text())


def default_sizes(method: str, declarations: dict[str, Any] | None = None) -> list[int]:
    """The message sizes `netbench METHOD` measures without size options, as it declares them
    (its defaults, its size progression and its own rules): what a check that runs the method
    with its defaults requires in the output."""
    sizes = (declarations or snapshot())["methods"][method]["default_sizes"]
    if sizes is None:
        raise DeclarationError(f"netbench {method} declares no default sizes (they depend on "
                               f"another option)")
    return list(sizes)


def option_default(method: str, option: str,
                   declarations: dict[str, Any] | None = None) -> str | None:
    """The default of `option` (e.g. "--sizes-per-doubling") of `netbench METHOD`, as typed on
    the command line; None where the option has none. DeclarationError for an option the method
    does not take."""
    for declared in (declarations or snapshot())["methods"][method]["options"]:
        if declared["name"] == option:
            return declared["default"]
    raise DeclarationError(f"netbench {method} takes no option {option}")


def declared_figures(description: dict[str, Any]) -> dict[tuple[str | None, str], tuple[str, str]]:
    """(table, column) of every column and (None, name) of every summary figure -> (unit as the
    checks write it, "higher"/"lower"/"equal"), from one method's `--describe`. A key or a
    parameter (no direction) is "equal"."""
    declared = {(table["name"], column["name"]): column
                for table in description["tables"] for column in table["columns"]}
    declared.update({(None, figure["name"]): figure for figure in description.get("summary", [])})
    return {key: (CHECK_UNITS.get(figure["unit"], figure["unit"]), figure["better"] or "equal")
            for key, figure in declared.items()}


def signed_figures(method: str,
                   declarations: dict[str, Any] | None = None) -> set[tuple[str | None, str]]:
    """(table, column) and (None, summary figure) of `method` that netbench declares may be below
    zero (NB_SIGNED); every other figure of netbench is non-negative."""
    description = (declarations or snapshot())["methods"].get(method, {})
    signed = {(table["name"], column["name"]) for table in description.get("tables", [])
              for column in table["columns"] if column.get("signed")}
    return signed | {(None, figure["name"]) for figure in description.get("summary", [])
                     if figure.get("signed")}


def unit_and_direction(table: str | None, name: str,
                       declarations: dict[str, Any] | None = None) -> tuple[str, str]:
    """(unit, better) of a column of `table` (None: a summary figure) as netbench declares it in
    whichever methods have it (in `declarations`, by default the snapshot); DeclarationError
    when none does or two disagree."""
    found = {}
    for method, description in (declarations or snapshot())["methods"].items():
        declared = declared_figures(description).get((table, name))
        if declared is not None:
            found[method] = declared
    where = f"summary figure {name}" if table is None else f"column {table}.{name}"
    if not found:
        raise DeclarationError(f"netbench declares no {where} (src/declarations.json; "
                               f"see fabricsuite/data/declarations.py)")
    if len(set(found.values())) > 1:
        raise DeclarationError(f"netbench declares {where} differently in {sorted(found)}: "
                               f"{found}")
    return next(iter(found.values()))


def declaration_problems(metrics: dict[str, Any], description: dict[str, Any]) -> list[str]:
    """One line per performance variable (a check's `metrics`: metrics.Metric, with `table`,
    `column`, `unit` and `better`) that netbench does not declare, or declares with another unit or
    direction than the check asserts. A figure the check derives itself (a metrics.Figure that
    is not a Metric, e.g. NetbenchMatrix's count of faulty components) declares its own PerfSpec
    and is not netbench's: see `derived`."""
    declared = declared_figures(description)
    problems = []
    for variable, metric in metrics.items():
        if variable in derived(metrics):
            continue
        where = f"summary {metric.column}" if metric.table is None else \
            f"column {metric.table}.{metric.column}"
        if (metric.table, metric.column) not in declared:
            problems.append(f"{variable}: netbench {description['method']} declares no {where}")
        elif declared[metric.table, metric.column] != (metric.unit, metric.better):
            unit, better = declared[metric.table, metric.column]
            problems.append(f"{variable}: the check asserts {metric.unit}, {metric.better} is "
                            f"better; netbench declares {where} as {unit}, {better} is better")
    return problems


def derived(metrics: dict[str, Any]) -> list[str]:
    """The variables among `metrics` that the check computes itself rather than reads from a
    netbench column or summary figure."""
    return [variable for variable, metric in metrics.items() if not isinstance(metric, Metric)]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m fabricsuite.data.declarations PATH/TO/netbench", file=sys.stderr)
        return 2
    from fabricsuite.data.store import replace_file

    replace_file(Path(DECLARATIONS_FILE), render(describe_all(argv[0])))
    print(f"wrote {DECLARATIONS_FILE}")
    return 0


def render(declarations: dict[str, Any]) -> str:
    """The snapshot as JSON with one declaration per line (a changed figure is a one-line diff;
    generated from the program, so it is replaced without a backup)."""
    def figures(items: list[dict[str, Any]], indent: str) -> str:
        return ",\n".join(indent + json.dumps(item) for item in items)
    methods = []
    for name, d in declarations["methods"].items():
        tables = ",\n".join(
            f'   {{"name": {json.dumps(t["name"])}, "columns": [\n'
            f'{figures(t["columns"], "    ")}\n   ]}}' for t in d["tables"])
        methods.append(f'  {json.dumps(name)}: {{"method": {json.dumps(d["method"])}, '
                       f'"scope": {json.dumps(d["scope"])}, "tables": [\n{tables}\n  ], '
                       f'"summary": [\n{figures(d["summary"], "   ")}\n  ], '
                       f'"options": [\n{figures(d["options"], "   ")}\n  ], '
                       f'"size_progression": {json.dumps(d["size_progression"])}, '
                       f'"default_sizes": {json.dumps(d["default_sizes"])}}}')
    return '{"methods": {\n' + ",\n".join(methods) + "\n}}\n"


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
