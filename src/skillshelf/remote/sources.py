"""The network clients, given to the source layer (library/sources/remote.py)."""

from __future__ import annotations


def register() -> None:
    """Give the source layer its network clients (the command line calls this once)."""
    from skillshelf.library.sources.remote import register_fetcher
    from skillshelf.remote.index import fetch_index
    from skillshelf.remote.mcp import fetch_mcp

    register_fetcher("index", fetch_index)
    register_fetcher("mcp", fetch_mcp)
