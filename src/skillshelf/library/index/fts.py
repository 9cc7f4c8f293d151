"""What every derived full-text index shares: a SQLite file in WAL mode with a schema version,
rebuilt when missing, stale or corrupt, serialised writes, and BM25 query terms worth scoring.

The skill index and the session index subclass `FtsIndex` and add their own tables and queries.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import ClassVar

from skillshelf.library.index.locking import is_corruption

logger = logging.getLogger(__name__)


@contextmanager
def immediate_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE (take the write lock up front, so concurrent writers queue instead of
    failing mid-transaction), COMMIT on success, ROLLBACK on anything else."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


BUSY_TIMEOUT_S = 10.0


def use_wal(conn: sqlite3.Connection, deadline: float) -> None:
    """Switch a new file to WAL. Several processes opening one new index at once: SQLite answers
    "database is locked" to a journal-mode change at once, without waiting in the busy handler, so wait here."""
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


class FtsIndex:
    SCHEMA: ClassVar[str]  # CREATE statements, run on a new or stale file
    SCHEMA_VERSION: ClassVar[int]
    TABLES: ClassVar[tuple[str, ...]]  # dropped on a schema change
    COUNT_TABLE: ClassVar[str]  # the documents: the base of "found in over half"
    FTS_TABLE: ClassVar[str]
    LABEL: ClassVar[str]  # for the log: "search index", "session index"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.RLock()
        self.created = False  # this process created the tables (a new, rebuilt or upgraded file)
        self._conn = self._open()
        self._document_frequency: dict[str, int] = {}
        self._document_count: int | None = None
        self._data_version: int | None = None

    # -- lifecycle -----------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        """Connect; only a file SQLite proves damaged is deleted and rebuilt (derived data). A lock held
        by another process, a read-only file or a full disk is raised as it is: deleting the index
        under another server that is using it would break that server."""
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise
            logger.warning("%s %s is unusable (%s); rebuilding it", self.LABEL, self.path.name, exc)
            self._delete_files()
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, check_same_thread=False, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.row_factory = sqlite3.Row
        try:
            use_wal(conn, deadline=time.monotonic() + BUSY_TIMEOUT_S)
            conn.execute("PRAGMA synchronous=NORMAL")
            if conn.execute("PRAGMA user_version").fetchone()[0] != self.SCHEMA_VERSION:
                self._reset(conn)
            conn.execute(f"SELECT count(*) FROM {self.COUNT_TABLE}").fetchone()
            conn.execute(f"SELECT rowid FROM {self.FTS_TABLE} LIMIT 1").fetchall()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _reset(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        if conn.execute("PRAGMA user_version").fetchone()[0] == self.SCHEMA_VERSION:
            conn.execute("ROLLBACK")  # another process created it while this one waited for the lock
            return
        # All in the one transaction, version included: `executescript` would commit first, and another
        # process taking the lock then would still see the old version and drop the tables being made.
        try:
            for table in self.TABLES:
                conn.execute(f"DROP TABLE IF EXISTS {table}")
            for statement in self.SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(f"PRAGMA user_version = {self.SCHEMA_VERSION}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self.created = True

    def _delete_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, immediate_transaction(self._conn) as conn:
            self._forget_derived()  # any write may change how common a term is
            yield conn

    def _read_apart(self, sql: str) -> list[tuple[object, ...]]:
        """The rows of a long read (every signature: a quarter of a second at 100,000 skills) on a
        connection of its own, so the shared one stays free for searches meanwhile (WAL lets readers
        run side by side). Syncs call it, one at a time, so what it reads is what they write to; so does
        the spelling vocabulary's refresh, which checks for writes since it began."""
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
        try:
            conn.execute("PRAGMA query_only = ON")
            return conn.execute(sql).fetchall()
        finally:
            conn.close()

    def _forget_derived(self) -> None:
        """Drop what is cached from the documents (term frequencies, their count)."""
        self._document_frequency.clear()
        self._document_count = None

    def _current_caches(self) -> None:
        """Drop the caches if another connection (another worker process) committed since they were
        filled: this connection's own writes clear them in `_transaction`. Called under the lock."""
        version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        if version != self._data_version:
            self._data_version = version
            self._forget_derived()

    def _count_documents(self) -> int:
        """The number of documents, cached until the next write (count(*) reads the whole table:
        about 2 ms at 100,000 skills)."""
        if self._document_count is None:
            self._document_count = int(self._conn.execute(f"SELECT count(*) FROM {self.COUNT_TABLE}").fetchone()[0])
        return self._document_count

    # -- query terms ---------------------------------------------------------------------
    def _informative(self, terms: list[str]) -> list[str]:
        """Drop terms found in over half the documents: BM25 gives them an IDF of ~0 (FTS5 clamps it),
        so they cannot change the order, yet they make nearly every document a match to be scored.
        Terms matching nothing go too; if no term is left, every term that matches something stays,
        so a query returns nothing only when no word of it matches anything."""
        if len(terms) < 2:
            return terms
        total = self._count_documents()
        frequency = {t: self._frequency(t) for t in terms}
        matching = [t for t in terms if frequency[t] > 0] or terms  # a word matching nothing cannot help
        kept = [t for t in matching if frequency[t] <= total / 2]
        # never empty while a relaxed query would match: fall back to every word that matches something
        return kept or matching

    def _frequency(self, term: str) -> int:
        if term not in self._document_frequency:
            sql = f"SELECT count(*) FROM {self.FTS_TABLE} WHERE {self.FTS_TABLE} MATCH ?"
            self._document_frequency[term] = int(self._conn.execute(sql, (f'"{term}"',)).fetchone()[0])
        return self._document_frequency[term]
