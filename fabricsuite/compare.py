"""`fabricsuite compare`: before/after comparison of stored sessions (being written)."""

from __future__ import annotations

import sys
from typing import Any


def add_parser(sub: Any) -> None:
    sub.add_parser("compare", help="before/after comparison of stored sessions (not available yet)")


def run(args: Any) -> int:
    print("fabricsuite compare: not available yet", file=sys.stderr)
    return 2
