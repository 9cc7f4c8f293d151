"""Usage events: which skill was used, from which project, when. The seed's reuse signal.

Stored in SQLite (WAL, synchronous=FULL) next to the index, so several servers and CLI runs can
record at once and nothing recorded is lost. Unlike the index this is source data: it is never
deleted, moved or replaced here.

- A file (or folder) that cannot be written (a read-only mount, an unwritable cache) is read
  through a read-only connection: counts stay right, and recording fails with `UsageUnavailable`
  (FILESYSTEM_ERROR) saying why. The next record tries again.
- A file SQLite proves damaged (SQLITE_CORRUPT, SQLITE_NOTADB, a failed `PRAGMA quick_check`) is
  read as far as it can be, each answer warns that it is damaged, and recording is refused with a
  message saying how to start a new history (move it aside; `sqlite3 .recover` salvages it). Once
  the file at the path is another one, it is used again.
- A lock held by another process or a full disk fail the call (`UsageUnavailable`); the next call
  tries again.
"""

from __future__ import annotations

import datetime as dt
import errno
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from skillshelf.caller import current_caller
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.db import (
    UNWRITABLE_CODES,
    describe_sqlite_error,
    file_identity,
    immediate_transaction,
    is_corruption,
    use_wal,
)
from skillshelf.library.skill.paths import display_path

logger = logging.getLogger(__name__)

USAGE_FILE = "usage.sqlite3"
VERIFIED_PROJECTS = 3  # the seed's rule: used from three distinct projects
SCHEMA_VERSION = 3  # 2: events.author; 3: events.skill_id, named pattern_id before (issue 32)
BUSY_TIMEOUT_S = 15.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    skill_id TEXT NOT NULL,
    project TEXT,
    note TEXT,
    source TEXT NOT NULL,
    at TEXT NOT NULL,
    author TEXT
);
DROP INDEX IF EXISTS events_pattern;
CREATE INDEX IF NOT EXISTS events_skill ON events(skill_id, at);
"""
OLD_SKILL_COLUMN = "pattern_id"  # the skill's column before version 3
T = TypeVar("T")


def _rename_skill_column(conn: sqlite3.Connection) -> None:
    """Files before version 3 name the skill `pattern_id` (issue 32: one word per idea): the column is renamed
    in place, every event kept (its index follows the column). Run before the schema, which indexes skill_id."""
    if OLD_SKILL_COLUMN not in _columns(conn):
        return
    try:
        conn.execute(f"ALTER TABLE events RENAME COLUMN {OLD_SKILL_COLUMN} TO skill_id")
    except sqlite3.OperationalError as exc:  # another process renamed it first
        if "no such column" not in str(exc):
            raise


def read_as_current(conn: sqlite3.Connection) -> None:
    """On a read-only connection to a file an older version wrote, `events` reads as the current table: a
    temporary view (the file is not written) gives it `skill_id` and a version 1 file's events a NULL author.
    The embedded store's reader and the PostgreSQL import read through it."""
    columns = _columns(conn)
    if not columns or {"skill_id", "author"} <= columns:
        return
    skill = "skill_id" if "skill_id" in columns else OLD_SKILL_COLUMN
    author = "author" if "author" in columns else "NULL"
    conn.execute(
        f"CREATE TEMP VIEW events AS SELECT id, {skill} AS skill_id, project, note, source, at, {author} AS author "
        "FROM main.events"
    )


def _columns(conn: sqlite3.Connection) -> set[str]:
    return {row[1] for row in conn.execute("PRAGMA main.table_info(events)")}


def _add_author_column(conn: sqlite3.Connection) -> None:
    """Version 1 files gain `events.author` (who recorded the use; NULL for earlier events)."""
    if "author" in _columns(conn):
        return
    try:
        conn.execute("ALTER TABLE events ADD COLUMN author TEXT")
    except sqlite3.OperationalError as exc:  # another process added it first
        if "duplicate column" not in str(exc):
            raise


class _CheckFailed(sqlite3.DatabaseError):
    """`PRAGMA quick_check` found damage that no statement has tripped over yet."""


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    return isinstance(exc, _CheckFailed) or is_corruption(exc)


def _unwritable(exc: sqlite3.DatabaseError) -> bool:
    return (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in UNWRITABLE_CODES


class _ReadOnly(Exception):
    """The usage file, or the folder it would be made in, cannot be written."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class UsageUnavailable(SkillshelfError):
    """The usage history cannot be used for this call right now; it is left as it is. FILESYSTEM_ERROR
    for the file; STATE_UNAVAILABLE (retryable) for a shared database that did not answer."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.FILESYSTEM_ERROR) -> None:
        super().__init__(code, message, details={"retryable": True} if code is ErrorCode.STATE_UNAVAILABLE else None)


@dataclass(frozen=True)
class SkillUsage:
    skill_id: str
    uses: int
    projects: list[str]
    first_used: str | None
    last_used: str | None


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class UsageStore:
    def __init__(self, path: Path, busy_timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = path
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._verified: tuple[int, frozenset[str]] | None = None  # (data_version, ids)
        self._conn: sqlite3.Connection | None = None  # read-write
        self._reader: sqlite3.Connection | None = None  # read-only: the file cannot be written, or is damaged
        self._read_only: str | None = None  # why nothing can be recorded (the file or folder is not writable)
        self._damage: str | None = None  # why the file is damaged ...
        self._damaged_file: tuple[int, int] | None = None  # ... and which file that was
        self._closed = False
        try:
            with self._lock:
                self._connection(write=False)
        except UsageUnavailable as exc:
            logger.warning("%s", exc.message)  # the next call tries again

    @property
    def warning(self) -> str | None:
        """Said with every answer that reads a damaged history: its counts may be incomplete."""
        if self._damage is None:
            return None
        return f"{self._damaged_message()} Usage counts come from what can still be read of it."

    # -- which connection a call uses --------------------------------------------------------
    def _connection(self, *, write: bool) -> sqlite3.Connection | None:
        """The read-write connection, opened now if need be; for a read, a read-only one when the file
        cannot be written or is damaged (None: there is no history to read). Under the lock."""
        if self._closed:
            raise UsageUnavailable(f"Usage history ({display_path(self.path)}) is closed: the server is stopping.")
        if self._conn is not None:
            return self._conn
        if self._damaged_file is None or self._damaged_file != file_identity(self.path):
            try:
                self._conn = self._open()
            except _ReadOnly as exc:
                self._note_read_only(exc.reason)
            except sqlite3.DatabaseError as exc:
                if not _damaged(exc):
                    raise self._unavailable(describe_sqlite_error(exc)) from exc
                self._note_damage(str(exc))
            else:
                self._forget_reader()
                self._read_only = self._damage = self._damaged_file = self._verified = None
                return self._conn
        if write:
            raise UsageUnavailable(self._refusal())
        return self._read_connection()

    def _open(self) -> sqlite3.Connection:
        """A read-write connection; `_ReadOnly` when the file or its folder cannot be written (access()
        answers for root too on a read-only mount or an immutable file)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOTDIR):
                raise self._unavailable(exc.strerror or str(exc)) from exc  # a full disk: try again later
            raise _ReadOnly(f"its folder cannot be made: {exc.strerror or exc}") from exc
        if not os.access(self.path.parent, os.W_OK) or (self.path.exists() and not os.access(self.path, os.W_OK)):
            raise _ReadOnly("it is not writable")
        self._verify()
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            if _unwritable(exc):
                raise _ReadOnly(describe_sqlite_error(exc)) from exc
            raise

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=self.busy_timeout, isolation_level=None)
        try:
            use_wal(conn, deadline=time.monotonic() + self.busy_timeout)
            conn.execute("PRAGMA synchronous=FULL")
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                _rename_skill_column(conn)
                conn.executescript(_SCHEMA)
                _add_author_column(conn)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _verify(self) -> None:
        """`PRAGMA quick_check` over a read-only connection: closing it cannot checkpoint or delete
        the -wal of a damaged file, so the file is left exactly as it was."""
        if not self.path.exists():
            return
        conn = sqlite3.connect(self._uri("mode=ro"), uri=True, timeout=self.busy_timeout)
        try:
            check = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
        if check != [("ok",)]:
            raise _CheckFailed(f"quick_check: {'; '.join(str(row[0]) for row in check[:3])}")

    def _uri(self, mode: str) -> str:
        return f"file:{quote(os.fsencode(self.path))}?{mode}"

    def _read_connection(self) -> sqlite3.Connection | None:
        """A read-only connection to the file as it is. WAL needs a -shm beside the file: where none
        can be made (a read-only folder, a cleanly closed file), the file is opened as immutable,
        which is safe there because nothing can write it either."""
        if self._reader is not None:
            return self._reader
        if not self.path.exists():
            return None
        for mode in ("mode=ro", "immutable=1"):
            conn = sqlite3.connect(self._uri(mode), uri=True, check_same_thread=False, timeout=self.busy_timeout)
            try:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                read_as_current(conn)
            except sqlite3.DatabaseError as exc:
                conn.close()
                if mode == "mode=ro" and _unwritable(exc):
                    continue
                if _damaged(exc):
                    self._note_damage(str(exc))
                    raise UsageUnavailable(f"{self._damaged_message()} Nothing of it can be read.") from exc
                raise self._unavailable(describe_sqlite_error(exc)) from exc
            self._reader = conn
            return conn
        return None

    def _note_read_only(self, reason: str) -> None:
        if self._read_only is None:
            logger.warning(
                "usage history %s is read-only (%s): uses are read from it, none can be recorded",
                display_path(self.path),
                reason,
            )
        self._read_only = reason

    def _note_damage(self, reason: str) -> None:
        """The file at the path is damaged: left as it is, read as far as it can be, never written."""
        identity = file_identity(self.path)
        if self._damaged_file != identity:
            logger.error(
                "usage history %s is damaged (%s): it is left as it is and read as far as it can be; no use is "
                "recorded until it is moved aside (with its -wal and -shm). `sqlite3 %s .recover` salvages it.",
                display_path(self.path),
                reason,
                self.path.name,
            )
        self._damage, self._damaged_file = reason, identity
        self._verified = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _forget_reader(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def _damaged_message(self) -> str:
        return f"Usage history ({display_path(self.path)}) is damaged ({self._damage})."

    def _refusal(self) -> str:
        if self._damage is not None:
            return self._refusal_for(self._damage)
        return (
            f"Usage history ({display_path(self.path)}) is read-only ({self._read_only}): this use was not "
            "recorded. Make the file and its folder writable to record uses; counts are read from it meanwhile."
        )

    def _refusal_for(self, reason: str) -> str:
        name = self.path.name
        return (
            f"Usage history ({display_path(self.path)}) is damaged ({reason}): this use was not recorded and the "
            f"file is left as it is. To start a new history, stop the servers using it and move {name} (with its "
            f"-wal and -shm) aside; `sqlite3 {name} .recover` salvages what it holds."
        )

    def _unavailable(self, reason: str) -> UsageUnavailable:
        return UsageUnavailable(
            f"Usage history ({display_path(self.path)}) is unavailable: {reason}. Nothing was changed; "
            "fix the cause (free space, permissions, the other process) and it is used again on the next call."
        )

    def close(self) -> None:
        """Final: a closed store never reopens (a late call would leak a connection nobody closes)."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            self._forget_reader()

    # -- running statements ----------------------------------------------------------------
    def _run(self, work: Callable[[sqlite3.Connection], T], empty: T, *, write: bool = False) -> T:
        """Run `work` on the connection for this call (`empty` when there is no history to read); errors
        become UsageUnavailable. Damage met mid-use is noted: a read runs once more on a read-only
        connection, a write is refused."""
        with self._lock:
            for _attempt in range(2):
                conn = self._connection(write=write)
                if conn is None:
                    return empty
                try:
                    return work(conn)
                except sqlite3.DatabaseError as exc:
                    if not is_corruption(exc):
                        raise self._unavailable(describe_sqlite_error(exc)) from exc
                    if conn is self._reader:
                        raise UsageUnavailable(f"{self._damaged_message()} This part of it cannot be read.") from exc
                    self._note_damage(str(exc))
            raise UsageUnavailable(self._refusal())

    def record(self, skill_id: str, project: str | None, note: str | None, source: str) -> str:
        """Record one use; its author is the caller of the current tool call, if authenticated."""
        at = utc_now()
        author = current_caller.get()

        def insert(conn: sqlite3.Connection) -> None:
            with immediate_transaction(conn):
                conn.execute(
                    "INSERT INTO events(skill_id, project, note, source, at, author) VALUES (?, ?, ?, ?, ?, ?)",
                    (skill_id, project, note, source, at, author),
                )

        self._run(insert, None, write=True)
        self._verified = None  # data_version does not change for this connection's own writes
        return at

    def usage(self, skill_id: str | None = None) -> list[SkillUsage]:
        where, params = ("WHERE skill_id = ?", [skill_id]) if skill_id else ("", [])

        def read(conn: sqlite3.Connection) -> tuple[list[sqlite3.Row], list[sqlite3.Row]]:
            totals = conn.execute(
                f"SELECT skill_id, count(*), min(at), max(at) FROM events {where} GROUP BY skill_id", params
            ).fetchall()
            pairs = conn.execute(
                f"""SELECT DISTINCT skill_id, project FROM events {where}
                    {"AND" if where else "WHERE"} project IS NOT NULL ORDER BY project""",
                params,
            ).fetchall()
            return totals, pairs

        nothing: tuple[list[sqlite3.Row], list[sqlite3.Row]] = ([], [])
        totals, pairs = self._run(read, nothing)
        projects: dict[str, list[str]] = {}
        for used, project in pairs:
            projects.setdefault(used, []).append(project)
        return [SkillUsage(row[0], row[1], projects.get(row[0], []), row[2], row[3]) for row in totals]

    def daily_uses(self) -> list[tuple[str, str, int]]:
        """(UTC day 'YYYY-MM-DD', skill id, uses that day) for every recorded use, oldest day first."""

        def read(conn: sqlite3.Connection) -> list[tuple[str, str, int]]:
            sql = "SELECT substr(at, 1, 10), skill_id, count(*) FROM events GROUP BY 1, 2 ORDER BY 1, 2"
            return conn.execute(sql).fetchall()

        none: list[tuple[str, str, int]] = []
        rows = self._run(read, none)
        return [(str(day), str(skill_id), int(count)) for day, skill_id, count in rows]

    def verified_by_use(self) -> frozenset[str]:
        """Skills used from at least three distinct projects, cached until anyone records an event.

        `PRAGMA data_version` changes when another connection (another server, the CLI) commits,
        so the cache is right across processes at the cost of one cheap pragma per call.
        """

        def read(conn: sqlite3.Connection) -> frozenset[str]:
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
            if self._verified is None or self._verified[0] != version:
                rows = conn.execute(
                    """SELECT skill_id FROM events WHERE project IS NOT NULL
                       GROUP BY skill_id HAVING count(DISTINCT project) >= ?""",
                    (VERIFIED_PROJECTS,),
                ).fetchall()
                self._verified = (version, frozenset(row[0] for row in rows))
            return self._verified[1]

        return self._run(read, frozenset())
