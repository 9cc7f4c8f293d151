"""A sync that fails half-way (here: the disk refuses the second batch) leaves a partial index:
every answer says so until a retry completes it, and the retry stores what was missing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index import sync as skill_sync
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import SkillIndex
from skillshelf.skills import service
from tests.conftest import agent_skill


def test_a_half_built_index_is_never_reported_as_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "library"
    for i in range(6):
        agent_skill(root, "tools", f"tool-{i}", f"name: tool-{i}\ndescription: Widget tool number {i}.")
    monkeypatch.setattr(skill_sync, "WRITE_BATCH", 2)
    real_apply = SkillIndex.apply

    def full_disk_after_two_skills(self: SkillIndex, batch: list[object], removed: list[str]) -> None:
        if batch and self.count() >= 2:
            raise sqlite3.OperationalError("database or disk is full")
        real_apply(self, batch, removed)  # type: ignore[arg-type]

    monkeypatch.setattr(SkillIndex, "apply", full_disk_after_two_skills)
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    try:
        with pytest.raises(sqlite3.OperationalError):
            library.sync()
        assert library.index.count() == 2
        partial = service.search_patterns(LibraryReader(library), "widget tool")  # retries, fails again, says so
        assert len(partial.hits) == 2
        assert partial.warnings and "may be incomplete" in partial.warnings[0]
        assert "disk is full" in partial.warnings[0]
        assert library.status()["status"] == "degraded"

        monkeypatch.setattr(SkillIndex, "apply", real_apply)  # the disk has room again
        complete = service.search_patterns(LibraryReader(library), "widget tool")
        assert complete.warnings is None
        assert library.index.count() == 6
        assert len(complete.hits) == 6
        assert library.status()["status"] == "healthy"
    finally:
        library.close()
