"""An update killed midway (SIGKILL, a real child process stopped at each step) leaves one version whole,
never a mix: the old one until the swap, the new one after it; the next command finishes or undoes
what was left, so the lock always says what the folder holds."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.lock import read_lock
from skillshelf.library.sources.swap import STAGING_PREFIX
from tests.sources.helpers import Repo, add, staging_left, tree_of

CHILD = """
import sys
from pathlib import Path
from skillshelf.library.sources import swap
from skillshelf.library.sources.install import open_shelf

root, wanted = Path(sys.argv[1]), sys.argv[2]

def stop_at(point):
    if point == wanted:
        print(point, flush=True)
        sys.stdin.read()  # held here until the test kills the process

swap.CHECKPOINT = stop_at
with open_shelf(root) as shelf:
    what = sys.argv[3]
    if what == "update":
        shelf.apply(shelf.prepare_update("team"))
    else:
        shelf.remove("team")
print("finished", flush=True)
"""
DEADLINE_S = 60.0  # an upper bound that proves nothing hung; the line comes as soon as the step is reached


@pytest.fixture
def library(tmp_path: Path) -> tuple[Path, Repo]:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    repo.skill("release-notes", "Draft release notes.")
    repo.commit("first")
    root = tmp_path / "library"
    root.mkdir()
    add(root, repo.url, name="team")
    repo.skill("pdf-fill", "Fill PDF forms, version two.")
    repo.write("pdf-fill/scripts/run.sh", "#!/bin/sh\necho two\n", executable=True)
    repo.remove("release-notes")
    repo.skill("changelog", "Keep a changelog.")
    repo.commit("second")
    return root, repo


def first_line(process: subprocess.Popen[str]) -> str:
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(process.stdout.readline() if process.stdout else ""))
    reader.start()
    reader.join(DEADLINE_S)
    assert lines, "the child never reached its step"
    return lines[0].strip()


def kill_at(root: Path, point: str, what: str = "update") -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(root), point, what],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert first_line(process) == point
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.kill()
        process.wait(DEADLINE_S)
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()


@pytest.mark.parametrize(
    ("point", "lands"),
    [("fetched", "old"), ("staged", "old"), ("journaled", "old"), ("swapped", "new"), ("locked", "new")],
)
def test_an_update_killed_at_any_step_leaves_one_version_whole(
    library: tuple[Path, Repo], tmp_path: Path, point: str, lands: str
) -> None:
    root, repo = library
    old_tree, old_lock = tree_of(root / "team"), (root / "skillshelf.lock").read_bytes()
    new_root = tmp_path / "reference"
    new_root.mkdir()
    add(new_root, repo.url, name="team")  # the new version, installed whole elsewhere
    new_tree = tree_of(new_root / "team")

    kill_at(root, point)

    assert tree_of(root / "team") == (old_tree if lands == "old" else new_tree), "a mix of two versions"
    if lands == "old":
        assert (root / "skillshelf.lock").read_bytes() == old_lock
    with open_shelf(root) as shelf:  # the next command finishes or undoes it
        assert len(shelf.recovered) == 1 and shelf.recovered[0]
        (status,) = shelf.status()
        assert status.local_edits == []  # the lock says exactly what the folder holds
    assert staging_left(root) == []
    expected_commit = repo.git("rev-parse", "HEAD" if lands == "new" else "HEAD~1")
    assert read_lock(root / "skillshelf.lock").sources["team"].commit == expected_commit
    assert tree_of(root / "team") == (old_tree if lands == "old" else new_tree)


@pytest.mark.parametrize(("point", "gone"), [("journaled", False), ("swapped", True)])
def test_a_removal_killed_midway_is_finished_or_undone(library: tuple[Path, Repo], point: str, gone: bool) -> None:
    root, _ = library
    before = tree_of(root / "team")
    kill_at(root, point, what="remove")
    with open_shelf(root) as shelf:
        assert shelf.recovered
        names = set(shelf.lock().sources)
    assert staging_left(root) == []
    if gone:
        assert not (root / "team").exists() and names == set()
    else:
        assert tree_of(root / "team") == before and names == {"team"}


def test_a_staging_folder_without_a_journal_is_simply_dropped(library: tuple[Path, Repo]) -> None:
    root, _ = library
    before = tree_of(root)
    leftover = root / f"{STAGING_PREFIX}abandoned"
    (leftover / "tree" / "team").mkdir(parents=True)
    (leftover / "tree" / "team" / "half.md").write_text("half", encoding="utf-8")
    with open_shelf(root) as shelf:
        assert "stopped before changing the library" in shelf.recovered[0]
    assert tree_of(root) == before
