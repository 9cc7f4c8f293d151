"""The file watcher runs its watches in a child process: changes reach the owner, the index folder is
ignored, the child ends with the watcher (even stopped from its own callback), a child that dies
makes the owner fall back to polling, symlinks are never followed and the child gets no secrets."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillshelf.library.indexing import watch_child
from skillshelf.library.indexing.watcher import DirectoryWatcher
from tests.conftest import deadline, wait_until


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
    assert calls.ready.wait(deadline()), "the watch never reported itself in place"
    try:
        yield watcher, calls, root
    finally:
        watcher.stop()


def test_a_change_under_the_root_reaches_the_owner(watched: tuple[DirectoryWatcher, Calls, Path]) -> None:
    watcher, calls, root = watched
    (root / "tools" / "new.md").write_text("# New\n", encoding="utf-8")
    wait_until(lambda: calls.changes >= 1, "the change never reached the owner")
    assert not watcher.failed


def test_changes_in_the_index_folder_are_ignored(watched: tuple[DirectoryWatcher, Calls, Path]) -> None:
    _, calls, root = watched
    (root / ".skillshelf").mkdir()
    (root / ".skillshelf" / "index.sqlite3").write_bytes(b"x" * 100)
    time.sleep(1.0)  # no change may come (several of the child's 300 ms polls and its 100 ms debounce):
    # a window for something not to happen, so a slow machine can only let a regression slip, never fail
    assert calls.changes == 0
    (root / "tools" / "seen.md").write_text("# Seen\n", encoding="utf-8")
    wait_until(lambda: calls.changes >= 1, "no change reached the owner")  # alive: only the index folder was ignored


@pytest.mark.parametrize("name", ["node_modules", "build", "venv"])
def test_a_build_folder_appearing_in_a_skill_reaches_the_owner(
    watched: tuple[DirectoryWatcher, Calls, Path], name: str
) -> None:
    """Its inside is not watched, but its appearing is a change: the approval gate holds back a skill with one
    (watchfiles' default filter dropped `node_modules`, so the gate learnt of it only at another change)."""
    _, calls, root = watched
    (root / "tools" / name).mkdir()
    wait_until(lambda: calls.changes >= 1, f"{name}/ appearing never reached the owner")


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
    wait_until(lambda: watcher.failed, "the watcher never noticed its child died")


def test_the_child_refuses_a_malformed_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert watch_child.main([]) == 2
    assert "usage" in capsys.readouterr().err


def inotify_watches(pid: int) -> int:
    """How many inotify watches process `pid` holds (its fdinfo lists one `inotify wd:` line each)."""
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if str(fd.readlink()) != "anon_inode:inotify":
                continue
            info = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text(encoding="ascii")
        except OSError:
            continue
        count += sum(1 for line in info.splitlines() if line.startswith("inotify wd:"))
    return count


needs_inotify = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts inotify watches")


@needs_inotify
def test_a_symlink_out_of_the_root_is_not_followed(tmp_path: Path) -> None:
    """A link to a big tree (here a stand-in for `/`) used to be watched whole: 11,225 watches, then
    the inotify limit, then polling. Only the library's own folders are watched."""
    outside = tmp_path / "elsewhere"
    for i in range(300):
        (outside / f"dir-{i}").mkdir(parents=True)
    root = tmp_path / "library"
    (root / "tools" / "hammer").mkdir(parents=True)
    (root / "tools" / "to-root").symlink_to("/")
    (root / "tools" / "to-elsewhere").symlink_to(outside)
    (root / ".git" / "objects").mkdir(parents=True)  # no skill lives in a dot-folder: not watched either
    calls = Calls()
    watcher = DirectoryWatcher([root], calls.on_change, on_ready=calls.on_ready)
    watcher.start()
    try:
        assert calls.ready.wait(deadline()), "the watch never reported itself in place"
        assert watcher._child is not None
        assert inotify_watches(watcher._child.pid) == 3  # library, tools, hammer
        assert not watcher.failed
    finally:
        watcher.stop()


@needs_inotify
def test_a_folder_created_after_the_start_is_watched_too(watched: tuple[DirectoryWatcher, Calls, Path]) -> None:
    watcher, calls, root = watched
    assert watcher._child is not None
    before = inotify_watches(watcher._child.pid)
    (root / "tools" / "new-skill").mkdir()
    wait_until(
        lambda: watcher._child is not None and inotify_watches(watcher._child.pid) == before + 1,
        "the new folder was never watched",
    )
    seen = calls.changes
    (root / "tools" / "new-skill" / "SKILL.md").write_text("---\nname: new-skill\n---\n", encoding="utf-8")
    wait_until(lambda: calls.changes > seen, "the change in the new folder never reached the owner")


@needs_inotify
def test_the_watch_process_gets_none_of_the_servers_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSHELF_TOKENS", "ci=token-0123456789abcdef")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-the-watcher")
    calls = Calls()
    watcher = DirectoryWatcher([tmp_path], calls.on_change, on_ready=calls.on_ready)
    watcher.start()
    try:
        assert calls.ready.wait(deadline())
        assert watcher._child is not None
        environ = Path(f"/proc/{watcher._child.pid}/environ").read_bytes()
        assert b"token-0123456789abcdef" not in environ and b"not-for-the-watcher" not in environ
        assert b"PATH=" in environ
    finally:
        watcher.stop()


def test_stopping_from_the_watchers_own_callback_ends_its_process_and_its_callbacks(tmp_path: Path) -> None:
    """An owner replaces its watchers from inside a callback (the session archive does): the stop
    used to only set a flag there, leaving the process running and the callbacks coming."""
    calls = Calls()
    stopped = threading.Event()

    def stop_on_change() -> None:
        calls.on_change()
        watcher.stop()  # on the watcher's own thread
        stopped.set()

    watcher = DirectoryWatcher([tmp_path], stop_on_change, on_ready=calls.on_ready)
    watcher.start()
    assert calls.ready.wait(deadline())
    child = watcher._child
    assert child is not None
    (tmp_path / "one.md").write_text("1", encoding="utf-8")
    assert stopped.wait(deadline())
    wait_until(lambda: child.poll() is not None, "the watch process outlived its stop")
    wait_until(lambda: not watcher.thread.is_alive(), "the watcher thread outlived its stop")
    assert calls.changes == 1 and not watcher.failed
