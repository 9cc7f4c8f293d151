"""How many MCP sessions strangers may hold: per client, in total, and for how long while idle.

A legacy client (initialize, then `Mcp-Session-Id`) gets a session that lives in this process, about
39 KB each; one client opened 5,453 of them (165 -> 376 MB). `SessionCap`, one ASGI middleware behind
the Gate (so it knows the token), counts the sessions every view's server issued:

- a request that would open a session is refused while its client (its token, else its address) holds
  `per_client` sessions (429), or the process holds `max_sessions` (503), with a JSON-RPC error saying
  which limit and how to free a session; the client's open sessions keep working;
- a session with no request in flight for `idle_s` is forgotten here as the SDK closes it (the SDK is
  given the same timeout); a DELETE that ends one, or a 404 for one the SDK no longer has, frees its slot.

The 2026-07-28 protocol opens no session (each request stands alone) and is not counted.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from mcp_types import INTERNAL_ERROR, INVALID_REQUEST
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillshelf.server.auth import client_of

SESSION_HEADER = "mcp-session-id"
OPENING_VERSIONS = (None, *HANDSHAKE_PROTOCOL_VERSIONS)  # none, or a legacy one: a request that may open one
MAX_SESSION_ID = 128  # characters: the SDK's ids are 32; a longer header names no session of ours


@dataclass
class _Session:
    client: str
    last_active: float
    in_flight: int = 0


@dataclass
class SessionCap:
    """ASGI middleware: the session limits (see the module). `is_mcp_path` tells an MCP endpoint's path."""

    app: ASGIApp
    max_sessions: int
    per_client: int
    idle_s: float
    is_mcp_path: Callable[[str], bool]
    clock: Callable[[], float] = time.monotonic
    sessions: dict[str, _Session] = field(default_factory=dict)
    opening: Counter[str] = field(default_factory=Counter)  # requests that may open one, per client, now

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.is_mcp_path(scope["path"]):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        session_id = headers.get(SESSION_HEADER)
        if session_id is not None:
            await self._in_session(session_id[:MAX_SESSION_ID], scope, receive, send)
        elif scope.get("method") == "POST" and headers.get("mcp-protocol-version") in (
            None,
            *HANDSHAKE_PROTOCOL_VERSIONS,
        ):
            await self._opening(client_of(scope), scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _opening(self, client: str, scope: Scope, receive: Receive, send: Send) -> None:
        """A request without a session that may open one (an initialize): admitted within the limits."""
        self._forget_idle()
        refusal = self._refusal(client)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        self.opening[client] += 1  # counted until answered: requests at once cannot overshoot the limits

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                issued = Headers(raw=message.get("headers", [])).get(SESSION_HEADER)
                if issued is not None:
                    self.sessions[issued] = _Session(client, self.clock())
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self.opening[client] -= 1
            if not self.opening[client]:
                del self.opening[client]

    async def _in_session(self, session_id: str, scope: Scope, receive: Receive, send: Send) -> None:
        session = self.sessions.get(session_id)
        status: list[int] = []

        async def watch(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        if session is not None:
            session.in_flight += 1
        try:
            await self.app(scope, receive, watch)
        finally:
            if session is not None:
                session.in_flight -= 1
                session.last_active = self.clock()
        ended = scope.get("method") == "DELETE" and status and status[0] < 300
        if ended or status[:1] == [404]:  # ended by its client, or closed by the SDK
            self.sessions.pop(session_id, None)
        elif session is None and status and status[0] < 300:  # forgotten here a moment before the SDK's timeout
            self.sessions[session_id] = _Session(client_of(scope), self.clock())

    def _forget_idle(self) -> None:
        now = self.clock()
        idle = [sid for sid, s in self.sessions.items() if not s.in_flight and now - s.last_active >= self.idle_s]
        for sid in idle:
            del self.sessions[sid]

    def _refusal(self, client: str) -> JSONResponse | None:
        held = sum(1 for s in self.sessions.values() if s.client == client) + self.opening[client]
        free = (
            f"End one (an HTTP DELETE with its Mcp-Session-Id), reuse one, or wait: a session with no request "
            f"for {self.idle_s:g} s is closed."
        )
        if held >= self.per_client:
            message = f"too many open sessions for this client: {held} ([http] sessions_per_client). {free}"
            return _error(429, INVALID_REQUEST, message)
        if len(self.sessions) + sum(self.opening.values()) >= self.max_sessions:
            message = f"this server holds its most open sessions, {self.max_sessions} ([http] max_sessions). {free}"
            return _error(503, INTERNAL_ERROR, message)
        return None


def _error(status: int, code: int, message: str) -> JSONResponse:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    return JSONResponse(body, status_code=status, headers={"Retry-After": "60"})
