"""Streamable HTTP: Host/Origin checks on every route, loopback names only from loopback peers, and
no unauthenticated skill execution on a network-facing bind, at start or after a config reload.

Browsers on other sites can reach a server on localhost; checking Host and Origin is what stops a
rebinding attack, so a wider bind address widens the allow-list only as far as asked. The check is
one ASGI middleware around the whole app, so `/health` gets it as well as `/mcp`.

A config reload goes through `HttpReload`: it refuses what start-up would refuse and puts the
reloaded tokens in force.
"""

from __future__ import annotations

import logging
import re
import socket
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from skillshelf.config.auth import AuthSettings
from skillshelf.config.views import ViewSettings
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.server.auth import (
    ANONYMOUS,
    DEFAULT_VIEW,
    PRINCIPAL,
    BearerTokens,
    Gate,
    Principal,
    is_loopback,
)
from skillshelf.server.connections import ConnectionLimits, descriptor_room, guarded_protocol
from skillshelf.server.hosts import HostGuard, transport_security
from skillshelf.server.mcp_sessions import SessionCap
from skillshelf.server.sdk import ViewServer
from skillshelf.server.views import served_tools
from skillshelf.settings import HttpSettings

if TYPE_CHECKING:
    from skillshelf.settings import Settings

logger = logging.getLogger(__name__)


def refuse_unsafe_exposure(host: str, exec_enabled: bool) -> None:
    """Skill execution over HTTP without authentication is for loopback-only servers (callers pass
    `exec_enabled` false when tokens are configured; `host`: `hosts.reachable_name`)."""
    if exec_enabled and not is_loopback(host):
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"refusing to serve skill execution on {host}: anyone who can reach it (directly, or through a proxy "
            "forwarding a Host name accepted with --allowed-host) could run skills, and no tokens are configured. "
            "Add one (`skillshelf token new NAME`), bind to 127.0.0.1 (the default) and accept loopback names only, "
            "or drop --allow-exec.",
        )


class ReloadRefused(Exception):
    """A config reload the HTTP rules refuse. `HttpReload` has logged why, once; the last good config stays."""


class HttpReload:
    """What a config reload may change while serving HTTP, decided in one place.

    Start-up's rule holds on reload: skill execution is never served without authentication beyond
    loopback (`--insecure-no-auth`). A reload that would do that is refused whole (`ReloadRefused`)
    and one log line says why, once per edit, however many views reload it. Otherwise the reloaded
    tokens replace the ones in force (`BearerTokens`, which the Gate reads per request), and the change is
    logged by token name; tokens from `SKILLSHELF_TOKENS` come from the environment, not the file,
    and stay valid.
    """

    def __init__(self, host: str, tokens: BearerTokens) -> None:
        self.host = host
        self.tokens = tokens
        self._lock = threading.Lock()
        self._refused: tuple[str, object] | None = None  # the last refusal logged, and of which file

    def guard(self, reload: Callable[[], Settings]) -> Callable[[], Settings]:
        """`reload` with these rules applied to what it reads."""

        def reloaded() -> Settings:
            return self.vet(reload())

        return reloaded

    def vet(self, fresh: Settings) -> Settings:
        """`fresh`, its tokens (the file's and SKILLSHELF_TOKENS') in force; `ReloadRefused` when it may not serve."""
        auth = fresh.auth
        problem = self.refusal(fresh.execution.enabled, auth)
        with self._lock:
            if problem is not None:
                seen = (problem, _signature(fresh.config_path))
                if seen != self._refused:
                    self._refused = seen
                    logger.error("config change ignored, still serving the last good config: %s", problem)
                raise ReloadRefused(problem)
            self._refused = None
            changes = self.tokens.replace(auth.tokens)
        if changes:
            logger.warning("tokens reloaded: %s", changes.describe())
            if not auth.tokens:
                logger.warning(
                    "no tokens left: every API request is refused until one is added (a reload "
                    "never turns authentication off; serving without tokens takes a restart)"
                )
        return fresh

    def refusal(self, execution_enabled: bool, auth: AuthSettings) -> str | None:
        """Why settings with these tokens and execution may not be served here (None: they may)."""
        if not execution_enabled or is_loopback(self.host) or self.tokens.required or auth.tokens:
            return None
        return (
            f"it enables skill execution while {self.host} is served without authentication "
            "(--insecure-no-auth): anyone who can reach it could run skills. Add a token in the same edit "
            "([auth.tokens.NAME], `skillshelf token new NAME`), or leave [execution] enabled = false."
        )


def _signature(path: Path | None) -> object:
    try:
        found = path.stat() if path is not None else None
    except OSError:
        return None
    return None if found is None else (found.st_mtime_ns, found.st_size, found.st_ino)


def team_app(
    servers: Mapping[str, ViewServer],
    *,
    host: str = "127.0.0.1",
    extra_hosts: tuple[str, ...] = (),
    extra_origins: tuple[str, ...] = (),
    auth: AuthSettings | None = None,
    views: Mapping[str, ViewSettings] | None = None,
    stateless: bool = False,
    stream_responses: bool = False,
    tokens: BearerTokens | None = None,
    limits: HttpSettings | None = None,
) -> ASGIApp:
    """Every view's MCP server behind one HostGuard and one Gate, their sessions counted by one SessionCap.

    `servers` maps view names to servers and must hold the default view: it answers `/mcp`, `/health`
    and the web view at `/`; every view (the default too) answers `/view/NAME/mcp`. `/views` and
    `/views/NAME` describe the views a caller may use. A trailing slash on these paths works without a
    redirect. `stateless` (several worker processes) answers each request on its own, no sessions.

    Each request is answered with one JSON body unless `stream_responses` (an SSE stream per request,
    which can carry progress notifications while a call waits on the first index). The stream costs
    about a third of the throughput (docs/performance.md); notifications not tied to a request, such as
    tools/list_changed, reach a session's GET stream either way.

    `tokens`: the tokens in force, when something (`HttpReload`) replaces them while serving;
    default: those of `auth`, fixed. `limits`: how many sessions, and how long idle ones live.
    """
    limits = limits or HttpSettings()
    if DEFAULT_VIEW not in servers:
        raise ValueError(f"team_app needs a {DEFAULT_VIEW!r} view; got {sorted(servers)}")
    settings = dict(views or {})
    apps: dict[str, Starlette] = {}
    by_server: dict[int, Starlette] = {}
    for name, server in servers.items():
        if id(server) not in by_server:  # one server under several names: one app, one lifespan
            by_server[id(server)] = server.http_app(
                streamable_http_path="/mcp",
                transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),  # HostGuard
                host=host,
                stateless_http=stateless,
                json_response=stateless or not stream_responses,
                max_request_body_size=(auth or AuthSettings()).max_request_bytes,
                session_idle_timeout=limits.session_idle_s,
                max_sessions=limits.max_sessions,  # per view; SessionCap counts every view's together
            )
        apps[name] = by_server[id(server)]

    async def describe(name: str) -> dict[str, Any]:
        view = settings.get(name) or ViewSettings()
        tools = [{"name": tool.name} for tool in served_tools(servers[name])]
        return {"name": name, "description": view.description, "exposure_mode": view.exposure, "tools": tools}

    def allowed(request: Request) -> list[str]:
        principal = request.scope.get(PRINCIPAL, ANONYMOUS)
        return [name for name in servers if not isinstance(principal, Principal) or principal.may_use(name)]

    async def list_views(request: Request) -> JSONResponse:
        views_info = {}
        for name in allowed(request):
            view = settings.get(name) or ViewSettings()
            views_info[name] = {"description": view.description, "exposure_mode": view.exposure}
        return JSONResponse({"views": views_info})

    async def one_view(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        if name not in servers:
            return _view_not_found(name, allowed(request))
        return JSONResponse(await describe(name))

    async def view_mcp(scope: Scope, receive: Receive, send: Send) -> None:
        name = scope.get("path_params", {}).get("name", "")
        app = apps.get(name)
        if app is None:
            await _view_not_found(name, allowed(Request(scope)))(scope, receive, send)
            return
        await app(scope, receive, send)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for sub in by_server.values():
                await stack.enter_async_context(sub.router.lifespan_context(sub))
            yield

    outer = Starlette(
        routes=[
            Route("/views", list_views, methods=["GET"]),
            Route("/views/{name}", one_view, methods=["GET"]),
            Mount("/view/{name}", app=view_mcp),
            Mount("/", app=apps[DEFAULT_VIEW]),
        ],
        lifespan=lifespan,
    )
    counted: ASGIApp = _Direct(outer, _transports(apps))
    if not stateless:
        counted = SessionCap(
            counted, limits.max_sessions, limits.sessions_per_client, limits.session_idle_s, _is_mcp_path
        )
    gated = Gate(_NoSlash(counted), auth or AuthSettings(), views=tuple(servers), tokens=tokens)
    return HostGuard(gated, transport_security(host, extra_hosts, extra_origins))


class _Direct:
    """A view's MCP path goes straight to its transport (the SDK's Streamable HTTP app), past the Starlette app
    around the views and the view's own: their middleware and routing only pass such a request on, and cost
    about 70 us of the event loop's time a request (issue 36). Every other path goes through them."""

    def __init__(self, app: ASGIApp, transports: dict[str, ASGIApp]) -> None:
        self.app = app
        self.transports = transports

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        transport = self.transports.get(scope["path"]) if scope["type"] == "http" else None
        await (transport or self.app)(scope, receive, send)


def _transports(apps: Mapping[str, Starlette]) -> dict[str, ASGIApp]:
    """Each view's MCP path (`/mcp` the default view's, `/view/NAME/mcp`) and the app its route hands a request
    to: the route of an ASGI app (no methods of its own to check) at the view app's `/mcp`."""
    found: dict[str, ASGIApp] = {}
    for name, app in apps.items():
        route = next((r for r in app.routes if isinstance(r, Route) and r.path == "/mcp"), None)
        if route is None or route.methods is not None or "/" in name:
            continue  # not the SDK's route as known: through the apps, as before
        found[f"/view/{name}/mcp"] = route.app
        if name == DEFAULT_VIEW:
            found["/mcp"] = route.app
    return found


def _view_not_found(name: str, allowed: list[str]) -> JSONResponse:
    listed = ", ".join(allowed) or "none"
    return JSONResponse({"error": f"View {name!r} not found", "views": allowed, "hint": f"Views: {listed}"}, 404)


class _NoSlash:
    """`/mcp/`, `/views/`, `/health/`, `/view/NAME/mcp/`: served as if without the slash, no redirect."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and len(path) > 1 and path.endswith("/") and _API_PATH.match(path):
            scope = {**scope, "path": path.rstrip("/"), "raw_path": path.rstrip("/").encode()}
        await self.app(scope, receive, send)


_API_PATH = re.compile(r"^/(mcp|health|views(/[^/]+)?|view/[^/]+/mcp)/+$")
_MCP_PATH = re.compile(r"^/(mcp|view/[^/]+/mcp)$")  # after _NoSlash


def _is_mcp_path(path: str) -> bool:
    return _MCP_PATH.match(path) is not None


GRACEFUL_SHUTDOWN_S = 10
# How long an idle client connection stays open. Longer than clients keep theirs (httpx: 5 s, uvicorn's own
# default too): with equal times the server could close a connection just as the client sent a request on
# it, which the client sees as a ReadError on a call it may not resend. The client now always closes first.
KEEP_ALIVE_S = 75


def uvicorn_limits(limits: HttpSettings | None) -> dict[str, Any]:
    """uvicorn's options that bound what a connection may hold (one process, or each worker's): the
    graceful stop, keep-alive, and the header timeout and connection cap it lacks (`server/connections.py`)."""
    limits = limits or HttpSettings()
    room = descriptor_room(limits.max_connections)
    return {
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S,
        "timeout_keep_alive": KEEP_ALIVE_S,
        "http": guarded_protocol(ConnectionLimits(room, limits.header_timeout_s)),
    }


def finish_calls_on_shutdown(enabled: bool = True) -> None:
    """On SIGTERM, let tool calls in flight answer before the server stops.

    sse-starlette (the SDK's SSE responses) otherwise closes every open SSE stream the moment uvicorn
    starts shutting down, cutting off answers being computed. Off, uvicorn waits for open requests
    (up to GRACEFUL_SHUTDOWN_S; an idle notification stream is closed then) and the lifespan closes
    the rest. Process-wide: call it where the process serves, not on import.
    """
    from sse_starlette.sse import AppStatus

    AppStatus.enable_automatic_graceful_drain = not enabled  # what its disable/enable methods set


def run_http(
    app: ASGIApp,
    host: str,
    port: int,
    *,
    sock: socket.socket | None = None,
    limits: HttpSettings | None = None,
    stopped: Callable[[], None] | None = None,
) -> None:
    """Serve `app` (the root's `App.http_app`, a `team_app`) until interrupted; uvicorn finishes in-flight
    requests on SIGTERM/SIGINT (graceful).

    On `sock` when given (already bound and listening, so the caller knows the port and could say so).
    `limits` bound connections (`uvicorn_limits`).
    `stopped` runs once the shutdown is done: uvicorn then raises the signal it caught again, which ends
    the process before `run_http` could return.
    """
    import uvicorn

    finish_calls_on_shutdown()
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", **uvicorn_limits(limits))

    class Server(uvicorn.Server):
        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            await super().shutdown(sockets)
            if stopped is not None:
                stopped()

    Server(config).run(sockets=[sock] if sock is not None else None)
