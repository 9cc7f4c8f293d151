"""Usage events: which skill was used, from which project, when. The seed's reuse signal.

Stored in SQLite (WAL, synchronous=FULL) next to the index, so several servers and CLI runs can
record at once and nothing recorded is lost. Unlike the index this is source data: a damaged file
is moved aside (never silently deleted) and a new one started.
"""

from __future__ import annotations

import datetime as dt
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from skillshelf.library.fts import immediate_transaction

logger = logging.getLogger(__name__)

USAGE_FILE = "usage.sqlite3"
VERIFIED_PROJECTS = 3  # the seed's rule: used from three distinct projects
SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY,
    pattern_id TEXT NOT NULL,
    project TEXT,
    note TEXT,
    source TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_pattern ON events(pattern_id, at);
"""


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
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._verified: tuple[int, frozenset[str]] | None = None  # (data_version, ids)
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            aside = self.path.with_name(f"{self.path.name}.damaged-{int(time.time())}")
            logger.error("usage database is damaged (%s); moved to %s and started afresh", exc, aside.name)
            self.path.replace(aside)
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=15.0, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("SELECT count(*) FROM events").fetchone()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, immediate_transaction(self._conn) as conn:
            yield conn

    def record(self, pattern_id: str, project: str | None, note: str | None, source: str) -> str:
        at = utc_now()
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO events(pattern_id, project, note, source, at) VALUES (?, ?, ?, ?, ?)",
                (pattern_id, project, note, source, at),
            )
        self._verified = None  # data_version does not change for this connection's own writes
        return at

    def usage(self, pattern_id: str | None = None) -> list[PatternUsage]:
        where, params = ("WHERE pattern_id = ?", [pattern_id]) if pattern_id else ("", [])
        with self._lock:
            totals = self._conn.execute(
                f"SELECT pattern_id, count(*), min(at), max(at) FROM events {where} GROUP BY pattern_id", params
            ).fetchall()
            pairs = self._conn.execute(
                f"""SELECT DISTINCT pattern_id, project FROM events {where}
                    {"AND" if where else "WHERE"} project IS NOT NULL ORDER BY project""",
                params,
            ).fetchall()
        projects: dict[str, list[str]] = {}
        for pattern, project in pairs:
            projects.setdefault(pattern, []).append(project)
        return [PatternUsage(row[0], row[1], projects.get(row[0], []), row[2], row[3]) for row in totals]

    def daily_uses(self) -> list[tuple[str, str, int]]:
        """(UTC day 'YYYY-MM-DD', skill id, uses that day) for every recorded use, oldest day first."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT substr(at, 1, 10), pattern_id, count(*) FROM events GROUP BY 1, 2 ORDER BY 1, 2"
            ).fetchall()
        return [(str(day), str(pattern), int(count)) for day, pattern, count in rows]

    def verified_by_use(self) -> frozenset[str]:
        """Skills used from at least three distinct projects, cached until anyone records an event.

        `PRAGMA data_version` changes when another connection (another server, the CLI) commits,
        so the cache is right across processes at the cost of one cheap pragma per call.
        """
        with self._lock:
            version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
            if self._verified is None or self._verified[0] != version:
                rows = self._conn.execute(
                    """SELECT pattern_id FROM events WHERE project IS NOT NULL
                       GROUP BY pattern_id HAVING count(DISTINCT project) >= ?""",
                    (VERIFIED_PROJECTS,),
                ).fetchall()
                self._verified = (version, frozenset(row[0] for row in rows))
            return self._verified[1]
