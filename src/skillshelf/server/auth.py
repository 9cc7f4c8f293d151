"""Who may call over HTTP: bearer tokens, the views each may use, request size and rate limits.

Tokens are stored only as SHA-256 digests (`[auth.tokens.NAME] sha256 = ..., views = [...]` in the
config file, or `SKILLSHELF_TOKENS`). A presented token is hashed and its digest looked up among the
stored ones (`TokenTable`), so no comparison ever sees the token itself. `Gate` is one ASGI
middleware in front of every route:

- `/health` is open (a load balancer probes it): liveness and the library's digest for anyone, the
  details (counts, the database) for a valid token (`server/health.py`);
- API paths (`/mcp`, `/view/...`, `/views...`) without a valid token get 401 JSON with
  `WWW-Authenticate: Bearer`; a valid token on a view it does not list gets 403 JSON;
- web pages pass through with or without a principal: the web view's own `authorize` (see
  `web_authorize`) answers its HTML 401 page, so browsers get a page instead of JSON;
- bodies over `max_request_bytes` get 413; more than the caller's bucket allows gets 429 + Retry-After.

The Gate reads the token table in force from a `BearerTokens` holder, which a config reload replaces
(`server/http.py` `HttpReload`): a deleted token is refused on its next request.

The authenticated name travels in the ASGI scope (`PRINCIPAL`); tools read it with
`caller_of(request)`, and the tool middleware (`server/hooks.py`) sets `current_caller` for them.
The caller's rate-limit budget travels beside it (`BUDGET`, `budget_of(request)`), so calls made
inside a request can be charged to the same caller.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from skillshelf.caller import current_caller
from skillshelf.config.auth import AuthSettings, TokenSettings, token_digest
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.sources.spec import is_loopback_host

__all__ = [
    "ANONYMOUS",
    "BUDGET",
    "PRINCIPAL",
    "BearerTokens",
    "CallerBudget",
    "Gate",
    "Principal",
    "RateLimits",
    "TokenTable",
    "budget_of",
    "client_of",
    "current_caller",
    "web_authorize",
    "web_refusal",
]

logger = logging.getLogger(__name__)

PRINCIPAL = "skillshelf.principal"  # ASGI scope key: the authenticated Principal
BUDGET = "skillshelf.budget"  # ASGI scope key: the CallerBudget a request was charged to
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
    """Stored digests by token name; `verify` hashes a presented token and looks its digest up.

    The lookup is by the SHA-256 digest of the presented token, never by the token itself (the standard way
    with hashed API tokens): a timing difference could tell only how a digest the caller cannot choose
    compares with the stored ones, not how close a guess came. One hash and one lookup a request whatever the
    number of tokens (comparing every stored digest in turn: 3.9 us of CPU a request with 50 tokens, issue 36).
    """

    def __init__(self, tokens: Mapping[str, TokenSettings]) -> None:
        self._entries = [(name, bytes.fromhex(t.sha256), frozenset(t.views)) for name, t in tokens.items()]
        # two names sharing one secret: the later answers, as when every digest was compared in turn
        self._by_digest = {digest.hex(): Principal(name, views) for name, digest, views in self._entries}

    @property
    def required(self) -> bool:
        return bool(self._entries)

    def verify(self, token: str) -> Principal | None:
        return self._by_digest.get(token_digest(token))

    def grants(self) -> dict[str, tuple[bytes, frozenset[str]]]:
        """Each token name's digest and views (what a reload compares)."""
        return {name: (digest, views) for name, digest, views in self._entries}


@dataclass(frozen=True)
class TokenChanges:
    """What a reload changed, by token name (never the digests)."""

    added: tuple[str, ...] = ()
    revoked: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()  # a new secret or other views

    @classmethod
    def between(cls, old: TokenTable, new: TokenTable) -> TokenChanges:
        before, after = old.grants(), new.grants()
        return cls(
            added=tuple(sorted(after.keys() - before.keys())),
            revoked=tuple(sorted(before.keys() - after.keys())),
            changed=tuple(sorted(n for n in before.keys() & after.keys() if before[n] != after[n])),
        )

    def __bool__(self) -> bool:
        return bool(self.added or self.revoked or self.changed)

    def describe(self) -> str:
        parts = [(self.revoked, "revoked"), (self.added, "added"), (self.changed, "new secret or views")]
        return "; ".join(f"{label}: {', '.join(names)}" for names, label in parts if names)


class BearerTokens:
    """The token table in force. A config reload replaces it whole (one reference swap), so the next
    request sees the new table: a deleted token gets 401 and changed views apply at once.

    Once tokens are required they stay required: a reload that deletes the last token locks the API
    (every request gets 401) instead of opening it to anyone; serving without tokens takes a restart,
    where the start-up rules decide.
    """

    def __init__(self, tokens: Mapping[str, TokenSettings] | None = None) -> None:
        self._table = TokenTable(tokens or {})
        self._required = self._table.required
        self._lock = threading.Lock()

    @property
    def table(self) -> TokenTable:
        return self._table

    @property
    def required(self) -> bool:
        return self._required

    def replace(self, tokens: Mapping[str, TokenSettings]) -> TokenChanges:
        new = TokenTable(tokens)
        with self._lock:  # several watchers may reload at once: each change is reported once
            old = self._table
            self._required = self._required or new.required  # before the swap: never a moment unguarded
            self._table = new
        return TokenChanges.between(old, new)


MAX_KEYS = 10_000  # rate-limit keys remembered per bucket table
ADDRESS_SHARE = 8  # an address's anonymous callers together may use this many callers' buckets
MAX_SESSION_KEY = 128  # characters of a client's Mcp-Session-Id kept as its rate-limit key


class TokenBucket:
    """Per key: up to `burst` requests at once, refilled at `rate` per second.

    Bounded: a key whose bucket has refilled holds nothing a fresh bucket would not, so it is
    forgotten; past `max_keys` the least recently used keys go first.
    """

    def __init__(
        self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic, max_keys: int = MAX_KEYS
    ) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.clock = clock
        self.max_keys = max_keys
        self._state: OrderedDict[str, tuple[float, float]] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._state)

    def take(self, key: str) -> float:
        """0.0 when the request may go ahead, else the seconds until one more is allowed."""
        with self._lock:
            now = self.clock()
            tokens = self._tokens(key, now)
            self._state[key] = (tokens - 1.0 if tokens >= 1.0 else tokens, now)
            self._state.move_to_end(key)
            self._forget_idle(now)
            return 0.0 if tokens >= 1.0 else (1.0 - tokens) / self.rate

    def give_back(self, key: str) -> None:
        """Undo one `take` that went ahead (another bucket of the same request refused it)."""
        with self._lock:
            if key in self._state:
                tokens, last = self._state[key]
                self._state[key] = (min(self.burst, tokens + 1.0), last)

    def _tokens(self, key: str, now: float) -> float:
        tokens, last = self._state.get(key, (self.burst, now))
        return min(self.burst, tokens + (now - last) * self.rate)

    def _forget_idle(self, now: float) -> None:
        """Drop keys from the least recently used end while they are full again (or too many)."""
        while self._state:
            oldest = next(iter(self._state))
            if len(self._state) <= self.max_keys and self._tokens(oldest, now) < self.burst:
                return
            del self._state[oldest]


@dataclass(frozen=True)
class CallerBudget:
    """The buckets one caller's requests are charged to (`take`: 0.0, or the seconds to wait).

    The Gate charges every HTTP request; calls made inside one (composite steps, search-mode calls)
    can charge the same caller by taking from the request's budget (`budget_of`).
    """

    limits: RateLimits
    caller: str
    address: str | None = None  # anonymous callers also share their address's cap

    def take(self) -> float:
        wait = self.limits.callers.take(self.caller)
        if wait > 0 or self.address is None:
            return wait
        wait = self.limits.addresses.take(self.address)
        if wait > 0:
            self.limits.callers.give_back(self.caller)  # refused as a whole: charge nothing
        return wait


@dataclass
class RateLimits:
    """Who a request is charged to. A token holder: the token's bucket (wherever it calls from).
    Without tokens: each client its own bucket (its MCP session, else its connection), so two local
    agents do not slow each other down, and all of an address's clients together at most
    `ADDRESS_SHARE` buckets' worth, so opening connections does not lift a flood's limit. A request
    whose token failed: its address, at one bucket's rate (guessing is limited too)."""

    rate: float
    burst: int
    clock: Callable[[], float] = time.monotonic
    max_keys: int = MAX_KEYS
    callers: TokenBucket = field(init=False)
    addresses: TokenBucket = field(init=False)

    def __post_init__(self) -> None:
        self.callers = TokenBucket(self.rate, self.burst, self.clock, self.max_keys)
        self.addresses = TokenBucket(self.rate * ADDRESS_SHARE, self.burst * ADDRESS_SHARE, self.clock, self.max_keys)

    def budget(self, scope: Scope, principal: Principal | None) -> CallerBudget:
        host, port = _peer(scope)
        address = _address_key(host)
        if principal is None:
            return CallerBudget(self, f"refused:{address}")
        if principal.authenticated:
            return CallerBudget(self, f"token:{principal.name}")
        session = Headers(scope=scope).get("mcp-session-id", "")[:MAX_SESSION_KEY]
        caller = f"session:{session}" if session else f"peer:{host}:{port}"
        return CallerBudget(self, caller, f"address:{address}")


def _peer(scope: Scope) -> tuple[str, int]:
    client = scope.get("client") or ("?", 0)
    return str(client[0]), int(client[1] or 0)


@functools.lru_cache(maxsize=1024)  # asked of every request's peer (an ipaddress parse)
def _address_key(host: str) -> str:
    """An IPv4 address as it is; an IPv6 address by its /64 (one host may hold a whole /64)."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


def client_of(scope: Scope) -> str:
    """Who a request comes from, for limits that count per client: its token's name, else its address (an
    IPv6 address by its /64)."""
    principal = scope.get(PRINCIPAL)
    if isinstance(principal, Principal) and principal.authenticated:
        return f"token:{principal.name}"
    return f"address:{_address_key(_peer(scope)[0])}"


def budget_of(request: Request | None) -> CallerBudget | None:
    """The budget the Gate charged this request to (None: not over HTTP)."""
    budget = request.scope.get(BUDGET) if request is not None else None
    return budget if isinstance(budget, CallerBudget) else None


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (127.0.0.0/8, ::1), with or without brackets (one rule:
    a source on this machine is judged by it too)."""
    return is_loopback_host(host)


def refuse_unauthenticated(host: str, auth: AuthSettings, insecure_no_auth: bool) -> None:
    """A server reachable beyond loopback needs tokens, unless the operator says otherwise (logged). `host`:
    the name it is reachable by (`hosts.reachable_name`: the bind address or an accepted Host name)."""
    if is_loopback(host) or auth.tokens:
        return
    if insecure_no_auth:
        logger.warning(
            "serving %s WITHOUT authentication (--insecure-no-auth): anyone who can reach that address may call "
            "every tool this server serves",
            host,
        )
        return
    raise SkillshelfError(
        ErrorCode.VALIDATION_ERROR,
        f"refusing to serve {host} without authentication: anyone who can reach it (a bind address beyond "
        "loopback, or a Host name accepted with --allowed-host, which a proxy forwards anyone to) could call every "
        "tool. Add a token with `skillshelf token new NAME` (it writes [auth.tokens.NAME] into the config file) "
        "or set SKILLSHELF_TOKENS=NAME=TOKEN; bind to 127.0.0.1 and accept loopback names only; or pass "
        "--insecure-no-auth to serve anyway.",
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


def web_authorize(required: bool | BearerTokens) -> Callable[[Request], bool]:
    """`WebAccess.authorize` honouring the same tokens: the Gate put the principal in the scope.
    Given the `BearerTokens` in force, whether one is required is read per request (a reload may add one)."""

    def authorize(request: Request) -> bool:
        principal = request.scope.get(PRINCIPAL)
        needed = required.required if isinstance(required, BearerTokens) else required
        return not needed or (isinstance(principal, Principal) and principal.authenticated)

    return authorize


def web_refusal(view: str = DEFAULT_VIEW) -> Callable[[Request], str | None]:
    """`WebAccess.refuse`: the web view shows `view`'s skills, so a token that may not use that view
    gets the HTML 403 page (with the views it may use) instead of them."""

    def refuse(request: Request) -> str | None:
        principal = request.scope.get(PRINCIPAL)
        # a page under /view/NAME/ shows NAME's skills (the Gate checked NAME already), not `view`'s
        shown = view_of(request.url.path) or view
        if not isinstance(principal, Principal) or principal.may_use(shown):
            return None
        allowed = ", ".join(sorted(principal.views)) or "none"
        return (
            f"The token {principal.name!r} may not use the {shown!r} view, which this web view shows. "
            f"It may use: {allowed}."
        )

    return refuse


def error_response(status: int, error: str, description: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": error, "error_description": description}, status_code=status, headers=headers)


@dataclass
class Gate:
    """ASGI middleware: rate limit (`RateLimits`), authentication, view access, body size.

    `tokens`: the table in force, shared with whatever reloads it (default: the tokens of `auth`).
    """

    app: ASGIApp
    auth: AuthSettings
    views: Collection[str] = (DEFAULT_VIEW,)
    clock: Callable[[], float] = time.monotonic
    tokens: BearerTokens | None = None
    limits: RateLimits = field(init=False)

    def __post_init__(self) -> None:
        if self.tokens is None:
            self.tokens = BearerTokens(self.auth.tokens)
        self.limits = RateLimits(self.auth.rate_per_s, self.auth.burst, self.clock)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] in OPEN_PATHS:  # open to all; a valid token gets the details (server/health.py)
            principal, _ = self._authenticate(Headers(scope=scope))
            if principal is not None and principal.authenticated:
                scope[PRINCIPAL] = principal
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        principal, problem = self._authenticate(Headers(scope=scope))
        budget = self.limits.budget(scope, principal)
        wait = budget.take()
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
        scope[BUDGET] = budget
        if scope.get("method") in BODY_METHODS:
            buffered = await self._read_body(scope, receive, send)
            if buffered is None:
                return
            receive = buffered
        await self.app(scope, receive, send)

    def _authenticate(self, headers: Headers) -> tuple[Principal | None, str]:
        assert self.tokens is not None
        if not self.tokens.required:
            return ANONYMOUS, ""
        table = self.tokens.table  # one table for the whole request, whatever a reload does meanwhile
        header = headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer":
            return None, "missing"
        token = token.strip()
        if not token:
            return None, "empty"
        found = table.verify(token)
        return (found, "") if found is not None else (None, "invalid")

    async def _read_body(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """The whole body (JSON-RPC requests are small), or None after answering 413."""
        limit = self.auth.max_request_bytes
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await _too_large(limit)(scope, receive, send)
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
                await _too_large(limit)(scope, receive, send)
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return _replay([{"type": "http.request", "body": b"".join(chunks), "more_body": False}], receive)


def _too_large(limit: int) -> JSONResponse:
    """The 413 answer, built only for a body over the limit (every request built it: 5 us, issue 36)."""
    return error_response(413, "too_large", f"request body over {limit} bytes; send a smaller request")


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
