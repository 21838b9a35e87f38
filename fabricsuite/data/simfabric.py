"""Simulated fabrics for SimGrid's SMPI: a fat tree or a dragonfly written as a SimGrid platform,
with faults on any node link, uplink or switch, and the same fabric described to the suite the
way a real one is (hosts, and Slurm's topology/tree text), so that the checks' own verdict code
judges what the real netbench measured on it (`fabricsuite simulate`, docs/simulation.md).

Every link is written out (no `<cluster>` shortcut) so that a fault goes on one named link:
a node's link to its leaf (`link:NODE`), a switch's uplink (`uplink:SWITCH`: a leaf's to the
spine, a group's global links on a dragonfly), or a whole switch (`switch:SWITCH`: every link
at it). A fault is a fraction of the healthy bandwidth (`link:node-3=0.75`: 25 % slow). Routes
are SimGrid's shortest paths over the links (`routing="DijkstraCache"`: one route per pair,
computed when first used), one path per pair as on a tree; links are SPLITDUPLEX (each
direction its own capacity, as a real cable).

What the model assumes, and says in the platform's comment and in `describe()`: flows share a
link's capacity max-min fairly (SimGrid's flow model, validated against packet-level
simulation for bulk transfers, not for congestion control's dynamics); no adaptive routing and
no ECMP (a dragonfly's minimal route only); the host's own copy costs are not simulated
(`smpi/simulate-computation:0`); the network factors are the profile's (`PROFILES`), stated
with their origin.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr


@dataclass(frozen=True)
class Profile:
    """A network profile: a node link's rate, a link's latency, SMPI's factors (`smpi/lat-factor`
    and `smpi/bw-factor`, SIZE:FACTOR), and where the figures come from."""
    node_gbps: float
    hop_latency_us: float
    lat_factor: str
    bw_factor: str
    origin: str


#: Network profiles: the link figures and SMPI's factors, each with its origin. SMPI's default
#: factors were fitted to a TCP cluster (its latency x 11.6 from 64 KiB on makes every extra hop
#: look like a slow pair: ../shared/notes/simulated-fabrics.md); a fabric is simulated with the
#: factors of the fabric it stands for.
PROFILES = {
    "ib-hdr": Profile(200.0, 0.3, "0:1", "0:1", origin=(
        "nominal: a 200 Gb/s HDR port, 0.3 us a hop (switch and cable); flat factors (1): the "
        "flow model at line rate, no protocol overhead. Not fitted to a measured InfiniBand "
        "fabric (none was at hand); the map's verdict is relative, so the line rate's level "
        "does not move it")),
    "emucluster": Profile(1.0, 6.0, "0:1", "0:0.952", origin=(
        "fitted to the emulated cluster (network namespaces, veth, tc tbf at 1 Gbit): 1 MiB "
        "ping-pong at 0.952 of the line rate (Open MPI over TCP, median of 3 sessions, "
        "docs/measurements.md 'Line fractions'), 12.0 us one-way at 8 B between two nodes under "
        "one leaf, 2 links of 6 us (netbench pingpong, 2026-12-06)")),
}
DEFAULT_PROFILE = "ib-hdr"


class FabricError(ValueError):
    """A fabric or fault that cannot be: one line naming the fix."""


@dataclass
class Fabric:
    """Hosts, switches, links; every link joins two ends (a host or a switch) and has a name."""
    kind: str
    profile: str
    hosts: list[str] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    #: link name -> (end a, end b, bandwidth Gb/s, per-flow cable Gb/s or None: see `link`)
    links: dict[str, tuple[str, str, float, float | None]] = field(default_factory=dict)
    #: Slurm's view: switch -> parent switch (None: the root); host -> its leaf switch
    parent: dict[str, str | None] = field(default_factory=dict)
    leaf_of: dict[str, str] = field(default_factory=dict)
    #: dragonfly only: switch -> its group
    group_of: dict[str, str] = field(default_factory=dict)
    #: the faults applied: component -> fraction of its healthy bandwidth
    faults: dict[str, float] = field(default_factory=dict)
    shape: str = ""

    def switch(self, name: str, parent: str | None) -> None:
        self.switches.append(name)
        self.parent[name] = parent

    def add_nodes(self, leaf: str, count: int, gbps: float) -> None:
        """`count` nodes under `leaf`, numbered on from the last (node-0, node-1, ...), each
        with its link to the leaf."""
        for _ in range(count):
            host = f"node-{len(self.hosts)}"
            self.hosts.append(host)
            self.leaf_of[host] = leaf
            self.link(f"link:{host}", host, leaf, gbps)

    def link(self, name: str, a: str, b: str, gbps: float, cable_gbps: float | None = None
             ) -> None:
        """A link between a and b. With `cable_gbps`, a bundle between two switches: the
        bundle's capacity (`gbps`, shared by the flows through it: a taper shows here) and the
        rate of the one cable a flow takes (a FATPIPE link of `cable_gbps`: single-path routing
        puts every flow through the bundle on it). A fault scales both: a bad cable is seen by
        a pair alone, not only under load."""
        self.links[name] = (a, b, gbps, cable_gbps)

    # --- faults ------------------------------------------------------------------------------
    def components(self) -> list[str]:
        """Every component a fault can go on, as `kind:name`."""
        ups = sorted(n.split(":", 1)[1] for n in self.links if n.startswith("uplink:"))
        globals_ = sorted({n.split(":", 1)[1].rsplit("~", 1)[0] for n in self.links
                           if n.startswith("global:")})
        ends = {end for a, b, *_ in self.links.values() for end in (a, b)}
        groups = set(self.group_of.values())
        return ([f"link:{h}" for h in self.hosts] + [f"uplink:{s}" for s in ups] +
                [f"global:{g}" for g in globals_] +
                [f"switch:{s}" for s in self.switches if s in ends or s in groups])

    def inject(self, component: str, fraction: float) -> None:
        """Lower the bandwidth of `component` (`link:HOST`, `uplink:SWITCH`, `switch:SWITCH`)
        to `fraction` of its healthy value."""
        if not 0 < fraction <= 1:
            raise FabricError(f"fault {component}={fraction:g}: give the fraction of the healthy "
                              f"bandwidth left, above 0 and at most 1 (0.75: 25 % slow)")
        kind, _, name = component.partition(":")
        if kind == "link" and name in self.hosts:
            hit = [f"link:{name}"]
        elif kind == "uplink":
            hit = [n for n in self.links if n == f"uplink:{name}"]
        elif kind == "global":
            hit = [n for n in self.links if n.startswith(f"global:{name}~")]
        elif kind == "switch" and name in self.switches:
            # the switch's own links, or (a dragonfly's group) those of every router in it
            at = {name} | {s for s, g in self.group_of.items() if g == name}
            hit = [n for n, (a, b, *_) in self.links.items() if a in at or b in at]
        else:
            hit = []
        if not hit:
            kinds = {}
            for known in self.components():  # one of each kind, as an example
                kinds.setdefault(known.partition(":")[0], known)
            near = ", ".join(kinds.values())
            raise FabricError(f"fault {component}: no such component in this {self.shape}; "
                              f"give link:HOST, uplink:SWITCH, global:GROUP~GROUP (a "
                              f"dragonfly) or switch:SWITCH (e.g. {near})")
        for n in hit:
            a, b, gbps, cable = self.links[n]
            self.links[n] = (a, b, gbps * fraction, cable * fraction if cable else None)
        self.faults[component] = fraction

    # --- what SimGrid reads --------------------------------------------------------------------
    def platform_xml(self) -> str:
        """The SimGrid platform (version 4.1): hosts, routers, SPLITDUPLEX links, one-hop routes;
        SimGrid routes every pair over them (shortest path)."""
        p = PROFILES[self.profile]
        lat = f"{p.hop_latency_us:g}us"
        lines = ["<?xml version='1.0'?>",
                 '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
                 f"<!-- fabricsuite simulate: {self.shape}; profile {self.profile}: "
                 f"{p.origin}; faults: {self.fault_text() or 'none'} -->",
                 '<platform version="4.1">',
                 '<zone id="simulated-fabric" routing="DijkstraCache">']
        lines += [f'  <host id={quoteattr(h)} speed="1Gf"/>' for h in self.hosts]
        # the switches a link ends at (a dragonfly's groups and root are Slurm's view only)
        ends = {end for a, b, *_ in self.links.values() for end in (a, b)}
        lines += [f"  <router id={quoteattr(s)}/>" for s in self.switches if s in ends]
        for name, (_a, _b, gbps, cable) in self.links.items():
            lines.append(f"  <link id={quoteattr(name)} bandwidth=\"{gbps / 8:.6g}GBps\" "
                         f"latency=\"{lat}\" sharing_policy=\"SPLITDUPLEX\"/>")
            if cable:
                lines.append(f"  <link id={quoteattr(name + '#cable')} bandwidth=\""
                             f"{cable / 8:.6g}GBps\" latency=\"0us\" sharing_policy=\"FATPIPE\"/>")
            if name.startswith("global:"):
                # SimGrid's Dijkstra counts the links of a route (2 a local link): 3 more on a
                # global link (5) keep routes minimal, one global hop and up to 2 local ones
                # (4), as a dragonfly's minimal routing, never 2 global hops
                lines += [f"  <link id={quoteattr(f'{name}#hop{k}')} bandwidth=\"1000TBps\" "
                          f"latency=\"0us\" sharing_policy=\"FATPIPE\"/>" for k in range(3)]
        for name, (a, b, _gbps, cable) in self.links.items():
            through = f"<link_ctn id={quoteattr(name)} direction=\"UP\"/>"
            if cable:
                through += f"<link_ctn id={quoteattr(name + '#cable')}/>"
            if name.startswith("global:"):
                through += "".join(f"<link_ctn id={quoteattr(f'{name}#hop{k}')}/>"
                                   for k in range(3))
            lines.append(f"  <route src={quoteattr(a)} dst={quoteattr(b)} symmetrical=\"YES\">"
                         f"{through}</route>")
        lines += ["</zone>", "</platform>", ""]
        return "\n".join(lines)

    def smpirun_options(self) -> list[str]:
        """SMPI's configuration for this fabric: the profile's factors, no simulated CPU time."""
        p = PROFILES[self.profile]
        return [f"--cfg=smpi/lat-factor:{p.lat_factor}",
                f"--cfg=smpi/bw-factor:{p.bw_factor}",
                "--cfg=smpi/simulate-computation:0"]

    def hostfile(self) -> str:
        return "".join(f"{h}\n" for h in self.hosts)

    # --- what the suite reads ------------------------------------------------------------------
    def topology_conf(self) -> str:
        """Slurm's topology/tree description of the fabric (topology.conf lines): the form the
        suite reads of a real cluster (fabricsuite.data.switches.parse_topology)."""
        out = []
        for switch in self.switches:
            nodes = sorted((h for h, leaf in self.leaf_of.items() if leaf == switch),
                           key=_natural)
            below = [s for s in self.switches if self.parent.get(s) == switch]
            line = f"SwitchName={switch}"
            if nodes:
                line += f" Nodes={','.join(nodes)}"
            if below:
                line += f" Switches={','.join(below)}"
            if nodes or below:
                out.append(line)
        # a dragonfly's global links: the suite's own line beside Slurm's (switches.parse_topology)
        ends: dict[str, list[str]] = {}
        for n, (a, b, *_) in self.links.items():
            if n.startswith("global:"):
                ends.setdefault(n.split(":", 1)[1].rsplit("~", 1)[0], []).append(f"{a},{b}")
        for name in sorted(ends, key=_natural):
            line = f"LinkName={name} Switches={name.replace('~', ',')}"
            if len(ends[name]) == 1:  # the routers it joins (several links: which one a pair
                line += f" Through={ends[name][0]}"  # takes is not known)
            out.append(line)
        return "\n".join(out) + "\n"

    def fault_text(self) -> str:
        return ", ".join(f"{c}={f:g}" for c, f in self.faults.items())

    def describe(self) -> str:
        p = PROFILES[self.profile]
        return (f"{self.shape}: {len(self.hosts)} nodes, {len(self.switches)} switches, "
                f"{len(self.links)} links; profile {self.profile} ({p.node_gbps:g} Gb/s a node "
                f"link, {p.hop_latency_us:g} us a hop; {p.origin}); routes: shortest path, "
                f"one per pair (no ECMP, no adaptive routing); flows share links max-min fairly "
                f"(SimGrid's flow model); faults: {self.fault_text() or 'none'}")


def _natural(name: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def fat_tree(leaves: int, nodes_per_leaf: int, taper: float = 1.0,
             profile: str = DEFAULT_PROFILE, pods: int = 1) -> Fabric:
    """A 2-level fat tree (`pods` 1) or a 3-level one (`pods` > 1: `leaves` leaves in each pod
    under a pod switch, the pods under the core), in Slurm's model: one uplink per switch,
    carrying what the switch's nodes can send divided by `taper` (1: non-blocking; 2: 2:1)."""
    _positive(leaves=leaves, nodes_per_leaf=nodes_per_leaf, pods=pods)
    if not taper >= 1:
        raise FabricError(f"taper {taper:g}: give 1 (non-blocking) or more (2: a 2:1 taper)")
    node_gbps = _profile(profile).node_gbps
    levels = "2-level" if pods == 1 else "3-level"
    shape = (f"{levels} fat tree, {pods * leaves} leaves of {nodes_per_leaf} nodes"
             + (f" in {pods} pods" if pods > 1 else "") + (f", tapered {taper:g}:1"
                                                          if taper > 1 else ""))
    fabric = Fabric("fat-tree", profile, shape=shape)
    fabric.switch("core", None)
    for pod in range(pods):
        top = "core"
        if pods > 1:
            top = f"pod{pod}"
            fabric.switch(top, "core")
            fabric.link(f"uplink:{top}", top, "core",
                        leaves * nodes_per_leaf * node_gbps / taper, node_gbps)
        for leaf_no in range(leaves):
            leaf = f"leaf{pod * leaves + leaf_no}"
            fabric.switch(leaf, top)
            fabric.link(f"uplink:{leaf}", leaf, top, nodes_per_leaf * node_gbps / taper,
                        node_gbps)
            fabric.add_nodes(leaf, nodes_per_leaf, node_gbps)
    return fabric


def dragonfly(groups: int, routers: int, nodes_per_router: int, global_links: int = 1,
              profile: str = DEFAULT_PROFILE) -> Fabric:
    """A dragonfly: `groups` groups of `routers` routers joined all-to-all inside the group,
    every router with `nodes_per_router` nodes, every pair of groups joined by `global_links`
    links (named `global:gG~gH~k`; a fault `global:gG~gH` slows all of them). Minimal routing
    only. The suite reads it as Slurm's tree of routers (leaves) under their groups under a root,
    with a `LinkName=gG~gH Switches=gG,gH` line per pair of groups (switches.parse_topology), so
    the map can name a node link, a router, a group or the global links between two groups."""
    _positive(groups=groups, routers=routers, nodes_per_router=nodes_per_router,
              global_links=global_links)
    if groups < 2:
        raise FabricError("a dragonfly needs 2 groups or more")
    node_gbps = _profile(profile).node_gbps
    fabric = Fabric("dragonfly", profile,
                    shape=f"dragonfly, {groups} groups of {routers} routers of {nodes_per_router} "
                          f"nodes, {global_links} global link(s) between each two groups")
    fabric.switch("fabric", None)  # Slurm's root, no router of SimGrid's
    for g in range(groups):
        group = f"g{g}"
        fabric.switch(group, "fabric")
        for r in range(routers):
            router = f"g{g}r{r}"
            fabric.switch(router, group)
            fabric.group_of[router] = group
            fabric.add_nodes(router, nodes_per_router, node_gbps)
            for other in range(r):
                fabric.link(f"local:g{g}r{other}~g{g}r{r}", f"g{g}r{other}", router,
                            nodes_per_router * node_gbps, node_gbps)
    # global links: group g's router (h + k) % routers toward group h (spread over routers)
    for g in range(groups):
        for h in range(g + 1, groups):
            for k in range(global_links):
                a = f"g{g}r{(h + k) % routers}"
                b = f"g{h}r{(g + k) % routers}"
                gbps = routers * nodes_per_router * node_gbps / max(groups - 1, 1)
                fabric.link(f"global:g{g}~g{h}~{k}", a, b, max(gbps, node_gbps), node_gbps)
    return fabric


def _positive(**values: int) -> None:
    for name, value in values.items():
        if not isinstance(value, int) or value < 1:
            raise FabricError(f"{name.replace('_', ' ')} {value!r}: give a whole number, 1 or more")


def _profile(name: str) -> Profile:
    try:
        return PROFILES[name]
    except KeyError:
        raise FabricError(f"profile {name!r}: give one of {', '.join(PROFILES)}") from None


def parse_faults(texts: Iterable[str]) -> list[tuple[str, float]]:
    """`COMPONENT=FRACTION` texts as (component, fraction)."""
    out = []
    for text in texts:
        component, eq, value = text.partition("=")
        try:
            fraction = float(value) if eq else math.nan
        except ValueError:
            fraction = math.nan
        if not math.isfinite(fraction):
            raise FabricError(f"--fault {text!r}: give COMPONENT=FRACTION, e.g. "
                              f"link:node-3=0.75 (25 % slow), uplink:leaf1=0.5, switch:leaf2=0.7")
        out.append((component, fraction))
    return out
