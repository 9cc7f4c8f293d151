"""The embedded backend (the default, for a personal library): usage events in SQLite in the library's
state folder (library/usage/store.py), each project's notes in its `.agent-memory/session-notes.jsonl`
(memory/notes.py), the call log in a JSONL file in the user state folder (files/calllog.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skillshelf.library.usage.store import UsageStore
from skillshelf.memory.notes import FileNotes
from skillshelf.state.files.calllog import JsonlCallLogStore


def check_url(url: str) -> None:
    """`file://` names the embedded files, which take no path: theirs are fixed."""
    if url.strip().lower() != "file://":
        raise ValueError(
            f"{url.strip()!r}: the embedded files take no path (the usage history lives in the library's "
            "state folder, notes in each project, the call log at [call_log] path); write file:// or leave "
            "database_url unset"
        )


def open_backend(url: str | None) -> FileStores:
    return FileStores()


class FileStores:
    shared = False

    def start(self) -> str | None:
        return None

    def health(self) -> dict[str, Any] | None:
        return None

    def usage(self, embedded_path: Path, busy_timeout: float) -> UsageStore:
        return UsageStore(embedded_path, busy_timeout=busy_timeout)

    def notes(self) -> FileNotes:
        return FileNotes()

    def call_log(self, path: Path, max_bytes: int) -> JsonlCallLogStore:
        return JsonlCallLogStore(path, max_bytes)
