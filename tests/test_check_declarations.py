"""Every check's performance variables (unit, direction and bound rule, and for a netbench
variable the table, column and row it reads) and the options it runs its program with are held
to a committed snapshot (checks/declarations.json): a refactoring of the check layer (issue 40:
one check base, one reader protocol) must leave them as they were, a deliberate change shows up
as a diff of that file in review, and the report reads the checks' declarations from it without
loading ReFrame.

After a deliberate change: `.venv/bin/python tests/test_check_declarations.py --write`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict

from fabricsuite.base.metrics import CHECK_DECLARATIONS_FILE as SNAPSHOT


def declarations() -> dict[str, dict]:
    """{check class: {"variables": {name: PerfSpec fields}, "options": [...]}} of every check
    of checks/*.py that declares performance variables."""
    import reframe as rfm

    from fabricsuite.base.metrics import declared_specs
    from fabricsuite.checks.rfm_netbench import check_classes

    def default(cls: type, name: str):
        # a ReFrame variable's value as the class sets it (hooks may add to it at run time)
        space = cls._rfm_var_space
        try:
            value = space[name].default_value if name in space else getattr(cls, name, None)
        except Exception:  # a variable without a value (ReFrame raises its own error type)
            return None
        return list(value) if isinstance(value, (list, tuple)) else value

    def reads(metric) -> dict | None:
        # a netbench variable: the table (None: the summary), column and row it reads
        if not getattr(metric, "column", ""):
            return None
        return {"table": metric.table, "column": metric.column, "where": dict(metric.where)}

    found = {}
    for name, cls in sorted(check_classes(rfm.RegressionTest).items()):
        metrics = getattr(cls, "metrics", {}) or {}
        found[name] = {
            "variables": {var: {**asdict(spec), "reads": reads(metrics.get(var))}
                          for var, spec in sorted(declared_specs(cls).items())},
            "method": default(cls, "method"),
            "options": default(cls, "netbench_options") or default(cls, "program_opts"),
        }
    return found


def test_every_checks_variables_and_options_are_the_snapshots():
    current = declarations()
    recorded = json.loads(SNAPSHOT.read_text())
    assert len(current) >= 30, sorted(current)  # the loader found the checks
    changed = sorted(name for name in current.keys() | recorded.keys()
                     if current.get(name) != recorded.get(name))
    assert not changed, (
        f"the declarations of {changed} differ from {SNAPSHOT.name}; if that is meant, run "
        f"`.venv/bin/python tests/test_check_declarations.py --write` and review the diff")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        SNAPSHOT.write_text(json.dumps(declarations(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {SNAPSHOT}")
    else:
        sys.exit(f"usage: {sys.argv[0]} --write")
