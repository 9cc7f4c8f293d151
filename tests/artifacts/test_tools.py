"""The artifacts tools through a real in-process MCP client: results, envelopes and every error path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.lowlevel.server import Server

from skillshelf.artifacts.archive import SessionArchive
from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.tools.artifacts import artifacts_tools
from skillshelf.server.tools.metrics import metrics_tools
from tests.conftest import call, serving

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(archive: SessionArchive, tmp_path: Path) -> AsyncIterator[Client]:
    """The artifacts tools, and getCompressionRatio from the metrics tools (it reads the same sessions)."""
    library = SkillLibrary(LibraryConfig(roots=[tmp_path / "no-skills"], index_dir=tmp_path / "index", watch=False))
    tools = [*artifacts_tools(archive), *metrics_tools(LibraryReader(library), archive)]
    server: Server[Any] = serving(tools)
    try:
        async with Client(server, raise_exceptions=True) as connected:
            yield connected
    finally:
        library.close()


async def test_search_returns_compact_hits_in_the_envelope(client: Client) -> None:
    is_error, body = await call(client, "searchArtifacts", {"query": "jwt refresh", "limit": 5})
    assert not is_error and body["success"] is True
    hit = body["data"]["hits"][0]
    assert hit == {
        "project": "app",
        "sessionId": "2025-11-05-auth-flow",
        "date": "2025-11-05",
        "title": "Auth flow with JWT refresh",
        "summary": "Implemented login with rotating refresh tokens stored in cookies.",
        "score": hit["score"],
        "tokens": hit["tokens"],
    }
    assert body["metadata"]["resultsCount"] == len(body["data"]["hits"])
    assert body["metadata"]["tokensUsed"] > 0


async def test_search_takes_a_project_and_date_bounds(client: Client) -> None:
    _, body = await call(client, "searchArtifacts", {"query": "", "project": "app", "since": "2025-11-01"})
    assert [h["sessionId"] for h in body["data"]["hits"]] == ["2025-11-05-auth-flow"]


async def test_load_session_returns_its_sections_and_honours_the_sections_filter(client: Client) -> None:
    _, body = await call(client, "loadSession", {"project": "api", "sessionId": "2025-09-15-rate-limits"})
    data = body["data"]
    assert data["title"] == "Rate limiting the public API"
    assert data["decisions"] == ["Token bucket — bursts are fine"]
    assert data["nextSteps"] == ["Expose limits in response headers"]
    assert data["code"] == [
        {"language": "python", "file": "limits.py", "code": "BUCKET = 100\n", "source": data["code"][0]["source"]}
    ]
    _, only = await call(
        client, "loadSession", {"project": "app", "sessionId": "2025-11-05-auth-flow", "sections": ["challenges"]}
    )
    assert set(only["data"]) == {"project", "sessionId", "date", "title", "challenges", "files", "warnings"}


async def test_get_session_code_returns_only_code(client: Client) -> None:
    _, body = await call(client, "getSessionCode", {"project": "app", "sessionId": "2025-11-05-auth-flow"})
    assert [b["file"] for b in body["data"]["blocks"]] == ["auth.py", "src/auth.ts"]
    assert body["metadata"]["resultsCount"] == 2
    _, ts = await call(
        client, "getSessionCode", {"project": "app", "sessionId": "2025-11-05-auth-flow", "language": "typescript"}
    )
    assert [b["file"] for b in ts["data"]["blocks"]] == ["src/auth.ts"]


async def test_get_compression_ratio_reports_sessions_and_the_aggregate(client: Client) -> None:
    _, body = await call(client, "getCompressionRatio", {"project": "app"})
    data = body["data"]
    assert [(s["sessionId"], s["ratio"], s["tokensSaved"]) for s in data["sessions"]] == [
        ("2025-10-01-billing", 0.1, 9000),
        ("2025-11-05-auth-flow", 0.05, 38000),
    ]
    assert data["aggregate"] == {
        "sessions": 2,
        "meanRatio": 0.075,
        "compressionRatio": 94.0,
        "totalSaved": 47000,
        "best": {"sessionId": "2025-11-05-auth-flow", "ratio": 0.05},
        "worst": {"sessionId": "2025-10-01-billing", "ratio": 0.1},
    }
    _, one = await call(client, "getCompressionRatio", {"project": "app", "sessionId": "2025-10-01-billing"})
    assert [s["originalTokens"] for s in one["data"]["sessions"]] == [10000]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("searchArtifacts", {"query": "x", "limit": 0}),
        ("searchArtifacts", {"query": "x", "limit": 51}),
        ("searchArtifacts", {"query": "x", "since": "last tuesday"}),
        ("searchArtifacts", {"query": "x", "since": "2025-02-01", "until": "2025-01-01"}),
        ("searchArtifacts", {}),
        ("loadSession", {"project": "app", "sessionId": "../api/2025-12-01-cookie-auth"}),
        ("loadSession", {"project": "app", "sessionId": "x", "sections": ["everything"]}),
        ("getSessionCode", {"project": "app", "sessionId": "a\\b"}),
        ("getCompressionRatio", {"project": "app", "sessionId": ".."}),
    ],
)
async def test_invalid_arguments_are_a_validation_error(client: Client, tool: str, arguments: dict[str, Any]) -> None:
    is_error, body = await call(client, tool, arguments)
    assert is_error and body["success"] is False
    assert body["error"]["code"] == "VALIDATION_ERROR" and body["metadata"]["tokensUsed"] == 0


@pytest.mark.parametrize("tool", ["searchArtifacts", "loadSession", "getSessionCode", "getCompressionRatio"])
async def test_a_project_outside_the_roots_is_access_denied(
    client: Client, tool: str, dev: Path, tmp_path: Path
) -> None:
    for project in ["../outside", str(tmp_path)]:
        extra = {"query": "x"} if tool == "searchArtifacts" else {"sessionId": "s"}  # unknown arguments are refused
        is_error, body = await call(client, tool, {**extra, "project": project})
        assert is_error and body["error"]["code"] == "ACCESS_DENIED"
        # The configured root may be named (it is where to look); nothing else outside it.
        assert str(tmp_path) not in body["error"]["message"].replace(repr(project), "").replace(str(dev), "")


async def test_a_session_linked_out_of_its_artifacts_is_access_denied(
    client: Client, dev: Path, tmp_path: Path
) -> None:
    (tmp_path / "secret.md").write_text("# Secret\n", encoding="utf-8")
    (dev / "app" / ".agent-artifacts" / "leak.md").symlink_to(tmp_path / "secret.md")
    is_error, body = await call(client, "loadSession", {"project": "app", "sessionId": "leak"})
    assert is_error and body["error"]["code"] == "ACCESS_DENIED" and str(tmp_path) not in body["error"]["message"]


@pytest.mark.parametrize("tool", ["searchArtifacts", "loadSession", "getSessionCode", "getCompressionRatio"])
async def test_an_unknown_project_is_project_not_found(client: Client, tool: str) -> None:
    extra = {"query": "x"} if tool == "searchArtifacts" else {"sessionId": "s"}  # unknown arguments are refused
    is_error, body = await call(client, tool, {**extra, "project": "nope"})
    assert is_error and body["error"]["code"] == "PROJECT_NOT_FOUND"
    assert "app" in body["error"]["message"]


@pytest.mark.parametrize("tool", ["loadSession", "getSessionCode", "getCompressionRatio"])
async def test_an_unknown_session_is_session_not_found_with_close_matches(client: Client, tool: str) -> None:
    is_error, body = await call(client, tool, {"project": "app", "sessionId": "2025-11-05-auth-flw"})
    assert is_error and body["error"]["code"] == "SESSION_NOT_FOUND"
    assert body["error"]["suggestions"] == ["2025-11-05-auth-flow"]
    assert "Did you mean '2025-11-05-auth-flow'" in body["error"]["message"]


async def test_messages_never_show_paths_inside_projects(client: Client, dev: Path) -> None:
    for tool, arguments in [
        ("loadSession", {"project": "app", "sessionId": "missing"}),
        ("loadSession", {"project": "docs", "sessionId": "missing"}),
        ("getCompressionRatio", {"project": "nope"}),
        ("searchArtifacts", {"query": "x", "project": "../x"}),
    ]:
        _, body = await call(client, tool, arguments)
        assert f"{dev}/" not in str(body)  # the root may be named, never a path inside a project
