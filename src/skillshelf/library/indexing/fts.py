"""What every derived full-text index shares: a SQLite file in WAL mode with a schema version,
rebuilt when missing, stale or damaged, serialised writes, and BM25 query terms worth scoring.

The skill index and the session index subclass `FtsIndex` and add their own tables and queries.

Damage (SQLITE_CORRUPT, SQLITE_NOTADB, a failed `PRAGMA quick_check`) is found where it surfaces:
at open, by a quick check at the first sync, or by any query. It is only noted there; the next
sync, holding the lock beside the file that every process's syncs take, moves the damaged file
aside (`<name>.corrupt-<time>`, the latest kept for a post-mortem) and starts a new one, which the
sync fills from the files. Another process that notes the same damage finds the file replaced
(another inode) and only reopens it. Opening the file waits while another process moves it aside
(`replace_lock_path`). A read that met the damage asks its owner to sync now
(`on_damage`) and runs once more on the rebuilt index.

Whether a file is whole is written in the file itself (`index_state`): a finished sync records it, a
sync's first write clears it, and a new, reset or rebuilt file starts without it. So a process that
opens a file another process has just started (a damaged one moved aside a moment ago) sees that it is
not whole, and waits for that process's build instead of answering from an empty index. Within a
process, reads wait while its own sync fills a file it has just put in place (`_await_rebuild`).

A folder where the index cannot be written (a read-only cache, a HOME that is not writable) is
not fatal: the index goes to a private temporary folder for this run, or into memory.
"""

from __future__ import annotations

import datetime as dt
import functools
import glob
import logging
import os
import shutil
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Concatenate, ParamSpec, TypeVar

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.db import (
    UNWRITABLE_CODES,
    describe_sqlite_error,
    disk_full,
    file_identity,
    immediate_transaction,
    is_corruption,
    is_disk_full,
    use_wal,
)
from skillshelf.library.locks import file_lock
from skillshelf.library.skill.paths import display_path

logger = logging.getLogger(__name__)
P = ParamSpec("P")
T = TypeVar("T")
Index = TypeVar("Index", bound="FtsIndex")

CORRUPT_SUFFIX = ".corrupt-"
# One row, ("complete", when), while the file holds every document of a finished sync. Made by the first
# sync that records it (files from before it was kept have none: their next start waits for a sync).
STATE_TABLE = "index_state"


BUSY_TIMEOUT_S = 10.0


class IndexDamaged(SkillshelfError):
    """SQLite proved the index file damaged while it was used; the next sync replaces and rebuilds it."""

    def __init__(self, label: str, reason: str) -> None:
        super().__init__(
            ErrorCode.FILESYSTEM_ERROR,
            f"The {label} is damaged ({reason}); it is being rebuilt from the files. Try again in a moment.",
        )
        self.reason = reason


@dataclass(frozen=True)
class Renewal:
    """A damaged index file this process moved aside and started again."""

    reason: str
    kept_as: str | None  # the name the damaged file was kept under; None when it could only be deleted
    at: str  # UTC, ISO 8601

    def notice(self, label: str) -> str:
        kept = f"; the damaged copy is kept as {self.kept_as}" if self.kept_as else ""
        return f"The {label} was damaged ({self.reason}) and was rebuilt from the files{kept}."


def recovering(method: Callable[Concatenate[Index, P], T]) -> Callable[Concatenate[Index, P], T]:
    """A read that meets a damaged index has it rebuilt (see `FtsIndex._recover`) and runs once more.

    Only for public reads that callers make without holding the index's lock: the rebuild waits
    for a sync, and a sync needs that lock.
    """

    @functools.wraps(method)
    def read(self: Index, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(self, *args, **kwargs)
        except IndexDamaged:
            self._recover()
            return method(self, *args, **kwargs)

    return read


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
        self._exclusive_lock = threading.RLock()  # this process's threads, while one holds the file lock
        self._exclusive_depth = 0
        self._rebuilding_by: int | None = None  # the thread filling a file it has just put in place
        self._rebuilt = threading.Condition(self._lock)  # notified when that thread's turn ends
        self.created = False  # this process created the tables (a new, rebuilt or upgraded file)
        self.damage: str | None = None  # why the open file must be replaced; the next sync does it
        self.renewal: Renewal | None = None  # the last damaged file this process replaced
        self.fallback: str | None = None  # why the index is not at `path` (a temporary folder, or memory)
        self.on_damage: Callable[[], None] | None = None  # the owner's "sync now" (see `_recover`)
        self._generation = 0  # connections opened so far: damage noted on an older one is already handled
        self._checked = False  # the quick check has run on this file
        self._memory: str | None = None  # a shared-cache memory database's URI, the last fallback
        self._temporary: Path | None = None  # the private folder of the temporary fallback
        self._identity: tuple[int, int] | None = None
        self._document_frequency: dict[str, int] = {}
        self._document_count: int | None = None
        self._data_version: int | None = None
        self._closed = False  # no connection of its own may be opened any more (see `_read_apart`)
        self._conn = self._open()

    # -- lifecycle -----------------------------------------------------------------------
    @property
    def lock_path(self) -> Path:
        """The lock every process's syncs of this file take (see `exclusive`)."""
        return self.path.with_name(self.path.name + ".lock")

    @property
    def replace_lock_path(self) -> Path:
        """Held exclusively while a damaged file and its -wal and -shm are moved aside and a new file is made,
        and shared while a connection is opened by name: SQLite opening files another process is renaming
        one by one fails with an I/O error, or pairs the new file with the old one's -shm."""
        return self.path.with_name(self.path.name + ".replace-lock")

    @contextmanager
    def _no_replacement(self) -> Iterator[None]:
        """A shared hold on `replace_lock_path`: waits (and says so) while another process replaces the file."""
        with file_lock(self.replace_lock_path, shared=True, blocking=False) as free:
            if free:
                yield
                return
        logger.info("%s %s is being replaced by another process; waiting for it", self.LABEL, display_path(self.path))
        with file_lock(self.replace_lock_path, shared=True):
            yield

    def _open(self) -> sqlite3.Connection:
        """Connect. A damaged file is noted and stood in for by an empty index until the first sync
        replaces it (moving it needs the lock, which another process's long build may hold). A folder
        that cannot be written falls back to a temporary one. A lock held by another process is raised as it
        is, and a full disk as FILESYSTEM_ERROR naming the file: nothing here may touch a file another server is
        using."""
        try:
            self._identity = file_identity(self.path)
            self._require_writable()
            with self._no_replacement():
                conn = self._connect()
        except sqlite3.DatabaseError as exc:
            if is_corruption(exc):
                self.damage = str(exc)
                return self._placeholder()
            if is_disk_full(exc):
                raise disk_full(self.path, f"the {self.LABEL}") from exc
            if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF not in UNWRITABLE_CODES:
                raise
            return self._open_elsewhere(describe_sqlite_error(exc))
        except OSError as exc:
            return self._open_elsewhere(exc.strerror or str(exc))
        self._identity = file_identity(self.path)
        return conn

    def _require_writable(self) -> None:
        """OSError when the index or its folder cannot be written (access() also answers for root on a
        read-only mount or an immutable file, where the permission bits alone would not)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for target in (self.path.parent, self.path):
            if target.exists() and not os.access(target, os.W_OK):
                raise PermissionError(13, "not writable", str(target))

    def _connect(self) -> sqlite3.Connection:
        if self._memory is not None:
            conn = sqlite3.connect(self._memory, uri=True, check_same_thread=False, isolation_level=None)
        else:
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

    def _placeholder(self) -> sqlite3.Connection:
        """An empty index in memory, answering until a sync can replace the damaged file."""
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        conn.row_factory = sqlite3.Row
        self._reset(conn)
        return conn

    def _open_elsewhere(self, reason: str) -> sqlite3.Connection:
        """The index's folder cannot be written: a private temporary folder for this run, else memory."""
        wanted = self.path
        try:
            self._temporary = Path(tempfile.mkdtemp(prefix="skillshelf-"))
            self.path = self._temporary / wanted.name
            conn = self._connect()
            where = f"a temporary folder ({display_path(self._temporary)})"
        except (OSError, sqlite3.Error):
            self._forget_temporary()
            self.path = wanted
            self._memory = f"file:skillshelf-{uuid.uuid4().hex}?mode=memory&cache=shared"
            conn = self._connect()
            where = "memory"
        self.created = True
        self._identity = file_identity(self.path)
        self.fallback = (
            f"{display_path(wanted.parent)} cannot be written ({reason}), so the {self.LABEL} is kept in {where} "
            "for this run and built again at every start. Make that folder writable, or set SKILLSHELF_CACHE_DIR "
            "to one that is, to keep it."
        )
        logger.warning("%s", self.fallback)
        return conn

    def _forget_temporary(self) -> None:
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None

    def _reset(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        if conn.execute("PRAGMA user_version").fetchone()[0] == self.SCHEMA_VERSION:
            conn.execute("ROLLBACK")  # another process created it while this one waited for the lock
            return
        # All in the one transaction, version included: `executescript` would commit first, and another
        # process taking the lock then would still see the old version and drop the tables being made.
        try:
            for table in (*self.TABLES, STATE_TABLE):
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

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._conn.close()
        self._join_helpers()
        self._forget_temporary()

    def _join_helpers(self) -> None:
        """Wait for this index's own background readers before its temporary folder goes: one still opening
        a connection would create the file (and the folder's lock) again behind the removal."""
        return

    # -- damage --------------------------------------------------------------------------
    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """This process's turn with the index file: the lock beside it (other processes wait) and a
        lock for this process's threads. Re-entrant: a sync holds it and the steps it calls take it too."""
        with self._exclusive_lock:
            if self._exclusive_depth:
                self._exclusive_depth += 1
                try:
                    yield
                finally:
                    self._exclusive_depth -= 1
                return
            with file_lock(self.lock_path):
                self._exclusive_depth = 1
                try:
                    yield
                finally:
                    self._exclusive_depth = 0
                    self._end_rebuild()

    @property
    def rebuilding(self) -> bool:
        """True while a sync of this process fills a file it has just put in place: reads wait for it."""
        return self._rebuilding_by is not None

    def _end_rebuild(self) -> None:
        """The turn that renewed the file is over (its sync finished or failed): waiting reads go on."""
        if self._rebuilding_by is None:
            return
        with self._lock:
            self._rebuilding_by = None
            self._rebuilt.notify_all()

    def _await_rebuild(self) -> None:
        """Under the lock: hold a read while another thread of this process fills a file it has just put
        in place (the wait lets go of the lock). That thread's own reads and writes go on."""
        while self._rebuilding_by not in (None, threading.get_ident()):
            self._rebuilt.wait()

    def is_complete(self) -> bool:
        """Whether the open file holds every document of a finished sync, as the file itself records.

        Read apart, like the signatures: each sync asks, and must not wait for a search holding the lock."""
        try:
            return bool(self._read_apart(f"SELECT 1 FROM {STATE_TABLE} WHERE name = 'complete'"))
        except IndexDamaged:
            return False
        except sqlite3.OperationalError:  # no such table: no sync has recorded one in this file yet
            return False

    def record_complete(self, complete: bool) -> None:
        """Record in the file whether it holds every document: cleared before a sync's first write, set after
        its last, so an interrupted build is never taken for a whole index, by this process or another."""
        with self._transaction() as conn:
            conn.execute(f"CREATE TABLE IF NOT EXISTS {STATE_TABLE} (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
            if complete:
                now = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
                conn.execute(f"INSERT OR REPLACE INTO {STATE_TABLE}(name, value) VALUES ('complete', ?)", (now,))
            else:
                conn.execute(f"DELETE FROM {STATE_TABLE} WHERE name = 'complete'")

    def replaced_elsewhere(self) -> bool:
        """True when the file at `path` is no longer the one open here (another process replaced it)."""
        return self._memory is None and file_identity(self.path) != self._identity

    def renew_if_needed(self) -> bool:
        """At the start of a sync: replace a damaged file, or reopen one another process replaced.

        True when the index open now is another file (new and empty, or another process's), so the
        sync compares every source with it again. The first call checks the file (`PRAGMA
        quick_check`, which reads the whole file: done once) for damage no query has met yet.
        """
        with self.exclusive():
            if self._memory is not None:
                return False
            if self.damage is None and not self._checked:
                self._checked = True
                self.damage = self._quick_check()
            moved = self.replaced_elsewhere()
            if self.damage is None and not moved:
                return False
            with file_lock(self.replace_lock_path), self._lock:  # the lock first: an open may hold it for a while
                self._rebuilding_by = threading.get_ident()  # until this turn ends: see `_await_rebuild`
                self._conn.close()
                if self.damage is not None and not moved:
                    self._move_aside(self.damage)
                self._reopen()
            return True

    def _quick_check(self) -> str | None:
        """Why the file is damaged, or None when SQLite's quick check passes (on a connection of its own:
        searches go on meanwhile)."""
        try:
            rows = self._read_apart("PRAGMA quick_check")
        except IndexDamaged as exc:
            return exc.reason
        problems = [str(row[0]) for row in rows]
        return None if problems == ["ok"] else f"quick_check: {'; '.join(problems[:3])}"

    def _move_aside(self, reason: str) -> None:
        """Keep the damaged file (with its -wal and -shm) as `<name>.corrupt-<time>` for a post-mortem;
        an earlier copy goes (each is a whole index, and a disk that keeps damaging files must not fill)."""
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
        aside = self.path.with_name(f"{self.path.name}{CORRUPT_SUFFIX}{stamp}")
        for old in self.path.parent.glob(glob.escape(self.path.name) + CORRUPT_SUFFIX + "*"):
            with suppress(OSError):
                old.unlink()
        kept: str | None = aside.name
        for suffix in ("", "-wal", "-shm"):
            source = Path(f"{self.path}{suffix}")
            try:
                source.replace(Path(f"{aside}{suffix}"))
            except FileNotFoundError:
                continue
            except OSError:
                kept = None  # a rebuild matters more than the post-mortem copy
                with suppress(OSError):
                    source.unlink()
        self.renewal = Renewal(reason, kept, dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
        logger.warning(
            "%s %s is damaged (%s); %s and rebuilding it from the files",
            self.LABEL,
            display_path(self.path),
            reason,
            f"kept it as {kept}" if kept else "deleted it",
        )

    def _reopen(self) -> None:
        """Connect to the file at `path` now (under the lock; the old connection is closed)."""
        self.damage = None
        self._checked = True  # new, or another process's just made
        self._generation += 1
        self._data_version = None
        self._forget_derived()
        try:
            self._conn = self._connect()
        except sqlite3.DatabaseError as exc:
            self._conn = self._placeholder()
            if is_corruption(exc):
                self.damage = str(exc)
            raise
        finally:
            self._identity = file_identity(self.path)

    def _note_damage(self, exc: sqlite3.DatabaseError, generation: int) -> IndexDamaged:
        """Remember proven damage met on connection `generation` (unless it was replaced since)."""
        if generation == self._generation and self.damage is None:
            self.damage = str(exc)
            logger.info("%s %s: %s; the next sync replaces it", self.LABEL, display_path(self.path), exc)
        return IndexDamaged(self.LABEL, str(exc))

    @contextmanager
    def _guard(self) -> Iterator[sqlite3.Connection]:
        """The shared connection, under the lock; proven damage becomes `IndexDamaged`."""
        with self._lock:
            self._await_rebuild()
            generation = self._generation
            try:
                yield self._conn
            except sqlite3.DatabaseError as exc:
                if not is_corruption(exc):
                    raise
                raise self._note_damage(exc, generation) from exc

    def _recover(self) -> None:
        """After `IndexDamaged`: the owner syncs now, which replaces the file and fills the new one.
        Without an owner, the file is replaced here (empty until something syncs it)."""
        if self.on_damage is not None:
            self.on_damage()
        else:
            self.renew_if_needed()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._guard() as guarded, immediate_transaction(guarded) as conn:
            self._forget_derived()  # any write may change how common a term is
            try:
                yield conn
            finally:  # what a search inside the write cached counts rows not committed, perhaps rolled back
                self._forget_derived()

    def _read_apart(self, sql: str) -> list[tuple[object, ...]]:
        """The rows of a long read (every signature: a quarter of a second at 100,000 skills) on a
        connection of its own, so the shared one stays free for searches meanwhile (WAL lets readers
        run side by side). Syncs call it, one at a time, so what it reads is what they write to; so does
        the spelling vocabulary's refresh, which checks for writes since it began."""
        generation = self._generation
        if self._closed:  # connecting by name now would create the file again (a removed temporary one)
            raise sqlite3.ProgrammingError(f"the {self.LABEL} is closed")
        if self._memory is not None:
            return self._read_on(sqlite3.connect(self._memory, uri=True, timeout=BUSY_TIMEOUT_S), sql, generation)
        with self._no_replacement():  # never inside this process's own replacement, so it cannot wait on itself
            return self._read_on(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S), sql, generation)

    def _read_on(self, conn: sqlite3.Connection, sql: str, generation: int) -> list[tuple[object, ...]]:
        try:
            conn.execute("PRAGMA query_only = ON")
            return conn.execute(sql).fetchall()
        except sqlite3.DatabaseError as exc:
            if not is_corruption(exc):
                raise
            raise self._note_damage(exc, generation) from exc
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
        """The number of documents, cached until the next write (count(*) reads the whole table,
        and every search asks for it)."""
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
