#!/usr/bin/env python3
"""The confirmation rule that weighs every round against the rule before it, on the same
stored sessions: how many cases each calls a regression, a transient or a pass.

The rule before: a variable is confirmed when it is outside its references in the first run and
in the last (so the last round decides: a case that passes its last confirmation passes). The
rule now (fabricsuite.data.cases.confirmed_variables with rounds): outside in more than half of the
rounds that measured it, disturbed rounds left out beside quiet ones. Only cases measured in
more than one round can differ; they are listed one by one.

    bench/confirmation_rules.py PATH... [--json FILE]

PATH: run reports, or folders searched for run-report-*.json (a results directory, tests/data,
pytest's temporary folders after a CI run). A report given twice (the same uuid) counts once.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from fabricsuite.data import cases  # noqa: E402


def reports(paths: list[Path]) -> list[tuple[Path, dict]]:
    found, seen = [], set()
    files = []
    for path in paths:
        files += sorted(path.rglob("*.json")) if path.is_dir() else [path]
    for path in files:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
            continue
        uuid = (data.get("session_info") or {}).get("uuid") or str(path)
        if uuid in seen:
            continue
        seen.add(uuid)
        found.append((path, data))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="also write every multi-round case here")
    args = parser.parse_args()
    table: dict[tuple[str, str], int] = {}
    differing, rows, sessions = [], [], 0
    for path, data in reports(args.paths):
        sessions += 1
        for case in cases.read(data):
            if len(case.rounds) < 2:
                continue
            old = cases.health(case.last, case.first)
            new = case.health
            table[old, new] = table.get((old, new), 0) + 1
            flags = {v: cases.variable_outside(list(case.rounds), v)
                     for v in sorted(set().union(*(cases.failed_variables(r)
                                                   for r in case.rounds)))}
            row = {"report": str(path), "case": f"{case.check} {case.environ} "
                   f"{' '.join(v for _, v in case.levels)}", "rounds": len(case.rounds),
                   "old": old, "new": new, "outside": flags}
            rows.append(row)
            if old != new:
                differing.append(row)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    print(f"{sessions} session(s), {len(rows)} case(s) measured in more than one round")
    print("| rule before | rule now | cases |")
    print("| --- | --- | --- |")
    for (old, new), n in sorted(table.items()):
        print(f"| {old} | {new} | {n} |")
    for row in differing:
        rounds = "; ".join(f"{v} {''.join('x' if f else '.' for f in flags)}"
                           for v, flags in row["outside"].items())
        print(f"differs: {row['case']} ({row['report']}): {row['old']} -> {row['new']}; "
              f"outside per round (x): {rounds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
