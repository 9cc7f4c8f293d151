"""Memory notes in the shared PostgreSQL database (`database_url`), keyed by the project's name under
its root: every replica serving the same project roots reads and writes the same notes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillshelf.memory import store
from skillshelf.projects import Project
from skillshelf.state.postgres.database import database
from skillshelf.state.postgres.url import redacted


class PostgresNotes:
    """A project's notes in table `memory_notes`; failures are StateUnavailable (retryable)."""

    location = None  # no file: NoteAdded says `storedIn: "database"` (never the URL: it names the host and user)

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


@dataclass(frozen=True)
class ImportedNotes:
    project: str
    read: int  # notes read from the file
    added: int  # notes new to the database (the others were imported before)
    skipped_lines: list[int]  # unreadable lines of the file, left out


def import_notes(url: str, project: str, path: Path) -> ImportedNotes:
    """Copy the notes of one project's notes file into the database. Idempotent: a note is one row per
    (project, id), so a second run adds only notes written since; one transaction adds all or nothing."""
    view = store.read_notes(path, f"{project}/{path.name}")
    rows = [note_row(project, _record(note)) for note in view.notes]
    with database(url).connection(f"importing the notes of {project}") as conn, conn.transaction():
        before = _count(conn, project)
        conn.cursor().executemany(
            """INSERT INTO memory_notes (project, id, type, content, tags, stamp, at_epoch, author)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (project, id) DO NOTHING""",
            rows[::-1],  # oldest first: rows keep the file's order
        )
        added = _count(conn, project) - before
    return ImportedNotes(project, len(rows), added, view.skipped)


def _record(note: store.StoredNote) -> dict[str, Any]:
    return {
        "id": note.id,
        "type": note.type,
        "content": note.content,
        "tags": list(note.tags),
        "timestamp": note.timestamp,
        "author": note.author,
    }


def _count(conn: Any, project: str) -> int:
    row = conn.execute("SELECT count(*) FROM memory_notes WHERE project = %s", (project,)).fetchone()
    return int(row[0]) if row else 0
