"""Two real `serve --http` processes on one database_url: what one records, the other reads."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import httpx2
import psycopg
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import wait_until
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


async def test_replicas_on_the_same_files_report_one_library_digest_and_a_drifted_one_another(
    sample_root: Path, tmp_path: Path
) -> None:
    """Two hosts' checkouts of one commit lie at other paths, written at other times: /health gives both the
    same digest. An edit on one of them (a deep file, which changes no skill's index signature) shows there."""
    other = shutil.copytree(sample_root, tmp_path / "host-b" / "skills", symlinks=True)
    for path in other.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000), follow_symlinks=False)

    def digest(base: str) -> object:
        library = httpx2.get(f"{base}/health").json()["library"]
        return library.get("digest")

    with (
        skillshelf_http(["serve", "--http", "-l", str(sample_root)], tmp_path / "a.log") as first,
        skillshelf_http(["serve", "--http", "-l", str(other)], tmp_path / "b.log") as second,
    ):
        wait_until(lambda: digest(first.base) and digest(second.base), "no digest on /health")
        assert digest(first.base) == digest(second.base)
        same = digest(first.base)
        script = other / "git" / "release-notes" / "scripts" / "collect.sh"
        script.write_text(script.read_text() + "echo drifted\n")
        wait_until(lambda: digest(second.base) != same, "the edit never reached the digest")
        assert digest(first.base) == same
