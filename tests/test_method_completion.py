"""netbench `polling`, `anysource` and `sendmodes` (src/methods/polling.c, methods/anysource.c,
methods_sendmodes.c, their shared rounds in paired.c) and their checks
(checks/completion.py), run for real: 2 ranks bound to cores with Debian's Open MPI and MPICH,
and a ReFrame session on the local system. Figures are checked for soundness, never for their
values (the machine is shared and noisy)."""

import math
import re

import pytest
from mpi_support import (
    NEEDS_OPEN_MPI,
    help_missing,
    local_pairs,
    mechanics_session,
    run_result,
    usage_error_line,
)

from fabricsuite.data.netbench_result import parse_human

pytestmark = pytest.mark.integration

SIZES = [8, 65536]
#: Short runs: 3 rounds of 1 ms per variant and size.
QUICK = ["--sizes", ",".join(map(str, SIZES)), "--repetitions", "3", "--time-cap-ms", "1"]

#: method -> (latency table, its variant column, the variants with the baseline first,
#: the table of the variants against the baseline)
METHODS = {
    "polling": ("polling", "mode", ["busy_poll", "blocking", "test_yield"], "polling_cost"),
    "anysource": ("anysource", "receive", ["named", "any_source", "any_source_any_tag"],
                  "anysource_cost"),
    "sendmodes": ("sendmodes", "send_mode", ["standard", "synchronous", "buffered", "ready"],
                  "sendmodes_ratio"),
}


@pytest.mark.parametrize("method, words", [
    ("polling", ["Kutlug section 3.2.6", "Zamani et al. section 5.4", "MPI_Wait",
                 "MPI_Test", "sched_yield()", "'busy_poll'", "'test_yield'", "noise_floor_us",
                 "2 x test_call_us",
                 "--time-cap-ms MS", "default 2;", "--max-size SIZE", "default 64K;",
                 "cost_us [us, lower is better]", "cost_ratio [ratio, lower is better]"]),
    ("anysource", ["Kutlug section 4.2.6", "MPI_ANY_SOURCE", "MPI_ANY_TAG", "'named'",
                   "'any_source_any_tag'", "noise_floor_us", "default 11;",
                   "cost_us [us, lower is better]"]),
    ("sendmodes", ["Zamani et al. section 5.1", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend",
                   "MPI_Buffer_attach", "zero-byte message", "ratio_to_standard [ratio, lower "
                   "is better]", "latency_median_us [us, lower is better]"]),
])
def test_help_explains_the_method(netbench, method, words):
    assert help_missing(netbench[0], method, words) == []


@pytest.mark.parametrize("args, words", [
    (["sendmodes", "--max-size", "512M"], "above 256M"),
    (["polling", "--repetitions", "0"], "--repetitions"),
    (["anysource", "--sizes", "8,zz"], "--sizes"),
    (["polling", "--queue-depths", "4"], "--queue-depths"),  # flood's option
    (["sendmodes", "--time-cap-ms", "abc"], "--time-cap-ms"),
])
def test_bad_arguments_give_one_line_and_status_2(netbench, args, words):
    assert words in usage_error_line(netbench[0], args)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_run_is_sound(netbench, method, tmp_path):
    program, launcher, mpi = netbench
    table, key, variants, against_table = METHODS[method]
    out = tmp_path / f"{method}.json"
    proc, result = run_result([*launcher, program, method, *QUICK], out)
    assert [r["cpus_bound"] for r in result.ranks[:2]] in ([[0], [1]], [[1], [0]])
    assert result.parameters["sizes_bytes"] == SIZES and result.parameters["repetitions"] == 3

    rows = result.table(table)
    assert sorted((r["size_bytes"], r[key]) for r in rows) == sorted(
        (size, v) for size in SIZES for v in variants)
    for row in rows:
        assert row["iterations"] >= 5, row
        low, median, high = row["latency_min_us"], row["latency_median_us"], row["latency_max_us"]
        assert 0 < low <= median <= high and math.isfinite(high), row

    flagged = {u["quantity"] for u in result.unreliable}
    against = result.table(against_table)
    assert sorted((r["size_bytes"], r[key]) for r in against) == sorted(
        (size, v) for size in SIZES for v in variants[1:])
    for row in against:
        assert row["against"] == variants[0], row
        baseline = result.row(table, size_bytes=row["size_bytes"], **{key: variants[0]})
        floor = row.get("noise_floor_us", row.get("difference_noise_floor_us"))
        # the floor is never below 3 % of the baseline's latency (NB_PAIRED_NOISE_FLOOR_RELATIVE)
        assert floor >= 0.03 * baseline["latency_median_us"] * 0.999, row
        if method == "polling":
            # nor below 2 periods of the busy-poll loop (POLL_PERIODS_RESOLVED)
            assert floor >= 2 * result.summary["test_call_us"] * 0.999, row
        ratio = row.get("cost_ratio", row.get("ratio_to_standard"))
        assert ratio > 0 and math.isfinite(ratio), row
        if "cost_us" in row:
            # a cost is never negative: 0 within the noise floor, null (and flagged) below it
            quantity = f"cost_us[size_bytes={row['size_bytes']},{key}={row[key]}]"
            assert (row["cost_us"] is None) == (quantity in flagged), (row, flagged)
            assert row["cost_us"] is None or row["cost_us"] >= 0, row
    assert result.status == ("unreliable" if result.unreliable else "ok")
    if method == "sendmodes":
        # the MPI_Bsend buffer holds 2 messages of the largest size and their overhead
        assert result.parameters["bsend_buffer_bytes"] >= 2 * SIZES[-1]
    summary = result.summary
    assert summary["small_size_bytes"] == 8
    if method == "polling":
        assert 0 < summary["test_call_us"] < summary["busy_poll_latency_small_us"], summary
    small = {v: result.row(table, size_bytes=8, **{key: v})["latency_median_us"]
             for v in variants}
    for v in variants:
        assert summary[f"{v}_latency_small_us"] == small[v], (v, summary)
    print(f"{mpi} {method} at 8 B: " + ", ".join(f"{v} {small[v]:.3g} us" for v in variants))
    # the human rendering says the same
    human = parse_human(proc.stdout)
    assert human.table(table) == rows and human.summary == summary
    assert human.unreliable == result.unreliable


@NEEDS_OPEN_MPI
def test_checks_on_local(tmp_path):
    """A real ReFrame session of the three checks with Open MPI: each runs at every distance
    this machine has and reports its figures; the other distances skip."""
    proc = mechanics_session(tmp_path / "results", "checks/completion.py")
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-2000:]
    summary = re.findall(r"Ran (\d+)/(\d+) test case\(s\) .*\((\d+) failure.*?(\d+) skipped",
                         proc.stdout)
    # 3 checks x 6 distances + the build; the build and each check at this machine's classes run
    ran = str(1 + 3 * len(local_pairs()))
    assert summary and summary[0][:2] == (ran, "19") and summary[0][2] == "0", summary
    figures = {name: (float(value), unit) for name, value, unit in
               re.findall(r"P: (\w+): (\S+) (\S+)", proc.stdout)}
    latencies = [f"polling_{m}_8B_us" for m in ("blocking", "busy_poll", "test_yield")] + \
        ["anysource_named_8B_us", "anysource_any_source_8B_us"] + \
        [f"sendmode_{c}_8B_us" for c in ("send", "ssend", "bsend", "rsend")]
    ratios = ["polling_blocking_ratio_8B", "anysource_ratio_8B", "anysource_anytag_ratio_8B",
              "sendmode_ssend_ratio_8B", "sendmode_bsend_ratio_8B", "sendmode_rsend_ratio_8B",
              "sendmode_bsend_ratio_64KiB"]
    for name in latencies + ratios:
        value, unit = figures[name]
        assert value > 0 and unit == ("us" if name.endswith("_us") else "ratio"), (name, figures)
    # a cost near 0 cannot carry a relative bound: the checks assert the ratios only
    assert not [name for name in figures if "_cost_" in name], figures
    perflogs = tmp_path / "results" / "perflogs" / "local" / "default"
    for check, prefix in (("NetbenchPolling", "polling_"), ("NetbenchAnySource", "anysource_"),
                          ("NetbenchSendModes", "sendmode_")):
        header = (perflogs / f"{check}.log").read_text().splitlines()[0]
        names = [name for name in latencies + ratios if name.startswith(prefix)]
        assert names and all(f"{name}_value" in header for name in names), header
