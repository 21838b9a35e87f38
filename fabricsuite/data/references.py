"""Reference files: `reference/<system>.yaml`, one per ReFrame system.

The files use ReFrame 4.10's external-reference layout, so ReFrame itself reads them through
``reference = {'$ref': '<system>.yaml'}``::

    NetbenchPingPong:                 # the check's class name
      $index: [$partition, $environ]  # lookup keys, outermost first
      'local:default':                # system:partition
        openmpi:                      # programming environment
          latency_8B_median_us: [0.27, null, 0.7, us]   # [value, lower, upper, unit]

`lower`/`upper` are fractions of the value (-0.4 = 40 % below), `null` for no bound. Top-level
keys that start with `_` carry provenance and are ignored by ReFrame.

ReFrame's own reader gives terse errors for a broken file and silently uses no reference for a
missing one; `validate_file` is run first so that a person gets one message that names the file,
the entry and the fix.
"""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path
from typing import Any

import yaml

from fabricsuite.base.commandline import UsageError
from fabricsuite.base.metrics import (
    COUNT_SLACK,
    HIGHER,
    LOWER,
    PerfSpec,
    bad_sides,
    catches_2x,
    is_finite_number,
    unjudgeable,
)
from fabricsuite.data.machine import (
    LOCAL_SYSTEM,
    kind_of,
    kind_reference_file,
    own_reference_dir,
    reference_dir,
    reference_path,
    this_machine,
)

_CLASS_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ReferenceFileError(ValueError):
    """A reference file is missing or malformed."""


class NoReferenceFile(ReferenceFileError):
    """The reference file does not exist, or holds nothing of the check (a new system's
    acceptance may run without them; a file that exists and cannot be believed never lets a
    session run on)."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a key given twice in one mapping (PyYAML keeps the last one
    silently, so a pasted duplicate would override a reference without a word)."""


def _construct_unique_mapping(loader, node, deep=False):
    seen = {}
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"duplicate key {key!r} (first at line {seen[key] + 1})", key_node.start_mark)
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                                 _construct_unique_mapping)


def reference_file(system: str, directory: Path | None = None,
                   machine: str | None = None) -> Path:
    """`<system>.yaml` in the reference directory; for the embedded default `local`, the file
    of the machine this runs on (`machine`, else its fingerprint: fabricsuite.data.machine)."""
    if system == LOCAL_SYSTEM:
        if machine is None:
            machine = this_machine()[0]
        return reference_path(directory or own_reference_dir(), machine)
    return (directory or reference_dir()) / f"{system}.yaml"


def recorded_only(data: dict[str, Any]) -> dict[str, str]:
    """{dotted entry: reason} of the variables a file records without judging them."""
    found = data.get("_recorded_only")
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


def wide_bounds(data: dict[str, Any]) -> dict[str, str]:
    """{dotted entry: reason} of the variables a file judges, on purpose, with a bound that
    cannot fail a 2x slowdown (a mechanics-only scale on shared cores)."""
    found = data.get("_wide_bounds")
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else {}


#: Reference files parsed in this process, by (path, content, owner required): a ReFrame
#: session parses each file once, however many cases and steps read it (a case read its file
#: three or four times); a file whose content changed is parsed again. The bytes are read each
#: time (cheap); the YAML parse and validation is what is saved.
_PARSED: dict[tuple, dict[str, Any]] = {}
_PARSED_MOST = 64


def load_file(path: Path, owner_required: bool = True) -> dict[str, Any]:
    """Read and validate a reference file; returns the parsed mapping (the caller's own copy).
    A machine's file must name its owner (`_machine.key`) unless `owner_required` is off (the
    baseline adding it)."""
    if not path.is_file():
        raise NoReferenceFile(
            f"no reference file {path}: every system needs one; run the acceptance sessions "
            f"without references, then `fabricsuite baseline` (README, 'Adopting it on a "
            f"cluster')"
        )
    try:
        content = path.read_bytes()
    except OSError:
        return _read_file(path, None, owner_required)  # it names why it cannot be read
    key = (str(path.absolute()), hashlib.sha256(content).digest(), owner_required)
    if key not in _PARSED:
        if len(_PARSED) >= _PARSED_MOST:
            _PARSED.clear()
        _PARSED[key] = _read_file(path, content, owner_required)
    return copy.deepcopy(_PARSED[key])


def _read_file(path: Path, content: bytes | None, owner_required: bool) -> dict[str, Any]:
    try:
        text = path.read_text() if content is None else content.decode()
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) else "not UTF-8 text"
        raise ReferenceFileError(
            f"{path}: cannot read it ({why}); make it readable by the user who runs the "
            f"suite (chmod a+r), or restore it from its backup or from git") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        if isinstance(err, yaml.constructor.ConstructorError) and "duplicate key" in problem:
            raise ReferenceFileError(
                f"{path}: {problem}, line {mark.line + 1 if mark else '?'}: a key given twice "
                f"silently overrides the first; keep one"
            ) from None
        raise ReferenceFileError(
            f"{path}: not valid YAML{where}: {problem}; fix the file or restore it from its "
            f"backup ({path.name}.bak) or from git"
        ) from None
    if not isinstance(data, dict):
        raise ReferenceFileError(
            f"{path}: expected a mapping of check class names to references, got "
            f"{type(data).__name__}"
        )
    _check_machine_key(path, data.get("_machine"), owner_required)
    for key, what in (("_recorded_only", "recorded without being judged"),
                      ("_wide_bounds", "judged with a bound that cannot fail a 2x slowdown")):
        reasons = data.get(key, {})
        if not isinstance(reasons, dict) or not all(
                isinstance(v, str) and v.strip() for v in reasons.values()):
            raise ReferenceFileError(
                f"{path}: {key} must map entries (Check.partition.environ...variable) to the "
                f"reason each is {what}, got {reasons!r}")
    recorded = data.get("_recorded_only", {})
    for check, entry in data.items():
        if str(check).startswith("_"):
            continue
        _validate_check_entry(path, str(check), entry, set(recorded))
    return data


def _check_machine_key(path: Path, machine: Any, required: bool = True) -> None:
    """A machine's file (reference/local/<key>.yaml) names its machine in `_machine.key`: a
    file copied under another machine's (or kind's) name must not judge that machine, and one
    that does not say whose it is (no `_machine`, not a mapping, no key) is believed by no one:
    it could be any machine's (`fabricsuite baseline` always writes the section)."""
    if path.parent.name != LOCAL_SYSTEM or (machine is None and not required):
        return
    key = machine.get("key") if isinstance(machine, dict) else None
    if not isinstance(key, str) or not key.strip():
        raise ReferenceFileError(
            f"{path}: no _machine.key says whose references these are (_machine is "
            f"{machine!r}): a file of another machine would judge this one; retake this "
            f"machine's own (fabricsuite baseline --system local REPORTS), which writes it")
    if path.stem not in (str(key), kind_of(str(key))):
        raise ReferenceFileError(
            f"{path}: _machine.key is {key!r}, but the file is named for {path.stem!r}: it holds "
            f"another machine's references; move it back to {key}.yaml, or retake this "
            f"machine's own (fabricsuite baseline --system local REPORTS)")


def _validate_check_entry(path: Path, check: str, entry: Any,
                          recorded: set[str] | frozenset = frozenset()) -> None:
    if not _CLASS_NAME.match(check):
        raise ReferenceFileError(f"{path}: {check!r} is not a check class name")
    if not isinstance(entry, dict):
        raise ReferenceFileError(f"{path}: {check}: expected a mapping, got {entry!r}")
    index = entry.get("$index")
    if index is not None:
        if not isinstance(index, list) or not index or not all(isinstance(k, str) for k in index):
            raise ReferenceFileError(
                f"{path}: {check}.$index must be a non-empty list of names, got {index!r}"
            )
        depth = len(index)
    else:
        depth = 1
    body = {k: v for k, v in entry.items() if k != "$index"}
    _validate_level(path, [check], body, depth, recorded)


def _validate_level(path: Path, keys: list[str], node: Any, depth: int,
                    recorded: set[str] | frozenset = frozenset()) -> None:
    where = ".".join(keys)
    if not isinstance(node, dict):
        raise ReferenceFileError(f"{path}: {where}: expected a mapping, got {node!r}")
    for key, child in node.items():
        if depth > 1:
            _validate_level(path, keys + [str(key)], child, depth - 1, recorded)
            continue
        # depth 1: key is the scope (partition or last index value), child maps variables
        if not isinstance(child, dict):
            raise ReferenceFileError(
                f"{path}: {where}.{key}: expected a mapping of performance variables to "
                f"[value, lower, upper, unit], got {child!r}"
            )
        for variable, ref in child.items():
            entry = f"{where}.{key}.{variable}"
            _validate_tuple(path, entry, ref, entry in recorded)


def _validate_tuple(path: Path, where: str, ref: Any, recorded: bool = False) -> None:
    if isinstance(ref, list) and ref and ref[0] == "$xfail":
        if len(ref) != 3 or not isinstance(ref[1], str):
            raise ReferenceFileError(
                f"{path}: {where}: an expected failure is ['$xfail', 'reason', [value, lower, "
                f"upper, unit]], got {ref!r}"
            )
        ref = ref[2]
    hint = "write [value, lower, upper, unit], e.g. [0.27, null, 0.7, us]"
    if not isinstance(ref, list) or len(ref) not in (3, 4):
        raise ReferenceFileError(f"{path}: {where}: {ref!r} is not a reference; {hint}")
    value, lower, upper = ref[:3]
    if not is_finite_number(value) or value < 0:
        raise ReferenceFileError(f"{path}: {where}: value {value!r} must be a number >= 0; {hint}")
    if lower is not None and (not is_finite_number(lower) or (value != 0 and lower > 0)):
        raise ReferenceFileError(
            f"{path}: {where}: lower bound {lower!r} must be null or a fraction <= 0; {hint}"
        )
    if upper is not None and (not is_finite_number(upper) or (value != 0 and upper < 0)):
        raise ReferenceFileError(
            f"{path}: {where}: upper bound {upper!r} must be null or a fraction >= 0; {hint}"
        )
    if len(ref) == 4 and ref[3] is not None and not isinstance(ref[3], str):
        raise ReferenceFileError(f"{path}: {where}: unit {ref[3]!r} must be a string")
    if recorded:
        if lower is not None or upper is not None:
            raise ReferenceFileError(
                f"{path}: {where}: listed in _recorded_only (never judged) but has a bound; "
                f"remove the bound or the _recorded_only entry")
        return
    if lower is None and upper is None:
        raise ReferenceFileError(
            f"{path}: {where}: no bound on either side, so any value passes; give the bound on "
            f"the variable's bad side (upper for lower-is-better, lower for higher-is-better), "
            f"or list it in _recorded_only with the reason it is not judged"
        )


def check_tuple(path: Path, where: str, ref: Any, spec: PerfSpec,
                recorded: bool = False, wide: bool = False) -> None:
    """A reference tuple against its variable's declared unit and direction: the unit must be
    the variable's, and the bad side (metrics.bad_sides) must be bounded unless the variable is
    recorded only, with a bound that fails a 2x slowdown unless the file's _wide_bounds says
    why not (`wide`). Raises ReferenceFileError naming the entry and the fix."""
    if isinstance(ref, list) and ref and ref[0] == "$xfail":
        ref = ref[2]
    _validate_tuple(path, where, ref, recorded)
    unit = ref[3] if len(ref) == 4 else None
    if unit != spec.unit:
        raise ReferenceFileError(
            f"{path}: {where}: unit {unit!r}, but the variable is measured in {spec.unit!r}; "
            f"write the reference in {spec.unit}"
        )
    for side in bad_sides(spec.better) if not recorded else ():
        bound = ref[1] if side == "lower" else ref[2]
        if bound is None:
            better = {"lower": "lower is better", "higher": "higher is better",
                      "equal": "it must not move either way"}[spec.better]
            raise ReferenceFileError(
                f"{path}: {where}: no {side} bound, but {better}: a regression would pass; "
                f"give a {side} bound (a fraction {'<= 0' if side == 'lower' else '>= 0'})"
            )
    why = (unjudgeable(ref[0], spec.better, spec.resolution, spec.whole_units)
           if not recorded and is_finite_number(ref[0]) else None)
    if why:
        raise ReferenceFileError(
            f"{path}: {where}: a reference of {ref[0]} {spec.unit} cannot judge ({why}); list "
            f"the entry in _recorded_only with the reason")
    widest = max((abs(b) for b in ref[1:3] if b is not None), default=0.0)
    if not recorded and ref[0] == 0 and widest > COUNT_SLACK:
        # a count of 0 (violations, errors): its bounds are counts themselves
        raise ReferenceFileError(
            f"{path}: {where}: a count of 0 with a bound of {widest:g}: ReFrame reads the bounds "
            f"of a zero reference as absolute counts, so {widest:g} would pass; give bounds "
            f"within {COUNT_SLACK} either way, e.g. [0, -1, 1, {spec.unit}]")
    if not recorded and not wide and ref[0] != 0 and not catches_2x(
            spec.better, ref[1], ref[2], ref[0], spec.count):
        if spec.better == "equal":
            what = (f"bounds {ref[1]}, {ref[2]} of a count of {ref[0]} admit more than "
                    f"{COUNT_SLACK} either way and a 2x change" if spec.count else
                    f"bounds {ref[1]}, {ref[2]} cannot fail a 2x change either way")
        else:
            side, bound = ("upper", ref[2]) if spec.better == "lower" else ("lower", ref[1])
            what = f"{side} bound {bound} cannot fail a 2x slowdown"
        raise ReferenceFileError(
            f"{path}: {where}: {what}, so a regression would pass; narrow it, or list the "
            f"entry with the reason in _recorded_only (recorded, not judged; no bounds) or "
            f"_wide_bounds (judged loosely on purpose)")


def _scoped(path: Path, data: dict[str, Any], check: str,
            scope: dict[str, str]) -> tuple[str, dict[str, Any]] | None:
    """(where, {variable: tuple}) of the entries one test case will use, or None when the file
    has none at that scope. `scope` maps each index name of the check's entry ($partition,
    $environ, distance, scale, ...) to the case's value; "*" matches any."""
    entry = data[check]
    index = entry.get("$index") or ["$partition"]
    node: Any = {k: v for k, v in entry.items() if k != "$index"}
    keys = []
    for name in index:
        if name not in scope:
            raise ReferenceFileError(
                f"{path}: {check}.$index names {name!r}, which the check does not have; the "
                f"check's index levels are {', '.join(scope)}"
            )
        value = scope[name]
        if not isinstance(node, dict):
            return None
        if value in node:
            node, key = node[value], value
        elif "*" in node:
            node, key = node["*"], "*"
        else:
            return None  # no references at this scope: ReFrame's require_reference decides
        keys.append(str(key))
    if not isinstance(node, dict):
        return None
    return ".".join([check, *keys]), node


def check_test_references(path: Path, data: dict[str, Any], check: str,
                          scope: dict[str, str], specs: dict[str, PerfSpec]) -> None:
    """Validate the references one test case will use (see `_scoped`). A variable without an
    entry is left to ReFrame (`require_reference` fails it); an entry for a variable the check
    does not have is an error (a typo would otherwise go unnoticed)."""
    scoped = _scoped(path, data, check, scope)
    if scoped is None:
        return
    where, node = scoped
    for variable, ref in node.items():
        if variable not in specs:
            raise ReferenceFileError(
                f"{path}: {where}.{variable}: {check} has no performance variable {variable!r}; "
                f"it has {', '.join(sorted(specs))}"
            )
        entry = f"{where}.{variable}"
        check_tuple(path, entry, ref, specs[variable], entry in recorded_only(data),
                    entry in wide_bounds(data))


def scoped_references(system: str, check: str, scope: dict[str, str],
                      specs: dict[str, PerfSpec], directory: Path | None = None,
                      machine: str | None = None) -> dict[str, tuple[Any, ...]]:
    """The validated reference tuples of one test case, {variable: (value, lower, upper,
    unit)}; empty when the system's file does not exist or has none for the case. For the
    embedded default, which records a case it has no references of (checks whose references are
    built in read their exceptions through `known_findings`)."""
    return _case_entries(reference_file(system, directory, machine), check, scope, specs) or {}


def _case_entries(path: Path | None, check: str, scope: dict[str, str],
                  specs: dict[str, PerfSpec]) -> dict[str, tuple[Any, ...]] | None:
    """scoped_references of one file; None where it does not exist or has no such case (an
    empty dict: the case is there, with no entries)."""
    if path is None or not path.exists():
        return None
    data = load_file(path)
    if check not in data:
        return None
    check_test_references(path, data, check, scope, specs)
    scoped = _scoped(path, data, check, scope)
    return None if scoped is None else {k: tuple(v) for k, v in scoped[1].items()}


def known_findings(system: str, check: str, scope: dict[str, str],
                   specs: dict[str, PerfSpec], directory: Path | None = None,
                   machine: str | None = None) -> tuple[Path | None, dict[str, tuple[Any, ...]]]:
    """(file, findings): the known findings of one case of a check whose references are
    built in (the file only lists exceptions, NetbenchSelfConsistency): the system's own file
    where it has a section for the check; for the embedded default without one, the file of
    another machine of its kind. A known finding belongs to the installed MPI library, not to
    one machine: a second machine of the kind (and a machine whose own file `fabricsuite
    baseline` wrote, which never writes this section) must not call MPICH 4.0's slow reduce a
    regression. Per case: a machine's own section for one MPI keeps the kind's findings of
    the other."""
    path = reference_file(system, directory, machine)
    own = _case_entries(path, check, scope, specs)
    if own is None and system == LOCAL_SYSTEM:
        path = kind_reference_file(machine or this_machine()[0], directory)
        own = _case_entries(path, check, scope, specs)
    return path, own or {}


def kind_references(machine: str, check: str, scope: dict[str, str],
                    specs: dict[str, PerfSpec],
                    directory: Path | None = None) -> tuple[Path | None, dict[str, float]]:
    """(file, {variable: value}): the reference values another machine of `machine`'s kind has
    of one test case, for the outcome to show how far this machine lies from them (information,
    never a verdict: machines of one kind differ by 2x in memory-bound figures; a machine
    without references of its own is judged by the limits of its cores, fabricsuite.data.limits);
    (None, {}) where the repository has none. Only figures with a better side and a value are
    given: counts and sweep sizes ("equal") and expected failures of that machine are left
    out."""
    path = kind_reference_file(machine, directory)
    if path is None or not path.is_file():
        return None, {}
    data = load_file(path)
    if check not in data:
        return path, {}
    check_test_references(path, data, check, scope, specs)
    scoped = _scoped(path, data, check, scope)
    if scoped is None:
        return path, {}
    return path, {variable: ref[0] for variable, ref in scoped[1].items()
                  if specs[variable].better in (LOWER, HIGHER) and isinstance(ref, list) and ref
                  and ref[0] != "$xfail" and is_finite_number(ref[0]) and ref[0]}


def reference_nodes(system: str, check: str, scope: list[str], directory: Path | None = None,
                    machine: str | None = None) -> list[str]:
    """The nodes the references of one test case were taken on (`_statistics` nodes,
    `fabricsuite baseline`), `scope` its partition, environment and index values; empty where
    the file does not exist or does not say."""
    path = reference_file(system, directory, machine)
    if not path.is_file():
        return []
    stats = load_file(path).get("_statistics")
    prefix = " ".join([check, *scope]) + " "
    found = {str(n) for key, entry in (stats.items() if isinstance(stats, dict) else ())
             if str(key).startswith(prefix) and isinstance(entry, dict)
             and isinstance(entry.get("nodes"), list) for n in entry["nodes"]}
    return sorted(found)


def external_reference(system: str, check: str, directory: Path | None = None,
                       scope: dict[str, str] | None = None,
                       specs: dict[str, PerfSpec] | None = None,
                       machine: str | None = None) -> dict[str, str]:
    """The `reference` value for a check on `system`, after validating the file and, given the
    test case's `scope` and its variables' `specs`, the entries that case will use.

    Raises ReferenceFileError when the file is missing or broken, or has no entry for the check.
    """
    path = reference_file(system, directory, machine)
    data = load_file(path)
    if check not in data:
        raise NoReferenceFile(
            f"{path}: no references for {check}; run without them (-S "
            f"require_reference=false), then `fabricsuite baseline` (README, 'Adopting it on "
            f"a cluster')"
        )
    if scope is not None and specs is not None:
        check_test_references(path, data, check, scope, specs)
    return {"$ref": str(path.resolve())}


def lookup(data: dict[str, Any], check: str, keys: list[str]) -> dict[str, list[Any]]:
    """The variables of `check` at the given index keys (partition, environment, ...)."""
    node: Any = data[check]
    for key in keys:
        node = node[key]
    return node


def variable_noise(system: str, *, recorded: bool = False) -> dict[str, tuple[float, str]]:
    """Per series key ("check partition environ [level] variable"), the noise of one run
    recorded with the system's references (`_statistics`, fabricsuite baseline) and where it
    comes from: the between-session spread (robust relative standard deviation), or the worst
    deviation the sessions showed where that is wider (a figure with slow phases is as noisy as
    its slow phases); {} without a readable reference file.

    A figure the file records without judging (`_recorded_only`: the machine moves it by 2x or
    more) is left out unless `recorded`: `compare` has no usable noise for it (below
    Mann-Whitney's run count it stays "insufficient data", never a regression); `history` takes
    its worst deviation as the least shift that is an alarm."""
    try:
        path = reference_file(system)
        data = load_file(path)
    except (ReferenceFileError, UsageError, OSError, ValueError):
        return {}
    stats = data.get("_statistics") or {}
    unjudged = {" ".join(dotted.split(".")) for dotted in recorded_only(data)}
    found = {}
    for key, entry in stats.items() if isinstance(stats, dict) else ():
        spread = entry.get("spread") if isinstance(entry, dict) else None
        if (str(key) in unjudged and not recorded) or not (
                is_finite_number(spread) and spread > 0):
            continue
        worst = entry.get("worst")
        sessions = entry.get("sessions")
        where = f"{path.name} _statistics" + (f", {sessions} sessions" if sessions else "")
        if is_finite_number(worst) and worst > spread:
            found[str(key)] = (float(worst), f"the worst deviation between sessions ({where})")
        else:
            found[str(key)] = (float(spread), f"the between-session spread ({where})")
    return found
