"""The session archive replaces its watchers when projects gain artifacts, often from a watcher's own
callback: a watcher retired there must end, its process and its callbacks, and close() leaves none."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillshelf.artifacts import archive as archive_module
from skillshelf.artifacts.archive import SessionArchive
from skillshelf.library.indexing.watcher import DirectoryWatcher
from skillshelf.projects import ProjectRoots
from tests.artifacts.conftest import session_file
from tests.conftest import wait_until


def test_watchers_retired_from_their_own_callback_and_on_close_leave_no_process_or_thread(
    dev: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[DirectoryWatcher] = []

    class Recorded(DirectoryWatcher):
        def start(self) -> None:
            made.append(self)
            super().start()

    monkeypatch.setattr(archive_module, "DirectoryWatcher", Recorded)
    archive = SessionArchive(ProjectRoots.of([dev]), index_dir=tmp_path / "index", watch=True)
    archive.start()
    try:
        wait_until(lambda: len(made) >= 2 and all(w._child is not None for w in made), "the watchers never started")
        first = list(made)
        # `docs` has no artifacts yet: its first session changes the watch plan, and the shallow
        # watcher that saw it is replaced from inside its own callback.
        session_file(dev / "docs", "2025-12-25-orca/session-summary.md", "# Orca\n\nPods.\n")
        wait_until(lambda: len(made) >= 4, "the watchers were never replaced")
        retired = [w for w in first if w not in archive._watchers]
        assert retired
        for watcher in retired:
            child = watcher._child
            assert child is not None
            wait_until(lambda: child.poll() is not None, "a retired watcher's process is still running")  # noqa: B023
            wait_until(lambda: not watcher.thread.is_alive(), "a retired watcher still reads and calls back")  # noqa: B023
    finally:
        archive.close()
    for watcher in made:
        assert watcher._child is None or watcher._child.poll() is not None
        assert not watcher.thread.is_alive()
