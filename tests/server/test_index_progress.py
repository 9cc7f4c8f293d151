"""A call that waits on the first index of a library gets MCP progress notifications while it waits
(when the client asked for progress), then its answer."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from skillshelf.library.index import sync as skill_sync
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.settings import Settings
from tests.conftest import agent_skill, deadline

pytestmark = pytest.mark.anyio

SKILLS = 24


async def test_a_search_waiting_on_the_first_index_reports_its_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "library"
    for i in range(SKILLS):
        agent_skill(root, "tools", f"gadget-{i}", f"name: gadget-{i}\ndescription: Gadget helper number {i}.")
    real_parse = skill_sync.parse_sources
    progress_seen = threading.Event()

    def held_parse(sources: list[Any], max_bytes: int) -> Iterator[Any]:
        """A large library, in miniature: half-way, the build waits until the waiting call reported."""
        for number, parsed in enumerate(real_parse(sources, max_bytes)):
            if number == SKILLS // 2:
                progress_seen.wait(deadline())
            yield parsed

    monkeypatch.setattr(skill_sync, "parse_sources", held_parse)
    monkeypatch.setattr(skill_sync, "WRITE_BATCH", 2)
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    reported: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total, message))
        progress_seen.set()

    try:
        async with Client(build_server(Settings(roots=[root]), library, view="full")) as client:
            result = await client.call_tool("searchPatterns", {"query": "gadget helper"}, progress_callback=on_progress)
    finally:
        library.close()
    assert result.structured_content is not None and result.structured_content["success"]
    assert len(result.structured_content["data"]["hits"]) > 0
    assert reported, "no progress while the call waited on the index"
    assert all(total == SKILLS for _, total, _ in reported)
    done = [progress for progress, _, _ in reported]
    assert done == sorted(done) and done[-1] <= SKILLS
    assert "indexing the library" in (reported[0][2] or "")
