"""Symlink loops inside a skill folder end every walk: reported once each, never followed.

The review's case: `references/empty/{a,b} -> .` made `skillshelf check` walk 2^40 paths.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.skill.checker import check_roots
from skillshelf.library.skill.folder import MAX_FILES, MAX_TOTAL_BYTES, walk_folder
from tests.conftest import agent_skill, deadline, three_file

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symlinks need privileges on Windows")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    agent_skill(root, "tools", "looped", "name: looped\ndescription: A skill whose folder holds symlink loops.")
    folder = root / "tools" / "looped"
    empty = folder / "references" / "empty"
    empty.mkdir(parents=True)
    (empty / "a").symlink_to(".")
    (empty / "b").symlink_to(".")
    (folder / "references" / "guide.md").write_text("# Guide\n", encoding="utf-8")
    (folder / "references" / "up").symlink_to("..")  # back to the skill folder itself
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.py").write_text("print('{}')\n", encoding="utf-8")
    (folder / "assets").symlink_to("scripts")  # a link to a sibling folder is no loop: followed
    three_file(root, "tools", "plain", "# Plain\n\nA plain skill.\n")
    return root


def test_the_check_command_finishes_and_reports_each_loop(root: Path) -> None:
    command = [sys.executable, "-m", "skillshelf", "check", str(root)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=deadline(), check=False)
    assert done.returncode == 0, done.stderr  # warnings only
    loops = sorted(line.split(":")[0].rsplit("/looped/", 1)[1] for line in done.stdout.splitlines() if "loop" in line)
    assert loops == ["references/empty/a", "references/empty/b", "references/up"]
    assert "2 skills checked" in done.stdout


def test_the_walk_lists_each_file_once_and_follows_links_that_are_no_loop(root: Path) -> None:
    loops: list[Path] = []
    walked = list(walk_folder(root / "tools" / "looped", root.resolve(), max_files=MAX_FILES, loops=loops))
    assert sorted(f.served for f in walked) == ["SKILL.md", "assets/run.py", "references/guide.md", "scripts/run.py"]
    assert sorted(p.name for p in loops) == ["a", "b", "up"]


def test_a_check_still_measures_a_looped_folder_against_the_size_limit(root: Path) -> None:
    big = root / "tools" / "looped" / "scripts" / "data.bin"
    big.write_bytes(b"\0" * (MAX_TOTAL_BYTES // 2 + 1))  # counted twice: under scripts/ and assets/
    report = check_roots([root])
    assert [f.path for f in report.findings if f.code == "over-size-limit"] == ["tools/looped"]


def test_the_library_indexes_a_skill_whose_folder_holds_loops(root: Path, tmp_path: Path) -> None:
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    try:
        library.sync()
        assert library.index.count() == 2
        skill = library.get("tools/looped")
        assert skill is not None and "references/guide.md" in skill.details.resources
    finally:
        library.close()
