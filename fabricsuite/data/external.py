"""Parsers for the output of the external suites: OSU Micro-Benchmarks, Intel MPI Benchmarks,
NAS Parallel Benchmarks (NPB and NPB-MZ) and the original b_eff.

Each parser keys on content, not on line numbers or exact column positions, because the formats
drift between versions (OSU 5.x/7.0/7.2/7.4 headers, IMB tables per benchmark family, NPB's
"Active processes" / "Active procs" / no such line in NPB-MZ). A truncated or failed output is
rejected with a `SuiteOutputError` that says what is missing, never returned as partial numbers.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

from fabricsuite.base.readout import Readout


class SuiteOutputError(ValueError):
    """The output of an external benchmark is unusable (failed, truncated or not recognised)."""


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


_ROW_START = re.compile(r"[-+]?\.?\d")


def _table_row(line: str, columns: list[str], where: str,
               text_columns: tuple[str, ...] = ()) -> dict | None:
    """One row of a benchmark's table, or None for a line that is not a row: one that does not
    begin as a number does (an MPI library's warning on stdout, "[1795720393.248903] [vm:20705:0]
    ... UCX WARN ..." or Intel MPI's "[0] MPI startup(): ..."; it stays in the job's log). A row
    that begins with a digit but is not all numbers, or has another number of fields than the
    header's columns, was cut or garbled and is refused, never taken for its first numbers."""
    if not _ROW_START.match(line):
        return None
    fields = line.split()
    if len(fields) != len(columns):
        raise SuiteOutputError(
            f"{where}: truncated or malformed row {line!r} (expected {len(columns)} columns: "
            f"{columns})"
        )
    try:
        return {c: (f if c in text_columns else _number(f))
                for c, f in zip(columns, fields, strict=True)}
    except ValueError:
        raise SuiteOutputError(f"{where}: not a number in row {line!r}") from None


# -- OSU Micro-Benchmarks --
#: OSU column titles (every version seen) -> our column names.
_OSU_COLUMNS = {
    "size": "size_bytes",
    "latency (us)": "latency_us",
    "avg latency(us)": "latency_us",
    "min latency(us)": "min_latency_us",
    "max latency(us)": "max_latency_us",
    "iterations": "iterations",
    "bandwidth (mb/s)": "bandwidth_MBps",
    "mb/s": "bandwidth_MBps",
    "messages/s": "messages_per_s",
    "overall(us)": "overall_us",
    "compute(us)": "compute_us",
    "pure comm.(us)": "pure_comm_us",
    # the non-blocking collectives' -f (full) columns (OSU 7.4 osu_iallreduce -f)
    "coll. init(us)": "init_us",
    "mpi_test(us)": "test_us",
    "mpi_wait(us)": "wait_us",
    "min comm.(us)": "min_comm_us",
    "max comm.(us)": "max_comm_us",
    "overlap(%)": "overlap_percent",
    "validation": "validation",
    "p50 tail lat(us)": "p50_latency_us",
    "p90 tail lat(us)": "p90_latency_us",
    "p99 tail lat(us)": "p99_latency_us",
}


@dataclass
class OsuResult(Readout):
    """One OSU benchmark's run. Reader protocol (fabricsuite.base.readout): table "osu" (its rows by
    `size_bytes`), summary "peak_<column>" (the largest value of each numeric column)."""

    benchmark: str  # the banner, e.g. "OSU MPI Latency Test"
    version: str  # e.g. "7.2"
    columns: list[str]
    rows: list[dict]  # column -> number ("validation": "Pass"/"Fail")
    #: Lines that are neither banner, header nor row (an MPI library's warnings on stdout).
    other_lines: list[str] = field(default_factory=list)

    lookup_error = SuiteOutputError

    def readout_tables(self) -> dict[str, list[dict]]:
        return {"osu": self.rows}

    def readout_summary(self) -> dict[str, float]:
        return {f"peak_{column}": max(row[column] for row in self.rows)
                for column in self.columns
                if column != "size_bytes" and self.rows
                and all(isinstance(row.get(column), (int, float)) for row in self.rows)}

    def readout_source(self) -> str:
        return self.benchmark


def parse_osu(text: str, source: str = "<osu>", sizes: list[int] | None = None) -> OsuResult:
    """Parse one OSU benchmark's stdout: one banner and one table (size and figures).

    `sizes`: the message sizes the run must have measured (from its `-m`): a run that stopped
    early is rejected, never taken for its first rows. The output must hold exactly one run:
    two banners or two tables are several jobs (a program of another MPI than the launcher's
    starts as singletons, each printing its own 1-process table). A last line without its
    newline was cut off in the middle (its number may be cut too) and is rejected.
    """
    banner = re.search(r"^# (OSU MPI.*?)\s+v(\d+(?:\.\d+)*)\s*$", text, re.M)
    if not banner:
        first = next((ln for ln in text.splitlines() if ln.strip()), "")
        why = f"it printed {first.strip()!r}" if first else "the output is empty"
        raise SuiteOutputError(
            f"{source}: not the output of an OSU benchmark (no '# OSU MPI ... vX.Y' banner); "
            f"{why}: see the job's stderr"
        )
    if text and not text.endswith("\n"):
        last = text.splitlines()[-1].strip()
        raise SuiteOutputError(
            f"{source}: the output was cut off in its last line {last!r} (truncated: no newline "
            f"after it); the run did not finish"
        )
    columns: list[str] | None = None
    headers = 0
    rows: list[dict] = []
    other_lines: list[str] = []  # neither banner, header nor row: kept, never judged
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if re.match(r"# OSU MPI", stripped):
            if headers:  # osu_mbw_mr prints its banner twice, but both before its table
                raise SuiteOutputError(
                    f"{source}: a second OSU banner after a table: the output holds several "
                    f"runs, not one job of the requested size (a program of another MPI than "
                    f"the launcher's starts as separate singletons)"
                )
            continue
        if stripped.startswith("#"):
            titles = re.split(r"\s{2,}", stripped.lstrip("#").strip())
            is_header = False
            if titles and titles[0].lower() == "size":
                unknown = [t for t in titles if t.lower() not in _OSU_COLUMNS]
                if unknown:
                    raise SuiteOutputError(f"{source}: unknown OSU column(s) {unknown}")
                is_header = True
            elif titles and all(t.lower() in _OSU_COLUMNS for t in titles):
                is_header = True  # osu_barrier: no size
            if is_header:
                headers += 1
                if headers > 1:
                    raise SuiteOutputError(
                        f"{source}: {headers} OSU tables: the output holds several runs, not "
                        f"one job of the requested size (a program of another MPI than the "
                        f"launcher's starts as separate singletons)"
                    )
                columns = [_OSU_COLUMNS[t.lower()] for t in titles]
            continue
        if stripped.startswith("DATA VALIDATION ERROR"):
            failed = [int(r["size_bytes"]) for r in rows
                      if r.get("validation") == "Fail" and "size_bytes" in r]
            raise SuiteOutputError(
                f"{source}: OSU's validation failed"
                f"{f' at message size(s) {failed}' if failed else ''}: it printed {stripped!r}"
            )
        if columns is None:
            if not _ROW_START.match(stripped):
                other_lines.append(stripped)  # an MPI library's line before the table
                continue
            raise SuiteOutputError(f"{source}: data before the column header: {stripped!r}")
        row = _table_row(stripped, columns, source, text_columns=("validation",))
        if row is None:
            other_lines.append(stripped)
        else:
            rows.append(row)
    if not rows:
        raise SuiteOutputError(f"{source}: {banner.group(1)} printed no results (failed run?)")
    if sizes is not None:
        have = {int(r["size_bytes"]) for r in rows if "size_bytes" in r}
        missing = [s for s in sizes if s not in have]
        if missing:
            raise SuiteOutputError(
                f"{source}: {banner.group(1)} has no row for size(s) {missing}: the run stopped "
                f"early (its figures are not judged)"
            )
    return OsuResult(banner.group(1), banner.group(2), columns or [], rows, other_lines)


#: OSU 7.x's message-size range when `-m` leaves an end out (MIN_MESSAGE_SIZE 1,
#: MAX_MESSAGE_SIZE 1 MiB for point-to-point and collectives alike; `osu_latency --help`).
OSU_DEFAULT_SIZES = (1, 1 << 20)


def osu_sizes(options: list[str]) -> list[int] | None:
    """The message sizes an OSU run measures with these options, or None when they name no
    range (osu_barrier). Every form OSU 7.x's getopt accepts: `-m MAX`, `-m MIN:MAX`,
    `-m MIN:` (the other end OSU's default), `-mVALUE`, `--message-size VALUE`,
    `--message-size=VALUE`; the last one given wins, as in OSU. Sizes double from MIN (0, then
    1). A value OSU would not read is refused: a silently dropped size check would judge a run
    that stopped early."""
    value = None
    for i, option in enumerate(options):
        if option in ("-m", "--message-size"):
            if i + 1 >= len(options):
                raise SuiteOutputError(f"OSU option {option} needs a value, e.g. {option} "
                                       f"1:4194304")
            value = options[i + 1]
        elif option.startswith("--message-size="):
            value = option.partition("=")[2]
        elif option.startswith("-m") and not option.startswith("--"):
            value = option[2:]
    if value is None:
        return None
    low, colon, high = value.partition(":")
    try:
        if not colon:  # -m MAX
            size, top = OSU_DEFAULT_SIZES[0], int(low)
        else:  # -m MIN:MAX or -m MIN:
            size, top = int(low), int(high) if high else OSU_DEFAULT_SIZES[1]
    except ValueError:
        raise SuiteOutputError(
            f"OSU option -m {value!r}: not [MIN:]MAX in bytes (e.g. -m 1:4194304, -m 8:, "
            f"-m 65536)") from None
    if size < 0 or top < size:
        raise SuiteOutputError(f"OSU option -m {value!r}: MIN must be 0 or more and at most "
                               f"MAX (e.g. -m 1:4194304)")
    sizes = []
    while size <= top:
        sizes.append(size)
        size = size * 2 if size else 1
    return sizes


# -- Intel MPI Benchmarks --
_IMB_COLUMNS = {
    "#bytes": "bytes",
    "#repetitions": "repetitions",
    "t[usec]": "t_usec",
    "t_min[usec]": "t_min_usec",
    "t_max[usec]": "t_max_usec",
    "t_avg[usec]": "t_avg_usec",
    "mbytes/sec": "MBps",
    "msg/sec": "msg_per_s",
    "t_ovrl[usec]": "t_ovrl_usec",
    "t_pure[usec]": "t_pure_usec",
    "t_cpu[usec]": "t_cpu_usec",
    "overlap[%]": "overlap_percent",
    "defects": "defects",
}


@dataclass
class ImbResult(Readout):
    """An IMB run. Reader protocol (fabricsuite.base.readout): one table per benchmark (its rows by
    `bytes`; a benchmark run at several process counts: the largest), no summary."""

    version: str
    #: (benchmark, processes) -> rows
    tables: dict[tuple[str, int], list[dict[str, float]]] = field(default_factory=dict)

    lookup_error = SuiteOutputError

    def readout_tables(self) -> dict[str, list[dict[str, float]]]:
        largest: dict[str, int] = {}
        for benchmark, processes in self.tables:
            largest[benchmark] = max(processes, largest.get(benchmark, processes))
        return {b: self.tables[(b, p)] for b, p in largest.items()}

    def readout_source(self) -> str:
        return "IMB"

    def table(self, name: str) -> list[dict[str, float]]:
        tables = self.readout_tables()
        if name not in tables:
            have = sorted({f"{b} ({p} processes)" for b, p in self.tables})
            raise SuiteOutputError(f"IMB: no {name} table (tables: {have})")
        return tables[name]


def parse_imb(text: str, source: str = "<imb>", processes: int | None = None) -> ImbResult:
    """Parse an IMB-MPI1 / IMB-NBC run: every benchmark table, per process count.

    `processes`: the job's process count; every table must be at that count ("# #processes =
    N"), and the output must hold one run (one banner): a program of another MPI than the
    launcher's starts as singletons, each timing 1 process.
    """
    banners = re.findall(r"Intel\(R\) MPI Benchmarks (\S+)", text)
    if len(banners) > 1:
        raise SuiteOutputError(
            f"{source}: {len(banners)} IMB banners: the output holds several runs, not one job "
            f"of the requested size (a program of another MPI than the launcher's starts as "
            f"separate singletons)"
        )
    banner = re.search(r"Intel\(R\) MPI Benchmarks (\S+)", text)
    # The banner may be absent from an excerpt (or a run whose header went elsewhere): the
    # "# Benchmarking" tables are what identifies IMB.
    if not banner and "# Benchmarking " not in text:
        raise SuiteOutputError(
            f"{source}: not the output of Intel MPI Benchmarks (neither its banner nor a "
            f"'# Benchmarking' table): see the job's stderr"
        )
    result = ImbResult(version=banner.group(1).rstrip(",") if banner else "")
    benchmark, nprocs, columns = None, 0, None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        head = re.match(r"# Benchmarking (\S+)", stripped)
        if head:
            benchmark, columns = head.group(1), None
            continue
        procs = re.match(r"# #processes = (\d+)", stripped)
        if procs:
            nprocs = int(procs.group(1))
            continue
        if benchmark and re.match(r"#(bytes|repetitions)\b", stripped):
            titles = stripped.split()
            unknown = [t for t in titles if t.lower() not in _IMB_COLUMNS]
            if unknown:
                raise SuiteOutputError(f"{source}: unknown IMB column(s) {unknown}")
            columns = [_IMB_COLUMNS[t.lower()] for t in titles]
            result.tables[(benchmark, nprocs)] = []
            continue
        if stripped.startswith("#") or columns is None or benchmark is None:
            continue
        if stripped.startswith("("):
            continue  # IMB notes such as "( 2 additional processes waiting in MPI_Barrier)"
        row = _table_row(stripped, columns, f"{source}: {benchmark}")
        if row is not None:  # None: an MPI library's line inside the table, not a row
            result.tables[(benchmark, nprocs)].append(row)
    if "All processes entering MPI_Finalize" not in text:
        raise SuiteOutputError(
            f"{source}: IMB did not finish (no 'All processes entering MPI_Finalize'): the run "
            f"failed or was cut off; see the job's stderr"
        )
    empty = [f"{b} ({p})" for (b, p), rows in result.tables.items() if not rows]
    if empty:
        raise SuiteOutputError(f"{source}: IMB tables without results: {empty}")
    if not result.tables:
        raise SuiteOutputError(f"{source}: IMB ran no benchmark (check the benchmark names)")
    if processes is not None:
        other = sorted({f"{b} ({p})" for b, p in result.tables if p != processes})
        if other:
            raise SuiteOutputError(
                f"{source}: IMB tables at another process count than the job's {processes}: "
                f"{other} (the program did not run as one job of the requested size)"
            )
    return result


# -- NAS Parallel Benchmarks (NPB 3.x MPI and NPB-MZ) --
@dataclass
class NpbResult(Readout):
    benchmark: str  # "CG", "BT-MZ", ...
    npb_class: str
    time_s: float
    mops_total: float
    total_processes: int
    active_processes: int  # NPB-MZ prints no such line: equal to the total there
    verification: str  # "SUCCESSFUL" or what the program printed
    version: str
    total_threads: int | None = None
    size: str = ""

    lookup_error = SuiteOutputError

    def readout_summary(self) -> dict:
        """Reader protocol (fabricsuite.base.readout): the run's figures as its summary."""
        return asdict(self)

    def readout_source(self) -> str:
        return f"NPB {self.benchmark}.{self.npb_class}"


def _npb_field(text: str, name: str) -> str | None:
    match = re.search(rf"^\s*{name}\s*=\s*(.*?)\s*$", text, re.M)
    return match.group(1) if match else None


def parse_npb(text: str, source: str = "<npb>") -> NpbResult:
    """Parse the final report of an NPB or NPB-MZ benchmark."""
    reports = re.findall(r"^\s*([A-Z]{2}(?:-MZ)?) Benchmark Completed", text, re.M)
    if len(reports) > 1:
        raise SuiteOutputError(
            f"{source}: {len(reports)} NPB reports: the output holds several runs, not one job "
            f"of the requested size (a program of another MPI than the launcher's starts as "
            f"separate singletons)"
        )
    done = re.search(r"^\s*([A-Z]{2}(?:-MZ)?) Benchmark Completed", text, re.M)
    if not done:
        raise SuiteOutputError(
            f"{source}: no 'Benchmark Completed' report: the NPB run failed or was cut off "
            f"(a process count the benchmark does not accept stops it early; see the job's stderr)"
        )
    fields = {
        "class": _npb_field(text, "Class"),
        "time": _npb_field(text, "Time in seconds"),
        "mops": _npb_field(text, r"Mop/s total"),
        "total": _npb_field(text, "Total processes"),
        "verification": _npb_field(text, "Verification"),
        "version": _npb_field(text, "Version"),
    }
    missing = [k for k, v in fields.items() if v is None]
    if missing:
        raise SuiteOutputError(f"{source}: NPB report without {missing} (truncated output?)")
    active = _npb_field(text, r"Active proc(?:esse)?s")
    threads = _npb_field(text, "Total threads")
    try:
        total = int(fields["total"])
        return NpbResult(
            benchmark=done.group(1),
            npb_class=fields["class"],
            time_s=_number(fields["time"]),
            mops_total=_number(fields["mops"]),
            total_processes=total,
            active_processes=int(active) if active is not None else total,
            verification=fields["verification"],
            version=fields["version"],
            total_threads=int(threads) if threads is not None else None,
            size=_npb_field(text, "Size") or "",
        )
    except ValueError as err:
        raise SuiteOutputError(f"{source}: NPB report with a non-number: {err}") from None


# -- the original b_eff (HLRS, Rabenseifner) --
@dataclass
class BeffResult(Readout):
    b_eff_MBps: float
    b_eff_per_process_MBps: float
    processes: int
    lmax: str  # as printed, e.g. "1 MB"
    b_eff_at_lmax_MBps: float
    b_eff_at_lmax_rings_MBps: float
    latency_rings_random_us: float
    latency_rings_us: float
    pingpong_latency_us: float
    pingpong_bandwidth_MBps: float
    revision: str = ""

    lookup_error = SuiteOutputError

    def readout_summary(self) -> dict:
        """Reader protocol (fabricsuite.base.readout): the summary's figures."""
        return asdict(self)

    def readout_source(self) -> str:
        return "b_eff"


def parse_beff(summary: str, source: str = "<b_eff.sum>") -> BeffResult:
    """Parse b_eff's `.sum` file (its summary table and final `b_eff = ...` line).

    b_eff writes nothing useful to stdout: the table is in `<prefix>.sum`, the line on stderr.
    """
    # a figure as C's printf writes it: a number, or inf / nan (a division by a zero time)
    number = r"([\d.]+|[-+]?(?:inf|nan)\w*)"
    line = re.search(
        rf"^b_eff\w* =\s*{number} MB/s =\s*{number} \*\s*(\d+) PEs", summary, re.M | re.I
    )
    table = re.search(
        rf"^accumulated \|\s+(\d+)\s+{number}\s+(\d+ [kMG]?B)\s+{number}\s+{number}\s+"
        rf"{number}\s+{number}\s+{number}\s+{number}", summary, re.M | re.I
    )
    if not line or not table:
        what = "the 'b_eff = ... MB/s' line" if not line else "the 'accumulated' table row"
        raise SuiteOutputError(
            f"{source}: {what} is missing: b_eff failed or was cut off (it writes its results to "
            f"the .sum file at the end of the run)"
        )
    names = {"b_eff": line.group(1), "b_eff per process": line.group(2),
             "b_eff at Lmax": table.group(4), "b_eff at Lmax, rings": table.group(5),
             "latency, random rings": table.group(6), "latency, rings": table.group(7),
             "ping-pong latency": table.group(8), "ping-pong bandwidth": table.group(9)}
    bad = [f"{name} {value}" for name, value in names.items()
           if not math.isfinite(float(value))]
    if bad:
        raise SuiteOutputError(
            f"{source}: b_eff printed a non-finite figure ({', '.join(bad)}): a measured time "
            f"of zero or a failed run, not a result to judge")
    revision = re.search(r"b_eff\.c, Revision (\S+)", summary)
    return BeffResult(
        b_eff_MBps=float(line.group(1)),
        b_eff_per_process_MBps=float(line.group(2)),
        processes=int(line.group(3)),
        lmax=table.group(3),
        b_eff_at_lmax_MBps=float(table.group(4)),
        b_eff_at_lmax_rings_MBps=float(table.group(5)),
        latency_rings_random_us=float(table.group(6)),
        latency_rings_us=float(table.group(7)),
        pingpong_latency_us=float(table.group(8)),
        pingpong_bandwidth_MBps=float(table.group(9)),
        revision=revision.group(1) if revision else "",
    )
