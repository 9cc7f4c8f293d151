"""The one call pipeline: every method the server answers passes it, and the view's rules hold on every
surface: search mode's inner calls, composite steps, resources/read and skills/get meet the hooks and the
call log; pins hold at every place an argument can be sent; hooks see skill ids wherever they are."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError, types
from mcp.server.lowlevel.server import Server

from skillshelf.config.auth import AuthSettings
from skillshelf.config.composites import ChainStep, CompositeTool
from skillshelf.config.hooks import HookSettings
from skillshelf.config.views import FilterRule, ToolOverride, ViewSettings
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server import pipeline, sdk
from skillshelf.server.app import build_server
from skillshelf.server.calllog import CallLog
from skillshelf.server.hooks import HookResult, ToolCall
from skillshelf.server.http import team_app
from skillshelf.server.pipeline import METHODS, CallPipeline, classify, utf8_size
from skillshelf.settings import ExecutionSettings, Settings
from tests.conftest import agent_skill, call, synced_library, write
from tests.server.team_support import serving
from tests.server.test_skills_ext import request

pytestmark = pytest.mark.anyio

SEEN: list[ToolCall] = []


def forbid_execute(call: ToolCall) -> HookResult | None:
    """pre_call: a policy keyed on the tool's own name, whatever the view calls it."""
    SEEN.append(call)
    if call.own == "executeSkill":
        return HookResult(abort="executeSkill is not allowed for this team")
    if "secret/vault-notes" in call.skill_ids:
        return HookResult(abort="that skill is off limits")
    return None


@pytest.fixture(autouse=True)
def fresh_seen() -> Iterator[None]:
    SEEN.clear()
    yield
    SEEN.clear()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    tool = agent_skill(root, "docs", "tool", "name: tool\ndescription: Deploy notes; mentions a key.")
    write(tool.parent / "references" / "creds.md", "use token ghp_" + "a" * 36 + " for the mirror\n")
    write(tool.parent / "scripts" / "run.py", "print('{}')\n")
    agent_skill(root, "python", "slugify", "name: slugify\ndescription: Turn a title into a URL slug.")
    agent_skill(root, "secret", "vault-notes", "name: vault-notes\ndescription: Vault keys.")
    return root


@pytest.fixture
def library(root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    with synced_library(root, tmp_path / "index") as opened:
        yield opened


@asynccontextmanager
async def serve(library: SkillLibrary, view: ViewSettings, log: CallLog | None = None) -> AsyncIterator[Client]:
    settings = Settings(roots=library.roots, views={"v": view}, execution=ExecutionSettings(enabled=True))
    async with Client(build_server(settings, library, view="v", call_log=log), raise_exceptions=True) as client:
        yield client


def pipeline_of(server: Server[Any]) -> CallPipeline:
    owners = [getattr(m, "__self__", None) for m in server.middleware]
    (found,) = [owner for owner in owners if isinstance(owner, CallPipeline)]
    return found


HOOKED = HookSettings(pre_call=f"{__name__}:forbid_execute")


async def test_every_method_the_server_answers_is_classified_and_passes_the_pipeline(library: SkillLibrary) -> None:
    seen: set[str] = set()
    answered: list[str] = []
    for mode in ("auto", "legacy"):  # some methods exist in one protocol era only (ping, server/discover)
        settings = Settings(roots=library.roots, views={"v": ViewSettings()})
        server = build_server(settings, library, view="v")
        answered = sdk.request_methods(server, tuple(METHODS))
        assert set(answered) <= set(METHODS), f"unclassified: {set(answered) - set(METHODS)}"
        async with Client(server, mode=mode, raise_exceptions=True) as client:
            attempts = [
                *([request(client, "ping", {})] if mode == "legacy" else []),  # gone from the 2026 protocol
                client.list_tools(),
                call(client, "searchPatterns", {"query": "slug"}),
                client.list_resources(),
                client.list_resource_templates(),
                client.read_resource("skill://docs/tool/SKILL.md"),
                client.list_prompts(),
                client.get_prompt("find-skill", {"task": "slugify a title"}),
                request(client, "skills/list", {}),
                request(client, "skills/get", {"uri": "skill://docs/tool/SKILL.md"}),
                request(client, "server/discover", {}),
            ]
            for attempt in attempts:
                with contextlib.suppress(MCPError):  # not a method of this protocol era
                    await attempt
            seen |= {method for method, count in pipeline_of(server).seen.items() if count}
    missing = [m for m in answered if m != "subscriptions/listen" and m not in seen]
    assert not missing, f"answered without passing the pipeline: {missing}"
    assert "initialize" in seen


async def test_a_method_the_pipeline_does_not_know_is_refused_even_with_a_handler(library: SkillLibrary) -> None:
    server = build_server(Settings(roots=library.roots), library, view="full")
    async with Client(server, raise_exceptions=True) as client:

        async def sneaky(_ctx: Any, _params: Any) -> dict[str, Any]:
            return {"leaked": True}

        server.add_request_handler("sneaky/read", types.RequestParams, sneaky)
        with pytest.raises(MCPError) as refused:
            await request(client, "sneaky/read", {})
        assert refused.value.error.code == types.METHOD_NOT_FOUND
    assert classify("notifications/cancelled") == "notification" and classify("sneaky/read") is None


async def test_a_search_mode_inner_call_meets_the_views_pre_call_hook(library: SkillLibrary, tmp_path: Path) -> None:
    log = CallLog(tmp_path / "calls.jsonl", 1 << 20)
    view = ViewSettings(exposure="search", hooks=HOOKED)
    async with serve(library, view, log) as client:
        failed, body = await call(client, "v_call_tool", {"tool_name": "executeSkill", "arguments": {"skillId": "x/y"}})
        assert failed and body["error"]["code"] == "CALL_ABORTED"  # before: the inner call ran unhooked
        _ok, found = await call(client, "v_call_tool", {"tool_name": "searchPatterns", "arguments": {"query": "slug"}})
        assert found["success"] and [c.tool for c in SEEN] == ["executeSkill", "searchPatterns"]
        assert all(c.via == "v_call_tool" for c in SEEN)
    assert log.flush()
    records = [json.loads(line) for line in log.path.read_text(encoding="utf-8").splitlines()]
    assert [(r["tool"], r.get("via")) for r in records] == [
        ("executeSkill", "v_call_tool"),
        ("v_call_tool", None),
        ("searchPatterns", "v_call_tool"),
        ("v_call_tool", None),
    ]


async def test_the_call_log_reads_a_result_as_the_sdk_shaped_it_without_validating_it_again(
    library: SkillLibrary, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The line's success, code and size come from the SDK's wire dict as it is (issue 36: validating it into
    a CallToolResult again cost 5 us of CPU a call) and say what the client got."""
    validated: list[object] = []
    as_call_result = pipeline._as_call_result

    def counted(result: Any) -> types.CallToolResult | None:
        validated.append(result)
        return as_call_result(result)

    monkeypatch.setattr(pipeline, "_as_call_result", counted)
    log = CallLog(tmp_path / "calls.jsonl", 1 << 20)
    got: list[tuple[bool, int]] = []
    async with serve(library, ViewSettings(), log) as client:
        for tool, arguments in [("loadSkill", {"skillId": "docs/tool"}), ("loadSkill", {"skillId": "no/such"})]:
            result = await client.call_tool(tool, arguments)
            text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
            got.append((not result.is_error, len(text.encode())))
    assert log.flush()
    records = [json.loads(line) for line in log.path.read_text(encoding="utf-8").splitlines()]
    assert [(r["ok"], r["out"]) for r in records] == got
    assert [r["code"] for r in records] == [None, "PATTERN_NOT_FOUND"]
    assert validated == []


async def test_a_renamed_tool_meets_the_policy_on_its_own_name(library: SkillLibrary) -> None:
    view = ViewSettings(hooks=HOOKED, overrides={"executeSkill": ToolOverride(name="runIt")})
    async with serve(library, view) as client:
        failed, body = await call(client, "runIt", {"skillId": "docs/tool"})
        assert failed and body["error"]["code"] == "CALL_ABORTED"


async def test_composite_steps_meet_the_hooks_and_the_policy_holds_inside(library: SkillLibrary) -> None:
    chain = CompositeTool(
        chain=[
            ChainStep(name="find", tool="searchPatterns", arguments={"query": "vault keys"}),
            ChainStep(name="load", tool="loadSkill", arguments={"skillIds": ["secret/vault-notes"]}),
        ]
    )
    view = ViewSettings(hooks=HOOKED, composites={"findAndLoad": chain})
    async with serve(library, view) as client:
        failed, body = await call(client, "findAndLoad", {})
        assert failed and body["error"]["code"] == "CALL_ABORTED" and "off limits" in body["error"]["message"]
        assert [(c.tool, c.via) for c in SEEN] == [("searchPatterns", "findAndLoad"), ("loadSkill", "findAndLoad")]


async def test_hooks_see_skill_ids_sent_in_bulk(library: SkillLibrary) -> None:
    async with serve(library, ViewSettings(hooks=HOOKED)) as client:
        failed, body = await call(client, "loadSkill", {"skillIds": ["docs/tool", "secret/vault-notes"]})
        assert failed and body["error"]["code"] == "CALL_ABORTED"  # before: a policy on skillId missed skillIds


async def test_resources_read_and_skills_get_pass_the_post_call_hook_and_the_call_log(
    library: SkillLibrary, tmp_path: Path
) -> None:
    log = CallLog(tmp_path / "calls.jsonl", 1 << 20)
    view = ViewSettings(hooks=HookSettings(post_call="skillshelf.server.hooks:redact_secrets"))
    secret = "ghp_" + "a" * 36
    async with serve(library, view, log) as client:
        _failed, loaded = await call(client, "readSkillFile", {"skillId": "docs/tool", "path": "references/creds.md"})
        assert secret not in json.dumps(loaded)
        (content,) = (await client.read_resource("skill://docs/tool/references/creds.md")).contents
        assert isinstance(content, types.TextResourceContents)
        assert secret not in content.text and "for the mirror" in content.text  # before: served as written
        got = await request(client, "skills/get", {"uri": "skill://docs/tool/SKILL.md"})
        assert got["skill"]["uri"] == "skill://docs/tool/SKILL.md"
    assert log.flush()
    tools = [(r["tool"], r.get("skill")) for r in map(json.loads, log.path.read_text(encoding="utf-8").splitlines())]
    assert tools == [("readSkillFile", "docs/tool"), ("resources/read", "docs/tool"), ("skills/get", "docs/tool")]


async def test_a_pin_holds_in_bulk_items_too(library: SkillLibrary) -> None:
    view = ViewSettings(
        overrides={
            "searchPatterns": ToolOverride(pinned={"category": "python"}),
            "loadSkill": ToolOverride(pinned={"skillId": "python/slugify"}),
        }
    )
    async with serve(library, view) as client:
        _ok, found = await call(client, "searchPatterns", {"queries": [{"query": "deploy notes key"}]})
        assert [h["id"] for item in found["data"]["results"] for h in item["hits"]] in ([], ["python/slugify"])
        failed, body = await call(client, "searchPatterns", {"queries": [{"query": "x", "category": "docs"}]})
        assert failed and "queries[].category" in body["error"]["message"]  # before: the pin was bypassed
        failed, body = await call(client, "loadSkill", {"skillIds": ["docs/tool"]})
        assert failed and "skillIds[]" in body["error"]["message"]
        _ok, pinned = await call(client, "loadSkill", {})
        assert pinned["data"]["id"] == "python/slugify"


async def test_inner_calls_are_charged_to_the_callers_rate_limit_over_http(library: SkillLibrary) -> None:
    settings = Settings(roots=library.roots, views={"default": ViewSettings(exposure="search")})
    servers = {"default": build_server(settings, library, view="default")}
    app = team_app(servers, auth=AuthSettings(rate_per_s=0.001, burst=3))  # three calls per client, no refill
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    search = {"name": "default_call_tool", "arguments": {"tool_name": "searchPatterns", "arguments": {"query": "x"}}}
    async with serving(app) as base, httpx2.AsyncClient(timeout=30) as http:
        opened = await http.post(f"{base}/mcp", json=rpc(0, "initialize", hello), headers=headers)
        session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
        # The session is one client: its request is one, the call inside it two; then three, and the inner refused.
        first = await http.post(f"{base}/mcp", json=rpc(1, "tools/call", search), headers=session)
        second = await http.post(f"{base}/mcp", json=rpc(2, "tools/call", search), headers=session)
    assert first.json()["result"]["structuredContent"]["success"] is True
    refused = second.json()["result"]["structuredContent"]  # before: the inner call was free
    assert refused["error"]["code"] == "RATE_LIMITED"


def rpc(number: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": method, "params": params}


async def test_an_inner_call_cannot_call_a_meta_tool_or_a_composite(library: SkillLibrary) -> None:
    async with serve(library, ViewSettings(exposure="search")) as client:
        failed, body = await call(client, "v_call_tool", {"tool_name": "v_call_tool", "arguments": {}})
        assert failed and body["error"]["code"] == "TOOL_NOT_AVAILABLE"


async def test_a_hidden_tool_is_refused_by_name_and_through_the_meta_tool(library: SkillLibrary) -> None:
    view = ViewSettings(tools=[FilterRule(exclude="executeSkill")], exposure="search")
    async with serve(library, view) as client:
        failed, body = await call(client, "v_call_tool", {"tool_name": "executeSkill", "arguments": {}})
        assert failed and "not available in this view" in body["error"]["message"]


@pytest.mark.parametrize("text", ["", 'plain ascii {"a":1}', "naïve café", "日本語のスキル", "emoji 🙂 and ascii"])
def test_the_call_logs_byte_counts_are_the_utf8_lengths(text: str) -> None:
    # An ASCII answer is counted without encoding it (issue 36); any other is encoded to count it.
    assert utf8_size(text) == len(text.encode("utf-8"))
