"""The data layer under the workflows: the run reports a session stored, and the files the
suite writes (reference files, pages), replaced atomically, with a dated backup and a lock.

`baseline`, `compare`, `history`, `report`, `nightly`, `session` and `machine` read stored run
reports and write their files through this module, so that a report is found, read and refused
the same way everywhere, and no file the suite keeps is ever half written or lost.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import sqlite3
import sys
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fabricsuite.base.commandline import UsageError, results_dir
from fabricsuite.base.formats import backup_utc, shown_utc

#: Mode of a new file (a replaced one keeps its own).
NEW_FILE_MODE = 0o644


class StoreError(UsageError):
    """A stored run report that cannot be read: one line that names the file and the fix."""


# --- stored run reports --------------------------------------------------------------------------

def run_report_paths(reports_dir: Path) -> list[Path]:
    """The run reports ReFrame wrote under `reports_dir` (RESULTS/reports), oldest first."""
    return sorted(reports_dir.glob("run-report-*.json"), key=lambda p: p.stat().st_mtime)


def load_report(path: Path, error: type[UsageError] = StoreError) -> dict[str, Any]:
    """A ReFrame run report, or `error` with one line naming the file and what to pass."""
    try:
        report = json.loads(path.read_text())
    except FileNotFoundError:
        raise error(f"{path}: no such run report; check the path") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise error(
            f"{path}: not a readable ReFrame run report ({err}); pass run reports written by "
            f"ReFrame (RESULTS/reports/run-report-*.json)"
        ) from None
    if not isinstance(report, dict) or not isinstance(report.get("runs"), list):
        what = (type(report).__name__ if not isinstance(report, dict)
                else "a mapping without a list of runs")
        raise error(
            f"{path}: the top level is {what!r}, not what a ReFrame 4.10 run report holds; pass "
            f"run reports written by ReFrame (RESULTS/reports/run-report-*.json)")
    return report


def session_runs(report: Any, error: type[UsageError] = StoreError) -> tuple[dict, list]:
    """(session_info, runs) of a stored session (a run report, or a session from the results
    database), or `error` naming what ReFrame writes."""
    info = report.get("session_info") if isinstance(report, dict) else None
    runs = report.get("runs") if isinstance(report, dict) else None
    if not isinstance(info, dict) or not isinstance(runs, list):
        raise error("a stored session is not a ReFrame run report (no session_info or runs); "
                    "pass run reports written by ReFrame 4.10")
    return info, runs


def readable_reports(reports_dir: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """(path, report) of every readable run report under `reports_dir`, oldest first; one being
    written or damaged is passed over (a workflow that scans a directory must not stop at it)."""
    for path in run_report_paths(reports_dir):
        try:
            yield path, load_report(path)
        except StoreError:
            continue


#: The keys of ReFrame 4.10's own session_info (the report schema): the others are the
#: session's --session-extras.
_SESSION_INFO_KEYS = frozenset({
    "cmdline", "config_files", "data_version", "hostname", "log_files", "num_aborted",
    "num_cases", "num_failures", "num_skipped", "prefix_output", "prefix_stage", "session_uuid",
    "time_elapsed", "time_end", "time_end_unix", "time_start", "time_start_unix", "user", "uuid",
    "version", "workdir"})


def session_extras(info: dict[str, Any]) -> dict[str, str]:
    """The `--session-extras key=value` pairs ReFrame stored in `session_info` (every key that
    is not one of the report schema's own session_info keys)."""
    try:
        from reframe.frontend.reporting import _reserved_session_info_keys
        reserved = _reserved_session_info_keys()
    except ImportError:  # a later ReFrame without the helper: its 4.10 schema keys
        reserved = _SESSION_INFO_KEYS
    return {k: str(v) for k, v in info.items() if k not in reserved}


def has_tag(info: dict[str, Any], tag: str) -> bool:
    """`tag` is the session's extra `tag`, the value of any extra, or `key=value` of one."""
    extras = session_extras(info)
    if extras.get("tag") == tag or tag in extras.values():
        return True
    key, sep, value = tag.partition("=")
    return bool(sep) and extras.get(key) == value


# --- files written atomically ---------------------------------------------------------------------

def write_temp(directory: Path, name: str, text: str, mode: int) -> str:
    """A fsync'ed temporary file with `text` and `mode` in `directory`; returns its path."""
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def os_mode(path: Path) -> int:
    return path.stat().st_mode & 0o7777


def backup(path: Path, now: datetime | None = None) -> Path:
    """Copy `path` to `<name>.<UTC time>.bak` atomically, never replacing an existing backup."""
    stamp = backup_utc(now)
    tmp = write_temp(path.parent, path.name, path.read_text(), os_mode(path))
    try:
        for n in range(1, 1000):
            target = path.with_name(f"{path.name}.{stamp}{'' if n == 1 else f'-{n}'}.bak")
            try:
                os.link(tmp, target)  # fails if the name exists: never overwrites
            except FileExistsError:
                continue
            except OSError as err:
                if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP):
                    raise
                if target.exists():  # a file system without hard links
                    continue
                os.replace(tmp, target)
            fsync_dir(path.parent)
            return target
        raise FileExistsError(errno.EEXIST, "too many backups with this time stamp", str(path))
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_atomically(path: Path, text: str, new_mode: int = NEW_FILE_MODE) -> Path | None:
    """Replace `path` by `text` (temporary file, fsync, rename), after a dated backup of it.

    The file keeps its mode; a new one gets `new_mode`. Returns the backup, if any.
    """
    saved = backup(path) if path.exists() else None
    replace_file(path, text, os_mode(path) if path.exists() else new_mode)
    return saved


def replace_file(path: Path, text: str, mode: int = NEW_FILE_MODE) -> None:
    """Replace `path` by `text` atomically, without a backup: for a file that is the latest
    of its kind by design (a JUnit report a CI job reads)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = write_temp(path.parent, path.name, text, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write_new(path: Path, text: str, mode: int = NEW_FILE_MODE) -> None:
    """Write `text` to `path`, which must not exist: never replaces a file (FileExistsError);
    the file appears whole or not at all."""
    tmp = write_temp(path.parent, path.name, text, mode)
    try:
        os.link(tmp, path)  # fails if the name exists
    finally:
        Path(tmp).unlink(missing_ok=True)
    fsync_dir(path.parent)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock for a read-modify-write of `path` (lock file `.<name>.lock`).

    The lock file is removed on the way out; one that another process removed before we locked
    it is opened anew, so that two processes never hold locks on different files.
    """
    lock = path.with_name(f".{path.name}.lock")
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(lock))
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            break
        os.close(fd)
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(lock)
        os.close(fd)


class Busy(Exception):
    """A lock another process holds; str() says which process, since when."""


def _user_name() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid {os.getuid()}"


def _open_shared_lock(lock: Path) -> tuple[int, bool]:
    """(fd, writable) of a lock file every user of the machine can take: created mode 0666
    whatever the umask (a machine lock in /run/lock is one for all users: the cores are
    shared); an existing one opened without O_CREAT (in a sticky directory Linux's
    fs.protected_regular refuses O_CREAT on another user's file), read-only where this user may
    not write it (a lock of an older version, 0644: flock needs no write access)."""
    while True:
        try:
            return os.open(lock, os.O_RDWR), True
        except FileNotFoundError:
            pass
        except PermissionError:
            return os.open(lock, os.O_RDONLY), False
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue  # another process created it first: open theirs
        os.fchmod(fd, 0o666)
        return fd, True


@contextlib.contextmanager
def exclusive_or_busy(lock: Path) -> Iterator[None]:
    """Hold `lock` (a file kept in place, holding the holder's PID, user and start) for the
    block, or raise Busy at once, naming the holder, when another process holds it, of any
    user."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd, writable = _open_shared_lock(lock)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in (errno.EWOULDBLOCK, errno.EACCES):
                raise
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "a process"
            raise Busy(f"{holder}; lock {lock}") from None
        if writable:
            os.ftruncate(fd, 0)
            started = shown_utc(seconds=True)
            os.pwrite(fd, f"PID {os.getpid()} since {started}, user {_user_name()}\n".encode(),
                      0)
        yield
    finally:
        os.close(fd)


def _list(value: Any) -> list:
    """`value` where it is a list, else none (a malformed report is refused elsewhere)."""
    return value if isinstance(value, list) else []


def report_identity(report: dict[str, Any]) -> str:
    """What makes a run report one session's: the jobs it ran (each case's job id, nodes and
    completion time), so that a copy, a re-save and an edited copy of one session, under its
    uuid or a new one, are that one session to every command (baseline, history, the
    machine's count, as compare already refused one uuid given twice); a report that ran no job,
    its session uuid; one without either, a digest of its runs."""
    jobs = sorted({(str(case.get("jobid")), str(case.get("job_nodelist")),
                    str(case.get("job_completion_time_unix")))
                   for run in _list(report.get("runs")) if isinstance(run, dict)
                   for case in _list(run.get("testcases"))
                   if isinstance(case, dict) and case.get("jobid") not in (None, "")})
    if jobs:
        return f"jobs:{hashlib.sha256(json.dumps(jobs).encode()).hexdigest()[:16]}"
    info = report.get("session_info") if isinstance(report.get("session_info"), dict) else {}
    uuid = info.get("uuid")
    if isinstance(uuid, str) and uuid.strip():
        return uuid
    runs = json.dumps(report.get("runs"), sort_keys=True, default=str).encode()
    return f"runs:{hashlib.sha256(runs).hexdigest()[:16]}"


# --- the sessions a command reads --------------------------------------------------------------

def parse_since(text: str) -> float:
    """A start time: ISO 8601 (2026-11-23, 2026-11-23T20:00, UTC unless an offset is given),
    or ReFrame's query syntax (20261123, 20261123T2000, now-7d, now-12h)."""
    with contextlib.suppress(ValueError):
        when = datetime.fromisoformat(text)
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    from reframe.frontend.reporting.utility import parse_time_period
    try:
        start, _ = parse_time_period(f"{text}:now")
    except ValueError:
        raise StoreError(f"--since {text!r} is no date; give e.g. 2026-11-23, "
                           f"2026-11-23T20:00, 20261123T2000 or now-7d") from None
    return float(start)


@contextlib.contextmanager
def _reframe_storage(db_file: Path) -> Iterator[Any]:
    """ReFrame's sqlite storage backend on `db_file`, with a runtime from ReFrame's builtin
    configuration if none is running (the database path is set as a sticky option, removed on
    the way out)."""
    from reframe.core import config, runtime
    from reframe.core.exceptions import ReframeFatalError
    from reframe.frontend.reporting.storage import StorageBackend

    try:
        ctx = runtime.runtime()
    except ReframeFatalError:
        site = config.load_config()
        site.select_subconfig("generic")
        runtime.init_runtime(site)
        ctx = runtime.runtime()
    site = ctx.site_config
    option = "storage/sqlite_db_file"
    old = site.get(option) if site.is_sticky_option(option) else None
    site.add_sticky_option(option, str(db_file))
    try:
        yield StorageBackend.create("sqlite")
    finally:
        if old is None:
            site.remove_sticky_option(option)
        else:
            site.add_sticky_option(option, old)


def storage_problem(db_file: Path, uuid: str) -> str | None:
    """None when session `uuid` is in ReFrame's results database `db_file`, else why not (a
    database ReFrame could not write: corrupt, truncated, read-only, a full disk). ReFrame
    only warns ("failed to store results in the database") and exits 0, so the session would
    be missing from history, compare and the page without a word."""
    if not db_file.is_file():
        return f"no results database {db_file}"
    try:
        with contextlib.closing(sqlite3.connect(f"file:{db_file}?mode=ro", uri=True)) as db:
            found = db.execute("SELECT 1 FROM sessions WHERE uuid = ?", (uuid,)).fetchone()
    except sqlite3.Error as err:
        return f"{db_file} cannot be read ({err})"
    return None if found else f"session {uuid[:8]} is not in {db_file}"


def stored_sessions(db_file: Path, since: float | None = None) -> list[dict[str, Any]]:
    """Every session stored in ReFrame's results database `db_file` (from `since` on)."""
    from reframe.core.exceptions import ReframeError
    from reframe.frontend.reporting.utility import QuerySelectorTestcase

    if not db_file.is_file():
        raise StoreError(f"no results database {db_file}: no stored runs; run the suite "
                           f"first (ci/run-local.sh), or set FABRICSUITE_RESULTS or --results")
    end = datetime.now(UTC).timestamp() + 10 * 365 * 86400
    selector = QuerySelectorTestcase(time_period=(since if since is not None else 0.0, end))
    try:
        with _reframe_storage(db_file) as backend:
            return backend.fetch_sessions(selector)
    except (ReframeError, OSError, sqlite3.OperationalError) as err:
        raise StoreError(f"{db_file}: cannot read ReFrame's results database ({err}); check "
                           f"the file and that it is writable (ReFrame adds its indexes)") from None
    except (sqlite3.DatabaseError, ValueError, KeyError) as err:
        raise StoreError(f"{db_file}: not a ReFrame results database ({err})") from None


def read_sessions(args: Any, since: float | None) -> tuple[list[dict[str, Any]], str]:
    """The sessions a command reads: its --reports files, else those stored in
    RESULTS/results.db from `since` on; and where they came from, for messages."""
    if args.reports:
        return (report_sessions([Path(p) for p in args.reports]),
                f"{len(args.reports)} run report(s)")
    db = results_dir(args) / "results.db"
    return stored_sessions(db, since), str(db)


def report_files(paths: list[Path], read_once: bool = True) -> list[tuple[Path, dict[str, Any]]]:
    """(path, session) of JSON run report files (the same content as the stored sessions), each
    session once: a copy of a report already read (the same session, `report_identity`; an
    edited copy too) is left out, saying so on stderr, since counted twice it would
    weigh its figures double. `read_once=False` keeps copies for a caller that refuses them
    (compare: a set given the same session twice is bad input)."""
    found, seen = [], {}
    for path in paths:
        report = load_report(path, StoreError)
        identity = report_identity(report)
        if read_once and identity in seen:
            print(f"fabricsuite: {path} is a copy of {seen[identity]} (the same session): "
                  f"read once", file=sys.stderr)
            continue
        seen[identity] = path
        found.append((path, report))
    return found


def report_sessions(paths: list[Path]) -> list[dict[str, Any]]:
    """The sessions of `report_files`."""
    return [report for _, report in report_files(paths)]
