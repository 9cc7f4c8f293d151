"""A bounded cache of what was parsed from files, keyed by each file's signature.

A repeated loadSkill serves the parsed documentation (and code, and derived schema) without reading
or parsing again. Every get stats the file first (or takes the stat its caller just made: the path rule's): a
changed signature (ctime, mtime, size, inode) is a miss, so an edited file is never served stale, watcher or
not (ctime too: an edit that sets mtime back and keeps the size is a miss). The library also clears it when
its watcher reports a change. Memory is bounded by an LRU over entries and their size. Concurrent gets of
the same key wait for one load instead of each doing it.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
Signature = tuple[int, int, int, int]

MAX_ENTRIES = 2048
MAX_BYTES = 32 * 1024 * 1024


def signature(path: Path) -> Signature | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return signature_of(st)


def signature_of(st: os.stat_result) -> Signature:
    """A file's signature from a stat of it the caller just made (the path rule's: `access.files`)."""
    return (st.st_ctime_ns, st.st_mtime_ns, st.st_size, st.st_ino)


class FileCache:
    def __init__(self, max_entries: int = MAX_ENTRIES, max_bytes: int = MAX_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, str], tuple[Signature, Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._loading: dict[tuple[str, str], threading.Event] = {}
        self.hits = 0
        self.misses = 0

    def get(
        self,
        path: Path,
        kind: str,
        load: Callable[[], T],
        size: Callable[[T], int] | None = None,
        stamp: Signature | None = None,
    ) -> T:
        """`load()`'s result for this file, reused while the file's signature is unchanged.

        `kind` tells apart different things parsed from one file; `size` estimates an entry's bytes
        (default: the file's size). A file that cannot be stat'ed is loaded and not cached. `stamp`: the
        file's signature from a stat the caller made just now (the path rule's), so a hit stats it once, not
        twice (issue 36); a wait for another thread's load stats it again.
        """
        key = (str(path), kind)
        while True:
            sig = stamp if stamp is not None else signature(path)
            stamp = None  # after a wait on another load, the file is stat'ed again
            if sig is None:
                return load()
            with self._lock:
                entry = self._entries.get(key)
                if entry is not None and entry[0] == sig:
                    self._entries.move_to_end(key)
                    self.hits += 1
                    value: T = entry[1]
                    return value
                waiting = self._loading.get(key)
                if waiting is None:
                    self._loading[key] = threading.Event()
                    self.misses += 1
                    break
            waiting.wait()  # someone else is loading it: use theirs (re-checked above)
        try:
            value = load()
            after = signature(path)
            if after == sig:  # unchanged while it was read: safe to keep
                self._store(key, sig, value, size(value) if size else sig[2])
            return value
        finally:
            with self._lock:
                self._loading.pop(key).set()

    def _store(self, key: tuple[str, str], sig: Signature, value: Any, nbytes: int) -> None:
        if nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[2]
            self._entries[key] = (sig, value, nbytes)
            self._bytes += nbytes
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                _, (_, _, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    def __len__(self) -> int:
        return len(self._entries)
