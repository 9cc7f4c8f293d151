"""The kinds of source, one class each (kinds/base.py says what a kind answers), in one registry.

A new kind: its module here, one line in `KINDS`, its name in spec.py's `Kind` (a test keeps the two
equal), its tests and its line in docs/curating.md. Nothing outside these classes compares a kind's name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.fetch import Snapshot
from skillshelf.library.sources.kinds.base import SignatureFields, SourceKind
from skillshelf.library.sources.kinds.git import Git
from skillshelf.library.sources.kinds.local import Archive, File, Folder
from skillshelf.library.sources.kinds.remote import Index, Mcp
from skillshelf.library.sources.spec import Kind, SourceSpec

__all__ = ["KINDS", "SignatureFields", "SourceKind", "kind_of", "locked_kind", "open_snapshot"]

KINDS: dict[Kind, SourceKind] = {kind.name: kind for kind in (Git(), Archive(), Folder(), File(), Index(), Mcp())}


def kind_of(name: Kind) -> SourceKind:
    return KINDS[name]


def locked_kind(name: str, at: str) -> SourceKind:
    """The kind a lock entry names (the lock is input: an unknown name is refused, naming the known ones)."""
    found = next((kind for kind in KINDS.values() if kind.name == name), None)
    if found is None:
        raise SourceError(f"{at} has kind {name!r}; expected one of {', '.join(KINDS)}")
    return found


@contextmanager
def open_snapshot(spec: SourceSpec, root: Path, scratch: Path, *, commit: str | None = None) -> Iterator[Snapshot]:
    """The source's content (git: at `commit` when given, else at the ref's newest commit)."""
    snapshot = kind_of(spec.kind).snapshot(spec, root, scratch, commit)
    try:
        yield snapshot
    finally:
        close = getattr(snapshot.reader, "close", None)
        if close is not None:
            close()
