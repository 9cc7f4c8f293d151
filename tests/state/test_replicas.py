"""Two real `serve --http` processes on one database_url: what one records, the other reads."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.live_server import skillshelf_http

pytestmark = pytest.mark.anyio


async def call(base: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    async with (
        httpx2.AsyncClient() as http,
        Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
    ):
        result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None and not result.is_error, result
    data: dict[str, Any] = result.structured_content["data"]
    return data


async def test_usage_notes_and_call_records_of_one_replica_are_seen_by_the_other(
    postgres_url: str, sample_root: Path, tmp_path: Path
) -> None:
    (tmp_path / "projects" / "app").mkdir(parents=True)
    arguments = ["serve", "--http", "-l", str(sample_root), "--projects-root", str(tmp_path / "projects")]
    arguments += ["--view", "full", "--database-url", postgres_url]
    env_a = {**os.environ, "SKILLSHELF_STATE_DIR": str(tmp_path / "state-a")}
    env_b = {**os.environ, "SKILLSHELF_STATE_DIR": str(tmp_path / "state-b")}
    with (
        skillshelf_http(arguments, tmp_path / "a.log", env=env_a) as first,
        skillshelf_http(arguments, tmp_path / "b.log", env=env_b) as second,
    ):
        await call(first.base, "trackPatternUsage", {"patternId": "python/slugify", "projectPath": "app"})
        await call(first.base, "addNote", {"projectPath": "app", "type": "decision", "content": "Shared state"})
        reuse = await call(second.base, "getPatternReuse", {"patternId": "python/slugify"})
        assert [(p["patternId"], p["uses"]) for p in reuse["patterns"]] == [("python/slugify", 1)]
        notes = await call(second.base, "getNotes", {"projectPath": "app"})
        assert [n["content"] for n in notes["notes"]] == ["Shared state"]
    # Both stopped cleanly: every call of both is in the database, none in a local file.
    with psycopg.connect(postgres_url) as conn:
        tools = sorted(row[0] for row in conn.execute("SELECT record->>'tool' FROM call_log"))
    assert tools == ["addNote", "getNotes", "getPatternReuse", "trackPatternUsage"]
    assert not (tmp_path / "state-a" / "calls.jsonl").exists() and not (tmp_path / "state-b" / "calls.jsonl").exists()
    assert not (tmp_path / "projects" / "app" / ".agent-memory").exists()
    assert not (sample_root / ".skillshelf" / "usage.sqlite3").exists()
