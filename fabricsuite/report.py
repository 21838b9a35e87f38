"""`fabricsuite report`: self-contained HTML report (being written)."""

from __future__ import annotations

import sys
from typing import Any


def add_parser(sub: Any) -> None:
    sub.add_parser("report", help="self-contained HTML report (not available yet)")


def run(args: Any) -> int:
    print("fabricsuite report: not available yet", file=sys.stderr)
    return 2
