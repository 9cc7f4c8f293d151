"""The team HTTP app on a real uvicorn: endpoints, tokens, view access, size and rate limits."""

from __future__ import annotations

import hmac
import logging
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette

from skillshelf.config.auth import AuthSettings, TokenSettings, token_digest, tokens_from_variable
from skillshelf.config.hooks import HookSettings
from skillshelf.config.views import ViewSettings
from skillshelf.errors import SkillshelfError
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.auth import (
    ADDRESS_SHARE,
    ANONYMOUS,
    BearerTokens,
    Principal,
    RateLimits,
    TokenBucket,
    TokenTable,
    refuse_unauthenticated,
    web_authorize,
    web_refusal,
)
from skillshelf.server.http import finish_calls_on_shutdown, team_app
from skillshelf.server.web import WebAccess
from tests.conftest import deadline, wait_until_async
from tests.server.team_support import make_server, serving

pytestmark = pytest.mark.anyio

ALICE = "alice-0123456789abcdef"  # may use the default view only
BOB = "bob-0123456789abcdef0"  # may use both views
CAROL = "carol-0123456789abcdef"  # may use the other view only
TOKENS = {
    "alice": TokenSettings(sha256=token_digest(ALICE), views=["default"]),
    "bob": TokenSettings(sha256=token_digest(BOB), views=["default", "other"]),
    "carol": TokenSettings(sha256=token_digest(CAROL), views=["other"]),
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
async def team(sample_library: SkillLibrary, tmp_path: Path) -> AsyncIterator[str]:
    """The default server under two view names ("default" and "other"), two tokens."""
    web = WebAccess(authorize=web_authorize(True), refuse=web_refusal())
    server = make_server(sample_library, tmp_path / "projects", web)
    views = {"other": ViewSettings(description="the same tools, for access tests")}
    app = team_app({"default": server, "other": server}, auth=AuthSettings(tokens=TOKENS), views=views)
    async with serving(app) as base:
        yield base


async def test_health_without_a_token_says_only_liveness_and_the_digest(team: str) -> None:
    """Before, anyone got the skill count (hidden skills included), the session count and, with PostgreSQL,
    the database's user, host and name. A proxy's check needs only `status`; replicas compare the digest."""
    async with httpx2.AsyncClient() as http:
        for headers in ({}, bearer("not-a-token-0123456789"), {"Authorization": "Basic x"}):
            anonymous = await http.get(f"{team}/health", headers=headers)
            assert anonymous.status_code == 200
            assert set(anonymous.json()) == {"status", "library"}, headers
            assert set(anonymous.json()["library"]) == {"digest"}
        detailed = (await http.get(f"{team}/health", headers=bearer(CAROL))).json()  # any valid token
    assert detailed["status"] == anonymous.json()["status"] and detailed["skills"] > 0 and "index" in detailed


async def search_over_http(url: str, token: str) -> dict[str, Any]:
    async with (
        httpx2.AsyncClient(headers=bearer(token)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        result = await client.call_tool("searchPatterns", {"query": "slugify"})
        assert result.structured_content is not None
        return dict(result.structured_content)


async def test_health_is_open_and_the_views_are_described(team: str) -> None:
    async with httpx2.AsyncClient(follow_redirects=False) as http:
        for path in ("/health", "/health/"):
            health = await http.get(f"{team}{path}", headers=bearer(ALICE))
            assert health.status_code == 200, path
            assert {"status", "version", "skills", "sessions"} <= set(health.json())
        listing = await http.get(f"{team}/views/", headers=bearer(BOB))
        assert listing.status_code == 200
        assert listing.json()["views"]["other"] == {
            "description": "the same tools, for access tests",
            "exposure_mode": "direct",
        }
        one = await http.get(f"{team}/views/other", headers=bearer(BOB))
        assert one.status_code == 200 and one.json()["name"] == "other"
        assert "searchPatterns" in {tool["name"] for tool in one.json()["tools"]}
        unknown = await http.get(f"{team}/views/nope", headers=bearer(BOB))
        assert unknown.status_code == 404
        assert unknown.json()["error"] == "View 'nope' not found"
        assert (await http.get(f"{team}/view/nope/mcp", headers=bearer(BOB))).status_code == 404


async def test_every_mcp_endpoint_answers_a_real_client_with_or_without_a_trailing_slash(team: str) -> None:
    for path in ("/mcp", "/mcp/", "/view/default/mcp", "/view/other/mcp/"):
        envelope = await search_over_http(f"{team}{path}", BOB)
        assert envelope["data"]["hits"][0]["id"] == "python/slugify", path


async def test_an_mcp_request_reaches_its_views_transport_past_the_starlette_apps(
    team: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Starlette apps (the views' and each view's) only route an MCP request on, at about 70 us of the
    event loop a request (issue 36): every view's MCP path goes straight to its transport; the rest, and an
    unknown view's path, still through them."""
    routed: list[str] = []
    through = Starlette.__call__

    async def recorded(app: Starlette, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            routed.append(scope["path"])
        await through(app, scope, receive, send)

    monkeypatch.setattr(Starlette, "__call__", recorded)
    for path in ("/mcp", "/mcp/", "/view/default/mcp", "/view/other/mcp/"):
        envelope = await search_over_http(f"{team}{path}", BOB)
        assert envelope["data"]["hits"][0]["id"] == "python/slugify", path
    assert routed == []
    async with httpx2.AsyncClient() as http:
        assert (await http.get(f"{team}/views", headers=bearer(BOB))).status_code == 200
        assert (await http.get(f"{team}/view/nope/mcp", headers=bearer(BOB))).status_code == 404
    assert routed[:2] == ["/views", "/view/nope/mcp"]


async def test_missing_empty_or_wrong_tokens_get_401_with_a_bearer_challenge(team: str) -> None:
    async with httpx2.AsyncClient() as http:
        cases = {
            "Missing or invalid Authorization header": {},
            "Empty bearer token": {"Authorization": "Bearer"},
            "Invalid or expired token": bearer("not-a-token-of-anyone-here"),
        }
        for description, headers in cases.items():
            for path in ("/mcp", "/view/other/mcp", "/views"):
                response = await http.post(f"{team}{path}", json=LIST_TOOLS, headers={**MCP_HEADERS, **headers})
                assert response.status_code == 401, (path, description)
                assert response.headers["WWW-Authenticate"].startswith("Bearer")
                assert response.json() == {"error": "invalid_token", "error_description": description}


async def test_a_token_limited_to_one_view_cannot_reach_another(team: str) -> None:
    assert (await search_over_http(f"{team}/mcp", ALICE))["success"]
    async with httpx2.AsyncClient() as http:
        refused = await http.post(f"{team}/view/other/mcp", json=LIST_TOOLS, headers={**MCP_HEADERS, **bearer(ALICE)})
        assert refused.status_code == 403
        assert refused.json()["error"] == "forbidden"
        assert "'alice' may not use view 'other'" in refused.json()["error_description"]
        assert (await http.get(f"{team}/views/other", headers=bearer(ALICE))).status_code == 403
        listing = await http.get(f"{team}/views", headers=bearer(ALICE))
        assert set(listing.json()["views"]) == {"default"}


async def test_the_web_view_honours_the_same_tokens(team: str) -> None:
    async with httpx2.AsyncClient() as http:
        anonymous = await http.get(f"{team}/")
        assert anonymous.status_code == 401 and "text/html" in anonymous.headers["content-type"]
        assert anonymous.headers["WWW-Authenticate"].startswith("Bearer")
        assert (await http.get(f"{team}/", headers=bearer("wrong-token-0123456789"))).status_code == 401
        signed_in = await http.get(f"{team}/", headers=bearer(ALICE))
        assert signed_in.status_code == 200 and "slugify" in signed_in.text.lower()


async def test_the_web_view_shows_a_token_without_the_default_view_nothing(team: str) -> None:
    async with httpx2.AsyncClient() as http:
        for path in ("/", "/library", "/skills/python/slugify/", "/skills/python/slugify/slugify.py"):
            refused = await http.get(f"{team}{path}", headers=bearer(CAROL))
            assert refused.status_code == 403 and "text/html" in refused.headers["content-type"], path
            assert "may not use the &#x27;default&#x27; view" in refused.text and "It may use: other" in refused.text
            assert "slugify" not in refused.text.lower()
        allowed = await http.get(f"{team}/skills/python/slugify/", headers=bearer(BOB))
        assert allowed.status_code == 200 and "slugify" in allowed.text.lower()


async def test_a_foreign_host_is_still_refused_before_authentication(team: str) -> None:
    async with httpx2.AsyncClient() as http:
        rebound = await http.get(f"{team}/views", headers={**bearer(BOB), "Host": "evil.example"})
        assert rebound.status_code == 421


async def test_too_many_requests_get_429_with_retry_after(sample_library: SkillLibrary, tmp_path: Path) -> None:
    server = make_server(sample_library, tmp_path / "projects")
    auth = AuthSettings(tokens=TOKENS, rate_per_s=0.01, burst=3)
    async with serving(team_app({"default": server}, auth=auth)) as base, httpx2.AsyncClient() as http:
        statuses = [(await http.get(f"{base}/views", headers=bearer(ALICE))).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        limited = await http.get(f"{base}/views", headers=bearer(ALICE))
        assert int(limited.headers["Retry-After"]) >= 1
        assert limited.json()["error"] == "rate_limited"
        # the bucket is per token: bob is not slowed down by alice
        assert (await http.get(f"{base}/views", headers=bearer(BOB))).status_code == 200
        # wrong tokens count against the address: guessing is limited too
        guesses = [(await http.get(f"{base}/views", headers=bearer(f"guess-{i:020d}"))).status_code for i in range(4)]
        assert guesses == [401, 401, 401, 429]


async def test_an_oversized_body_gets_413(sample_library: SkillLibrary, tmp_path: Path) -> None:
    server = make_server(sample_library, tmp_path / "projects")
    auth = AuthSettings(tokens=TOKENS, max_request_bytes=4096)
    big = {**LIST_TOOLS, "params": {"padding": "x" * 5000}}
    async with serving(team_app({"default": server}, auth=auth)) as base, httpx2.AsyncClient() as http:
        declared = await http.post(f"{base}/mcp", json=big, headers={**MCP_HEADERS, **bearer(ALICE)})
        assert declared.status_code == 413 and declared.json()["error"] == "too_large"

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
            for _ in range(6):
                yield b" " * 1000

        streamed = await http.post(f"{base}/mcp", content=chunks(), headers={**MCP_HEADERS, **bearer(ALICE)})
        assert streamed.status_code == 413


def test_tokens_are_compared_by_digest_and_name_the_caller() -> None:
    table = TokenTable(TOKENS)
    found = table.verify(BOB)
    assert found is not None and found.name == "bob" and found.may_use("other")
    assert table.verify(BOB + "x") is None
    assert table.verify(token_digest(BOB)) is None  # the stored digest is not itself a token


def test_a_token_is_found_by_its_digest_without_comparing_it_with_every_stored_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One hash and one lookup a request however many tokens there are (issue 36: 50 constant-time
    comparisons were 3.9 us of CPU a request); right, wrong and revoked tokens are told apart as before."""
    many = {f"agent{i}": TokenSettings(sha256=token_digest(f"agent{i}-0123456789abcdef")) for i in range(50)}
    compared: list[object] = []
    real = hmac.compare_digest

    def counted(a: Any, b: Any) -> bool:
        compared.append(a)
        return real(a, b)

    monkeypatch.setattr(hmac, "compare_digest", counted)
    tokens = BearerTokens({**many, **TOKENS})
    found = tokens.table.verify(BOB)
    assert found is not None and found.name == "bob" and found.may_use("other")
    assert tokens.table.verify("agent7-0123456789abcdef") == Principal("agent7", frozenset({"default"}))
    assert tokens.table.verify(BOB + "x") is None
    assert compared == []  # no stored digest compared one by one
    tokens.replace(many)  # bob revoked by a reload
    assert tokens.table.verify(BOB) is None
    same_secret = {
        "first": TokenSettings(sha256=token_digest(ALICE)),
        "second": TokenSettings(sha256=token_digest(ALICE)),
    }
    assert TokenTable(same_secret).verify(ALICE) == Principal("second", frozenset({"default"}))  # as before: the later


def test_the_token_bucket_refills_at_its_rate() -> None:
    now = [100.0]
    bucket = TokenBucket(rate=2.0, burst=2, clock=lambda: now[0])
    assert [bucket.take("k"), bucket.take("k")] == [0.0, 0.0]
    assert bucket.take("k") == pytest.approx(0.5)
    now[0] += 0.5
    assert bucket.take("k") == 0.0
    assert bucket.take("other") == 0.0


def test_only_loopback_may_go_without_tokens(caplog: pytest.LogCaptureFixture) -> None:
    refuse_unauthenticated("127.0.0.1", AuthSettings(), insecure_no_auth=False)
    refuse_unauthenticated("0.0.0.0", AuthSettings(tokens=TOKENS), insecure_no_auth=False)
    with pytest.raises(SkillshelfError, match="skillshelf token new NAME"):
        refuse_unauthenticated("0.0.0.0", AuthSettings(), insecure_no_auth=False)
    with caplog.at_level(logging.WARNING, logger="skillshelf.server.auth"):
        refuse_unauthenticated("192.0.2.7", AuthSettings(), insecure_no_auth=True)
    assert "WITHOUT authentication" in caplog.text


SLOW_CALL = {"started": anyio.Event(), "released": anyio.Event()}


async def slow_pre_call(call: Any) -> None:
    """A call that lasts until the test releases it (once the server is shutting down)."""
    SLOW_CALL["started"].set()
    await SLOW_CALL["released"].wait()


def refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=deadline(5)).close()
    except ConnectionRefusedError:
        return True
    return False


async def test_shutting_down_finishes_the_call_in_flight(sample_library: SkillLibrary, tmp_path: Path) -> None:
    SLOW_CALL.update(started=anyio.Event(), released=anyio.Event())
    finish_calls_on_shutdown()
    try:
        await shut_down_during_a_call(sample_library, tmp_path)
    finally:
        finish_calls_on_shutdown(False)


async def shut_down_during_a_call(sample_library: SkillLibrary, tmp_path: Path) -> None:
    view = ViewSettings(hooks=HookSettings(pre_call=f"{__name__}:slow_pre_call"))
    server = make_server(sample_library, tmp_path / "projects", view=view)
    running: list[uvicorn.Server] = []
    answers: list[httpx2.Response] = []
    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    search = {"name": "searchPatterns", "arguments": {"query": "slugify"}}
    async with serving(team_app({"default": server}), running) as base, httpx2.AsyncClient(timeout=deadline()) as http:
        opened = await http.post(f"{base}/mcp", json=hello, headers=MCP_HEADERS)
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
        headers = {**MCP_HEADERS, **session}
        await http.post(f"{base}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        async with anyio.create_task_group() as group:

            async def call() -> None:
                body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": search}
                answers.append(await http.post(f"{base}/mcp", json=body, headers=headers))

            group.start_soon(call)
            with anyio.fail_after(deadline()):
                await SLOW_CALL["started"].wait()
            running[0].should_exit = True  # as on SIGTERM: stop accepting, finish what is in flight
            port = int(base.rsplit(":", 1)[1])
            await wait_until_async(lambda: refuses_connections(port), "the server kept accepting connections")
            SLOW_CALL["released"].set()  # the call ends only now, while the server shuts down
    assert answers and answers[0].status_code == 200
    assert '"success":true' in answers[0].text and "python/slugify" in answers[0].text


# -- rate limits without tokens ------------------------------------------------------------------------


async def test_two_local_agents_without_tokens_each_get_their_own_bucket(
    sample_library: SkillLibrary, tmp_path: Path
) -> None:
    """Every local client shares 127.0.0.1: keyed by address alone, one agent's burst starved the other."""
    server = make_server(sample_library, tmp_path / "projects")
    auth = AuthSettings(rate_per_s=0.01, burst=5)
    async with (
        serving(team_app({"default": server}, auth=auth)) as base,
        httpx2.AsyncClient() as first,  # two clients: two connections
        httpx2.AsyncClient() as second,
    ):
        busy = [(await first.get(f"{base}/views")).status_code for _ in range(6)]
        assert busy == [200] * 5 + [429]
        assert [(await second.get(f"{base}/views")).status_code for _ in range(5)] == [200] * 5


async def test_one_address_opening_connections_is_still_capped(sample_library: SkillLibrary, tmp_path: Path) -> None:
    """A client per connection, but all of an address's clients together get ADDRESS_SHARE buckets."""
    server = make_server(sample_library, tmp_path / "projects")
    auth = AuthSettings(rate_per_s=0.01, burst=2)
    statuses: list[int] = []
    async with serving(team_app({"default": server}, auth=auth)) as base:
        for _ in range(ADDRESS_SHARE + 4):
            async with httpx2.AsyncClient() as fresh:  # a new connection, a new port: a new client
                statuses += [(await fresh.get(f"{base}/views")).status_code for _ in range(2)]
    assert statuses.count(200) == 2 * ADDRESS_SHARE and statuses[-1] == 429


async def test_one_mcp_session_is_one_client_whatever_connection_it_uses(
    sample_library: SkillLibrary, tmp_path: Path
) -> None:
    server = make_server(sample_library, tmp_path / "projects")
    auth = AuthSettings(rate_per_s=0.01, burst=3)
    session = {"Mcp-Session-Id": "0123456789abcdef"}
    statuses: list[int] = []
    async with serving(team_app({"default": server}, auth=auth)) as base:
        for _ in range(4):
            async with httpx2.AsyncClient() as fresh:
                statuses.append((await fresh.get(f"{base}/views", headers=session)).status_code)
    assert statuses == [200, 200, 200, 429]


def request_from(host: str, port: int) -> dict[str, Any]:
    """The ASGI scope of a request from host:port, as far as the rate limits read it."""
    return {"type": "http", "headers": [], "client": (host, port)}


def test_idle_and_excess_rate_limit_keys_are_forgotten() -> None:
    now = [0.0]
    limits = RateLimits(rate=10.0, burst=5, clock=lambda: now[0], max_keys=1000)
    for peer in range(100_000):  # 100,000 distinct peers, all at once
        address = f"10.{peer >> 16 & 255}.{peer >> 8 & 255}.{peer & 255}"
        assert limits.budget(request_from(address, 40000), ANONYMOUS).take() == 0.0
    assert len(limits.callers) <= 1000 and len(limits.addresses) <= 1000
    now[0] += 1.0  # long enough for every bucket to be full again: nothing left worth remembering
    limits.budget(request_from("192.0.2.1", 1), ANONYMOUS).take()
    assert len(limits.callers) == 1 and len(limits.addresses) == 1


def test_a_request_the_address_cap_refuses_costs_its_client_nothing() -> None:
    limits = RateLimits(rate=0.001, burst=1, clock=lambda: 0.0)
    for port in range(ADDRESS_SHARE):
        assert limits.budget(request_from("10.0.0.1", port), ANONYMOUS).take() == 0.0
    late = limits.budget(request_from("10.0.0.1", 9999), ANONYMOUS)
    assert late.take() > 0  # the address is spent
    assert limits.callers.take(late.caller) == 0.0  # but the late client's own bucket was given back


def test_ipv6_clients_are_capped_per_64_network() -> None:
    limits = RateLimits(rate=0.001, burst=1, clock=lambda: 0.0)
    one = limits.budget(request_from("2001:db8::1", 1), ANONYMOUS)
    other = limits.budget(request_from("2001:db8::ffff:2", 2), ANONYMOUS)
    assert one.address == other.address == "address:2001:db8::/64"


# -- tokens from the environment -----------------------------------------------------------------------


def test_a_token_containing_equals_signs_parses_whole() -> None:
    padded = "c2VjcmV0LXRva2VuLWJ5dGVzLQ=="  # base64 with padding
    auth = AuthSettings(tokens=tokens_from_variable(f"ci={padded}, mid=abc=def=ghi=jkl=mnopqrstu="))
    assert auth.tokens["ci"].sha256 == token_digest(padded) and auth.tokens["ci"].views == ["default"]
    assert auth.tokens["mid"].sha256 == token_digest("abc=def=ghi=jkl=mnopqrstu=")


def test_views_may_come_before_the_token_so_any_token_text_is_unambiguous() -> None:
    tricky = "0123456789abcdef=readers"  # after its last '=', something that looks like a view
    auth = AuthSettings(tokens=tokens_from_variable(f"ci:default+readers={tricky}"))
    assert auth.tokens["ci"].sha256 == token_digest(tricky)
    assert auth.tokens["ci"].views == ["default", "readers"]
    # the older NAME=TOKEN=VIEWS form still reads views after the last '='
    older = AuthSettings(tokens=tokens_from_variable(f"ci={ALICE}=default+other"))
    assert older.tokens["ci"].sha256 == token_digest(ALICE) and older.tokens["ci"].views == ["default", "other"]


@pytest.mark.parametrize(
    "entry",
    ["ci", "ci=short", "bad name=0123456789abcdef0", "ci:=0123456789abcdef0", "ci:no*view=0123456789abcdef0"],
)
def test_a_malformed_environment_token_is_refused_with_the_forms_named(entry: str) -> None:
    with pytest.raises(SkillshelfError, match="NAME:VIEW\\+VIEW=TOKEN"):
        tokens_from_variable(entry)
