"""Watch folders and call back when anything in them changes (watchfiles: inotify, FSEvents, ...).

Shared by every index that must stay fresh without rescanning per read (skills, session artifacts).
Changes under `.skillshelf/` (the indexes themselves) are ignored.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

IGNORED_DIR = ".skillshelf"


class DirectoryWatcher:
    """Marks the library dirty when anything under the roots changes (watchfiles, inotify/FSEvents)."""

    def __init__(
        self,
        roots: list[Path],
        on_change: Callable[[], None],
        poll_seconds: float = 2.0,
        recursive: bool = True,
        on_ready: Callable[[], None] | None = None,
    ) -> None:
        self.roots = roots
        self.on_ready = on_ready or on_change  # called once the watch is in place
        self.recursive = recursive  # False: only the roots' own entries (e.g. project folders, not their trees)
        self.on_change = on_change
        self.stop_event = threading.Event()
        self.failed = False  # when True, owners fall back to re-checking every `poll_seconds`
        self.poll_seconds = poll_seconds
        self.thread = threading.Thread(target=self._run, name="skillshelf-watcher", daemon=True)

    def start(self) -> None:
        if self.roots:
            self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        if self.thread.is_alive():
            self.thread.join(timeout=5)

    def _run(self) -> None:
        try:
            from watchfiles import DefaultFilter, watch
        except ImportError:  # pragma: no cover - a declared dependency
            logger.warning("watchfiles is not installed; library changes need a restart to show")
            return

        class _IgnoreIndex(DefaultFilter):
            def __call__(self, change: Any, path: str) -> bool:
                return IGNORED_DIR not in Path(path).parts and bool(super().__call__(change, path))

        registered = False
        try:
            for changes in watch(
                *self.roots,
                watch_filter=_IgnoreIndex(),
                stop_event=self.stop_event,
                debounce=100,
                step=20,
                rust_timeout=300,
                yield_on_timeout=True,
                raise_interrupt=False,
                recursive=self.recursive,
            ):
                if not registered:
                    # The first yield proves the watch is in place: the owner re-checks once, to cover
                    # any change made between its initial scan and that moment.
                    registered = True
                    self.on_ready()
                elif changes:
                    self.on_change()
        except Exception:
            self.failed = True
            logger.exception("file watcher stopped; falling back to checking files every %.0fs", self.poll_seconds)
