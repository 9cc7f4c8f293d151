"""The memory tools through a real in-process MCP client: envelopes, filters and every error path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.lowlevel.server import Server

from skillshelf.projects import ProjectRoots
from skillshelf.server.tools.memory import memory_tools
from tests.conftest import call, serving
from tests.memory.conftest import notes_file

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(roots: ProjectRoots) -> AsyncIterator[Client]:
    server: Server[Any] = serving(memory_tools(roots))
    async with Client(server, raise_exceptions=True) as connected:
        yield connected


async def add(client: Client, note_type: str, content: str, **more: Any) -> dict[str, Any]:
    is_error, body = await call(
        client, "addNote", {"projectPath": "app", "type": note_type, "content": content, **more}
    )
    assert not is_error and body["success"] is True, body
    return body["data"]["note"]  # type: ignore[no-any-return]


async def test_add_note_then_get_notes_round_trips_in_the_envelope(client: Client) -> None:
    note = await add(client, "decision", "Ship the CLI first", tags=["plan"])
    assert set(note) == {"id", "type", "content", "tags", "timestamp"}
    is_error, body = await call(client, "getNotes", {"projectPath": "app"})
    assert not is_error and body["data"] == {"project": "app", "notes": [note], "total": 1, "skippedLines": []}
    assert body["metadata"]["resultsCount"] == 1 and body["metadata"]["tokensUsed"] > 0


async def test_the_typed_tools_return_only_their_type_newest_first(client: Client) -> None:
    for note_type in ["decision", "hypothesis", "blocker", "decision", "general", "blocker"]:
        await add(client, note_type, f"{note_type} note")
    for tool, note_type, count in [
        ("getDecisions", "decision", 2),
        ("getHypotheses", "hypothesis", 1),
        ("getBlockers", "blocker", 2),
    ]:
        _, body = await call(client, tool, {"projectPath": "app"})
        assert [n["type"] for n in body["data"]["notes"]] == [note_type] * count, tool
        assert body["data"]["total"] == count and body["metadata"]["resultsCount"] == count
    _, limited = await call(client, "getDecisions", {"projectPath": "app", "limit": 1, "since": "2020-01-01"})
    assert limited["data"]["total"] == 2 and limited["metadata"]["resultsCount"] == 1


async def test_get_notes_filters_by_type_query_since_and_limit(client: Client) -> None:
    await add(client, "decision", "Use Postgres row level security", tags=["db"])
    await add(client, "blocker", "Postgres migrations time out")
    await add(client, "general", "Lunch at noon")
    _, by_query = await call(client, "getNotes", {"projectPath": "app", "query": "POSTGRES db"})
    assert [n["content"] for n in by_query["data"]["notes"]] == ["Use Postgres row level security"]
    _, by_type = await call(client, "getNotes", {"projectPath": "app", "type": "blocker", "query": "postgres"})
    assert by_type["data"]["total"] == 1 and by_type["data"]["notes"][0]["type"] == "blocker"
    _, future = await call(client, "getNotes", {"projectPath": "app", "since": "2999-01-01T00:00:00Z"})
    assert future["data"]["total"] == 0 and future["metadata"]["resultsCount"] == 0
    _, limited = await call(client, "getNotes", {"projectPath": "app", "limit": 2})
    assert [n["content"] for n in limited["data"]["notes"]] == ["Lunch at noon", "Postgres migrations time out"]
    assert limited["data"]["total"] == 3


async def test_unreadable_lines_are_reported_in_skipped_lines(client: Client, project: Path) -> None:
    await add(client, "decision", "kept")
    with notes_file(project).open("ab") as handle:
        handle.write(b"{garbage\n")
    await add(client, "decision", "also kept")
    _, body = await call(client, "getNotes", {"projectPath": "app"})
    assert [n["content"] for n in body["data"]["notes"]] == ["also kept", "kept"]
    assert body["data"]["skippedLines"] == [2]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("addNote", {"type": "idea", "content": "x"}),
        ("addNote", {"type": "decision", "content": ""}),
        ("addNote", {"type": "decision"}),
        ("addNote", {"type": "decision", "content": "x", "tags": "not-a-list"}),
        ("getNotes", {"type": "idea"}),
        ("getNotes", {"limit": 0}),
        ("getNotes", {"limit": 501}),
        ("getNotes", {"since": "last week"}),
        ("getNotes", {"since": "2025-02-30"}),
        ("getDecisions", {"limit": "many"}),
        ("getHypotheses", {"since": "tomorrow"}),
        ("getBlockers", {"limit": -3}),
    ],
)
async def test_bad_arguments_are_a_validation_error_envelope(
    client: Client, project: Path, tool: str, arguments: dict[str, Any]
) -> None:
    is_error, body = await call(client, tool, {"projectPath": "app", **arguments})
    assert is_error and body["success"] is False and body["error"]["code"] == "VALIDATION_ERROR"
    assert body["metadata"]["tokensUsed"] == 0
    assert not (project / ".agent-memory").exists()


@pytest.mark.parametrize("tool", ["addNote", "getNotes", "getDecisions", "getHypotheses", "getBlockers"])
@pytest.mark.parametrize(("project_path", "code"), [("../outside", "ACCESS_DENIED"), ("nope", "PROJECT_NOT_FOUND")])
async def test_projects_outside_the_roots_or_unknown_fail_on_every_tool(
    client: Client, tmp_path: Path, tool: str, project_path: str, code: str
) -> None:
    arguments: dict[str, Any] = {"projectPath": project_path}
    if tool == "addNote":
        arguments |= {"type": "general", "content": "x"}
    is_error, body = await call(client, tool, arguments)
    assert is_error and body["error"]["code"] == code
    assert str(tmp_path / "outside") not in body["error"]["message"]  # the configured root may be named
    assert not (tmp_path / "outside" / ".agent-memory").exists()


async def test_an_absolute_path_outside_the_roots_is_access_denied(client: Client, tmp_path: Path) -> None:
    outside = str(tmp_path / "outside")
    is_error, body = await call(client, "addNote", {"projectPath": outside, "type": "general", "content": "x"})
    assert is_error and body["error"]["code"] == "ACCESS_DENIED"
    assert not (tmp_path / "outside" / ".agent-memory").exists()


async def test_a_project_named_by_its_path_inside_the_roots_works(client: Client, project: Path) -> None:
    is_error, body = await call(client, "addNote", {"projectPath": str(project), "type": "general", "content": "x"})
    assert not is_error and body["data"]["project"] == "app"


async def test_a_symlink_out_of_the_project_is_access_denied(client: Client, project: Path, tmp_path: Path) -> None:
    (project / ".agent-memory").symlink_to(tmp_path / "outside")
    for tool, extra in [("addNote", {"type": "general", "content": "x"}), ("getNotes", {})]:
        is_error, body = await call(client, tool, {"projectPath": "app", **extra})
        assert is_error and body["error"]["code"] == "ACCESS_DENIED", tool
        assert str(tmp_path) not in body["error"]["message"]
    assert list((tmp_path / "outside").iterdir()) == []


async def test_oversized_content_is_content_too_large(client: Client, project: Path) -> None:
    is_error, body = await call(client, "addNote", {"projectPath": "app", "type": "general", "content": "x" * 20_000})
    assert is_error and body["error"]["code"] == "CONTENT_TOO_LARGE" and "16 KiB" in body["error"]["message"]
    is_error, body = await call(
        client,
        "addNote",
        {"projectPath": "app", "type": "general", "content": "x", "tags": ["t"] * 10 + list("abcdefghijklmnopqrstu")},
    )
    assert is_error and body["error"]["code"] == "CONTENT_TOO_LARGE"
    assert not (project / ".agent-memory").exists()
