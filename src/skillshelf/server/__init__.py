"""MCP assembly: the server factory, tool plumbing and transports.

`build_server` is loaded lazily: domain tool modules import `skillshelf.server.tooling`, and an
eager import of the factory here would import them back while they are half-initialised.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skillshelf.server.app import build_server

__all__ = ["build_server"]


def __getattr__(name: str) -> Any:
    if name == "build_server":
        from skillshelf.server.app import build_server

        return build_server
    raise AttributeError(name)
