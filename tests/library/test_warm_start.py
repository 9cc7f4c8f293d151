"""A restart over an index an earlier run completed answers at once, while a quiet re-check brings in
what changed meanwhile; an interrupted, new or rebuilt index still makes the first read wait."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index import sync as skill_sync
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import SCHEMA_VERSION, SearchFilters, SkillIndex
from skillshelf.skills import service
from tests.conftest import agent_skill, deadline, wait_until


def make_library(root: Path, index_dir: Path) -> SkillLibrary:
    return SkillLibrary(LibraryConfig(roots=[root], index_dir=index_dir, watch=False))


@pytest.fixture
def root(tmp_path: Path) -> Path:
    lib = tmp_path / "library"
    for i in range(4):
        agent_skill(lib, "tools", f"tool-{i}", f"name: tool-{i}\ndescription: Widget tool number {i}.")
    return lib


@pytest.fixture
def held_parse(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """Parsing waits until the event is set: a sync that has work to do stays under way."""
    release = threading.Event()
    real_parse = skill_sync.parse_sources

    def waiting_parse(sources: list[Any], max_bytes: int) -> Iterator[Any]:
        assert release.wait(deadline())
        yield from real_parse(sources, max_bytes)

    monkeypatch.setattr(skill_sync, "parse_sources", waiting_parse)
    yield release
    release.set()


def ids(library: SkillLibrary, query: str) -> list[str]:
    return [s.id for s in library.search(query, SearchFilters(), 10)]


def test_a_restart_answers_from_the_complete_index_while_the_recheck_runs(
    root: Path, tmp_path: Path, held_parse: threading.Event
) -> None:
    held_parse.set()
    with make_library(root, tmp_path / "idx").opened():
        pass  # an earlier run: a complete index
    held_parse.clear()
    changed = root / "tools" / "tool-1" / "SKILL.md"
    changed.write_text("---\nname: tool-1\ndescription: Gizmo polisher.\n---\n# Gizmo\n\nPolish.\n", encoding="utf-8")
    library = make_library(root, tmp_path / "idx")
    try:
        library.start()
        assert not library.needs_sync()  # reads do not wait, though the re-check is held mid-sync
        assert len(ids(library, "widget tool")) == 4  # the last run's index, at once
        assert (
            "Polish." in service.load_for_agent(LibraryReader(library), "tools/tool-1").documentation
        )  # files: never stale
        held_parse.set()
        wait_until(  # the re-check brings the change in
            lambda: ids(library, "gizmo polisher") == ["tools/tool-1"], "the re-check never brought the change in"
        )
    finally:
        library.close()


def test_a_build_that_was_interrupted_makes_the_next_start_wait(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, held_parse: threading.Event
) -> None:
    held_parse.set()
    with make_library(root, tmp_path / "idx").opened():
        pass  # an earlier run: a complete index of 4 skills
    for i in range(4, 8):
        agent_skill(root, "tools", f"tool-{i}", f"name: tool-{i}\ndescription: Widget tool number {i}.")
    monkeypatch.setattr(skill_sync, "WRITE_BATCH", 2)
    real_apply = SkillIndex.apply

    def killed_after_six(self: SkillIndex, batch: list[Any], removed: list[str]) -> None:
        if batch and self.count() >= 6:
            raise sqlite3.OperationalError("disk I/O error")  # the run ends here, half way through
        real_apply(self, batch, removed)

    monkeypatch.setattr(SkillIndex, "apply", killed_after_six)
    second = make_library(root, tmp_path / "idx")
    with pytest.raises(sqlite3.OperationalError):
        second.sync()
    assert second.index.count() == 6
    second.close()
    monkeypatch.setattr(SkillIndex, "apply", real_apply)
    held_parse.clear()
    library = make_library(root, tmp_path / "idx")
    try:
        library.start()
        assert library.needs_sync()  # half a sync is not answered from: the first read waits
        held_parse.set()
        assert len(ids(library, "widget tool")) == 8
    finally:
        library.close()


def test_a_new_index_waits_even_beside_the_marker_earlier_versions_kept(
    root: Path, tmp_path: Path, held_parse: threading.Event
) -> None:
    held_parse.set()
    with make_library(root, tmp_path / "idx").opened() as earlier:
        index_path = earlier.index_path
    marker = index_path.with_name(index_path.name + ".complete")
    marker.touch()  # earlier versions said "complete" with this file beside the index
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index_path}{suffix}").unlink(missing_ok=True)  # the index is gone; the marker stayed
    held_parse.clear()
    library = make_library(root, tmp_path / "idx")
    try:
        library.start()
        assert library.index.created and library.needs_sync()
        held_parse.set()
        assert len(ids(library, "widget tool")) == 4
        assert library.index.is_complete() and not marker.exists()  # the file says it now; the marker is gone
    finally:
        library.close()


def test_an_index_another_server_has_just_reset_makes_the_first_read_wait(
    root: Path, tmp_path: Path, held_parse: threading.Event
) -> None:
    """A schema change empties the file in place: a second server that opens it after the first one reset it
    must not take it for the complete index it was (the same file, beside the same folder)."""
    held_parse.set()
    with make_library(root, tmp_path / "idx").opened() as earlier:
        index_path = earlier.index_path
    with closing(sqlite3.connect(index_path)) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")  # as an older version left it
    held_parse.clear()
    first = make_library(root, tmp_path / "idx")  # resets the tables
    second = make_library(root, tmp_path / "idx")  # opens the file the first one has just reset
    try:
        assert first.index.created and not second.index.created
        first.start()
        second.start()
        assert first.needs_sync() and second.needs_sync()
        held_parse.set()
        assert len(ids(second, "widget tool")) == 4 and len(ids(first, "widget tool")) == 4
    finally:
        first.close()
        second.close()


def test_an_index_that_does_not_record_being_whole_waits_once_then_answers_at_once(root: Path, tmp_path: Path) -> None:
    """Files written before the index kept its state (or whose state was lost): one start waits for a sync,
    which records it; the next start answers at once."""
    with make_library(root, tmp_path / "idx").opened() as earlier:
        index_path = earlier.index_path
    with closing(sqlite3.connect(index_path)) as conn, conn:
        conn.execute("DROP TABLE index_state")
    for expected_wait in (True, False):
        library = make_library(root, tmp_path / "idx")
        try:
            with library.syncing._sync_lock:  # no sync can end before the start's choice is read
                library.start()
                assert library.needs_sync() is expected_wait
            assert len(ids(library, "widget tool")) == 4
        finally:
            library.close()
