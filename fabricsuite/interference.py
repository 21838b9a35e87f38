"""Was the node quiet? How much of a run its ranks spent waiting for their CPUs, and what took
them.

netbench records, per rank, the fraction of the run (from before its first timed loop to after
the last) that the rank was runnable but not running: the growth of the second field of
/proc/self/schedstat, the run-queue wait, over the elapsed time (`cpu_wait_fraction`). A rank
bound to its own core on a quiet node waits next to nothing; one whose core is shared with a
busy process waits for about the other's share of it. Where the wait is above 1 % it also names
the processes runnable on its CPUs at the end (`cpu_others`, "name(pid),...", from /proc, as far
as this user can see them). Steal time of a virtual machine's CPU shows as neither: it is not
counted here.

A check whose measuring ranks waited more than DISTURBED_FROM of the run records why in its
`interference` variable; `fabricsuite.session` then calls a failed case interference, never a
regression (exit 2, "something broken": the node, not the fabric), and a passed one "passed while
disturbed".
"""

from __future__ import annotations

from typing import Any

#: A run whose measuring rank waited longer than this fraction of it for its CPU was disturbed.
#: Measured on this VM (bench/cpu_wait.py, docs/measurements.md "CPU wait of a run"): 10 quiet
#: ping-pong runs waited 0.03-1.0 % of the run (median 0.4 %); 10 with a busy loop on rank 1's
#: core 49.9-50.4 %.
DISTURBED_FROM = 0.05


def worst_wait(ranks: list[dict[str, Any]]) -> tuple[float | None, dict[str, Any] | None]:
    """The largest CPU wait fraction of `ranks` and the rank with it (None: none recorded)."""
    known = [r for r in ranks if isinstance(r.get("cpu_wait_fraction"), (int, float))]
    if not known:
        return None, None
    worst = max(known, key=lambda r: r["cpu_wait_fraction"])
    return float(worst["cpu_wait_fraction"]), worst


def describe(ranks: list[dict[str, Any]], disturbed_from: float = DISTURBED_FROM) -> str:
    """"" for a quiet run; else one line naming the rank, its wait and what was runnable on
    its CPUs: "rank 1 (vm, CPU 1) waited 48% of the run for its CPU; runnable there: yes(4321)"."""
    fraction, rank = worst_wait(ranks)
    if fraction is None or rank is None or fraction <= disturbed_from:
        return ""
    cpus = ",".join(str(c) for c in rank.get("cpus_bound") or []) or "?"
    line = (f"rank {rank.get('rank')} ({rank.get('host')}, CPU {cpus}) waited "
            f"{100 * fraction:.0f}% of the run for its CPU")
    others = rank.get("cpu_others")
    return line + (f"; runnable there: {others}" if others else
                   "; no other process visible there")
