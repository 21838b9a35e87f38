"""Which check files a session's name selection needs: ReFrame loads every file of `-c DIR` and
instantiates every test of every file before it selects by `-n` (231 tests, about 2 s of one
core for checks/), so a nightly of one check spent longer loading than measuring. Where every
`-n` pattern names its test classes plainly, anchored at the start of the name
(`^NetbenchPingPong%distance=same-l3`, `^NetbenchPingPong(Bandwidth)?%`, `^NetbenchLogGP`,
`^NetbenchMatrix$`), the checks directory is replaced by the files that register those classes
(`@rfm.simple_test`, read without importing them). Any other pattern keeps the whole directory,
so a selection is never narrowed by a guess: a wildcard could match across a parameter, and a
pattern not anchored at the start could match the tail of a parameter's value (`1%placement`
selects `node_count=1` of every multi-rank check; a site's rail names are its own). Fixtures
(the build) come with the tests that use them."""

import ast
import re
from pathlib import Path

#: A pattern's part that names classes: characters that match only characters of a class name
#: (letters, digits, _), grouped, optional or repeated; never `%`, `=` or `-`, so where it is
#: anchored at the start its match lies inside the class name.
_CLASS_PART = re.compile(r"[\w()?*+|]*")


def registered_tests(path: Path) -> set[str]:
    """The classes `path` registers with ReFrame (decorated with simple_test)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if (isinstance(target, ast.Attribute) and target.attr == "simple_test") or (
                        isinstance(target, ast.Name) and target.id == "simple_test"):
                    names.add(node.name)
    return names


def _top_level_alternatives(pattern: str) -> list[str]:
    """`pattern` split at each `|` outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(pattern):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    return [*parts, pattern[start:]]


def _class_matcher(pattern: str):
    """A test of a class name for a plain `-n` pattern, or None where the pattern is not plain.
    ReFrame searches the pattern in the display name without spaces (`Class%param=value`)."""
    alternatives = _top_level_alternatives(pattern)
    if len(alternatives) > 1:
        matchers = [_class_matcher(part) for part in alternatives]
        if any(m is None for m in matchers):
            return None
        return lambda cls: any(m(cls) for m in matchers)
    if not pattern.startswith("^"):
        return None  # anywhere in the display name: a parameter's value could hold it
    name = _CLASS_PART.match(pattern, 1).group()
    rest = pattern[1 + len(name):]
    if not name or (rest and not rest.startswith("%") and rest != "$"):
        return None
    try:
        regex = re.compile(name)
    except re.error:
        return None  # ReFrame names the bad pattern
    # followed by `%...` or `$`, the class name ends there; else any class it begins
    if rest:
        return lambda cls: regex.fullmatch(cls) is not None
    return lambda cls: regex.match(cls) is not None


def _names(options: list[str]) -> list[str] | None:
    """The `-n` patterns of `options`, or None where one is given in a form not read here."""
    names = []
    it = iter(options)
    for word in it:
        if word in ("-n", "--name"):
            value = next(it, None)
            if value is None:
                return None
            names.append(value)
        elif word.startswith("--name="):
            names.append(word.split("=", 1)[1])
        elif word.startswith("-n") and not word.startswith("--"):
            return None  # -nPATTERN
    return names


def narrow(options: list[str], checks_dir: Path) -> list[str]:
    """`options` with `-c checks_dir` replaced by `-c FILE` for each file of it that registers
    a class the `-n` patterns select; `options` unchanged where the patterns are not all plain,
    select nothing, or another `-c` is given."""
    directory = str(checks_dir)
    places = [i for i, word in enumerate(options[:-1])
              if word == "-c" or word == "--checkpath"]
    if len(places) != 1 or options[places[0] + 1] != directory:
        return options
    patterns = _names(options)
    if not patterns:
        return options
    matchers = [_class_matcher(p) for p in patterns]
    if any(m is None for m in matchers):
        return options
    files = [path for path in sorted(checks_dir.glob("*.py"))
             if any(m(cls) for cls in registered_tests(path) for m in matchers)]
    if not files:
        return options  # ReFrame says that nothing was selected, as it always did
    at = places[0]
    chosen = [word for path in files for word in ("-c", str(path))]
    return [*options[:at], *chosen, *options[at + 2:]]
