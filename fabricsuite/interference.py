"""Was the node quiet? How much of a run its ranks spent waiting for their CPUs, and what took
them.

netbench records, per rank, the fraction of the run (from before its first timed loop to after
the last) that the rank was runnable but not running: the growth of the second field of
/proc/self/schedstat, the run-queue wait, over the elapsed time (`cpu_wait_fraction`). A rank
bound to its own core on a quiet node waits next to nothing; one whose core is shared with a
busy process waits for about the other's share of it. Where the wait is above 1 % it also names
the processes runnable on its CPUs at the end (`cpu_others`, "name(pid),...", from /proc, as far
as this user can see them; kernel threads in brackets, "[ksoftirqd/1](22)"). Steal time of a
virtual machine's CPU shows as neither: it is not counted here.

A check whose measuring rank waited more than DISTURBED_FROM of the run while a program (not a
kernel thread) was runnable on its CPU records why in its `interference` variable; a wait for
kernel threads alone is the transport's own work (on the emulated cluster: ksoftirqd moving the
shaped link's packets, 12 % of a rank's run at 900 Mbit) and is not interference.
`fabricsuite.session` calls a failed case with an `interference` interference, never a
regression (exit 2, "something broken": the node, not the fabric), and a passed one "passed
while disturbed".
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


def programs(others: str | None) -> list[str]:
    """The programs among a rank's `cpu_others`, kernel threads ("[name](pid)") left out."""
    return [entry for entry in (others or "").split(",") if entry and not entry.startswith("[")]


def describe(ranks: list[dict[str, Any]], disturbed_from: float = DISTURBED_FROM) -> str:
    """"" for a quiet run; else one line naming the rank, its wait and the programs runnable on
    its CPUs: "rank 1 (vm, CPU 1) waited 48% of the run for its CPU; runnable there: yes(4321)".
    A rank that waited for kernel threads only (or for nothing it can see) is not disturbed."""
    disturbed = [r for r in ranks if isinstance(r.get("cpu_wait_fraction"), (int, float))
                 and r["cpu_wait_fraction"] > disturbed_from and programs(r.get("cpu_others"))]
    if not disturbed:
        return ""
    rank = max(disturbed, key=lambda r: r["cpu_wait_fraction"])
    cpus = ",".join(str(c) for c in rank.get("cpus_bound") or []) or "?"
    return (f"rank {rank.get('rank')} ({rank.get('host')}, CPU {cpus}) waited "
            f"{100 * rank['cpu_wait_fraction']:.0f}% of the run for its CPU; runnable there: "
            f"{', '.join(programs(rank.get('cpu_others')))}")
