"""Keeping an index over files fresh without rescanning on every read.

The first sync runs in the background so a server answers at once; file watchers then sync on
their own thread when anything changes; a read waits only when a sync is due or under way, so a
change is visible to the next read. If a watcher dies, reads fall back to re-checking the files
at most every `POLL_SECONDS`. The skill library and the session archive share this.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Generic, Protocol, Self, TypeVar

from skillshelf.library.indexing.fts import FtsIndex, IndexDamaged

logger = logging.getLogger(__name__)

POLL_SECONDS = 2.0
# How long `needs_sync`'s look at the index file stands for the read that follows it (see IndexSync.needs_sync).
VOUCHED_S = 0.1
WRITE_BATCH = 500  # documents stored per transaction: bounds memory during a first build


@dataclass
class SyncReport:
    """What one sync did: documents parsed (new or changed), removed, and how long it took."""

    parsed: int = 0
    removed: int = 0
    seconds: float = 0.0


R = TypeVar("R")  # what a sync reports
IndexT = TypeVar("IndexT", bound=FtsIndex)


class Syncable(Protocol):
    def sync(self) -> object: ...
    def start_watching(self) -> None: ...
    def close(self) -> None: ...


SyncableT = TypeVar("SyncableT", bound=Syncable)


@contextmanager
def synced_for_block(index: SyncableT) -> Iterator[SyncableT]:
    """Synced and watched for the block, closed after it (the CLI's one-shot use of an index or a library)."""
    index.sync()
    index.start_watching()
    try:
        yield index
    finally:
        index.close()


class BackgroundSync(Generic[R]):
    LABEL = "index"

    def __init__(self) -> None:
        self._dirty = threading.Event()
        self._syncing = threading.Event()
        self._ready = threading.Event()
        self._ready.set()  # synced by the caller unless start() runs the first sync in the background
        self._sync_lock = threading.Lock()
        self._starter: threading.Thread | None = None
        self._synced_at = 0.0
        self.synced_wall: float | None = None  # time.time() of the last sync that succeeded (/health says it)
        self._sync_thread: int | None = None  # the thread syncing now
        self.sync_error: str | None = None  # why the last sync failed; None once one succeeds

    # -- what an index provides ------------------------------------------------------------
    def _sync_now(self) -> R:
        """Bring the index in line with the files (called with the sync lock held)."""
        raise NotImplementedError

    def _after_sync(self) -> None:
        """Outside the lock, after a sync (e.g. adjust what is watched)."""

    def _watcher_failed(self) -> bool:
        return False

    def _answers_while_checking(self) -> bool:
        """Whether a start may answer from the index as it is while a quiet re-check runs (an index
        left complete by an earlier run); else reads wait for the first sync."""
        return False

    def start_watching(self) -> None:
        raise NotImplementedError

    def _stop_watchers(self) -> None:
        raise NotImplementedError

    # -- syncing ------------------------------------------------------------------------------
    def sync(self) -> R:
        with self._sync_lock:
            report = self._sync_locked()
        self._after_sync()
        return report

    def _sync_locked(self) -> R:
        self._syncing.set()
        try:
            self._dirty.clear()
            try:
                report = self._sync_recovering()
            except Exception as exc:
                self.sync_error = f"{type(exc).__name__}: {exc}"
                self._dirty.set()  # the next read retries it
                raise
            self.sync_error = None
            self._synced_at = time.monotonic()
            self.synced_wall = time.time()
            return report
        finally:
            self._syncing.clear()

    def _sync_recovering(self) -> R:
        """`_sync_now`, once more if it met a damaged index: the index noted the damage, and the second
        sync starts by replacing the file, then re-parses every source into the new one."""
        self._sync_thread = threading.get_ident()
        try:
            try:
                return self._sync_now()
            except IndexDamaged as exc:
                logger.info("%s sync met a damaged index (%s); rebuilding it", self.LABEL, exc.reason)
                return self._sync_now()
        finally:
            self._sync_thread = None

    def _rebuild_after_damage(self) -> None:
        """The index's `on_damage`: a read met damage, so sync now (which replaces and rebuilds the
        file) before the read runs again. Within a sync the sync itself recovers (see above)."""
        if self._sync_thread == threading.get_ident():
            return
        self._dirty.set()
        self._sync_if_needed()

    def _sync_if_needed(self) -> None:
        with self._sync_lock:
            if not (self._dirty.is_set() or self._stale()):
                return
            self._sync_locked()
        self._after_sync()

    def _on_change(self) -> None:
        """Called on a watcher's thread: sync there, so a read rarely has to wait for it."""
        self._dirty.set()
        try:
            self._sync_if_needed()
        except Exception:
            logger.exception("background %s sync failed; the next read retries it", self.LABEL)

    def _on_watch_ready(self) -> None:
        """Called once a watcher is in place: a quiet re-check for changes made before it was.

        Nothing is known to have changed, so reads do not wait for this one (no `_syncing` flag);
        a real change meanwhile sets the dirty flag and the next read syncs as usual. If it fails,
        the next read syncs (and waits).
        """
        try:
            with self._sync_lock:
                self._sync_recovering()
                self._synced_at = time.monotonic()
                self.synced_wall = time.time()
            self._after_sync()
        except Exception as exc:
            self.sync_error = f"{type(exc).__name__}: {exc}"
            self._dirty.set()
            logger.exception("%s re-check failed; the next read syncs", self.LABEL)

    def _stale(self) -> bool:
        return self._watcher_failed() and time.monotonic() - self._synced_at > POLL_SECONDS

    def needs_sync(self) -> bool:
        """True when a read now would wait for a sync (first build, files changed, sync under way)."""
        return not self._ready.is_set() or self._dirty.is_set() or self._syncing.is_set() or self._stale()

    def ensure_fresh(self) -> None:
        """Wait for the first sync, then for any sync a change calls for (or one already under way)."""
        if not self._ready.is_set():
            self._ready.wait()
        if self._dirty.is_set() or self._syncing.is_set() or self._stale():
            try:
                self._sync_if_needed()
            except Exception:
                # Serve what is indexed, and say so (`sync_error`); the next read retries the sync.
                logger.exception("%s sync failed; answering from the index as it is", self.LABEL)

    def mark_dirty(self) -> None:
        self._dirty.set()

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Sync in the background, then watch: a server answers at once and reads wait for the sync.

        When an earlier run left the index complete, reads do not wait: they answer from it while a
        quiet re-check brings in what changed while no server ran (a stat per file; at 10,000 skills
        about a second that every first search used to wait for). Loads read the files themselves,
        so they are never stale; a search may miss such a change for that second.
        """
        if self._starter is not None:
            return
        if self._answers_while_checking():
            target = self._recheck_then_watch
        else:
            self._ready.clear()
            target = self._initial_sync
        self._starter = threading.Thread(target=target, name=f"skillshelf-{self.LABEL}", daemon=True)
        self._starter.start()

    def _recheck_then_watch(self) -> None:
        self.start_watching()  # watches register in their own process meanwhile (seconds on a large library)
        self._on_watch_ready()  # re-check now; the watcher's readiness re-checks once more, covering the gap

    def _initial_sync(self) -> None:
        try:
            self.sync()
        except Exception:
            logger.exception("initial %s sync failed", self.LABEL)
        finally:
            self._ready.set()
        self.start_watching()

    def close(self) -> None:
        raise NotImplementedError

    def opened(self) -> AbstractContextManager[Self]:
        return synced_for_block(self)

    def stop_watching(self) -> None:
        if self._starter is not None:
            self._starter.join()
            self._starter = None
        self._stop_watchers()


class IndexSync(BackgroundSync[R], Generic[R, IndexT]):
    """A `BackgroundSync` of one `FtsIndex` file (the skill index's, the session index's)."""

    def __init__(self, index: IndexT) -> None:
        super().__init__()
        self.index = index
        self.index.on_damage = self._rebuild_after_damage  # a read that meets a damaged index syncs first

    def _sync_now(self) -> R:
        """Re-parse only documents whose signature changed since the index was written.

        One process syncs an index file at a time (a lock beside it): servers started together on
        one library wait for the first build instead of racing it, then find nothing left to parse.
        """
        with self.index.exclusive():
            return self._sync_files()

    def _sync_files(self) -> R:
        """Bring the index in line with the files (called holding the sync lock and the file's lock)."""
        raise NotImplementedError

    def _stale(self) -> bool:
        """Also when another process replaced the index file (a damaged one): the sync reopens it; and while
        this process fills a file it has just put in place: reads wait for that sync."""
        return super()._stale() or self.index.rebuilding or self._replaced()

    def needs_sync(self) -> bool:
        """A "no" also vouches for the file at the index's path (its stat just now) to the read that follows
        in the same context: a tool call asks this on its work thread right before its read, and the read's
        `ensure_fresh` then takes that answer instead of stat'ing the file a second time (issue 36: two stats
        a call). anyio runs each call in a worker thread on its own copy of the context, so the answer
        reaches no other call; it is used once, and only within VOUCHED_S."""
        _VOUCHED.set(None)  # this answer looks at the file itself
        waits = super().needs_sync()
        if not waits:
            _VOUCHED.set((id(self), time.monotonic()))
        return waits

    def _replaced(self) -> bool:
        vouched = _VOUCHED.get()
        if vouched is not None:
            _VOUCHED.set(None)
            if vouched[0] == id(self) and time.monotonic() - vouched[1] < VOUCHED_S:
                return False
        return self.index.replaced_elsewhere()


# The index (its id) whose file `needs_sync` has just looked at, and when (IndexSync.needs_sync).
_VOUCHED: ContextVar[tuple[int, float] | None] = ContextVar("skillshelf_index_vouched", default=None)
