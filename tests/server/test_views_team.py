"""Views and the team layer together: each view's server carries its own composites and hooks, a
composite can only call what its view shows, and a config reload keeps the composites."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from skillshelf.artifacts.archive import SessionArchive
from skillshelf.config.composites import CompositeTool
from skillshelf.config.views import FilterRule, ViewSettings
from skillshelf.errors import SkillshelfError
from skillshelf.library.index.library import SkillLibrary
from skillshelf.projects import ProjectRoots
from skillshelf.server.app import build_view_servers
from skillshelf.settings import Settings
from tests.conftest import call

pytestmark = pytest.mark.anyio

FIND_AND_LOAD = CompositeTool.model_validate(
    {
        "inputs": {"query": {"type": "string"}},
        "chain": [
            {"name": "search", "tool": "searchPatterns", "arguments": {"query": "{inputs.query}"}},
            {"name": "load", "tool": "loadSkill", "arguments": {"skillId": "{steps.search.data.hits.0.id}"}},
        ],
    }
)


def team_view(composites: dict[str, CompositeTool]) -> ViewSettings:
    return ViewSettings(
        description="search and load only",
        tools=[FilterRule(include="searchPatterns"), FilterRule(include="loadSkill")],
        composites=composites,
    )


async def test_a_views_composite_is_served_by_that_view_alone(
    sample_root: Path, sample_library: SkillLibrary, tmp_path: Path
) -> None:
    settings = Settings(roots=[sample_root], views={"team": team_view({"findAndLoad": FIND_AND_LOAD})})
    archive = SessionArchive(ProjectRoots.of([tmp_path / "projects"]), watch=False)
    try:
        servers = build_view_servers(settings, sample_library, archive)
        assert {"team", "agent", "full", "memory", "curator", "default"} <= set(servers)
        async with Client(servers["team"]) as team:
            names = {t.name for t in (await team.list_tools()).tools}
            assert names == {"searchPatterns", "loadSkill", "findAndLoad"}
            is_error, envelope = await call(team, "findAndLoad", {"query": "slugify"})
            assert not is_error and envelope["data"]["result"]["id"] == "python/slugify"
            hidden, refused = await call(team, "addNote", {"projectPath": "x", "type": "general", "content": "y"})
            assert hidden and refused["error"]["code"] == "TOOL_NOT_AVAILABLE"
        async with Client(servers["full"]) as full:
            assert "findAndLoad" not in {t.name for t in (await full.list_tools()).tools}
    finally:
        archive.close()


async def test_a_composite_may_not_call_a_tool_its_view_hides(
    sample_root: Path, sample_library: SkillLibrary, tmp_path: Path
) -> None:
    note = {"tool": "addNote", "arguments": {"projectPath": "x", "type": "general", "content": "y"}}
    sneaky = CompositeTool.model_validate({"parallel": {"note": note}})
    settings = Settings(roots=[sample_root], views={"team": team_view({"sneaky": sneaky})})
    archive = SessionArchive(ProjectRoots.of([tmp_path / "projects"]), watch=False)
    try:
        with pytest.raises(SkillshelfError) as refused:
            build_view_servers(settings, sample_library, archive)
        assert "addNote" in refused.value.message
    finally:
        archive.close()
