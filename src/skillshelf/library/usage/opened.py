"""A library's usage events, opened on first use, and read so that their absence never fails an answer."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from skillshelf.library.usage.events import UsageEvents
from skillshelf.library.usage.store import USAGE_FILE, UsageStore, UsageUnavailable

T = TypeVar("T")
Opener = Callable[[Path, float], UsageEvents]


class OpenedUsage:
    """The usage events in `state_dir` (the embedded file, or the store `opener` gives), opened lazily."""

    def __init__(self, state_dir: Path, opener: Opener | None, busy_timeout: float) -> None:
        self.path = state_dir / USAGE_FILE
        self._opener = opener or (lambda path, timeout: UsageStore(path, busy_timeout=timeout))
        self._busy_timeout = busy_timeout
        self._usage: UsageEvents | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def events(self) -> UsageEvents:
        """Usage events, opened on first use (most CLI commands never need them).

        Under a lock: since Python 3.12 `cached_property` has none, and two threads' first uses would
        each open a store, one of them never closed.
        """
        with self._lock:
            if self._usage is None:
                self._usage = self._opener(self.path, self._busy_timeout)
                if self._closed:  # a late call after close: answer "unavailable", keep no connection open
                    self._usage.close()
            return self._usage

    def read(self, read: Callable[[UsageEvents], T], warnings: list[str]) -> T | None:
        """A usage read, or None with a warning when usage cannot be read: usage annotates
        search, load and statistics, so its absence must never take them down."""
        try:
            found = read(self.events)
        except UsageUnavailable as exc:
            warnings.append(f"{exc.message} Usage counts are left out of this answer; the rest is current.")
            return None
        if self.events.warning is not None and self.events.warning not in warnings:
            warnings.append(self.events.warning)  # a damaged history: what could be read of it
        return found

    def verified_ids(self, warnings: list[str] | None = None) -> frozenset[str]:
        """Ids verified: used from three distinct projects (the one meaning of `verified`).

        Empty, with a warning added, when usage cannot be read: usage only annotates.
        """
        found = self.read(lambda usage: usage.verified_by_use(), [] if warnings is None else warnings)
        return found or frozenset()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._usage is not None:
                self._usage.close()
