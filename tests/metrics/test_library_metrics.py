"""getLibraryStats and getPatternReuse through a real in-process client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.settings import Settings
from tests.conftest import write

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(sample_root: Path, tmp_path: Path) -> AsyncIterator[Client]:
    write(sample_root / "python" / "broken" / "SKILL.md", "---\nname: broken\ndescription: [x\n---\n# B\n")
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    try:
        async with Client(build_server(Settings(roots=[sample_root]), library, view="full")) as connected:
            yield connected
    finally:
        library.close()


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None and not result.is_error, result.structured_content
    data: dict[str, Any] = result.structured_content["data"]
    return data


async def test_library_stats_describe_the_library(client: Client) -> None:
    await call(client, "trackPatternUsage", {"patternId": "python/slugify", "projectPath": "a"})
    stats = await call(client, "getLibraryStats", {})
    assert stats["skills"] == 5
    assert {"category": "git", "threeFile": 0, "agentSkills": 1} in stats["categories"]
    assert sum(stats["qualityHistogram"].values()) == 5 and stats["qualityHistogram"]["8-9"] == 1
    assert stats["mostUsed"] == [{"id": "python/slugify", "uses": 1, "projects": 1}]
    assert stats["neverUsedCount"] == 4 and stats["neverUsed"][0] == "database/rls-policy"
    assert stats["largest"][0]["tokens"] >= stats["largest"][-1]["tokens"]
    assert stats["loadTokensTotal"] == sum(s["tokens"] for s in stats["largest"])
    assert stats["findingsBySeverity"]["error"] >= 1 and stats["findingsByCode"]["frontmatter-invalid-yaml"] == 1


async def test_reuse_reports_counts_projects_and_sorts(client: Client) -> None:
    for skill, project in [("python/slugify", "a"), ("python/slugify", "b"), ("git/release-notes", "a")]:
        await call(client, "trackPatternUsage", {"patternId": skill, "projectPath": project})
    report = await call(client, "getPatternReuse", {})
    assert [(p["patternId"], p["reuseCount"], p["projects"]) for p in report["patterns"]] == [
        ("python/slugify", 2, ["a", "b"]),
        ("git/release-notes", 1, ["a"]),
    ]
    recent = await call(client, "getPatternReuse", {"sortBy": "recent"})
    assert recent["patterns"][0]["patternId"] == "git/release-notes"
    by_category = await call(client, "getPatternReuse", {"sortBy": "category", "minReuse": 2})
    assert [p["patternId"] for p in by_category["patterns"]] == ["python/slugify"]
    one = await call(client, "getPatternReuse", {"patternId": "database/rls-policy"})
    assert one["patterns"][0]["reuseCount"] == 0 and one["patterns"][0]["verified"] is False


@dataclass(frozen=True)
class SessionMention:
    project: str
    session_id: str
    date: str | None


async def test_reuse_counts_sessions_that_mention_a_skill(sample_root: Path, tmp_path: Path) -> None:
    def mentions(ids: list[str]) -> dict[str, list[SessionMention]]:
        found = [SessionMention("shop", "2025-11-05-auth", "2025-11-05"), SessionMention("blog", "s1", None)]
        return {"python/slugify": found} if "python/slugify" in ids else {}

    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    try:
        library.sync()
        from skillshelf.metrics.reuse import pattern_reuse

        report = pattern_reuse(LibraryReader(library), "python/slugify", mentions=mentions)
        (row,) = report.patterns
        assert (row.reuse_count, row.session_mentions, row.projects) == (2, 2, ["blog", "shop"])
        assert row.first_used == row.last_used == "2025-11-05"
    finally:
        library.close()


async def test_reuse_over_mcp_counts_sessions_in_the_artifacts(sample_root: Path, tmp_path: Path) -> None:
    from skillshelf.artifacts.archive import SessionArchive
    from skillshelf.projects import ProjectRoots

    write(
        tmp_path / "dev" / "shop" / ".agent-artifacts" / "2025-11-05-auth" / "session-summary.md",
        "# Auth\n\nUsed python/slugify for user handles.\n",
    )
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    archive = SessionArchive(ProjectRoots.of([tmp_path / "dev"]), index_dir=tmp_path / "aidx", watch=False)
    try:
        settings = Settings(roots=[sample_root], project_roots=[tmp_path / "dev"])
        async with Client(build_server(settings, library, archive, view="full")) as client:
            await call(client, "trackPatternUsage", {"patternId": "python/slugify", "projectPath": "blog"})
            report = await call(client, "getPatternReuse", {"patternId": "python/slugify"})
    finally:
        library.close()
        archive.close()
    (row,) = report["patterns"]
    assert (row["uses"], row["sessionMentions"], row["reuseCount"]) == (1, 1, 2)
    assert row["projects"] == ["blog", "shop"]
