"""executeSkill over MCP: envelopes, progress, and the server staying responsive during a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.settings import ExecutionSettings, Settings
from tests.conftest import wait_until_async
from tests.execution.conftest import all_gone, started_run

pytestmark = pytest.mark.anyio


def server_for(library: SkillLibrary, run_root: Path, execution: ExecutionSettings) -> Any:
    return build_server(Settings(roots=[run_root], execution=execution), library, view="full")


async def test_disabled_execution_is_an_envelope_telling_how_to_enable_it(
    run_library: SkillLibrary, run_root: Path
) -> None:
    async with Client(server_for(run_library, run_root, ExecutionSettings())) as client:
        result = await client.call_tool("executeSkill", {"skillId": "run/echo", "input": {"text": "x"}})
    assert result.is_error and result.structured_content is not None
    assert result.structured_content["error"]["code"] == "EXECUTION_DISABLED"
    assert "SKILLSHELF_ALLOW_EXEC=1" in result.structured_content["error"]["message"]


async def test_a_dry_run_works_even_when_execution_is_off(run_library: SkillLibrary, run_root: Path) -> None:
    async with Client(server_for(run_library, run_root, ExecutionSettings())) as client:
        result = await client.call_tool("executeSkill", {"skillId": "run/echo", "input": {"text": "x"}, "dryRun": True})
    assert result.structured_content is not None and not result.is_error
    data = result.structured_content["data"]
    assert data["dryRun"] is True and data["executionEnabled"] is False and data["schemaSource"] == "derived"
    assert data["inputSchema"]["required"] == ["text"]
    assert data["wouldRun"]["isolation"] in {"bubblewrap", "rlimits-only"} and data["wouldRun"]["isolationNote"]


async def test_args_reach_a_script_and_are_refused_for_a_three_file_skill(
    run_library: SkillLibrary, run_root: Path, enabled: ExecutionSettings
) -> None:
    scripts = run_root / "run" / "tools" / "scripts"
    (scripts / "argv.py").write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n", encoding="utf-8")
    run_library.sync()
    async with Client(server_for(run_library, run_root, enabled)) as client:
        ran = await client.call_tool(
            "executeSkill", {"skillId": "run/tools", "script": "argv.py", "args": ["--name", "a b", "*"]}
        )
        refused = await client.call_tool(
            "executeSkill", {"skillId": "run/echo", "input": {"text": "x"}, "args": ["-v"]}
        )
    assert ran.structured_content is not None and not ran.is_error, ran.structured_content
    assert ran.structured_content["data"]["output"] == ["--name", "a b", "*"]  # no shell: passed as they are
    assert refused.is_error and refused.structured_content is not None
    assert refused.structured_content["error"]["code"] == "VALIDATION_ERROR"


async def test_a_run_reports_progress_and_the_server_keeps_answering_meanwhile(
    run_library: SkillLibrary, run_root: Path, enabled: ExecutionSettings, tmp_path: Path
) -> None:
    reported: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append(progress)

    async with Client(server_for(run_library, run_root, enabled), mode="legacy") as client:

        async def endless_run() -> None:  # it lasts until the test cancels it: no race with its end
            await client.call_tool(
                "executeSkill",
                {"skillId": "run/sleeper", "input": {"token": "progress", "seconds": 3600}},
                progress_callback=on_progress,
            )

        async with anyio.create_task_group() as group:
            group.start_soon(endless_run)
            pids = await started_run("progress")
            listed = await client.call_tool("listCategories", {})
            assert not listed.is_error  # answered while the skill runs
            await wait_until_async(lambda: len(reported) >= 2, "no progress while the run lasted")
            group.cancel_scope.cancel()
        await all_gone(pids)
    assert reported == sorted(reported)


async def test_cancelling_the_request_kills_the_skill(
    run_library: SkillLibrary, run_root: Path, enabled: ExecutionSettings
) -> None:
    async with Client(server_for(run_library, run_root, enabled), mode="legacy") as client:
        async with anyio.create_task_group() as group:

            async def call() -> None:
                await client.call_tool(
                    "executeSkill", {"skillId": "run/sleeper", "input": {"token": "cancel-request", "seconds": 60}}
                )

            group.start_soon(call)
            pids = await started_run("cancel-request")
            assert pids
            group.cancel_scope.cancel()
        await all_gone(pids)
        assert not (await client.call_tool("listCategories", {})).is_error  # the connection is still fine


async def test_load_skill_shows_the_input_schema_declared_or_derived(run_library: SkillLibrary, run_root: Path) -> None:
    async with Client(server_for(run_library, run_root, ExecutionSettings())) as client:
        derived = await client.call_tool("loadSkill", {"skillId": "run/echo", "includeMetadata": True})
        declared = await client.call_tool("loadSkill", {"skillId": "run/marker", "includeMetadata": True})
    assert derived.structured_content is not None and declared.structured_content is not None
    meta = derived.structured_content["data"]["metadata"]
    assert meta["inputSchemaSource"] == "derived" and meta["inputSchema"]["required"] == ["text"]
    assert declared.structured_content["data"]["metadata"]["inputSchemaSource"] == "declared"
