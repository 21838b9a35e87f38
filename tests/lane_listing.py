"""A pytest plugin for tests/test_lanes.py: prints each collected test's lanes, one line each
("LANES <node id> <lane>,<lane>"), so that one collection tells every test's lanes (instead
of one collection per lane). Used as `-p lane_listing` with tests/ on PYTHONPATH."""

LANE_NAMES = ("unit", "mpi", "reframe", "emucluster")


def pytest_collection_finish(session):
    for item in session.items:
        lanes = sorted({mark.name for mark in item.iter_markers()} & set(LANE_NAMES))
        print(f"LANES {item.nodeid} {','.join(lanes)}")
