"""`fabricsuite nightly`: the nightly run (being written)."""

from __future__ import annotations

import sys
from typing import Any


def add_parser(sub: Any) -> None:
    sub.add_parser("nightly", help="the nightly run (not available yet)")


def run(args: Any) -> int:
    print("fabricsuite nightly: not available yet", file=sys.stderr)
    return 2
