"""How many MCP sessions a client may hold (server/mcp_sessions.py), on a real uvicorn: a cap per client and
in total that refuses a new session with a clear error while the open ones keep working, and idle ones
expiring."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2
import pytest

from skillshelf.config.auth import AuthSettings, TokenSettings, token_digest
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.http import team_app
from skillshelf.settings import HttpSettings
from tests.conftest import deadline
from tests.server.team_support import make_server, serving

pytestmark = pytest.mark.anyio

ALICE = "alice-0123456789abcdef"
BOB = "bob-0123456789abcdef0"
TOKENS = {
    "alice": TokenSettings(sha256=token_digest(ALICE)),
    "bob": TokenSettings(sha256=token_digest(BOB)),
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
HELLO = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


@asynccontextmanager
async def team(library: SkillLibrary, projects: Path, limits: HttpSettings) -> AsyncIterator[httpx2.AsyncClient]:
    app = team_app({"default": make_server(library, projects)}, auth=AuthSettings(tokens=TOKENS), limits=limits)
    async with serving(app) as base, httpx2.AsyncClient(base_url=base, timeout=deadline(30)) as http:
        yield http


def as_(token: str, session: str | None = None) -> dict[str, str]:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}"}
    return {**headers, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-06-18"} if session else headers


async def open_session(http: httpx2.AsyncClient, token: str) -> httpx2.Response:
    return await http.post("/mcp", json=HELLO, headers=as_(token))


async def ping(http: httpx2.AsyncClient, token: str, session: str) -> int:
    return (await http.post("/mcp", json=PING, headers=as_(token, session))).status_code


async def test_the_session_caps_refuse_a_new_session_clearly_while_the_open_ones_work(
    sample_library: SkillLibrary, tmp_path: Path
) -> None:
    """Before, one client opened 5,453 sessions (about 39 KB each, never freed)."""
    limits = HttpSettings(sessions_per_client=2, max_sessions=3)
    async with team(sample_library, tmp_path / "projects", limits) as http:
        alices = [(await open_session(http, ALICE)).headers["mcp-session-id"] for _ in range(2)]
        third = await open_session(http, ALICE)
        assert third.status_code == 429 and "mcp-session-id" not in third.headers
        assert (
            "too many open sessions for this client: 2 ([http] sessions_per_client)" in third.json()["error"]["message"]
        )
        assert [await ping(http, ALICE, s) for s in alices] == [200, 200]

        assert (await open_session(http, BOB)).status_code == 200  # another client: its own allowance
        full = await open_session(http, BOB)
        assert full.status_code == 503 and "3 ([http] max_sessions)" in full.json()["error"]["message"]

        ended = await http.delete("/mcp", headers=as_(ALICE, alices[0]))
        assert ended.status_code < 300
        assert (await open_session(http, BOB)).status_code == 200  # the ended session's slot is free again
        assert await ping(http, ALICE, alices[1]) == 200


async def test_an_idle_session_expires_and_frees_its_clients_slot(sample_library: SkillLibrary, tmp_path: Path) -> None:
    """Before, sessions lived 30 minutes idle (the SDK's default), uncounted."""
    idle_s = 0.3
    limits = HttpSettings(sessions_per_client=1, session_idle_s=idle_s)
    async with team(sample_library, tmp_path / "projects", limits) as http:
        first = (await open_session(http, ALICE)).headers["mcp-session-id"]
        second = await until(lambda: open_session(http, ALICE), 200, every_s=0.05)  # refused (429) until then
        assert second.headers["mcp-session-id"] != first
        await until(lambda: ping_answer(http, first), 404, every_s=idle_s * 2)  # a ping inside idle_s revives it


async def ping_answer(http: httpx2.AsyncClient, session: str) -> httpx2.Response:
    return await http.post("/mcp", json=PING, headers=as_(ALICE, session))


async def until(request: Callable[[], Awaitable[httpx2.Response]], status: int, every_s: float) -> httpx2.Response:
    """`request()` again every `every_s` until it is answered with `status` (failing past the deadline)."""
    with anyio.fail_after(deadline(30)):
        while (answer := await request()).status_code != status:
            await anyio.sleep(every_s)
    return answer
