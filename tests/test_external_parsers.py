"""Parsers of the external suites, on real captured output (tests/data/external, see its README)."""

import re
from pathlib import Path

import pytest

from fabricsuite.data.external import (
    SuiteOutputError,
    osu_sizes,
    parse_beff,
    parse_imb,
    parse_npb,
    parse_osu,
)

DATA = Path(__file__).parent / "data" / "external"
BEFF = Path(__file__).parent / "data" / "beff-3.6"


def text(path: str) -> str:
    return (DATA / path).read_text()


# -- OSU --
@pytest.mark.parametrize("name,column,size,value", [
    ("osu-7.2/osu_latency.txt", "latency_us", 8, 0.28),
    ("osu-7.2/osu_latency.txt", "latency_us", 65536, 13.12),
    ("osu-7.4/osu_latency.txt", "latency_us", 1, 0.32),
    ("osu-7.2/osu_bw.txt", "bandwidth_MBps", 1048576, None),
    ("osu-7.2/osu_bibw.txt", "bandwidth_MBps", 1, 18.26),
    ("osu-7.2/osu_mbw_mr.txt", "messages_per_s", 1, 13186740.73),
    ("osu-7.2/osu_allreduce.txt", "latency_us", 1, 0.53),
    ("osu-7.2/osu_iallreduce.txt", "overlap_percent", 2, 12.63),
])
def test_osu_tables_of_both_versions(name, column, size, value):
    result = parse_osu(text(name), name)
    got = result.value("osu", column, size_bytes=size)
    if value is not None:
        assert got == pytest.approx(value)
    assert got > 0
    sizes = [r["size_bytes"] for r in result.rows]
    assert sizes == sorted(sizes) and len(sizes) >= 2


def test_osu_header_drift_gives_the_same_columns():
    old = parse_osu(text("osu-7.2/osu_latency.txt"))  # "# Size          Latency (us)"
    new = parse_osu(text("osu-7.4/osu_latency.txt"))  # "# Size       Avg Latency(us)"
    assert old.columns == new.columns == ["size_bytes", "latency_us"]
    assert (old.version, new.version) == ("7.2", "7.4")
    # osu_mbw_mr prints its banner twice and a pairs/window line: still one table
    mbw = parse_osu(text("osu-7.2/osu_mbw_mr.txt"))
    assert mbw.columns == ["size_bytes", "bandwidth_MBps", "messages_per_s"]
    iall = parse_osu(text("osu-7.2/osu_iallreduce.txt"))
    assert iall.columns[-1] == "overlap_percent"


def test_osu_barrier_and_validation_columns():
    # osu_barrier has no size column; a -c run adds a "Validation" column (Pass/Fail). Derived
    # from the captured 7.2 allreduce output: the layout OSU 7.2's print functions write.
    allreduce = text("osu-7.2/osu_allreduce.txt")
    barrier = allreduce.replace("Allreduce", "Barrier").split("# Size")[0]
    barrier += "# Avg Latency(us)\n                   1.25\n"
    assert parse_osu(barrier).value("osu", "latency_us") == pytest.approx(1.25)
    lines = allreduce.splitlines()
    checked = [ln + "              Pass" if ln[:1].isdigit() else ln for ln in lines]
    checked = [ln.replace("Avg Latency(us)", "Avg Latency(us)        Validation")
               for ln in checked]
    result = parse_osu("\n".join(checked) + "\n")
    assert {r["validation"] for r in result.rows} == {"Pass"}


def test_osu_failed_run_is_rejected_with_what_it_printed():
    with pytest.raises(SuiteOutputError, match="Invalid option"):
        parse_osu(text("osu-7.4/osu_latency_f.txt"), "osu_latency_f")


def test_osu_truncated_output_is_rejected():
    full = text("osu-7.2/osu_bw.txt")
    cut = full[: full.rindex("\n", 0, len(full) - 2)] + "\n4194304"  # a row cut mid-way
    with pytest.raises(SuiteOutputError, match="truncated"):
        parse_osu(cut)
    banner_only = "\n".join(full.splitlines()[:3]) + "\n"
    with pytest.raises(SuiteOutputError, match="no results"):
        parse_osu(banner_only)
    with pytest.raises(SuiteOutputError, match="no row with size_bytes=3 in table 'osu'"):
        parse_osu(full).value("osu", "bandwidth_MBps", size_bytes=3)


def test_osu_full_columns_of_f_are_accepted():
    # osu_iallreduce -f (OSU 7.4): init, test, wait, min/max communication beside the overlap
    iall = parse_osu(text("osu-7.4/osu_iallreduce_f.txt"), "osu_iallreduce -f",
                     sizes=osu_sizes(["-m", "1:1048576"]))
    assert iall.columns == ["size_bytes", "overall_us", "compute_us", "init_us", "test_us",
                            "wait_us", "pure_comm_us", "min_comm_us", "max_comm_us",
                            "overlap_percent"]
    assert iall.value("osu", "overlap_percent", size_bytes=1048576) == pytest.approx(0.00)
    assert iall.value("osu", "overall_us", size_bytes=1048576) == pytest.approx(1466.36)
    assert iall.value("osu", "max_comm_us", size_bytes=4) == pytest.approx(1.48)
    # osu_allreduce -f: min, max latency and iterations
    full = parse_osu(text("osu-7.4/osu_allreduce_f.txt"), "osu_allreduce -f",
                     sizes=osu_sizes(["-m", "8:1048576"]))
    assert full.columns == ["size_bytes", "latency_us", "min_latency_us", "max_latency_us",
                            "iterations"]
    assert full.value("osu", "latency_us", size_bytes=1048576) == pytest.approx(137.51)
    assert full.value("osu", "iterations", size_bytes=8) == 1000
    # a column no OSU version prints is still refused
    with pytest.raises(SuiteOutputError, match="unknown OSU column"):
        parse_osu(text("osu-7.4/osu_allreduce_f.txt").replace("Iterations", "Gremlins"))


def test_osu_own_validation_failure_is_reported_as_such():
    # osu_allreduce -c with MPI_CHAR: "16 ... Fail" then OSU's "DATA VALIDATION ERROR" line
    with pytest.raises(SuiteOutputError, match=r"validation failed at message size\(s\) \[16\]"
                       ) as err:
        parse_osu(text("osu-7.4/osu_allreduce_c_fail.txt"), "osu_allreduce -c")
    assert "truncated" not in str(err.value) and "DATA VALIDATION ERROR" in str(err.value)


def test_osu_figure_only_from_a_complete_table():
    full = text("osu-7.2/osu_bw.txt")
    sizes = osu_sizes(["-m", "1:4194304"])
    assert sizes[0] == 1 and sizes[-1] == 4194304 and len(sizes) == 23
    assert parse_osu(full, sizes=sizes).value("osu", "bandwidth_MBps", size_bytes=4194304) > 0
    # cut in the middle of the last number: "4194304   10364.62" -> "4194304   103"
    last = full.rstrip("\n").splitlines()[-1]
    cut = full[: full.rindex(last)] + last[: len(last) - 5]
    with pytest.raises(SuiteOutputError, match="cut off"):
        parse_osu(cut, sizes=sizes)
    # stopped after a complete row: the sizes it never reached are missing
    stopped = full[: full.rindex(last)]
    with pytest.raises(SuiteOutputError, match=r"no row for size\(s\) \[4194304\]"):
        parse_osu(stopped, sizes=sizes)
    assert osu_sizes(["-x", "10"]) is None and osu_sizes(["-m", "0:4"]) == [0, 1, 2, 4]


UCX_WARNINGS = text("mpi-noise/ucx-warn-stdout.txt").splitlines(keepends=True)


def _with_noise(output: str, *, at_line: int) -> str:
    """A real output with the real UCX warnings before it and after its line `at_line`."""
    lines = output.splitlines(keepends=True)
    return "".join([UCX_WARNINGS[0], *lines[:at_line], UCX_WARNINGS[1], *lines[at_line:]])


def test_osu_accepts_an_mpi_librarys_lines_and_judges_only_the_complete_table():
    clean = text("osu-7.2/osu_latency.txt")
    sizes = osu_sizes(["-m", "1:4194304"])
    noisy = parse_osu(_with_noise(clean, at_line=8), "osu_latency", sizes=sizes)
    assert noisy.rows == parse_osu(clean, sizes=sizes).rows
    assert [line.split()[3:5] for line in noisy.other_lines] == [["UCX", "WARN"]] * 2
    # the table must still be complete: noise does not stand in for a missing row
    last = clean.rstrip("\n").splitlines()[-1]
    stopped = clean[: clean.rindex(last)] + UCX_WARNINGS[1]
    with pytest.raises(SuiteOutputError, match=r"no row for size\(s\) \[4194304\]"):
        parse_osu(stopped, sizes=sizes)
    # a garbled row (a number first, then too few fields) is still refused
    with pytest.raises(SuiteOutputError, match="truncated or malformed row"):
        parse_osu(clean.replace("65536", "65536 0.1 x", 1), sizes=sizes)


def test_imb_accepts_an_mpi_librarys_lines_inside_a_table():
    clean = text("imb-2021.11/imb_p2p.txt")
    first_row = next(i for i, line in enumerate(clean.splitlines())
                     if line.split() and line.split()[0] == "0")
    noisy = parse_imb(_with_noise(clean, at_line=first_row + 1), "IMB-MPI1")
    assert noisy.tables == parse_imb(clean, "IMB-MPI1").tables


@pytest.mark.parametrize("options, sizes", [
    (["-m", "1:8"], [1, 2, 4, 8]),
    (["-m", "0:4"], [0, 1, 2, 4]),
    (["-m", "4"], [1, 2, 4]),                           # -m MAX: MIN is OSU's default, 1
    (["-m", "262144:"], [262144, 524288, 1048576]),     # -m MIN: MAX is OSU's default, 1 MiB
    (["-m1:64"], [1, 2, 4, 8, 16, 32, 64]),
    (["--message-size=2:8"], [2, 4, 8]),
    (["--message-size", "8:16"], [8, 16]),
    (["-m", "1:4", "-x", "10", "-m", "8:16"], [8, 16]),  # the last one wins, as in OSU
    (["-x", "10", "-i", "100"], None),
])
def test_osu_sizes_reads_every_form_of_osu_7s_message_size_option(options, sizes):
    assert osu_sizes(options) == sizes


@pytest.mark.parametrize("options, words", [
    (["-m", "4K"], "not [MIN:]MAX"), (["-m", "8:4"], "at most MAX"), (["-m"], "needs a value"),
    (["--message-size="], "not [MIN:]MAX"), (["-m", "1:2:3"], "not [MIN:]MAX"),
])
def test_osu_sizes_refuses_what_osu_would_not_read(options, words):
    with pytest.raises(SuiteOutputError, match=re.escape(words)):
        osu_sizes(options)


def test_osu_several_runs_in_one_output_are_rejected():
    # MPICH-built osu_multi_lat behind a wrapper script, started by Open MPI's mpirun: two
    # singletons, each with its banner and table header
    with pytest.raises(SuiteOutputError, match="several runs"):
        parse_osu(text("osu-7.4/osu_multi_lat_singletons.txt"), "osu_multi_lat")
    # two complete 1-process tables one after the other (what the singletons of a collective
    # that accepts one process print): derived from the real 7.2 output
    one = text("osu-7.2/osu_allreduce.txt")
    with pytest.raises(SuiteOutputError, match="several runs"):
        parse_osu(one + one)
    # stdout interleaved: both banners first, then both tables
    banner, rest = one.lstrip("\n").split("\n", 1)
    with pytest.raises(SuiteOutputError, match="2 OSU tables"):
        parse_osu(f"{banner}\n{banner}\n{rest}{rest}")


# -- IMB --
def test_imb_point_to_point_and_collectives():
    p2p = parse_imb(text("imb-2021.11/imb_p2p.txt"))
    assert p2p.version == "2021.11"
    assert p2p.value("PingPong", "t_usec", bytes=0) == pytest.approx(0.23)
    assert p2p.value("PingPong", "MBps", bytes=1048576) == pytest.approx(10180.81)
    assert p2p.value("PingPing", "t_usec", bytes=8) == pytest.approx(4.33)
    assert p2p.value("Sendrecv", "t_avg_usec", bytes=0) == pytest.approx(0.33)
    coll = parse_imb(text("imb-2021.11/imb_coll.txt"))
    assert coll.value("Allreduce", "t_max_usec", bytes=4194304) == pytest.approx(7241.88)
    assert coll.value("Barrier", "t_avg_usec") == pytest.approx(0.35)  # no #bytes column
    assert len(coll.table("Allreduce")) == 22  # 0, then 4 B .. 4 MiB


def test_imb_default_run_has_every_family():
    full = parse_imb(text("imb-2021.11/imb_mpi1.txt"))
    names = {b for b, _ in full.tables}
    assert {"PingPong", "PingPing", "Sendrecv", "Exchange", "Allreduce", "Barrier", "Uniband",
            "Biband", "PingPongAnySource"} <= names
    assert full.value("Uniband", "msg_per_s", bytes=16) > 0


def test_imb_nbc_overlap():
    nbc = parse_imb(text("imb-2021.11/imb_nbc.txt"))
    assert nbc.value("Iallreduce", "overlap_percent", bytes=8) == pytest.approx(31.00)
    assert nbc.value("Ibarrier", "overlap_percent") == pytest.approx(1.20)
    assert nbc.value("Iallreduce_pure", "t_avg_usec", bytes=16) == pytest.approx(0.81)


def test_imb_corrupt_first_field_is_rejected_not_dropped():
    full = text("imb-2021.11/imb_p2p.txt")
    row = "      1048576           40"
    assert row in full
    corrupt = full.replace(row, "      1O48576           40", 1)  # letter O in the size
    with pytest.raises(SuiteOutputError, match="1O48576"):
        parse_imb(corrupt)
    # IMB's own notes between the rows stay skipped
    noted = full.replace("# #processes = 2 \n", "# #processes = 2 \n"
                         "# ( 2 additional processes waiting in MPI_Barrier)\n", 1)
    assert parse_imb(noted).value("PingPong", "MBps", bytes=1048576) == pytest.approx(10180.81)


def test_imb_runs_as_one_job_of_the_requested_size():
    full = text("imb-2021.11/imb_p2p.txt")
    assert parse_imb(full, processes=2).value("PingPong", "t_usec", bytes=0) == pytest.approx(0.23)
    with pytest.raises(SuiteOutputError, match="another process count than the job's 4"):
        parse_imb(full, processes=4)
    # two runs in one output (singletons of another MPI): derived from the real output
    with pytest.raises(SuiteOutputError, match="2 IMB banners"):
        parse_imb(full + full, processes=2)


def test_imb_truncated_or_foreign_output_is_rejected():
    full = text("imb-2021.11/imb_p2p.txt")
    with pytest.raises(SuiteOutputError, match="did not finish"):
        parse_imb(full[: full.index("# Benchmarking Sendrecv")])
    with pytest.raises(SuiteOutputError, match="not the output of Intel MPI Benchmarks"):
        parse_imb(text("osu-7.2/osu_bw.txt"))
    with pytest.raises(SuiteOutputError, match="no Exchange table"):
        parse_imb(full).table("Exchange")


# -- NPB --
@pytest.mark.parametrize("name,bench,klass,procs,mops", [
    ("npb-3.4.3/npb_cg.S.txt", "CG", "S", 2, 890.90),
    ("npb-3.4.3/npb_ep.A.txt", "EP", "A", 2, 166.41),
    ("npb-3.4.3/npb_is.S.txt", "IS", "S", 2, 811.42),
    ("npb-3.4.3/npb_bt_S_4.txt", "BT", "S", 4, 10500.95),  # "Active procs" (3.4 drift)
    ("npb-3.4.3/npb_ft.S.txt", "FT", "S", 2, None),
    ("npb-3.4.3/npb_mg.S.txt", "MG", "S", 2, None),
    ("npb-mz-3.3.1/npbmz_bt_S_2.txt", "BT-MZ", "S", 2, 3721.29),  # no active line; threads
])
def test_npb_reports(name, bench, klass, procs, mops):
    result = parse_npb(text(name), name)
    assert (result.benchmark, result.npb_class) == (bench, klass)
    assert result.total_processes == result.active_processes == procs
    assert result.verification == "SUCCESSFUL"
    assert result.time_s >= 0 and result.mops_total > 0
    if mops is not None:
        assert result.mops_total == pytest.approx(mops)


def test_npb_mz_threads():
    result = parse_npb(text("npb-mz-3.3.1/npbmz_bt_S_2.txt"))
    assert result.total_threads == 2 and result.version == "3.3.1"
    sp = parse_npb(text("npb-mz-3.3.1/npbmz_sp-mz.S.2.txt"))
    assert sp.benchmark == "SP-MZ"


def test_npb_truncated_output_is_rejected():
    full = text("npb-3.4.3/npb_cg.S.txt")
    with pytest.raises(SuiteOutputError, match="Benchmark Completed"):
        parse_npb(full[: full.index("CG Benchmark Completed")])
    with pytest.raises(SuiteOutputError, match="without"):
        parse_npb(full[: full.index(" Mop/s total")])


def test_npb_several_runs_in_one_output_are_rejected():
    one = text("npb-3.4.3/npb_cg.S.txt")
    with pytest.raises(SuiteOutputError, match="2 NPB reports"):
        parse_npb(one + one)


def test_npb_failed_verification_is_reported_as_printed():
    failed = text("npb-3.4.3/npb_cg.S.txt").replace("=               SUCCESSFUL",
                                                     "=             UNSUCCESSFUL")
    assert parse_npb(failed).verification == "UNSUCCESSFUL"


# -- the original b_eff --
def test_beff_summary_table():
    result = parse_beff((BEFF / "run2.sum").read_text())
    assert result.b_eff_MBps == pytest.approx(6489.176)
    assert result.b_eff_per_process_MBps == pytest.approx(3244.588)
    assert result.processes == 2 and result.lmax == "1 MB"
    assert result.b_eff_at_lmax_MBps == 22844 and result.b_eff_at_lmax_rings_MBps == 22820
    assert result.pingpong_latency_us == pytest.approx(0.264)
    assert result.pingpong_bandwidth_MBps == 12011
    assert result.revision == "3.6.0.1"


def test_beff_non_finite_figures_are_named_as_such():
    """A b_eff that printed `inf` in its table was reported as a missing, cut-off row (issue
    39): the row is there, its figure is not finite."""
    summary = (BEFF / "run2.sum").read_text()
    infinite = summary.replace("0.264        12011", "0.000          inf")
    with pytest.raises(SuiteOutputError, match=r"non-finite figure \(ping-pong bandwidth "
                                               r"inf\)") as err:
        parse_beff(infinite)
    assert "cut off" not in str(err.value)
    with pytest.raises(SuiteOutputError, match="b_eff -nan"):
        parse_beff(summary.replace("b_effTEST =   6489.176", "b_effTEST =   -nan"))


def test_beff_cut_off_summary_is_rejected():
    summary = (BEFF / "run2.sum").read_text()
    with pytest.raises(SuiteOutputError, match="the 'accumulated' table row is missing") as err:
        parse_beff(summary[: summary.index("accumulated")] + summary[-200:])
    assert "no the" not in str(err.value)
    with pytest.raises(SuiteOutputError, match="b_eff = "):
        parse_beff(summary[: summary.index("SECTION-BEFF-END")])


# -- one reader protocol (issue 40) --
def test_every_parsed_result_reads_through_value_table_column_where():
    """OSU, IMB, NPB, b_eff and netbench answer `value(table, column, **where)` (summary:
    table None), and every failed lookup is the parser's own error naming what is missing."""
    from fabricsuite.data.netbench_result import parse_json

    osu = parse_osu(text("osu-7.2/osu_bw.txt"), "osu_bw")
    assert osu.value("osu", "bandwidth_MBps", size_bytes=1048576) > 0
    assert osu.value(None, "peak_bandwidth_MBps") == max(r["bandwidth_MBps"] for r in osu.rows)
    imb = parse_imb(text("imb-2021.11/imb_p2p.txt"))
    assert imb.value("PingPong", "MBps", bytes=1048576) == pytest.approx(10180.81)
    npb = parse_npb(text("npb-3.4.3/npb_cg.S.txt"))
    assert npb.value(None, "mops_total") == pytest.approx(890.90)
    beff = parse_beff((BEFF / "run2.sum").read_text())
    assert beff.value(None, "b_eff_MBps") == pytest.approx(6489.176)
    for result, table, error in (
            (osu, "osu", "OSU MPI Bandwidth Test: table 'osu' has no column 'nope'"),
            (imb, "PingPong", "IMB: table 'PingPong' has no column 'nope'")):
        with pytest.raises(SuiteOutputError, match=re.escape(error)):
            result.value(table, "nope", **({"size_bytes": 8} if table == "osu" else
                                           {"bytes": 8}))
    with pytest.raises(SuiteOutputError, match="NPB CG.S: summary verification is not a "
                                                "finite number: 'SUCCESSFUL'"):
        npb.value(None, "verification")
    with pytest.raises(SuiteOutputError, match="b_eff: no summary value 'nope'"):
        beff.value(None, "nope")
    with pytest.raises(SuiteOutputError, match="IMB: no Nope table"):
        imb.value("Nope", "MBps")
    netbench = parse_json((Path(__file__).parent / "data" / "netbench" / "pingpong-openmpi.json")
                          .read_text())
    assert netbench.value("pingpong", "latency_median_us", size_bytes=8) > 0
