"""Streamable HTTP transport settings: DNS-rebinding protection stays on for every bind address."""

from __future__ import annotations

from mcp.server.transport_security import TransportSecuritySettings

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")
WILDCARD_OR_LOOPBACK = frozenset({"0.0.0.0", "::", "127.0.0.1", "localhost", "::1"})


def transport_security(host: str, extra_hosts: tuple[str, ...] = ()) -> TransportSecuritySettings:
    """Allow loopback names, the bind host (unless it is a wildcard) and any hosts the user names.

    Browsers on other sites can reach a server on localhost; checking Host and Origin is what stops
    a rebinding attack, so a wider bind address widens the allow-list only as far as asked.
    """
    names = list(LOOPBACK_HOSTS)
    if host not in WILDCARD_OR_LOOPBACK:
        names.append(f"[{host}]" if ":" in host else host)
    names.extend(extra_hosts)
    hosts = [pattern for name in names for pattern in _host_patterns(name)]
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins)


def _host_patterns(name: str) -> list[str]:
    """'example.com' -> itself and 'example.com:*'; a name that already has a port stays as it is."""
    bare = name.rsplit("]", 1)[-1] if name.startswith("[") else name
    return [name] if ":" in bare else [name, f"{name}:*"]
