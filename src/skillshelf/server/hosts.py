"""Which Host and Origin headers a server answers: DNS-rebinding protection for every route.

Browsers on other sites can reach a server on localhost; checking Host and Origin is what stops a
rebinding attack, so a wider bind address widens the allow-list only as far as asked. `HostGuard` is
one ASGI middleware around a whole app (`/mcp`, `/health` and the web view alike).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.server.auth import is_loopback

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_OR_LOOPBACK = frozenset({"0.0.0.0", "::", "127.0.0.1", "localhost", "::1"})


def transport_security(
    host: str, extra_hosts: tuple[str, ...] = (), extra_origins: tuple[str, ...] = ()
) -> TransportSecuritySettings:
    """Allow loopback names, the bind host (unless it is a wildcard) and any hosts the user names;
    as origins, those hosts plus any origins the user names (`https://app.example.com[:port]`)."""
    names = list(LOOPBACK_HOSTS)
    if host not in WILDCARD_OR_LOOPBACK:
        names.append(host)
    names.extend(extra_hosts)
    hosts = [pattern for name in names for pattern in _host_patterns(_bracketed(name))]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    for origin in extra_origins:
        scheme, separator, rest = origin.rstrip("/").partition("://")
        if not separator or not rest or "/" in rest:
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR, f"allowed origin {origin!r}: write it as scheme://host[:port]"
            )
        origins.extend(f"{scheme}://{pattern}" for pattern in _host_patterns(_bracketed(rest)))
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def reachable_name(host: str, allowed_hosts: Iterable[str] = ()) -> str:
    """The name a server is judged by for the rules of a network-facing server (tokens required, no
    unauthenticated skill execution): its bind address when that is not loopback, else the first
    non-loopback Host it accepts (`--allowed-host`), else the bind address.

    A server bound to 127.0.0.1 that accepts `Host: skills.example.com` is there for a proxy, which
    forwards whoever reaches it: it is as reachable as a server bound to a public address.
    """
    if not is_loopback(host):
        return host
    for name in allowed_hosts:
        bare = _split_port(_bracketed(name))[0].strip("[]")
        if not is_loopback(bare):
            return bare
    return host


def _bracketed(name: str) -> str:
    """An IPv6 literal as a Host header spells it: '::1' -> '[::1]' ('[::1]:8765' stays as it is)."""
    if name.startswith("["):
        return name
    try:
        return f"[{ipaddress.IPv6Address(name)}]"
    except ValueError:
        return name


def _host_patterns(name: str) -> list[str]:
    """'example.com' -> itself and 'example.com:*'; a name that already has a port stays as it is."""
    bare = name.rsplit("]", 1)[-1] if name.startswith("[") else name
    return [name] if ":" in bare else [name, f"{name}:*"]


def _split_port(host: str) -> tuple[str, str | None]:
    if host.startswith("["):
        name, _, rest = host.partition("]")
        return name + "]", rest[1:] if rest.startswith(":") else None
    name, colon, port = host.rpartition(":")
    return (name, port) if colon else (host, None)


def _matches(value: str, allowed: list[str]) -> bool:
    """Case-insensitive (DNS names are), a trailing dot ignored, 'name:*' matching any port."""
    name, port = _split_port(value.lower())
    name = name.rstrip(".")
    wanted = f"{name}:{port}" if port is not None else name
    for pattern in (p.lower() for p in allowed):
        if pattern == wanted or (pattern.endswith(":*") and port is not None and pattern[:-2] == name):
            return True
    return False


class HostGuard:
    """ASGI middleware: 421 for a Host not allowed (or a loopback Host from a remote peer), 403 for a foreign Origin."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self.app = app
        self.hosts = security.allowed_hosts
        self.origins = security.allowed_origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = self._problem(scope)
            if problem is not None:
                status, message = problem
                await PlainTextResponse(message, status_code=status)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _problem(self, scope: Scope) -> tuple[int, str] | None:
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if not host or not _matches(host, self.hosts):
            name = _split_port(host)[0] or "(none)"
            return 421, (
                f"Invalid Host header {host!r}: this server answers only its own names. To accept it, start "
                f"skillshelf with --allowed-host {name} (or a host:port)."
            )
        peer = (scope.get("client") or ("", 0))[0]
        if is_loopback(_split_port(host)[0]) and not is_loopback(peer):
            return 421, "Invalid Host header: a loopback name from a remote address"
        origin = headers.get("origin")
        if origin and not _matches(origin.split("://", 1)[-1], [o.split("://", 1)[-1] for o in self.origins]):
            return 403, "Invalid Origin header"
        return None
