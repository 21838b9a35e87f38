"""What a check that runs rail by rail shares (checks/rails.py, checks/fabric_map.py): the
`rail` parameter's values from the partitions of the selected system, and keeping one case's
messages on its rail, or striped over every rail, through each MPI's own NIC selection
(fabricsuite.data.nics.mpi_devices)."""

from __future__ import annotations

import shlex
from dataclasses import replace

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable
from reframe.core.exceptions import EnvironError, ReframeFatalError
from reframe.core.runtime import runtime

from fabricsuite import REPO_ROOT
from fabricsuite.base.metrics import is_finite_number
from fabricsuite.data.links import Contract, ContractError, contract
from fabricsuite.data.netbench_result import NetbenchResult
from fabricsuite.data.nics import mpi_devices

#: Runs a rank on the cores hwloc places its rail's NIC near (config/launchers/near-nic).
NEAR_NIC = REPO_ROOT / "config" / "launchers" / "near-nic"
#: Runs one launch per rail, every rail at once (config/launchers/rails-at-once).
RAILS_AT_ONCE = REPO_ROOT / "config" / "launchers" / "rails-at-once"
#: The `rail` value of a case that runs every rail at once in one job.
EVERY = "every"

#: The `rail` value of a case striped over every rail of the node.
STRIPED = "striped"


def declared_rails(striped: bool = True) -> list[str]:
    """The `rail` parameter's values: rail1..railK for the most rails a partition of the
    selected system declares (extras.fabric.links.rails), and "striped" where asked; none
    where no partition declares rails (a single-rail system has no case of a rail check,
    rather than one skipped case per rail)."""
    try:
        partitions = runtime().system.partitions
    except (ReframeFatalError, AttributeError):  # no session (a module imported alone)
        return []
    most = 0
    for partition in partitions:
        try:
            promise = contract(partition.extras)
        except ContractError:
            continue  # refused, in one line, by every check's setup on that partition
        most = max(most, len(promise.rails) if promise else 0)
    if most < 2:
        return []
    return [f"rail{k}" for k in range(1, most + 1)] + ([STRIPED] if striped else [])


def env_stripes(environ, default: int) -> int:
    """Over how many rails the environment's MPI, as configured, stripes one rank's messages
    (its `extras.striped_over`; `default` where it says nothing): an MPI that never stripes
    over a fabric (UCX over TCP, openucx/ucx#9763) declares 1."""
    value = (getattr(environ, "extras", None) or {}).get("striped_over", default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EnvironError(f"environment {getattr(environ, 'name', '?')}: extras.striped_over "
                           f"{value!r} is not a whole number of rails >= 1 (1: the MPI keeps a "
                           f"rank on one rail)")
    return value


def rail_number(rail: str) -> int | None:
    """2 for "rail2"; None for "striped"."""
    return int(rail.removeprefix("rail")) if rail.startswith("rail") else None


class RailBound(rfm.RegressionTestPlugin):
    """A mixin of a netbench check with a `rail` parameter (declared_rails): at setup its
    job's messages are kept on that rail's port (or striped over every rail) on every node,
    and its line fractions divide by what that path carries. On one rail, each rank runs on
    the cores near that rail's NIC (config/launchers/near-nic: hwloc's locality of the NIC,
    after the launcher's binding; where hwloc cannot place it, where the launcher put it)."""

    #: the port whose NIC's cores the ranks run on ("net/eth1"); "" striped or unplaced
    near_nic = variable(str, value="", loggable=True)

    @run_after("setup")
    def keep_to_the_rail(self):
        partition = self.current_partition
        promise = contract(partition.extras)
        rails = promise.rails if promise else ()
        self.skip_if(len(rails) < 2, f"{partition.fullname} declares no rails "
                                     f"(extras.fabric.links.rails)")
        k = rail_number(self.rail)
        if k is None:
            stripes = env_stripes(self.current_environ, len(rails))
            self.skip_if(stripes < 2, f"{self.current_environ.name} carries one rank's "
                                      f"messages on one rail as configured (its environment's "
                                      f"extras.striped_over): no striped case")
            ports = rails[:stripes]
        else:
            self.skip_if(k > len(rails), f"{partition.fullname} declares {len(rails)} rails; "
                                         f"{self.rail} needs {k}")
            ports = (rails[k - 1],)
            self.near_nic = rails[k - 1]
        self.env_vars = {**self.env_vars, **mpi_devices(ports)}

    @run_before("run")
    def run_near_the_nic(self):
        # Last before the job script: every other hook has set netbench's command line. A
        # striped case spans several NICs, near no one of them.
        if self.near_nic:
            self.executable_opts = [shlex.quote(self.near_nic), self.executable,
                                    *self.executable_opts]
            self.executable = shlex.quote(str(NEAR_NIC))

    def path_rails(self, promise: Contract) -> int:
        if self.rail == STRIPED:
            return env_stripes(self.current_environ, promise.count)
        return 1

    def rail_label(self) -> str:
        """"rail 2", or "striped over every rail", as findings name it."""
        k = rail_number(self.rail)
        return f"rail {k}" if k is not None else "striped over every rail"


def on_rail(line: str, label: str) -> str:
    """A finding of a map as said for its rail ("rail 2"): "BELOW PROMISE rail 2: ...",
    "faulty node n3: ... (rail 2)"; other lines as they are."""
    if line.startswith("BELOW PROMISE "):
        return f"BELOW PROMISE {label}: {line[len('BELOW PROMISE '):]}"
    if line.startswith("faulty "):
        return f"{line} ({label})"
    return line


def at_once_words(rails: tuple[str, ...] | list[str], launcher: list[str]) -> list[str]:
    """rails-at-once's arguments before the program: each rail's port and the environment that
    keeps a launch on it (mpi_devices), then the launcher's words."""
    words = []
    for port in rails:
        words += ["--rail", port, *(f"{k}={v}" for k, v in mpi_devices((port,)).items())]
    return [*words, "--", *launcher, "--"]


#: How each summary figure of a map is taken over the rails of an at-once job: its slowest
#: rail's figure, or the sum of a count.
WORST_OF_RAILS = {"bandwidth_median_MBps": min, "bandwidth_min_MBps": min,
                  "latency_median_us": max, "latency_max_us": max, "pairs": sum,
                  "pairs_total": sum, "flagged_pairs": sum, "suspect_pairs": sum,
                  "bad_pairs": sum, "cleared_pairs": sum, "bad_nodes": sum}


def worst_of_rails(results: list[NetbenchResult]) -> NetbenchResult:
    """One result of the maps of several rails measured at once (rail k the k-th): each
    summary figure its slowest rail's, each count the rails' sum (WORST_OF_RAILS; any other
    figure rail 1's), every rank, pair and warning of every rail, a pair and a bad node with
    its `rail`."""
    first = results[0]
    summary = dict(first.summary)
    for column, pick in WORST_OF_RAILS.items():
        values = [r.summary.get(column) for r in results]
        if all(is_finite_number(v) for v in values):
            summary[column] = pick(values)
    tables = {name: [dict(row, rail=k) for k, r in enumerate(results, 1)
                     for row in r.tables.get(name) or []]
              for name in dict.fromkeys(n for r in results for n in r.tables)}
    return replace(
        first, ranks=[rank for r in results for rank in r.ranks], tables=tables,
        summary=summary, warnings=[f"rail {k}: {w}" for k, r in enumerate(results, 1)
                                   for w in r.warnings],
        unreliable=[dict(u, reason=f"rail {k}: {u.get('reason', '')}")
                    for k, r in enumerate(results, 1) for u in r.unreliable],
        status=next((r.status for r in results if r.status != "ok"), "ok"),
        source=", ".join(r.source for r in results))
