"""Usage is an annotation: when its file is locked or damaged, every tool but recording keeps working."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.usage.store import USAGE_FILE, UsageStore
from skillshelf.server.app import build_server
from skillshelf.settings import ExecutionSettings, Settings
from tests.conftest import call, three_file
from tests.library.test_usage import damage_pages, filled_store, lock_held_by_another_process

pytestmark = pytest.mark.anyio

READS: list[tuple[str, dict[str, Any]]] = [
    ("searchPatterns", {"query": "slugify"}),
    ("loadSkill", {"skillId": "python/slugify"}),
    ("getLibraryStats", {}),
    ("getPatternReuse", {"patternId": "python/slugify"}),
]


@pytest.fixture
async def served(sample_root: Path, tmp_path: Path) -> AsyncIterator[tuple[Client, Path]]:
    three_file(
        sample_root,
        "python",
        "echo",
        "# Echo\n\nEcho the text back.\n",
        code="def echo(text: str) -> dict:\n    return {'echo': text}\n",
    )
    index_dir = tmp_path / "idx"
    config = LibraryConfig(roots=[sample_root], index_dir=index_dir, watch=False, usage_busy_timeout=0.1)
    library = SkillLibrary(config)
    settings = Settings(roots=[sample_root], execution=ExecutionSettings(enabled=True, timeout_s=20))
    try:
        async with Client(build_server(settings, library, view="full"), raise_exceptions=True) as client:
            yield client, index_dir / USAGE_FILE
    finally:
        library.close()


async def test_a_locked_usage_file_degrades_reads_fails_recording_clearly_and_keeps_its_data(
    served: tuple[Client, Path],
) -> None:
    client, usage_path = served
    usage_path.parent.mkdir(parents=True, exist_ok=True)
    filled_store(usage_path, events=1)  # one use of cat/skill-0, from another server
    with lock_held_by_another_process(usage_path):
        for tool, arguments in READS:
            is_error, body = await call(client, tool, arguments)
            assert not is_error, (tool, body)
            assert any("Usage history" in w and "locked" in w for w in body["data"]["warnings"]), tool
        is_error, body = await call(client, "trackPatternUsage", {"patternId": "python/slugify"})
        assert is_error and body["error"]["code"] == "FILESYSTEM_ERROR"
        is_error, body = await call(client, "executeSkill", {"skillId": "python/echo", "input": {"text": "hi"}})
        assert not is_error and body["data"]["output"] == {"echo": "hi"}  # the run's output is not lost
    is_error, body = await call(client, "trackPatternUsage", {"patternId": "python/slugify", "projectPath": "p2"})
    assert not is_error and body["data"]["uses"] == 1  # the lock is gone: the same file is used again
    is_error, body = await call(client, "getPatternReuse", {})
    assert {p["patternId"]: p["uses"] for p in body["data"]["patterns"]} == {"python/slugify": 1}
    store = UsageStore(usage_path)
    try:
        assert [u.skill_id for u in store.usage()] == ["cat/skill-0", "python/slugify"]
    finally:
        store.close()
    assert not [p for p in usage_path.parent.iterdir() if ".damaged-" in p.name]


async def test_a_damaged_usage_file_is_left_as_it_is_reads_warn_and_recording_is_refused(
    sample_root: Path, tmp_path: Path
) -> None:
    index_dir = tmp_path / "idx"
    usage_path = index_dir / USAGE_FILE
    index_dir.mkdir()
    filled_store(usage_path)
    damage_pages(usage_path)
    damaged = usage_path.read_bytes()
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=index_dir, watch=False))
    try:
        server = build_server(Settings(roots=[sample_root]), library, view="full")
        async with Client(server, raise_exceptions=True) as client:
            for tool, arguments in READS:
                is_error, body = await call(client, tool, arguments)
                assert not is_error, (tool, body)
                assert any("is damaged" in w for w in body["data"]["warnings"]), tool
            is_error, body = await call(client, "trackPatternUsage", {"patternId": "python/slugify"})
            assert is_error and body["error"]["code"] == "FILESYSTEM_ERROR"
            assert "move usage.sqlite3" in body["error"]["message"]
    finally:
        library.close()
    assert usage_path.read_bytes() == damaged  # never replaced, moved or written
