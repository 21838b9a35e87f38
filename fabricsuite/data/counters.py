"""Which fabric counters moved during a job: read before and after it by
config/launchers/read-counters (no privileges), the deltas kept with the run (run report,
perflog).

A partition declares what is read in `extras["counters"]`: a list of sources (read on the job's
first node), or `{"sources": [...], "nodes": "first" | "every"}`; default: DEFAULT_SOURCES on the
first node. Sources: `net` (Linux interface statistics and carrier changes), `infiniband` (port
counters and hw_counters), `cxi` (Slingshot telemetry), `tc` (queueing disciplines: a shaper's
drops and overlimits), `links` (each link's state, rate and width, not counters:
fabricsuite.data.links). `every` reads every node of the job, through one `srun` step per node
before and after the program (Slurm partitions only): a fault on a job's second node shows only
there. A source a node lacks is skipped with the reason ("infiniband: no /sys/class/infiniband/
*/ports ..."), recorded with the run.

Traffic counters (bytes, packets) move with every run; the ones that say something went wrong or
was held back (errors, drops, discards, overlimits, carrier changes, link downs, symbol errors,
retries...) are what the outcome shows beside a failure, each with its node:
"node1 tc eth0 tbf-8001 overlimits +3021, node2 net eth0 carrier_changes +2".
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fabricsuite import SLURM_SCHEDULERS

if TYPE_CHECKING:  # links reads its readings' format from here: imported where used
    from fabricsuite.data.links import Contract

#: What a partition reads when it declares nothing (tc is for the emulated cluster's shaper).
DEFAULT_SOURCES = ("net", "infiniband", "cxi", "links")
SOURCES = ("net", "infiniband", "cxi", "tc", "links")
#: The lines of a reading that are a link's state, not a counter (fabricsuite.data.links).
LINK_PREFIX = "link/"
#: Which nodes of a job are read: its first (where the job script runs), or every one.
NODES = ("first", "every")
#: Files the job writes in its stage, before and after the program, one per node read ("%n":
#: the node's name, filled in by read-counters).
BEFORE, AFTER = "counters-before-%n.txt", "counters-after-%n.txt"
#: Counter names that tell of trouble rather than traffic.
TROUBLE = re.compile(r"error|drop|discard|overlimit|carrier|down|symbol|retr|timeout|"
                     r"lost|violation|integrity|stall|congest|nak|ecn|cnp|requeue", re.I)


class CountersError(ValueError):
    """A partition's `counters` declaration that cannot be used (one line naming the fix)."""


@dataclass(frozen=True)
class Reading:
    """What a partition reads around every job."""
    sources: list[str]
    nodes: str = "first"


def declared(extras: Mapping) -> Reading:
    """The partition's `extras["counters"]`, validated (CountersError: one line naming the
    fix)."""
    value = (extras or {}).get("counters", list(DEFAULT_SOURCES))
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"sources", "nodes"})
        nodes = value.get("nodes", "first")
        if unknown or nodes not in NODES:
            raise CountersError(f"extras.counters: expected {{\"sources\": [...], \"nodes\": "
                                f"{' or '.join(repr(n) for n in NODES)}}}, got {dict(value)!r}")
        return Reading(sources(value.get("sources", list(DEFAULT_SOURCES))), nodes)
    return Reading(sources(value))


def sources(value) -> list[str]:
    """A declared list of counter sources, validated."""
    if not isinstance(value, list) or not all(s in SOURCES for s in value):
        raise CountersError(f"extras.counters: expected a list of {', '.join(SOURCES)}, got "
                            f"{value!r}")
    return value


def commands(reading: Reading, program: str, scheduler: str) -> tuple[str, str]:
    """The job script's lines that read the counters before and after the program; every word
    quoted. `every` needs Slurm: one srun step with a task on each node of the job."""
    launch = []
    if reading.nodes == "every":
        if scheduler not in SLURM_SCHEDULERS:
            raise CountersError(f"extras.counters: nodes \"every\" reads through srun, and this "
                                f"partition's scheduler is {scheduler}; declare \"first\"")
        launch = ["srun", "--nodes=$SLURM_JOB_NUM_NODES", "--ntasks=$SLURM_JOB_NUM_NODES",
                  "--ntasks-per-node=1"]

    def line(file: str) -> str:
        words = [program, file, *reading.sources]
        # $SLURM_JOB_NUM_NODES is the job's own, expanded by the job script: left unquoted
        return " ".join([*launch, *(shlex.quote(w) for w in words)])
    return line(BEFORE), line(AFTER)


#: The stale readings an earlier job left in a stage, as shell patterns (constants, unquoted).
STALE = [name.replace("%n", "*") for name in (BEFORE, AFTER)]


def parse(text: str) -> dict[str, int]:
    """"SOURCE/NAME VALUE" lines (read-counters) as {name: value}; other lines are skipped
    (the links' state, "link/...", is fabricsuite.data.links')."""
    values = {}
    for line in text.splitlines():
        if line.startswith(LINK_PREFIX):
            continue
        name, _, value = line.strip().rpartition(" ")
        if name and value.isdigit() and not name.startswith("#"):
            values[name] = int(value)
    return values


def unreadable(text: str) -> list[str]:
    """The counters of a reading whose value is no count (not a whole number >= 0: "-5",
    "1.5e3", "n/a"): named beside the others, never dropped silently."""
    found = []
    for line in text.splitlines():
        if line.startswith(LINK_PREFIX):
            continue
        name, _, value = line.strip().rpartition(" ")
        if name and not name.startswith("#") and not value.isdigit():
            found.append(f"{name}={value[:20]}")
    return found


def devices(names: list[str]) -> str:
    """Counter names grouped by source and device: "net/eth1 (23 counters), tc/eth0 ..."."""
    grouped: dict[str, int] = {}
    for name in names:
        parts = name.split("/")
        key = "/".join(parts[:-1]) if len(parts) > 2 else name
        grouped[key] = grouped.get(key, 0) + 1
    return ", ".join(f"{key} ({count} counter{'s' if count > 1 else ''})" if count > 1 else key
                     for key, count in grouped.items())


def skipped(text: str) -> dict[str, str]:
    """The "# skipped SOURCE: REASON" lines of a reading as {source: reason}."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"# skipped (\S+): (.+)", line.strip())
        if match:
            found[match.group(1)] = match.group(2)
    return found


def deltas(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """The counters present in both readings that went up, with their change (one that went
    backwards is no negative trouble: `backwards`)."""
    return {name: after[name] - before[name] for name in sorted(after)
            if name in before and after[name] > before[name]}


def backwards(before: Mapping[str, int], after: Mapping[str, int]) -> list[str]:
    """"NAME X->Y" of the counters lower after the job than before: reset (a driver reload,
    `perfquery -R`, a port that re-trained) or wrapped (a 32-bit counter), so their change during
    the job is unknown. Said with the readings, never counted as a change."""
    return [f"{name} {before[name]}->{after[name]}" for name in sorted(after)
            if name in before and after[name] < before[name]]


def trouble(moved: Mapping[str, int]) -> dict[str, int]:
    """The moved counters that tell of trouble (TROUBLE), not of traffic."""
    return {name: change for name, change in moved.items()
            if TROUBLE.search(name.rsplit("/", 1)[-1])}


def describe(moved: Mapping[str, int]) -> str:
    """One line: "tc lo tbf-835e dropped +5, tc lo tbf-835e overlimits +5" ("" for none)."""
    # a "|" (legal in an interface's name) would split the perflog's column
    return ", ".join(f"{name.replace('/', ' ').replace('|', '?')} {change:+d}"
                     for name, change in moved.items())


@dataclass
class JobReadings:
    """What the readings of one job say."""
    #: the troubled counters that moved, as one line ("" for none)
    trouble: str
    #: every counter that moved, "NODE/SOURCE/NAME": change
    moved: dict[str, int]
    #: what was not read, or read badly, and why: "node1 infiniband: no ..., node2: no reading
    #: after the job, node1: net/eth1 (23 counters) gone during the job, node2: unreadable
    #: net/eth0/rx_errors=-5, node1: net/eth0/rx_errors 7->0 went backwards during the job
    #: (reset or wrapped: change unknown)"
    not_read: str


def read_job(stagedir: str) -> JobReadings:
    """The job's readings in `stagedir`, node by node; a node read before and not after (a
    job that failed before its last line) is named in `not_read`."""
    moved, missing = {}, []
    before_files = sorted(glob.glob(os.path.join(glob.escape(stagedir),
                                                 BEFORE.replace("%n", "*"))))
    prefix, suffix = BEFORE.split("%n")
    for before_file in before_files:
        node = os.path.basename(before_file)[len(prefix):-len(suffix)]
        try:
            with open(before_file) as text:
                before_text = text.read()
            with open(os.path.join(stagedir, AFTER.replace("%n", node))) as text:
                after_text = text.read()
        except OSError:
            missing.append(f"{node}: no reading after the job")
            continue
        before, after = parse(before_text), parse(after_text)
        moved.update({f"{node}/{name}": change
                      for name, change in deltas(before, after).items()})
        missing += [f"{node} {source}: {reason}"
                    for source, reason in skipped(before_text).items()]
        # A device that went away or came up during the job is evidence, not noise: named;
        # what came up counting trouble counts as moved by its whole value (99,999 drops on a
        # link that came up mid-job).
        reset = backwards(before, after)
        if reset:
            missing.append(f"{node}: {', '.join(reset)} went backwards during the job (reset or "
                           f"wrapped: change unknown)")
        gone = sorted(set(before) - set(after))
        new = sorted(set(after) - set(before))
        if gone:
            missing.append(f"{node}: {devices(gone)} gone during the job")
        if new:
            missing.append(f"{node}: {devices(new)} appeared during the job")
            moved.update({f"{node}/{name}": after[name] for name in new if after[name]})
        bad = sorted(set(unreadable(before_text)) | set(unreadable(after_text)))
        if bad:
            missing.append(f"{node}: unreadable {', '.join(bad)}")
    if not before_files:
        missing.append("no reading before the job")
    return JobReadings(describe(trouble(moved)), moved, ", ".join(missing))


#: The counters of a port that count its link going down during a job (read-counters): the
#: kernel's carrier changes of an interface (a down and an up are 2), an InfiniBand port's
#: link downs and recoveries from errors (the port re-trained).
_FLAP_COUNTERS = re.compile(r"(?P<node>[^/]+)/(?P<port>net/[^/]+|infiniband/[^/]+/\d+)/"
                            r"(?P<counter>carrier_changes|link_downed|link_error_recovery)")


def flapped(moved: Mapping[str, int], promise: Contract | None, said: str = "") -> list[str]:
    """A link that went down during the job, whatever its state before and after (a flap the
    before-and-after comparison cannot see), one line each from the job's moved counters
    (`judge`'s moved: "NODE/SOURCE/NAME": change): "LINK FLAPPED n2 net/eth0: down 1
    time(s) during the job (carrier_changes +2)". The contract's ports, or every link where
    none is declared; a port the job's link findings (`said`) name already is left to them."""
    from fabricsuite.data.links import NOT_A_LINK

    found = []
    for name, change in sorted(moved.items()):
        match = _FLAP_COUNTERS.fullmatch(name)
        if not match or change <= 0 or NOT_A_LINK.fullmatch(match["port"]):
            continue
        port = match["port"]
        if promise is not None and not re.fullmatch(promise.ports, port):
            continue
        label = promise.port_label(port) if promise else port
        if f"{match['node']} {label}" in said:
            continue  # down after the job too: LINK CHANGED or DEGRADED says it
        if match["counter"] == "carrier_changes":
            how = f"down {max(change // 2, 1)} time(s)"
        elif match["counter"] == "link_downed":
            how = f"down {change} time(s)"
        else:
            how = f"re-trained after errors {change} time(s)"
        found.append(f"LINK FLAPPED {match['node']} {label}: {how} during the job "
                     f"({match['counter']} +{change})")
    return found
