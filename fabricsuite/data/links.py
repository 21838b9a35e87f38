"""The fabric's links as each node's operating system reports them, and the partition's promise
of them (its contract): a link that is down, narrower or slower than declared, or unlike its
peers, is a finding before any benchmark, "LINK DEGRADED node2 infiniband/mlx5_0/1: 2X 50 Gb/s,
declared 4X 100 Gb/s".

Read by config/launchers/read-counters (source `links`, no privileges) beside the counters,
before and after every job, on the nodes the partition reads (fabricsuite.data.counters), and on
every node of the partition by the FabricLinks check (checks/links.py):

- InfiniBand and RoCE ports, /sys/class/infiniband/<hca>/ports/<n>/: rate ("100 Gb/sec (4X
  EDR)": the active width times the active speed, drivers/infiniband/core/sysfs.c), state ("4:
  ACTIVE"), phys_state ("5: LinkUp"), link_layer (InfiniBand, Ethernet);
- Slingshot NICs (HPE Cassini), /sys/class/cxi/<cxi>/device/properties/: link (1 where the
  link runs, 0 where it does not) and speed (Mb/s, the mode the link trained at: 200000, or
  100000 for a link that came up a speed lower), as the cxi driver shows them (cass_sysfs.c);
  the same link's Ethernet interface (hsn0) is read under net/ too;
- network interfaces, /sys/class/net/<if>/: speed (Mb/s; -1 or unreadable where the driver
  does not know it, a virtual NIC), duplex, operstate, mtu; and the rate of a tbf shaper at the
  interface's root (`tc qdisc show`), which is the emulated cluster's line rate.

A port is named "infiniband/<hca>/<n>", "cxi/<cxi>" or "net/<if>". The contract is the partition's
`extras["fabric"]["links"]`: which ports carry the fabric (a regular expression on the names),
how many per node, their rate in Gb/s and, for InfiniBand, their width (lanes):

    "fabric": {"links": {"ports": "infiniband/mlx5_[0-9]+/1", "count": 1,
                         "rate_gbps": 400, "width": 4}}
"""

from __future__ import annotations

import glob
import math
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from fabricsuite.base.metrics import HIGHER, LOWER, Figure, PerfSpec, case_where, perf_variable
from fabricsuite.data.counters import LINK_PREFIX as PREFIX
from fabricsuite.data.nics import PcieLink, pcie_link

#: A port runs below its declared rate when it is this fraction or more under it (a rate is a
#: nominal figure the OS reports, so any shortfall but rounding is a finding).
RATE_SLACK = 0.01
#: The states that are up (InfiniBand's state, an interface's operstate); "unknown" is what a
#: virtual interface without carrier detection reports while it carries traffic.
UP_STATES = {"ACTIVE", "up", "unknown"}

_IB_RATE = re.compile(r"(?P<gbps>\d+(?:\.\d+)?) Gb/sec"
                      r"(?: \((?P<width>\d+)X(?: (?P<speed>\S+))?\))?")
# tc's units: "bit" bits per second, "bps" bytes per second (tc(8), "RATES")
_TC_RATE = re.compile(r"(?P<value>\d+(?:\.\d+)?)(?P<unit>[KMGT]?)(?P<per>bit|bps)", re.I)
_TC_UNITS = {"": 1e-9, "K": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}


#: A promise's bandwidth fraction where the partition declares none: an MPI message of 1 MiB
#: reaches 0.8-0.98 of a healthy link's rate (the emulated 1 Gbit links: 0.98 Open MPI, 0.82-0.91
#: MPICH, docs/measurements.md; InfiniBand NDR about 0.9 at 1 MiB), and a link at half its rate
#: reaches under 0.5, so 0.7 fails the half-rate fabric and passes every healthy one.
DEFAULT_BANDWIDTH_FRACTION = 0.7
#: What a promise may declare, with its default (None: judged only where declared): the
#: bandwidth at 1 MiB and a collective's bus bandwidth as fractions of the line rate, and the
#: latency at 8 B between two nodes in microseconds (the vendor's or the purchase contract's).
PROMISES = {"bandwidth_fraction": DEFAULT_BANDWIDTH_FRACTION, "busbw_fraction": None,
            "latency_8B_us": None}
#: The unit of a figure over the declared line rate (higher is better).
LINE_FRACTION = "line_fraction"
#: The unit of a latency over the promised one (lower is better; above 1 misses the promise).
PROMISE_MULTIPLE = "x_promise"
#: The units of the figures the promise judges, never a machine's own history.
PROMISE_UNITS = (LINE_FRACTION, PROMISE_MULTIPLE)


@dataclass(frozen=True)
class Port:
    """One link of a node as its operating system reports it."""
    #: "infiniband/mlx5_0/1", "cxi/cxi0" or "net/eth0"
    name: str
    #: True where the port is up (ACTIVE, operstate up)
    up: bool
    #: the rate the port runs at, Gb/s (a shaper's, where one is at the root), None unknown
    rate_gbps: float | None
    #: the active width in lanes (InfiniBand: 1, 2, 4, 8, 12), None where not reported
    width: int | None = None
    #: what the OS said, for a person: "4X EDR, ACTIVE, LinkUp" or "operstate up, shaped by tbf"
    detail: str = ""
    #: a port that is not up and not simply down, as its OS says it: "INIT, LinkUp" (trained,
    #: but no subnet manager has made it active), "DOWN, Polling"; "" for up or plain down
    not_up_as: str = ""
    #: the PCIe link of the port's NIC (its host side), None where it has none (a virtual NIC)
    pcie: PcieLink | None = None
    #: the NUMA node the NIC hangs from and that node's CPUs ("0-55,112-167"), as the kernel
    #: reports them under its PCI device; None and "" where unknown
    numa_node: int | None = None
    local_cpus: str = ""

    def near(self) -> str:
        """"NUMA 0 (CPUs 0-55,112-167)", "" where unknown."""
        if self.numa_node is None:
            return ""
        return f"NUMA {self.numa_node}" + (f" (CPUs {self.local_cpus})" if self.local_cpus else "")

    def describe(self) -> str:
        """"4X 100 Gb/s", "1 Gb/s", "down", "INIT, LinkUp", "rate unknown"."""
        if not self.up:
            return self.not_up_as or "down"
        if self.rate_gbps is None:
            return "rate unknown"
        return (f"{self.width}X " if self.width else "") + f"{_gbps(self.rate_gbps)} Gb/s"


@dataclass(frozen=True)
class Contract:
    """What a partition promises of each node's links."""
    #: which ports carry the fabric (a regular expression matched against the whole name)
    ports: str
    #: how many of them each node has
    count: int
    #: their rate, Gb/s
    rate_gbps: float
    #: their width in lanes (InfiniBand), None: not declared
    width: int | None = None
    #: the least fraction of the line rate an inter-node bandwidth figure reaches (the vendor's
    #: figure where the partition declares one, `extras["fabric"]["promise"]`)
    bandwidth_fraction: float = DEFAULT_BANDWIDTH_FRACTION
    #: the least fraction of it a collective's bus bandwidth reaches, one rank per node (no
    #: default: an MPI's collectives differ too much; declared, or not judged)
    busbw_fraction: float | None = None
    #: the most a ping-pong's latency at 8 B between two nodes may take, microseconds (no
    #: default: declared from the vendor's figure or the contract, or not judged)
    latency_8B_us: float | None = None
    #: the node's rails in order, one port name each (rail k is the k-th: "net/eth1",
    #: "infiniband/mlx5_1/1", "cxi/cxi1"), each cabled to its own switch plane; () where the
    #: partition names none
    rails: tuple[str, ...] = ()
    #: over how many of its rails one rank's messages go, as the partition's MPI is configured
    #: (UCX_MAX_RNDV_RAILS, Open MPI's striping over its TCP interfaces); 1: one rail
    striped_over: int = 1

    def describe(self) -> str:
        return (f"{self.width}X " if self.width else "") + f"{_gbps(self.rate_gbps)} Gb/s"

    def promise_for(self, figure: Promised) -> float | None:
        """The declared figure a promised figure is judged by (None: not declared)."""
        return getattr(self, figure.promise)

    @property
    def line_rate_gbps(self) -> float:
        """What one rank's path between two nodes can carry: the ports its messages are
        striped over (striped_over of count), never the node's sum where a rank uses one
        rail of several."""
        return self.path_rate_gbps(self.striped_over)

    def path_rate_gbps(self, rails: int) -> float:
        """What a path over `rails` of the node's ports can carry, Gb/s."""
        return min(rails, self.count) * self.rate_gbps

    def rail_of(self, port: str) -> int | None:
        """The rail (1, 2, ...) a port is, None where it is no declared rail."""
        return self.rails.index(port) + 1 if port in self.rails else None

    def port_label(self, port: str) -> str:
        """A port's name with its rail where it is one: "net/eth1 (rail 2)"."""
        rail = self.rail_of(port)
        return port if rail is None else f"{port} (rail {rail})"




def _gbps(value: float) -> str:
    return f"{value:g}"


class ContractError(ValueError):
    """A partition's `fabric` declaration that cannot be used (one line naming the fix)."""


def contract(extras: Mapping | None) -> Contract | None:
    """The partition's declared links (`extras["fabric"]["links"]`), None where it declares
    none; ContractError (one line naming the fix) for a declaration that cannot be used."""
    fabric = (extras or {}).get("fabric")
    if fabric is None:
        return None
    if not isinstance(fabric, Mapping) or set(fabric) - {"links", "promise"}:
        raise ContractError(f'extras.fabric: expected {{"links": {{...}}, "promise": {{...}}}}, '
                            f'got {fabric!r}')
    links = fabric.get("links")
    if links is None:
        return None
    fix = ('extras.fabric.links: expected {"ports": "REGEX", "count": N, "rate_gbps": G[, '
           '"width": LANES]} or {"rails": ["PORT", ...], "rate_gbps": G[, "width": LANES, '
           '"striped_over": S]}')
    if not isinstance(links, Mapping) or set(links) - LINK_KEYS:
        raise ContractError(f"{fix}, got {links!r}")
    rails = _rails(links.get("rails"), fix)
    ports = links.get("ports", "|".join(re.escape(r) for r in rails) if rails else None)
    count = links.get("count", len(rails) or 1)
    rate, width = links.get("rate_gbps"), links.get("width")
    if not isinstance(ports, str) or not ports:
        raise ContractError(f"{fix}: ports is missing or not a string")
    try:
        re.compile(ports)
    except re.error as err:
        raise ContractError(f"{fix}: ports {ports!r} is no regular expression ({err})") from None
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ContractError(f"{fix}: count {count!r} is not a whole number >= 1")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0 \
            or rate != rate or rate == float("inf"):
        raise ContractError(f"{fix}: rate_gbps {rate!r} is not a rate above 0 (Gb/s)")
    low, high = RATE_RANGE_GBPS
    if not low <= rate <= high:
        raise ContractError(f"{fix}: rate_gbps {rate!r} is no port's rate in Gb/s (a fabric "
                            f"port runs {low:g} to {high:g} Gb/s: 200 for HDR, 400 for NDR; "
                            f"was it given in Mb/s?)")
    if width is not None and (isinstance(width, bool) or width not in (1, 2, 4, 8, 12)):
        raise ContractError(f"{fix}: width {width!r} is none of 1, 2, 4, 8, 12 (lanes)")
    if rails and count != len(rails):
        raise ContractError(f"{fix}: count {count} differs from the {len(rails)} rails named "
                            f"(leave count out: it is the number of rails)")
    unmatched = [r for r in rails if not re.fullmatch(ports, r)]
    if unmatched:
        raise ContractError(f"{fix}: rail(s) {', '.join(unmatched)} not matched by ports "
                            f"{ports!r} (leave ports out: the rails name them)")
    striped_over = links.get("striped_over", 1)
    if isinstance(striped_over, bool) or not isinstance(striped_over, int) \
            or not 1 <= striped_over <= count:
        raise ContractError(f"{fix}: striped_over {striped_over!r} is not a whole number of "
                            f"rails from 1 to count ({count}): over how many rails one rank's "
                            f"messages go as the MPI is configured")
    promise = fabric.get("promise") or {}
    if not isinstance(promise, Mapping) or set(promise) - set(PROMISES):
        raise ContractError(f'extras.fabric.promise: expected {{"bandwidth_fraction": F, '
                            f'"busbw_fraction": F, "latency_8B_us": US}} (the vendor\'s '
                            f'bandwidth at 1 MiB and a collective\'s bus bandwidth over the '
                            f'line rate, its latency at 8 B), got {promise!r}')
    promised = {}
    for key, default in PROMISES.items():
        value = promise.get(key, default)
        if value is None:
            continue
        number = not isinstance(value, bool) and isinstance(value, (int, float))
        if key.endswith("_us") and not (number and 0 < value < math.inf):
            raise ContractError(f"extras.fabric.promise: {key} {value!r} is not a latency "
                                f"above 0 (microseconds)")
        if key.endswith("_fraction") and not (number and 0 < value <= 1):
            raise ContractError(f"extras.fabric.promise: {key} {value!r} is not a fraction "
                                f"in (0, 1]")
        promised[key] = float(value)
    return Contract(ports, count, float(rate), width, **promised, rails=rails,
                    striped_over=striped_over)


#: The rates a port of a fabric runs at, Gb/s: from an emulated 10 Mbit link to beyond
#: XDR's 800 Gb/s and 1.6 Tb/s Ethernet; a figure outside is in another unit.
RATE_RANGE_GBPS = (0.01, 3200.0)
#: What `extras.fabric.links` may declare.
LINK_KEYS = {"ports", "count", "rate_gbps", "width", "rails", "striped_over"}
#: A port's name as read-counters writes it: "net/eth1", "cxi/cxi0", "infiniband/mlx5_0/1".
_PORT_NAME = re.compile(r"net/[^/\s]+|cxi/[^/\s]+|infiniband/[^/\s]+/\d+")


def _rails(rails: Any, fix: str) -> tuple[str, ...]:
    """The declared rails, validated: distinct port names, one a rail, in rail order."""
    if rails is None:
        return ()
    if isinstance(rails, str) or not isinstance(rails, (list, tuple)) or not rails:
        raise ContractError(f"{fix}: rails {rails!r} is not a list of port names")
    bad = [r for r in rails if not (isinstance(r, str) and _PORT_NAME.fullmatch(r))]
    if bad:
        raise ContractError(f"{fix}: rails: {bad[0]!r} is no port name (net/IF, "
                            f"infiniband/HCA/PORT or cxi/CXI, as read-counters names them)")
    if len(set(rails)) != len(rails):
        raise ContractError(f"{fix}: rails {list(rails)!r} names a port twice")
    return tuple(rails)


def tc_rate_gbps(text: str) -> float | None:
    """A rate as tc prints it ("1Gbit", "500Mbit", "64Kbit", "800bit") in Gb/s."""
    match = _TC_RATE.fullmatch(text.strip())
    if not match:
        return None
    bits = 8 if match.group("per").lower() == "bps" else 1
    return float(match.group("value")) * _TC_UNITS[match.group("unit").upper()] * bits


#: Interfaces that are no link: the kernel's ifb devices (intermediate functional blocks,
#: which only mirror another device's ingress for shaping), on every VM with tc's ingress set.
NOT_A_LINK = re.compile(r"net/ifb\d+")


def parse(text: str) -> dict[str, Port]:
    """The "link/..." lines of one reading (read-counters, source links) as {port name: Port};
    other lines, and interfaces that are no link (NOT_A_LINK), are skipped."""
    attributes: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        if not line.startswith(PREFIX):
            continue
        key, _, value = line.strip().partition(" ")
        parts = key[len(PREFIX):].split("/")
        if parts[0] == "infiniband" and len(parts) == 4:
            name = "/".join(parts[:3])
        elif parts[0] in ("net", "cxi") and len(parts) == 3:
            name = "/".join(parts[:2])
        else:
            continue
        if NOT_A_LINK.fullmatch(name):
            continue
        attributes.setdefault(name, {})[parts[-1]] = value.strip()
    return {name: _located(_port(name, values), values)
            for name, values in sorted(attributes.items())}


def _located(port: Port, values: Mapping[str, str]) -> Port:
    """The port with the cores its NIC is near (numa_node, local_cpulist), where reported."""
    node = values.get("numa_node", "").strip()
    if not re.fullmatch(r"\d+", node):  # -1: the firmware does not say
        return port
    return replace(port, numa_node=int(node), local_cpus=values.get("local_cpulist", "").strip())


def _mbps_as_gbps(speed: str) -> float | None:
    """A speed the kernel prints in Mb/s ("200000") in Gb/s; None for -1, 0 or no number."""
    return int(speed) / 1000 if re.fullmatch(r"\d+", speed) and int(speed) > 0 else None


def _port(name: str, values: Mapping[str, str]) -> Port:
    if name.startswith("infiniband/"):
        state = values.get("state", "").partition(":")[2].strip() or values.get("state", "")
        physical = (values.get("phys_state", "").partition(":")[2].strip()
                    or values.get("phys_state", ""))
        match = _IB_RATE.match(values.get("rate", ""))
        rate = float(match.group("gbps")) if match else None
        width = int(match.group("width")) if match and match.group("width") else None
        speed = match.group("speed") if match else None
        up = state == "ACTIVE" and physical in ("LinkUp", "")
        detail = ", ".join(v for v in (f"{width}X {speed}" if width and speed else "", state,
                                       physical, values.get("link_layer", "")) if v)
        # DOWN and Disabled is a port taken down; any other pair says how far it came
        not_up_as = "" if up or (state, physical) in (("DOWN", "Disabled"), ("DOWN", "")) \
            else ", ".join(v for v in (state, physical) if v)
        return Port(name, up, rate, width, detail, not_up_as, pcie_link(values))
    if name.startswith("cxi/"):
        link, speed = values.get("link", ""), values.get("speed", "")
        rate = _mbps_as_gbps(speed)
        detail = ", ".join(v for v in (f"link {link}" if link else "",
                                       f"speed {speed} Mb/s" if rate else "") if v)
        return Port(name, link == "1", rate, None, detail, pcie=pcie_link(values))
    operstate = values.get("operstate", "")
    speed = values.get("speed", "")
    rate = _mbps_as_gbps(speed)
    shaped = tc_rate_gbps(values.get("shaper_rate", ""))
    detail = [f"operstate {operstate}" if operstate else "",
              f"speed {speed} Mb/s" if rate else "",
              f"shaped by tbf to {values['shaper_rate']}" if shaped else ""]
    if shaped is not None:
        rate = shaped if rate is None else min(rate, shaped)
    return Port(name, operstate in UP_STATES, rate, None, ", ".join(d for d in detail if d),
                pcie=pcie_link(values))


def read(stagedir: str, pattern: str) -> dict[str, dict[str, Port]]:
    """The readings `pattern` ("counters-before-%n.txt") in `stagedir`, {node: {port: Port}}."""
    prefix, suffix = pattern.split("%n")
    found = {}
    for path in sorted(glob.glob(os.path.join(glob.escape(stagedir), pattern.replace("%n", "*")))):
        node = os.path.basename(path)[len(prefix):len(os.path.basename(path)) - len(suffix)]
        try:
            with open(path, errors="replace") as text:
                found[node] = parse(text.read())
        except OSError:
            continue
    return found


def _fabric_ports(ports: Mapping[str, Port], promise: Contract | None) -> dict[str, Port]:
    if promise is None:
        return dict(ports)
    return {name: port for name, port in ports.items() if re.fullmatch(promise.ports, name)}


def refuse_unmatched(nodes: Mapping[str, Mapping[str, Port]], promise: Contract | None) -> None:
    """ContractError (one line naming the field) where the contract's ports match no port of
    any node read: the contract is wrong, not every node's link (`hsn[0-9]` on InfiniBand
    nodes would otherwise make each of them LINK DEGRADED)."""
    if promise is None or not nodes or any(_fabric_ports(ports, promise)
                                           for ports in nodes.values()):
        return
    seen = sorted({name for ports in nodes.values() for name in ports})
    raise ContractError(
        f"extras.fabric.links.ports {promise.ports!r} matches no port of any of the "
        f"{len(nodes)} node(s) read (they have {', '.join(seen[:6]) or 'no port'}"
        f"{', ...' if len(seen) > 6 else ''}): the contract names ports these nodes do not "
        f"have; fix it (`fabricsuite init` proposes one from what the nodes report)")


def findings(nodes: Mapping[str, Mapping[str, Port]], promise: Contract | None) -> list[str]:
    """What the nodes' links say against the contract, one line each: a declared port missing,
    down, narrower or slower than declared; and, across nodes, a port slower or narrower than
    the most common figure of its peers (the same port name on the other nodes), which needs no
    contract. An unknown rate is no finding (a virtual NIC); against a contract it is one."""
    refuse_unmatched(nodes, promise)
    found = []
    for node, ports in sorted(nodes.items()) if promise is not None else ():
        fabric = _fabric_ports(ports, promise)
        if len(fabric) < promise.count:
            missing = [r for r in promise.rails if r not in fabric]
            found.append(f"LINK DEGRADED {node}: {len(fabric)} of {promise.count} declared "
                         f"port(s) matching {promise.ports} present" +
                         (f" (missing: {', '.join(map(promise.port_label, missing))})"
                          if missing else ""))
        for name, port in fabric.items():
            short = []
            if not port.up:
                short.append("down")
            elif port.rate_gbps is None:
                short.append("rate unknown")
            elif port.rate_gbps < promise.rate_gbps * (1 - RATE_SLACK):
                short.append("slower")
            if port.up and promise.width and port.width and port.width < promise.width:
                short.append("narrower")
            if short:
                found.append(f"LINK DEGRADED {node} {promise.port_label(name)}: "
                             f"{port.describe()}, declared {promise.describe()}")
    found += _pcie_below(nodes, promise)
    found += _unlike_peers(nodes, promise, {line.split(":")[0] for line in found})
    return found


def _pcie_below(nodes: Mapping[str, Mapping[str, Port]], promise: Contract | None) -> list[str]:
    """The fabric's NICs whose PCIe link trained below what they and their slot can do: "LINK
    DEGRADED node3 infiniband/mlx5_1/1: PCIe 16.0 GT/s x8, capable of 32.0 GT/s x16". Every
    port's NIC where no contract says which ports carry the fabric."""
    found = []
    for node, ports in sorted(nodes.items()):
        for name, port in _fabric_ports(ports, promise).items():
            if port.up and port.pcie is not None and port.pcie.below():
                label = promise.port_label(name) if promise else name
                found.append(f"LINK DEGRADED {node} {label}: {port.pcie.describe()}")
    return found


def _unlike_peers(nodes: Mapping[str, Mapping[str, Port]], promise: Contract | None,
                  named: set[str]) -> list[str]:
    by_name: dict[str, dict[str, Port]] = {}
    for node, ports in nodes.items():
        for name, port in _fabric_ports(ports, promise).items():
            by_name.setdefault(name, {})[node] = port
    found = []
    for name, on_nodes in sorted(by_name.items()):
        known = [p for p in on_nodes.values() if p.up and p.rate_gbps is not None]
        if len(on_nodes) < 3 or len(known) < 2:
            continue  # two nodes cannot say which of them is unlike the other
        figures = Counter((p.rate_gbps, p.width) for p in known)
        (usual, seen), = figures.most_common(1)
        if seen * 2 <= len(on_nodes):
            # no figure most of the peers share: which are degraded cannot be told without a
            # contract, but that they differ can (issue 66: 3 of 6 nodes at 70 %)
            found += _differing(name, on_nodes, figures, promise, named)
            continue
        for node, port in sorted(on_nodes.items()):
            where = f"LINK DEGRADED {node} {promise.port_label(name) if promise else name}"
            slower = port.rate_gbps is not None and port.rate_gbps < usual[0] * (1 - RATE_SLACK)
            narrower = port.width is not None and usual[1] is not None and port.width < usual[1]
            if where not in named and (not port.up or slower or narrower):
                peers = (f"{usual[1]}X " if usual[1] else "") + f"{_gbps(usual[0])} Gb/s"
                found.append(f"{where}: {port.describe()}, its {seen} peer(s) {peers}")
    return found


def _differing(name: str, on_nodes: Mapping[str, Port], figures: Counter,
               promise: Contract | None, named: set[str]) -> list[str]:
    """`LINKS DIFFER` for the nodes whose port `name` is down or below its peers' fastest figure
    where no figure is shared by most of them: links train down, so the slower are suspected."""
    fastest = max(figures, key=lambda f: (f[0], f[1] or 0))
    told = ", ".join(f"{count} at " + (f"{width}X " if width else "") + f"{_gbps(rate)} Gb/s"
                     for (rate, width), count in figures.most_common())
    found = []
    for node, port in sorted(on_nodes.items()):
        label = promise.port_label(name) if promise else name
        slower = port.rate_gbps is not None and port.rate_gbps < fastest[0] * (1 - RATE_SLACK)
        narrower = port.width is not None and fastest[1] is not None and port.width < fastest[1]
        if f"LINK DEGRADED {node} {label}" not in named and (not port.up or slower or narrower):
            found.append(f"LINKS DIFFER {node} {label}: {port.describe()}; its {len(on_nodes)} "
                         f"peers: {told}, no figure most of them share, so which are degraded "
                         f"is not known (declare extras.fabric's rate)")
    return found


def changes(before: Mapping[str, Mapping[str, Port]],
            after: Mapping[str, Mapping[str, Port]]) -> list[str]:
    """The links that changed during a job, one line each: "LINK CHANGED node1 net/eth0 during
    the job: 1 Gb/s -> down"."""
    found = []
    for node in sorted(set(before) & set(after)):
        for name in sorted(set(before[node]) | set(after[node])):
            was, now = before[node].get(name), after[node].get(name)
            if was is None or now is None:
                state = "appeared" if was is None else "went away"
                found.append(f"LINK CHANGED {node} {name} during the job: {state}")
            elif (was.up, was.rate_gbps, was.width) != (now.up, now.rate_gbps, now.width):
                found.append(f"LINK CHANGED {node} {name} during the job: {was.describe()} -> "
                             f"{now.describe()}")
    return found


def describe(nodes: Mapping[str, Mapping[str, Port]], promise: Contract | None) -> str:
    """One line of the fabric's links: "node1 net/eth0 1 Gb/s, node2 net/eth0 1 Gb/s" (the
    declared ports, or every port where nothing is declared)."""
    return ", ".join(f"{node} {name} {port.describe()}"
                     for node, ports in sorted(nodes.items())
                     for name, port in _fabric_ports(ports, promise).items())


def is_finding(text: str) -> bool:
    """A case's failure reason, or a `link_findings` line, that is a link finding (the all-pairs
    map's BELOW PROMISE lines too: fabricsuite.data.map_promise.below_promise)."""
    return bool(re.search(r"\b(LINK DEGRADED|LINKS DIFFER|LINK CHANGED|LINK FLAPPED|BELOW "
                          r"PROMISE) ",
                          str(text or "")))


def judge(stagedir: str, extras: Mapping | None) -> tuple[str, str]:
    """A job's links from its counter readings (fabricsuite.data.counters' BEFORE and AFTER) in
    `stagedir`: (the links before the job, one line; its findings against the partition's
    contract and the changes during the job, "; "-joined, "" for none). ContractError for a
    declaration that cannot be used (the check refuses it at setup)."""
    from fabricsuite.data.counters import AFTER, BEFORE

    before, after = read(stagedir, BEFORE), read(stagedir, AFTER)
    promise = contract(extras)
    found = findings(before, promise) + changes(before, after)
    return describe(before, promise), "; ".join(found)


@dataclass(frozen=True)
class Promised(Figure):
    """A figure the partition's promise judges (Contract): on every machine and day, never
    against a machine's own history. `figure` is the Metric it is made of, `promise` the
    Contract field that holds what was promised."""

    figure: Any = None
    promise: str = ""

    def reference(self, promise: Contract) -> tuple[float, float | None, float | None, str]:
        """Its ReFrame reference (value, lower, upper, unit), from the contract."""
        raise NotImplementedError


@dataclass(frozen=True)
class LineFraction(Promised):
    """An inter-node bandwidth figure (a Metric in MB/s, 10^6 bytes) over the line rate the
    partition declares (Contract.line_rate_gbps), which the check puts on the parsed result as
    `line_rate_gbps`: how close the run came to what the fabric promises (higher is better)."""

    promise: str = "bandwidth_fraction"

    def extract(self, result: Any) -> float:
        rate = getattr(result, "line_rate_gbps", None)
        value = self.figure.extract(result)
        if not (isinstance(rate, (int, float)) and rate > 0 and isinstance(value, (int, float))):
            return math.nan
        return value * 8e-3 / rate  # MB/s to Gb/s

    def reference(self, promise: Contract) -> tuple[float, float, None, str]:
        # at least the promised fraction
        return (promise.promise_for(self), 0.0, None, LINE_FRACTION)


@dataclass(frozen=True)
class PromiseMultiple(Promised):
    """An inter-node latency (a Metric in microseconds) over the latency the partition promises
    (Contract.latency_8B_us), which the check puts on the parsed result as
    `promised_latency_us`: 1.3 is 30 % slower than promised (lower is better)."""

    promise: str = "latency_8B_us"

    def extract(self, result: Any) -> float:
        promised = getattr(result, "promised_latency_us", None)
        value = self.figure.extract(result)
        if not (isinstance(promised, (int, float)) and promised > 0
                and isinstance(value, (int, float))):
            return math.nan
        return value / promised

    def reference(self, promise: Contract) -> tuple[float, None, float, str]:
        # at most the promised latency itself
        return (1.0, None, 0.0, PROMISE_MULTIPLE)


def line_fraction(figure: Any, promise: str = "bandwidth_fraction") -> LineFraction:
    """`figure` (MB/s) as a fraction of the declared line rate, judged by `promise` (a key of
    PROMISES)."""
    return LineFraction(read=None, spec=PerfSpec(LINE_FRACTION, HIGHER), figure=figure,
                        promise=promise)


def promise_multiple(figure: Any, promise: str = "latency_8B_us") -> PromiseMultiple:
    """`figure` (us) as a multiple of the declared latency `promise` (a key of PROMISES)."""
    return PromiseMultiple(read=None, spec=PerfSpec(PROMISE_MULTIPLE, LOWER), figure=figure,
                           promise=promise)


def promised_figures(metrics: Mapping[str, Any]) -> dict[str, Promised]:
    """The figures the promise judges among a check's `metrics`."""
    return {name: f for name, f in metrics.items() if isinstance(f, Promised)}


def promise_reference(promise: Contract,
                      figure: Promised) -> tuple[float, float | None, float | None, str]:
    """The reference of a promised figure (ReFrame's (value, lower, upper, unit)): from the
    contract, never from a machine's history."""
    return figure.reference(promise)


def _promised_text(case: dict, key: str, perf: Any) -> tuple[str, bool] | None:
    """One promised figure of a run as a person reads it, and whether it missed its promise:
    ("bandwidth_1MiB_line_fraction 0.49 of 1 Gb/s, promised 0.70", True), ("latency_8B_promise_
    multiple 1.30 (19.5 us, promised at most 15 us)", True); None for any other figure."""
    if not (isinstance(perf, list) and len(perf) > 4 and perf[4] in PROMISE_UNITS
            and isinstance(perf[0], (int, float)) and math.isfinite(perf[0])):
        return None
    value, reference = perf[0], perf[1] if isinstance(perf[1], (int, float)) else None
    if perf[4] == PROMISE_MULTIPLE:
        latency = float(case.get("promised_latency_us") or 0)
        return (f"{perf_variable(key)} {value:.2f} ({value * latency:.3g} us, promised at "
                f"most {latency:g} us)", reference is not None and value > reference)
    return (f"{perf_variable(key)} {value:.2f} of {_gbps(float(case.get('line_rate_gbps') or 0))}"
            f" Gb/s" + (f", promised {reference:.2f}" if reference is not None else ""),
            reference is not None and value < reference)


def promise_lines(cases: list[dict]) -> list[str]:
    """How close each run came to the fabric's promise, one line per case with promised figures
    (its last run): "NetbenchPingPongBandwidth emucluster:nodes openmpi other-node:
    bandwidth_1MiB_line_fraction 0.49 of 1 Gb/s, promised 0.70: BELOW"."""
    shown = []
    for case in cases:
        if case.get("result") == "skip":
            continue
        parts = []
        for key, perf in sorted((case.get("perfvalues") or {}).items()):
            shown_as = _promised_text(case, key, perf)
            if shown_as:
                text, missed = shown_as
                word = "ABOVE" if perf[4] == PROMISE_MULTIPLE else "BELOW"
                parts.append(text + (f": {word}" if missed else ""))
        if parts:
            shown.append(f"  {case_where(case)}: {'; '.join(parts)}")
    if not shown:
        return []
    return ["against the fabric's promise (the declared line rate and latency, extras.fabric):",
            *shown]


def link_findings(case: dict) -> list[str]:
    """The link findings a run recorded (its `link_findings`, or a failure reason that is
    one), one line each."""
    found = [f.strip() for f in str(case.get("link_findings") or "").split("; ") if f.strip()]
    if not found and is_finding(case.get("fail_reason")):
        found = [f.strip() for f in str(case.get("fail_reason")).split("; ") if is_finding(f)]
    return found


def missed_promises(case: dict) -> list[str]:
    """What of the fabric's promise one run missed, one line each: its link findings, and each
    promised figure that failed ("bandwidth_1MiB_line_fraction 0.49 of 1 Gb/s, promised
    0.70")."""
    found = link_findings(case)
    for key, perf in sorted((case.get("perfvalues") or {}).items()):
        shown_as = _promised_text(case, key, perf)
        if shown_as and len(perf) > 5 and perf[5] == "fail":
            found.append(shown_as[0])
    return found


def failed_only_its_promise(case: dict) -> bool:
    """A run whose performance failures are all promised figures that missed (its other
    figures within their references)."""
    failed = [perf for perf in (case.get("perfvalues") or {}).values()
              if isinstance(perf, list) and len(perf) > 5 and perf[5] == "fail"]
    return (case.get("result") == "fail" and case.get("fail_phase") == "performance"
            and bool(failed) and all(perf[4] in PROMISE_UNITS for perf in failed))


def parse_nodes(text: str) -> dict[str, dict[str, Port]]:
    """The links of several nodes from one srun step of `read-counters - links` per node
    (`srun --label`: each line "TASK: ..."; each task's reading starts "# node NAME")."""
    by_task: dict[str, list[str]] = {}
    for line in text.splitlines():
        task, sep, rest = line.partition(": ")
        if not sep or not task.strip().isdigit():
            task, rest = "0", line
        by_task.setdefault(task.strip(), []).append(rest)
    nodes = {}
    for lines in by_task.values():
        names = [ln[len("# node "):].strip() for ln in lines if ln.startswith("# node ")]
        if names:
            nodes[names[0]] = parse("\n".join(lines))
    return nodes


def propose(nodes: Mapping[str, Mapping[str, Port]]) -> tuple[dict | None, list[str]]:
    """A contract for a person to confirm (`extras["fabric"]`, fabricsuite init) from what the
    nodes report, and what was read and where the nodes differ, one line each. The fabric's
    ports: the InfiniBand ports if any node has one up, else the Slingshot NICs, else the
    interfaces; of those, the ones at the fastest rate most nodes share; their count per node
    the most common one."""
    notes = []
    if not nodes:
        return None, ["no node reported its links: no contract proposed; declare "
                      "extras.fabric by hand (docs/verdicts.md)"]
    up = {node: {n: p for n, p in ports.items() if p.up and p.rate_gbps is not None}
          for node, ports in nodes.items()}
    # the fabric's own ports before the interfaces that ride on them (ib0 on an HCA, hsn0 on
    # a Cassini NIC)
    kind = next((k for k in ("infiniband/", "cxi/") if any(
        n.startswith(k) for ports in up.values() for n in ports)), "net/")
    figures = Counter((p.rate_gbps, p.width) for ports in up.values() for n, p in ports.items()
                      if n.startswith(kind))
    if not figures:
        return None, [f"no node has a port up with a known rate ({len(nodes)} node(s) read): "
                      f"no contract proposed; declare extras.fabric by hand"]
    (rate, width), _ = max(figures.items(), key=lambda kv: (kv[1] * 2 > len(nodes), kv[0][0]))
    names = sorted({n for ports in up.values() for n, p in ports.items()
                    if n.startswith(kind) and (p.rate_gbps, p.width) == (rate, width)})
    pattern = "|".join(re.escape(n) for n in names)
    counts = Counter(sum(1 for n in ports if re.fullmatch(pattern, n)) for ports in
                     nodes.values())
    count = counts.most_common(1)[0][0] or 1
    promise = Contract(pattern, count, float(rate), width)
    notes.append(f"links read on {len(nodes)} node(s): {count} x {promise.describe()} per node "
                 f"({', '.join(names)})")
    differ = findings(nodes, promise)
    notes += [f"differs: {line}" for line in differ]
    # the majority's rate proposed: a node that trained faster is named, so that the person
    # confirming sees that the promise may be the faster one (and the majority degraded)
    faster = sorted(f"{node} {n} {p.describe()}" for node, ports in up.items()
                    for n, p in ports.items() if n.startswith(kind) and p.rate_gbps > rate)
    if faster:
        top = max(p.rate_gbps for ports in up.values() for n, p in ports.items()
                  if n.startswith(kind))
        notes.append(f"choose: the proposal takes the rate most nodes trained ({rate:g} Gb/s), "
                     f"and {len(faster)} port(s) trained faster: {', '.join(faster[:6])}"
                     f"{' and more' if len(faster) > 6 else ''}; if the fabric promises "
                     f"{top:g} Gb/s, set rate_gbps to {top:g}, and the ports at {rate:g} Gb/s "
                     f"are LINK DEGRADED")
    # a port of the fabric that came up down or slower on every node alike is no difference
    # between nodes: said, so that the person confirming the contract sees it
    left_out = Counter((n, p.describe()) for ports in nodes.values() for n, p in ports.items()
                       if n.startswith(kind) and n not in names)
    if left_out:
        shown = [f"{n} {how} on {seen} node(s)" for (n, how), seen in sorted(left_out.items())]
        more = f" and {len(shown) - 6} more" if len(shown) > 6 else ""
        notes.append(f"not proposed: {', '.join(shown[:6])}{more}; where one carries the "
                     f"fabric, it came up below the others on every node: add it to ports and "
                     f"count, and it is a finding")
    # several ports of the fabric on most nodes: its rails, in their natural order (mlx5_2
    # before mlx5_10), each a switch plane of its own
    rails = sorted(names, key=lambda n: [int(t) if t.isdigit() else t
                                         for t in re.split(r"(\d+)", n)])
    near = _near(nodes, rails)
    if near:
        notes.append(f"NICs near cores: {near}")
    if count >= 2 and count == len(rails):
        notes.append(f"proposed as {count} rails (rail k: the k-th of {', '.join(rails)}), one "
                     f"rank's messages on one rail (striped_over 1): set striped_over to the "
                     f"rails your MPI splits a message over, as configured")
        links: dict[str, Any] = {"rails": rails, "rate_gbps": float(rate)}
    else:
        links = {"ports": pattern, "count": count, "rate_gbps": float(rate)}
    if width:
        links["width"] = width
    return {"links": links}, notes


def _near(nodes: Mapping[str, Mapping[str, Port]], names: list[str]) -> str:
    """Which cores each NIC is near, from the first node that says: "infiniband/mlx5_0/1 NUMA
    0 (CPUs 0-55), ..."; "" where no node does."""
    for _node, ports in sorted(nodes.items()):
        said = [f"{n} {ports[n].near()}" for n in names if n in ports and ports[n].near()]
        if said:
            return ", ".join(said)
    return ""


def evidence_lines(cases: list[dict], width: int = 300) -> list[str]:
    """The links each partition's nodes reported, one line per partition, from its last case
    that read them: "links as the nodes report them: emucluster:nodes fst1 net/eth0 1 Gb/s,
    fst2 net/eth0 1 Gb/s"."""
    found: dict[str, str] = {}
    for case in cases:
        if case.get("links"):
            found[f"{case.get('system')}:{case.get('partition')}"] = str(case["links"])
    lines = []
    for partition, text in sorted(found.items()):
        line = f"links as the nodes report them: {partition} {text}"
        lines.append(line if len(line) <= width else line[:width - 3] + "...")
    return lines
