"""Where a project's notes live: the `NotesStore` interface and its embedded implementation.

The embedded store (the default, for a personal library) keeps each project's notes in
`<project>/.agent-memory/session-notes.jsonl` (store.py owns the file). With `database_url` set to a
PostgreSQL URL they live in the shared database instead (state/postgres/notes.py; `state.open_stores`
picks the store), keyed by the project's
name under its root, so every replica serving the same project roots sees the same notes.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.db import is_disk_full
from skillshelf.memory import store
from skillshelf.projects import Project

NOTES_DIR = ".agent-memory"
NOTES_FILE = "session-notes.jsonl"
NOTES_RELATIVE = f"{NOTES_DIR}/{NOTES_FILE}"


class NotesStore(Protocol):
    """A project's notes: appended one at a time, read all at once (newest first)."""

    @property
    def location(self) -> str | None:
        """The notes file relative to the project, as the `file` an added note reports; None: no file (the
        shared database)."""

    def append(self, project: Project, record: dict[str, Any]) -> bool:
        """Store one note (the seed's fields plus `id`, `tags`, `author`); True when a torn last line
        (a crash mid-write) had to be terminated first. SkillshelfError when it cannot be stored."""

    def read(self, project: Project) -> store.NotesView:
        """Every readable note of the project, newest first. SkillshelfError when they cannot be read."""


class FileNotes:
    """The embedded store: one JSONL file per project, inside the project."""

    location = NOTES_RELATIVE

    def append(self, project: Project, record: dict[str, Any]) -> bool:
        path = notes_path(project)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return store.append_line(path, store.encode_line(record))
        except OSError as exc:
            fix = "Free space on that disk" if is_disk_full(exc) else "Check that the project folder is writable"
            raise SkillshelfError(
                ErrorCode.FILESYSTEM_ERROR,
                f"Could not write {project.name}/{NOTES_RELATIVE}: {exc.strerror or type(exc).__name__}; nothing "
                f"of the note was kept. {fix}, then add the note again.",
            ) from exc

    def read(self, project: Project) -> store.NotesView:
        path = notes_path(project)
        try:
            return store.read_notes(path, f"{project.name}/{NOTES_RELATIVE}")
        except OSError as exc:
            raise SkillshelfError(
                ErrorCode.FILESYSTEM_ERROR,
                f"Could not read {project.name}/{NOTES_RELATIVE}: {exc.strerror or type(exc).__name__}. "
                "Check that it is a readable regular file (not a FIFO or device).",
            ) from exc


def notes_path(project: Project) -> Path:
    """The notes file's real path; ACCESS_DENIED when `.agent-memory` or the file links out of the project."""
    real = Path(os.path.realpath(project.path / NOTES_DIR / NOTES_FILE))
    if not real.is_relative_to(project.path):
        raise SkillshelfError(
            ErrorCode.ACCESS_DENIED,
            f"{project.name}/{NOTES_RELATIVE} links outside the project, so skillshelf will neither read nor "
            "write it. Replace the link with a real folder inside the project.",
        )
    return real
