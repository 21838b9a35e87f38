"""What a check that runs rail by rail shares (checks/rails.py, checks/fabric_map.py): the
`rail` parameter's values from the partitions of the selected system, and keeping one case's
messages on its rail, or striped over every rail, through each MPI's own NIC selection
(fabricsuite.data.nics.mpi_devices)."""

from __future__ import annotations

import shlex

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable
from reframe.core.exceptions import EnvironError, ReframeFatalError
from reframe.core.runtime import runtime

from fabricsuite import REPO_ROOT
from fabricsuite.data.links import Contract, ContractError, contract
from fabricsuite.data.nics import mpi_devices

#: Runs a rank on the cores hwloc places its rail's NIC near (config/launchers/near-nic).
NEAR_NIC = REPO_ROOT / "config" / "launchers" / "near-nic"

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
