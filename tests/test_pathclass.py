"""Path classes (issue 66): a pair of the all-pairs map is compared with the pairs whose hosts
meet as far up the switch tree, as well as with the whole map. The C side (src/analysis/
pathclass.c, pairmap.c's nb_class_bests) through libnbanalysis.so; the file fabricsuite writes
from a switch tree (fabricsuite.data.pathclasses); and the verdict's rule that a good pair
held back by another bottleneck is no evidence against a component (fabricsuite.data.switches).
"""

from __future__ import annotations

import ctypes
import math

import analysis_lib
import pytest

from fabricsuite.data import pathclasses, switches

MAX_LEVELS = 8  # NB_PATH_MAX_LEVELS


class PathTable(ctypes.Structure):
    _fields_ = [("hosts", ctypes.c_size_t), ("host", ctypes.POINTER(ctypes.c_char_p)),
                ("levels", ctypes.POINTER(ctypes.c_int)), ("chain", ctypes.POINTER(ctypes.c_int)),
                ("switches", ctypes.c_size_t),
                ("switch_name", ctypes.POINTER(ctypes.c_char_p)),
                ("links", ctypes.c_size_t), ("link_keys", ctypes.POINTER(ctypes.c_long))]


@pytest.fixture(scope="module")
def lib():
    lib = ctypes.CDLL(str(analysis_lib.build()))
    lib.nb_path_table_parse.argtypes = [ctypes.c_char_p, ctypes.POINTER(PathTable),
                                        ctypes.c_char_p, ctypes.c_size_t]
    lib.nb_path_table_free.argtypes = [ctypes.POINTER(PathTable)]
    lib.nb_path_table_host.restype = ctypes.c_long
    lib.nb_path_table_host.argtypes = [ctypes.POINTER(PathTable), ctypes.c_char_p]
    ints = ctypes.POINTER(ctypes.c_int)
    lib.nb_path_class.argtypes = [ints, ctypes.c_int, ints, ctypes.c_int]
    lib.nb_path_segment.argtypes = [ctypes.POINTER(PathTable), ints, ctypes.c_int, ints,
                                    ctypes.c_int]
    lib.nb_path_segment.restype = ctypes.c_long
    lib.nb_class_bests.argtypes = [ctypes.POINTER(ctypes.c_double), ints, ctypes.c_size_t,
                                   ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_double)]
    return lib


def parse(lib, text: str) -> tuple[PathTable | None, str]:
    table, why = PathTable(), ctypes.create_string_buffer(256)
    status = lib.nb_path_table_parse(text.encode(), ctypes.byref(table), why, len(why))
    return (table if status == 0 else None), why.value.decode()


def chains_of(table: PathTable, a: str, b: str, lib) -> tuple:
    """(a's switch chain, its length, b's, its length) as nb_path_class takes them."""
    rows = [lib.nb_path_table_host(ctypes.byref(table), h.encode()) for h in (a, b)]
    chains = [ctypes.cast(ctypes.byref(table.chain.contents, 4 * MAX_LEVELS * r),
                          ctypes.POINTER(ctypes.c_int)) for r in rows]
    return chains[0], table.levels[rows[0]], chains[1], table.levels[rows[1]]


def class_of(lib, table: PathTable, a: str, b: str) -> int:
    return lib.nb_path_class(*chains_of(table, a, b, lib))


def segment_of(lib, table: PathTable, a: str, b: str) -> int:
    return lib.nb_path_segment(ctypes.byref(table), *chains_of(table, a, b, lib))


TAPERED = """\
SwitchName=core Switches=leaf1,leaf2
SwitchName=leaf1 Nodes=n[1-3]
SwitchName=leaf2 Nodes=n[4-6]
"""
DRAGONFLY = """\
SwitchName=root Switches=g1,g2
SwitchName=g1 Switches=r1,r2
SwitchName=g2 Switches=r3
SwitchName=r1 Nodes=a1,a2
SwitchName=r2 Nodes=b1
SwitchName=r3 Nodes=c1
LinkName=g1~g2 Switches=g1,g2
"""


def test_a_pairs_class_is_how_far_up_its_hosts_meet(lib):
    table, why = parse(lib, pathclasses.text(switches.parse_topology(TAPERED)))
    assert table is not None, why
    assert class_of(lib, table, "n1", "n2") == 0  # one leaf
    assert class_of(lib, table, "n1", "n5") == 2  # across the core
    lib.nb_path_table_free(ctypes.byref(table))
    table, why = parse(lib, pathclasses.text(switches.parse_topology(DRAGONFLY)))
    assert table is not None, why
    assert [class_of(lib, table, *pair) for pair in (("a1", "a2"), ("a1", "b1"), ("a1", "c1"))] \
        == [0, 2, 4]  # one router, one group, two groups
    assert lib.nb_path_table_host(ctypes.byref(table), b"nowhere") == -1
    lib.nb_path_table_free(ctypes.byref(table))


def test_pairs_share_the_link_at_the_top_of_their_paths_only_between_the_same_two_switches(lib):
    """The segment a pair's path crosses at its top (nb_path_segment: what the re-tests' order
    counts the round's sharers of) where the file declares it (`link:` lines, from LinkName=):
    a dragonfly's global links between the same two groups. None under one router, between two
    routers (no link declared), or across a tree's spine (its leaves' uplinks, which every pair
    leaving either leaf shares)."""
    text = DRAGONFLY.replace("root Switches=g1,g2", "root Switches=g1,g2,g3") + \
        "SwitchName=g3 Switches=r4\nSwitchName=r4 Nodes=d1\n" + \
        "LinkName=g1~g3 Switches=g1,g3\nLinkName=g2~g3 Switches=g2,g3\n"
    written = pathclasses.text(switches.parse_topology(text))
    assert "link: g1 g2" in written and "link: g2 g3" in written, written
    table, why = parse(lib, written)
    assert table is not None, why
    assert table.links == 3
    across = {pair: segment_of(lib, table, *pair) for pair in (
        ("a1", "c1"), ("b1", "c1"), ("c1", "a2"), ("a1", "d1"), ("c1", "d1"))}
    # g1~g2 three times (either order), g1~g3 and g2~g3 once each
    assert across[("a1", "c1")] == across[("b1", "c1")] == across[("c1", "a2")] >= 0, across
    assert len(set(across.values())) == 3, across
    assert segment_of(lib, table, "a1", "b1") == -1  # two routers of g1
    assert segment_of(lib, table, "a1", "a2") == -1  # one router
    lib.nb_path_table_free(ctypes.byref(table))
    table, why = parse(lib, pathclasses.text(switches.parse_topology(TAPERED)))
    assert table is not None and table.links == 0, why
    assert segment_of(lib, table, "n1", "n5") == -1  # across the core
    lib.nb_path_table_free(ctypes.byref(table))


def test_the_file_names_each_host_then_its_switches_from_its_leaf_up():
    lines = pathclasses.text(switches.parse_topology(DRAGONFLY)).splitlines()
    assert lines[0].startswith("#")
    assert "a1 r1 g1 root" in lines and "c1 r3 g2 root" in lines


@pytest.mark.parametrize(("text", "said"), [
    ("", "no host line"),
    ("# nothing but a comment\n\n", "no host line"),
    ("n1 leaf1\nn2\n", "line 2: host n2 names no switch"),
    ("n1 leaf1\n\nn1 leaf2\n", "line 3: host n1 has a line already"),
    ("n1 " + " ".join(f"s{i}" for i in range(MAX_LEVELS + 1)) + "\n",
     f"names more than {MAX_LEVELS} switches"),
    ("n1 leaf1\nlink: g1\n", "line 2: give `link: A B`"),
    ("n1 leaf1\nlink: g1 g2 g3\n", "line 2: give `link: A B`"),
    ("link: g1 g2\n", "no host line"),
])
def test_a_bad_file_is_refused_naming_its_line(lib, text, said):
    table, why = parse(lib, text)
    assert table is None and said in why


def test_each_class_has_its_own_best(lib):
    # 12 pairs in a leaf at 100, 12 across a congested core at 50 or 60 (and one above the
    # rest: robust to it): each class's 90th percentile, none for a class without a pair; a
    # pair in no class (-1) counts in none
    bandwidth = [100.0] * 12 + [50.0] * 8 + [60.0] * 3 + [95.0, 70.0]
    klass = [0] * 12 + [2] * 12 + [-1]
    best = (ctypes.c_double * 4)()
    lib.nb_class_bests((ctypes.c_double * len(bandwidth))(*bandwidth),
                       (ctypes.c_int * len(klass))(*klass), len(bandwidth), 4, 1, best)
    assert best[0] == 100.0 and best[2] == 60.0 and math.isnan(best[1])
    # and the lowest latency of each: 2 us a pair under one leaf, 5 us across (one at 4)
    latency = [2.0] * 12 + [5.0] * 11 + [4.0, 1.0]
    lib.nb_class_bests((ctypes.c_double * len(latency))(*latency),
                       (ctypes.c_int * len(klass))(*klass), len(latency), 4, 0, best)
    assert best[0] == 2.0 and best[2] == 5.0


def test_pairs_held_back_by_a_congested_core_do_not_clear_a_slow_node_link():
    """A tapered tree's slow node link: bad only in its leaf (0.75 of the others there); its
    pairs across the core measured 0.5, congested, no faster than its bad pairs alone, so they
    do not count against it. A pair across at full rate would."""
    tree = switches.parse_topology(TAPERED)

    def pair(a, b, mbps, bad=False):
        return switches.Pair(a, b, mbps, bad, bad, 1, mbps if bad else None)

    inside = [pair("n1", "n2", 75.0, True), pair("n1", "n3", 75.0, True),
              pair("n2", "n3", 100.0)]
    others = [pair("n4", "n5", 100.0), pair("n4", "n6", 100.0), pair("n5", "n6", 100.0)]
    across = [pair(a, b, 50.0) for a in ("n1", "n2", "n3") for b in ("n4", "n5", "n6")]
    named = switches.explain(tree, inside + others + across).findings
    assert [f.components for f in named] == [[("node", "n1")]]
    assert "against 100.0 MB/s for the healthy pairs (-25%)" in named[0].describe()
    fast = [pair("n1", b, 100.0) for b in ("n4", "n5", "n6")]
    across = [p for p in across if p.host_a != "n1"] + fast
    assert not switches.explain(tree, inside + others + across).findings
