#!/usr/bin/env python3
"""Where the test command's time goes, per lane (issue 65: under 20 minutes on 2 cores).

    ci/test.sh --junitxml=/tmp/ci.xml          # the whole test command, timed per test
    bench/ci_lanes.py /tmp/ci.xml /tmp/ci.unit.xml [--top 15]   # per lane, the slowest tests

Reads a JUnit XML file pytest wrote (each test case's time: its set-up, call and tear-down) and
the lane of every test (the markers tests/conftest.py gives: unit, mpi, reframe, emucluster;
one collection with tests/lane_listing.py), and prints the seconds and tests of each lane, the
whole and the slowest tests. Collection itself starts nothing heavy (no MPI, no namespace).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def lanes() -> dict[str, str]:
    """{pytest node id: lane} of every collected test."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "--collect-only",
                           "-p", "lane_listing", "-p", "no:cacheprovider"],
                          cwd=REPO, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO / "tests"), "PATH": "/usr/bin:/bin"})
    found = {}
    for line in proc.stdout.splitlines():
        if line.startswith("LANES "):
            _, node, lane = line.split(" ", 2)
            found[node] = lane or "unit"
    return found


def node_id(case: ET.Element) -> str:
    """pytest's node id of a JUnit test case (classname tests.test_x, name test_y[param])."""
    module = case.get("classname", "").replace(".", "/")
    return f"{module}.py::{case.get('name')}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("junit", nargs="+",
                        help="the JUnit XML file(s) of a test run (--junitxml; ci/test.sh writes "
                             "FILE, FILE.unit.xml and FILE.untimed.xml, one a step)")
    parser.add_argument("--top", type=int, default=15, help="slowest tests shown (default 15)")
    args = parser.parse_args(argv)
    roots = []
    for path in args.junit:
        try:
            roots.append((path, ET.parse(path).getroot()))
        except (OSError, ET.ParseError) as err:
            print(f"ci_lanes: cannot read {path}: {err}; give the file of --junitxml",
                  file=sys.stderr)
            return 2
    lane_of = lanes()
    seconds: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    timed = []
    # a step's wall time (its suite's time): the tests' own seconds add up to more where a step
    # ran on both cores (the unit lane, pytest-xdist)
    for path, root in roots:
        wall = sum(float(suite.get("time") or 0) for suite in root.iter("testsuite"))
        print(f"{path}: {wall:,.0f} s of wall time")
    cases = [case for _path, root in roots for case in root.iter("testcase")]
    for case in cases:
        node = node_id(case)
        lane = lane_of.get(node, "?")
        took = float(case.get("time") or 0)
        seconds[lane] += took
        count[lane] += 1
        timed.append((took, node, lane))
    print("\n| lane | tests | seconds (the tests' own) |\n| --- | ---: | ---: |")
    for lane in sorted(seconds, key=lambda name: -seconds[name]):
        print(f"| {lane} | {count[lane]} | {seconds[lane]:,.0f} |")
    print(f"| all | {sum(count.values())} | {sum(seconds.values()):,.0f} |")
    print(f"\nthe {args.top} slowest:")
    for took, node, lane in sorted(timed, reverse=True)[:args.top]:
        print(f"  {took:7.1f} s  {lane:10s} {node}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
