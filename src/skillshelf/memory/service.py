"""Add and read a project's notes: the functions behind both the MCP tools and the CLI.

Notes are records in the seed's format (`type`, `content`, `timestamp`) plus `id`, `tags` and `author`,
kept by a `NotesStore` (notes.py): by default `<project>/.agent-memory/session-notes.jsonl`, one JSON
object a line (store.py owns the file), or the shared PostgreSQL database when `database_url` is set.
"""

from __future__ import annotations

import bisect
import logging
import uuid
from datetime import UTC, datetime

from skillshelf.caller import current_caller
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.memory import store
from skillshelf.memory.models import Note, NoteAdded, NoteList
from skillshelf.memory.notes import NOTES_DIR, NOTES_FILE, NOTES_RELATIVE, FileNotes, NotesStore
from skillshelf.projects import ProjectRoots

logger = logging.getLogger(__name__)

__all__ = ["NOTES_DIR", "NOTES_FILE", "NOTES_RELATIVE", "add_note", "get_notes", "parse_since"]
NOTE_TYPES = ("decision", "hypothesis", "blocker", "general")
DEFAULT_LIMIT = 50
MAX_LIMIT = 500
MAX_CONTENT_BYTES = 16 * 1024
MAX_TAGS = 20
MAX_TAG_CHARS = 64
MAX_REPORTED_SKIPS = 100


def add_note(
    projects: ProjectRoots,
    project: str,
    note_type: str,
    content: str,
    tags: list[str] | None = None,
    notes: NotesStore | None = None,
) -> NoteAdded:
    """Store one note of the project in `notes` (default: its notes file, made on first use)."""
    if note_type not in NOTE_TYPES:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR, f"type {note_type!r} is not a note type; use one of {', '.join(NOTE_TYPES)}."
        )
    _check_content(content)
    clean_tags = _clean_tags(tags or [])
    found = projects.resolve(project)
    notes = notes or FileNotes()
    # The seed's fields and timestamp format (JavaScript's toISOString) first, then ours.
    note = Note(
        id=uuid.uuid4().hex[:12],
        type=note_type,
        content=content,
        tags=clean_tags,
        timestamp=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        author=current_caller.get(),
    )
    record: dict[str, object] = {"type": note_type, "content": content, "timestamp": note.timestamp, "id": note.id}
    if clean_tags:
        record["tags"] = clean_tags
    if note.author:
        record["author"] = note.author
    if notes.append(found, record):
        logger.warning(
            "%s/%s ended in a torn line; the new note starts on a line of its own", found.name, NOTES_RELATIVE
        )
    where = notes.location
    return NoteAdded(project=found.name, file=where, stored_in="file" if where else "database", note=note)


def get_notes(
    projects: ProjectRoots,
    project: str,
    *,
    note_type: str | None = None,
    query: str | None = None,
    since: str | None = None,
    limit: int = DEFAULT_LIMIT,
    notes: NotesStore | None = None,
) -> NoteList:
    """The project's notes, newest first, filtered by type, words (all must appear) and time."""
    if not 1 <= limit <= MAX_LIMIT:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"limit must be 1-{MAX_LIMIT}; got {limit}.")
    since_epoch = parse_since(since) if since else None
    words = query.lower().split() if query else []
    found = projects.resolve(project)
    view = (notes or FileNotes()).read(found)
    matching = _matching(view.notes, note_type, since_epoch, words)
    return NoteList(
        project=found.name,
        notes=[_wire(n) for n in matching[:limit]],
        total=len(matching),
        skipped_lines=view.skipped[:MAX_REPORTED_SKIPS],
        warnings=[_unread_warning(view.unread_bytes)] if view.unread_bytes else None,
    )


def _unread_warning(unread: int) -> str:
    return (
        f"{NOTES_RELATIVE} is over {store.MAX_READ_BYTES // (1024 * 1024)} MiB: only its newest notes were read "
        f"and the first {unread // (1024 * 1024)} MiB were skipped (line numbers count from there). Archive old "
        "notes to another file to see them all."
    )


def parse_since(since: str) -> float:
    """An ISO 8601 date ('2025-11-05', midnight UTC) or date-time ('2025-11-05T14:30:00Z'; no zone is UTC)."""
    try:
        return store.parse_timestamp(since.strip())
    except store.BadLine:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"since {since[:40]!r} is not an ISO 8601 date or date-time; use e.g. 2025-11-05 or 2025-11-05T14:30:00Z.",
        ) from None


def _matching(
    notes: list[store.StoredNote], note_type: str | None, since_epoch: float | None, words: list[str]
) -> list[store.StoredNote]:
    """The notes that pass every filter, still newest first (comprehensions: cheap even for 10,000 notes)."""
    if since_epoch is not None:
        # Newest first, so the notes at or after `since` are a prefix.
        notes = notes[: bisect.bisect_right(notes, -since_epoch, key=lambda n: -n.when)]
    if note_type is not None:
        notes = [n for n in notes if n.type == note_type]
    for word in words:
        notes = [n for n in notes if word in n.haystack]
    return notes


def _wire(note: store.StoredNote) -> Note:
    return Note(
        id=note.id,
        type=note.type,
        content=note.content,
        tags=list(note.tags),
        timestamp=note.timestamp,
        author=note.author,
    )


def _check_content(content: str) -> None:
    if not content.strip():
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, "content is empty; write the note's text.")
    size = len(_utf8(content, "content"))
    if size > MAX_CONTENT_BYTES:
        raise SkillshelfError(
            ErrorCode.CONTENT_TOO_LARGE,
            f"content is {size} bytes; a note holds at most {MAX_CONTENT_BYTES} bytes (16 KiB). "
            "Summarise it, or split it into several notes.",
        )


def _clean_tags(tags: list[str]) -> list[str]:
    """Tags stripped, blanks dropped, duplicates removed (first wins), within the count and length caps."""
    cleaned = list(dict.fromkeys(t.strip() for t in tags if t.strip()))
    if len(cleaned) > MAX_TAGS:
        raise SkillshelfError(
            ErrorCode.CONTENT_TOO_LARGE, f"{len(cleaned)} tags; a note takes at most {MAX_TAGS}. Keep the telling ones."
        )
    for tag in cleaned:
        _utf8(tag, "tags")
        if len(tag) > MAX_TAG_CHARS:
            raise SkillshelfError(
                ErrorCode.CONTENT_TOO_LARGE,
                f"tag {tag[:20]!r}... is {len(tag)} characters; tags are at most {MAX_TAG_CHARS}. Shorten it.",
            )
    return cleaned


def _utf8(text: str, field: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR, f"{field} holds invalid Unicode (a lone surrogate); send valid text."
        ) from None
