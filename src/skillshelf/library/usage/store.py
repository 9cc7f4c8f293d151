"""Usage events: which skill was used, from which project, when. The seed's reuse signal.

Stored in SQLite (WAL, synchronous=FULL) next to the index, so several servers and CLI runs can
record at once and nothing recorded is lost. Unlike the index this is source data, so it is only
ever moved aside when SQLite proves it damaged (SQLITE_CORRUPT, SQLITE_NOTADB, a failed
`PRAGMA quick_check`), under a unique name and together with its `-wal` and `-shm` files. A lock
held by another process, a read-only file or a full disk leave the file where it is: the call
fails with `UsageUnavailable` (FILESYSTEM_ERROR) and the next call tries again.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from skillshelf.caller import current_caller
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.index.fts import immediate_transaction, use_wal
from skillshelf.library.index.locking import describe_sqlite_error, file_lock, is_corruption
from skillshelf.library.skill.paths import display_path

logger = logging.getLogger(__name__)

USAGE_FILE = "usage.sqlite3"
VERIFIED_PROJECTS = 3  # the seed's rule: used from three distinct projects
SCHEMA_VERSION = 2  # 2: events.author
BUSY_TIMEOUT_S = 15.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    pattern_id TEXT NOT NULL,
    project TEXT,
    note TEXT,
    source TEXT NOT NULL,
    at TEXT NOT NULL,
    author TEXT
);
CREATE INDEX IF NOT EXISTS events_pattern ON events(pattern_id, at);
"""
T = TypeVar("T")


def _add_author_column(conn: sqlite3.Connection) -> None:
    """Version 1 files gain `events.author` (who recorded the use; NULL for earlier events)."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(events)")}
    if "author" in columns:
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


class UsageUnavailable(SkillshelfError):
    """The usage file cannot be used right now; it is left as it is (or was moved aside, if damaged)."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.FILESYSTEM_ERROR, message)


@dataclass(frozen=True)
class PatternUsage:
    pattern_id: str
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
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        try:
            self._conn = self._open()
        except UsageUnavailable as exc:
            logger.warning("%s", exc.message)  # the next call tries again

    # -- opening, and what to do with a file that will not open --------------------------
    def _open(self) -> sqlite3.Connection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._unavailable(exc.strerror or str(exc)) from exc
        try:
            self._verify()
            return self._connect()
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise self._unavailable(describe_sqlite_error(exc)) from exc
            aside = self._quarantine(str(exc))
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            raise self._unavailable(describe_sqlite_error(exc), aside) from exc

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=self.busy_timeout, isolation_level=None)
        try:
            use_wal(conn, deadline=time.monotonic() + self.busy_timeout)
            conn.execute("PRAGMA synchronous=FULL")
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                conn.executescript(_SCHEMA)
                _add_author_column(conn)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _verify(self) -> None:
        """`PRAGMA quick_check` over a read-only connection: closing it cannot checkpoint or delete
        the -wal of a damaged file, so what is moved aside is exactly what was there."""
        if not self.path.exists():
            return
        conn = sqlite3.connect(f"file:{quote(str(self.path))}?mode=ro", uri=True, timeout=self.busy_timeout)
        try:
            check = conn.execute("PRAGMA quick_check").fetchall()
        finally:
            conn.close()
        if check != [("ok",)]:
            raise _CheckFailed(f"quick_check: {'; '.join(str(row[0]) for row in check[:3])}")

    def _quarantine(self, reason: str) -> Path | None:
        """Move the proven-damaged file and its -wal/-shm aside under one unique name; never delete.

        Under a cross-process lock, and only if the file still fails its check: a second process that
        saw the same damage must not move the first one's fresh file aside.
        """
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            if not self._still_damaged():
                return None
            stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
            aside = self.path.with_name(f"{self.path.name}.damaged-{stamp}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
            try:
                for suffix in ("", "-wal", "-shm"):
                    source = Path(f"{self.path}{suffix}")
                    if source.exists():
                        source.replace(Path(f"{aside}{suffix}"))
            except OSError as exc:
                raise self._unavailable(f"it is damaged ({reason}) and cannot be moved aside: {exc.strerror}") from exc
        logger.error(
            "usage database %s is damaged (%s); moved it aside to %s (with its -wal/-shm) and started a new one",
            display_path(self.path),
            reason,
            aside.name,
        )
        return aside

    def _still_damaged(self) -> bool:
        try:
            self._verify()
        except sqlite3.DatabaseError as exc:
            return _damaged(exc)
        return False

    def _unavailable(self, reason: str, aside: Path | None = None) -> UsageUnavailable:
        moved = f" The damaged file was kept as {aside.name}." if aside else ""
        return UsageUnavailable(
            f"Usage history ({display_path(self.path)}) is unavailable: {reason}.{moved} Nothing was deleted; "
            "fix the cause (free space, permissions, the other process) and it is used again on the next call."
        )

    def close(self) -> None:
        """Final: a closed store never reopens (a late call would leak a connection nobody closes)."""
        with self._lock:
            self._closed = True
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- running statements ----------------------------------------------------------------
    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        """Run `work` on the connection (opened now if an earlier open failed); errors become UsageUnavailable.

        Proven corruption met mid-use is quarantined like corruption at open; the next call starts afresh.
        """
        with self._lock:
            if self._conn is None:
                if self._closed:
                    raise UsageUnavailable(
                        f"Usage history ({display_path(self.path)}) is closed: the server is stopping."
                    )
                self._conn = self._open()
            try:
                return work(self._conn)
            except sqlite3.DatabaseError as exc:
                if not is_corruption(exc):
                    raise self._unavailable(describe_sqlite_error(exc)) from exc
                self._conn.close()
                self._conn = None
                self._verified = None
                aside = self._quarantine(str(exc))
                raise self._unavailable(f"it was damaged ({exc})", aside) from exc

    def record(self, pattern_id: str, project: str | None, note: str | None, source: str) -> str:
        """Record one use; its author is the caller of the current tool call, if authenticated."""
        at = utc_now()
        author = current_caller.get()

        def insert(conn: sqlite3.Connection) -> None:
            with immediate_transaction(conn):
                conn.execute(
                    "INSERT INTO events(pattern_id, project, note, source, at, author) VALUES (?, ?, ?, ?, ?, ?)",
                    (pattern_id, project, note, source, at, author),
                )

        self._run(insert)
        self._verified = None  # data_version does not change for this connection's own writes
        return at

    def usage(self, pattern_id: str | None = None) -> list[PatternUsage]:
        where, params = ("WHERE pattern_id = ?", [pattern_id]) if pattern_id else ("", [])

        def read(conn: sqlite3.Connection) -> tuple[list[sqlite3.Row], list[sqlite3.Row]]:
            totals = conn.execute(
                f"SELECT pattern_id, count(*), min(at), max(at) FROM events {where} GROUP BY pattern_id", params
            ).fetchall()
            pairs = conn.execute(
                f"""SELECT DISTINCT pattern_id, project FROM events {where}
                    {"AND" if where else "WHERE"} project IS NOT NULL ORDER BY project""",
                params,
            ).fetchall()
            return totals, pairs

        totals, pairs = self._run(read)
        projects: dict[str, list[str]] = {}
        for pattern, project in pairs:
            projects.setdefault(pattern, []).append(project)
        return [PatternUsage(row[0], row[1], projects.get(row[0], []), row[2], row[3]) for row in totals]

    def daily_uses(self) -> list[tuple[str, str, int]]:
        """(UTC day 'YYYY-MM-DD', skill id, uses that day) for every recorded use, oldest day first."""
        rows = self._run(
            lambda conn: conn.execute(
                "SELECT substr(at, 1, 10), pattern_id, count(*) FROM events GROUP BY 1, 2 ORDER BY 1, 2"
            ).fetchall()
        )
        return [(str(day), str(pattern), int(count)) for day, pattern, count in rows]

    def verified_by_use(self) -> frozenset[str]:
        """Skills used from at least three distinct projects, cached until anyone records an event.

        `PRAGMA data_version` changes when another connection (another server, the CLI) commits,
        so the cache is right across processes at the cost of one cheap pragma per call.
        """

        def read(conn: sqlite3.Connection) -> frozenset[str]:
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
            if self._verified is None or self._verified[0] != version:
                rows = conn.execute(
                    """SELECT pattern_id FROM events WHERE project IS NOT NULL
                       GROUP BY pattern_id HAVING count(DISTINCT project) >= ?""",
                    (VERIFIED_PROJECTS,),
                ).fetchall()
                self._verified = (version, frozenset(row[0] for row in rows))
            return self._verified[1]

        return self._run(read)
