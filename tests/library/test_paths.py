"""The path rule every served file passes (skill/paths.py), on a real tree with links: inside the root after
following links, no dot-name on the way; compared as paths, never as string prefixes."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from skillshelf.library.skill import paths
from skillshelf.library.skill.paths import is_within, servable_target


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "lib"
    (root / "cat" / "skill" / "references").mkdir(parents=True)
    (root / "cat" / "skill" / "SKILL.md").write_text("# Skill\n")
    (root / "cat" / "skill" / "references" / "notes.md").write_text("notes\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("url = https://token@example.com\n")
    (tmp_path / "lib2").mkdir()  # a sibling whose name starts with the root's
    (tmp_path / "lib2" / "secret.md").write_text("secret\n")
    links = root / "cat" / "skill" / "references"
    (links / "to-git").symlink_to(root / ".git" / "config")
    (links / "to-sibling").symlink_to(tmp_path / "lib2" / "secret.md")
    (links / "to-notes").symlink_to(links / "notes.md")
    return root


def test_a_file_inside_and_a_link_to_one_are_served_as_the_real_file(tree: Path) -> None:
    notes = tree / "cat" / "skill" / "references" / "notes.md"
    assert servable_target(notes, tree) == notes
    assert servable_target(notes.with_name("to-notes"), tree) == notes


def test_dot_names_before_or_after_a_link_and_paths_outside_are_refused(tree: Path) -> None:
    references = tree / "cat" / "skill" / "references"
    assert servable_target(tree / ".git" / "config", tree) is None  # a dot-name on the way
    assert servable_target(references / "to-git", tree) is None  # a link into one
    assert servable_target(references / "to-sibling", tree) is None  # a link out of the root
    assert servable_target(references / "missing.md", tree) is None
    assert servable_target(tree / "cat" / ".." / ".git" / "config", tree) is None


def test_a_sibling_folder_sharing_the_roots_name_is_not_inside_it(tree: Path) -> None:
    sibling = tree.parent / "lib2" / "secret.md"
    assert not is_within(sibling, tree) and servable_target(sibling, tree) is None
    assert is_within(tree, tree) and is_within(tree / "cat", tree)


def test_the_kernels_answer_is_realpaths_for_every_kind_of_path(tree: Path) -> None:
    # A served path is resolved by the kernel as it opens it (issue 36, H78: realpath's lstat of every component
    # was a tenth of a repeat load): the same answer as os.path.realpath(strict=True) for a file, a link to one,
    # a link through a linked folder, a chain of links, a FIFO (not opened for reading: it must not block),
    # and None where realpath raises (missing, dangling, a loop, a file used as a folder).
    skill = tree / "cat" / "skill"
    (tree / "cat" / "linked").symlink_to(skill)
    (skill / "chain").symlink_to(skill / "references" / "to-notes")
    (skill / "dangling").symlink_to(skill / "gone.md")
    (skill / "loop").symlink_to(skill / "loop")
    os.mkfifo(skill / "pipe")
    found = [
        skill / "SKILL.md",
        skill / "references" / "to-notes",
        tree / "cat" / "linked" / "references" / "to-git",
        skill / "chain",
        skill / "pipe",
        skill,
    ]
    missing = [skill / "gone.md", skill / "dangling", skill / "loop", skill / "SKILL.md" / "x"]

    assert paths.FD_LINKS is not None or sys.platform != "linux"
    assert [paths._resolved_text(p) for p in found] == [os.path.realpath(p, strict=True) for p in found]
    assert [paths._resolved_text(p) for p in missing] == [None] * len(missing)


def test_the_served_text_is_the_served_target_for_every_kind_of_path(tree: Path) -> None:
    # A load checks each file it serves with `servable_text`: the same rule as `servable_target` without making a
    # Path of the answer (pathlib's parsing, a tenth of the check; issue 36, H85).
    references = tree / "cat" / "skill" / "references"
    kinds = [
        references / "notes.md",
        references / "to-notes",
        references / "to-git",
        references / "to-sibling",
        references / "missing.md",
        tree / ".git" / "config",
        tree / "cat" / ".." / ".git" / "config",
        tree.parent / "lib2" / "secret.md",
    ]
    expected = [str(found) if (found := servable_target(p, tree)) is not None else None for p in kinds]
    assert [paths.servable_text(p, tree) for p in kinds] == expected
    assert expected[:2] == [str(references / "notes.md")] * 2 and expected[2:] == [None] * 6
