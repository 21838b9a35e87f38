"""The import rules of docs/architecture.md hold on the tree. The layers are the folders of
fabricsuite/ (base, data, checks, commands), each with an `__init__` that says what it may
import; a module's layer is its folder. A module imports only its own layer or lower ones, the
check layer and the commands never import each other, the checks import no command, there is
no import circle at module level, and outside the check layer importing a module loads no
ReFrame.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

from fabricsuite import REPO_ROOT

PACKAGE = REPO_ROOT / "fabricsuite"
DOC = REPO_ROOT / "docs" / "architecture.md"
#: Lower layers first; "checks" and "commands" are siblings on top of "data".
RANK = {"base": 0, "data": 1, "checks": 2, "commands": 2}


def layers() -> dict[str, str]:
    """{module: layer}: each module of a layer's folder (a .py file, or a package of its
    own), the top package's `__init__` in the base."""
    found = {"__init__": "base"}
    for layer in RANK:
        folder = PACKAGE / layer
        names = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"] + [
            p.parent.name for p in folder.glob("*/__init__.py")]
        for module in names:
            assert module not in found, f"{module} is in two layers ({found[module]}, {layer})"
            found[module] = layer
    return found


def files(module: str) -> list[Path]:
    """The files of a module of fabricsuite/: one .py, or every file of a package."""
    if module == "__init__":
        return [PACKAGE / "__init__.py"]
    folder = PACKAGE / layers()[module]
    single = folder / f"{module}.py"
    return [single] if single.is_file() else sorted((folder / module).glob("*.py"))


def dotted(module: str) -> str:
    """The module's import path: "fabricsuite.data.cases"."""
    return "fabricsuite" if module == "__init__" else f"fabricsuite.{layers()[module]}.{module}"


def imports(module: str, top_level_only: bool = False) -> set[str]:
    """The other fabricsuite modules a module (or a file outside the package, by its path)
    imports (anywhere in it, or at module level only); a package's imports of its own files
    do not count."""
    known = layers()
    found = set()
    for path in files(module) if module in known else [Path(module)]:
        tree = ast.parse(path.read_text())
        for node in tree.body if top_level_only else ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    continue  # only a package's own files are imported relatively
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            for name in names:
                parts = name.split(".")
                if parts[0] != "fabricsuite":
                    continue
                # fabricsuite.LAYER.MODULE[...], or a layer's module named in its import list
                if len(parts) >= 3 and parts[1] in RANK and parts[2] in known:
                    found.add(parts[2])
    return found - {module}


def modules() -> list[str]:
    """The modules of fabricsuite/ by layer folder: .py files and packages."""
    return sorted(layers())


def test_every_module_sits_in_a_layer_folder_that_says_what_it_may_import():
    loose = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert not loose, f"a module of fabricsuite/ outside a layer folder: {loose}"
    folders = sorted(p.name for p in PACKAGE.iterdir() if p.is_dir()
                     and (p / "__init__.py").is_file())
    assert folders == sorted(RANK), folders
    for layer, rank in RANK.items():
        said = ast.get_docstring(ast.parse((PACKAGE / layer / "__init__.py").read_text()))
        assert said and "import" in said, f"{layer}/__init__.py says nothing of its imports"
        lower = [other for other, r in RANK.items() if r < rank]
        assert all(other in said for other in lower), (layer, lower, said)
    # the doc follows the folders: each layer's modules named under its folder
    doc = DOC.read_text()
    for module, layer in layers().items():
        if module != "__init__":
            assert f"`{module}`" in doc, f"{DOC.name} does not name {layer}/{module}"


def test_a_module_imports_only_its_layer_or_lower_ones():
    table = layers()
    wrong = []
    for module in modules():
        for imported in imports(module):
            mine, theirs = table[module], table[imported]
            if RANK[theirs] > RANK[mine] or (RANK[theirs] == RANK[mine] and theirs != mine):
                wrong.append(f"{module} ({mine}) imports {imported} ({theirs})")
    assert not wrong, wrong


def test_imports_finds_a_planted_import_of_each_form(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text("from fabricsuite.data import cases, links as l\n"
                       "from fabricsuite.commands.session import main\n"
                       "import fabricsuite.checks.judged_check\n"
                       "from fabricsuite import REPO_ROOT\n")
    assert imports(str(planted)) == {"cases", "links", "session", "judged_check"}


def test_the_checks_import_no_command():
    table = layers()
    wrong = [f"{path.name} imports {imported}" for path in sorted((REPO_ROOT / "checks").glob(
        "*.py")) for imported in imports(str(path)) if table.get(imported) == "commands"]
    assert not wrong, wrong


def test_the_two_check_families_share_one_base_and_import_neither_other():
    """netbench's checks and the external suites' build on one base (judged_check, check_base),
    never on each other (issue 51: rfm_external had imported five mechanics from
    rfm_netbench)."""
    assert "rfm_netbench" not in imports("rfm_external")
    assert "rfm_external" not in imports("rfm_netbench")
    for family in ("rfm_netbench", "rfm_external"):
        assert {"judged_check", "check_base"} <= imports(family), family


def test_no_import_circle_at_module_level():
    graph = {m: imports(m, top_level_only=True) for m in modules()}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path, node, nxt]
            if nxt not in state and (found := visit(nxt, [*path, node])):
                return found
        state[node] = 2
        return None

    for module in modules():
        if module not in state:
            circle = visit(module, [])
            assert circle is None, " -> ".join(circle)


def test_outside_the_check_layer_no_module_loads_reframe():
    """Importing every base, data and command module leaves ReFrame unloaded: the commands
    read ReFrame's results database inside the functions that need it."""
    table = layers()
    others = [m for m in modules() if table[m] != "checks" and m != "__init__"]
    code = ("import sys\n" + "".join(f"import {dotted(m)}\n" for m in others)
            + "print(sorted(m for m in sys.modules if m.split('.')[0] == 'reframe'))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


def field_reads(source: str, fields: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line, field) of every read of one of `fields` by name in Python `source`: `x["f"]`,
    `x.get("f")` (also pop and setdefault)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in ("get", "pop", "setdefault") and node.args
              and isinstance(node.args[0], ast.Constant)):
            key = node.args[0].value
        if key in fields:
            found.append((node.lineno, key))
    return found


def test_field_reads_finds_a_planted_read():
    planted = 'ok = case.get("result") == "pass"\nphase = case["fail_phase"]\nx = d.get("other")\n'
    assert sorted(field_reads(planted, ("result", "fail_phase"))) == [(1, "result"),
                                                                   (2, "fail_phase")]


def test_only_the_data_layer_reads_what_a_verdict_is_made_of():
    """A run report's fields that decide a case's verdict (session_verdict.VERDICT_FIELDS:
    its result, phase, reason, disturbance, `judged`, fixture) are read in the data layer
    alone, where the one verdict is decided (fabricsuite.data.session_verdict): a command or a
    check that read them could decide differently (issue 51: the page once did)."""
    from fabricsuite.data.session_verdict import VERDICT_FIELDS

    table = layers()
    wrong = [f"{path.relative_to(REPO_ROOT)}:{line} reads {key!r}"
             for module, layer in sorted(table.items()) if layer != "data"
             for path in files(module)
             for line, key in field_reads(path.read_text(), VERDICT_FIELDS)]
    assert not wrong, ("read these through fabricsuite.data.session_verdict or "
                       "fabricsuite.data.cases: "
                       + "; ".join(wrong))


def test_only_the_data_layer_reads_the_figures_of_a_run_report():
    """A run report's figures (ReFrame's `perfvalues`: [value, reference, lower, upper, unit,
    result] by position) are read by name through fabricsuite.data.cases.run_figures, in the
    data layer alone: a command that indexed them would read a position the next ReFrame may
    move, and the field list above cannot see a positional read."""
    table = layers()
    wrong = [f"{path.relative_to(REPO_ROOT)}:{line} reads {key!r}"
             for module, layer in sorted(table.items()) if layer != "data"
             for path in files(module)
             for line, key in field_reads(path.read_text(), ("perfvalues",))]
    assert not wrong, "read them through fabricsuite.data.cases.run_figures: " + "; ".join(wrong)
    planted = 'value = case["perfvalues"][key][0]\n'
    assert field_reads(planted, ("perfvalues",)) == [(1, "perfvalues")]


# --- netbench's C layout (docs/architecture.md, "netbench (src/)") -------------------------------

SRC = REPO_ROOT / "src"


def c_includes(path: Path) -> set[str]:
    return set(re.findall(r'^#include "([^"]+)"', path.read_text(), re.M))


def test_each_method_family_is_two_neighbouring_files_and_a_registry_line():
    methods = SRC / "methods"
    catalogues = sorted(methods.glob("*_catalogue.h"))
    assert len(catalogues) >= 15, catalogues
    registry = (methods / "registry.c").read_text()
    registered = re.findall(r"^\s+X\((\w+)\)", registry, re.M) + re.findall(r"X\((\w+)\)", registry)
    for catalogue in catalogues:
        family = catalogue.name.removesuffix("_catalogue.h")
        run_file = methods / f"{family}.c"
        assert run_file.exists(), f"{catalogue.name} has no {run_file.name} beside it"
        # included once, by its family's run file: the tables it declares are that file's own
        includers = [path.name for path in SRC.rglob("*.[ch]")
                     if catalogue.name in c_includes(path)]
        assert includers == [run_file.name], (catalogue.name, includers)
        declared = re.findall(r"^const nb_method nb_method_(\w+) = \{", catalogue.read_text(),
                              re.M)
        assert declared and set(declared) <= set(registered), (catalogue.name, declared)


def test_the_core_the_parser_and_the_analysis_know_no_method():
    for folder in ("core", "cli", "analysis"):
        for path in (SRC / folder).glob("*.[ch]"):
            wrong = sorted(name for name in c_includes(path) if name.endswith("_catalogue.h"))
            assert not wrong, f"{path.relative_to(SRC)} includes {wrong}"
    # the analysis library builds without MPI: it includes only its own headers
    own = {path.name for path in (SRC / "analysis").glob("*.h")}
    for path in (SRC / "analysis").glob("*.[ch]"):
        assert c_includes(path) <= own, (path.name, c_includes(path) - own)


def folder_includes() -> dict[str, set[str]]:
    """{folder of src/: the other folders whose headers its files include}."""
    home = {path.name: path.parent.name for path in SRC.rglob("*.h")}
    found: dict[str, set[str]] = {}
    for path in SRC.rglob("*.[ch]"):
        folder = path.parent.name if path.parent != SRC else "netbench.c"
        found.setdefault(folder, set()).update(
            home[name] for name in c_includes(path) if home.get(name, folder) != folder)
    return found


def test_the_declarations_sit_outside_the_core_and_no_two_folders_include_each_other():
    """The types a method declares itself with, and what the parser, the core and the methods
    share (declare/: declare.h, common.h), are no part of the timing core; cli/ and core/ had
    included each other's headers (issue 65): no two folders do."""
    assert (SRC / "declare" / "declare.h").is_file() and not (SRC / "core" / "declare.h").exists()
    graph = folder_includes()
    assert graph["declare"] == set(), graph["declare"]
    loops = sorted((a, b) for a in graph for b in graph[a] if a < b and a in graph.get(b, ()))
    assert not loops, (loops, graph)


def c_calls_between_files(texts: dict[str, str]) -> dict[str, set[str]]:
    """{file: the other files whose functions it calls}: a function is defined where a line
    starts with its head (the project's style: no `static`, the name before `(`, no `;`), and
    called where its name is followed by `(` elsewhere."""
    defined: dict[str, str] = {}
    for name, text in texts.items():
        for match in re.finditer(r"^(?!static\b)[a-z][\w \*]*?\b(\w+)\([^;]*$", text, re.M):
            defined.setdefault(match[1], name)
    calls: dict[str, set[str]] = {name: set() for name in texts}
    for name, text in texts.items():
        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
        for called in set(re.findall(r"\b(\w+)\(", code)):
            home = defined.get(called)
            if home is not None and home != name:
                calls[name].add(home)
    return calls


def c_file_circles(calls: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The pairs of files that call each other's functions."""
    return sorted((a, b) for a in calls for b in calls[a] if a < b and a in calls.get(b, ()))


def test_c_file_circles_are_found_in_a_planted_pair():
    planted = {"a.c": "int nb_a(int x)\n{\n    return nb_b(x);\n}\n",
               "b.c": "int nb_b(int x)\n{\n    return x ? nb_a(x - 1) : 0;\n}\n",
               "c.c": "int nb_c(void)\n{\n    return nb_a(1);\n}\n"}
    assert c_file_circles(c_calls_between_files(planted)) == [("a.c", "b.c")]


def test_no_two_c_files_call_each_other():
    """Each source file of netbench sits above the files it calls: no two call each other's
    functions (issue 51 opened help.c/parse.c, with the values both need in values.c, and
    fits.c/stats.c, the fit's bootstrap now beside the fits)."""
    texts = {str(path.relative_to(SRC)): path.read_text() for path in sorted(SRC.rglob("*.c"))}
    assert c_file_circles(c_calls_between_files(texts)) == []


# --- sizes (issue 40: no file of code over 800 lines, no function over 100) --------------------

MAX_FILE_LINES = 800
MAX_FUNCTION_LINES = 100
CODE_SUFFIXES = {".py", ".c", ".h", ".sh"}


def code_files() -> list[Path]:
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    return [REPO_ROOT / name for name in tracked if Path(name).suffix in CODE_SUFFIXES
            and (REPO_ROOT / name).is_file()]


def c_function_lengths(text: str) -> dict[str, int]:
    """{a C function's head: its lines}, for definitions in the project's style: the head on its
    own line(s), `{` and `}` alone at the start of a line."""
    lengths, head, start = {}, "", None
    lines = text.splitlines()
    for number, line in enumerate(lines):
        if line == "{" and number:
            head, start = lines[number - 1].strip(), number - 1
        elif line.startswith("}") and start is not None:
            lengths[head] = number - start + 1
            start = None
    return lengths


def test_c_function_lengths_counts_a_definition_from_head_to_brace():
    text = "static int f(void)\n{\n    return 1;\n}\n\nint g(int a,\n      int b)\n{\n}\n"
    assert c_function_lengths(text) == {"static int f(void)": 4, "int b)": 3}


def test_no_file_of_code_over_800_lines():
    long = {str(path.relative_to(REPO_ROOT)): lines for path in code_files()
            if (lines := len(path.read_text().splitlines())) > MAX_FILE_LINES}
    assert not long, f"cut along its seams (docs/architecture.md): {long}"


def test_no_function_over_100_lines():
    long = {}
    for path in code_files():
        name = str(path.relative_to(REPO_ROOT))
        if path.suffix == ".py":
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_FUNCTION_LINES:
                        long[f"{name}: {node.name}"] = lines
        elif path.suffix in {".c", ".h"}:
            for head, lines in c_function_lengths(path.read_text()).items():
                if lines > MAX_FUNCTION_LINES:
                    long[f"{name}: {head}"] = lines
    assert not long, f"split into steps that each say what they do: {long}"


def test_no_check_variable_is_a_plain_bool():
    """ReFrame converts a `-S name=value` for `variable(bool)` with bool(value): "false" is
    True (seen: -S NetbenchMatrix.local_rounds=false kept the rounds inside the leaves). A
    switch of a check is typ.Bool, which reads "false", "no", "0" as False."""
    plain = [f"{path.relative_to(REPO_ROOT)}:{n}"
             for folder in ("checks", "fabricsuite/checks")
             for path in sorted((REPO_ROOT / folder).rglob("*.py"))
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if re.search(r"variable\(\s*bool\b", line)]
    assert not plain, plain
