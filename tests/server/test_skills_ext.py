"""The MCP Skills extension (SEP-2640), skills as resources, list_changed, and the prompts."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, types
from mcp.server.extension import Extension, MethodBinding, ToolBinding
from mcp.server.lowlevel.server import Server
from mcp.server.subscriptions import ListenHandler
from pydantic import TypeAdapter

from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server import sdk, skills_ext
from skillshelf.server.app import build_server
from skillshelf.server.skills_ext import EXTENSION_ID, SkillsSurface
from skillshelf.settings import Settings
from tests.conftest import agent_skill, deadline, three_file, write

pytestmark = pytest.mark.anyio


async def request(client: Client, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request for a method the client has no typed helper for (the extension's)."""
    message = types.Request[dict[str, Any] | None, str](method=method, params=params)
    # The SDK types results as models; the extension's are plain JSON objects here.
    result: dict[str, Any] = await client.session.send_request(message, TypeAdapter(dict[str, Any]))  # type: ignore[type-var]
    return result


async def all_skills(client: Client) -> list[dict[str, Any]]:
    skills: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = await request(client, "skills/list", {"cursor": cursor} if cursor else {})
        skills.extend(page["skills"])
        cursor = page.get("nextCursor")
        if cursor is None:
            return skills


async def read_bytes(client: Client, uri: str) -> bytes:
    (content,) = (await client.read_resource(uri)).contents
    if isinstance(content, types.TextResourceContents):
        return content.text.encode()
    return base64.b64decode(content.blob)


@pytest.fixture
def library(sample_root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    opened = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    opened.sync()
    yield opened
    opened.close()


@pytest.fixture(params=["auto", "legacy"])
async def client(request: pytest.FixtureRequest, sample_root: Path, library: SkillLibrary) -> AsyncIterator[Client]:
    server = build_server(Settings(roots=[sample_root], watch=False), library, view="full")
    async with Client(server, mode=request.param, raise_exceptions=True) as connected:
        yield connected


def surface_server(library: SkillLibrary, hidden: set[str]) -> Server[Any]:
    """A server with only the skills surface, reading through a view that hides `hidden`."""
    surface = SkillsSurface(ViewReader(library, [("exclude", skill_id) for skill_id in sorted(hidden)]))
    server: Server[Any] = Server("t", on_subscriptions_listen=ListenHandler(surface.bus))
    surface.install(server)
    return server


async def test_every_listed_file_reads_back_with_the_digest_and_size_the_entry_promises(client: Client) -> None:
    skills = await all_skills(client)

    assert {s["uri"] for s in skills} == {
        "skill://database/rls-policy/SKILL.md",
        "skill://python/retry-backoff/SKILL.md",
        "skill://python/slugify/SKILL.md",
        "skill://git/release-notes/SKILL.md",
    }
    for skill in skills:
        assert skill["resources"][0]["uri"] == skill["uri"]
        assert skill["uri"].split("/")[-2] == skill["frontmatter"]["name"]
        for resource in skill["resources"]:
            data = await read_bytes(client, resource["uri"])
            assert resource["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
            assert resource["size"] == len(data)


async def test_an_agent_skill_entry_carries_its_frontmatter_verbatim_and_all_its_files(client: Client) -> None:
    result = await request(client, "skills/get", {"uri": "skill://git/release-notes/SKILL.md"})

    assert result["resultType"] == "complete"
    assert result["cacheScope"] == "private" and result["ttlMs"] > 0
    assert result["skill"]["frontmatter"] == {
        "name": "release-notes",
        "description": "Draft release notes from merged pull requests and conventional commits. "
        "Use when cutting a release.",
        "metadata": {"tags": "git, release"},
    }
    assert [r["uri"] for r in result["skill"]["resources"]] == [
        "skill://git/release-notes/SKILL.md",
        "skill://git/release-notes/scripts/collect.sh",
    ]


async def test_a_listing_carries_cache_hints_and_the_complete_result_type(client: Client) -> None:
    page = await request(client, "skills/list", {})

    assert page["resultType"] == "complete"
    assert page["ttlMs"] > 0 and page["cacheScope"] == "private"
    assert "nextCursor" not in page  # four skills fit one page


async def test_an_unknown_skill_or_a_file_outside_it_is_invalid_params(client: Client) -> None:
    with pytest.raises(MCPError) as unknown:
        await request(client, "skills/get", {"uri": "skill://acme/billing/chargebacks/SKILL.md"})
    assert unknown.value.error.code == types.INVALID_PARAMS
    assert "skill://acme/billing/chargebacks/SKILL.md" in unknown.value.error.message
    for uri in ("skill://python/slugify/../../database/rls-policy.md", "skill://python/slugify/nothing.md"):
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
        assert refused.value.error.code == types.INVALID_PARAMS


async def test_resources_list_names_each_skill_md_with_its_description(client: Client) -> None:
    listed = await client.list_resources()

    by_uri = {r.uri: r for r in listed.resources}
    assert set(by_uri) == {
        "skill://database/rls-policy/SKILL.md",
        "skill://git/release-notes/SKILL.md",
        "skill://python/retry-backoff/SKILL.md",
        "skill://python/slugify/SKILL.md",
    }
    slugify = by_uri["skill://python/slugify/SKILL.md"]
    assert (slugify.name, slugify.mime_type) == ("slugify", "text/markdown")
    assert slugify.description is not None and "URL slug" in slugify.description


async def test_the_extension_and_resource_list_changes_are_advertised(client: Client) -> None:
    capabilities = client.server_capabilities
    assert capabilities.resources is not None and capabilities.resources.list_changed
    if client.protocol_version >= "2026-07-28":  # extensions are negotiated from this revision on
        assert capabilities.extensions == {EXTENSION_ID: {}}


async def test_the_old_documentation_resource_still_answers(client: Client) -> None:
    (content,) = (await client.read_resource("skill://python/slugify")).contents
    assert isinstance(content, types.TextResourceContents) and content.text.startswith("# Slugify")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_hidden_skill_is_absent_from_every_listing_and_unreadable(library: SkillLibrary, mode: str) -> None:
    server = surface_server(library, hidden={"python/slugify"})
    async with Client(server, mode=mode, raise_exceptions=True) as client:
        listed = [s["uri"] for s in await all_skills(client)]
        resources = [r.uri for r in (await client.list_resources()).resources]
        assert "skill://python/slugify/SKILL.md" not in listed + resources
        assert (
            "skill://python/retry-backoff/SKILL.md" in listed and "skill://python/retry-backoff/SKILL.md" in resources
        )
        for call in (
            request(client, "skills/get", {"uri": "skill://python/slugify/SKILL.md"}),
            client.read_resource("skill://python/slugify/SKILL.md"),
        ):
            with pytest.raises(MCPError) as hidden:
                await call
            assert hidden.value.error.code == types.INVALID_PARAMS


async def test_listings_page_through_every_skill_exactly_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "many"
    for number in range(7):
        three_file(root, "bulk", f"skill-{number}", f"# Skill {number}\n\nDoes thing number {number}.\n")
    monkeypatch.setattr(skills_ext, "SKILLS_PAGE", 3)
    monkeypatch.setattr(skills_ext, "RESOURCES_PAGE", 2)
    opened = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    opened.sync()
    try:
        async with Client(surface_server(opened, hidden=set()), raise_exceptions=True) as client:
            first = await request(client, "skills/list", {})
            skills = await all_skills(client)
            resources: list[str] = []
            cursor: str | None = None
            while True:
                page = await client.session.list_resources(params=types.PaginatedRequestParams(cursor=cursor))
                resources.extend(r.uri for r in page.resources)
                if (cursor := page.next_cursor) is None:
                    break
            with pytest.raises(MCPError) as bad:
                await request(client, "skills/list", {"cursor": "not a cursor!"})
    finally:
        opened.close()
    expected = [f"skill://bulk/skill-{n}/SKILL.md" for n in range(7)]
    assert len(first["skills"]) == 3 and "nextCursor" in first
    assert [s["uri"] for s in skills] == expected
    assert resources == expected
    assert bad.value.error.code == types.INVALID_PARAMS


async def test_a_skill_breaking_the_extension_rules_is_left_out_and_get_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "lib"
    agent_skill(root, "misc", "good", "name: good\ndescription: Fine.")
    agent_skill(root, "misc", "folder-name", "name: other-name\ndescription: Mismatched.")
    opened = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    opened.sync()
    try:
        async with Client(surface_server(opened, hidden=set()), raise_exceptions=True) as client:
            listed = [s["uri"] for s in await all_skills(client)]
            with pytest.raises(MCPError) as refused:
                await request(client, "skills/get", {"uri": "skill://misc/folder-name/SKILL.md"})
    finally:
        opened.close()
    assert listed == ["skill://misc/good/SKILL.md"]
    assert refused.value.error.code == types.INVALID_PARAMS
    assert "other-name" in refused.value.error.message
    assert "name-mismatch" in caplog.text  # reported to the curator, not silently dropped


async def test_a_binary_asset_reads_back_as_a_blob_with_its_digest(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    doc = agent_skill(root, "media", "logo", "name: logo\ndescription: A logo asset.")
    (doc.parent / "assets").mkdir()
    (doc.parent / "assets" / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    opened = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    opened.sync()
    try:
        async with Client(surface_server(opened, hidden=set()), raise_exceptions=True) as client:
            (skill,) = await all_skills(client)
            asset = skill["resources"][1]
            data = await read_bytes(client, asset["uri"])
    finally:
        opened.close()
    assert asset["uri"] == "skill://media/logo/assets/logo.png"
    assert data == b"\x89PNG\r\n\x1a\n\x00\xff\xfe"
    assert asset["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()


async def test_a_library_change_tells_legacy_sessions_to_refresh_the_resource_list(
    sample_root: Path, library: SkillLibrary
) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            changed.set()

    server = build_server(Settings(roots=[sample_root], watch=False), library, view="full")
    async with Client(server, mode="legacy", message_handler=on_message, raise_exceptions=True) as client:
        before = {r.uri for r in (await client.list_resources()).resources}
        three_file(sample_root, "python", "new-skill", "# New skill\n\nSomething new.\n")
        await anyio.to_thread.run_sync(library.syncing._on_change)  # what the file watcher calls, on its thread
        with anyio.fail_after(deadline()):
            await changed.wait()
        after = {r.uri for r in (await client.list_resources()).resources}
    assert after - before == {"skill://python/new-skill/SKILL.md"}


async def test_a_library_change_reaches_2026_listeners(sample_root: Path, library: SkillLibrary) -> None:
    server = build_server(Settings(roots=[sample_root], watch=False), library, view="full")
    async with (
        Client(server, raise_exceptions=True) as client,
        client.listen(resources_list_changed=True) as subscription,
    ):
        write(sample_root / "python" / "slugify.md", "# Slugify\n\nChanged.\n")
        await anyio.to_thread.run_sync(library.syncing._on_change)
        with anyio.fail_after(deadline()):
            event = await subscription.__aiter__().__anext__()
    assert type(event).__name__ == "ResourcesListChanged"


async def test_the_prompts_start_the_find_and_record_workflows(client: Client) -> None:
    names = {p.name for p in (await client.list_prompts()).prompts}
    assert names == {"find-skill", "record-decisions"}

    found = await client.get_prompt("find-skill", {"task": "retry a flaky HTTP call"})
    recorded = await client.get_prompt("record-decisions", {"projectPath": "my-app"})

    found_text = found.messages[0].content
    recorded_text = recorded.messages[0].content
    assert isinstance(found_text, types.TextContent) and isinstance(recorded_text, types.TextContent)
    assert "retry a flaky HTTP call" in found_text.text and "searchPatterns" in found_text.text
    assert "addNote" in recorded_text.text and "'my-app'" in recorded_text.text


class _WithATool(Extension):
    identifier = "example.com/with-a-tool"

    def tools(self) -> Sequence[ToolBinding]:
        return (ToolBinding(lambda: "hi"),)

    def methods(self) -> Sequence[MethodBinding]:
        return (MethodBinding("example/ping", types.RequestParams, _answer),)


async def _answer(_ctx: Any, _params: Any) -> dict[str, Any]:
    return {}


def test_an_extension_needing_mcpservers_tables_is_refused_not_half_served() -> None:
    """A view's server is the SDK's low-level one (server/sdk.py): an extension's methods and settings are
    served as MCPServer would, but a tool it contributes has no table to go in, so it is refused by name."""
    server: Server[Any] = Server("t")
    with pytest.raises(ValueError, match="with-a-tool' offers tools"):
        sdk.add_extension(server, _WithATool())
    assert server.get_request_handler("example/ping") is None and not server.extensions


async def test_reading_the_documentation_looks_the_skill_up_once(
    client: Client, library: SkillLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The resource read looked the skill up to say which is missing, then the service looked it up again
    # (issue 36, H78): one index read a call is enough.
    looked_up: list[str] = []
    get = library.get

    def counted(skill_id: str) -> Any:
        looked_up.append(skill_id)
        return get(skill_id)

    monkeypatch.setattr(library, "get", counted)
    (content,) = (await client.read_resource("skill://python/slugify")).contents

    assert isinstance(content, types.TextResourceContents) and content.text.startswith("# Slugify")
    assert looked_up == ["python/slugify"]
