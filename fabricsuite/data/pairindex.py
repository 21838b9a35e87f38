"""The pairs of an all-pairs map as columns, each pair's path through the switch tree found once
per leaf pair: what the map's verdict (fabricsuite.data.switches.explain, fabricsuite.data.
map_promise.below_promise) reads of the pairs through one component, without a Python list per
component.

A full map of 4,096 nodes has 8.4 M pairs but, under 32-node leaves, only 16,384 leaf pairs: the
components between two nodes besides their own links (`switches.path`) depend only on the two
leaves. So the index holds, per pair, its two hosts and its leaf pair (numpy arrays), per leaf
pair its components, and per host and per leaf pair the pairs in them (sorted, compressed rows):
the pairs through a node are its own slice, those through a switch the slices of the leaf pairs
whose path holds it. A component's pairs are gathered only where the verdict asks for them (the
components on a bad pair's path), in one numpy copy each.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence

import numpy as np

#: A component as `switches.path` names it: ("node", host), ("uplink", switch), ...
Component = tuple[str, str]


class PairIndex:
    """Columns of a map's pairs and each pair's path through `tree`, found with
    `path_of(tree, host_a, host_b)` once per leaf pair (switches.path). Integer component ids:
    the hosts first (0 .. hosts - 1, a node's own link), then the components above them. Made
    from switches.Pair objects (`of_pairs`) or straight from netbench matrix's `pairs` rows
    (`of_rows`: a Pair object a pair cost 5 s a million)."""

    @classmethod
    def of_pairs(cls, tree, pairs: Sequence, path_of: Callable) -> PairIndex:
        # a list comprehension a column, each converted in C (a generator a column, or one
        # zip of the pairs' fields, took 3-8x as long); None as a number in the comprehension
        # (numpy converts a list holding None slowly)
        return cls(tree, path_of, [p.host_a for p in pairs], [p.host_b for p in pairs],
                   [p.bandwidth_MBps for p in pairs],
                   [p.retest_MBps or np.nan for p in pairs], [p.suspect for p in pairs],
                   [p.bad for p in pairs], [p.undecided for p in pairs],
                   [-1 if p.round is None else p.round for p in pairs])

    @classmethod
    def of_rows(cls, tree, rows: Sequence[Mapping], path_of: Callable) -> PairIndex:
        """From the rows of netbench matrix's `pairs` table, read as `switches.pairs_of` reads
        them: a suspect neither flagged bad nor re-tested is undecided."""
        suspect = [bool(r.get("suspect")) for r in rows]
        bad = [bool(r.get("flagged")) for r in rows]
        retest = [r.get("retest_bandwidth_MBps") for r in rows]
        return cls(tree, path_of, [str(r["host_a"]) for r in rows],
                   [str(r["host_b"]) for r in rows],
                   [float(r.get("bandwidth_MBps") or 0.0) for r in rows],
                   [value or np.nan for value in retest], suspect, bad,
                   [s and not b and r is None for s, b, r in zip(suspect, bad, retest,
                                                                  strict=True)],
                   [-1 if r.get("round") is None else r["round"] for r in rows])

    def __init__(self, tree, path_of: Callable, host_a: list[str], host_b: list[str],
                 bandwidth: list[float], retest: list[float], suspect: list[bool],
                 bad: list[bool], undecided: list[bool], round_: list[int]) -> None:
        self.hosts, self.a, self.b = _host_ids(tree, host_a, host_b)
        self.bandwidth = np.array(bandwidth, float)
        #: re-tested alone (NaN: not re-tested, or re-tested to nothing)
        self.retest = np.array(retest, float)
        #: what a pair delivers as netbench last measured it: alone where re-tested, else in
        #: its round
        self.level = np.where(np.isnan(self.retest), self.bandwidth, self.retest)
        self.suspect = np.array(suspect, bool)
        self.bad = np.array(bad, bool)
        self.undecided = np.array(undecided, bool)
        #: the tournament round (-1: unknown)
        self.round = np.array(round_, np.int64)
        self._leaf_pairs(tree, path_of)
        self._rows()

    def __len__(self) -> int:
        return len(self.a)

    def per_host(self) -> np.ndarray:
        """How many pairs each host (`hosts`) took part in."""
        return (np.bincount(self.a, minlength=len(self.hosts))
                + np.bincount(self.b, minlength=len(self.hosts)))

    def _leaf_pairs(self, tree, path_of: Callable) -> None:
        hosts = self.hosts
        missing = [h for h in hosts if h not in tree.leaf_of]
        if missing:  # the path of the first pair with such a host says which, as it always has
            first = np.flatnonzero(np.isin(self.a, [hosts.index(h) for h in missing])
                                   | np.isin(self.b, [hosts.index(h) for h in missing]))[0]
            path_of(tree, hosts[self.a[first]], hosts[self.b[first]])
        leaf_names = sorted(set(tree.leaf_of[h] for h in hosts))
        leaf_id = {name: i for i, name in enumerate(leaf_names)}
        host_leaf = np.array([leaf_id[tree.leaf_of[h]] for h in hosts], np.int64)
        code = host_leaf[self.a] * len(leaf_names) + host_leaf[self.b]
        _codes, first, self.leaf_pair = np.unique(code, return_index=True, return_inverse=True)
        self.leaf_pair = self.leaf_pair.reshape(-1)
        # each leaf pair's components, found from its first pair (in the pairs' order, so a
        # tree that cannot join two nodes fails on the first such pair, as a scan would)
        self.component_ids: dict[Component, int] = {}
        self.components: list[Component] = [("node", h) for h in hosts]
        between: list[list[int]] = [[] for _ in first]
        for lp in np.argsort(first, kind="stable"):
            i = first[lp]
            route = path_of(tree, hosts[self.a[i]], hosts[self.b[i]])[2:]
            between[lp] = [self._component_id(c) for c in route]
        #: per leaf pair, its components in path order
        self.between = between

    def _component_id(self, component: Component) -> int:
        found = self.component_ids.get(component)
        if found is None:
            found = self.component_ids[component] = len(self.components)
            self.components.append(component)
        return found

    def _rows(self) -> None:
        count = len(self.a)
        # the pairs of each host (as either end) and of each leaf pair, in the pairs' order
        ends = np.concatenate([self.a, self.b])
        order = np.argsort(ends, kind="stable")
        self._host_pairs = order % count  # an end's place in `ends` less the a-ends
        self._host_start = np.searchsorted(ends[order], np.arange(len(self.hosts) + 1))
        order = np.argsort(self.leaf_pair, kind="stable")
        self._lp_pairs = order
        self._lp_start = np.searchsorted(self.leaf_pair[order], np.arange(len(self.between) + 1))
        # per component above the nodes, the leaf pairs whose path holds it
        holders: dict[int, list[int]] = {}
        for lp, ids in enumerate(self.between):
            for c in ids:
                holders.setdefault(c, []).append(lp)
        self._holders = holders

    def through(self, component: int, keep: np.ndarray | None = None) -> np.ndarray:
        """The sorted indices of the pairs whose path holds `component` (those of `keep`, a
        boolean column, where given)."""
        if component < len(self.hosts):
            pieces = [self._host_pairs[self._host_start[component]:
                                       self._host_start[component + 1]]]
        else:
            pieces = [self._lp_pairs[self._lp_start[lp]:self._lp_start[lp + 1]]
                      for lp in self._holders.get(component, [])]
        found = np.sort(np.concatenate(pieces)) if pieces else np.zeros(0, np.int64)
        return found[keep[found]] if keep is not None else found

    def components_of(self, indices: np.ndarray) -> np.ndarray:
        """The components on the paths of the pairs `indices`, each once."""
        above = np.unique(self.leaf_pair[indices])
        return np.unique(np.concatenate([
            self.a[indices], self.b[indices],
            np.array([c for lp in above for c in self.between[lp]], np.int64)]))

    def first_seen(self, component: int, first_pair: int) -> tuple[int, int]:
        """(pair, place in its path) where `component` first appears scanning the pairs in
        order (`first_pair`: the first pair through it), each path as `switches.path` lists it
        (its two nodes, then the components above them)."""
        if component < len(self.hosts):
            return first_pair, 0 if self.a[first_pair] == component else 1
        return first_pair, 2 + self.between[self.leaf_pair[first_pair]].index(component)

    def count_kinds(self, kinds: Sequence[str]) -> np.ndarray:
        """Per pair, how many components of `kinds` its path holds (a pair's path class: the
        links between switches it crosses)."""
        per_lp = np.array([sum(self.components[c][0] in kinds for c in ids)
                           for ids in self.between], np.int64)
        return per_lp[self.leaf_pair]

    def of_kinds(self, leaf_pair: int, kinds: Sequence[str]) -> list[int]:
        """The components of `kinds` on the path of leaf pair `leaf_pair`, in path order."""
        return [c for c in self.between[leaf_pair] if self.components[c][0] in kinds]

    def round_loads(self, rounds: np.ndarray, kinds: Sequence[str]
                    ) -> Callable[[int, int], int]:
        """load(round, component): how many pairs of that round crossed the component (of
        `kinds`), counted over the rounds `rounds` alone (one sort of the pairs of those
        rounds, not a count per pair)."""
        chosen = np.flatnonzero(np.isin(self.round, rounds))
        n_lp, n_comp = len(self.between), len(self.components)
        keys, counts = np.unique(self.round[chosen] * n_lp + self.leaf_pair[chosen],
                                 return_counts=True)
        rnd, lp = np.divmod(keys, n_lp)
        # each (round, leaf pair) spread over the components of `kinds` on its path
        of_kinds = [self.of_kinds(i, kinds) for i in range(n_lp)]
        widths = np.array([len(ids) for ids in of_kinds], np.int64)
        width = widths[lp]
        flat = np.array([c for ids in of_kinds for c in ids], np.int64)
        start = (np.cumsum(widths) - widths)[lp]
        place = np.arange(width.sum()) - np.repeat(np.cumsum(width) - width, width)
        comp_keys = np.repeat(rnd, width) * n_comp + flat[np.repeat(start, width) + place]
        loads_keys, inverse = np.unique(comp_keys, return_inverse=True)
        loads = np.bincount(inverse.reshape(-1), weights=np.repeat(counts, width),
                            minlength=len(loads_keys))

        def load(round_: int, component: int) -> int:
            key = round_ * n_comp + component
            at = int(np.searchsorted(loads_keys, key))
            return int(loads[at]) if at < len(loads_keys) and loads_keys[at] == key else 0
        return load

    def crossed(self, kinds: Sequence[str]) -> set[int]:
        """The components of `kinds` that some pair's path holds."""
        return {c for lp in range(len(self.between)) for c in self.of_kinds(lp, kinds)}


def _host_ids(tree, host_a: list[str], host_b: list[str]
              ) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(the hosts of the pairs, each pair's two as indices into them): numbered by the tree's
    hosts first (a dictionary of thousands, not a hash of every pair's names), then only those
    of the pairs kept. A host outside the tree is numbered after the tree's."""
    ids = {h: i for i, h in enumerate(tree.leaf_of)}

    def numbered(hosts: list[str]) -> np.ndarray:
        return np.array(list(map(ids.__getitem__, hosts)), np.int64)
    try:
        a, b = numbered(host_a), numbered(host_b)
    except KeyError:
        for host in (*host_a, *host_b):
            ids.setdefault(host, len(ids))
        a, b = numbered(host_a), numbered(host_b)
    names = list(ids)
    present = np.flatnonzero(np.bincount(a, minlength=len(names))
                             + np.bincount(b, minlength=len(names)))
    renumber = np.zeros(len(names), np.int64)
    renumber[present] = np.arange(len(present))
    return [names[i] for i in present.tolist()], renumber[a], renumber[b]


def set_key(indices: np.ndarray) -> tuple[int, bytes]:
    """A key equal for equal sorted index arrays: what components carrying the same measured
    pairs share (they cannot be told apart by them)."""
    return len(indices), hashlib.blake2b(np.ascontiguousarray(indices, np.int64).tobytes(),
                                         digest_size=16).digest()


def median_without(everything: np.ndarray, removed: np.ndarray) -> float | None:
    """The median of the sorted multiset `everything` less the sorted `removed` (a sub-multiset
    of it), found by bisection: log steps, not a copy of the rest."""
    size = len(everything) - len(removed)
    if size <= 0:
        return None

    def kth(k: int) -> float:
        # the smallest index i whose value has k + 1 values of the rest at or below it
        low, high = 0, len(everything) - 1
        while low < high:
            mid = (low + high) // 2
            value = everything[mid]  # how many of the rest lie at or below it (monotone)
            if (np.searchsorted(everything, value, "right")
                    - np.searchsorted(removed, value, "right") >= k + 1):
                high = mid
            else:
                low = mid + 1
        return float(everything[low])

    if size % 2:
        return kth(size // 2)
    return (kth(size // 2 - 1) + kth(size // 2)) / 2
