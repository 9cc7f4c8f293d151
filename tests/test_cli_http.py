"""`serve --http` end to end: tokens from the environment, callers named in the call log, notes and usage,
several workers, and the refusals."""

from __future__ import annotations

import json
import os
import sqlite3
import tomllib
from contextlib import closing
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from skillshelf.caller import current_caller
from skillshelf.cli import cli
from skillshelf.library.usage.store import UsageStore
from skillshelf.server.calllog import read_records
from skillshelf.settings import HttpSettings
from tests.conftest import deadline
from tests.live_server import skillshelf_http
from tests.server.team_support import free_port


@pytest.mark.anyio
async def test_serve_http_with_env_tokens_logs_each_call_under_the_token_name(
    sample_root: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    secret = "ci-token-0123456789abcdef"
    state = isolated_environment / ".local" / "state" / "skillshelf"
    env = {**os.environ, "SKILLSHELF_TOKENS": f"ci={secret}=default+agent", "SKILLSHELF_STATE_DIR": str(state)}
    (tmp_path / "projects" / "app").mkdir(parents=True)
    arguments = ["serve", "--http", "-l", str(sample_root), "--projects-root", str(tmp_path / "projects")]
    arguments += ["--view", "full"]  # /mcp: every tool
    with skillshelf_http(arguments, tmp_path / "server.log", env=env) as server:
        base = server.base
        async with httpx2.AsyncClient() as http:
            assert (await http.get(f"{base}/views")).status_code == 401
        headers = {"Authorization": f"Bearer {secret}"}
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client,
        ):
            result = await client.call_tool("loadSkill", {"skillId": "python/slugify"})
            assert result.structured_content is not None and result.structured_content["success"]
            await client.call_tool("trackPatternUsage", {"patternId": "python/slugify", "projectPath": "app"})
            added = await client.call_tool("addNote", {"projectPath": "app", "type": "decision", "content": "x"})
            assert added.structured_content is not None
            assert added.structured_content["data"]["note"]["author"] == "ci"
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(f"{base}/view/agent/mcp", http_client=http)) as agent,
        ):
            names = {tool.name for tool in (await agent.list_tools()).tools}
            assert names == {"searchPatterns", "loadSkill", "readSkillFile", "trackPatternUsage"}
        async with httpx2.AsyncClient(headers=headers) as http:
            assert (await http.post(f"{base}/view/memory/mcp", json={})).status_code == 403
    records = list(read_records(state / "calls.jsonl"))
    assert [(r["tool"], r["caller"]) for r in records] == [
        ("loadSkill", "ci"),
        ("trackPatternUsage", "ci"),
        ("addNote", "ci"),
    ]
    assert records[0]["skill"] == "python/slugify"
    notes = (tmp_path / "projects" / "app" / ".agent-memory" / "session-notes.jsonl").read_text(encoding="utf-8")
    assert json.loads(notes.splitlines()[0])["author"] == "ci"
    with closing(sqlite3.connect(sample_root / ".skillshelf" / "usage.sqlite3")) as usage, usage:
        assert usage.execute("SELECT skill_id, author FROM events").fetchall() == [("python/slugify", "ci")]


def test_a_version_1_usage_file_gains_the_author_column_and_skill_id_and_keeps_its_events(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    with closing(sqlite3.connect(path)) as old, old:
        old.executescript(
            """CREATE TABLE events (id INTEGER PRIMARY KEY, pattern_id TEXT NOT NULL, project TEXT, note TEXT,
                                    source TEXT NOT NULL, at TEXT NOT NULL);
               INSERT INTO events(pattern_id, project, note, source, at) VALUES ('a/b', 'p', NULL, 'tool', '2026');
               PRAGMA user_version = 1;"""
        )
    store = UsageStore(path)
    token = current_caller.set("alice")
    try:
        store.record("c/d", None, None, source="tool")
    finally:
        current_caller.reset(token)
    store.record("e/f", None, None, source="tool")
    store.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        rows = conn.execute("SELECT skill_id, author FROM events ORDER BY id").fetchall()
        assert rows == [("a/b", None), ("c/d", "alice"), ("e/f", None)]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3


def test_several_workers_serve_one_library_statelessly(sample_root: Path, tmp_path: Path) -> None:
    secret = "workers-0123456789abcdef"
    env = {**os.environ, "SKILLSHELF_TOKENS": f"ci={secret}"}
    arguments = ["serve", "--http", "--workers", "2", "-l", str(sample_root)]
    headers = {
        "Authorization": f"Bearer {secret}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    call = {"name": "searchPatterns", "arguments": {"query": "slugify"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    # workers announce the port they are given (not the one they bind): give them a free one
    with (
        skillshelf_http(arguments, tmp_path / "server.log", env=env, port=free_port()) as server,
        httpx2.Client(timeout=deadline()) as http,
    ):
        answers = [http.post(f"{server.base}/mcp", json=body, headers=headers) for _ in range(6)]
    log = (tmp_path / "server.log").read_text(encoding="utf-8", errors="replace")
    assert [a.status_code for a in answers] == [200] * 6, log
    for answer in answers:  # a JSON answer per request, no session: any worker can take any request
        assert answer.headers["content-type"].startswith("application/json")
        assert answer.json()["result"]["structuredContent"]["data"]["hits"][0]["id"] == "python/slugify"


@pytest.mark.parametrize(
    ("flags", "problem"),
    [([], "serves HTTP only; add --http"), (["--http", "--workers", "2"], "needs --workers 1")],
)
def test_stream_responses_is_refused_where_it_cannot_apply(sample_root: Path, flags: list[str], problem: str) -> None:
    result = CliRunner().invoke(cli, ["serve", "-l", str(sample_root), "--stream-responses", *flags])
    assert result.exit_code == 2 and problem in result.output


DEPLOY = Path(__file__).resolve().parents[1] / "docs" / "deploy.md"


def test_the_deploy_guides_token_commands_run_as_written(tmp_path: Path) -> None:
    """docs/deploy.md's `token new` lines run on a fresh config (before: `--view readers`, a view defined
    nowhere, failed with "no view 'readers'")."""
    config = tmp_path / "config.toml"
    lines = [line.split("#")[0].split() for line in DEPLOY.read_text(encoding="utf-8").splitlines()]
    commands = [words[1:] for words in lines if words[:3] == ["skillshelf", "token", "new"]]
    assert len(commands) >= 2
    for words in commands:
        made = CliRunner().invoke(cli, ["--config", str(config), *words])
        assert made.exit_code == 0, f"{' '.join(words)}: {made.output}"


def test_the_deploy_guides_http_block_states_the_defaults() -> None:
    text = DEPLOY.read_text(encoding="utf-8")
    block = text.split("```toml\n[http]", 1)[1].split("```", 1)[0]
    assert tomllib.loads(block) == HttpSettings().model_dump()
