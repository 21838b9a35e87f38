"""The netbench result parser, on real output captured from netbench runs on this machine.

tests/data/netbench/ holds, for each method and both MPIs, one run's JSON and its human-format
stdout (see the README there). The two renderings must parse to the same content, and the parser
must reject truncated or foreign input with a clear message.
"""

import json
import math
from pathlib import Path

import pytest

from fabricsuite.data.netbench_result import ResultError, load, parse_human, parse_json

DATA = Path(__file__).parent / "data" / "netbench"
METHODS = ["pingpong", "bibw", "bothway", "flood", "overlap", "loggp", "dense", "beff",
           "collectives"]
MPIS = ["openmpi", "mpich"]
CAPTURES = [(m, mpi) for m in METHODS for mpi in MPIS]


def captured(method: str, mpi: str, ext: str) -> Path:
    return DATA / f"{method}-{mpi}.{ext}"


def _same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        if a is None or b is None:
            return a is b
        return math.isclose(a, b, rel_tol=2e-3, abs_tol=2e-3)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("method, mpi", CAPTURES)
def test_json_and_human_renderings_agree(method, mpi):
    from_json = load(captured(method, mpi, "json"))
    from_text = load(captured(method, mpi, "txt"))
    assert from_json.method == from_text.method == method
    assert from_json.status == from_text.status
    assert from_json.version == from_text.version
    assert set(from_json.tables) == set(from_text.tables)
    for name, rows in from_json.tables.items():
        text_rows = from_text.tables[name]
        assert len(rows) == len(text_rows), name
        for row_json, row_text in zip(rows, text_rows, strict=True):
            assert set(row_json) == set(row_text), name
            for key in row_json:
                assert _same(row_json[key], row_text[key]), (name, key, row_json, row_text)
    for key, value in from_json.summary.items():
        assert _same(value, from_text.summary[key]), key
    assert [r["cpus_bound"] for r in from_json.ranks] == [r["cpus_bound"] for r in from_text.ranks]
    assert from_json.mpi_library.splitlines()[0] == from_text.mpi_library


@pytest.mark.parametrize("mpi", MPIS)
def test_pingpong_capture_is_complete_and_sound(mpi):
    result = load(captured("pingpong", mpi, "json"))
    sizes = [2**k for k in range(3, 23)]
    assert result.problems(sizes, "pingpong") == []
    latencies = result.column("pingpong", "latency_median_us")
    assert all(lat > 0 for lat in latencies)
    # Latency grows with size overall: 4 MiB takes far longer than 8 B.
    assert latencies[-1] > 100 * latencies[0]
    row = result.row("pingpong", size_bytes=8)
    assert row["latency_min_us"] <= row["latency_median_us"] <= row["latency_max_us"]
    expected = 8 / row["latency_median_us"]  # bytes per microsecond = MB/s
    assert row["bandwidth_median_MBps"] == pytest.approx(expected, rel=0.01)
    assert len(result.ranks) == 2 and result.ranks[0]["cpus_bound"] != result.ranks[1]["cpus_bound"]


@pytest.mark.parametrize("mpi", MPIS)
def test_loggp_capture_has_a_positive_first_range(mpi):
    result = load(captured("loggp", mpi, "json"))
    ranges = result.table("ranges")
    assert result.summary["protocol_ranges"] == len(ranges) >= 1
    first = result.row("ranges", range=0)
    # Over the smallest sizes G (s - 1) is below the noise: the non-negative fit may hold it at 0.
    assert first["g_us"] > 0 and first["G_ns_per_byte"] >= 0
    assert any(r["g_us"] > 0 and r["G_ns_per_byte"] > 0 for r in ranges), ranges
    assert result.value(None, "L_us") > 0
    # The ranges tile the measured sizes without gaps or overlaps.
    sizes = result.column("prtt", "size_bytes")
    assert ranges[0]["first_size_bytes"] == sizes[0]
    assert ranges[-1]["last_size_bytes"] == sizes[-1]
    for before, after in zip(ranges, ranges[1:], strict=False):
        assert sizes.index(after["first_size_bytes"]) == sizes.index(before["last_size_bytes"]) + 1
    # Every point is labelled with its range.
    assert all(r["range"] is not None for r in result.table("prtt"))


@pytest.mark.parametrize("mpi", MPIS)
def test_flood_capture_fits_non_negative_gaps(mpi):
    result = load(captured("flood", mpi, "json"))
    assert result.value(None, "g_us") > 0
    assert result.value(None, "G_ns_per_byte") >= 0
    depths = sorted({r["queue_depth"] for r in result.table("flood")})
    assert depths == [1, 2, 4, 8, 16, 32, 64]
    for best in result.table("flood_best"):
        rows = [r for r in result.table("flood") if r["size_bytes"] == best["size_bytes"]]
        fastest = min(rows, key=lambda r: r["time_per_message_median_us"])
        assert best["best_queue_depth"] == fastest["queue_depth"]


def _logavg(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


@pytest.mark.parametrize("mpi", MPIS)
def test_beff_capture_follows_the_definition(mpi):
    """b_eff = logavg(logavg over rings, logavg over random) of the length-averaged pattern
    bandwidths, per process; accumulated = per process x ranks; 21 lengths up to L_max."""
    result = load(captured("beff", mpi, "json"))
    ranks = result.parameters["ranks"]
    patterns = result.table("patterns")
    assert [p["pattern"] for p in patterns] == [f"ring{i}" for i in range(6)] + [
        f"random{i}" for i in range(result.parameters["random_patterns"])]
    rings = [p["bandwidth_avg_L_per_process_MBps"] for p in patterns if p["kind"] == "ring"]
    randoms = [p["bandwidth_avg_L_per_process_MBps"] for p in patterns if p["kind"] == "random"]
    per_process = _logavg([_logavg(rings), _logavg(randoms)])
    assert per_process == pytest.approx(result.summary["b_eff_per_process_MBps"], rel=2e-3)
    assert result.summary["b_eff_MBps"] == pytest.approx(per_process * ranks, rel=2e-3)
    lengths = [row["length_bytes"] for row in result.table("lengths")]
    assert len(lengths) == 21 and lengths[-1] == result.summary["lmax_bytes"] == 1024 * 1024
    at_lmax = [p["bandwidth_lmax_per_process_MBps"] for p in patterns]
    assert min(at_lmax) > 0
    assert result.summary["pingpong_latency_us"] > 0


@pytest.mark.parametrize("mpi", MPIS)
def test_dense_capture_is_complete(mpi):
    result = load(captured("dense", mpi, "json"))
    assert result.parameters["algorithms"] == "aapc,pairwise,cumulative,random"
    sizes = result.parameters["sizes_bytes"]
    assert sizes == [8, 32, 128, 512, 2048, 8192, 32768, 131072, 524288, 1048576]
    phases = result.table("phases")
    assert len(phases) == len(sizes) * (1 + 1 + 1 + result.parameters["random_phases"])
    for row in result.table("algorithms"):
        rows = [p for p in phases
                if p["algorithm"] == row["algorithm"] and p["size_bytes"] == row["size_bytes"]]
        means = [p["bandwidth_mean_MBps"] for p in rows]
        assert row["bandwidth_worst_MBps"] == pytest.approx(min(means), rel=1e-3)
        assert row["worst_to_first"] == pytest.approx(min(means) / means[0], rel=2e-3)


@pytest.mark.parametrize("mpi", MPIS)
def test_collectives_capture_puts_the_loop_beside_each_call(mpi):
    result = load(captured("collectives", mpi, "json"))
    assert result.parameters["synchronisation"] == "window"
    rows = result.table("collectives")
    assert len(rows) == 1 + 8 * 18
    for row in rows:
        assert row["time_min_us"] <= row["time_median_us"] <= row["time_max_us"]
        assert row["calls_valid"] + row["late_calls"] == result.parameters["calls"]
        ratio = row["loop_average_us"] / row["time_median_us"]
        assert row["loop_to_individual"] == pytest.approx(ratio, rel=5e-3)


def test_value_lookup_errors_name_the_cell():
    result = load(captured("pingpong", "openmpi", "json"))
    with pytest.raises(ResultError, match="no row with size_bytes=3"):
        result.value("pingpong", "latency_median_us", size_bytes=3)
    with pytest.raises(ResultError, match="no table 'flood'"):
        result.table("flood")
    with pytest.raises(ResultError, match="no summary value 'nope'"):
        result.value(None, "nope")


def test_null_figure_is_reported_with_the_reason():
    doc = json.loads(captured("pingpong", "openmpi", "json").read_text())
    doc["tables"]["pingpong"][0]["latency_median_us"] = None
    doc["unreliable"] = [{"quantity": "latency_median_us", "reason": "timer resolution"}]
    doc["status"] = "unreliable"
    result = parse_json(json.dumps(doc))
    with pytest.raises(ResultError, match="not measured soundly.*timer resolution"):
        result.value("pingpong", "latency_median_us", size_bytes=8)
    assert any("timer resolution" in p for p in result.problems())


def test_missing_sizes_and_shared_cpus_are_problems():
    doc = json.loads(captured("pingpong", "openmpi", "json").read_text())
    doc["tables"]["pingpong"] = doc["tables"]["pingpong"][:-2]
    doc["ranks"][1]["cpus_bound"] = doc["ranks"][0]["cpus_bound"]
    problems = parse_json(json.dumps(doc)).problems([2**k for k in range(3, 23)], "pingpong")
    assert any("sizes missing: [2097152, 4194304]" in p for p in problems)
    assert any("share CPUs" in p for p in problems)
    # a validation run times nothing: shared CPUs are no problem there
    untimed = parse_json(json.dumps(doc)).problems(timed=False)
    assert not any("share CPUs" in p for p in untimed)


def test_truncated_json_is_rejected():
    text = captured("loggp", "openmpi", "json").read_text()
    with pytest.raises(ResultError, match="not valid JSON.*truncated"):
        parse_json(text[: len(text) // 2])
    with pytest.raises(ResultError, match="empty result"):
        parse_json("")


def test_truncated_human_output_is_rejected():
    lines = captured("pingpong", "openmpi", "txt").read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if not line.startswith("#")) + 3
    with pytest.raises(ResultError, match="no '# status:' line"):
        parse_human("\n".join(lines[:cut]))
    broken = lines[:cut - 1] + [" ".join(lines[cut - 1].split()[:-1])] + lines[cut:]
    with pytest.raises(ResultError, match="fields, but table pingpong has"):
        parse_human("\n".join(broken))


def test_foreign_input_is_rejected(tmp_path):
    with pytest.raises(ResultError, match="not a netbench result"):
        parse_json('{"hello": 1}')
    with pytest.raises(ResultError, match="format_version 99 is not supported"):
        parse_json('{"format": "netbench-result", "format_version": 99}')
    with pytest.raises(ResultError, match="not netbench output"):
        parse_human("# OSU MPI Latency Test v7.2\n8 0.25\n")
    with pytest.raises(ResultError, match="no netbench result file"):
        load(tmp_path / "absent.json")


@pytest.mark.parametrize("tables", [[], "pingpong", 3, None])
def test_tables_that_are_not_an_object_are_rejected(tables):
    doc = json.loads(captured("pingpong", "openmpi", "json").read_text())
    doc["tables"] = tables
    with pytest.raises(ResultError, match="'tables' is a .*not a JSON object"):
        parse_json(json.dumps(doc))
    doc["tables"] = {"pingpong": [1, 2]}
    with pytest.raises(ResultError, match="table 'pingpong' is not a list of row objects"):
        parse_json(json.dumps(doc))


@pytest.mark.parametrize("method, table, column", [
    ("pingpong", "pingpong", "latency_median_us"),
    ("flood", "flood", "bandwidth_median_MBps"),
    ("dense", "phases", "iterations"),
])
def test_negative_figures_are_rejected_in_both_renderings(method, table, column):
    doc = json.loads(captured(method, "openmpi", "json").read_text())
    doc["tables"][table][1][column] = -doc["tables"][table][1][column]
    with pytest.raises(ResultError, match=f"table {table} row 1 .*{column}=-.* is negative"):
        parse_json(json.dumps(doc))
    # the same cell in the human format
    lines = captured(method, "openmpi", "txt").read_text().splitlines()
    start = lines.index(f"# table {table}")
    columns = lines[start + 1].split()[2:]
    fields = lines[start + 3].split()
    fields[columns.index(column)] = "-" + fields[columns.index(column)]
    lines[start + 3] = " ".join(fields)
    with pytest.raises(ResultError, match=f"{column}=-.* is negative"):
        parse_human("\n".join(lines))


def test_negative_summary_value_is_rejected():
    doc = json.loads(captured("flood", "openmpi", "json").read_text())
    doc["summary"]["G_ns_per_byte"] = -0.01
    with pytest.raises(ResultError, match="summary G_ns_per_byte=-0.01 is negative"):
        parse_json(json.dumps(doc))
    # every captured result, of every method, passes the check
    for method, mpi in CAPTURES:
        load(captured(method, mpi, "json"))
        load(captured(method, mpi, "txt"))


def test_a_column_declared_signed_may_be_negative_and_no_other(nb):
    """loggp's split_bic_gain (NB_SIGNED) is the local BIC gain of a break chosen over the whole
    sweep: below 0 where one line fits the two neighbouring ranges about as well as two (on one
    straight line it is exactly -3 ln m, the penalty). A README session's loggp run reported
    -4.163 and was refused as corrupt; now that value is a result, and a negative value in any
    other column of the same row is still refused."""
    sizes = [float(2 ** k) for k in range(10)]
    on_one_line = [0.5 + 0.001 * s for s in sizes]
    assert nb.split_gain(sizes, on_one_line, 0, 5, 9) == pytest.approx(-3 * math.log(10))

    # a real loggp result (tests/data/report/README.md), range 1's gain made the CI run's value
    doc = json.loads((DATA.parent / "report" / "loggp-openmpi.json").read_text())
    assert doc["tables"]["ranges"][1]["split_bic_gain"] > 0
    doc["tables"]["ranges"][1]["split_bic_gain"] = -4.163
    assert parse_json(json.dumps(doc)).tables["ranges"][1]["split_bic_gain"] == -4.163
    doc["tables"]["ranges"][1]["points"] = -doc["tables"]["ranges"][1]["points"]
    with pytest.raises(ResultError, match=r"table ranges row 1 .*points=-\d+ is negative"):
        parse_json(json.dumps(doc))
