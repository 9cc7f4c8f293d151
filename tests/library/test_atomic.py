"""The one atomic writer (library/atomic.py): every file skillshelf writes whole is flushed to disk before it
replaces the old one, keeps the old one's permissions unless told, and leaves nothing behind when it fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.atomic import write_atomically


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The descriptors os.fsync was called with (still synced)."""
    calls: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def test_adding_a_token_flushes_the_config_file_to_disk_before_replacing_it(tmp_path: Path, synced: list[int]) -> None:
    """It was the one writer without fsync: a crash after the rename could leave an empty config file."""
    config = tmp_path / "config.toml"
    config.write_text('library = ["~/skills"]\n', encoding="utf-8")
    config.chmod(0o640)
    result = CliRunner().invoke(cli, ["--config", str(config), "token", "new", "alice"])
    assert result.exit_code == 0, result.output
    assert synced, "the config file was renamed into place without being flushed"
    assert config.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]


def test_a_new_file_gets_the_mode_asked_for_and_an_old_one_keeps_its_own(tmp_path: Path, synced: list[int]) -> None:
    fresh, kept = tmp_path / "fresh.txt", tmp_path / "kept.txt"
    write_atomically(fresh, "one\n", new_mode=0o600)
    kept.write_text("old", encoding="utf-8")
    kept.chmod(0o604)
    write_atomically(kept, b"new")
    assert (fresh.stat().st_mode & 0o777, kept.stat().st_mode & 0o777) == (0o600, 0o604)
    assert kept.read_bytes() == b"new" and len(synced) >= 2


def test_without_replace_an_existing_file_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    target = tmp_path / "SKILL.md"
    target.write_text("mine", encoding="utf-8")
    with pytest.raises(FileExistsError):
        write_atomically(target, "theirs", replace=False)
    assert target.read_text(encoding="utf-8") == "mine"
    assert [p.name for p in tmp_path.iterdir()] == ["SKILL.md"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    target = tmp_path / "folder"
    target.mkdir()
    with pytest.raises(OSError):
        write_atomically(target, "a file cannot replace a folder")
    assert target.is_dir() and [p.name for p in tmp_path.iterdir()] == ["folder"]
