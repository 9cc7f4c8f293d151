"""SQLite and file-lock helpers every store of the library shares (the skill and session indexes, usage
history, semantic vectors, source installs): what SQLite's errors mean, WAL and write transactions
that queue instead of failing. (The cross-process locks on a side file, `<name>.lock`, are library/locks.py.)

A module of its own, below the index, usage and semantic packages, so none of them imports another
for these.
"""

from __future__ import annotations

import errno
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.skill.paths import display_path

# SQLite's primary result codes that mean "this place cannot be written" (not damage, not a lock).
UNWRITABLE_CODES = frozenset({sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM})
# SQLite's primary result codes that prove the file itself is damaged (not locked, read-only or full).
CORRUPTION_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})


def file_identity(path: Path) -> tuple[int, int] | None:
    """Which file is at `path` now (device, inode), None when there is none: a file another process moved
    aside and replaced is another file under the same name."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_dev, info.st_ino


def is_corruption(exc: sqlite3.Error) -> bool:
    """True only for SQLITE_CORRUPT and SQLITE_NOTADB (extended codes included)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in CORRUPTION_CODES


def describe_sqlite_error(exc: sqlite3.Error) -> str:
    """A short reason for a message: 'locked by another process', 'read-only', 'disk full', ..."""
    code = (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF
    reasons = {
        sqlite3.SQLITE_BUSY: "locked by another process",
        sqlite3.SQLITE_LOCKED: "locked by another process",
        sqlite3.SQLITE_READONLY: "read-only",
        sqlite3.SQLITE_FULL: "the disk is full",
        sqlite3.SQLITE_CANTOPEN: "cannot be opened",
        sqlite3.SQLITE_PERM: "permission denied",
        sqlite3.SQLITE_IOERR: "an I/O error",
    }
    return reasons.get(code, str(exc))


def is_disk_full(exc: BaseException) -> bool:
    """SQLITE_FULL, or an OSError saying the disk (or the user's quota) has no space left."""
    if isinstance(exc, sqlite3.Error):
        return (getattr(exc, "sqlite_errorcode", None) or 0) & 0xFF == sqlite3.SQLITE_FULL
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def disk_full(path: Path, what: str) -> SkillshelfError:
    """The error for `what` (e.g. "the skill index") that could not be written at `path` for want of space."""
    return SkillshelfError(
        ErrorCode.FILESYSTEM_ERROR,
        f"No space left on the disk holding {what} ({display_path(path)}): free some space there "
        "(`df -h` shows how full it is), then try again.",
    )


@contextmanager
def immediate_transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE (take the write lock up front, so concurrent writers queue instead of
    failing mid-transaction), COMMIT on success, ROLLBACK on anything else."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:  # a damaged file can end the transaction itself
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def use_wal(conn: sqlite3.Connection, deadline: float) -> None:
    """Switch a new file to WAL. Several processes opening one new index at once: SQLite answers
    "database is locked" to a journal-mode change at once, without waiting in the busy handler, so wait here."""
    while True:
        try:
            if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() not in ("wal", "memory"):
                conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)
