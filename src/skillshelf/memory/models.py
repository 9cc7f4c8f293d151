"""Wire models of the memory tools (camelCase on the wire, snake_case in Python)."""

from __future__ import annotations

from skillshelf.envelope import WireModel


class Note(WireModel):
    id: str  # stored with the note, or 'line-N' for notes written without one (the seed's)
    type: str  # decision | hypothesis | blocker | general; other types written by hand read as-is
    content: str
    tags: list[str]
    timestamp: str  # ISO 8601, as stored
    author: str | None = None  # the token name of whoever wrote it over authenticated HTTP


class NoteAdded(WireModel):
    project: str
    file: str | None = None  # the notes file, relative to the project; absent when they are in the shared database
    stored_in: str = "file"  # "file" (the notes file) or "database" (the shared database of database_url)
    note: Note


class NoteList(WireModel):
    project: str
    notes: list[Note]  # newest first
    total: int  # notes matching the filters, before the limit
    skipped_lines: list[int]  # line numbers of unreadable lines (torn or hand-edited), the first 100
    warnings: list[str] | None = None  # e.g. a file so large that only its newest notes were read
