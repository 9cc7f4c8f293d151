"""Where usage events, memory notes and the call log are kept: one backend per URL scheme.

`open_stores(url)` picks the backend `database_url` names by its scheme (None: the embedded files) and
gives its three stores, each behind its interface: `UsageEvents` (library/usage/events.py), `NotesStore`
(memory/notes.py) and `CallLogStore` (state/calllog.py). Services, tools and the library see only those.

A backend is one package with `check_url(url)` (the URL accepted, stripped, or ValueError saying what to
fix) and `open_backend(url)` (its `Stores`); `BACKENDS` names it under each scheme it serves. A new
backend is its package and a line here. Nothing of a backend is imported until a URL names it: the
PostgreSQL one needs the optional `postgres` extra.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from skillshelf.library.usage.events import UsageEvents
    from skillshelf.memory.notes import NotesStore
    from skillshelf.state.calllog import CallLogStore

EMBEDDED = "file"  # the scheme of the embedded files: what no URL means
# scheme -> the backend's package
BACKENDS: dict[str, str] = {
    EMBEDDED: "skillshelf.state.files",
    "postgresql": "skillshelf.state.postgres",
    "postgres": "skillshelf.state.postgres",
}


class Stores(Protocol):
    """One backend's stores. Opening one connects to nothing: a store connects when first used."""

    @property
    def shared(self) -> bool:
        """True when the stores live outside this machine's files (every replica sees the same ones)."""

    def start(self) -> str | None:
        """Connect now (`serve` calls it before serving), so an unreachable backend is one clear error at
        start; what the start log says about it (None: nothing to say)."""

    def health(self) -> dict[str, Any] | None:
        """The backend's part of `/health` (None: it has none); never raises."""

    def usage(self, embedded_path: Path, busy_timeout: float) -> UsageEvents:
        """The usage events (`embedded_path`: where the embedded files keep them, the library's state folder)."""

    def notes(self) -> NotesStore:
        """The projects' memory notes."""

    def call_log(self, path: Path, max_bytes: int) -> CallLogStore:
        """The call log (`path`: the embedded file); about twice `max_bytes` of the newest records are kept."""


def scheme_of(url: str | None) -> str:
    """The backend scheme of a `database_url` (None: the embedded files); ValueError naming the known ones."""
    if url is None:
        return EMBEDDED
    try:
        scheme = urlsplit(url.strip()).scheme.lower() if "://" in url else ""  # `user:password@host`: no scheme
    except ValueError:  # the backend's own check says what is wrong
        scheme = "postgresql" if url.strip().startswith(("postgresql:", "postgres:")) else ""
    if scheme not in BACKENDS:
        shown = f"scheme {scheme!r}" if scheme else "a URL with no scheme"
        known = ", ".join(f"{name}://" for name in BACKENDS)
        raise ValueError(
            f"{shown} names no store backend; the known schemes are {known}: e.g. "
            "postgresql://skillshelf:PASSWORD@db.example:5432/skillshelf, or leave it unset for the embedded files"
        )
    return scheme


def check_url(url: str) -> str | None:
    """`url` as its backend accepts it (None: the embedded files), or ValueError saying what to fix."""
    return cast(str | None, _backend(scheme_of(url)).check_url(url))


def open_stores(url: str | None) -> Stores:
    """The stores of the backend `url` names: None (or file://) the embedded files, postgresql:// PostgreSQL."""
    return cast(Stores, _backend(scheme_of(url)).open_backend(url))


def _backend(scheme: str) -> Any:
    return importlib.import_module(BACKENDS[scheme])
