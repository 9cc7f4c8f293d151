"""The skill tools (server/tools/skills.py) through a real in-process MCP client, in both protocol eras."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.settings import Settings
from tests.conftest import call

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["auto", "legacy"])
async def client(request: pytest.FixtureRequest, sample_root: Path, tmp_path: Path) -> AsyncIterator[Client]:
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    server: Server[Any] = build_server(Settings(roots=[sample_root]), library, view="full")
    try:
        async with Client(server, mode=request.param, raise_exceptions=True) as connected:
            yield connected
    finally:
        library.close()


async def test_search_returns_compact_ranked_hits_in_the_envelope(client: Client) -> None:
    is_error, body = await call(client, "searchPatterns", {"query": "tenant isolation postgres"})
    assert not is_error and body["success"] is True
    hit = body["data"]["hits"][0]
    assert hit == {
        "id": "database/rls-policy",
        "description": "Generate PostgreSQL row level security policies for multi-tenant tables.",
        "quality": 8.5,
        "tokens": hit["tokens"],
        "score": 1.0,
        "executable": True,
    }  # 8.5 but never used: not verified (that takes three projects), so the flag is left out
    assert hit["tokens"] > 0
    assert body["metadata"]["resultsCount"] == len(body["data"]["hits"])
    assert body["metadata"]["tokensUsed"] > 0 and body["metadata"]["durationMs"] >= 0


async def test_detail_restores_the_long_hit(client: Client) -> None:
    _, body = await call(client, "searchPatterns", {"query": "slugify", "detail": True})
    hit = body["data"]["hits"][0]
    assert hit["name"] == "slugify" and hit["category"] == "python" and hit["layout"] == "three-file"
    assert hit["executable"] is False and hit["verified"] is False


async def test_the_seed_keyword_parameter_still_works(client: Client) -> None:
    _, body = await call(client, "searchPatterns", {"keyword": "backoff"})
    assert body["data"]["hits"][0]["id"] == "python/retry-backoff"


async def test_an_empty_query_lists_skills_by_quality_with_filters(client: Client) -> None:
    _, body = await call(client, "searchPatterns", {"includeExecutable": True, "minQuality": 5})
    assert body["data"]["hits"][0]["id"] == "database/rls-policy"
    assert all(h["executable"] for h in body["data"]["hits"])


async def test_an_unknown_category_is_category_invalid_with_the_known_ones(client: Client) -> None:
    is_error, body = await call(client, "searchPatterns", {"query": "x", "category": "nope"})
    assert is_error and body["success"] is False
    assert body["error"]["code"] == "CATEGORY_INVALID"
    assert "database" in body["error"]["message"] and body["metadata"]["tokensUsed"] == 0


async def test_a_call_validates_its_arguments_once(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    # The SDK's Tool.run validates them; a second pass before it cost every call its time again (issue 36).
    passes: list[dict[str, Any]] = []
    validate = FuncMetadata.validate_arguments

    def counted(self: FuncMetadata, arguments: dict[str, Any]) -> dict[str, Any]:
        passes.append(arguments)
        return validate(self, arguments)

    monkeypatch.setattr(FuncMetadata, "validate_arguments", counted)
    is_error, body = await call(client, "loadSkill", {"skillId": "database/rls-policy"})
    assert not is_error and body["success"] is True
    assert passes == [{"skillId": "database/rls-policy"}]


@pytest.mark.parametrize(
    "arguments",
    [{"limit": 0}, {"limit": 51}, {"limit": "many"}, {"minQuality": 11}, {"query": 42}, {"query": "x" * 501}],
)
async def test_invalid_arguments_are_a_validation_error_envelope(client: Client, arguments: dict[str, Any]) -> None:
    is_error, body = await call(client, "searchPatterns", arguments)
    assert is_error and body["error"]["code"] == "VALIDATION_ERROR"
    assert "Invalid arguments" in body["error"]["message"]


async def test_load_skill_returns_docs_and_metadata_but_code_only_on_request(client: Client) -> None:
    _, body = await call(client, "loadSkill", {"skillId": "database/rls-policy"})
    data = body["data"]
    assert data["documentation"].startswith("# Row Level Security Policy")
    assert "code" not in data
    assert data["metadata"]["inputSchema"]["required"] == ["table"]
    assert data["metadata"]["tags"] == ["postgres", "security", "multi-tenant"]
    _, with_code = await call(client, "loadSkill", {"skillId": "database/rls-policy", "includeCode": True})
    (code,) = with_code["data"]["code"]
    assert code["path"] == "rls-policy.py" and code["language"] == "python" and "def rls_policy" in code["content"]


ONE_HOP = "respond_unless_waiting"  # tooling.run_work's one trip to a work thread (none back to the loop between)


async def test_loads_run_in_a_worker_thread_and_a_repeat_answers_without_reading(
    sample_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    readers: list[int] = []
    cached_get = library.files.get

    def observed_get(path: Path, kind: str, load: Callable[[], Any], size: Any = None, stamp: Any = None) -> Any:
        def observed_load() -> Any:
            readers.append(threading.get_ident())
            return load()

        return cached_get(path, kind, observed_load, size, stamp)

    monkeypatch.setattr(library.files, "get", observed_get)
    hops: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def observed_run_sync(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(getattr(func, "func", func), "__name__", "?"))  # a partial names its function
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", observed_run_sync)
    arguments = {"skillId": "database/rls-policy", "includeCode": True}
    try:
        async with Client(
            build_server(Settings(roots=[sample_root]), library, view="full"), raise_exceptions=True
        ) as client:
            await call(client, "searchPatterns", {"query": "warm"})  # the first sync, out of the way
            loop_thread = threading.get_ident()
            hops.clear()
            _, first = await call(client, "loadSkill", arguments)
            assert readers and loop_thread not in readers and hops == [ONE_HOP]  # read in a worker thread
            readers.clear()
            hops.clear()
            _, again = await call(client, "loadSkill", arguments)
            assert readers == [] and hops == [ONE_HOP]  # served from what was parsed, still off the loop
            assert again["data"] == first["data"]
            doc = sample_root / "database" / "rls-policy.md"
            doc.write_text(doc.read_text(encoding="utf-8").replace("tenant", "TENANT"), encoding="utf-8")
            _, edited = await call(client, "loadSkill", arguments)
            assert "TENANT" in edited["data"]["documentation"]  # never stale...
            assert readers and loop_thread not in readers  # ...and re-read off the loop
    finally:
        library.close()


async def test_load_skill_strips_frontmatter_and_lists_agent_skill_scripts(client: Client) -> None:
    _, body = await call(
        client, "loadSkill", {"skillId": "git/release-notes", "includeCode": True, "includeMetadata": False}
    )
    data = body["data"]
    assert data["documentation"].startswith("# Release notes") and "metadata" not in data
    assert [c["path"] for c in data["code"]] == ["scripts/collect.sh"]


async def test_an_unknown_skill_suggests_close_matches(client: Client) -> None:
    is_error, body = await call(client, "loadSkill", {"skillId": "db/rls-policy"})
    assert is_error and body["error"]["code"] == "PATTERN_NOT_FOUND"
    assert body["error"]["suggestions"][0] == "database/rls-policy"
    assert "Did you mean 'database/rls-policy'" in body["error"]["message"]


@pytest.mark.parametrize("skill_id", ["../../etc/passwd", "/etc/passwd", "database/../secret", "a/b/c", "x"])
async def test_path_like_ids_are_rejected_without_touching_the_disk(client: Client, skill_id: str) -> None:
    is_error, body = await call(client, "loadSkill", {"skillId": skill_id})
    assert is_error and body["error"]["code"] in {"VALIDATION_ERROR", "PATTERN_NOT_FOUND"}
    assert "/etc" not in body["error"]["message"].replace(skill_id, "")


async def test_list_categories_counts_skills(client: Client) -> None:
    _, body = await call(client, "listCategories", {})
    by_name = {c["name"]: c for c in body["data"]["categories"]}
    assert set(by_name) == {"database", "git", "python"}
    assert by_name["python"]["skills"] == 2 and body["data"]["totalSkills"] == 4


async def test_skills_are_readable_as_resources(client: Client) -> None:
    templates = await client.list_resource_templates()
    assert [t.uri_template for t in templates.resource_templates] == ["skill://{category}/{name}"]
    result = await client.read_resource("skill://python/slugify")
    assert result.contents[0].text.startswith("# Slugify")  # type: ignore[union-attr]
    with pytest.raises(MCPError) as raised:
        await client.read_resource("skill://python/missing")
    assert raised.value.error.code == -32602


async def test_messages_never_show_absolute_paths(client: Client, sample_root: Path) -> None:
    for tool, arguments in [
        ("loadSkill", {"skillId": "python/nothing"}),
        ("searchPatterns", {"category": "zzz"}),
        ("loadSkill", {"skillId": "../x"}),
    ]:
        _, body = await call(client, tool, arguments)
        assert str(sample_root) not in str(body)


async def test_read_skill_file_serves_a_skills_own_files(client: Client) -> None:
    is_error, body = await call(client, "readSkillFile", {"skillId": "git/release-notes", "path": "scripts/collect.sh"})
    assert not is_error and body["data"]["content"].startswith("#!/bin/sh")
    _, body = await call(client, "readSkillFile", {"skillId": "database/rls-policy", "path": "rls-policy.py"})
    assert "def rls_policy" in body["data"]["content"]


@pytest.mark.parametrize(
    ("path", "code"),
    [
        ("../../../etc/passwd", "ACCESS_DENIED"),
        ("/etc/passwd", "ACCESS_DENIED"),
        ("scripts/../../slugify.md", "ACCESS_DENIED"),
        ("scripts/missing.sh", "PATTERN_NOT_FOUND"),
    ],
)
async def test_read_skill_file_refuses_anything_else(client: Client, path: str, code: str) -> None:
    is_error, body = await call(client, "readSkillFile", {"skillId": "git/release-notes", "path": path})
    assert is_error and body["error"]["code"] == code
    assert "scripts/collect.sh" in body["error"]["message"]


async def test_a_script_symlinked_out_of_the_skill_is_never_served(sample_root: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOKEN=hunter2\n", encoding="utf-8")
    (sample_root / "git" / "release-notes" / "scripts" / "leak.sh").symlink_to(secret)
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    try:
        async with Client(build_server(Settings(roots=[sample_root]), library, view="full")) as connected:
            is_error, body = await call(
                connected, "readSkillFile", {"skillId": "git/release-notes", "path": "scripts/leak.sh"}
            )
            assert is_error and "hunter2" not in str(body)
            _, loaded = await call(connected, "loadSkill", {"skillId": "git/release-notes", "includeCode": True})
            assert "hunter2" not in str(loaded)
    finally:
        library.close()


async def test_usage_from_three_projects_makes_a_skill_verified_in_hits_and_loads(client: Client) -> None:
    _, before = await call(client, "searchPatterns", {"query": "slugify"})
    assert "verified" not in before["data"]["hits"][0]  # estimated quality under 7: the flag is left out
    for project in ["alpha", "beta", "alpha"]:
        is_error, body = await call(
            client, "trackPatternUsage", {"patternId": "python/slugify", "projectPath": project}
        )
        assert not is_error and body["data"]["verified"] is False
    _, third = await call(
        client, "trackPatternUsage", {"patternId": "python/slugify", "projectPath": "gamma", "note": "urls"}
    )
    assert third["data"]["uses"] == 4 and third["data"]["projects"] == ["alpha", "beta", "gamma"]
    assert third["data"]["verified"] is True
    _, after = await call(client, "searchPatterns", {"query": "slugify"})
    assert after["data"]["hits"][0]["verified"] is True
    _, brief = await call(client, "loadSkill", {"skillId": "python/slugify"})
    assert brief["data"]["metadata"]["verified"] is True
    _, loaded = await call(client, "loadSkill", {"skillId": "python/slugify", "includeMetadata": True})
    usage = loaded["data"]["metadata"]["usage"]
    assert loaded["data"]["metadata"]["verified"] is True and usage["uses"] == 4
    assert usage["firstUsed"] <= usage["lastUsed"]


async def test_tracking_an_unknown_skill_records_nothing(client: Client) -> None:
    is_error, body = await call(client, "trackPatternUsage", {"patternId": "python/slugfy"})
    assert is_error and body["error"]["code"] == "PATTERN_NOT_FOUND"
    assert body["error"]["suggestions"][0] == "python/slugify"
