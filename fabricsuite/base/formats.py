"""How the suite writes a number and a time, in one place (base layer: imports nothing of the
suite).

Three time formats, all UTC, each for one reader:

- `iso_utc`: records a program or a person reads back (JSON, YAML, the action log, waivers):
  `2026-12-03T10:11:40Z`, ISO 8601.
- `file_utc`: in file names, where ':' does not belong and names must sort by time:
  `20261203T101140Z` (run reports, report pages); a backup's name keeps its documented
  `2026-12-03T101140Z` (`backup_utc`).
- `shown_utc`: for a person in a table or on the page, to the minute: `2026-12-03 10:11Z`.

One number format for a figure in a table: four significant digits (`figure`); one way to cut
a text to a line (`shortened`).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

When = float | datetime | None


def _at(when: When) -> datetime:
    if when is None:
        return datetime.now(UTC)
    if isinstance(when, datetime):
        return when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
    return datetime.fromtimestamp(when, UTC)


def iso_utc(when: When = None) -> str:
    """`when` (a Unix time, a datetime, or now) as a record states it: 2026-12-03T10:11:40Z."""
    return _at(when).strftime("%Y-%m-%dT%H:%M:%SZ")


def file_utc(when: When = None) -> str:
    """`when` in a file name: 20261203T101140Z."""
    return _at(when).strftime("%Y%m%dT%H%M%SZ")


def backup_utc(when: When = None) -> str:
    """`when` in a backup's name (`<file>.2026-12-03T101140Z.bak`, docs/verdicts.md)."""
    return _at(when).strftime("%Y-%m-%dT%H%M%SZ")


def shown_utc(when: When = None, seconds: bool = False) -> str:
    """`when` for a person: 2026-12-03 10:11Z (with `seconds`, 2026-12-03 10:11:40Z)."""
    return _at(when).strftime("%Y-%m-%d %H:%M:%SZ" if seconds else "%Y-%m-%d %H:%MZ")


def figure(value: object) -> str:
    """A figure in a table: four significant digits; '-' where there is none; anything that is
    not a finite number as it is (nan, inf, a word)."""
    if value is None:
        return "-"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return f"{value:.4g}"
    return str(value)


def shortened(text: object, width: int = 150) -> str:
    """`text` on one line (runs of white space as one space), cut to `width` with "..."."""
    text = " ".join(str(text or "").split())
    return text if len(text) <= width else text[:width - 3] + "..."
