"""Which fabric counters moved during a job: read before and after it on the job's first node by
config/launchers/read-counters (no privileges), the deltas kept with the run.

Sources (a partition's `extras["counters"]`, a list; default DEFAULT_SOURCES): `net` (Linux
interface statistics and carrier changes), `infiniband` (port counters and hw_counters), `cxi`
(Slingshot telemetry), `tc` (queueing disciplines: a shaper's drops and overlimits). A source the
node lacks gives no counter. Traffic counters (bytes, packets) move with every run; the ones
that say something went wrong or was held back (errors, drops, discards, overlimits, carrier
changes, link downs, symbol errors, retries...) are what the outcome shows beside a failure:
"tc eth0 tbf-8001 overlimits +3021, net eth0 carrier_changes +2".
"""

from __future__ import annotations

import re
from collections.abc import Mapping

#: What a partition reads when it declares nothing (tc is for the emulated cluster's shaper).
DEFAULT_SOURCES = ("net", "infiniband", "cxi")
SOURCES = ("net", "infiniband", "cxi", "tc")
#: Files the job writes in its stage, before and after the program.
BEFORE, AFTER = "counters-before.txt", "counters-after.txt"
#: Counter names that tell of trouble rather than traffic.
TROUBLE = re.compile(r"error|drop|discard|overlimit|carrier|down|symbol|retr|timeout|"
                     r"lost|violation|integrity|stall|congest|nak|ecn|cnp|requeue", re.I)


class CountersError(ValueError):
    """A partition's `counters` declaration that cannot be used (one line naming the fix)."""


def sources(extras: Mapping) -> list[str]:
    """The counter sources the partition reads (validated)."""
    declared = (extras or {}).get("counters", list(DEFAULT_SOURCES))
    if not isinstance(declared, list) or not all(s in SOURCES for s in declared):
        raise CountersError(f"extras.counters: expected a list of {', '.join(SOURCES)}, got "
                            f"{declared!r}")
    return declared


def parse(text: str) -> dict[str, int]:
    """"SOURCE/NAME VALUE" lines (read-counters) as {name: value}; other lines are skipped."""
    values = {}
    for line in text.splitlines():
        name, _, value = line.strip().rpartition(" ")
        if name and value.isdigit():
            values[name] = int(value)
    return values


def deltas(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """The counters present in both readings that changed, with their change."""
    return {name: after[name] - before[name] for name in sorted(after)
            if name in before and after[name] != before[name]}


def trouble(moved: Mapping[str, int]) -> dict[str, int]:
    """The moved counters that tell of trouble (TROUBLE), not of traffic."""
    return {name: change for name, change in moved.items()
            if TROUBLE.search(name.rsplit("/", 1)[-1])}


def describe(moved: Mapping[str, int]) -> str:
    """One line: "tc lo tbf-835e dropped +5, tc lo tbf-835e overlimits +5" ("" for none)."""
    return ", ".join(f"{name.replace('/', ' ')} {change:+d}" for name, change in moved.items())


def judge(test) -> tuple[str, dict[str, int]]:
    """(the troubled counters that moved during the job, as a line; every counter that moved,
    with its change), from the two readings in `test`'s stage; ("", {}) where one is missing."""
    readings = []
    for name in (BEFORE, AFTER):
        try:
            with open(f"{test.stagedir}/{name}") as text:
                readings.append(parse(text.read()))
        except OSError:
            return "", {}
    moved = deltas(*readings)
    return describe(trouble(moved)), moved
