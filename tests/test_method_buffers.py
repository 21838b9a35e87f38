"""netbench `reuse` and `vector` (src/methods/buffers.c) and their checks (checks/buffers.py), run
for real: 2 ranks bound to cores with Debian's Open MPI and MPICH, and a ReFrame session on the
local system. The figures are checked for soundness and consistency, never for their values (the
machine is shared and noisy)."""

import math
import re

import pytest
from mpi_support import NEEDS_OPEN_MPI, help_missing, mechanics_session, run, usage_error_line

from fabricsuite.data.netbench_result import parse_human, parse_json

pytestmark = pytest.mark.integration

#: Short runs: soundness, not values.
QUICK = ["--repetitions", "3", "--time-cap-ms", "1"]
KiB = 1024


def assert_costs_sound(result, table, variant_key):
    """A cost is >= 0 and within what the latencies allow, or null and flagged under its row."""
    flagged = {u["quantity"] for u in result.unreliable}
    rows = result.table(table)
    for row in rows:
        where = f"size_bytes={row['size_bytes']},{variant_key}={row[variant_key]}"
        assert row["noise_us"] >= 0 and row["ratio"] > 0, row
        if row["extra_us"] is None:
            assert f"extra_us[{where}]" in flagged, (row, flagged)
        else:
            assert row["extra_us"] >= 0, row
            # a paired median lies within the spread of the two latencies' ranges
            assert row["extra_us"] <= row["latency_max_us"], row
        assert 0 < row["latency_min_us"] <= row["latency_median_us"] <= row["latency_max_us"]
        assert math.isclose(row["bandwidth_median_MBps"],
                            row["size_bytes"] / row["latency_median_us"], rel_tol=2e-3), row


@pytest.mark.parametrize("method, words", [
    ("reuse", ["Zamani", "5.3", "Kutlug", "3.2.4", "4.2.3", "--reuse-percentages",
               "default 0,25,50,75,100", "--buffers", "default 1024", "--memory-cap",
               "default 64M", "PROT_NONE", "interleaved", "default: 8,64,512,4K,16K,64K,256K,1M",
               "extra_us [us, lower is better]", "ratio [ratio, lower is better]"]),
    ("vector", ["Kutlug", "3.2.7", "4.2.5", "MPI_Type_vector", "--segments",
                "default 1,2,4,8,16,32,64", "--stride-factor", "default 2",
                "default: 64,1K,16K,64K,256K,1M", "contiguous", "extra_us [us, lower is better]"]),
])
def test_help_explains_the_method(netbench, method, words):
    assert help_missing(netbench[0], method, words) == []


@pytest.mark.parametrize("args, words", [
    (["reuse", "--reuse-percentages", "50,0"], "must include 100"),
    (["reuse", "--reuse-percentages", "100"], "measures no cost"),
    (["reuse", "--reuse-percentages", "100,101"], "--reuse-percentages"),
    (["reuse", "--sizes", "0,8"], "0 bytes"),
    (["reuse", "--sizes", "1M", "--memory-cap", "1M"], "--memory-cap"),
    (["reuse", "--buffers", "1"], "--buffers"),
    (["vector", "--sizes", "100"], "does not split into"),
    (["vector", "--segments", "0,4"], "--segments"),
    (["vector", "--stride-factor", "0"], "--stride-factor"),
    (["vector", "--reuse-percentages", "100"], "does not apply to vector"),
])
def test_bad_arguments_give_one_line_and_status_2(netbench, args, words):
    assert words in usage_error_line(netbench[0], args)


def test_reuse_measures_every_size_and_percentage(netbench, tmp_path):
    program, launcher, _ = netbench
    json_file = tmp_path / "reuse.json"
    # a 1 MiB cap: 128 fresh buffers of 8 B (a page and its guard each), 15 of 64 KiB, 3 of 256 KiB
    proc = run([*launcher, program, "reuse", "--sizes", "8,64K,256K", "--memory-cap", "1M",
                *QUICK, "--json-file", str(json_file)])
    assert proc.returncode == 0, proc.stderr
    result = parse_json(json_file.read_text())
    human = parse_human(proc.stdout)
    assert human.table("reuse") == result.table("reuse")
    page = result.parameters["page_bytes"]
    rows = {(r["size_bytes"], r["reuse_percent"]): r for r in result.table("reuse")}
    assert set(rows) == {(s, p) for s in (8, 64 * KiB, 256 * KiB) for p in (0, 25, 50, 75, 100)}
    for size in (8, 64 * KiB, 256 * KiB):
        footprint = -(-size // page) * page + page
        assert rows[(size, 0)]["buffers"] == min(1024, (1 << 20) // footprint), rows[(size, 0)]
        reference = rows[(size, 100)]
        assert reference["extra_us"] == 0 and reference["ratio"] == 1, reference
        # one iteration count for every percentage of a size: they are measured side by side
        assert len({rows[(size, p)]["iterations"] for p in (0, 25, 50, 75, 100)}) == 1
    assert_costs_sound(result, "reuse", "reuse_percent")
    summary = result.summary
    assert summary["cost_size_bytes"] == 64 * KiB and summary["cost_reuse_percent"] == 0
    assert summary["cost_extra_us"] == rows[(64 * KiB, 0)]["extra_us"]
    assert summary["cost_ratio"] == rows[(64 * KiB, 0)]["ratio"]
    assert summary["latency_reuse100_small_us"] == rows[(8, 100)]["latency_median_us"]
    assert result.parameters["reuse_percentages"] == [100, 75, 50, 25, 0]


def test_vector_measures_every_size_and_segment_count(netbench, tmp_path):
    program, launcher, _ = netbench
    proc = run([*launcher, program, "vector", "--sizes", "64,4K", "--segments", "1,4,64",
                "--stride-factor", "3", "--summary-size", "1M", *QUICK, "--json"])
    assert proc.returncode == 0, proc.stderr
    result = parse_json(proc.stdout)
    assert [r["size_bytes"] for r in result.table("contiguous")] == [64, 4096]
    rows = {(r["size_bytes"], r["segments"]): r for r in result.table("vector")}
    assert set(rows) == {(s, k) for s in (64, 4096) for k in (1, 4, 64)}
    for (size, k), row in rows.items():
        assert row["segment_bytes"] * k == size and row["stride_bytes"] == 3 * row["segment_bytes"]
    assert_costs_sound(result, "vector", "segments")
    # --summary-size above every size: the largest size measured, at the most segments
    assert result.summary["cost_size_bytes"] == 4096 and result.summary["cost_segments"] == 64
    assert result.summary["cost_ratio"] == rows[(4096, 64)]["ratio"]


@NEEDS_OPEN_MPI
def test_checks_on_local(tmp_path):
    """A real ReFrame session of both checks with Open MPI: they run at the machine's one
    distance class and report their figures with units."""
    proc = mechanics_session(tmp_path / "results", "checks/buffers.py")
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    summary = re.findall(r"Ran (\d+)/(\d+) test case\(s\) .*\((\d+) failure", proc.stdout)
    # the build and one distance class per check ran, no failure
    assert summary and summary[0][0] == "3" and summary[0][2] == "0", summary
    figures = {name: (float(value), unit) for name, value, unit in
               re.findall(r"P: (\w+): (\S+) (\S+)", proc.stdout)}
    expected = {"reuse_0pct_ratio_64KiB": "ratio", "reuse_0pct_bandwidth_64KiB_MBps": "MB/s",
                "reuse_100pct_latency_8B_us": "us", "vector_64seg_ratio_64KiB": "ratio",
                "vector_contiguous_latency_64KiB_us": "us"}
    for name, unit in expected.items():
        value, seen_unit = figures[name]
        assert seen_unit == unit, (name, seen_unit)
        assert value > 0, (name, value)
    perflog = tmp_path / "results" / "perflogs" / "local" / "default" / "NetbenchVector.log"
    assert "vector_64seg_ratio_64KiB_value" in perflog.read_text().splitlines()[0]
