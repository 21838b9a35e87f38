"""Was the node quiet? How much of a run its ranks spent waiting for their CPUs, and what took
them.

netbench records, per rank, the fraction of the run (from before its first timed loop to after
the last) that the rank was runnable but not running: the growth of the second field of
/proc/self/schedstat, the run-queue wait, over the elapsed time (`cpu_wait_fraction`). A rank
bound to its own core on a quiet node waits next to nothing; one whose core is shared with a
busy process waits for about the other's share of it. Where the wait is above 1 % it also names
the processes that last ran on its CPUs and took at least 1 % of the run there in CPU time
(`cpu_others`, "name(pid):N%,...", from /proc before and after the run, as far as this user can
see them; kernel threads in brackets, "[ksoftirqd/1](22):12%"). Steal time of a
virtual machine's CPU shows as neither: it is not counted here.

A check whose rank waited more than DISTURBED_FROM of the run records why in its `interference`
variable, when a program (not a kernel thread) took more than DISTURBED_FROM of it on its CPU,
or when more than DISTURBED_FROM of the wait is explained by nothing seen: short-lived processes
(a compiler's passes, a shell loop's commands) run and exit between netbench's two looks at
/proc, so a run that waited 37 % with 5 % attributed was disturbed all the same. A wait for
kernel threads alone is the transport's own work (on the emulated cluster: ksoftirqd moving the
shaped link's packets, 12 % of a rank's run at 900 Mbit), so is a wait for the job's own ranks
placed on shared cores on purpose, and a daemon that happened to run for a moment is not the
cause of a 5 % wait: none of them is interference.
`fabricsuite.commands.session` calls a failed case that has one interference, never a
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


#: The suite's own processes beside the ranks: ReFrame polling its jobs, the launcher and its
#: daemons. They share a small machine's cores with the ranks by design and are no neighbour
#: (issue 67: a 6 % wait for ReFrame itself once turned a confirmed regression into
#: "interference").
SUITE_PROCESSES = ("reframe", "srun", "slurmstepd", "mpirun", "mpiexec", "mpiexec.hydra",
                   "orterun", "prterun", "orted", "prted", "hydra_pmi_proxy")


def worst_wait(ranks: list[dict[str, Any]]) -> tuple[float | None, dict[str, Any] | None]:
    """The largest CPU wait fraction of `ranks` and the rank with it (None: none recorded)."""
    known = [r for r in ranks if isinstance(r.get("cpu_wait_fraction"), (int, float))]
    if not known:
        return None, None
    worst = max(known, key=lambda r: r["cpu_wait_fraction"])
    return float(worst["cpu_wait_fraction"]), worst


def programs(others: str | None, disturbed_from: float = DISTURBED_FROM,
             own: tuple[str, ...] = ()) -> list[str]:
    """The programs among a rank's `cpu_others` ("name(pid):N%") that took more than
    `disturbed_from` of the run on its CPU; kernel threads ("[name](pid):N%") and the programs
    named in `own` left out."""
    taken = []
    for entry in (others or "").split(","):
        name, _, share = entry.rpartition(":")
        if name.split("(", 1)[0] in own:
            continue
        if name and not name.startswith("[") and share.endswith("%"):
            try:
                if float(share[:-1]) / 100 > disturbed_from:
                    taken.append(entry)
            except ValueError:
                continue
    return taken


def _shares(others: str | None) -> list[tuple[str, float]]:
    """(entry, share of the run) of each process in a rank's `cpu_others`."""
    found = []
    for entry in (others or "").split(","):
        name, _, share = entry.rpartition(":")
        if name and share.endswith("%"):
            try:
                found.append((entry, float(share[:-1]) / 100))
            except ValueError:
                continue
    return found


def unexplained(rank: dict[str, Any]) -> float:
    """The part of a rank's CPU wait that no process it saw explains (short-lived processes,
    gone before its second look), net of what every process it saw took."""
    wait = rank.get("cpu_wait_fraction")
    if not isinstance(wait, (int, float)):
        return 0.0
    return max(0.0, float(wait) - sum(share for _entry, share in _shares(rank.get("cpu_others"))))


def _own_wait(rank: dict[str, Any], own: tuple[str, ...]) -> float:
    """The share of a rank's run taken by the kernel's threads and the programs in `own`."""
    return sum(share for entry, share in _shares(rank.get("cpu_others"))
               if entry.startswith("[") or entry.split("(", 1)[0] in own)


def _disturbed(rank: dict[str, Any], disturbed_from: float, own: tuple[str, ...]) -> bool:
    wait = rank.get("cpu_wait_fraction")
    if not isinstance(wait, (int, float)) or wait <= disturbed_from:
        return False
    return (bool(programs(rank.get("cpu_others"), disturbed_from, own))
            or (unexplained(rank) > disturbed_from
                and wait - _own_wait(rank, own) > disturbed_from))


def describe(ranks: list[dict[str, Any]], disturbed_from: float = DISTURBED_FROM,
             own: tuple[str, ...] = ()) -> str:
    """"" for a quiet run; else one line naming the rank, its wait and the programs that took its
    CPU: "rank 1 (vm, CPU 1) waited 48% of the run for its CPU; taken by: yes(4321):49%", or,
    for a wait no process seen explains, "...; taken by: cc1(77):5%, processes gone before the
    run ended (32%)". A rank that waited for kernel threads only, for programs that took little
    of its CPU (a daemon's moment), or for the programs in `own` (the job's own ranks, placed on
    shared cores on purpose) or the suite's own (SUITE_PROCESSES), is not disturbed."""
    own = (*own, *SUITE_PROCESSES)
    disturbed = [r for r in ranks if _disturbed(r, disturbed_from, own)]
    if not disturbed:
        return ""
    rank = max(disturbed, key=lambda r: r["cpu_wait_fraction"])
    cpus = ",".join(str(c) for c in rank.get("cpus_bound") or []) or "?"
    takers = programs(rank.get("cpu_others"), disturbed_from, own)
    gone = unexplained(rank)
    if gone > disturbed_from:
        takers.append(f"processes gone before the run ended ({100 * gone:.0f}%)")
    return (f"rank {rank.get('rank')} ({rank.get('host')}, CPU {cpus}) waited "
            f"{100 * rank['cpu_wait_fraction']:.0f}% of the run for its CPU; taken by: "
            f"{', '.join(takers)}")
