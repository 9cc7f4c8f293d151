"""Views through a real in-process client: the tools and skills each view shows, and nothing else."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError, types

from skillshelf.config.views import AGENT_TOOLS, CURATOR_TOOLS, MEMORY_TOOLS, FilterRule, ToolOverride, ViewSettings
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.server.views import served_tools
from skillshelf.server.web import WebAccess
from skillshelf.settings import ExecutionSettings, Settings
from tests.conftest import call
from tests.server.test_skills_ext import all_skills, request

pytestmark = pytest.mark.anyio

HIDDEN = "python/slugify"
SHOWN = "python/retry-backoff"


@pytest.fixture
def library(sample_root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    shelf = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    yield shelf
    shelf.close()


@asynccontextmanager
async def serve(
    library: SkillLibrary, view: str | None, views: dict[str, ViewSettings] | None = None, execution: bool = False
) -> AsyncIterator[Client]:
    settings = Settings(roots=library.roots, views=views or {}, execution=ExecutionSettings(enabled=execution))
    async with Client(build_server(settings, library, view=view), raise_exceptions=True) as client:
        yield client


async def tool_names(client: Client) -> list[str]:
    return sorted(t.name for t in (await client.list_tools()).tools)


# -- the contract of each built-in view ----------------------------------------------------------
BUILTIN = {
    "agent": sorted(AGENT_TOOLS),
    "default": sorted(AGENT_TOOLS),
    "memory": sorted(MEMORY_TOOLS),
    "curator": sorted(CURATOR_TOOLS),
}


@pytest.mark.parametrize("view", sorted(BUILTIN))
async def test_each_builtin_view_lists_exactly_its_tools(library: SkillLibrary, view: str) -> None:
    async with serve(library, view) as client:
        assert await tool_names(client) == BUILTIN[view]


async def test_pinned_builtin_tool_names() -> None:
    assert AGENT_TOOLS == ("searchPatterns", "loadSkill", "readSkillFile", "trackPatternUsage")
    assert "executeSkill" not in MEMORY_TOOLS + CURATOR_TOOLS


async def test_the_agent_view_runs_skills_only_where_execution_is_enabled(library: SkillLibrary) -> None:
    async with serve(library, "agent", execution=True) as client:
        assert await tool_names(client) == sorted([*AGENT_TOOLS, "executeSkill"])


async def test_full_lists_every_tool_with_output_schemas(library: SkillLibrary) -> None:
    async with serve(library, "full") as client:
        tools = (await client.list_tools()).tools
        assert len(tools) == 17 and all(t.output_schema is not None for t in tools)


async def test_no_view_serves_the_settings_view(library: SkillLibrary) -> None:
    settings = Settings(roots=library.roots, view="curator")
    async with Client(build_server(settings, library), raise_exceptions=True) as client:  # before: every tool
        assert await tool_names(client) == sorted(CURATOR_TOOLS)


async def test_other_views_send_no_output_schema_but_keep_structured_content(library: SkillLibrary) -> None:
    async with serve(library, "agent") as client:
        assert all(t.output_schema is None for t in (await client.list_tools()).tools)
        is_error, body = await call(client, "searchPatterns", {"query": "retry"})
        assert not is_error and body["success"] is True


async def test_a_configured_default_view_replaces_the_builtin_default(library: SkillLibrary) -> None:
    views = {"default": ViewSettings(tools=[FilterRule(include="listCategories")])}
    async with serve(library, "default", views) as client:
        assert await tool_names(client) == ["listCategories"]


async def test_an_empty_filter_shows_every_tool_and_every_skill(library: SkillLibrary) -> None:
    async with serve(library, "open", {"open": ViewSettings()}) as client:
        assert len(await tool_names(client)) == 17
        _, body = await call(client, "listCategories", {})
        assert sum(c["skills"] for c in body["data"]["categories"]) == 4


async def test_an_unknown_view_is_refused_with_the_names_of_those_that_exist(library: SkillLibrary) -> None:
    with pytest.raises(Exception, match="no view 'nope'; views: agent, curator, default, full, memory"):
        build_server(Settings(roots=library.roots), library, view="nope")


# -- hidden tools --------------------------------------------------------------------------------
async def test_a_hidden_tool_is_unlisted_and_a_call_says_it_is_not_available(library: SkillLibrary) -> None:
    async with serve(library, "agent") as client:
        assert "getLibraryStats" not in await tool_names(client)
        is_error, body = await call(client, "getLibraryStats", {})
        assert is_error and body["error"]["code"] == "TOOL_NOT_AVAILABLE"
        assert "not available in this view ('agent')" in body["error"]["message"]


# -- hidden skills: unreachable by any tool, resource or extension method ---------------------------
HIDE = {"v": ViewSettings(skills=[FilterRule(exclude=HIDDEN)])}


async def assert_like_unknown(client: Client, tool: str, arguments: dict[str, Any], key: str) -> None:
    _, hidden = await call(client, tool, {**arguments, key: HIDDEN})
    _, unknown = await call(client, tool, {**arguments, key: "python/no-such-skill"})
    assert hidden["success"] is False and hidden["error"]["code"] == unknown["error"]["code"] == "PATTERN_NOT_FOUND"
    assert hidden["error"]["message"] == unknown["error"]["message"].replace("python/no-such-skill", HIDDEN)
    assert HIDDEN not in json.dumps(hidden["error"].get("suggestions") or [])


async def test_a_hidden_skill_is_unreachable_by_every_tool(library: SkillLibrary) -> None:
    async with serve(library, "v", HIDE, execution=True) as client:
        for query in ("slugify", "", "python"):
            _, body = await call(client, "searchPatterns", {"query": query, "limit": 50})
            ids = [h["id"] for h in body["data"]["hits"]]
            assert HIDDEN not in ids, query
        _, found = await call(client, "searchPatterns", {"query": "retry backoff"})
        assert found["data"]["hits"][0]["id"] == SHOWN
        await assert_like_unknown(client, "loadSkill", {}, "skillId")
        await assert_like_unknown(client, "readSkillFile", {"path": "SKILL.md"}, "skillId")
        await assert_like_unknown(client, "executeSkill", {"dryRun": True}, "skillId")
        await assert_like_unknown(client, "trackPatternUsage", {}, "patternId")
        await assert_like_unknown(client, "getPatternReuse", {}, "patternId")
        _, categories = await call(client, "listCategories", {})
        python = next(c for c in categories["data"]["categories"] if c["name"] == "python")
        assert python["skills"] == 1
        _, stats = await call(client, "getLibraryStats", {})
        assert stats["data"]["skills"] == 3 and HIDDEN not in json.dumps(stats)
        _, reuse = await call(client, "getPatternReuse", {"minReuse": 0})
        assert HIDDEN not in json.dumps(reuse)


async def test_a_hidden_skill_is_absent_from_resources_and_the_skills_extension(library: SkillLibrary) -> None:
    async with serve(library, "v", HIDE) as client:
        listed = [s["uri"] for s in await all_skills(client)] + [
            r.uri for r in (await client.list_resources()).resources
        ]
        assert not [u for u in listed if "slugify" in u] and any("retry-backoff" in u for u in listed)
        for attempt in (
            request(client, "skills/get", {"uri": f"skill://{HIDDEN}/SKILL.md"}),
            client.read_resource(f"skill://{HIDDEN}/SKILL.md"),
            client.read_resource(f"skill://{HIDDEN}"),
        ):
            with pytest.raises(MCPError) as hidden:
                await attempt
            assert hidden.value.error.code == types.INVALID_PARAMS


async def test_skill_selectors_hide_by_tag_quality_and_layout(library: SkillLibrary) -> None:
    views = {
        "tagged": ViewSettings(skills=[FilterRule(include="tag:postgres")]),
        "good": ViewSettings(skills=[FilterRule(exclude="quality<7")]),
        "folders": ViewSettings(skills=[FilterRule(include="layout:folder")]),
    }
    for view, expected in (("tagged", ["database/rls-policy"]), ("folders", ["git/release-notes"])):
        async with serve(library, view, views) as client:
            _, body = await call(client, "searchPatterns", {"limit": 50})
            assert [h["id"] for h in body["data"]["hits"]] == expected, view
    async with serve(library, "good", views) as client:
        _, body = await call(client, "searchPatterns", {"limit": 50})
        assert body["data"]["hits"] and all(h["quality"] >= 7 for h in body["data"]["hits"])


# -- overrides -----------------------------------------------------------------------------------
OVERRIDES = {
    "team": ViewSettings(
        tools=[FilterRule(include="searchPatterns"), FilterRule(include="loadSkill")],
        overrides={
            "searchPatterns": ToolOverride(
                name="findPythonSkill", description="Python only. {original}", pinned={"category": "python"}
            )
        },
    )
}


async def test_a_renamed_tool_with_a_new_description_and_a_pinned_argument(library: SkillLibrary) -> None:
    async with serve(library, "team", OVERRIDES) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert sorted(tools) == ["findPythonSkill", "loadSkill"]
        find = tools["findPythonSkill"]
        assert find.description is not None and find.description.startswith("Python only. Search the skill library")
        assert "category" not in find.input_schema["properties"]
        _, body = await call(client, "findPythonSkill", {"query": "postgres tenant security"})
        assert all(h["id"].startswith("python/") for h in body["data"]["hits"])  # compact hits: the id says it
        is_error, refused = await call(client, "findPythonSkill", {"query": "x", "category": "database"})
        assert is_error and "'category' is fixed by this view" in refused["error"]["message"]
        is_error, renamed = await call(client, "searchPatterns", {"query": "x"})
        assert is_error and "is called 'findPythonSkill' in this view" in renamed["error"]["message"]
        assert client.instructions is not None and "findPythonSkill with a few words" in client.instructions


async def test_pinning_an_argument_the_tool_does_not_take_is_a_clear_error(library: SkillLibrary) -> None:
    views = {"bad": ViewSettings(overrides={"loadSkill": ToolOverride(pinned={"category": "x"})})}
    with pytest.raises(Exception, match=r"overrides.loadSkill.pinned names \['category'\]"):
        build_server(Settings(roots=library.roots, views=views), library, view="bad")


# -- unknown arguments ---------------------------------------------------------------------------
async def test_unknown_arguments_are_refused_naming_them(library: SkillLibrary) -> None:
    async with serve(library, "full") as client:
        is_error, body = await call(client, "searchPatterns", {"query": "retry", "limt": 3, "other": 1})
        assert is_error and body["error"]["code"] == "VALIDATION_ERROR"
        message = body["error"]["message"]
        assert "Unknown arguments 'limt', 'other'" in message and "Did you mean 'limit' for 'limt'?" in message


async def test_a_call_with_known_arguments_lists_no_schema_names(
    library: SkillLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The names a tool accepts are the tool's, made once: a call checked its arguments against a list of the
    # schema's names built for it, twice (the view's tool, then the SDK tool's runner; issue 36). A pinned
    # argument, set by the pipeline, is accepted; an unknown one is still refused naming it.
    from skillshelf.server import tooling, views

    checked: list[dict[str, Any]] = []
    real = tooling.unknown_arguments

    def counted(arguments: dict[str, Any], schema: dict[str, Any]) -> str | None:
        checked.append(arguments)
        return real(arguments, schema)

    for module in (views, tooling):
        monkeypatch.setattr(module, "unknown_arguments", counted)
    pinned = {"small": ViewSettings(overrides={"searchPatterns": ToolOverride(pinned={"limit": 1})})}
    async with serve(library, "small", pinned) as client:
        is_error, body = await call(client, "searchPatterns", {"query": "retry"})
        assert not is_error and len(body["data"]["hits"]) == 1
        assert not (await call(client, "loadSkill", {"skillId": SHOWN}))[0]
        assert checked == []
        is_error, body = await call(client, "loadSkill", {"skillId": SHOWN, "skilId": SHOWN})
        assert is_error and "Unknown argument 'skilId'" in body["error"]["message"]


# -- search mode ---------------------------------------------------------------------------------
SEARCH = {"all": ViewSettings(exposure="search", tools=[FilterRule(exclude="getLibraryStats")])}


def tokens(tools: list[types.Tool]) -> int:
    wire = [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]
    return len(json.dumps(wire, separators=(",", ":"))) // 4


async def test_search_mode_lists_three_meta_tools_under_600_tokens(library: SkillLibrary) -> None:
    async with serve(library, "all", SEARCH) as client:
        tools = (await client.list_tools()).tools
        assert sorted(t.name for t in tools) == ["all_call_tool", "all_describe_tool", "all_search_tools"]
        assert tokens(tools) < 600


async def test_search_tools_pages_and_ranks(library: SkillLibrary) -> None:
    async with serve(library, "all", SEARCH) as client:
        _, everything = await call(client, "all_search_tools", {"limit": 5})
        assert set(everything["data"]) == {"tools", "total", "offset", "limit"}
        assert everything["data"]["total"] == 16 and len(everything["data"]["tools"]) == 5
        _, notes = await call(client, "all_search_tools", {"query": "project notes", "include_schema": True})
        names = [t["name"] for t in notes["data"]["tools"]]
        assert "getNotes" in names and "inputSchema" in notes["data"]["tools"][0]
        _, hidden = await call(client, "all_search_tools", {"query": "library stats"})
        assert "getLibraryStats" not in [t["name"] for t in hidden["data"]["tools"]]


async def test_call_tool_works_without_a_search_and_suggests_close_names(library: SkillLibrary) -> None:
    async with serve(library, "all", SEARCH) as client:
        _, body = await call(client, "all_call_tool", {"tool_name": "searchPatterns", "arguments": {"query": "retry"}})
        assert body["data"]["hits"][0]["id"] == SHOWN
        _, as_text = await call(
            client, "all_call_tool", {"tool_name": "loadSkill", "arguments": json.dumps({"skillId": SHOWN})}
        )
        assert as_text["success"] is True
        is_error, typo = await call(client, "all_call_tool", {"tool_name": "searchPattern", "arguments": {}})
        assert is_error and typo["error"]["code"] == "TOOL_NOT_AVAILABLE"
        assert typo["error"]["suggestions"][0] == "searchPatterns"
        _, described = await call(client, "all_describe_tool", {"tool_name": "loadSkill"})
        assert {"skillId", "skillIds"} <= set(described["data"]["inputSchema"]["properties"])  # one of them
        _, bad = await call(client, "all_call_tool", {"tool_name": "loadSkill", "arguments": "not json"})
        assert bad["error"]["message"] == "arguments must be a JSON object"


async def test_hidden_and_direct_tools_are_unreachable_in_search_mode(library: SkillLibrary) -> None:
    async with serve(library, "all", SEARCH) as client:
        for name in ("getLibraryStats",):
            _, via_call = await call(client, "all_call_tool", {"tool_name": name})
            _, via_describe = await call(client, "all_describe_tool", {"tool_name": name})
            for body in (via_call, via_describe):
                assert body["error"]["code"] == "TOOL_NOT_AVAILABLE" and "not available in this view" in str(body)
        is_error, direct = await call(client, "searchPatterns", {"query": "retry"})
        assert is_error and "all_call_tool" in direct["error"]["message"]


async def test_prompts_follow_the_view_and_its_names(library: SkillLibrary) -> None:
    async with serve(library, "agent") as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == ["find-skill"]
    async with serve(library, "memory") as client:
        assert [p.name for p in (await client.list_prompts()).prompts] == ["record-decisions"]
    renamed = {
        "r": ViewSettings(overrides={"searchPatterns": ToolOverride(name="findSkill")}, tools=[FilterRule(exclude="x")])
    }
    async with serve(library, "r", renamed) as client:
        prompt = await client.get_prompt("find-skill", {"task": "retry"})
        text = str(prompt.messages[0].content)
        assert "Call findSkill with a few words" in text and "searchPatterns" not in text


async def test_the_web_view_of_a_served_view_hides_its_hidden_skills(library: SkillLibrary) -> None:
    import httpx2
    from starlette.applications import Starlette

    from skillshelf.library.access.reader import ViewReader
    from skillshelf.server.web import web_routes

    library.sync()
    app = Starlette(routes=web_routes(ViewReader(library, [("exclude", HIDDEN)]), WebAccess()))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as web:
        listing = await web.get("/", params={"q": ""})
        assert "retry-backoff" in listing.text and "slugify" not in listing.text
        page = await web.get(f"/skills/{HIDDEN}/")
        unknown = await web.get("/skills/python/no-such-skill/")
        assert page.status_code == unknown.status_code == 404 and "slugify" not in page.text.replace(HIDDEN, "")


async def test_the_sdk_sees_the_views_table_for_headers_and_the_http_listing(library: SkillLibrary) -> None:
    """The SDK checks `Mcp-Param-*` headers against the schema the view serves (renamed, pins removed), and
    `served_tools` (what /views/NAME lists) is what tools/list carries."""
    view = ViewSettings(overrides={"searchPatterns": ToolOverride(name="findSkill", pinned={"limit": 3})})
    server = build_server(Settings(roots=library.roots, views={"v": view}), library, view="v")
    schema_of = server.get_tool_input_schema
    assert schema_of is not None
    found = schema_of("findSkill")
    assert found is not None and "query" in found["properties"] and "limit" not in found["properties"]
    assert schema_of("searchPatterns") is None
    async with Client(server, raise_exceptions=True) as client:
        assert await tool_names(client) == sorted(t.name for t in served_tools(server))
