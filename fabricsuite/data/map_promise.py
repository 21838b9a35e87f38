"""What of the fabric an all-pairs map (netbench matrix) measured below the fabric's promise:
a leaf, a node or the whole fabric, read against the switch tree (fabricsuite.data.switches).
The relative rule of the map's verdict compares each pair with the best ones of the same map and
cannot see a fabric uniformly slow; this one compares the pairs with the line rate the fabric
promises (docs/verdicts.md, "The fabric's promise").
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from fabricsuite.data.pairindex import PairIndex, median_without, set_key
from fabricsuite.data.switches import Pair, Tree, path


def below_promise(tree: Tree, pairs: Iterable[Pair] | PairIndex, line_rate_gbps: float,
                  fraction: float) -> list[str]:
    """The parts of the fabric the map measured below the promise, one line each (the relative
    rule, each pair against the best ones of the same map, cannot see a fabric uniformly slow):
    each leaf whose uplink's pairs lie below `fraction` of the line rate (median) while the
    pairs not through it do not (leaves whose uplinks the same pairs cross are named together:
    the pairs cannot tell them apart); then each node whose other pairs do the same; and the
    whole fabric where its median pair lies below the promise and no part explains it. A pair
    counts with its bandwidth measured alone where it was re-tested (no round-mate shared its
    path), else as measured in its round; a pair that measured nothing does not count. The
    pairs are read as columns, each path found once per leaf pair (fabricsuite.data.pairindex,
    or given so: switches.map_of), the median of the pairs not through a part taken from the
    sorted whole (`median_without`): a 4,096-node map is judged in seconds."""
    if not line_rate_gbps > 0:
        return []
    index = pairs if isinstance(pairs, PairIndex) else PairIndex.of_pairs(
        tree, [p for p in pairs if p.bandwidth_MBps > 0], path)
    keep = index.bandwidth > 0
    if not keep.any():
        return []
    shares = index.level * 8e-3 / line_rate_gbps
    everything = np.sort(shares[keep])

    def line(what: str, chosen: np.ndarray) -> str:
        return (f"BELOW PROMISE {what}: median pair {np.median(shares[chosen]):.2f} of the "
                f"{line_rate_gbps:g} Gb/s line rate over {len(chosen)} pair(s), promised "
                f"{fraction:.2f}")

    def below(chosen: np.ndarray) -> bool:
        return bool(len(chosen)) and float(np.median(shares[chosen])) < fraction

    def others_below(chosen: np.ndarray) -> bool:
        rest = median_without(everything, np.sort(shares[chosen]))
        return rest is not None and rest < fraction

    found, explained = [], np.zeros(len(keep), bool)
    through_leaves: dict[tuple, tuple[np.ndarray, list[str]]] = {}
    for switch in sorted(s for s, parent in tree.parent.items() if parent):
        uplink = index.component_ids.get(("uplink", switch))
        through = index.through(uplink, keep) if uplink is not None else []
        if len(through):
            through_leaves.setdefault(set_key(through), (through, []))[1].append(switch)
    for through, leaves in through_leaves.values():
        if below(through) and not others_below(through):
            why = ("their uplinks: the pairs cannot tell them apart" if len(leaves) > 1
                   else "its uplink")
            found.append(line(f"leaf {' or '.join(leaves)} ({why})", through))
            explained[through] = True
    for host, node in sorted((h, i) for i, h in enumerate(index.hosts)):
        through = index.through(node, keep)
        touching = through[~explained[through]]
        if below(touching) and not others_below(through):
            found.append(line(f"node {host}", touching))
    everywhere = np.flatnonzero(keep)
    if not found and below(everywhere):
        found.append(line("the fabric", everywhere))
    return found
