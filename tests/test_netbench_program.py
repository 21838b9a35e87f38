"""The netbench program itself, built and run for real with Debian's Open MPI and MPICH."""

import json
import os
import re
import shutil
import signal
import subprocess
import time

import pytest
from mpi_support import MPI_ENV as ENV
from mpi_support import (
    MPIS,
    NEEDS_OPEN_MPI,
    SOURCE_DIR,
    build_netbench,
    full_file_system,
    run,
    run_result,
)

from fabricsuite.data.netbench_result import parse_json

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module", params=sorted(MPIS))
def netbench(request, netbench_program):
    """(path to netbench built with this MPI, launcher command): the session's build
    (conftest.netbench_program, built without a warning)."""
    compiler, launcher = MPIS[request.param]
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed (ci/setup.sh installs it)")
    return netbench_program(request.param), launcher


def test_help_lists_every_subcommand(netbench):
    program, _ = netbench
    proc = run([program, "--help"])
    assert proc.returncode == 0
    for method in ("pingpong", "bibw", "bothway", "flood", "overlap", "loggp", "dense", "beff",
                   "collectives", "matrix", "rankdist"):
        assert method in proc.stdout
        sub = run([program, method, "--help"])
        assert sub.returncode == 0 and "--repetitions" in sub.stdout, (method, sub.stdout)
    for method in ("dense", "beff", "collectives"):
        sub = run([program, method, "--help"])
        assert "--validate" in sub.stdout and "mpirun -np P" in sub.stdout, sub.stdout


@pytest.mark.parametrize("args, words", [
    (["pingpong", "--max-size", "3X"], "--max-size"),
    (["pingpong", "--repetitions", "0"], "--repetitions"),
    (["flood", "--queue-depths", "3,abc"], "--queue-depths"),
    (["loggp", "--pfact", "-1"], "--pfact"),
    (["loggp", "--max-passes", "0"], "--max-passes"),
    (["loggp", "--max-passes", "x"], "--max-passes"),
    (["warp"], "warp"),
    (["pingpong", "--no-such-option"], "--no-such-option"),
    (["dense", "--algorithms", "aapc,ring"], "ring"),
    (["dense", "--phases", "0"], "--phases"),
    (["beff", "--lmax", "4K"], "--lmax"),
    (["collectives", "--collectives", "allreduce,scan"], "scan"),
    (["pingpong", "--validate"], "--validate"),
    # a repeated option is refused, never "the last one wins" (issue 27)
    (["pingpong", "--sizes", "8", "--sizes", "16"], "--sizes is given twice"),
    (["pingpong", "--repetitions=3", "--repetitions", "3"], "--repetitions is given twice"),
    (["matrix", "--print-schedule", "4", "--json", "--json"], "--json is given twice"),
])
def test_bad_arguments_give_one_line_and_status_2(netbench, args, words):
    program, _ = netbench
    proc = run([program, *args])
    assert proc.returncode == 2, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert words in lines[0] and lines[0].startswith("netbench: ")
    assert proc.stdout == ""


@pytest.mark.parametrize("args", [["--help"], ["pingpong", "--help"],
                                  ["pingpong", "--describe"], ["matrix", "--print-schedule", "4"]])
def test_what_netbench_prints_itself_to_a_full_disk_is_an_error(netbench, args):
    program, _ = netbench
    with open("/dev/full", "w") as full:
        proc = subprocess.run([program, *args], stdout=full, stderr=subprocess.PIPE, text=True,
                              env=ENV, timeout=60)
    assert proc.returncode != 0, proc
    assert proc.stderr.strip() == ("netbench: writing to stdout failed: No space left on "
                                   "device"), proc.stderr


def test_under_mpirun_the_result_the_checks_read_survives_a_lost_stdout(netbench, tmp_path):
    """Issue 39: under mpirun, rank 0's stdout is the launcher's pipe and the launcher writes
    it out; netbench cannot see that write fail. Open MPI 4.1's mpirun then exits 0 with the
    human output lost, but the --json-file the checks read, which netbench writes itself, is
    complete; MPICH 4.0's hydra aborts the job and exits non-zero naming the full device. Where
    the JSON file cannot be written (a full file system) netbench says so in one line and the
    run exits non-zero, under either launcher."""
    program, launcher = netbench
    args = [*launcher, program, "pingpong", "--sizes", "8", "--repetitions", "3"]
    kept = tmp_path / "result.json"
    with open("/dev/full", "w") as full:
        proc = subprocess.run([*args, "--json-file", str(kept)], stdout=full,
                              stderr=subprocess.PIPE, text=True, env=ENV, timeout=120)
    if "openmpi" in launcher[0]:
        assert proc.returncode == 0, proc.stderr
        result = parse_json(kept.read_text())
        assert result.value("pingpong", "latency_median_us", size_bytes=8) > 0
    else:
        assert proc.returncode != 0 and "No space left on device" in proc.stderr, proc
    with full_file_system(tmp_path / "small", size="4k") as small:
        proc = run([*args, "--json-file", str(small / "result.json")], timeout=120)
    assert proc.returncode != 0, proc
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("netbench: ")]
    assert lines and "No space left on device" in lines[0], proc.stderr


def _methods_from_help(program):
    """The registry as `netbench --help` lists it: the names under "subcommands:"."""
    text = run([program, "--help"]).stdout
    block = text.split("subcommands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in block.splitlines() if line.startswith("  ")]


def _help_entries(text, section):
    """{first column: text} of a help section ("options:" or "output tables ..."): an entry starts
    at column 2, its text goes on in lines indented by 27."""
    lines = text.split(section, 1)[1].split("\n\n", 1)[0].splitlines()
    entries, name = {}, None
    for line in lines:
        if line.startswith("  ") and not line.startswith(" " * 27):
            name, rest = line[2:26].strip(), line[27:].strip()
            entries[name] = rest
        elif name is not None:
            entries[name] += " " + line.strip()
    return entries


#: A bad value for each value name of the help, and whether the line names the range.
_NOT_A_VALUE = {"SIZE": "3X", "N": "abc", "K": "abc", "X": "abc", "F": "abc", "MS": "abc",
                "SECONDS": "abc", "NAME": "no-such-name", "LIST": "8,zz",
                "PATH": "/no/such/directory/result.json"}


def _beyond(bound, value_name):
    """A value above the range's upper bound, written like the bound ("1024M" -> "2048M")."""
    if value_name == "SIZE":
        number, suffix = re.fullmatch(r"(\d+)([KM]?)", bound).groups()
        return f"{2 * int(number) + 1}{suffix}"
    return str(2 * float(bound) + 1) if "." in bound else str(2 * int(bound) + 1)


def test_every_option_is_documented_and_checked(netbench):
    """Every method of the registry lists each of its options with its default and its range,
    and a bad value of every option (not a value; beyond the range) ends with one line naming
    the option, the value and the allowed range, and exit status 2, before MPI. The declared
    table columns carry their unit as the suffix of their name."""
    program, _ = netbench
    methods = _methods_from_help(program)
    assert len(methods) >= 11 and "pingpong" in methods and "rankdist" in methods
    problems = []
    for method in methods:
        text = run([program, method, "--help"]).stdout
        options = _help_entries(text, "options:\n")
        assert "--timeout SECONDS" in options and "--json" in options, (method, options)
        for entry, help_text in options.items():
            words = entry.replace(",", "").split()
            long_name = next(w for w in words if w.startswith("--"))
            if long_name == "--help":
                continue
            value_name = words[-1] if not words[-1].startswith("-") else None
            if value_name is None:  # a flag
                continue
            if "default" not in help_text:
                problems.append(f"{method} {long_name}: no default in {help_text!r}")
            ranged = re.search(r"(?:range|each) (\S+)\.\.([^,;) ]+)", help_text)
            named = re.search(r"(?:one|any) of ", help_text)
            if value_name != "PATH" and not (ranged or named):
                problems.append(f"{method} {long_name}: no range in {help_text!r}")
            bad_values = [_NOT_A_VALUE[value_name]]
            if ranged and value_name != "LIST":
                bad_values.append(_beyond(ranged.group(2), value_name))
            for bad in bad_values:
                proc = run([program, method, long_name, bad], timeout=30)
                lines = proc.stderr.strip().splitlines()
                if proc.returncode != 2 or len(lines) != 1 or proc.stdout:
                    problems.append(f"{method} {long_name} {bad}: status {proc.returncode}, "
                                    f"stderr {proc.stderr!r}")
                    continue
                line = lines[0]
                if not (line.startswith("netbench: ") and long_name in line and bad in line):
                    problems.append(f"{method} {long_name} {bad}: {line!r}")
                if ranged and f"{ranged.group(1)} to {ranged.group(2)}" not in line:
                    problems.append(f"{method} {long_name} {bad}: no range in {line!r}")
        tables = _help_entries(text, "output tables")
        for table, columns in tables.items():
            for name, unit in re.findall(r"(\w+) \[(\w+)", columns):
                if unit in ("us", "MBps", "bytes", "ns_per_byte", "percent") and \
                        not name.endswith("_" + unit):
                    problems.append(f"{method} table {table}: {name} declared in {unit}")
        if method in ("pingpong", "flood", "dense", "beff", "collectives") and not tables:
            problems.append(f"{method}: no output tables in the help")
    assert problems == [], "\n".join(problems)


def test_bad_arguments_under_mpirun_are_reported_once(netbench):
    program, launcher = netbench
    proc = run([*launcher, program, "pingpong", "--sizes", "8,zz"])
    assert proc.returncode == 2
    assert proc.stderr.count("netbench: ") == 1, proc.stderr


def test_one_rank_is_refused_clearly(netbench):
    program, launcher = netbench
    proc = run([*launcher[:1], "-np", "1", program, "pingpong", "--sizes", "8"])
    assert proc.returncode == 2
    assert "2 MPI ranks" in proc.stderr or "two MPI ranks" in proc.stderr, proc.stderr


def test_pingpong_run_is_sound_and_both_renderings_agree(netbench, tmp_path):
    program, launcher = netbench
    json_file = tmp_path / "out.json"
    proc = run([*launcher, program, "pingpong", "--sizes", "8,1K,64K", "--repetitions", "3",
                "--json-file", str(json_file)])
    assert proc.returncode == 0, proc.stderr
    result = parse_json(json_file.read_text())
    assert result.problems([8, 1024, 65536], "pingpong") == []
    assert proc.stdout.startswith("# netbench ") and "# status: ok" in proc.stdout
    assert result.value("pingpong", "latency_median_us", size_bytes=8) > 0
    ranks = result.ranks
    assert [r["rank"] for r in ranks] == [0, 1]
    assert all(r["cpus_bound"] and r["host"] for r in ranks)


def test_loggp_on_shared_memory_finds_positive_g_and_G(netbench):
    """Acceptance: at least one protocol range with g > 0 and G > 0, never a negative one; a
    clamped parameter is null with an 'unresolved' entry, never a printed 0; every figure of a
    range has its 95 % interval; M = g / G in the summary."""
    program, launcher = netbench
    # The shape of the result, not its figures, is tested here: 3 s of waiting for the fast state
    # instead of 30 (in a slow phase of the VM the default wait made this test 80 s, not 30),
    # at most one pass beyond the default 3 instead of 6 (12 s in a quiet phase either way;
    # CI of 2026-12-07, a slow phase: 56 s), 3 repetitions a size instead of 7 (12.3 -> 7-9 s
    # quiet; 53 s in the next CI's slow phase before); the extra passes are the next test's.
    proc = run([*launcher, program, "loggp", "--json", "--state-wait-s", "3", "--max-passes",
                "4", "--repetitions", "3"], timeout=600)
    assert proc.returncode == 0, proc.stderr
    result = parse_json(proc.stdout)
    raw = json.loads(proc.stdout)
    assert raw["format"] == "netbench-result"
    assert raw["parameters"]["state_wait_s"] == 3.0
    ranges = result.table("ranges")
    assert len(ranges) >= 1
    assert any((r["g_us"] or 0) > 0 and (r["G_ns_per_byte"] or 0) > 0 for r in ranges), ranges
    unreliable = {e["quantity"]: e["reason"] for e in raw["unreliable"]}
    for r in ranges:
        k = r["range"]
        for column, low, high in (("g_us", "g_ci95_low_us", "g_ci95_high_us"),
                                  ("G_ns_per_byte", "G_ci95_low_ns_per_byte",
                                   "G_ci95_high_ns_per_byte")):
            value = r[column]
            # Never a fit clamped at zero printed as a figure.
            assert value is None or value > 0, r
            if value is None and r["fit_clamped"]:
                assert unreliable[f"{column}[range={k}]"].startswith("unresolved"), unreliable
            if value is not None:  # a figure always comes with its interval
                assert r[low] is not None and r[high] is not None and r[low] <= r[high], r
    summary = raw["summary"]
    # the look-ahead test's count is reported beside the chosen ranges, not bounding them
    assert summary["protocol_ranges"] == len(ranges) <= raw["parameters"]["range_max_segments"]
    assert summary["protocol_ranges_detected"] >= 1
    assert raw["parameters"]["range_segment_bic_margin"] == 40
    # the ranges tile the sweep, each of at least range_min_points sizes
    sizes = raw["parameters"]["sizes_bytes"]
    assert ranges[0]["first_size_bytes"] == sizes[0]
    assert ranges[-1]["last_size_bytes"] == sizes[-1]
    for before, after in zip(ranges, ranges[1:], strict=False):
        assert sizes.index(after["first_size_bytes"]) == sizes.index(
            before["last_size_bytes"]) + 1
    assert all(r["points"] >= raw["parameters"]["range_min_points"] for r in ranges), ranges
    first, last = ranges[0], ranges[-1]
    assert summary["g_small_us"] == first["g_us"]
    assert summary["G_large_ns_per_byte"] == last["G_ns_per_byte"]
    # M is a figure only when both of its parts are sound (printed and not flagged)
    if (summary["g_small_us"] and summary["G_large_ns_per_byte"]
            and "g_small_us" not in unreliable and "G_large_ns_per_byte" not in unreliable):
        assert summary["M_bytes"] == pytest.approx(
            summary["g_small_us"] * 1000 / summary["G_large_ns_per_byte"], rel=1e-3)
    else:
        assert summary["M_bytes"] is None and "M_bytes" in unreliable
    if len(ranges) >= 2:
        assert summary["threshold_small_bytes"] == ranges[1]["first_size_bytes"]
        assert summary["threshold_large_bytes"] == last["first_size_bytes"]
    # The human rendering carries the new columns and summary keys too.
    human = run([*launcher, program, "loggp", "--sizes", "1,64,1024,4096,16384",
                 "--repetitions", "3"], timeout=300)
    assert human.returncode == 0, human.stderr
    assert "G_ci95_high_ns_per_byte" in human.stdout and "# summary M_bytes=" in human.stdout


#: The fitted summary figures whose unreliable state makes loggp add a pass (the thresholds,
#: unresolved with one range, do not: another pass cannot add a protocol switch to the sweep).
LOGGP_SUMMARY_FIGURES = {"g_small_us", "o_s_small_us", "o_r_small_us", "G_large_ns_per_byte",
                         "M_bytes"}
LOGGP_THRESHOLDS = {"threshold_small_bytes", "threshold_large_bytes"}


def _loggp(netbench, *options):
    program, launcher = netbench
    proc = run([*launcher, program, "loggp", "--repetitions", "3", *options, "--json"],
               timeout=600)
    assert proc.returncode == 0, proc.stderr
    raw = json.loads(proc.stdout)
    flagged = {e["quantity"] for e in raw["unreliable"]}
    unsound = flagged & LOGGP_SUMMARY_FIGURES
    raw["flagged_thresholds"] = flagged & LOGGP_THRESHOLDS
    passes_warnings = [w for w in raw["warnings"] if "passes made" in w]
    return raw, unsound, passes_warnings


def test_loggp_makes_extra_passes_only_while_a_summary_figure_is_unreliable(netbench):
    """--max-passes: after the --passes sweeps, one more while a figure of the summary is
    unreliable or unresolved, up to --max-passes; a warning says why. At most --passes: exactly
    --passes sweeps."""
    # up to 5 passes, not the default 9: the rule, not how long a slow phase lasts, is under
    # test (CI of 2026-12-07, a slow phase: 41 s for this test)
    raw, unsound, warned = _loggp(netbench, "--max-size", "4K", "--state-wait-s", "5",
                                  "--max-passes", "5")
    assert raw["parameters"]["passes"] == 3 and raw["parameters"]["max_passes"] == 5
    made = raw["summary"]["passes_made"]
    assert 3 <= made <= 5 and isinstance(made, int)
    # Stopping early means every summary figure is sound and every size has a pass in the fast
    # state of the machine; extra passes are explained.
    summary = raw["summary"]
    if made < 5:
        # sound when the passes stopped; the rechecks after them may lower a size and the refit
        # then leave a figure unsound without another pass (MPICH here: 3 runs in 12 of the
        # 1-16 B case below), never without a recheck that lowered something
        assert unsound == set() or summary["recheck_lowered"] > 0, raw["unreliable"]
        assert summary["slow_state_sizes"] == 0
    assert len(warned) == (1 if made > 3 else 0), raw["warnings"]
    assert "slow_passes" in summary
    # The state probe: a 1-byte round trip (well under a millisecond on shared memory), the
    # share of size passes in a slower state, and the sizes left with none in the fast one.
    assert 0.0 < summary["state_probe_fast_us"] < 1000.0
    assert 0.0 <= summary["slow_state_share"] <= 1.0
    assert isinstance(summary["slow_state_sizes"], int)
    assert raw["parameters"]["state_ratio"] == 2.0
    # Waiting out a slow phase: never beyond the run's budget (plus one 20 ms step and a probe),
    # and a warning only when the budget ran out (the summary rounds to 3 decimals, so a wait
    # that ended by itself within 0.5 ms of the budget may print as 5.0 without one)
    assert raw["parameters"]["state_wait_s"] == 5.0
    assert raw["parameters"]["state_wait_step_s"] == 0.02
    assert 0.0 <= summary["state_waited_s"] <= 5.0 + 0.1
    assert isinstance(summary["state_waits"], int) and summary["state_waits"] >= 0
    assert (summary["state_waits"] == 0) == (summary["state_waited_s"] == 0.0)
    ran_out = [w for w in raw["warnings"] if "--state-wait-s" in w]
    assert len(ran_out) <= 1, raw["warnings"]
    if ran_out:
        assert summary["state_waited_s"] >= 5.0, (summary, ran_out)
    if summary["state_waited_s"] < 4.99:
        assert not ran_out, (summary, ran_out)
    # Rechecks: at most --rechecks rounds over the sizes (default 4), and only measurements
    # made count as lowered.
    sizes = len(raw["parameters"]["sizes_bytes"])
    assert raw["parameters"]["rechecks"] == 4 and raw["parameters"]["recheck_excess"] == 0.1
    assert 0 <= summary["recheck_lowered"] <= summary["recheck_measurements"] <= 4 * sizes

    raw, _, warned = _loggp(netbench, "--max-size", "4K", "--passes", "3", "--max-passes", "2",
                            "--rechecks", "0", "--state-wait-s", "0")
    assert raw["parameters"]["max_passes"] == 2
    assert raw["summary"]["passes_made"] == 3 and warned == []
    assert raw["parameters"]["rechecks"] == 0
    assert raw["summary"]["recheck_measurements"] == raw["summary"]["recheck_lowered"] == 0
    # --state-wait-s 0: no waiting, whatever the machine's state
    assert raw["parameters"]["state_wait_s"] == 0.0
    assert raw["summary"]["state_waited_s"] == 0.0 and raw["summary"]["state_waits"] == 0

    # One protocol range (5 sizes, at least 5 per range): the thresholds are unresolved, yet no
    # extra pass is made for them (another pass cannot add a protocol switch to the sweep); a
    # pass is added only while a fitted figure is unreliable, and then the warning names it.
    raw, unsound, warned = _loggp(netbench, "--sizes", "1,2,4,8,16", "--passes", "2",
                                  "--max-passes", "4")
    assert raw["summary"]["protocol_ranges"] == 1
    assert raw["flagged_thresholds"] == LOGGP_THRESHOLDS
    made = raw["summary"]["passes_made"]
    if made == 2:
        assert warned == [], warned
        assert unsound == set() or raw["summary"]["recheck_lowered"] > 0, raw["unreliable"]
    else:
        assert len(warned) == 1 and "after 2 passes" in warned[0], warned
        assert "threshold" not in warned[0], warned


# A protocol threshold imposed through the MPI's own parameter (issue 12, item 5): the detected
# threshold (the first size of some range) lies within one size step of the 4-per-doubling sweep
# of the imposed one. MPICH's here; Open MPI's (btl_vader_eager_limit at 1 KiB) through the check
# and its verdict in tests/test_verdicts.py (issue 65: the same detection measured twice cost CI
# 15-48 s); bench/loggp_thresholds.py measures both MPIs over many runs and values.
IMPOSED_THRESHOLD = ({"UCX_RNDV_THRESH": "4096", "UCX_TLS": "sm,self"}, 4096)


def test_loggp_detects_the_imposed_protocol_threshold(netbench_program, tmp_path):
    compiler, launcher = MPIS["mpich"]
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed (ci/setup.sh installs it)")
    program, mpi = netbench_program("mpich"), "mpich"
    variables, imposed = IMPOSED_THRESHOLD
    seen = []
    # Up to four attempts, 10 s apart: a run that spends all its passes in the shared VM's slow
    # state (core-to-core latency 2.7-4x for seconds to minutes; summary state_probe_fast_us
    # shows it) measures another curve, with the step moved, and on a noisier host the model
    # selection may merge the step into its neighbour (the CI host of 2026-12-01: two ranges
    # from 304 B, twice, then the step found at 27554 B, two sizes off); a threshold that is
    # really elsewhere fails all four.
    for attempt in range(4):
        if attempt:
            time.sleep(10)
        out = tmp_path / f"loggp-{attempt}.json"
        proc = subprocess.run([*launcher, program, "loggp", "--json-file", str(out)],
                              capture_output=True, text=True, env=dict(ENV, **variables),
                              timeout=600)
        assert proc.returncode == 0, proc.stderr
        result = json.loads(out.read_text())
        sizes = result["parameters"]["sizes_bytes"]
        want = next(i for i, size in enumerate(sizes) if size >= imposed)
        starts = [r["first_size_bytes"] for r in result["tables"]["ranges"][1:]]
        seen.append((starts, result["summary"]["state_probe_fast_us"]))
        if any(abs(sizes.index(start) - want) <= 1 for start in starts):
            return
    pytest.fail(f"{mpi}: imposed threshold {imposed} B ({variables}); detected range starts "
                f"and state probe levels (us) {seen} (none within one size step)")


# ------------------------------------------------------------------------------------------------
# Multi-rank methods: every rank communicates. Three ranks on two cores are oversubscribed, which
# is fine for correctness (validation, phase counts), never for timing.
# ------------------------------------------------------------------------------------------------


def oversubscribed(launcher, ranks):
    if launcher[0].startswith("mpirun.openmpi"):
        return [launcher[0], "-np", str(ranks), "--oversubscribe", "--bind-to", "none"]
    return [launcher[0], "-np", str(ranks)]


@pytest.mark.parametrize("method, options", [
    ("dense", ["--max-size", "64K", "--phases", "5"]),
    ("beff", ["--lmax", "64K", "--random-patterns", "3"]),
    ("collectives", ["--sizes", "1,8,1K,64K"]),
])
@pytest.mark.parametrize("ranks", [2, 3])
def test_validation_mode_finds_every_byte_right(netbench, tmp_path, method, options, ranks):
    program, launcher = netbench
    out = tmp_path / "result.json"
    cmd = launcher if ranks == 2 else oversubscribed(launcher, ranks)
    proc, result = run_result([*cmd, program, method, *options, "--validate"], out)
    assert result.parameters["ranks"] == ranks
    checked = result.summary.get("validated_messages", result.summary.get("validated_calls"))
    assert checked > 0
    assert result.summary["validation_errors"] == 0, result.table("validation")
    assert result.status == "ok"
    # Validation never reports timings.
    assert not {"phases", "patterns", "collectives"} & set(result.tables)


def test_dense_runs_every_phase_of_every_algorithm(netbench, tmp_path):
    program, launcher = netbench
    out = tmp_path / "dense.json"
    proc, result = run_result([*oversubscribed(launcher, 4), program, "dense", "--sizes", "8,4K",
                               "--phases", "3", "--repetitions", "1", "--time-cap-ms", "0.2"], out)
    phases = result.table("phases")
    expected = {"aapc": 3, "pairwise": 3, "cumulative": 2, "random": 3}
    for algorithm, count in expected.items():
        rows = [r for r in phases if r["algorithm"] == algorithm]
        assert len(rows) == 2 * count, algorithm
        assert sorted({r["phase"] for r in rows}) == list(range(1, count + 1))
    cumulative = [r for r in phases if r["algorithm"] == "cumulative"]
    assert [r["active_ranks"] for r in cumulative if r["size_bytes"] == 8] == [2, 4]
    assert all(r["bandwidth_mean_MBps"] > 0 for r in phases)
    summary_rows = result.table("algorithms")
    assert len(summary_rows) == 8
    for row in summary_rows:
        assert 0 < row["worst_to_first"] <= 1.0
        assert 1 <= row["worst_phase"] <= row["phases"]


def test_dense_times_at_least_min_iterations_exchanges(netbench, tmp_path):
    """--min-iterations: however short --time-cap-ms, each timed loop makes at least N exchanges
    (a slow link's 1 MiB takes 8 ms: one or two exchanges made the figure a coin toss); the
    default stays 2."""
    program, launcher = netbench
    counts = {}
    for extra in ([], ["--min-iterations", "40"]):
        out = tmp_path / f"dense{len(extra)}.json"
        proc, result = run_result([*launcher, program, "dense", "--sizes", "256K", "--algorithms",
                                   "aapc", "--repetitions", "1", "--time-cap-ms", "0.001", *extra],
                                   out)
        counts[result.parameters["min_iterations"]] = {
            r["iterations"] for r in result.table("phases")}
    assert counts == {2: {2}, 40: {40}}, counts


# A validation mode that cannot fail proves nothing: each of these mutants breaks the data path
# the way a faulty MPI or fabric would (wrong content, wrong reduction, a shifted receive), and
# the validation run of the mutant must report it.
MUTANTS = {
    "dense": ("methods/dense.c", "nb_fill_message(state->send, size, ctx->rank, tag);",
              "nb_fill_message(state->send, size, ctx->rank, tag + 2);",
              ["--max-size", "1K", "--phases", "2"]),
    "collectives": ("methods/collectives.c",
                    "MPI_Allreduce(s->send, s->recv, s->floats, MPI_FLOAT, MPI_SUM, comm);",
                    "MPI_Allreduce(s->send, s->recv, s->floats, MPI_FLOAT, MPI_MAX, comm);",
                    ["--collectives", "allreduce", "--sizes", "8,1K"]),
    "beff": ("methods/beff.c",
             "MPI_Sendrecv(send1, L, MPI_BYTE, s->next, BEFF_TAG_TO_NEXT, recv1, L,",
             "MPI_Sendrecv(send1, L, MPI_BYTE, s->next, BEFF_TAG_TO_NEXT, recv1 + 1, L,",
             ["--lmax", "8K", "--random-patterns", "1"]),
}


@NEEDS_OPEN_MPI
@pytest.mark.parametrize("method", sorted(MUTANTS))
def test_validation_catches_a_broken_data_path(method, tmp_path):
    source, original, mutated, options = MUTANTS[method]
    program = build_netbench(tmp_path, "openmpi", mutant=(source, original, mutated))
    out = tmp_path / "result.json"
    _, launcher = MPIS["openmpi"]
    proc, result = run_result([*launcher, str(program), method, *options, "--validate"], out)
    assert result.summary["validation_errors"] > 0
    assert result.status == "unreliable"
    assert any(u["quantity"] == "validation_errors" for u in result.unreliable)


@pytest.mark.parametrize("method, table, rows", [
    ("matrix", "pairs", 3),         # 3 ranks: pairs 0-1, 0-2, 1-2
    ("rankdist", "distances", 2),   # 3 ranks: d = 1, 2
])
def test_pair_maps_cover_the_allocation(netbench, tmp_path, method, table, rows):
    program, launcher = netbench
    out = tmp_path / f"{method}.json"
    proc, result = run_result([*oversubscribed(launcher, 3), program, method, "--max-size", "64K",
                               "--repetitions", "1", "--time-cap-ms", "0.5"], out)
    measured = result.table(table)
    assert len(measured) == rows
    assert all(r["latency_us"] > 0 and r["bandwidth_MBps"] > 0 for r in measured)
    if method == "matrix":
        assert [(r["rank_a"], r["rank_b"]) for r in measured] == [(0, 1), (0, 2), (1, 2)]
        assert result.summary["pairs"] == 3
    else:
        assert [r["distance"] for r in measured] == [1, 2]


def test_bind_rank_places_each_rank_and_the_check_verifies_it(netbench, tmp_path):
    """config/launchers/bind-rank binds rank r to the r-th CPU of its list whatever the launcher
    did; the point-to-point checks' sanity compares netbench's report with the intended pair."""
    from fabricsuite import REPO_ROOT
    from fabricsuite.checks.rfm_netbench import placement_problems

    program, launcher = netbench
    out = tmp_path / "pingpong.json"
    bind = str(REPO_ROOT / "config" / "launchers" / "bind-rank")
    proc, result = run_result([*launcher, bind, "1,0", program, "pingpong", "--sizes", "8",
                               "--repetitions", "2"], out)
    assert [r["cpus_bound"] for r in sorted(result.ranks, key=lambda r: r["rank"])] == [[1], [0]]
    assert placement_problems(result, "same-l3", [1, 0]) == []
    # the same run judged against another intended pair: named as a wrong binding
    problems = placement_problems(result, "same-l3", [0, 1])
    assert len(problems) == 2 and "not honoured" in problems[0]
    # and as an other-node measurement it ran on one host
    assert "both ranks ran on" in placement_problems(result, "other-node", [])[0]
    # a list too short for the rank, or no rank at all: one clear line, exit 2 (checked without a
    # launcher: under MPICH's hydra the other rank would wait for the missing one)
    short = subprocess.run([bind, "0", "true"], env=dict(ENV, PMI_RANK="1"),
                           capture_output=True, text=True)
    assert short.returncode == 2 and "no CPU for rank 1" in short.stderr
    bare = {k: v for k, v in ENV.items()
            if k not in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")}
    alone = subprocess.run([bind, "0", "true"], env=bare, capture_output=True, text=True)
    assert alone.returncode == 2 and "no MPI rank" in alone.stderr


@pytest.mark.parametrize("cpus, words", [("0", "no CPU for rank 1 in '0'"),
                                         ("0,4096", "cannot bind rank 1 to CPU 4096")])
def test_a_rank_bind_rank_refuses_ends_the_whole_job_at_once(netbench, cpus, words):
    """The refused rank exits before MPI_Init; the other rank must not wait in MPI_Init until
    netbench's time-out (MPICH's hydra kept it there, issue 27): ended at once, exit non-zero.
    (A 30 s limit on a job that ends within a second here; the hang it guards against lasted
    until --timeout, 60 s below.)"""
    from fabricsuite import REPO_ROOT

    program, launcher = netbench
    bind = str(REPO_ROOT / "config" / "launchers" / "bind-rank")
    proc = run([*launcher, bind, cpus, program, "pingpong", "--sizes", "8", "--repetitions",
                "2", "--timeout", "60"], timeout=30)
    assert proc.returncode != 0
    assert f"bind-rank: {words}" in proc.stderr, proc.stderr[-2000:]
    assert "# status" not in proc.stdout


def test_more_ranks_than_bind_ranks_cpus_end_the_job_at_once(netbench):
    """4 ranks on bind-rank's 2 CPUs: ranks 2 and 3 refuse. Under MPICH their PMI descriptor is
    above 9 (14 and 18), which dash cannot redirect to ("Bad fd number"): the abort was never
    sent and ranks 0-1 waited in MPI_Init until the time limit (issue 39)."""
    from fabricsuite import REPO_ROOT

    program, launcher = netbench
    wide = ([launcher[0], "-np", "4", "--oversubscribe", "--bind-to", "none"]
            if "openmpi" in launcher[0] else [launcher[0], "-np", "4", "-bind-to", "none"])
    bind = str(REPO_ROOT / "config" / "launchers" / "bind-rank")
    proc = run([*wide, bind, "0,1", program, "pingpong", "--sizes", "8", "--repetitions", "2",
                "--timeout", "60"], timeout=30)
    assert proc.returncode != 0
    assert "bind-rank: no CPU for rank" in proc.stderr, proc.stderr[-2000:]
    assert "Bad fd number" not in proc.stderr, proc.stderr[-2000:]


# ------------------------------------------------------------------------------------------------
# netbench under faults (issue 11, section 7)
# ------------------------------------------------------------------------------------------------


def test_json_file_that_cannot_be_written_is_refused_before_mpi(netbench, tmp_path):
    """An existing directory, a read-only file (root may write it, rename() would replace it)
    or a device: one line and status 2 at once, under the launcher too, never after the run."""
    program, launcher = netbench
    read_only = tmp_path / "read-only.json"
    read_only.write_text("keep me\n")
    read_only.chmod(0o444)
    cases = [(tmp_path, "existing directory"), (read_only, "read-only"),
             ("/dev/null", "not a regular file")]
    for path, words in cases:
        proc = run([program, "pingpong", "--sizes", "8", "--json-file", str(path)], timeout=30)
        assert proc.returncode == 2, (path, proc)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0] and "--json-file" in lines[0], proc.stderr
        assert proc.stdout == ""
    proc = run([*launcher, program, "pingpong", "--sizes", "8", "--json-file", str(read_only)],
               timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("netbench: ") == 1, proc.stderr
    assert "# netbench" not in proc.stdout
    assert read_only.read_text() == "keep me\n"


def test_buffers_beyond_the_memory_are_refused_before_mpi(netbench):
    """flood --sizes 1024M at queue depth 64 needs 64 GiB per rank: refused with the product
    before MPI_Init, not aborted in MPI after it (this test assumes a host below 64 GiB)."""
    program, launcher = netbench
    with open("/proc/meminfo") as meminfo:
        total_kib = int(meminfo.readline().split()[1])
    if total_kib * 1024 >= 64 << 30:
        pytest.skip("this host has 64 GiB or more: the buffers would fit")
    for cmd in ([program], [*launcher, program]):
        proc = run([*cmd, "flood", "--sizes", "1024M"], timeout=60)
        assert proc.returncode == 2, proc
        lines = [line for line in proc.stderr.splitlines() if line.startswith("netbench: ")]
        assert len(lines) == 1, proc.stderr
        assert "1024M x queue depth 64 = 68719476736 bytes" in lines[0], lines
        assert "--queue-depths" in lines[0] and "cannot allocate" not in proc.stderr
    # a depth that fits is accepted (the 1-rank refusal comes after MPI_Init)
    proc = run([program, "flood", "--sizes", "1M", "--queue-depths", "64"], timeout=60)
    assert "needs 2 MPI ranks" in proc.stderr, proc.stderr


def test_the_other_mpis_launcher_is_named(netbench):
    """Built for one MPI, started by the other's launcher: every process is a singleton. The
    refusal names the mismatch and the launcher that fits, once."""
    program, own_launcher = netbench
    other = next(launcher for _, launcher in MPIS.values() if launcher != own_launcher)
    proc = run([*other, program, "pingpong", "--sizes", "8"], timeout=60)
    assert proc.returncode == 2, proc
    lines = [line for line in proc.stderr.splitlines() if line.startswith("netbench: ")]
    assert len(lines) == 1, proc.stderr
    assert "needs 2 MPI ranks, got 1" in lines[0]
    assert "the launcher and the MPI library differ" in lines[0], lines[0]
    assert f"run it as {own_launcher[0]} -np 2" in lines[0], lines[0]
    # the own launcher with one rank: the plain message, no talk of a mismatch
    proc = run([own_launcher[0], "-np", "1", program, "pingpong", "--sizes", "8"], timeout=60)
    assert proc.returncode == 2 and "differ" not in proc.stderr, proc.stderr


def _rank_processes(program):
    """{rank: pid} of the running processes of `program`, from the launchers' rank variable."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read().split(b"\0")[0].decode() != program:
                    continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(e.split(b"=", 1) for e in f.read().split(b"\0") if b"=" in e)
        except OSError:
            continue
        rank = env.get(b"OMPI_COMM_WORLD_RANK", env.get(b"PMI_RANK"))
        if rank is not None:
            found[int(rank)] = int(pid)
    return found


def test_a_stopped_rank_ends_the_run_at_the_timeout(netbench):
    """SIGSTOP on rank 1 leaves rank 0 waiting forever; --timeout ends the run with one line
    naming what happened and the option, and a non-zero status."""
    program, launcher = netbench
    started = time.monotonic()
    proc = subprocess.Popen([*launcher, program, "pingpong", "--sizes", "8", "--repetitions",
                             "1000", "--timeout", "4"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV)
    ranks = {}
    try:
        while len(ranks) < 2 and time.monotonic() - started < 3:
            time.sleep(0.05)
            ranks = _rank_processes(program)
        assert len(ranks) == 2, ranks
        time.sleep(0.5)  # past MPI_Init, into the measurement
        os.kill(ranks[1], signal.SIGSTOP)
        _, stderr = proc.communicate(timeout=60)
    finally:
        for pid in ranks.values():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    elapsed = time.monotonic() - started
    assert proc.returncode != 0
    assert elapsed < 30, elapsed
    lines = [line for line in stderr.splitlines() if line.startswith("netbench: ")]
    assert lines and all("did not end within --timeout 4 s" in line for line in lines), stderr
    assert "(rank 0, measuring" in lines[0] and "--timeout 0" in lines[0], lines[0]


def test_timeout_option_is_checked_and_documented(netbench):
    program, launcher = netbench
    for method in ("pingpong", "dense", "collectives"):
        assert "--timeout SECONDS" in run([program, method, "--help"]).stdout
    proc = run([program, "pingpong", "--timeout", "-1"])
    assert proc.returncode == 2 and "--timeout -1" in proc.stderr, proc.stderr
    # 0 turns the watchdog off; a run well within the limit ends normally
    for limit in ("0", "60"):
        proc = run([*launcher, program, "pingpong", "--sizes", "8", "--repetitions", "2",
                    "--timeout", limit], timeout=120)
        assert proc.returncode == 0 and "# status:" in proc.stdout, proc.stderr


@pytest.mark.parametrize("method, options", [
    ("pingpong", ["--sizes", "8"]),
    ("flood", ["--sizes", "8", "--queue-depths", "1,4"]),
])
def test_oversubscribed_pair_method_is_unreliable_not_ok(netbench, tmp_path, method, options):
    """3 ranks on 2 cores: ranks that share a CPU take turns (the latency came out 10x too high
    with status ok and only a warning). Every timing is flagged, the status is unreliable."""
    program, launcher = netbench
    out = tmp_path / "result.json"
    proc, result = run_result([*oversubscribed(launcher, 3), program, method, *options,
                               "--repetitions", "2", "--time-cap-ms", "2"], out, timeout=120)
    assert result.status == "unreliable", result.unreliable
    timings = [u for u in result.unreliable if u["quantity"] == "timings"]
    assert len(timings) == 1 and "take turns" in timings[0]["reason"], result.unreliable
    assert "# unreliable: timings: " in proc.stdout and "# status: unreliable" in proc.stdout
    assert any("netbench flagged timings" in p for p in result.problems())


def test_the_mpi_library_an_external_check_records_is_the_programs(netbench):
    """The perflog's mpi_library of an external suite's program was null (issue 39): what ldd
    says the program is linked with, as for a suite's program built with that MPI."""
    from fabricsuite.data.programs import linked_library

    program, launcher = netbench
    family = "openmpi" if "openmpi" in launcher[0] else "mpich"
    recorded = linked_library(program)
    assert recorded.startswith(f"{family} (/") and "libmpi" in recorded, recorded
    assert linked_library("/bin/sh") == ""


@pytest.mark.skipif(not all(shutil.which(c) for c in ("mpicc", "mpicc.mpich")),
                    reason="needs mpicc and mpicc.mpich (ci/setup.sh installs both)")
def test_the_readmes_build_with_the_default_mpicc_then_another_relinks(tmp_path):
    """`make -C src -j` (README, MPICC=mpicc) failed on a fresh clone: its object folder
    .obj/mpicc was also the file naming the MPICC last linked with. Built with the default, then
    with MPICH, then the default again: each build succeeds and the program is linked with the
    MPI of the last build, never an object of the other."""
    build = tmp_path / "src"
    shutil.copytree(SOURCE_DIR, build, ignore=shutil.ignore_patterns("netbench", "*.so", ".obj"))
    families = []
    for extra in ([], ["MPICC=mpicc.mpich"], []):
        proc = run(["make", "-C", str(build), f"-j{os.cpu_count() or 1}", "netbench", *extra],
                   timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        linked = run(["ldd", str(build / "netbench")]).stdout  # not linked_library: cached
        families.append("mpich" if "libmpich" in linked else "openmpi" if "libmpi.so" in linked
                        else linked)
    assert families[1] == "mpich", families
    assert families[0] == families[2] and families[0] in ("openmpi", "mpich"), families
