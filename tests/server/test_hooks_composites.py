"""Hooks (modify, abort, raise, timeout, replace), composite tools and the call log, in process."""

from __future__ import annotations

import json
import logging
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from skillshelf.config.composites import CompositeTool
from skillshelf.config.hooks import HookSettings
from skillshelf.config.views import ViewSettings
from skillshelf.errors import SkillshelfError
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.calllog import CallLog, read_records, summarise
from skillshelf.server.hooks import check_views, load_hook
from skillshelf.server.sdk import ViewServer
from tests.conftest import call, three_file
from tests.server.team_support import make_server

pytestmark = pytest.mark.anyio

HOOKS = """
import asyncio, time
from skillshelf.server.hooks import HookResult

seen = []

def record(call):
    seen.append((call.tool, call.view, dict(call.arguments)))

def one_hit(call):
    if call.tool == "searchPatterns":
        return HookResult(arguments={**call.arguments, "limit": 1})

async def no_loading(call):
    if call.tool == "loadSkill":
        return HookResult(abort="loading is paused while the library is audited")

def explode(call):
    raise RuntimeError("hook bug with secret-ish detail")

async def slow_async(call):
    await asyncio.sleep(30)

def slow_sync(call):
    time.sleep(3)

def not_a_result(call):
    return "yes"

def first_only(call, envelope):
    data = envelope["data"]
    return HookResult(result={**envelope, "data": {**data, "categories": data["categories"][:1]}})
"""

CHAIN = CompositeTool.model_validate(
    {
        "description": "Search, then load the best hit",
        "inputs": {"query": {"type": "string", "description": "The task"}, "limit": {"type": "integer", "default": 3}},
        "chain": [
            {
                "name": "search",
                "tool": "searchPatterns",
                "arguments": {"query": "{inputs.query}", "limit": "{inputs.limit}"},
            },
            {"name": "load", "tool": "loadSkill", "arguments": {"skillId": "{steps.search.data.hits.0.id}"}},
        ],
    }
)
BROKEN_CHAIN = CompositeTool.model_validate(
    {
        "chain": [
            {"name": "search", "tool": "searchPatterns", "arguments": {"query": "slugify", "detail": True}},
            {"name": "load", "tool": "loadSkill", "arguments": {"skillId": "nowhere/{steps.search.data.hits.0.name}"}},
        ]
    }
)
PARALLEL = CompositeTool.model_validate(
    {
        "inputs": {"query": {"type": "string"}},
        "parallel": {
            "everywhere": {"tool": "searchPatterns", "arguments": {"query": "{inputs.query}"}},
            "bad_category": {"tool": "searchPatterns", "arguments": {"query": "{inputs.query}", "category": "nope"}},
            "categories": {"tool": "listCategories"},
        },
    }
)


@pytest.fixture
def hook_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    folder = tmp_path / "hookpkg"
    folder.mkdir()
    name = f"team_hooks_{abs(hash(str(tmp_path)))}"
    (folder / f"{name}.py").write_text(textwrap.dedent(HOOKS), encoding="utf-8")
    monkeypatch.syspath_prepend(str(folder))
    import importlib

    return importlib.import_module(name)


Build = Callable[..., ViewServer]


@pytest.fixture
def build(sample_library: SkillLibrary, tmp_path: Path) -> Build:
    def make(
        hooks: HookSettings | None = None,
        composites: dict[str, CompositeTool] | None = None,
        log: CallLog | None = None,
    ) -> ViewServer:
        view = ViewSettings(hooks=hooks or HookSettings(), composites=composites or {}, output_schemas=True)
        return make_server(sample_library, tmp_path / "projects", view=view, call_log=log)

    return make


@pytest.fixture
async def client_for(build: Build) -> AsyncIterator[Callable[..., Any]]:
    clients: list[Client] = []

    async def open_client(**kwargs: Any) -> Client:
        client = Client(build(**kwargs))
        await client.__aenter__()
        clients.append(client)
        return client

    yield open_client
    for client in reversed(clients):
        await client.__aexit__(None, None, None)


async def test_pre_call_may_change_the_arguments(client_for: Any, hook_module: Any) -> None:
    question = {"query": "retry slugify release notes policy", "limit": 10}
    plain = await client_for()
    assert len((await call(plain, "searchPatterns", question))[1]["data"]["hits"]) > 1
    client = await client_for(hooks=HookSettings(pre_call=f"{hook_module.__name__}:one_hit"))
    _, envelope = await call(client, "searchPatterns", question)
    assert len(envelope["data"]["hits"]) == 1


async def test_pre_call_may_abort_with_a_reason(client_for: Any, hook_module: Any) -> None:
    client = await client_for(hooks=HookSettings(pre_call=f"{hook_module.__name__}:no_loading"))
    is_error, envelope = await call(client, "loadSkill", {"skillId": "python/slugify"})
    assert is_error and envelope["error"]["code"] == "CALL_ABORTED"
    assert envelope["error"]["message"] == "loading is paused while the library is audited"
    assert (await call(client, "searchPatterns", {"query": "slugify"}))[1]["success"]


@pytest.mark.parametrize("hook", ["explode", "slow_async", "slow_sync", "not_a_result"])
async def test_a_hook_that_raises_or_times_out_fails_the_call_not_the_server(
    client_for: Any, hook_module: Any, hook: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = await client_for(hooks=HookSettings(pre_call=f"{hook_module.__name__}:{hook}", timeout_s=0.3))
    with caplog.at_level(logging.ERROR, logger="skillshelf.server.hooks"):
        is_error, envelope = await call(client, "searchPatterns", {"query": "slugify"})
    assert is_error and envelope["error"]["code"] == "HOOK_FAILED"
    assert "secret-ish" not in envelope["error"]["message"]  # details go to the log, not the agent
    assert any("pre_call" in r.getMessage() and "searchPatterns" in r.getMessage() for r in caplog.records)
    assert (await client.list_tools()).tools  # still serving


async def test_post_call_may_replace_the_result(client_for: Any, hook_module: Any) -> None:
    plain = await client_for()
    assert len((await call(plain, "listCategories", {}))[1]["data"]["categories"]) > 1
    client = await client_for(hooks=HookSettings(post_call=f"{hook_module.__name__}:first_only"))
    _, envelope = await call(client, "listCategories", {})
    assert len(envelope["data"]["categories"]) == 1


async def test_the_shipped_redaction_hook_masks_secrets_in_results(
    sample_root: Path, sample_library: SkillLibrary, client_for: Any
) -> None:
    three_file(sample_root, "devops", "db-url", "# Db url\n\nConnect with postgres://app:hunter2pass@db/app here.\n")
    sample_library.sync()
    client = await client_for(hooks=HookSettings(post_call="skillshelf.server.hooks:redact_secrets"))
    _, envelope = await call(client, "loadSkill", {"skillId": "devops/db-url"})
    text = json.dumps(envelope)
    assert "hunter2pass" not in text and "postgres://app:[REDACTED]@db" in text


async def test_the_shipped_audit_hook_writes_one_line_per_call_without_values(
    client_for: Any, caplog: pytest.LogCaptureFixture
) -> None:
    client = await client_for(hooks=HookSettings(pre_call="skillshelf.server.hooks:audit"))
    with caplog.at_level(logging.INFO, logger="skillshelf.audit"):
        await call(client, "searchPatterns", {"query": "zebra-words"})
    lines = [r.getMessage() for r in caplog.records if r.name == "skillshelf.audit"]
    assert lines == ["audit caller=- view=default tool=searchPatterns args=['query']"]


def test_a_hook_path_that_cannot_load_is_a_clear_error() -> None:
    with pytest.raises(SkillshelfError, match=r"package\.module:function"):
        load_hook("nodots")
    with pytest.raises(SkillshelfError, match="cannot be imported"):
        load_hook("no_such_module_here:fn")
    with pytest.raises(SkillshelfError, match="has no function 'nope'"):
        load_hook("skillshelf.server.hooks:nope")


def test_config_validate_can_check_hooks_and_composites() -> None:
    views = {
        "default": ViewSettings(hooks=HookSettings(pre_call="skillshelf.server.hooks:audit")),
        "ops": ViewSettings(
            hooks=HookSettings(post_call="no_such_module_here:fn"),
            composites={"ghost": CompositeTool.model_validate({"parallel": {"a": {"tool": "noSuchTool"}}})},
        ),
    }
    problems = check_views(views, {"searchPatterns", "loadSkill"})
    assert len(problems) == 2
    assert problems[0].startswith("views.ops.hooks.post_call: hook 'no_such_module_here:fn'")
    assert problems[1] == "views.ops.composites.ghost: unknown tool(s) noSuchTool"
    assert check_views({"default": views["default"]}) == []


async def test_a_chain_searches_then_loads_the_best_hit(client_for: Any) -> None:
    client = await client_for(composites={"findAndLoad": CHAIN})
    tool = next(t for t in (await client.list_tools()).tools if t.name == "findAndLoad")
    schema = tool.input_schema
    assert schema["type"] == "object" and schema["required"] == ["query"]
    assert schema["properties"]["limit"]["default"] == 3
    assert schema["properties"]["query"]["description"] == "The task"
    is_error, envelope = await call(client, "findAndLoad", {"query": "slugify"})
    assert not is_error
    assert envelope["data"]["result"]["id"] == "python/slugify"
    assert envelope["data"]["steps"]["search"]["hits"][0]["id"] == "python/slugify"
    bad, refused = await call(client, "findAndLoad", {"limit": 2})
    assert bad and refused["error"]["code"] == "VALIDATION_ERROR" and "query" in refused["error"]["message"]


async def test_a_failing_chain_step_ends_the_chain_with_its_error(client_for: Any) -> None:
    client = await client_for(composites={"broken": BROKEN_CHAIN})
    is_error, envelope = await call(client, "broken", {})
    assert is_error and envelope["error"]["code"] == "PATTERN_NOT_FOUND"
    assert "step 'load' (loadSkill) failed" in envelope["error"]["message"]
    assert envelope["error"]["details"]["completed"]["search"]["hits"][0]["id"] == "python/slugify"


async def test_parallel_steps_report_each_result_or_error(client_for: Any) -> None:
    client = await client_for(composites={"overview": PARALLEL})
    is_error, envelope = await call(client, "overview", {"query": "slugify"})
    assert not is_error
    steps = envelope["data"]["steps"]
    assert steps["everywhere"]["hits"][0]["id"] == "python/slugify"
    assert steps["bad_category"]["error"]["code"] == "CATEGORY_INVALID"
    assert "categories" in steps["categories"]
    assert envelope["data"]["failed"] == ["bad_category"]


async def test_hooks_run_for_each_composite_step_not_for_the_composite(client_for: Any, hook_module: Any) -> None:
    hook_module.seen.clear()
    client = await client_for(
        hooks=HookSettings(pre_call=f"{hook_module.__name__}:record"), composites={"findAndLoad": CHAIN}
    )
    await call(client, "findAndLoad", {"query": "slugify"})
    assert [tool for tool, _, _ in hook_module.seen] == ["searchPatterns", "loadSkill"]
    assert hook_module.seen[1][2] == {"skillId": "python/slugify"}


async def test_an_aborting_hook_stops_a_composite_step(client_for: Any, hook_module: Any) -> None:
    client = await client_for(
        hooks=HookSettings(pre_call=f"{hook_module.__name__}:no_loading"), composites={"findAndLoad": CHAIN}
    )
    is_error, envelope = await call(client, "findAndLoad", {"query": "slugify"})
    assert is_error and envelope["error"]["code"] == "CALL_ABORTED"


def test_a_composite_over_an_unknown_tool_is_refused(build: Build) -> None:
    ghost = CompositeTool.model_validate({"parallel": {"a": {"tool": "noSuchTool"}}})
    with pytest.raises(SkillshelfError, match="unknown tool"):
        build(composites={"ghost": ghost})


async def test_the_call_log_holds_no_argument_text(client_for: Any, tmp_path: Path) -> None:
    log = CallLog(tmp_path / "state" / "calls.jsonl", max_bytes=1 << 20)
    client = await client_for(log=log, composites={"findAndLoad": CHAIN})
    await call(client, "searchPatterns", {"query": "zebra quokka unusual words"})
    await call(client, "loadSkill", {"skillId": "python/slugify"})
    await call(client, "loadSkill", {"skillId": "python/no-such-skill"})
    await call(client, "findAndLoad", {"query": "slugify"})
    assert log.flush()  # the writer thread has written every record
    text = log.path.read_text(encoding="utf-8")
    assert "zebra" not in text and "quokka" not in text and "Turn any title" not in text
    records = list(read_records(log.path))
    # The composite's steps are logged too, each with the composite that made it (`via`), before it ends.
    assert [(r["tool"], r.get("via")) for r in records] == [
        ("searchPatterns", None),
        ("loadSkill", None),
        ("loadSkill", None),
        ("searchPatterns", "findAndLoad"),
        ("loadSkill", "findAndLoad"),
        ("findAndLoad", None),
    ]
    assert [r["ok"] for r in records] == [True, True, False, True, True, True]
    assert records[2]["code"] == "PATTERN_NOT_FOUND" and records[1]["skill"] == "python/slugify"
    assert all(r["in"] > 0 and r["out"] > 0 and r["view"] == "default" for r in records)


def test_the_call_log_rotates_by_size(tmp_path: Path) -> None:
    from skillshelf.server.calllog import CallRecord

    log = CallLog(tmp_path / "calls.jsonl", max_bytes=4096)
    record = CallRecord("searchPatterns", "default", "alice", 1.5, True, None, 30, 400)
    for _ in range(100):
        log.write(record)
    assert log.flush()  # the writer thread has written every record
    rotated = tmp_path / "calls.jsonl.1"
    assert rotated.exists() and rotated.stat().st_size <= 4096 and log.path.stat().st_size <= 4096
    assert 0 < len(list(read_records(log.path))) < 100


def test_the_summary_counts_calls_errors_and_percentiles(tmp_path: Path) -> None:
    records = [{"tool": "loadSkill", "ms": float(ms), "ok": ms != 100, "skill": "a/b"} for ms in range(1, 101)]
    records += [{"tool": "searchPatterns", "ms": 2.0, "ok": True, "code": None}]
    records.append({"tool": "loadSkill", "ms": 1.0, "ok": False, "code": "PATTERN_NOT_FOUND", "skill": "c/d"})
    summary = summarise(records, tmp_path / "x")
    load = summary.tools[0]
    assert (load.tool, load.calls, load.errors) == ("loadSkill", 101, 2)
    assert (load.p50_ms, load.p95_ms) == (50.0, 95.0)
    assert summary.busiest_skills == [("a/b", 100), ("c/d", 1)]
    assert summary.error_codes == {"UNKNOWN": 1, "PATTERN_NOT_FOUND": 1}


def test_the_redact_hook_loads_its_skill_without_writing_bytecode_into_the_library() -> None:
    import shutil

    from skillshelf.server.hooks import ToolCall, _redact_text, redact_secrets
    from skillshelf.settings import bundled_library_path

    root = bundled_library_path()
    assert root is not None
    cache = root / "security" / "__pycache__"
    shutil.rmtree(cache, ignore_errors=True)
    _redact_text.cache_clear()
    found = redact_secrets(ToolCall("loadSkill", {}, "default"), {"data": {"text": "token ghp_" + "a" * 36}})
    assert found is not None and "ghp_" + "a" * 36 not in str(found.result)
    assert not cache.exists()  # exec_module would have written __pycache__/redact-secrets.cpython-*.pyc
