"""`fabricsuite report`: one self-contained HTML page about a system's stored sessions.

The page, in order:

1. The verdict of the newest session: its failed cases first, each failed variable with its
   value, the reference and bound it was judged by (as stored with the run) and how many noise
   widths it lies from the reference (the spread `fabricsuite baseline` recorded in the
   reference file's `_statistics`, as the session summary `fabricsuite.commands.session` computes
   it); then the counts of passed, failed and skipped cases.
2. Latency and bandwidth against message size per partition, environment and distance class or
   scale (nodes x ranks per node), from netbench's own result files: `netbench.json` in the
   case's output directory, in its stage directory (ReFrame keeps a failed case's stage, not its
   output directory), else the job's stdout (netbench's human format). The newest run is drawn
   solid, up to PREVIOUS_RUNS_SHOWN previous runs faint, and the reference of every variable
   that is the curve's figure at one size (or its peak) with its bound. Runs whose files are no
   longer on disk are counted and named, never an error.
3. LogGP per protocol range and the detected thresholds of the newest NetbenchLogGP run per
   scope (its result file; its performance variables when the file is gone).
4. Each variable's stored history with the change points `fabricsuite history` finds
   (`history.collect` and `history.detect`, the same series, method and defaults): one small
   plot per series with a change point, then the series whose newest run lies farthest from the
   median of its earlier runs, at most TREND_PLOT_LIMIT plots; the page says how many were left
   out.
5. Heat maps of the newest all-pairs node map (NetbenchMatrix) and of the dense patterns'
   phases (NetbenchDense), or a note that none is stored.
6. Under every figure its provenance: MPI library, netbench version, Spack spec (where the
   build recorded one), hosts, binding and date, from the result file's header and the run
   report.

Self-contained and offline: every plot is a matplotlib figure (Agg, no pyplot state) embedded
as a base64 data URI, SVG for line plots (text stays text; a change point is an element with
the id `change-point-<index>`) and PNG for heat maps; styles and the one script are inline.
The page is rendered by jinja2 with autoescaping on, since check names, hosts and MPI strings
come from files. The inline script records script errors and whether every plot decoded into
the element `#page-check`, so that a headless browser's DOM dump shows both.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from fabricsuite import __version__
from fabricsuite.base.commandline import (
    add_selection_options,
    check_system,
    one_line_errors,
    results_dir,
)
from fabricsuite.base.formats import file_utc, shown_utc
from fabricsuite.commands import history
from fabricsuite.data import store
from fabricsuite.data.session_verdict import past
from fabricsuite.data.store import write_atomically

from .data import (
    PREVIOUS_RUNS_SHOWN,
    TREND_PLOT_LIMIT,
    ProvenanceFinder,
    ReportError,
    Results,
    _utc,
    stored_cases,
    summary,
)
from .figures import dense_figures, loggp_tables, matrix_figures, size_figures, trend_figures

# --- the page ----------------------------------------------------------------------------------

def build_page(sessions: list[dict[str, Any]], system: str, since: float | None,
               where: str, verdicts: Path | None = None, rejudge: bool = False) -> str:
    """The HTML page for `system` from the stored sessions (raises ReportError): each
    session's verdict as stored in `verdicts` (the results directory) when it ended
    (`rejudge`: judged again against today's references, and said so)."""
    import jinja2

    cases, had, interrupted = stored_cases(sessions, system, since)
    if not had:
        raise ReportError(f"no stored runs of system {system!r} in {where}"
                          + (f" since {_utc(since)}" if since is not None else "")
                          + (f" but {len(interrupted)} interrupted session(s), judged nowhere"
                             if interrupted else "")
                          + "; check --system and --since, or run the suite first")
    results = Results()
    provenance = ProvenanceFinder(cases, results)
    verdict = summary(had[-1], system, past(had[-1], verdicts, rejudge))
    newest = had[-1]["session_info"].get("time_start_unix") or 0.0
    later = [r for r in interrupted if (r["session_info"].get("time_start_unix") or 0.0) > newest]
    if later:
        # the newest session is no verdict when a signal ended it: said above the one shown
        verdict.lines.insert(0, f"{len(later)} later session(s) interrupted and judged nowhere "
                                f"(newest {str(later[-1]['session_info'].get('uuid'))[:8]}, "
                                f"{_utc(later[-1]['session_info'].get('time_start_unix'))}): "
                                f"this is the newest whole session")
    series, _ = history.collect(sessions, system, since, results=verdicts,
                                  rejudge=rejudge)
    found = history.detect(series)
    trends, trend_notes, change_rows = trend_figures(found, cases, provenance)
    sizes, size_notes, _ = size_figures(cases, results, provenance)
    matrices, matrix_notes = matrix_figures(cases, results, provenance)
    dense, dense_notes = dense_figures(cases, results, provenance)
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("fabricsuite", "templates"), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    return environment.get_template("report.html.j2").render(
        system=system, where=where, since=None if since is None else _utc(since),
        generated=shown_utc(seconds=True), version=__version__,
        sessions=len(had), first=_utc(cases[0].when) if cases else "?",
        last=_utc(cases[-1].when) if cases else "?", summary=verdict,
        size_figures=sizes, size_notes=size_notes,
        loggp=loggp_tables(cases, results, provenance),
        trend_figures=trends, trend_notes=trend_notes, change_rows=change_rows,
        history=found, matrix_figures=matrices, matrix_notes=matrix_notes,
        dense_figures=dense, dense_notes=dense_notes, unreadable=results.unreadable,
        plots=len(trends) + len(sizes) + len(matrices) + len(dense))


def default_output(results: Path, system: str) -> Path:
    """RESULTS/report-<system>-<UTC time>.html, never an existing file."""
    stamp = file_utc()
    path = results / f"report-{system}-{stamp}.html"
    number = 1
    while path.exists():
        path = results / f"report-{system}-{stamp}-{number}.html"
        number += 1
    return path


DESCRIPTION = f"""\
Write one self-contained HTML page (viewable offline: plots are embedded images, nothing
is loaded from the network) about the runs of a system stored in ReFrame's results
database (RESULTS/results.db; RESULTS = --results, else $FABRICSUITE_RESULTS, else
results/), or in JSON run reports (--reports):

  1. the newest session's verdict: failed cases first (variable, value, reference, bound,
     distance in noise widths where the reference file's _statistics gives the spread),
     then the counts of passed, failed and skipped cases;
  2. latency and bandwidth against message size per partition, environment and distance
     or scale, from netbench's result files (newest run, up to {PREVIOUS_RUNS_SHOWN} previous
     ones, the reference and bound); runs whose files are gone are counted;
  3. LogGP per protocol range and the detected thresholds;
  4. each variable's history with the change points of `fabricsuite history`, at most
     {TREND_PLOT_LIMIT} plots (series with a change point first);
  5. heat maps of the all-pairs node map and of the dense patterns' phases;
  6. the provenance of every figure (MPI library, netbench version, Spack spec, hosts,
     binding, date).

Exit status: 0 written (the path is printed), 2 bad input (no database, no run of the
system, an unwritable output, a bad date), with one line naming the fix."""


def add_parser(sub: Any) -> None:
    """Register `fabricsuite report` on the CLI's subparsers."""
    p = sub.add_parser("report", help="one self-contained HTML page of the stored runs",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=DESCRIPTION)
    add_selection_options(p, since=True, reports=True, rejudge=True)
    p.add_argument("-o", "--output", metavar="FILE",
                   help="the HTML file to write (replaced if it exists; default: "
                        "RESULTS/report-<system>-<UTC time>.html)")


def _output_path(args: Any, results: Path) -> Path:
    if args.output:
        path = Path(args.output)
        if path.is_dir():
            raise ReportError(f"-o {path} is a directory; name a file, e.g. "
                              f"-o {path / 'report.html'}")
    else:
        if not results.is_dir():
            raise ReportError(f"cannot write the report into {results}: no such directory; "
                              f"pass -o FILE or --results DIR")
        path = default_output(results, args.system)
    if not path.parent.is_dir():
        raise ReportError(f"cannot write {path}: directory {path.parent} does not exist; "
                          f"create it or pass another -o")
    if not os.access(path.parent, os.W_OK):
        raise ReportError(f"cannot write {path}: directory {path.parent} is not writable; "
                          f"pass another -o")
    return path


@one_line_errors("report")
def run(args: Any) -> int:
    """`fabricsuite report`: 0 written, 2 bad input."""
    check_system(args.system)
    path = None
    try:
        since = store.parse_since(args.since) if args.since else None
        sessions, where = store.read_sessions(args, since)
        path = _output_path(args, results_dir(args))  # before the plots: a bad -o fails at once
        page = build_page(sessions, args.system, since, where, results_dir(args),
                          args.rejudge)
        umask = os.umask(0)
        os.umask(umask)
        # a page is for everyone the umask allows (not mkstemp's 0600); one replaced by -o is
        # kept as a dated backup
        write_atomically(path, page, new_mode=0o666 & ~umask)
    except OSError as err:
        where = err.filename or path or "the output"
        raise ReportError(f"cannot write {where}: {err.strerror or err}; check the path and the "
                          f"disk, or pass another -o") from None
    print(path)
    return 0
