"""Streamable HTTP: /mcp answers a real client, /health reports, DNS-rebinding protection holds."""

from __future__ import annotations

import http.client
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2
import pytest
from mcp import Client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from skillshelf.errors import SkillshelfError
from skillshelf.server.hosts import HostGuard, reachable_name, transport_security
from skillshelf.server.http import KEEP_ALIVE_S
from tests.conftest import deadline, isolated_env
from tests.live_server import refused_serve, skillshelf_http

pytestmark = pytest.mark.anyio


@contextmanager
def serving(sample_root: Path, home: Path, log_path: Path, *flags: str) -> Iterator[str]:
    """A real `serve --http` on a port of its choosing; its base URL once its first index is built."""
    env = {**os.environ, "HOME": str(home), "SKILLSHELF_CACHE_DIR": str(home / "c")}
    with skillshelf_http(["serve", "--http", "-l", str(sample_root), *flags], log_path, env=env) as server:
        yield server.base


IDLE_S = 6.0  # past httpx's keepalive_expiry and uvicorn's default timeout_keep_alive (5 s)


@dataclass
class Served:
    """The module's server, and a connection to it that has been idle since it started (see the last test)."""

    base: str
    idle: http.client.HTTPConnection
    idle_since: float


@pytest.fixture(scope="module")
def served(shared_sample_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the module's tests that only read from it (a server start is seconds on a busy machine);
    a test that needs other flags or changes what is served starts its own with `serving`. A connection is
    opened and left idle at the start, so the module's other tests run while it idles."""
    home = tmp_path_factory.mktemp("home")
    env = {**isolated_env(home), "SKILLSHELF_CACHE_DIR": str(home / "c")}
    with skillshelf_http(["serve", "--http", "-l", str(shared_sample_root)], home / "server.log", env=env) as server:
        idle = kept_open(server.base)
        try:
            yield Served(server.base, idle, time.monotonic())
        finally:
            idle.close()


def kept_open(base: str) -> http.client.HTTPConnection:
    """A connection to the server at `base` that has answered one request and stays open for the next."""
    host, port = base.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=deadline())
    conn.request("GET", "/health")
    assert conn.getresponse().read() and conn.sock is not None
    return conn


@pytest.fixture(scope="module")
def http_server(served: Served) -> str:
    return served.base


async def test_http_serves_tools_and_health(http_server: str) -> None:
    async with httpx2.AsyncClient() as http:
        health = (await http.get(f"{http_server}/health")).json()
    assert health["status"] == "healthy"
    async with Client(f"{http_server}/mcp") as client:
        result = await client.call_tool("searchPatterns", {"query": "slugify"})
        assert result.structured_content is not None
        assert result.structured_content["data"]["hits"][0]["id"] == "python/slugify"


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
HELLO = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
SEARCH = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "searchPatterns", "arguments": {"query": "slugify"}}}  # fmt: skip  # noqa: E501


async def session_call(base: str) -> httpx2.Response:
    """initialize, initialized, then one tools/call in that session; the call's raw response."""
    async with httpx2.AsyncClient() as http:
        hello = await http.post(f"{base}/mcp", json=HELLO, headers=MCP_HEADERS)
        headers = {
            **MCP_HEADERS,
            "Mcp-Session-Id": hello.headers["mcp-session-id"],
            "MCP-Protocol-Version": "2025-06-18",
        }
        done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(f"{base}/mcp", json=done, headers=headers)).status_code == 202
        return await http.post(f"{base}/mcp", json=SEARCH, headers=headers)


async def test_a_call_is_answered_with_one_json_body_in_a_session_by_default(http_server: str) -> None:
    response = await session_call(http_server)
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["structuredContent"]["data"]["hits"][0]["id"] == "python/slugify"


async def test_stream_responses_answers_a_call_as_an_sse_stream(
    sample_root: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    with serving(sample_root, isolated_environment, tmp_path / "server.log", "--stream-responses") as base:
        response = await session_call(base)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert "python/slugify" in response.text and "\ndata:" in "\n" + response.text


async def test_a_foreign_host_or_origin_is_refused(http_server: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient() as http:
        rebound = await http.post(f"{http_server}/mcp", json=body, headers={**headers, "Host": "evil.example:80"})
        assert rebound.status_code == 421
        cross_site = await http.post(
            f"{http_server}/mcp", json=body, headers={**headers, "Origin": "http://evil.example"}
        )
        assert cross_site.status_code == 403


def test_a_wider_bind_only_allows_the_hosts_asked_for() -> None:
    settings = transport_security("0.0.0.0", ("skills.example.com",))
    assert settings.enable_dns_rebinding_protection
    assert set(settings.allowed_hosts) == {
        "127.0.0.1", "127.0.0.1:*", "localhost", "localhost:*", "[::1]", "[::1]:*",
        "skills.example.com", "skills.example.com:*",
    }  # fmt: skip
    assert "http://skills.example.com:*" in settings.allowed_origins


async def test_health_gets_the_same_host_and_origin_checks(http_server: str) -> None:
    async with httpx2.AsyncClient() as http:
        rebound = await http.get(f"{http_server}/health", headers={"Host": "evil.example"})
        assert rebound.status_code == 421
        cross_site = await http.get(f"{http_server}/health", headers={"Origin": "http://evil.example"})
        assert cross_site.status_code == 403


def guarded(bind: str, *allowed: str) -> Starlette:
    async def ok(_request: Request) -> PlainTextResponse:
        return PlainTextResponse("ok")

    return HostGuard(Starlette(routes=[Route("/health", ok)]), transport_security(bind, allowed))  # type: ignore[return-value]


async def status(app: Starlette, peer: str, headers: dict[str, str]) -> int:
    transport = httpx2.ASGITransport(app=app, client=(peer, 40000))
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as http:
        return int((await http.get("/health", headers=headers)).status_code)


async def test_extra_origins_are_allowed_and_only_those() -> None:
    security = transport_security("0.0.0.0", ("skills.example.com",), ("https://app.example.com",))
    app = HostGuard(Starlette(routes=[Route("/health", lambda _r: PlainTextResponse("ok"))]), security)
    remote = {"Host": "skills.example.com"}
    assert await status(app, "203.0.113.9", {**remote, "Origin": "https://app.example.com"}) == 200  # type: ignore[arg-type]
    assert await status(app, "203.0.113.9", {**remote, "Origin": "https://app.example.com:8443"}) == 200  # type: ignore[arg-type]
    assert await status(app, "203.0.113.9", {**remote, "Origin": "https://evil.example.com"}) == 403  # type: ignore[arg-type]
    with pytest.raises(SkillshelfError, match="scheme://host"):
        transport_security("127.0.0.1", (), ("app.example.com",))


async def test_a_forged_loopback_host_from_a_remote_address_is_refused() -> None:
    app = guarded("0.0.0.0", "skills.example.com")
    assert await status(app, "127.0.0.1", {"Host": "localhost:8765"}) == 200
    assert await status(app, "203.0.113.9", {"Host": "localhost:8765"}) == 421
    assert await status(app, "203.0.113.9", {"Host": "127.0.0.1:8765"}) == 421


async def test_honest_remote_clients_of_an_allowed_host_are_served() -> None:
    app = guarded("0.0.0.0", "Skills.Example.com", "fd00::5", "192.0.2.7:8765")
    for host in ("skills.example.com:8765", "SKILLS.example.com.", "[fd00::5]:8765", "192.0.2.7:8765"):
        assert await status(app, "203.0.113.9", {"Host": host}) == 200, host
    assert (
        await status(app, "203.0.113.9", {"Host": "skills.example.com", "Origin": "https://skills.example.com"}) == 200
    )
    assert await status(app, "203.0.113.9", {"Host": "other.example.com"}) == 421


def test_a_network_bind_with_execution_and_no_authentication_refuses_to_start(sample_root: Path) -> None:
    said = refused_serve("--host", "0.0.0.0", "--allow-exec", "--insecure-no-auth", "-l", str(sample_root)).output
    assert "refusing to serve skill execution on 0.0.0.0" in said


def test_a_network_bind_without_tokens_refuses_to_start_and_says_how_to_add_one(sample_root: Path) -> None:
    said = refused_serve("--host", "0.0.0.0", "-l", str(sample_root)).output
    assert "refusing to serve 0.0.0.0 without authentication" in said
    assert "skillshelf token new NAME" in said


@pytest.mark.parametrize(
    ("flags", "refusal"),
    [
        ([], "refusing to serve skills.example.com without authentication"),
        (["--allow-exec", "--insecure-no-auth"], "refusing to serve skill execution on skills.example.com"),
    ],
)
def test_a_loopback_bind_that_accepts_a_proxys_host_name_needs_tokens_as_a_network_bind_does(
    sample_root: Path, flags: list[str], refusal: str
) -> None:
    """Bound to 127.0.0.1 but accepting `Host: skills.example.com`, the server is there for a proxy that
    forwards anyone: before, `--allow-exec --allowed-host skills.example.com` with no tokens served skill
    execution to all of them without a word."""
    said = refused_serve("--allowed-host", "skills.example.com:443", *flags, "-l", str(sample_root)).output
    assert refusal in said, said
    assert "--allowed-host" in said  # says why a loopback bind counts as reachable


def test_only_loopback_host_names_keep_a_server_loopback_only() -> None:
    assert reachable_name("127.0.0.1", ["localhost:8765", "[::1]", "::1", "127.0.0.2", "app.localhost"]) == "127.0.0.1"
    assert reachable_name("127.0.0.1", ["localhost", "skills.example.com:8765"]) == "skills.example.com"
    assert reachable_name("127.0.0.1", ["[2001:db8::1]:8765"]) == "2001:db8::1"
    assert reachable_name("0.0.0.0", ["skills.example.com"]) == "0.0.0.0"


@pytest.mark.slow  # waits past a client's keep-alive (what the module's other tests have not already waited)
def test_an_idle_connection_outlives_the_clients_keep_alive(served: Served) -> None:
    """httpx (the MCP SDK's client) drops a connection idle for 5 s; so did uvicorn by default, and a request
    sent on one just as the server closed it failed with a ReadError the client cannot safely resend.
    The server now keeps idle connections longer than clients do, so the client always closes first.
    Last in the module: its connection has idled since the server started, through the tests above."""
    idle, idle_since = served.idle, served.idle_since
    if time.monotonic() - idle_since > KEEP_ALIVE_S / 2:  # a slow run: the server may rightly have closed it
        idle, idle_since = kept_open(served.base), time.monotonic()
    try:
        time.sleep(max(0.0, IDLE_S - (time.monotonic() - idle_since)))
        idle.request("GET", "/health")  # on the same socket: a closed one fails here (RemoteDisconnected)
        assert idle.getresponse().status == 200
    finally:
        idle.close()
