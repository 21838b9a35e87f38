"""Which fabric counters moved during a job (fabricsuite.counters), from real readings of
config/launchers/read-counters (tests/data/counters/README.md)."""

from pathlib import Path

import pytest

from fabricsuite import counters
from fabricsuite.counters import CountersError

DATA = Path(__file__).resolve().parent / "data" / "counters"


def reading(name: str) -> dict[str, int]:
    return counters.parse((DATA / f"{name}.txt").read_text())


def test_a_shaped_link_shows_the_shaper_s_drops_and_overlimits():
    moved = counters.deltas(reading("tbf-before"), reading("tbf-after"))
    assert moved["net/lo/tx_bytes"] == 224001 and moved["tc/lo/tbf-835e/sent_packets"] == 16
    assert counters.trouble(moved) == {"tc/lo/tbf-835e/dropped": 5,
                                       "tc/lo/tbf-835e/overlimits": 5}
    assert counters.describe(counters.trouble(moved)) == (
        "tc lo tbf-835e dropped +5, tc lo tbf-835e overlimits +5")


def test_an_idle_link_shows_no_movement():
    before, after = reading("idle-before"), reading("idle-after")
    assert before and counters.deltas(before, after) == {}


def test_every_line_of_a_reading_is_a_counter():
    for name in ("tbf-before", "tbf-after", "idle-before", "idle-after"):
        lines = (DATA / f"{name}.txt").read_text().splitlines()
        assert len(counters.parse("\n".join(lines))) == len(lines)
        assert all(line.split("/", 1)[0] in counters.SOURCES for line in lines)


def test_a_counter_present_once_only_is_not_a_change():
    # an interface that came up during the job (or a source that failed once) moves nothing
    assert counters.deltas({"net/a/rx_errors": 1}, {"net/b/rx_errors": 5}) == {}


@pytest.mark.parametrize("declared", ["net", ["net", "ethtool"], [1]])
def test_a_bad_declaration_is_one_line_naming_the_sources(declared):
    with pytest.raises(CountersError) as caught:
        counters.sources({"counters": declared})
    assert "net, infiniband, cxi, tc" in str(caught.value)


def test_the_default_sources():
    assert counters.sources({}) == ["net", "infiniband", "cxi"]
    assert counters.sources({"counters": ["tc"]}) == ["tc"]


def test_a_regression_names_the_counters_that_moved():
    import copy
    import json

    from fabricsuite import session

    report = json.loads((Path(__file__).parent / "data" / "baseline" /
                         "run-report-pt2pt-local.json").read_text())
    report = copy.deepcopy(report)
    for case in report["runs"][-1]["testcases"]:
        if case["result"] == "fail":
            case["counters"] = "tc eth0 tbf-8001 overlimits +3021"
    lines = [ln for ln in session.verdict_lines(report) if ln.startswith("REGRESSION")]
    assert lines and all(ln.endswith("; counters moved: tc eth0 tbf-8001 overlimits +3021")
                         for ln in lines), lines
