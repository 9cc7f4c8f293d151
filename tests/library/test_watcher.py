"""The file watcher runs its watches in a child process: changes reach the owner, the index folder is
ignored, the child ends with the watcher, and a child that dies makes the owner fall back to polling."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from skillshelf.library.index import watch_child
from skillshelf.library.index.watcher import DirectoryWatcher


def wait_for(condition: Callable[[], bool], seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


class Calls:
    def __init__(self) -> None:
        self.ready = threading.Event()
        self.changes = 0

    def on_ready(self) -> None:
        self.ready.set()

    def on_change(self) -> None:
        self.changes += 1


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[DirectoryWatcher, Calls, Path]]:
    root = tmp_path / "library"
    (root / "tools").mkdir(parents=True)
    calls = Calls()
    watcher = DirectoryWatcher([root], calls.on_change, poll_seconds=2.0, on_ready=calls.on_ready)
    watcher.start()
    assert calls.ready.wait(15), "the watch never reported itself in place"
    try:
        yield watcher, calls, root
    finally:
        watcher.stop()


def test_a_change_under_the_root_reaches_the_owner(watched: tuple[DirectoryWatcher, Calls, Path]) -> None:
    watcher, calls, root = watched
    (root / "tools" / "new.md").write_text("# New\n", encoding="utf-8")
    assert wait_for(lambda: calls.changes >= 1)
    assert not watcher.failed


def test_changes_in_the_index_folder_are_ignored(watched: tuple[DirectoryWatcher, Calls, Path]) -> None:
    _, calls, root = watched
    (root / ".skillshelf").mkdir()
    (root / ".skillshelf" / "index.sqlite3").write_bytes(b"x" * 100)
    time.sleep(1.0)  # several of the child's 300 ms polls and its 100 ms debounce
    assert calls.changes == 0
    (root / "tools" / "seen.md").write_text("# Seen\n", encoding="utf-8")
    assert wait_for(lambda: calls.changes >= 1)  # the watch is alive: only the index folder was ignored


def test_the_child_ends_with_the_watcher(watched: tuple[DirectoryWatcher, Calls, Path]) -> None:
    watcher, _, _ = watched
    child = watcher._child
    assert child is not None and child.poll() is None
    watcher.stop()
    assert child.poll() is not None  # stopped within stop(), not left behind
    assert not watcher.failed  # a stop is not a failure


def test_a_child_that_dies_makes_the_owner_fall_back_to_polling(
    watched: tuple[DirectoryWatcher, Calls, Path],
) -> None:
    watcher, _, _ = watched
    assert watcher._child is not None
    watcher._child.kill()
    assert wait_for(lambda: watcher.failed)


def test_the_child_refuses_a_malformed_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert watch_child.main([]) == 2
    assert "usage" in capsys.readouterr().err
