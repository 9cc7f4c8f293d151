"""The network clients, given to the source layer (library/sources/remote.py).

Each is imported when a source of its kind is fetched, not when the command line starts: the MCP client
alone costs the SDK's import (about 0.6 s), which `skillshelf --help` and every other command would pay."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skillshelf.library.sources.remote import RemoteFiles
    from skillshelf.library.sources.spec import SourceSpec


def _fetch_index(spec: SourceSpec, token: str | None) -> RemoteFiles:
    from skillshelf.remote.index import fetch_index

    return fetch_index(spec, token)


def _fetch_mcp(spec: SourceSpec, token: str | None) -> RemoteFiles:
    from skillshelf.remote.mcp import fetch_mcp

    return fetch_mcp(spec, token)


def register() -> None:
    """Give the source layer its network clients (the command line calls this once)."""
    from skillshelf.library.sources.remote import register_fetcher

    register_fetcher("index", _fetch_index)
    register_fetcher("mcp", _fetch_mcp)
