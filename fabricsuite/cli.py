"""`fabricsuite`: helper commands around the ReFrame suite.

    fabricsuite baseline --system local --last 5     # reference/local.yaml from the last 5 runs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from . import REFERENCE_DIR, REPO_ROOT
from .baseline import build_reference, read_reports, write_atomically
from .references import ReferenceFileError, load_file

HEADER = """\
# Reference values per partition, programming environment and topology distance (point-to-point
# checks) or scale, nodes x ranks per node (multi-rank checks), read by ReFrame 4.10 as external
# references ($ref). Each entry: [value, lower, upper, unit]; bounds are fractions, null = none.
# Produced by `fabricsuite baseline` from stored runs (see _provenance); edit with care.
"""


def _baseline(args: argparse.Namespace) -> int:
    reports = [Path(p) for p in args.reports]
    if not reports:
        found = sorted(Path(args.results, "reports").glob("run-report-*.json"),
                       key=lambda p: p.stat().st_mtime)
        reports = found[-args.last:]
    if not reports:
        print(f"fabricsuite baseline: no run reports in {args.results}/reports; run the suite "
              f"first (ci/run-local.sh) or name report files", file=sys.stderr)
        return 2
    try:
        samples = [s for s in read_reports(reports) if s.partition.split(":")[0] == args.system]
    except ValueError as err:
        print(f"fabricsuite baseline: {err}", file=sys.stderr)
        return 2
    if not samples:
        print(f"fabricsuite baseline: the reports hold no performance values for system "
              f"{args.system!r}", file=sys.stderr)
        return 2
    output = Path(args.output or REFERENCE_DIR / f"{args.system}.yaml")
    existing = None
    if output.exists():
        try:
            existing = load_file(output)
        except ReferenceFileError as err:
            print(f"fabricsuite baseline: {err}", file=sys.stderr)
            return 2
    data, notes = build_reference(samples, reports, existing)
    if args.dry_run:
        sys.stdout.write(HEADER + yaml.safe_dump(data, sort_keys=False, width=100))
    else:
        backup = write_atomically(output, data, HEADER)
        print(f"wrote {output}" + (f" (previous version kept as {backup})" if backup else ""))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fabricsuite", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    base = sub.add_parser(
        "baseline", help="derive reference values from stored ReFrame run reports",
        description="Write reference/<system>.yaml from the median of stored runs, with bounds "
                    "sized from their spread (capped so that a 2x slowdown still fails). The "
                    "previous file is kept as <file>.bak; other systems' entries are untouched.")
    base.add_argument("--system", required=True, help="ReFrame system name, e.g. local")
    base.add_argument("--last", type=int, default=5,
                      help="use the newest N run reports in RESULTS/reports (default 5)")
    base.add_argument("--results", default=str(REPO_ROOT / "results"),
                      help="results directory (default: results/)")
    base.add_argument("--output", help="reference file (default reference/<system>.yaml)")
    base.add_argument("--dry-run", action="store_true", help="print instead of writing")
    base.add_argument("reports", nargs="*", help="run report files (default: the newest --last)")
    args = parser.parse_args(argv)
    return _baseline(args)


if __name__ == "__main__":
    sys.exit(main())
