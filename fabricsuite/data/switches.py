"""Which fabric component explains the bad pairs of an all-pairs map (netbench matrix): a node's
link, a switch's uplink, or a whole switch, read against the switch tree.

The tree is Slurm's (topology/tree): `scontrol show topology` or a topology.conf, both lines of
`SwitchName=NAME [Nodes=HOSTLIST] [Switches=HOSTLIST]`. A pair's path runs from node a's link up
its leaf switch to the lowest switch the two nodes share and down to node b's link, through the
uplink of every switch below that one.

A faulty component makes every pair through it slow; a healthy one carries bad pairs only where
they share another, faulty component. So the explanation (Tomography-style set cover) takes the
components whose pairs are nearly all bad (CONSISTENT) and, above a node, none of whose pairs was
healthy in the map (such a pair contradicts it: three slow node links under one leaf are the
three nodes, not the leaf), and covers the bad pairs with as few of
them as it can, the one that explains most bad pairs first, less GOOD_WEIGHT for each good pair
through it: a whole leaf slow is one switch, not its nodes one by one; a node whose pairs are all
bad is that node, not its leaf's uplink (which carries also good pairs); a few pairs made bad by
noise leave the uplink named, and themselves unexplained, rather than name a switch.
Components that carry exactly the same measured pairs cannot be told apart by them (the two
uplinks between the only two leaves of a tree: every pair crossing one crosses the other); they
are named together, as one finding, smallest kind first. Bad pairs no consistent component covers
are left unexplained and said so. Where netbench judged from the map's own noise, a component
whose bad pairs lie, as a group, within the noise of the healthy pairs in the map (3 standard
errors of the difference of the two medians) is not named but said ("not named: ..."): on a
loaded machine nearly every pair can be suspect, and the one or two healthy pairs left to
re-test as references alone can be faster than the rest for reasons of their own (seen: both
leaves "faulty" at -5 % and -8 % with one healthy pair).

Suspect pairs that the re-test alone cleared are never named as faulty. Where such a pair crossed
an uplink that another pair of the same round crossed too, it is congestion (an oversubscribed
tree: concurrent pairs share the uplink), counted per uplink; otherwise it was slow for another
passing reason (noise), counted apart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from fabricsuite.data.hostlists import TopologyError, expand_hostlist
from fabricsuite.data.pairindex import PairIndex, set_key

#: A component is a candidate when at least this share of the measured pairs through it is bad
#: (a quarter-rate link makes all of them bad; the slack is for a pair the re-test cleared).
CONSISTENT = 0.8
#: What naming a component costs per good pair through it, against each bad pair it explains:
#: a switch whose pairs are bad but for a few is not chosen over the uplink that explains the
#: same bad pairs and no good one (a re-test that failed on noise must not widen the verdict).
GOOD_WEIGHT = 2
#: A slowdown within this many robust standard deviations (1.4826 MAD) of the healthy pairs'
#: bandwidth is the map's own noise, not a fault it can name.
RESOLUTION_SIGMAS = 3.0
#: The standard error of a median over that of a mean, for normal noise (sqrt(pi / 2)).
MEDIAN_EFFICIENCY = 1.2533
#: Order of the kinds when components cannot be told apart: the smallest first. `link` is a link
#: declared between two sibling switches (a dragonfly's global link between two groups), `group`
#: a switch joined to its siblings by such links (a dragonfly's group: its routers below it).
KINDS = ("node", "uplink", "link", "switch", "group")
#: The switch above Slurm's topology/block blocks (no switch of a tree is named so).
BLOCKS_ROOT = "(blocks)"
#: The kinds whose capacity concurrent pairs share (congestion, not a fault, where a pair alone
#: was fast): the links between switches.
SHARED_KINDS = ("uplink", "link")
#: The count a kind adds to (`Explanation.counts`, the fabric map check's variables): a link
#: between switches is an uplink's kind of fault, a group a switch's.
COUNTED_AS = {"node": "node", "uplink": "uplink", "link": "uplink", "switch": "switch",
              "group": "switch"}


@dataclass
class Tree:
    """The switch tree: every switch's parent, and every node's leaf switch."""
    parent: dict[str, str | None] = field(default_factory=dict)
    leaf_of: dict[str, str] = field(default_factory=dict)
    #: {switch a, switch b} -> the link declared between them (LinkName=: siblings joined
    #: directly, a dragonfly's global link): pairs between the two take it, not their parent
    links: dict[frozenset[str], str] = field(default_factory=dict)
    #: {switch a, switch b} -> the switches at the ends of that link (Through=: the routers of
    #: a dragonfly's global link), on the path of every pair that crosses it
    through: dict[frozenset[str], list[str]] = field(default_factory=dict)
    #: (leaf a, leaf b) -> the switch components between them (`path`): a map of N nodes has
    #: N^2 / 2 pairs but only as many leaf pairs as leaves squared
    _between: dict[tuple[str, str], list[tuple[str, str]]] = field(
        default_factory=dict, repr=False, compare=False)

    def up(self, switch: str) -> list[str]:
        """`switch` and the switches above it, to the root."""
        chain = [switch]
        while self.parent.get(chain[-1]):
            chain.append(self.parent[chain[-1]])
            if len(chain) > len(self.parent) + 1:
                raise TopologyError(f"the switch tree has a loop through {switch}")
        return chain

    def nodes_under(self, switch: str) -> set[str]:
        return {node for node, leaf in self.leaf_of.items() if switch in self.up(leaf)}

    def groups(self) -> set[str]:
        """The switches joined to a sibling by a declared link: a dragonfly's groups."""
        return {switch for ends in self.links for switch in ends}


def parse_topology(text: str) -> Tree:
    """`scontrol show topology` or topology.conf text as a Tree (comments and other keys
    ignored). Beyond Slurm's lines, `LinkName=NAME Switches=A,B` declares a link that joins two
    sibling switches directly (a dragonfly's global link between groups A and B, which
    `fabricsuite simulate` writes for its dragonflies): pairs between them cross it, not the
    switch above them, and A and B are groups. Slurm's topology/block lines (`BlockName=B
    Nodes=...`, block.conf or `scontrol show topology`; BlockSizes= and aggregated blocks
    ignored) are groups of their nodes, every two joined by a link of their own (`A~B`)."""
    tree = Tree()
    children: dict[str, list[str]] = {}
    declared: list[tuple[str, list[str], list[str]]] = []
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        fields = dict(re.findall(r"(\w+)=(\S+)", line))
        if fields.get("BlockName"):  # a block: a group of nodes under the blocks' root
            children.setdefault(BLOCKS_ROOT, []).append(fields["BlockName"])
            fields = {"SwitchName": fields["BlockName"], "Nodes": fields.get("Nodes", "")}
        if fields.get("LinkName"):
            declared.append((fields["LinkName"], expand_hostlist(fields.get("Switches", "")),
                             expand_hostlist(fields.get("Through", ""))))
            continue
        name = fields.get("SwitchName")
        if not name:
            continue
        tree.parent.setdefault(name, None)
        # scontrol lists a switch above others with every node below it: a node's leaf is the
        # switch that names it and no switch
        leaf_nodes = fields.get("Nodes") if not fields.get("Switches") else None
        for node in expand_hostlist(leaf_nodes) if leaf_nodes else []:
            if node in tree.leaf_of and tree.leaf_of[node] != name:
                raise TopologyError(f"node {node} is under two switches, "
                                    f"{tree.leaf_of[node]} and {name}")
            tree.leaf_of[node] = name
        if fields.get("Switches"):
            children[name] = expand_hostlist(fields["Switches"])
    for name, below in children.items():
        tree.parent.setdefault(name, None)
        for child in below:
            tree.parent[child] = name
    blocks = children.get(BLOCKS_ROOT, [])
    declared += [(f"{a}~{b}", [a, b], []) for i, a in enumerate(blocks) for b in blocks[i + 1:]]
    if not tree.leaf_of:
        raise TopologyError("the switch tree names no node (expected lines such as "
                            "'SwitchName=leaf1 Nodes=node[1-4]'); is topology/tree configured?")
    for link, ends, through in declared:
        if len(ends) != 2 or any(end not in tree.parent for end in ends) or \
                tree.parent[ends[0]] != tree.parent[ends[1]] or ends[0] == ends[1]:
            raise TopologyError(f"LinkName={link}: give Switches=A,B, two switches of the tree "
                                f"under the same parent (a dragonfly's groups)")
        if any(t not in tree.parent for t in through):
            raise TopologyError(f"LinkName={link}: Through= names a switch the tree lacks")
        tree.links[frozenset(ends)] = link
        if through:
            tree.through[frozenset(ends)] = through
    return tree


def read_tree(path: str) -> str:
    """The text of a switch-tree file (`scontrol show topology` output, a topology.conf);
    TopologyError for one that cannot be read or is empty: a declared tree that says nothing
    is an error of the map, never one flat switch."""
    try:
        with open(path) as file:
            text = file.read()
    except OSError as err:
        raise TopologyError(f"cannot read {path} ({err.strerror}); declare extras.topology "
                            f"\"slurm\" or a topology.conf path") from None
    if not text.strip():
        raise TopologyError(f"{path} is empty: the partition declares a switch tree that names "
                            f"nothing (did `scontrol show topology` print nothing? is "
                            f"topology/tree configured?)")
    return text


@dataclass(frozen=True)
class Pair:
    """One measured pair of the map."""
    host_a: str
    host_b: str
    bandwidth_MBps: float
    #: slow in the map (below the bandwidth floor or above the latency ceiling)
    suspect: bool
    #: still slow when re-tested alone: bad
    bad: bool
    #: the tournament round it was measured in (None: unknown)
    round: int | None = None
    #: its bandwidth re-tested alone (suspects only; None: not re-tested)
    retest_MBps: float | None = None
    #: a suspect netbench left out of its re-tests (--max-retests): neither bad nor cleared,
    #: no evidence for or against the components on its path
    undecided: bool = False


def path(tree: Tree, a: str, b: str) -> list[tuple[str, str]]:
    """The components between nodes a and b: ("node", a), ("node", b), ("uplink", S) for each
    switch S below the lowest common one, ("switch", S) for every switch on the way."""
    try:
        leaves = tree.leaf_of[a], tree.leaf_of[b]
    except KeyError as err:
        raise TopologyError(f"node {err.args[0]} of the map is under no switch of the tree; "
                            f"give the partition's whole topology") from None
    between = tree._between.get(leaves)
    if between is None:
        up_a, up_b = tree.up(leaves[0]), tree.up(leaves[1])
        common = next((s for s in up_a if s in up_b), None)
        if common is None:
            raise TopologyError(f"nodes {a} and {b} share no switch; the tree needs a root "
                                f"(SwitchName=... Switches=...)")
        below_a, below_b = up_a[:up_a.index(common)], up_b[:up_b.index(common)]
        siblings = frozenset((below_a[-1], below_b[-1])) if below_a and below_b else None
        across = tree.links.get(siblings) if siblings else None
        if across is None:
            between = ([("uplink", s) for s in below_a + below_b] +
                       [("switch", s) for s in dict.fromkeys(below_a + [common] + below_b)])
        else:  # siblings joined directly: their link, not their uplinks to the parent
            between = ([("uplink", s) for s in below_a[:-1] + below_b[:-1]] +
                       [("link", across)] +
                       [("switch", s) for s in dict.fromkeys(
                           below_a[:-1] + below_b[:-1] + tree.through.get(siblings, []))])
        # a group holds every pair with a node in it (a fault of the whole group slows them)
        groups = tree.groups()
        between = [(kind, name) for kind, name in between
                   if not (kind == "switch" and name in groups)] + [
            ("group", g) for g in dict.fromkeys(up_a + up_b) if g in groups]
        tree._between[leaves] = between
    return [("node", a), ("node", b), *between]


@dataclass
class Culprit:
    """Components named as the cause of bad pairs (more than one: indistinguishable)."""
    components: list[tuple[str, str]]
    bad_pairs: int
    pairs: int
    median_MBps: float | None
    healthy_median_MBps: float | None

    def describe(self) -> str:
        names = " or ".join(f"{kind} {name}" for kind, name in self.components)
        text = f"{names}: {self.bad_pairs} of {self.pairs} pairs through it bad"
        if self.median_MBps is not None and self.healthy_median_MBps:
            # how far it lies, as a node outlier of the verdicts says it (docs/verdicts.md)
            change = self.median_MBps / self.healthy_median_MBps - 1.0
            text += (f", median {self.median_MBps:.1f} MB/s against "
                     f"{self.healthy_median_MBps:.1f} MB/s for the healthy pairs "
                     f"({change:+.0%})")
        if len(self.components) > 1:
            text += " (the measured pairs cannot tell these apart)"
        return text


@dataclass
class Explanation:
    findings: list[Culprit]
    #: bad pairs no consistent component covers, "a-b"
    unexplained: list[str]
    #: suspect pairs the re-test alone cleared, per uplink they shared with another pair of
    #: their round
    congestion: dict[str, int]
    #: suspect pairs the re-test alone cleared that shared no uplink in their round
    cleared: int = 0
    #: uplinks of the tree between the map's nodes that no measured pair crossed (a quick map
    #: of a few rounds): nothing is known of them
    uncovered: list[str] = field(default_factory=list)
    #: the smallest slowdown of a link the map could resolve (a fraction; `resolution`), the
    #: healthy pairs' robust spread, and the healthy bandwidth it is measured against (MB/s);
    #: None: not known (no floor, no healthy pair)
    resolution: float | None = None
    healthy_spread: float | None = None
    healthy_MBps: float | None = None
    floor_MBps: float | None = None
    #: netbench's verdict from the map's own noise (`NoiseRule`), where it judged so
    noise: NoiseRule | None = None
    #: components whose pairs were bad alone but, as a group, lie within the noise of the
    #: healthy pairs in the map, with that noise: not named (`_within_noise`)
    slight: list[tuple[Culprit, float]] = field(default_factory=list)
    #: suspects netbench did not re-test alone (its --max-retests bound): judged from the others
    undecided: int = 0
    #: what a quick map measured of the whole (`coverage`); "" for a full map
    coverage: str = ""

    def counts(self) -> dict[str, int]:
        """Named components by kind (an indistinguishable group counts once, as its first)."""
        found = {kind: 0 for kind in dict.fromkeys(COUNTED_AS.values())}
        for finding in self.findings:
            found[COUNTED_AS[finding.components[0][0]]] += 1
        return found

    def lines(self) -> list[str]:
        out = [f"faulty {finding.describe()}" for finding in self.findings]
        if self.unexplained:
            out.append(f"no single component explains {len(self.unexplained)} bad pair(s): "
                       f"{', '.join(self.unexplained[:8])}")
        out += [f"not named: {finding.describe()}, within the map's noise of comparing them "
                f"({within:.0%}): bad alone against its references, not slow in the map"
                for finding, within in self.slight]
        out += [f"congestion, not a fault: {count} suspect pair(s) across "
                f"{uplink if uplink.startswith('link ') else f'uplink {uplink}'}, "
                f"shared in their round, were fast when re-tested alone"
                for uplink, count in self.congestion.items()]
        if self.cleared:
            out.append(f"{self.cleared} suspect pair(s) that shared no uplink were fast when "
                       f"re-tested alone (noise)")
        if self.undecided:
            out.append(f"{self.undecided} suspect pair(s) not re-tested alone (netbench's "
                       f"--max-retests): the verdict reads the re-tested ones")
        if self.coverage:
            out.append(self.coverage)
        if self.uncovered:
            out.append(f"not measured: no pair crossed uplink(s) {', '.join(self.uncovered)} "
                       f"(a quick map; more rounds cover them)")
        if self.noise is not None:
            out += self.noise.lines()
        elif self.resolution is not None:
            out.append(f"resolves a link {self.resolution:.0%} slow or more (suspect floor "
                       f"{self.floor_MBps:.3g} MB/s against {self.healthy_MBps:.3g} MB/s "
                       f"healthy; healthy pairs spread {self.healthy_spread:.0%})")
        return out


@dataclass(frozen=True)
class NoiseRule:
    """netbench matrix's thresholds from the map's own noise (its summary; docs/output-format.md):
    what it looked for, the noise with the other pairs and alone, and what it could resolve."""
    #: the slowdown of a link the map looks for (--smallest-fault), a fraction
    smallest_fault: float
    #: a pair's bandwidth noise measured with the others, and alone (relative robust sd)
    map_noise: float
    alone_noise: float
    #: a re-test is bad this far below the healthy pairs re-tested around it (reference_MBps:
    #: their median)
    bad_slowdown: float
    reference_MBps: float
    #: the smallest slowdown of a link that clears both thresholds by its noise
    resolvable: float
    #: references that measured alone below the best healthy figure alone: left out
    slow_references: int = 0

    @classmethod
    def of(cls, summary: Mapping, parameters: Mapping) -> NoiseRule | None:
        keys = ("bandwidth_noise", "alone_noise", "bad_slowdown", "reference_alone_MBps",
                "resolvable_slowdown")
        values = [summary.get(k) for k in keys]
        fault = parameters.get("smallest_fault")
        if fault is None or any(not isinstance(v, (int, float)) for v in values):
            return None
        # absent from results of netbench before it judged each reference on its own
        slow = summary.get("slow_reference_pairs")
        return cls(float(fault), *(float(v) for v in values),
                   slow if isinstance(slow, int) else 0)

    @property
    def resolved(self) -> bool:
        """Whether the map could resolve the fault it looks for."""
        return self.resolvable <= self.smallest_fault

    def lines(self) -> list[str]:
        # beyond 100 %: not even a dead link clears the noise
        reach = (f"resolves a link {self.resolvable:.0%} slow or more" if self.resolvable < 1
                 else "resolves no slow link at all")
        out = [f"{reach} (noise "
               f"{self.map_noise:.1%} with the other pairs, {self.alone_noise:.1%} alone; bad "
               f"beyond {self.bad_slowdown:.0%} below the healthy pairs re-tested around it, "
               f"{self.reference_MBps:.3g} MB/s"
               + (f"; {self.slow_references} reference pair(s) slow alone, left out"
                  if self.slow_references else "") + ")"]
        if not self.resolved:
            out.append(f"could not resolve a link {self.smallest_fault:.0%} slow, the smallest "
                       f"fault it looks for: one that small would go unnamed here (measure on "
                       f"a quieter machine, or with more --repetitions)")
        return out


def resolution(index: PairIndex, floor_MBps: float) -> tuple[float, float, float] | None:
    """(the smallest slowdown of a link the map could resolve, the healthy pairs' spread, the
    healthy bandwidth it is measured against). A pair is bad only when its re-test alone stays
    below the floor (netbench's --bandwidth-fraction of the best pair in the map), so a link is
    named only when it is slower than the floor against what a healthy link delivers alone: the
    median of the suspects the re-test cleared (measured alone) where there are some, else of
    the healthy pairs in the map, whichever is higher. On a loaded machine the map's pairs are
    slowed, the floor with them, and a link alone gets more: the resolvable slowdown grows, and
    is said. A slowdown within RESOLUTION_SIGMAS robust standard deviations of the healthy (not
    suspect) pairs cannot be told from their noise either. None without healthy pairs."""
    healthy = index.bandwidth[~index.suspect & (index.bandwidth > 0)]
    if not len(healthy):
        return None
    median = float(np.median(healthy))
    spread = 1.4826 * float(np.median(np.abs(healthy - median))) / median
    alone = index.retest[index.suspect & ~index.bad & ~np.isnan(index.retest)]
    reference = max(median, float(np.median(alone))) if len(alone) else median
    return max(1.0 - floor_MBps / reference, RESOLUTION_SIGMAS * spread), spread, reference


@dataclass
class _Candidate:
    """Components whose measured pairs are nearly all bad, carrying the same pairs."""
    members: list[tuple[str, str]]
    #: the indices of its bad pairs, how many measured pairs it carries, and how many of its
    #: good pairs measured faster than its bad ones (evidence against it)
    bad: np.ndarray
    pairs: int
    against: int


def explain(tree: Tree, pairs: Iterable[Pair] | PairIndex, floor_MBps: float | None = None,
            noise: NoiseRule | None = None) -> Explanation:
    """The fewest components that explain the bad pairs (see the module's docstring); with the
    map's bandwidth floor, also the smallest slowdown it could resolve (`resolution`), or, where
    netbench judged from the map's noise, what it says it resolved (`noise`). The pairs are
    read as columns (fabricsuite.data.pairindex, or given so: `map_of`), each path found once
    per leaf pair."""
    index = pairs if isinstance(pairs, PairIndex) else PairIndex.of_pairs(tree, list(pairs),
                                                                           path)
    findings, slight, left = _cover(index, _candidates(index), noise)
    unexplained = sorted(f"{index.hosts[index.a[i]]}-{index.hosts[index.b[i]]}"
                         for i in np.flatnonzero(left))
    congestion, cleared = _congestion(index)
    crossed = {_shared_name(index.components[c]) for c in index.crossed(SHARED_KINDS)}
    between = _uplinks_between(tree, index.hosts)
    if noise is not None:  # netbench's own figures
        resolved, floor_MBps = (noise.resolvable, None, noise.reference_MBps), None
    else:
        resolved = resolution(index, floor_MBps) if floor_MBps and len(index) else None
    return Explanation(findings, unexplained, congestion, cleared,
                       [name for name in between if name not in crossed],
                       *(resolved or (None, None, None)), floor_MBps if resolved else None,
                       noise, slight, int(index.undecided.sum()))


def _shared_name(component: tuple[str, str]) -> str:
    kind, name = component
    return name if kind == "uplink" else f"{kind} {name}"


def _candidates(index: PairIndex) -> dict[tuple, _Candidate]:
    """The components the bad pairs may be explained by, those carrying the same measured pairs
    as one, in the order a scan of the pairs meets them. A component is one where nearly all of
    its measured pairs (CONSISTENT) are bad, counting against it only the good pairs that
    measured faster than its bad ones alone (one no faster was held back by another bottleneck,
    a congested tapered core, and could not have shown it), and, above a node, none of those
    was healthy in the map: that pair contradicts it (3 slow node links under one leaf are the 3
    nodes, not the leaf: the leaf's pairs between its healthy node and the other leaf's were
    fast). Its slack is for suspects that the re-test alone cleared. Undecided pairs are no
    evidence either way."""
    bad, level, decided = index.bad, index.level, ~index.undecided
    found = []
    for component in index.components_of(np.flatnonzero(bad)).tolist():
        ix = index.through(component, decided)
        mine = ix[bad[ix]]
        good = ix[~bad[ix]]
        against = good[level[good] > np.median(level[mine])]
        if len(mine) < CONSISTENT * (len(mine) + len(against)) or (
                index.components[component][0] != "node" and index.suspect[against].sum()
                < len(against)):
            continue
        found.append((index.first_seen(component, int(ix[0])), component, ix, mine,
                      len(against)))
    groups: dict[tuple, _Candidate] = {}
    for _seen, component, ix, mine, against in sorted(found, key=lambda f: f[0]):
        groups.setdefault(set_key(ix), _Candidate([], mine, len(ix), against)).members.append(
            index.components[component])
    return groups


def _cover(index: PairIndex, groups: dict[tuple, _Candidate], noise: NoiseRule | None
           ) -> tuple[list[Culprit], list[tuple[Culprit, float]], np.ndarray]:
    """(findings, the components not named as within the map's noise, the bad pairs left
    unexplained as a boolean column): the candidates that explain most bad pairs first, less
    GOOD_WEIGHT for each good pair against them."""
    healthy = ~index.bad & ~index.undecided
    # a pair's path class: how many links between switches it crosses (0 under one leaf, 2
    # across a 2-level tree's core, a dragonfly's global link 1 and its routers' uplinks)
    klass = index.count_kinds(SHARED_KINDS)
    by_class = _ClassMedians(index.bandwidth, healthy, klass)
    overall = _median(index.bandwidth[healthy])
    findings, slight, left = [], [], index.bad.copy()

    def score(key: tuple) -> tuple[int, int]:
        return int(left[groups[key].bad].sum()) - GOOD_WEIGHT * groups[key].against, \
            groups[key].pairs

    while left.any():
        best = max(groups, key=score, default=None)
        if best is None or score(best)[0] <= 0:
            break
        group = groups.pop(best)
        # every component the measured pairs cannot tell apart, the smallest kind first (a
        # quick map that measured no pair inside a leaf: its uplink or the whole leaf)
        members = sorted(group.members, key=lambda c: (KINDS.index(c[0]), c[1]))
        # against the healthy pairs of the whole map or of its bad pairs' commonest path class,
        # the faster: on a tapered tree or a dragonfly the healthy pairs across the core are
        # congested, and a slow node link's pairs in its own leaf are faster than those
        classes, counts = np.unique(klass[group.bad], return_counts=True)
        common = int(classes[np.argmax(counts)])  # the smallest class of the most pairs
        finding = Culprit(members, len(group.bad), group.pairs,
                          _median(index.bandwidth[group.bad]),
                          max((m for m in (overall, by_class.median(common)) if m is not None),
                              default=None))
        within = _within_noise(finding, int(healthy.sum()), noise)
        if within is not None and by_class.slower(group.bad, noise):
            within = None
        if within is not None:  # its pairs stay to be explained otherwise, or unexplained
            slight.append((finding, within))
            continue
        findings.append(finding)
        left[group.bad] = False
    return findings, slight, left


def _congestion(index: PairIndex) -> tuple[dict[str, int], int]:
    """({shared link: the suspect pairs across it that the re-test alone cleared, where another
    pair of their round crossed it too}, the cleared suspects that shared none: noise)."""
    cleared_ix = np.flatnonzero(index.suspect & ~index.bad & ~index.undecided)
    rounds = np.unique(index.round[cleared_ix])
    load = index.round_loads(rounds[rounds >= 0], SHARED_KINDS)
    congestion: dict[str, int] = {}
    cleared = 0
    for i in cleared_ix.tolist():
        round_ = int(index.round[i])
        crowded = [_shared_name(index.components[c])
                   for c in index.of_kinds(int(index.leaf_pair[i]), SHARED_KINDS)
                   if round_ >= 0 and load(round_, c) > 1]
        for name in crowded:
            congestion[name] = congestion.get(name, 0) + 1
        cleared += not crowded
    return congestion, cleared


def _within_noise(finding: Culprit, healthy: int, noise: NoiseRule | None) -> float | None:
    """Where a component's bad pairs lie, as a group, less far below the healthy pairs in the
    map than the noise of comparing the two medians can explain, that noise (3 standard errors:
    the map's noise per pair, x 1.2533 for a median, over the bad pairs and over the `healthy`
    ones); else None. Each pair was confirmed alone, but against references that a loaded
    machine can make unrepresentative: when nearly every pair is suspect, one or two healthy
    pairs are all there is to compare with. Judged only where netbench gave its noise."""
    if noise is None or finding.median_MBps is None or not finding.healthy_median_MBps:
        return None
    error = MEDIAN_EFFICIENCY * noise.map_noise * math.sqrt(1 / finding.bad_pairs + 1 / healthy)
    slowdown = 1.0 - finding.median_MBps / finding.healthy_median_MBps
    return RESOLUTION_SIGMAS * error if slowdown < RESOLUTION_SIGMAS * error else None


class _ClassMedians:
    """The healthy pairs' bandwidth per path class (median and count), each class's taken once."""

    def __init__(self, bandwidth: np.ndarray, healthy: np.ndarray, klass: np.ndarray) -> None:
        self.bandwidth, self.healthy, self.klass = bandwidth, healthy, klass
        self._seen: dict[int, tuple[float | None, int]] = {}

    def of(self, klass: int) -> tuple[float | None, int]:
        if klass not in self._seen:
            values = self.bandwidth[self.healthy & (self.klass == klass)]
            self._seen[klass] = _median(values), len(values)
        return self._seen[klass]

    def median(self, klass: int) -> float | None:
        return self.of(klass)[0]

    def slower(self, bad_ix: np.ndarray, noise: NoiseRule | None) -> bool:
        """Whether the bad pairs of a component lie below the healthy pairs of their own path
        class in the map beyond the noise of comparing them (`_within_noise`'s rule, class by
        class): on a tapered tree or a dragonfly the healthy pairs across the core are the
        congested ones, and a slow node link's pairs under its own leaf still show it against
        the others there."""
        if noise is None:
            return False
        for klass in np.unique(self.klass[bad_ix]).tolist():
            mine = self.bandwidth[bad_ix[self.klass[bad_ix] == klass]]
            theirs, count = self.of(klass)
            if not len(mine) or not count:
                continue
            error = MEDIAN_EFFICIENCY * noise.map_noise * math.sqrt(1 / len(mine) + 1 / count)
            if 1.0 - _median(mine) / theirs >= max(RESOLUTION_SIGMAS * error, 1e-9):
                return True
        return False


def _median(values: np.ndarray) -> float | None:
    return float(np.median(values)) if len(values) else None


def bad_pair_rule(parameters: Mapping) -> str:
    """How netbench matrix called a pair bad, from its result's parameters."""
    ceiling = f"above {parameters.get('latency_factor')} x the lowest latency"
    if parameters.get("thresholds") == "noise":
        return (f"alone, below the healthy pairs re-tested around it by more than half the fault "
                f"sought ({parameters.get('smallest_fault')}) or 3 x the noise, or {ceiling}")
    return (f"below {parameters.get('bandwidth_fraction')} x the best bandwidth or {ceiling}, "
            f"also alone")


def pairs_of(rows: Iterable[Mapping]) -> list[Pair]:
    """The rows of netbench matrix's `pairs` table as Pairs."""
    return [Pair(str(r["host_a"]), str(r["host_b"]), float(r.get("bandwidth_MBps") or 0.0),
                 bool(r.get("suspect")), bool(r.get("flagged")), r.get("round"),
                 r.get("retest_bandwidth_MBps"),
                 bool(r.get("suspect")) and not r.get("flagged")
                 and r.get("retest_bandwidth_MBps") is None)
            for r in rows]


def node_best(rows: Iterable[Mapping]) -> dict[str, float]:
    """{host: its best pair's bandwidth, MB/s} of a matrix's `pairs` rows (a pair re-tested
    alone counts at the better of its two figures): what the host's own link carries, which a
    slow partner cannot lower."""
    best: dict[str, float] = {}
    for pair in pairs_of(rows):
        figure = max(pair.bandwidth_MBps, pair.retest_MBps or 0.0)
        for host in (pair.host_a, pair.host_b):
            best[host] = max(best.get(host, 0.0), figure)
    return best


def flat_tree(hosts: Iterable[str]) -> Tree:
    """One switch holding every host: what a partition that declares no tree has (node links
    and the whole switch can still be named, no uplink)."""
    return Tree({"switch": None}, {host: "switch" for host in hosts})


def tree_of(result, rows: Iterable[Mapping]) -> Tree:
    """The switch tree a matrix result is judged against (`result.switch_tree`, topology
    text), or one switch holding the hosts of its `pairs` rows."""
    text = getattr(result, "switch_tree", "")
    return (parse_topology(text) if text else
            flat_tree(str(r[end]) for r in rows for end in ("host_a", "host_b")))


def map_of(result) -> tuple[Tree, PairIndex]:
    """A netbench matrix result's switch tree (`tree_of`) and its pairs as columns, read once
    from its `pairs` rows and cached on it: its verdict and the promise's (map_promise) read
    the same (no Pair object a pair: 5 s a million)."""
    cached = getattr(result, "indexed_map", None)
    if cached is None:
        rows = result.table("pairs")
        tree = tree_of(result, rows)
        cached = result.indexed_map = tree, PairIndex.of_rows(tree, rows, path)
    return cached


def verdict(result) -> Explanation:
    """The explanation of a netbench matrix result's bad pairs, against the switch tree the
    check attached to it (`result.switch_tree`, topology text), or one switch; cached on it."""
    cached = getattr(result, "switch_verdict", None)
    if cached is None:
        tree, index = map_of(result)
        summary = getattr(result, "summary", None) or {}
        noise = NoiseRule.of(summary, getattr(result, "parameters", None) or {})
        cached = result.switch_verdict = explain(tree, index, summary.get("bandwidth_floor_MBps"),
                                                 noise)
        cached.coverage = coverage(summary, index, not cached.uncovered,
                                   (getattr(result, "parameters", None) or {}).get(
                                       "local_rounds", 0))
    return cached


def coverage(summary: Mapping, index: PairIndex, every_uplink: bool,
             local_rounds: int = 0) -> str:
    """What a quick map (fewer rounds than the tournament's) measured: its rounds (and those
    inside the switches, netbench's --local-rounds), its pairs of all, how many each node took
    part in, and whether every uplink between its nodes was crossed; "" for a full map."""
    rounds, total = summary.get("rounds"), summary.get("rounds_total")
    all_pairs = summary.get("pairs_total")
    if not (rounds and total and all_pairs and rounds < total):
        return ""
    per_node = index.per_host()
    low, high = (int(per_node.min()), int(per_node.max())) if len(per_node) else (0, 0)
    each = f"{low}" if low == high else f"{low}-{high}"
    inside = f" and {local_rounds} inside the switches" if local_rounds else ""
    return (f"a quick map: {rounds} of {total} rounds{inside}, {len(index):,} of "
            f"{all_pairs:,} pairs ({len(index) / all_pairs:.2%}), each node in {each} of them"
            + ("; every uplink between its nodes crossed" if every_uplink else ""))


def uncovered_uplinks(tree: Tree, hosts: list[str], rank_pairs: Iterable[tuple[int, int]]
                      ) -> set[str]:
    """The uplinks between `hosts` (rank i on hosts[i]) that none of `rank_pairs` crosses."""
    placed = {h for h in hosts if h in tree.leaf_of}
    crossed = {name if kind == "uplink" else f"link {name}"
               for a, b in rank_pairs if hosts[a] in placed and hosts[b] in placed
               for kind, name in path(tree, hosts[a], hosts[b]) if kind in SHARED_KINDS}
    return set(_uplinks_between(tree, placed)) - crossed


def _uplinks_between(tree: Tree, hosts: Iterable[str]) -> list[str]:
    """The uplinks with some of `hosts` below them and some not (a group's: none, its pairs to
    other groups take the links declared between them), and those links ("link NAME") with
    some of `hosts` on both sides."""
    inside = set(hosts)
    below: dict[str, int] = {}
    for host in inside:  # one walk up a host, not one scan of the hosts a switch
        for switch in tree.up(tree.leaf_of[host])[:-1]:
            below[switch] = below.get(switch, 0) + 1
    groups = tree.groups()
    links = [f"link {name}" for ends, name in tree.links.items() if all(e in below for e in ends)]
    return sorted([s for s, count in below.items() if count < len(inside) and s not in groups]
                  + links)


def covering_seed(tree: Tree, hosts: list[str], schedule, seed: int, tries: int = 1000) -> int:
    """The first seed from `seed` on whose drawn rounds cross every uplink between `hosts`
    (`schedule(seed)`: the rank pairs netbench draws with it); `seed` itself when none of
    `tries` does (the check then names the uplinks left out)."""
    for candidate in range(seed, seed + tries):
        if not uncovered_uplinks(tree, hosts, schedule(candidate)):
            return candidate
    return seed


def _main(argv: list[str] | None = None) -> int:
    import argparse
    import json
    import subprocess
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m fabricsuite.data.switches",
        description="quick-seed: print the first --seed from SEED on whose K drawn tournament "
                    "rounds (netbench matrix --rounds K) cross every uplink between the job's "
                    "nodes, rank i on the i-th of --hosts; SEED itself when none of --tries "
                    "does. For a quick all-pairs map that covers every uplink.")
    parser.add_argument("command", choices=["quick-seed"])
    parser.add_argument("--tree", required=True, help="scontrol show topology or topology.conf")
    parser.add_argument("--hosts", required=True, help="the job's nodes in rank order, "
                        "whitespace-separated (scontrol show hostnames $SLURM_JOB_NODELIST)")
    parser.add_argument("--rounds", type=int, required=True, help="K, the rounds drawn")
    parser.add_argument("--seed", type=int, required=True, help="the seed to start from")
    parser.add_argument("--netbench", required=True, help="the netbench program")
    parser.add_argument("--tries", type=int, default=1000, help="seeds tried (1000)")
    args = parser.parse_args(argv)
    hosts = args.hosts.split()
    try:
        with open(args.tree) as text:
            tree = parse_topology(text.read())
    except (OSError, TopologyError) as err:
        print(f"quick-seed: {err}; keeping --seed {args.seed}", file=sys.stderr)
        print(args.seed)
        return 0

    def schedule(seed: int) -> list[tuple[int, int]]:
        out = subprocess.run([args.netbench, "matrix", "--print-schedule", str(len(hosts)),
                              "--rounds", str(args.rounds), "--seed", str(seed), "--json"],
                             capture_output=True, text=True, check=True).stdout
        return [tuple(p) for r in json.loads(out)["rounds"] for p in r["pairs"]]

    try:
        print(covering_seed(tree, hosts, schedule, args.seed, args.tries))
    except (OSError, subprocess.CalledProcessError, ValueError, KeyError) as err:
        print(f"quick-seed: {err}; keeping --seed {args.seed}", file=sys.stderr)
        print(args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
