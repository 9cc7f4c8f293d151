"""Hostile or broken input through the tools: clear errors, bounded work, nothing served it should not."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.settings import Settings
from tests.conftest import call, write
from tests.library.test_parsing import ALIAS_BOMB

pytestmark = pytest.mark.anyio
LONG = "x" * 260


@pytest.fixture
async def served(sample_root: Path, tmp_path: Path) -> AsyncIterator[tuple[Client, SkillLibrary, Path]]:
    (tmp_path / "dev" / "app").mkdir(parents=True)
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    settings = Settings(roots=[sample_root], project_roots=[tmp_path / "dev"])
    try:
        async with Client(build_server(settings, library, view="full"), raise_exceptions=True) as client:
            yield client, library, sample_root
    finally:
        library.close()


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("addNote", {"projectPath": LONG, "type": "general", "content": "x"}),
        ("getNotes", {"projectPath": f"app/{LONG}"}),
        ("searchArtifacts", {"query": "a", "project": LONG}),
        ("loadSession", {"project": LONG, "sessionId": "s"}),
        ("getCompressionRatio", {"project": LONG}),
    ],
)
async def test_a_path_component_over_255_characters_is_a_validation_error(
    served: tuple[Client, SkillLibrary, Path], tool: str, arguments: dict[str, Any]
) -> None:
    is_error, body = await call(served[0], tool, arguments)
    assert is_error and body["error"]["code"] == "VALIDATION_ERROR", body
    assert "255" in body["error"]["message"]


async def test_get_pattern_reuse_caps_the_pattern_id(served: tuple[Client, SkillLibrary, Path]) -> None:
    is_error, body = await call(served[0], "getPatternReuse", {"patternId": "x" * 100_000})
    assert is_error and body["error"]["code"] == "VALIDATION_ERROR"
    assert len(body["error"]["message"]) < 500


async def test_a_symlink_to_a_dot_file_inside_the_library_is_not_served(
    served: tuple[Client, SkillLibrary, Path],
) -> None:
    client, library, root = served
    write(root / ".git" / "config", '[remote "origin"]\n  url = https://user:SECRET-TOKEN@example.com/x.git\n')
    references = root / "git" / "release-notes" / "references"
    references.mkdir(parents=True)
    (references / "config.md").symlink_to(root / ".git" / "config")
    library.mark_dirty()
    is_error, body = await call(
        client, "readSkillFile", {"skillId": "git/release-notes", "path": "references/config.md"}
    )
    assert is_error and "SECRET-TOKEN" not in str(body)
    _, loaded = await call(client, "loadSkill", {"skillId": "git/release-notes"})
    assert "references/config.md" not in loaded["data"]["metadata"]["resources"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
async def test_a_fifo_in_place_of_a_skill_file_is_reported_not_opened(
    served: tuple[Client, SkillLibrary, Path],
) -> None:
    client, library, root = served
    library.sync()
    doc = root / "python" / "slugify.md"
    doc.unlink()
    os.mkfifo(doc)  # swapped in after indexing: the load must not wait for a writer
    is_error, body = await call(client, "loadSkill", {"skillId": "python/slugify"})
    assert is_error and body["error"]["code"] == "FILESYSTEM_ERROR"
    library.sync()
    _, checked = await call(client, "getLibraryStats", {})
    assert "file-not-regular" in checked["data"]["findingsByCode"]


async def test_a_yaml_alias_bomb_loads_small_and_fast(served: tuple[Client, SkillLibrary, Path]) -> None:
    client, library, root = served
    write(root / "cat" / "bomb" / "SKILL.md", ALIAS_BOMB)
    library.mark_dirty()
    is_error, body = await call(client, "loadSkill", {"skillId": "cat/bomb", "includeMetadata": True})
    assert not is_error
    assert body["metadata"]["tokensUsed"] < 2000
    assert "frontmatter-alias-bomb" in {f["code"] for f in body["data"]["metadata"]["findings"]}
