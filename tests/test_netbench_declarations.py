"""netbench's declarations, built and read for real: every figure a check asserts is one the
program declares with the same unit and direction, the snapshot the checks read
(src/declarations.json) is what the build declares, every declared figure is documented in
docs/output-format.md, a new figure needs nothing but its declaration, and the documented skeleton
of a new method builds and runs (docs/adding-a-method.md)."""

import re
import shutil

import pytest
from mpi_support import run

from fabricsuite import SOURCE_DIR
from fabricsuite.base.metrics import Metric, PerfSpec

pytestmark = pytest.mark.integration


def _methods(program: str) -> list[str]:
    from fabricsuite.data.declarations import methods_of
    return methods_of(program)


def _describe(program: str, method: str) -> dict:
    from fabricsuite.data.declarations import describe
    description = describe(program, method)
    assert description["method"] == method
    return description


#: The output format's reference, which names every column and summary figure netbench declares.
OUTPUT_FORMAT_DOC = SOURCE_DIR.parent / "docs" / "output-format.md"


def _method_text(doc: str, method: str) -> str:
    """What docs/output-format.md says about `method`: every section whose heading names it (to
    the next heading of its level or above), the "- **method**" items of the details, and the
    introduction of the methods (the validation figures every multi-rank method shares)."""
    lines = doc.splitlines()
    taken, level_taken = [], None
    intro = doc.split("## Methods, their tables and summaries", 1)[1].split("\n### ", 1)[0]
    for line in lines:
        level = len(line) - len(line.lstrip("#")) if line.startswith("#") and " " in line else 0
        if level and (level_taken is None or level <= level_taken):
            level_taken = level if f"`{method}`" in line else None
        elif line.startswith("- ") and level_taken is None:
            level_taken = 99 if line.startswith(f"- **{method}**") else None
            if level_taken:
                taken.append(line)
            continue
        if level_taken is not None and level_taken == 99 and not line.startswith("  "):
            level_taken = None
        if level_taken is not None:
            taken.append(line)
    return intro + "\n".join(taken)


def _undocumented(description: dict, doc: str) -> list[str]:
    """The declared columns and summary figures that docs/output-format.md does not name (as
    `name`, in backticks) where it describes the method."""
    text = _method_text(doc, description["method"])
    names = [column["name"] for table in description["tables"] for column in table["columns"]]
    names += [figure["name"] for figure in description["summary"]]
    return [f"{description['method']}: {name}" for name in dict.fromkeys(names)
            if f"`{name}`" not in text]


def test_every_check_variable_has_the_unit_and_direction_netbench_declares(netbench):
    """`netbench METHOD --describe` prints the C declaration of every column and summary figure;
    a check that asserts one with another unit or direction, or one netbench does not declare,
    fails here."""
    from fabricsuite.checks.rfm_netbench import netbench_checks
    from fabricsuite.data.declarations import declaration_problems, derived

    program = netbench[0]
    problems, checked, own = [], 0, []
    for name, cls in netbench_checks().items():
        description = _describe(program, str(cls.method))  # a ReFrame variable: as a string
        problems += [f"{name}.{line}" for line in declaration_problems(cls.metrics, description)]
        checked += len(cls.metrics)
        own += [f"{name}.{variable}" for variable in derived(cls.metrics)]
    assert not problems, "\n".join(problems)
    assert checked >= 80, checked
    # the figures a check computes itself, not netbench: these and no others (the map's faulty
    # components; the efficiencies against the limits of the cores and the collectives' bus
    # bandwidth, fabricsuite.data.limits, and the line fractions, fabricsuite.data.links, each from
    # declared netbench figures)
    assert sorted(own) == sorted([
        *(f"NetbenchMatrix.matrix_faulty_{kind}" for kind in ("node_links", "switches",
                                                               "uplinks")),
        "NetbenchPingPong.latency_8B_floor_multiple",
        "NetbenchPingPongBandwidth.bandwidth_1MiB_ceiling_fraction",
        "NetbenchPingPongBandwidth.bandwidth_peak_ceiling_fraction",
        "NetbenchBothway.bothway_bandwidth_1MiB_ceiling_fraction",
        "NetbenchFlood.flood_bandwidth_1MiB_ceiling_fraction",
        *(f"NetbenchDense.{a}_bandwidth_1MiB_ceiling_fraction" for a in (
            "aapc", "pairwise", "cumulative", "random")),
        *(f"NetbenchCollectives.{c}_1MiB_busbw_MBps" for c in ("allreduce", "allgather",
                                                               "alltoall", "bcast", "reduce")),
        # against the line rate the partition declares (fabricsuite.data.links)
        "NetbenchPingPongBandwidth.bandwidth_1MiB_line_fraction",
        "NetbenchFlood.flood_bandwidth_1MiB_line_fraction",
        "NetbenchMatrix.matrix_bandwidth_median_line_fraction",
        # the rail checks (checks/rails.py, checks/fabric_map.py): the same, per rail
        "NetbenchRailBandwidth.bandwidth_1MiB_line_fraction",
        *(f"{check}.matrix_bandwidth_median_line_fraction"
          for check in ("NetbenchRailMatrix", "NetbenchRailsAtOnce")),
        *(f"{check}.matrix_faulty_{kind}" for check in ("NetbenchRailMatrix",
                                                        "NetbenchRailsAtOnce")
          for kind in ("node_links", "switches", "uplinks")),
        *(f"NetbenchCollectives.{c}_1MiB_busbw_line_fraction" for c in (
            "allreduce", "allgather", "alltoall", "bcast", "reduce")),
        # against the latency the partition promises
        "NetbenchPingPong.latency_8B_promise_multiple",
    ]), own


def test_the_checks_read_what_the_built_program_declares(netbench):
    """src/declarations.json, which the checks take units and directions from, is what this
    build of netbench declares (see fabricsuite/data/declarations.py to write it again)."""
    from fabricsuite.data.declarations import describe_all, snapshot

    built = describe_all(netbench[0])
    stale = sorted(m for m in built["methods"] | snapshot()["methods"]
                   if built["methods"].get(m) != snapshot()["methods"].get(m))
    assert not stale, (f"src/declarations.json differs from netbench's --describe for {stale}: "
                       f"run .venv/bin/python -m fabricsuite.data.declarations src/netbench")


def test_every_declared_figure_is_in_the_output_format_doc(netbench):
    program = netbench[0]
    doc = OUTPUT_FORMAT_DOC.read_text()
    methods = _methods(program)
    assert len(methods) >= 20 and {"pingpong", "loggp", "matrix"} <= set(methods), methods
    missing = [line for method in methods for line in _undocumented(_describe(program, method),
                                                                     doc)]
    assert not missing, "\n".join(missing)


def test_a_new_figure_needs_nothing_but_its_declaration(tmp_path):
    """Adding one column to `bibw`'s table and one summary figure to `pingpong`'s declarations,
    and nothing else: `--describe` and the output show them, the doc test names them as
    undocumented, the snapshot the checks read gives them their unit and direction once written
    again, and a check that asserts the column otherwise is refused."""

    from mpi_support import MPIS, build_netbench

    from fabricsuite.data.declarations import (
        DeclarationError,
        declaration_problems,
        describe_all,
        unit_and_direction,
    )

    source = tmp_path / "src"
    shutil.copytree(SOURCE_DIR, source, ignore=shutil.ignore_patterns("netbench", "*.so", "*.o"))
    catalogue = source / "methods" / "pt2pt_catalogue.h"
    text = catalogue.read_text()
    column = '    NB_HIGHER("bandwidth_best_MBps", "MBps"),\n'
    figure = '    NB_LOWER("latency_small_p90_us", "us"),\n'
    # the new column last, where the run leaves it empty
    text = re.sub(r"(NB_TABLE\(bibw, \"bibw\",\n(?:.*\n)*?.*)\);\n",
                  lambda m: m[1] + ",\n" + column.rstrip(",\n") + ");\n", text, count=1)
    text = re.sub(r"(NB_FIGURES\(pingpong,\n)", r"\1" + figure,
                  text, count=1)
    assert column.rstrip(",\n") + ");" in text and figure in text, (
        "the declarations moved: update this test")
    catalogue.write_text(text)
    program = str(build_netbench(tmp_path / "build", "openmpi", source=source))

    bibw, pingpong = _describe(program, "bibw"), _describe(program, "pingpong")
    doc = OUTPUT_FORMAT_DOC.read_text()
    assert _undocumented(bibw, doc) == ["bibw: bandwidth_best_MBps"]
    assert _undocumented(pingpong, doc) == ["pingpong: latency_small_p90_us"]

    # The snapshot the checks read, written again from this build, gives a check the new
    # figures' units and directions; the committed one does not know them (the snapshot test
    # names it stale until it is written again).
    declarations = describe_all(program)
    assert unit_and_direction("bibw", "bandwidth_best_MBps", declarations) == ("MB/s", "higher")
    assert unit_and_direction(None, "latency_small_p90_us", declarations) == ("us", "lower")
    with pytest.raises(DeclarationError, match="declares no column bibw.bandwidth_best_MBps"):
        unit_and_direction("bibw", "bandwidth_best_MBps")

    def metric(table, name, unit, better):
        return Metric(read=lambda result: 0.0, spec=PerfSpec(unit, better), column=name,
                      table=table)
    wrong = declaration_problems({"best": metric("bibw", "bandwidth_best_MBps", "MB/s", "lower")},
                                 bibw)
    assert wrong == ["best: the check asserts MB/s, lower is better; netbench declares column "
                     "bibw.bandwidth_best_MBps as MB/s, higher is better"]

    launcher = MPIS["openmpi"][1]
    proc = run([*launcher, program, "bibw", "--sizes", "8", "--repetitions", "3"])
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^# columns .* bandwidth_best_MBps$", proc.stdout, re.M), proc.stdout


ADDING_A_METHOD_DOC = SOURCE_DIR.parent / "docs" / "adding-a-method.md"


def test_the_documented_method_skeleton_builds_and_runs(tmp_path):
    """docs/adding-a-method.md's skeleton, written where the doc says (two neighbouring files,
    methods/example_catalogue.h and methods/example.c, and one line in methods/registry.c),
    builds with -Werror, and the new method runs and writes the table and figure it declares."""
    from mpi_support import MPIS, build_netbench

    catalogue, registry_line, method_file = re.findall(
        r"```c\n(.*?)```", ADDING_A_METHOD_DOC.read_text(), re.S)
    source = tmp_path / "src"
    shutil.copytree(SOURCE_DIR, source, ignore=shutil.ignore_patterns("netbench", "*.so", "*.o"))

    def insert(name: str, before: str, text: str) -> None:
        path = source / name
        old = path.read_text()
        assert old.count(before) == 1, f"{before!r} moved in {name}: update this test"
        path.write_text(old.replace(before, text + before))

    insert("methods/registry.c", "    /* end of the registry", registry_line)
    (source / "methods" / "example_catalogue.h").write_text(catalogue)
    (source / "methods" / "example.c").write_text(method_file)
    program = str(build_netbench(tmp_path / "build", "openmpi", source=source))

    example = _describe(program, "example")
    assert [c["name"] for c in example["tables"][0]["columns"]] == [
        "size_bytes", "iterations", "latency_median_us"], example
    proc = run([*MPIS["openmpi"][1], program, "example", "--sizes", "8,64",
                "--repetitions", "3"])
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"^# summary latency_small_us=[0-9.]+$", proc.stdout, re.M), proc.stdout
    assert len(re.findall(r"^(8|64) \d+ [0-9.]+$", proc.stdout, re.M)) == 2, proc.stdout
