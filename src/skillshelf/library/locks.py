"""Cross-process locks that hold on every OS pyproject claims (none is a silent no-op).

`fd_lock` locks an open file: on Unix with flock (shared or exclusive; advisory, so a reader that takes no
lock still reads, and a wait is the kernel's); on Windows with filelock's `lock_descriptor` (LockFileEx).
Windows has no shared lock there (neither filelock's descriptor lock nor msvcrt offers one), so a shared
hold is exclusive: readers take turns, which only serialises the moment they hold it. filelock's own
ReadWriteLock is not used: it is a SQLite database of its own, not a lock on these files, so it would not
contend with a process of an earlier version holding the flock, and it adds a journal beside each lock.

`file_lock` is `fd_lock` on a side file of its own (`<name>.lock`): the index, vector and install locks.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

POLL_S = 0.01  # Windows: how often a blocking wait retries (LockFileEx is taken without waiting, then retried)


@contextmanager
def fd_lock(fd: int, *, blocking: bool = True, shared: bool = False) -> Iterator[bool]:
    """Hold an exclusive (or `shared`) lock on the open file `fd` for the block; yields False when not
    blocking and another process holds it."""
    if not _take(fd, blocking=blocking, shared=shared):
        yield False
        return
    try:
        yield True
    finally:
        _release(fd)


@contextmanager
def file_lock(path: Path, *, blocking: bool = True, shared: bool = False) -> Iterator[bool]:
    """Hold an exclusive (or `shared`) lock on the side file `path` for the block; yields False when not
    blocking and it is taken.

    A lock that cannot even be created (a read-only folder) yields True: there is nobody to
    coordinate with through that folder, and the caller's own writes will report the problem.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError:
        yield True
        return
    try:
        with fd_lock(fd, blocking=blocking, shared=shared) as held:
            yield held
    finally:
        os.close(fd)


if sys.platform == "win32":
    from filelock import lock_descriptor, unlock_descriptor

    def _take(fd: int, *, blocking: bool, shared: bool) -> bool:
        return lock_descriptor(fd, blocking=blocking, poll_interval=POLL_S)  # `shared` too: see the module doc

    def _release(fd: int) -> None:
        unlock_descriptor(fd)

else:
    import fcntl

    def _take(fd: int, *, blocking: bool, shared: bool) -> bool:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            return False
        return True

    def _release(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
