"""A real `skillshelf serve` process over stdio, driven by the official MCP client."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tests.conftest import deadline

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
        # a plain `serve` serves the default view: the built-in agent view
        assert names == {"searchPatterns", "loadSkill", "readSkillFile", "trackPatternUsage"}
        result = await client.call_tool("searchPatterns", {"query": "retry flaky network calls"})
        assert result.structured_content is not None
        assert result.structured_content["data"]["hits"][0]["id"] == "python/retry-backoff"
        loaded = await client.call_tool("loadSkill", {"skillId": "python/slugify"})
        assert loaded.structured_content is not None and not loaded.is_error


async def test_serve_flags_pick_a_view_and_add_ordered_rules(sample_root: Path, isolated_environment: Path) -> None:
    args = ("--library", str(sample_root), "--view", "memory", "--include", "getLibraryStats", "--exclude", "get*")
    async with Client(server_params(*args, home=isolated_environment)) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "getLibraryStats" in names and not {"getNotes", "getDecisions", "searchPatterns"} & names
        assert {"addNote", "searchArtifacts"} <= names


async def test_serve_without_a_library_serves_the_bundled_examples(isolated_environment: Path) -> None:
    async with Client(server_params("--view", "full", home=isolated_environment)) as client:
        result = await client.call_tool("listCategories", {})
        assert result.structured_content is not None
        assert result.structured_content["data"]["totalSkills"] >= 20


def test_stdout_carries_only_json_rpc_even_when_the_server_logs(
    sample_root: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    """Logs (here at -vv, plus the bundled-library notice paths) must all go to stderr."""
    import json
    import subprocess

    params = server_params("--library", str(sample_root), home=isolated_environment)
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "searchPatterns", "arguments": {}}},
    ]  # fmt: skip
    log = (tmp_path / "stderr.log").open("w", encoding="utf-8")  # a file: a full stderr pipe would block
    process = subprocess.Popen(
        [params.command, "-m", "skillshelf", "-vv", *params.args[2:]],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=params.env,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
    process.stdin.flush()
    messages: list[dict[str, Any]] = []
    while not any(m.get("id") == 2 for m in messages):  # keep stdin open until the answer is in
        line = process.stdout.readline()
        assert line, "the server closed stdout before answering"
        messages.append(json.loads(line))  # every line on stdout must be a JSON-RPC message
    process.stdin.close()
    rest = process.stdout.read()
    process.stdout.close()
    process.wait(timeout=deadline())
    log.close()
    messages += [json.loads(line) for line in rest.splitlines() if line.strip()]
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    assert "index synced" in (tmp_path / "stderr.log").read_text(encoding="utf-8")  # the logs went to stderr


def test_the_skills_extension_answers_a_raw_json_rpc_client_over_stdio(
    sample_root: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    """skills/list and skills/get are custom methods: drive them byte for byte, as any client would."""
    import base64
    import hashlib
    import json
    import subprocess

    params = server_params("--library", str(sample_root), home=isolated_environment)
    log = (tmp_path / "stderr.log").open("w", encoding="utf-8")
    process = subprocess.Popen(
        [params.command, *params.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
        env=params.env,
    )
    assert process.stdin is not None and process.stdout is not None
    next_id = iter(range(1, 1000))

    def ask(method: str, params: dict[str, object]) -> dict[str, Any]:
        assert process.stdin is not None and process.stdout is not None
        number = next(next_id)
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": number, "method": method, "params": params}) + "\n")
        process.stdin.flush()
        while True:
            line = process.stdout.readline()
            assert line, "the server closed stdout before answering"
            message = json.loads(line)
            if message.get("id") == number:
                return dict(message)

    try:
        ask(
            "initialize",
            {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        )
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        listed = ask("skills/list", {})["result"]
        got = ask("skills/get", {"uri": "skill://git/release-notes/SKILL.md"})["result"]
        missing = ask("skills/get", {"uri": "skill://nope/nothing/SKILL.md"})["error"]
        reads = {
            resource["uri"]: ask("resources/read", {"uri": resource["uri"]})["result"]["contents"][0]
            for skill in listed["skills"]
            for resource in skill["resources"]
        }
    finally:
        process.stdin.close()
        process.wait(timeout=deadline())
        process.stdout.close()
        log.close()
    assert listed["resultType"] == "complete" and listed["ttlMs"] > 0
    assert len(listed["skills"]) == 4
    assert got["skill"]["frontmatter"]["name"] == "release-notes"
    assert missing["code"] == -32602
    for skill in listed["skills"]:
        for resource in skill["resources"]:
            content = reads[resource["uri"]]
            data = content["text"].encode() if "text" in content else base64.b64decode(content["blob"])
            assert resource["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
