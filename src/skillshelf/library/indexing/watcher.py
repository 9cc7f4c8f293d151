"""Watch folders and call back when anything in them changes (watchfiles: inotify, FSEvents, ...).

Shared by every index that must stay fresh without rescanning per read (skills, session artifacts).
Changes under `.skillshelf/` (the indexes themselves) are ignored. The watches live in a child process
(`watch_child`): watchfiles registers them while holding the GIL, seconds for a large library, and
the server must keep answering meanwhile. This thread only reads the child's lines.

`stop()` works from any thread, the watcher's own included (an owner may replace its watchers from
inside a callback): the child's stdin is closed at once, so it exits, and no callback runs after.
The child gets the helper environment (library/children.py): nothing of the server's secrets.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

from skillshelf.library import children
from skillshelf.library.indexing.watch_child import CHANGE, IGNORED_DIR, READY

logger = logging.getLogger(__name__)

__all__ = ["IGNORED_DIR", "DirectoryWatcher"]

STOP_TIMEOUT_S = 5.0


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
        self._child: subprocess.Popen[bytes] | None = None
        self._child_lock = threading.Lock()

    def start(self) -> None:
        if self.roots:
            self.thread.start()

    def stop(self) -> None:
        """Stop watching: no callback after this returns (or, called from a callback, after it ends)."""
        self.stop_event.set()
        with self._child_lock:
            child = self._child
        if threading.current_thread() is self.thread:
            if child is not None and child.stdin is not None:
                child.stdin.close()  # the child exits; the read loop then ends and reaps it
            return
        if child is not None:
            _close(child)
        if self.thread.is_alive():
            self.thread.join(timeout=STOP_TIMEOUT_S)

    def _run(self) -> None:
        mode = "--recursive" if self.recursive else "--flat"
        command = [sys.executable, "-m", "skillshelf.library.indexing.watch_child", mode, *map(str, self.roots)]
        try:
            with self._child_lock:
                if self.stop_event.is_set():
                    return
                self._child = children.popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        except OSError as exc:
            self._fail(f"could not start ({exc})")
            return
        child = self._child
        assert child.stdout is not None
        pending = b""
        while not self.stop_event.is_set():
            chunk = os.read(child.stdout.fileno(), 65536)  # whatever is there: one callback per kind
            if not chunk or self.stop_event.is_set():
                break
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            words = {line.strip().decode("ascii", "replace") for line in lines}
            try:
                if READY in words:
                    self.on_ready()
                elif CHANGE in words:
                    self.on_change()
            except Exception:
                logger.exception("a file watcher callback failed")
        child.stdout.close()
        _close(child)
        if not self.stop_event.is_set():
            self._fail(f"exited with {child.returncode}")

    def _fail(self, why: str) -> None:
        self.failed = True
        logger.warning("file watcher %s; falling back to checking files every %.0fs", why, self.poll_seconds)


def _close(child: subprocess.Popen[bytes]) -> None:
    """Close the child's stdin (it exits within its 300 ms poll), then make sure it is gone."""
    try:
        if child.stdin is not None:
            child.stdin.close()
        child.wait(timeout=STOP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        child.kill()
        child.wait()
