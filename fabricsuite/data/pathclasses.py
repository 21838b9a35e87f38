"""The path-classes file netbench matrix reads (`--path-classes PATH`): one line a host, its name
then its switches from its leaf up, and a line `link: A B` for each link that joins two sibling
switches directly (a dragonfly's global links), written from the partition's switch tree.

netbench compares each pair of the map with the pairs of its own path class (hosts that meet as
far up the tree: one leaf, two leaves under one spine, two groups of a dragonfly) as well as with
the whole map: on a tapered tree or a dragonfly the pairs across the core are slower when
healthy, and a slow node link shows only against its leaf's other pairs (src/analysis/
pathclass.h).

    python -m fabricsuite.data.pathclasses --tree switch-tree.txt --out path-classes.txt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fabricsuite.data.hostlists import TopologyError
from fabricsuite.data.switches import Tree, parse_topology, read_tree

#: The most switches netbench reads on a host's line (src/analysis/pathclass.h).
MAX_LEVELS = 8


def text(tree: Tree) -> str:
    """The file's text for every node of `tree` (TopologyError: a tree deeper than netbench
    reads)."""
    lines = ["# host, then its switches from its leaf up (netbench matrix --path-classes)"]
    for host, leaf in sorted(tree.leaf_of.items()):
        chain = tree.up(leaf)
        if len(chain) > MAX_LEVELS:
            raise TopologyError(f"node {host} sits {len(chain)} switches deep; netbench reads "
                                f"at most {MAX_LEVELS}")
        lines.append(" ".join([host, *chain]))
    # the links that join sibling switches directly (LinkName=: a dragonfly's global links):
    # pairs of one round between the same two share it (netbench orders its re-tests by that)
    lines += [f"link: {' '.join(sorted(ends))}" for ends in sorted(tree.links, key=sorted)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fabricsuite.data.pathclasses", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", required=True,
                        help="the switch tree: scontrol show topology's output or a topology.conf")
    parser.add_argument("--out", required=True, help="the file to write")
    args = parser.parse_args(argv)
    try:
        Path(args.out).write_text(text(parse_topology(read_tree(args.tree))))
    except (OSError, TopologyError) as err:
        print(f"pathclasses: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
