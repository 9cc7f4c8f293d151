"""Usage events in the shared PostgreSQL database (`database_url`): the same `UsageEvents` as the
embedded store, so every replica records to and counts from one history.

Failures are `UsageUnavailable` with STATE_UNAVAILABLE: recording fails the call (retryable; the use
was not recorded), and a read leaves usage out of an answer with a warning, as for the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import quote

from skillshelf.caller import current_caller
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.db import describe_sqlite_error
from skillshelf.library.skill.paths import display_path
from skillshelf.library.usage.store import VERIFIED_PROJECTS, SkillUsage, UsageUnavailable, read_as_current, utc_now
from skillshelf.state.postgres.database import StateUnavailable, database
from skillshelf.state.postgres.url import redacted

if TYPE_CHECKING:
    import psycopg

    Connection = psycopg.Connection[Any]

T = TypeVar("T")


class PostgresUsage:
    """Usage events in table `usage_events` of the database at `url`."""

    warning: str | None = None  # a database is whole or unavailable; never read in part

    def __init__(self, url: str) -> None:
        self.url = url
        self._closed = False
        self._lock = threading.Lock()
        self._verified: tuple[int, frozenset[str]] | None = None  # (newest event id, ids)

    def _run(self, doing: str, work: Callable[[Connection], T]) -> T:
        if self._closed:
            raise UsageUnavailable(f"Usage history ({redacted(self.url)}) is closed: the server is stopping.")
        try:
            with self._connection(doing) as conn:
                return work(conn)
        except StateUnavailable as exc:
            raise UsageUnavailable(exc.message, ErrorCode.STATE_UNAVAILABLE) from exc

    @contextmanager
    def _connection(self, doing: str) -> Iterator[Connection]:
        with database(self.url).connection(doing) as conn:
            yield conn

    def record(self, skill_id: str, project: str | None, note: str | None, source: str) -> str:
        at = utc_now()
        author = current_caller.get()

        def insert(conn: Connection) -> None:
            conn.execute(
                """INSERT INTO usage_events (skill_id, project, note, source, at, author)
                   VALUES (%s, %s, %s, %s, %s, %s)""",
                (skill_id, project, note, source, at, author),
            )

        self._run(f"recording this use of {skill_id}", insert)
        return at

    def usage(self, skill_id: str | None = None) -> list[SkillUsage]:
        where, params = ("WHERE skill_id = %s", [skill_id]) if skill_id else ("", [])

        def read(conn: Connection) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
            totals = conn.execute(
                f"SELECT skill_id, count(*), min(at), max(at) FROM usage_events {where} GROUP BY skill_id",
                params,
            ).fetchall()
            pairs = conn.execute(
                f"""SELECT DISTINCT skill_id, project COLLATE "C" FROM usage_events {where}
                    {"AND" if where else "WHERE"} project IS NOT NULL ORDER BY 2""",
                params,
            ).fetchall()
            return totals, pairs

        totals, pairs = self._run("reading usage", read)
        projects: dict[str, list[str]] = {}
        for used, project in pairs:
            projects.setdefault(used, []).append(project)
        return [SkillUsage(row[0], int(row[1]), projects.get(row[0], []), row[2], row[3]) for row in totals]

    def daily_uses(self) -> list[tuple[str, str, int]]:
        def read(conn: Connection) -> list[tuple[Any, ...]]:
            sql = """SELECT substr(at, 1, 10) COLLATE "C", skill_id COLLATE "C", count(*) FROM usage_events
                     GROUP BY 1, 2 ORDER BY 1, 2"""
            return conn.execute(sql).fetchall()

        rows = self._run("reading usage", read)
        return [(str(day), str(skill_id), int(count)) for day, skill_id, count in rows]

    def verified_by_use(self) -> frozenset[str]:
        """Cached until anyone (any replica) records an event: the newest event's id says so."""

        def read(conn: Connection) -> frozenset[str]:
            row = conn.execute("SELECT coalesce(max(id), 0) FROM usage_events").fetchone()
            newest = int(row[0]) if row else 0
            with self._lock:
                if self._verified is not None and self._verified[0] == newest:
                    return self._verified[1]
            rows = conn.execute(
                """SELECT skill_id FROM usage_events WHERE project IS NOT NULL AND id <= %s
                   GROUP BY skill_id HAVING count(DISTINCT project) >= %s""",
                (newest, VERIFIED_PROJECTS),
            ).fetchall()
            verified = frozenset(str(r[0]) for r in rows)
            with self._lock:
                self._verified = (newest, verified)
            return verified

        return self._run("reading usage", read)

    def close(self) -> None:
        """Final for this store; the pool is the process's, closed at exit."""
        self._closed = True


@dataclass(frozen=True)
class Imported:
    read: int  # rows read from the embedded history
    added: int  # rows new to the database (the others were imported before)


def import_events(url: str, embedded: Path) -> Imported:
    """Copy every event of the embedded SQLite history at `embedded` into the database. Idempotent:
    each event carries a key made of its row id and fields, so a second run (or a run interrupted
    and started again) adds only what is missing, and one transaction adds all or nothing."""
    rows = _embedded_events(embedded)
    keyed = [(*row[1:], _import_key(row)) for row in rows]
    with database(url).connection(f"importing {len(rows)} usage events") as conn, conn.transaction():
        before = _imported_count(conn)
        conn.cursor().executemany(
            """INSERT INTO usage_events (skill_id, project, note, source, at, author, import_key)
               VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (import_key) DO NOTHING""",
            keyed,
        )
        added = _imported_count(conn) - before
    return Imported(read=len(rows), added=added)


def _embedded_events(path: Path) -> list[tuple[Any, ...]]:
    """(id, skill_id, project, note, source, at, author) of every event, read-only (the file is left exactly
    as it is), whichever version of the embedded store wrote it."""
    if not path.is_file():
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR, f"No usage history at {display_path(path)}: nothing to import."
        )
    conn = sqlite3.connect(f"file:{quote(os.fsencode(path))}?mode=ro", uri=True)
    try:
        read_as_current(conn)  # a file an older version wrote: its skill_id as skill_id, no author as NULL
        return conn.execute("SELECT id, skill_id, project, note, source, at, author FROM events ORDER BY id").fetchall()
    except sqlite3.DatabaseError as exc:
        raise SkillshelfError(
            ErrorCode.FILESYSTEM_ERROR,
            f"Usage history {display_path(path)} cannot be read: {describe_sqlite_error(exc)}.",
        ) from exc
    finally:
        conn.close()


def _import_key(row: tuple[Any, ...]) -> str:
    return "sqlite:" + hashlib.sha256(json.dumps(list(row), ensure_ascii=False).encode()).hexdigest()


def _imported_count(conn: Connection) -> int:
    row = conn.execute("SELECT count(*) FROM usage_events WHERE import_key IS NOT NULL").fetchone()
    return int(row[0]) if row else 0
