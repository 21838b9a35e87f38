"""fabricsuite report: one self-contained HTML page from real stored sessions, checked in a
real headless browser.

The stored sessions are real ReFrame run reports (tests/data/history, tests/data/baseline)
stored in a fresh results database with ReFrame's own storage backend, and sessions derived
from the real pt2pt report whose cases point at real netbench result files (tests/data/report,
tests/data/netbench; see tests/data/report/README.md): a case's output directory is an absolute
path of the machine that ran it, so the test copies the files into its own directory and
points the case there (and dates a derived session at its file's start time).
"""

from __future__ import annotations

import base64
import copy
import json
import re
import shutil
import subprocess
import uuid
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path

import pytest
from mpi_support import local_reference_file, vm_reference_file
from report_support import as_session

from fabricsuite.commands import cli, session
from fabricsuite.data import store
from fabricsuite.data.netbench_result import load
from fabricsuite.data.references import load_file

DATA = Path(__file__).parent / "data"
HISTORY = sorted((DATA / "history").glob("run-report-*.json"))
PT2PT = DATA / "baseline" / "run-report-pt2pt-local.json"
CAPTURED = DATA / "netbench"
REAL = DATA / "report"
CHROMIUM = shutil.which("chromium")
MiB = 1024 * 1024

# What the derived cases' performance variables read from their result files (as the checks in
# checks/pt2pt.py, checks/dense.py and checks/fabric_map.py declare them): name -> (table or
# None for the summary, column, where, unit, direction).
LOGGP = {
    "loggp_L_us": (None, "L_us", {}, "us", "lower"),
    "loggp_protocol_ranges": (None, "protocol_ranges", {}, "ranges", "equal"),
    "loggp_g_us": (None, "g_small_us", {}, "us", "lower"),
    "loggp_o_s_us": (None, "o_s_small_us", {}, "us", "lower"),
    "loggp_o_r_us": (None, "o_r_small_us", {}, "us", "lower"),
    "loggp_G_large_ns_per_byte": (None, "G_large_ns_per_byte", {}, "ns/B", "lower"),
    "loggp_M_bytes": (None, "M_bytes", {}, "B", "equal"),
    "loggp_threshold_large_bytes": (None, "threshold_large_bytes", {}, "B", "equal"),
}
DENSE = {
    **{f"{a}_bandwidth_1MiB_MBps": ("algorithms", "bandwidth_mean_MBps",
                                    {"algorithm": a, "size_bytes": MiB}, "MB/s", "higher")
       for a in ("aapc", "pairwise", "cumulative", "random")},
    **{f"{a}_worst_to_first_1MiB": ("algorithms", "worst_to_first",
                                    {"algorithm": a, "size_bytes": MiB}, "ratio", "higher")
       for a in ("aapc", "pairwise", "cumulative", "random")},
}
MATRIX = {
    "matrix_bandwidth_median_MBps": (None, "bandwidth_median_MBps", {}, "MB/s", "higher"),
    "matrix_bandwidth_min_MBps": (None, "bandwidth_min_MBps", {}, "MB/s", "higher"),
    "matrix_latency_median_us": (None, "latency_median_us", {}, "us", "lower"),
}
PINGPONG = {
    "latency_8B_median_us": ("pingpong", "latency_median_us", {"size_bytes": 8}, "us", "lower"),
    "latency_8B_min_us": ("pingpong", "latency_min_us", {"size_bytes": 8}, "us", "lower"),
}
BANDWIDTH = {
    "bandwidth_1MiB_MBps": ("bibw", "bandwidth_median_MBps", {"size_bytes": MiB}, "MB/s",
                            "higher"),
    "bandwidth_peak_MBps": (None, "bandwidth_peak_MBps", {}, "MB/s", "higher"),
}


# --- building the stored sessions ----------------------------------------------------------------

def _unix(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def _retime(report: dict, number: int, start: float) -> dict:
    """A copy of `report` as another session (uuid from `number`) that started at `start`."""
    return as_session(report, str(uuid.UUID(int=number)), start)


def _place(case: dict, root: Path, result: Path | None, kept_in: str) -> None:
    """Point `case` at fresh directories under `root`; the result file (if any) is copied into
    the one ReFrame keeps: the output directory of a passed case, the stage of a failed one."""
    name = case["short_name"]
    output, stage = root / "output" / name, root / "stage" / name
    case["outputdir"], case["stagedir"] = str(output), str(stage)
    if result is not None:
        directory = output if kept_in == "output" else stage
        directory.mkdir(parents=True)
        shutil.copy(result, directory / "netbench.json")


def _judge(case: dict) -> None:
    """Each variable against its reference and bounds, and the case's result, as ReFrame
    judges them."""
    failed = []
    for key, perf in case["perfvalues"].items():
        value, ref, lower, upper = perf[:4]
        ok = not ref or ((lower is None or value >= ref * (1 + lower))
                         and (upper is None or value <= ref * (1 + upper)))
        perf[5] = "pass" if ok else "fail"
        if not ok:
            failed.append(key.split(":")[-1])
    case["result"] = "fail" if failed else "pass"
    case["fail_phase"] = "performance" if failed else None
    case["fail_reason"] = (f"performance error: failed to meet reference(s): "
                           f"{', '.join(failed)}" if failed else None)


def _measure(case: dict, result_file: Path, metrics: dict, reference: dict) -> None:
    """The case's performance variables from a real result file, with the references of
    the development VM's references (none for a check without one there, as ReFrame stores it)."""
    result = load(result_file)
    case["perfvalues"], case["perf_directions"] = {}, {}
    for name, (table, column, where, unit, better) in metrics.items():
        value = result.value(table, column, **where)
        ref, lower, upper, _ = reference.get(name, [0, None, None, unit])
        case["perfvalues"][f"local:default:{name}"] = [value, ref, lower, upper, unit, None]
        case["perf_directions"][name] = better
    case["mpi_library"] = result.mpi_library.splitlines()[0]
    case["netbench_version"] = result.version
    _judge(case)


def _pt2pt(root: Path, number: int, start: float, pingpong: Path | None,
           bandwidth: Path | None, measured: bool) -> dict:
    """The real pt2pt session (or a copy of it at another time) with its cases' result files
    under `root`; `measured`: the figures are read from the files given."""
    report = _retime(json.loads(PT2PT.read_text()), number, start) if number else \
        json.loads(PT2PT.read_text())
    for case in report["runs"][0]["testcases"]:
        if case["result"] == "skip" or case.get("fixture"):
            continue
        check = case["name"].split()[0]
        result, metrics = ((pingpong, PINGPONG) if check == "NetbenchPingPong"
                           else (bandwidth, BANDWIDTH))
        refs = {k.split(":")[-1]: [p[1], p[2], p[3], p[4]] for k, p in case["perfvalues"].items()}
        if measured and result is not None:
            _measure(case, result, metrics, refs)
        _place(case, root / report["session_info"]["uuid"], result,
               "output" if case["result"] == "pass" else "stage")
    return report


def _derived(root: Path, number: int, template: dict, specs: list[tuple]) -> dict:
    """A session of derived cases, one per (check, parameters, result file, metrics): each a
    copy of the real NetbenchPingPong case measured from its real result file, the session
    dated at the first file's start time."""
    base = json.loads(PT2PT.read_text())
    started = [_unix(json.loads(f.read_text())["start_time_utc"]) for _, _, f, _ in specs]
    report = _retime(base, number, min(started) - 5)
    references = load_file(vm_reference_file())
    cases = []
    for (check, parameters, result_file, metrics), start in zip(specs, started, strict=True):
        case = copy.deepcopy(template)
        label = " ".join(f"%{k}={v}" for k, v in parameters.items() if k != "scale")
        case.update(parameters)
        case.update(name=f"{check} {label}", display_name=f"{check} {label}",
                    unique_name=f"{check}_{len(cases)}", short_name=f"{check}_{len(cases)}",
                    job_completion_time_unix=start + 4,
                    session_uuid=report["session_info"]["uuid"],
                    transport="vader",  # what a netbench check records since issue 29
                    counters="vm net eth0 rx_dropped +3",
                    counter_deltas={"vm/net/eth0/rx_dropped": 3},
                    counters_not_read="vm cxi: no /sys/class/cxi/*/device/telemetry (no "
                                      "Slingshot CXI adapter)")
        level = parameters.get("distance") or parameters.get("scale")
        reference = {k: v for k, v in ((references.get(check) or {}).get("local:default") or {})
                     .get("openmpi", {}).get(level, {}).items()}
        _measure(case, result_file, metrics, reference)
        _place(case, root / report["session_info"]["uuid"], result_file, "output")
        cases.append(case)
    report["runs"] = [{**base["runs"][0], "testcases": cases}]
    return report


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """The results directory with ReFrame's database of every session, and the sessions."""
    root = tmp_path_factory.mktemp("results")
    real = json.loads(PT2PT.read_text())
    template = next(c for c in real["runs"][0]["testcases"]
                    if c["name"] == "NetbenchPingPong %distance=same-l3")
    template = {**copy.deepcopy(template), "distance": None, "bound_cpus": [0, 1]}
    sessions = [
        # A day earlier, its files gone (as after a clean-up of results/output).
        _pt2pt(root, 101, real["session_info"]["time_start_unix"] - 86400, None, None, False),
        # The morning captures of tests/data/netbench, as a session of their own.
        _pt2pt(root, 102, _unix("2026-11-23T07:16:30Z"), CAPTURED / "pingpong-openmpi.json",
               CAPTURED / "bibw-openmpi.json", True),
        # The real session, with the real files it wrote (tests/data/report).
        _pt2pt(root, 0, 0, REAL / "pingpong-3b923411.json", REAL / "bibw-3b923411.json", False),
        *store.report_sessions(HISTORY),
        _derived(root, 103, template, [
            ("NetbenchDense", {"scale": "1x2", "node_count": 1, "placement": "per-core"},
             CAPTURED / "dense-openmpi.json", DENSE)]),
        _derived(root, 104, template, [
            ("NetbenchMatrix", {"scale": "1x2", "node_count": 1, "placement": "per-node",
                                "ranks_per_node": 2}, REAL / "matrix-openmpi-1x2.json", MATRIX),
            ("NetbenchLogGP", {"distance": "same-l3"}, REAL / "loggp-openmpi.json", LOGGP)]),
    ]
    with store._reframe_storage(root / "results.db") as backend:
        for s in sessions:
            backend.store(s, "run-report.json")
    return root, sessions


@pytest.fixture(scope="module")
def page(stored, tmp_path_factory):
    root, _ = stored
    out = tmp_path_factory.mktemp("page") / "report.html"
    assert cli.main(["report", "--system", "local", "--results", str(root), "-o", str(out)]) == 0
    return out


# --- reading the page ----------------------------------------------------------------------------

class _Elements(HTMLParser):
    """Every element's tag and attributes, in document order, and the text."""

    def __init__(self):
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))


def _elements(html: str) -> list[tuple[str, dict[str, str]]]:
    parser = _Elements()
    parser.feed(html)
    return parser.elements


def _figures(html: str, kind: str) -> list[tuple[dict[str, str], bytes]]:
    """(attributes of the <figure>, the decoded image) of every figure of class `kind`."""
    found, current = [], None
    for tag, attrs in _elements(html):
        if tag == "figure":
            current = attrs if attrs.get("class") == kind else None
        elif tag == "img" and current is not None:
            payload = attrs["src"].split(",", 1)[1]
            found.append((current, base64.b64decode(payload)))
            current = None
    return found


# --- the tests -----------------------------------------------------------------------------------

@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (Debian: apt-get "
                                              "install chromium)")
def test_page_renders_in_headless_chromium(page, tmp_path):
    """The page from the real stored sessions, opened offline by Chromium: the inline check
    reports no script error and every plot decoded, and the screenshot is not blank."""
    html = page.read_text()
    plots = len([a for t, a in _elements(html) if t == "img" and a.get("class") == "plot"])
    assert plots >= 8  # trends, per-size, matrix and dense
    browser = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
               f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000"]
    dom = subprocess.run([*browser, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    check = re.search(r'<p id="page-check"[^>]*>([^<]*)</p>', dom.stdout)
    assert check, dom.stdout[:2000]
    assert check.group(1) == f"no script errors; {plots} of {plots} plots rendered"
    shot = tmp_path / "page.png"
    proc = subprocess.run([*browser, f"--screenshot={shot}", "--window-size=1280,4000",
                           page.as_uri()], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    import matplotlib.image
    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (4000, 1280)
    not_white = (pixels < 0.95).any(axis=-1).mean()
    assert not_white > 0.03 and pixels.std() > 0.05, (not_white, pixels.std())


def test_trend_plot_marks_the_change_point(page, stored):
    """tests/data/history: from the 6th session on overhead_send_us rose (Open MPI over TCP);
    its trend plot names that session and its SVG draws the change point before run 6."""
    _, sessions = stored
    html = page.read_text()
    sixth = store.report_sessions(HISTORY)[5]["session_info"]["uuid"]
    trends = {attrs["data-series"]: (attrs, image) for attrs, image in
              _figures(html, "trend-figure")}
    attrs, svg = trends["NetbenchOverlap local:default openmpi same-l3 overhead_send_us"]
    assert attrs["data-change-points"] == "1" and attrs["data-change-point-sessions"] == sixth
    assert b'id="change-point-5"' in svg
    assert "regression at run 6/12, session 718e31d6" in html
    # A series without a change point is plotted without one.
    attrs, svg = trends["NetbenchPingPong local:default openmpi same-l3 latency_8B_median_us"]
    assert attrs["data-change-points"] == "0" and b"change-point" not in svg
    assert "at most 12 plots" in html and "left out" in html


def test_per_size_figure_reference_previous_runs_and_missing_files(page):
    """Latency and bandwidth against size for same-l3: the newest real run, the earlier one,
    the reference marks; the session whose files are gone is counted, not an error."""
    html = page.read_text()
    sizes = _figures(html, "size-figure")
    scopes = {attrs["data-scope"]: (attrs, svg) for attrs, svg in sizes}
    attrs, svg = scopes["local:default openmpi same-l3"]
    assert attrs["data-missing"] == "2"  # ping-pong and bandwidth of the session without files
    assert b"reference and bound" in svg and b"reference peak and bound" in svg
    assert b"2026-11-23 20:12Z" in svg  # the newest run's curve is labelled with its date
    assert b"1 previous" in svg
    assert "per-size data not kept for 2 run(s)" in html
    assert "NetbenchPingPong 1, NetbenchPingPongBandwidth 1" in html
    # The dense check's per-algorithm curves at its scale.
    assert "local:default openmpi 1x2" in scopes
    # Provenance from the result files' headers.
    assert "Open MPI v4.1.4" in html and "rank 0: vm CPUs 0; rank 1: vm CPUs 1" in html
    assert "2026-11-23T20:12:38Z" in html  # netbench's start time of the real ping-pong run


def test_loggp_table_and_heat_maps(page):
    html = page.read_text()
    assert len(re.findall(r'<table class="loggp-ranges">', html)) == 1
    ranges = html.split('<table class="loggp-ranges">')[1].split("</table>")[0]
    assert ranges.count("<tr>") == 4  # header and the three ranges of the real run
    assert "4 KiB - 64 KiB" in ranges and "1.904 [1.621, 2.036]" in ranges
    assert "threshold into the last range (threshold_large_bytes, result file)" in html
    matrix = _figures(html, "matrix-figure")
    dense = _figures(html, "dense-figure")
    assert len(matrix) == 1 and matrix[0][0]["data-ranks"] == "2"
    assert len(dense) == 1 and dense[0][0]["data-phases"] == "19"  # 1 + 1 + 1 + 16 phases
    for _, png in matrix + dense:
        assert png.startswith(b"\x89PNG")
    assert "no all-pairs run stored" not in html


def test_provenance_names_the_transport(page):
    html = page.read_text()
    rows = [row for row in html.split("<tr>") if row.startswith("<td>Netbench")]
    matrix = [row for row in rows if row.startswith("<td>NetbenchMatrix</td>")]
    assert matrix and "</td><td>vader</td>" in matrix[0]
    assert ("<td>vm net eth0 rx_dropped +3 (not read: vm cxi: no /sys/class/cxi/*/device/"
            "telemetry (no Slingshot CXI adapter))</td>") in matrix[0]
    # sessions stored before the transport was recorded say so
    assert "<tr><th>transport</th><td>not recorded</td></tr>" in html


def test_page_is_self_contained(page):
    """No network resource: nothing refers to http(s) in the page, nor inside its images."""
    html = page.read_text()
    assert not re.search(r"https?://", html)
    for tag, attrs in _elements(html):
        for name in ("src", "href"):
            assert not attrs.get(name) or attrs[name].startswith(("data:", "#")), (tag, attrs)
    for kind in ("trend-figure", "size-figure"):
        for _, svg in _figures(html, kind):
            assert not re.search(rb'(?:href|src)="https?:', svg)


def test_no_all_pairs_note_and_escaping(tmp_path, capsys):
    """From the twelve real history reports alone: no all-pairs or dense run, said so; text
    from the reports is escaped (a command line with markup stays text)."""
    sessions = store.report_sessions(HISTORY)
    sessions[-1]["session_info"]["cmdline"] += " <script>alert(1)</script>"
    hostile = tmp_path / "run-report-12.json"
    hostile.write_text(json.dumps(sessions[-1]))
    out = tmp_path / "page.html"
    reports = [*map(str, HISTORY[:-1]), str(hostile)]
    assert cli.main(["report", "--system", "local", "--reports", *reports, "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    html = out.read_text()
    assert "no all-pairs run stored (NetbenchMatrix)" in html
    assert "no dense-pattern run stored (NetbenchDense)" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html


def test_failed_case_listed_first_with_counts(tmp_path):
    """The real pt2pt session: the bandwidth case failed its reference, ping-pong passed; the
    failed case and its two variables come first, then the counts, then the passed case."""
    out = tmp_path / "page.html"
    assert cli.main(["report", "--system", "local", "--reports", str(PT2PT), "-o",
                     str(out)]) == 0
    html = out.read_text()
    failed = html.split('<table id="failed-cases">')[1].split("</table>")[0]
    rows = re.findall(r'<tr class="failed">(.*?)</tr>', failed, re.S)
    assert [re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)[6] for r in rows] == [
        "bandwidth_1MiB_MBps", "bandwidth_peak_MBps"]
    first = re.findall(r"<td[^>]*>(.*?)</td>", rows[0], re.S)
    # the session's verdict of the case beside ReFrame's phase (fabricsuite.data.session_verdict)
    assert first[:6] == ["NetbenchPingPongBandwidth", "local:default", "openmpi", "same-l3",
                         "regression", "performance"]
    assert first[7:11] == ["1337 MB/s", "6978.3 MB/s", "-45.0% (3838 MB/s)", "-80.8%"]
    # the outcome's counts (tests/test_outcome.py: "1 passed, 1 failed (1 performance); 10
    # skipped"), the build no case of the fabric
    assert "1 passed, 1 failed (1 regression), 10 skipped" in html
    assert html.index('id="failed-cases"') < html.index('id="counts"')
    everything = html.split('<table id="all-cases">')[1]
    assert everything.index("NetbenchPingPongBandwidth") < everything.index(
        "NetbenchPingPong %distance=same-l3")


def test_noise_widths_from_the_reference_statistics(tmp_path, monkeypatch):
    """With a reference file whose _statistics come from `fabricsuite baseline` over the five
    healthy real sessions, the newest session's regression is given in noise widths, as the
    session summary gives it."""
    monkeypatch.setenv("RFM_REFERENCE_PREFIX", str(tmp_path))
    own = local_reference_file(tmp_path)
    assert cli.main(["baseline", "--system", "local", "--output", str(own),
                     *map(str, HISTORY[:5])]) == 0
    stats = load_file(own)["_statistics"]
    key = "NetbenchOverlap local:default openmpi same-l3 overhead_send_us"
    spread = stats[key]["spread"]
    newest = json.loads(HISTORY[-1].read_text())
    case = next(c for c in newest["runs"][0]["testcases"] if c["result"] == "fail")
    value, ref = case["perfvalues"]["local:default:overhead_send_us"][:2]
    out = tmp_path / "page.html"
    assert cli.main(["report", "--system", "local", "--reports", *map(str, HISTORY), "-o",
                     str(out)]) == 0
    html = out.read_text()
    widths = abs(value - ref) / ref / spread
    assert f"{widths:.1f} (spread {spread:.2%})" in html
    for line in session.verdict_lines(newest):
        assert line.split(" = ")[0] in html


def test_output_default_name_and_atomic_replace(tmp_path, capsys):
    """Without -o: RESULTS/report-<system>-<time>.html, a second page never replaces the
    first; -o replaces its target and leaves no temporary file."""
    for _ in range(2):
        assert cli.main(["report", "--system", "local", "--results", str(tmp_path),
                         "--reports", str(PT2PT)]) == 0
    written = capsys.readouterr().out.split()
    assert len(set(written)) == 2 and all(Path(p).is_file() for p in written)
    assert all(re.fullmatch(r"report-local-\d{8}T\d{6}Z(-1)?\.html", Path(p).name)
               for p in written)
    target = tmp_path / "mine.html"
    target.write_text("old")
    assert cli.main(["report", "--system", "local", "--reports", str(PT2PT), "-o",
                     str(target)]) == 0
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


@pytest.mark.parametrize("args, message", [
    (["--system", "local"], "no results database"),
    (["--system", "nosuch", "--reports", str(PT2PT)], "no stored runs of system 'nosuch'"),
    (["--system", "local", "--reports", str(PT2PT), "--since", "now+1d"],
     "no stored runs of system 'local' in 1 run report(s) since"),
    (["--system", "local", "--since", "last tuesday"], "is no date"),
    (["--system", "local", "--reports", "/nonexistent.json"], "no such run report"),
    (["--system", "a b"], "not a ReFrame system name"),
    (["--system", "local", "--reports", str(PT2PT), "-o", "/nonexistent/dir/r.html"],
     "directory /nonexistent/dir does not exist"),
    (["--system", "local", "--reports", str(PT2PT), "-o", "{tmp}"], "is a directory"),
    (["--system", "local", "--reports", str(PT2PT), "--results", "/nonexistent"],
     "cannot write the report into /nonexistent"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--results" not in args:
        args = [*args, "--results", str(tmp_path)]
    assert cli.main(["report", *args]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and len(captured.err.strip().splitlines()) == 1, captured.err
    assert captured.out == "" and not list(tmp_path.glob("*.html"))


def test_help_explains_the_page(capsys):
    with pytest.raises(SystemExit) as exit_status:
        cli.main(["report", "--help"])
    assert exit_status.value.code == 0
    text = capsys.readouterr().out
    for words in ("--system", "--since", "--reports", "-o", "results.db", "noise widths",
                  "provenance", "Exit status"):
        assert words in text


def test_result_found_in_output_stage_or_the_jobs_stdout(tmp_path):
    """netbench.json in the output directory first, then in the stage (a failed case's), then
    the job's stdout (netbench's human format of the same run); none: not kept."""
    from fabricsuite.commands.report.data import Results, StoredCase

    output, stage = tmp_path / "output", tmp_path / "stage"
    output.mkdir()
    stage.mkdir()
    case = {"outputdir": str(output), "stagedir": str(stage), "job_stdout": "rfm_job.out"}
    assert Results().get(StoredCase(case, "s", 0.0)) is None
    shutil.copy(REAL / "matrix-openmpi-1x2.txt", stage / "rfm_job.out")
    found = Results().get(StoredCase(case, "s", 0.0))
    assert found.path == stage / "rfm_job.out" and found.result.method == "matrix"
    assert found.started == "2026-11-23T23:29:00Z"
    shutil.copy(REAL / "loggp-openmpi.json", stage / "netbench.json")
    assert Results().get(StoredCase(case, "s", 0.0)).result.method == "loggp"
    shutil.copy(REAL / "matrix-openmpi-1x2.json", output / "netbench.json")
    found = Results().get(StoredCase(case, "s", 0.0))
    assert found.path == output / "netbench.json" and found.result.method == "matrix"
    (output / "netbench.json").write_text('{"format": "netbench-result", "format_v')
    results = Results()
    assert results.get(StoredCase(case, "s", 0.0)).path == stage / "netbench.json"
    assert len(results.unreadable) == 1 and "not valid JSON" in results.unreadable[0]


@pytest.mark.parametrize("variable, check, group, where", [
    ("latency_8B_median_us", "NetbenchPingPong", None, 8),
    ("latency_8B_min_us", "NetbenchPingPong", None, None),  # a minimum, not the median
    ("bandwidth_1MiB_MBps", "NetbenchPingPongBandwidth", None, MiB),
    ("bandwidth_peak_MBps", "NetbenchPingPongBandwidth", None, "peak"),
    ("flood_g_8B_us", "NetbenchFlood", None, None),  # a gap, not on the bandwidth curve
    ("flood_bandwidth_1MiB_MBps", "NetbenchFlood", None, MiB),
    ("aapc_bandwidth_1MiB_MBps", "NetbenchDense", "aapc", MiB),
    ("aapc_bandwidth_1MiB_MBps", "NetbenchDense", "random", None),
    ("aapc_worst_to_first_1MiB", "NetbenchDense", "aapc", None),
    ("no_such_variable", "NetbenchPingPong", None, None),
])
def test_reference_position_on_a_size_curve(variable, check, group, where):
    """The position comes from the check's declaration of the variable (its table, column and
    size), not from its name."""
    from fabricsuite.commands.report.data import SIZE_CURVES, declared_metrics, reference_position

    metric = declared_metrics(check).get(variable)
    assert reference_position(metric, SIZE_CURVES[check][0], group) == where


def test_a_slurm_nodelist_string_is_one_host_entry():
    """Under Slurm a stored case may hold Slurm's compressed node list, as a string or in a
    list; it is read as the nodes it names, not as a list of its characters."""
    from fabricsuite.commands.report.data import _nodelist

    assert _nodelist({"job_nodelist": "fst[2301-2302]"}) == ["fst2301", "fst2302"]
    assert _nodelist({"job_nodelist": ["fst[2301-2302]"]}) == ["fst2301", "fst2302"]
    assert _nodelist({"job_nodelist": ["n1", "n2"]}) == ["n1", "n2"]
    assert _nodelist({}) == []


def test_a_point_that_cannot_be_drawn_is_named_not_dropped():
    """Issue 39: a NaN or negative figure was left out of a per-size curve without a word."""
    from fabricsuite.commands.report.data import SIZE_CURVES
    from fabricsuite.commands.report.figures import _curve_points
    from fabricsuite.data.netbench_result import load

    result = load(REAL / "pingpong-3b923411.json")
    (curve,) = SIZE_CURVES["NetbenchPingPong"]
    rows = result.tables["pingpong"]
    whole, _ = _curve_points(result, curve, None)
    rows[0]["latency_median_us"] = float("nan")
    rows[1]["latency_median_us"] = -1.0
    left_out: list[str] = []
    xs, _ = _curve_points(result, curve, None, left_out)
    assert len(xs) == len(whole) - 2
    (line,) = left_out
    assert line.startswith("ping-pong: 2 point(s) not drawn, no finite positive "
                           "latency_median_us (") and "nan" in line and "-1.0" in line, line
