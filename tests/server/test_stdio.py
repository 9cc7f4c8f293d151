"""A real `skillshelf serve` process over stdio, driven by the official MCP client."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio


def server_params(*args: str, home: Path) -> StdioServerParameters:
    env = {**os.environ, "HOME": str(home), "SKILLSHELF_CACHE_DIR": str(home / "cache")}
    return StdioServerParameters(command=sys.executable, args=["-m", "skillshelf", "serve", *args], env=env)


async def test_serve_over_stdio_answers_tools_with_nothing_but_protocol_on_stdout(
    sample_root: Path, isolated_environment: Path
) -> None:
    params = server_params("--library", str(sample_root), home=isolated_environment)
    async with Client(params) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"searchPatterns", "loadSkill", "readSkillFile", "listCategories", "trackPatternUsage"} <= names
        result = await client.call_tool("searchPatterns", {"query": "retry flaky network calls"})
        assert result.structured_content is not None
        assert result.structured_content["data"]["hits"][0]["id"] == "python/retry-backoff"
        loaded = await client.call_tool("loadSkill", {"skillId": "python/slugify"})
        assert loaded.structured_content is not None and not loaded.is_error


async def test_serve_without_a_library_serves_the_bundled_examples(isolated_environment: Path) -> None:
    async with Client(server_params(home=isolated_environment)) as client:
        result = await client.call_tool("listCategories", {})
        assert result.structured_content is not None
        assert result.structured_content["data"]["totalSkills"] >= 20
