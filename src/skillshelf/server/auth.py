"""Who may call over HTTP: bearer tokens, the views each may use, request size and rate limits.

Tokens are stored only as SHA-256 digests (`[auth.tokens.NAME] sha256 = ..., views = [...]` in the
config file, or `SKILLSHELF_TOKENS`). A presented token is hashed and compared with every stored
digest in constant time, so neither the comparison nor the loop tells an attacker how close a guess
came. `Gate` is one ASGI middleware in front of every route:

- `/health` is open (a load balancer probes it; it holds counts, never contents);
- API paths (`/mcp`, `/view/...`, `/views...`) without a valid token get 401 JSON with
  `WWW-Authenticate: Bearer`; a valid token on a view it does not list gets 403 JSON;
- web pages pass through with or without a principal: the web view's own `authorize` (see
  `web_authorize`) answers its HTML 401 page, so browsers get a page instead of JSON;
- bodies over `max_request_bytes` get 413; more than the token bucket allows gets 429 + Retry-After.

The authenticated name travels in the ASGI scope (`PRINCIPAL`); tools read it with
`caller_of(request)`, and the tool middleware (`server/hooks.py`) sets `current_caller` for them.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import math
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillshelf.caller import current_caller
from skillshelf.config.auth import AuthSettings, TokenSettings, token_digest
from skillshelf.errors import ErrorCode, SkillshelfError

__all__ = [
    "ANONYMOUS",
    "PRINCIPAL",
    "Gate",
    "Principal",
    "TokenTable",
    "current_caller",
    "web_authorize",
    "web_refusal",
]

logger = logging.getLogger(__name__)

PRINCIPAL = "skillshelf.principal"  # ASGI scope key: the authenticated Principal
DEFAULT_VIEW = "default"
OPEN_PATHS = frozenset({"/health", "/health/"})
BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class Principal:
    """Who is calling: a token's name and the views it may use (`*`: any view)."""

    name: str
    views: frozenset[str]
    authenticated: bool = True

    def may_use(self, view: str) -> bool:
        return "*" in self.views or view in self.views


ANONYMOUS = Principal("anonymous", frozenset({"*"}), authenticated=False)


class TokenTable:
    """Stored digests by token name; `verify` hashes a presented token and compares in constant time."""

    def __init__(self, tokens: Mapping[str, TokenSettings]) -> None:
        self._entries = [(name, bytes.fromhex(t.sha256), frozenset(t.views)) for name, t in tokens.items()]

    @property
    def required(self) -> bool:
        return bool(self._entries)

    def verify(self, token: str) -> Principal | None:
        presented = bytes.fromhex(token_digest(token))
        found: Principal | None = None
        for name, digest, views in self._entries:  # no early exit: every digest is compared
            if hmac.compare_digest(presented, digest):
                found = Principal(name, views)
        return found


class TokenBucket:
    """Per key: up to `burst` requests at once, refilled at `rate` per second."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.clock = clock
        self._state: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str) -> float:
        """0.0 when the request may go ahead, else the seconds until one more is allowed."""
        with self._lock:
            now = self.clock()
            tokens, last = self._state.get(key, (self.burst, now))
            tokens = min(self.burst, tokens + (now - last) * self.rate)
            if tokens >= 1.0:
                self._state[key] = (tokens - 1.0, now)
                return 0.0
            self._state[key] = (tokens, now)
            return (1.0 - tokens) / self.rate


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1), with or without brackets."""
    bare = host.strip("[]").lower().rstrip(".")
    if bare == "localhost" or bare.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def refuse_unauthenticated(host: str, auth: AuthSettings, insecure_no_auth: bool) -> None:
    """A bind beyond loopback needs tokens, unless the operator says otherwise (logged)."""
    if is_loopback(host) or auth.tokens:
        return
    if insecure_no_auth:
        logger.warning("serving %s WITHOUT authentication (--insecure-no-auth): anyone who can reach it may call", host)
        return
    raise SkillshelfError(
        ErrorCode.VALIDATION_ERROR,
        f"refusing to serve {host} without authentication: anyone who can reach that address could call every "
        "tool. Add a token with `skillshelf token new NAME` (it writes [auth.tokens.NAME] into the config file) "
        "or set SKILLSHELF_TOKENS=NAME=TOKEN; bind to 127.0.0.1; or pass --insecure-no-auth to serve anyway.",
    )


def view_of(path: str) -> str | None:
    """The view a path addresses: `/mcp` the default view, `/view/NAME/...` and `/views/NAME` NAME."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["mcp"]:
        return DEFAULT_VIEW
    if len(parts) >= 2 and parts[0] in ("view", "views"):
        return parts[1]
    return None


def is_api_path(path: str) -> bool:
    parts = [p for p in path.split("/") if p]
    return bool(parts) and parts[0] in ("mcp", "view", "views")


def caller_of(request: Request | None) -> str | None:
    """The authenticated token name of a request (None: no request, or no authentication)."""
    if request is None:
        return None
    principal = request.scope.get(PRINCIPAL)
    return principal.name if isinstance(principal, Principal) and principal.authenticated else None


def web_authorize(required: bool) -> Callable[[Request], bool]:
    """`WebAccess.authorize` honouring the same tokens: the Gate put the principal in the scope."""

    def authorize(request: Request) -> bool:
        principal = request.scope.get(PRINCIPAL)
        return not required or (isinstance(principal, Principal) and principal.authenticated)

    return authorize


def web_refusal(view: str = DEFAULT_VIEW) -> Callable[[Request], str | None]:
    """`WebAccess.refuse`: the web view shows `view`'s skills, so a token that may not use that view
    gets the HTML 403 page (with the views it may use) instead of them."""

    def refuse(request: Request) -> str | None:
        principal = request.scope.get(PRINCIPAL)
        if not isinstance(principal, Principal) or principal.may_use(view):
            return None
        allowed = ", ".join(sorted(principal.views)) or "none"
        return (
            f"The token {principal.name!r} may not use the {view!r} view, which this web view shows. "
            f"It may use: {allowed}."
        )

    return refuse


def error_response(status: int, error: str, description: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=status, headers=headers)


@dataclass
class Gate:
    """ASGI middleware: rate limit (per token, else per address), authentication, view access, body size."""

    app: ASGIApp
    auth: AuthSettings
    views: Collection[str] = (DEFAULT_VIEW,)
    clock: Callable[[], float] = time.monotonic
    table: TokenTable = field(init=False)
    bucket: TokenBucket = field(init=False)

    def __post_init__(self) -> None:
        self.table = TokenTable(self.auth.tokens)
        self.bucket = TokenBucket(self.auth.rate_per_s, self.auth.burst, self.clock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        principal, problem = self._authenticate(Headers(scope=scope))
        # Failed attempts count against the caller's address, so guessing is rate-limited too.
        peer = (scope.get("client") or ("?", 0))[0]
        key = f"token:{principal.name}" if principal is not None and principal.authenticated else f"peer:{peer}"
        wait = self.bucket.take(key)
        if wait > 0:
            headers = {"Retry-After": str(max(1, math.ceil(wait)))}
            message = f"rate limit: at most {self.auth.rate_per_s:g} requests/s (bursts of {self.auth.burst})"
            await error_response(429, "rate_limited", message, headers)(scope, receive, send)
            return
        if principal is None:
            if is_api_path(path):
                challenge = 'Bearer realm="skillshelf"' + (', error="invalid_token"' if problem != "missing" else "")
                description = {
                    "missing": "Missing or invalid Authorization header",
                    "empty": "Empty bearer token",
                    "invalid": "Invalid or expired token",
                }[problem]
                await error_response(401, "invalid_token", description, {"WWW-Authenticate": challenge})(
                    scope, receive, send
                )
                return
            # a web page: its own authorize() answers with the HTML 401 page
        else:
            view = view_of(path)
            if view is not None and view in self.views and not principal.may_use(view):
                allowed = ", ".join(sorted(principal.views)) or "none"
                message = f"token {principal.name!r} may not use view {view!r}; it may use: {allowed}"
                await error_response(403, "forbidden", message)(scope, receive, send)
                return
            scope[PRINCIPAL] = principal
        if scope.get("method") in BODY_METHODS:
            buffered = await self._read_body(scope, receive, send)
            if buffered is None:
                return
            receive = buffered
        await self.app(scope, receive, send)

    def _authenticate(self, headers: Headers) -> tuple[Principal | None, str]:
        if not self.table.required:
            return ANONYMOUS, ""
        header = headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return None, "missing"
        token = token.strip()
        if not token:
            return None, "empty"
        found = self.table.verify(token)
        return (found, "") if found is not None else (None, "invalid")

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """The whole body (JSON-RPC requests are small), or None after answering 413."""
        limit = self.auth.max_request_bytes
        too_large = error_response(413, "too_large", f"request body over {limit} bytes; send a smaller request")
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await too_large(scope, receive, send)
            return None
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return _replay([message], receive)
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                await too_large(scope, receive, send)
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return _replay([{"type": "http.request", "body": b"".join(chunks), "more_body": False}], receive)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
