"""Memory notes in the shared PostgreSQL database (`database_url`), keyed by the project's name under
its root: every replica serving the same project roots reads and writes the same notes."""

from __future__ import annotations

from typing import Any

from skillshelf.memory import store
from skillshelf.projects import Project
from skillshelf.state.database import database
from skillshelf.state.url import redacted

LOCATION = "postgresql"  # what NoteAdded.file says: the notes are in the database, not a file


class PostgresNotes:
    """A project's notes in table `memory_notes`; failures are StateUnavailable (retryable)."""

    location = LOCATION

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = redacted(url)

    def append(self, project: Project, record: dict[str, Any]) -> bool:
        with database(self.url).connection(f"storing this note of {project.name}") as conn:
            conn.execute(
                """INSERT INTO memory_notes (project, id, type, content, tags, stamp, at_epoch, author)
                   VALUES (%s, %s, %s, %s, %s, %s, %s, %s)""",
                note_row(project.name, record),
            )
        return False  # a row is never torn

    def read(self, project: Project) -> store.NotesView:
        with database(self.url).connection(f"reading the notes of {project.name}") as conn:
            rows = conn.execute(
                """SELECT seq, id, type, content, tags, stamp, at_epoch, author FROM memory_notes
                   WHERE project = %s ORDER BY at_epoch DESC, seq DESC""",
                (project.name,),
            ).fetchall()
        return store.NotesView(notes=[_stored(*row) for row in rows], skipped=[])


def note_row(project: str, record: dict[str, Any]) -> tuple[Any, ...]:
    """The row of a note record (the notes file's fields), for `memory_notes`."""
    tags = [t for t in record.get("tags") or [] if isinstance(t, str)]
    stamp = str(record["timestamp"])
    return (
        project,
        record["id"],
        record["type"],
        record["content"],
        tags,
        stamp,
        store.parse_timestamp(stamp),
        record.get("author"),
    )


def _stored(
    seq: int, note_id: str, note_type: str, content: str, tags: list[str], stamp: str, when: float, author: str | None
) -> store.StoredNote:
    return store.StoredNote(
        line=seq,
        id=note_id,
        type=note_type,
        content=content,
        tags=tuple(tags),
        timestamp=stamp,
        when=when,
        haystack="\n".join((content, *tags)).lower(),
        author=author,
    )
