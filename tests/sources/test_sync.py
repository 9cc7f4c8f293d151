"""`skillshelf sync`: an empty root plus the lock gives a byte-identical library; every digest is
verified; local edits are reported and kept unless --force; a source the lock dropped is removed."""

from __future__ import annotations

import shutil
import stat
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.lock import read_lock, write_lock
from tests.sources.helpers import Repo, add, make_zip, skill_md, staging_left, tree_of


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "upstream")
    repo.skill("skills/pdf-fill", "Fill PDF forms from JSON data.", license="MIT")
    repo.write("skills/pdf-fill/scripts/fill.py", "#!/usr/bin/env python3\nprint('filled')\n", executable=True)
    repo.write("skills/pdf-fill/references/guide.md", "# Guide\n")
    (repo.path / "skills/pdf-fill/references/latest.md").symlink_to("guide.md")
    repo.write("skills/retry.md", "# Retry\n\nRetry flaky calls with backoff.\n")
    repo.write("skills/retry.py", "def retry() -> None:\n    pass\n")
    repo.skill("skills/dropped", "A skill the curator removes.")
    repo.write("LICENSE", "MIT License\n\nPermission is hereby granted, free of charge, to any person\n")
    repo.commit("first")
    return repo


@pytest.fixture
def library(tmp_path: Path, repo: Repo) -> Path:
    """A library of a git source (one skill removed from it) and an archive beside it."""
    root = tmp_path / "library"
    root.mkdir()
    add(root, repo.url, name="team", path="skills")
    with open_shelf(root) as shelf:
        shelf.remove("team/dropped")
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    packed = make_zip(vendor / "triage.skill", {"triage/SKILL.md": skill_md("triage", "Triage bug reports.")})
    add(root, str(packed))
    return root


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def clone_lock(library: Path, tmp_path: Path) -> Path:
    """Another machine: a root beside the first holding nothing but the lock."""
    clone = tmp_path / "clone"
    clone.mkdir()
    shutil.copy2(library / "skillshelf.lock", clone / "skillshelf.lock")
    return clone


def test_sync_onto_an_empty_root_gives_a_byte_identical_library(library: Path, tmp_path: Path) -> None:
    clone = clone_lock(library, tmp_path)
    code, output = run("sync", "--library", str(clone))
    assert code == 0, output
    assert "team: installed (2 skills)" in output and "triage: installed (1 skill)" in output
    original, copied = tree_of(library), tree_of(clone)
    assert copied == original  # bytes, modes, links and the lock itself
    assert copied["team/pdf-fill/scripts/fill.py"][1] == 0o755
    assert copied["team/pdf-fill/references/latest.md"] == ("link", 0, b"guide.md")
    assert "team/dropped" not in copied and staging_left(clone) == []
    code, output = run("sync", "--library", str(clone))
    assert code == 0 and "team: as locked" in output and tree_of(clone) == original


def test_sync_reports_local_edits_and_keeps_them_unless_forced(library: Path) -> None:
    edited = library / "team" / "pdf-fill" / "SKILL.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nOur note.\n", encoding="utf-8")
    (library / "team" / "retry.md").unlink()
    (library / "team" / "mine").mkdir()
    (library / "team" / "mine" / "SKILL.md").write_text(skill_md("mine", "Ours."), encoding="utf-8")
    code, output = run("sync", "--library", str(library))
    assert code == 0
    assert "local edit: team/pdf-fill (modified here since install)" in output
    assert "local edit: team/mine (added here)" in output and "sync --force" in output
    assert "Our note." in edited.read_text(encoding="utf-8")  # kept
    assert (library / "team" / "retry.md").is_file()  # a deleted skill is installed again: nothing to overwrite
    assert (library / "team" / "mine" / "SKILL.md").is_file()
    code, output = run("sync", "--force", "--library", str(library))
    assert code == 0 and "Our note." not in edited.read_text(encoding="utf-8")
    assert not (library / "team" / "mine").exists()
    with open_shelf(library) as shelf:
        assert all(not status.local_edits for status in shelf.status())


def test_a_lock_that_does_not_match_its_source_is_refused_and_nothing_changes(library: Path, tmp_path: Path) -> None:
    lock = read_lock(library / "skillshelf.lock")
    team = lock.sources["team"]
    tampered = replace(team.skills[0], digest="sha256:" + "0" * 64)
    write_lock(library / "skillshelf.lock", lock.with_source(replace(team, skills=(tampered, *team.skills[1:]))))
    clone = clone_lock(library, tmp_path)
    code, output = run("sync", "--library", str(clone))
    assert code == 1 and "team: not synced, left as it was" in output
    assert "does not give what the lock says" in output and "team/pdf-fill" in output
    assert not (clone / "team").exists() and staging_left(clone) == []
    assert "triage: installed" in output and (clone / "triage" / "triage" / "SKILL.md").is_file()


def test_an_archive_that_changed_since_it_was_locked_is_refused(library: Path, tmp_path: Path) -> None:
    make_zip(tmp_path / "vendor" / "triage.skill", {"triage/SKILL.md": skill_md("triage", "Something else now.")})
    shutil.rmtree(library / "triage")
    with open_shelf(library) as shelf:
        failed = {o.source: o for o in shelf.sync()}["triage"]
    assert failed.action == "failed" and "no longer what the lock pinned" in failed.warnings[0]
    assert "skillshelf update triage" in failed.warnings[0] and not (library / "triage").exists()


def test_a_source_the_lock_no_longer_has_is_removed_by_sync(library: Path, tmp_path: Path) -> None:
    teammate = tmp_path / "teammate"
    teammate.mkdir()
    shutil.copy2(library / "skillshelf.lock", teammate / "skillshelf.lock")
    with open_shelf(teammate) as shelf:
        shelf.sync()
        shelf.remove("triage")
    shutil.copy2(teammate / "skillshelf.lock", library / "skillshelf.lock")  # a pull brings their lock
    code, output = run("sync", "--library", str(library))
    assert code == 0 and "triage: removed (no longer in the lock)" in output
    assert not (library / "triage").exists() and tree_of(library) == tree_of(teammate)


def test_sync_without_a_lock_says_how_to_start(tmp_path: Path) -> None:
    code, output = run("sync", "--library", str(tmp_path))
    assert code == 1 and "no skillshelf.lock" in output and "add a source first" in output


def test_the_installed_files_modes_do_not_depend_on_the_umask(repo: Repo, tmp_path: Path) -> None:
    import os

    root = tmp_path / "strict"
    root.mkdir()
    previous = os.umask(0o077)
    try:
        add(root, repo.url, name="team", path="skills")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((root / "team" / "pdf-fill" / "SKILL.md").stat().st_mode) == 0o644
    assert stat.S_IMODE((root / "team" / "pdf-fill").stat().st_mode) == 0o755
