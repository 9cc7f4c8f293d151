"""The notes file: locked appends of whole lines, and a forgiving reader that caches what it parsed.

Writers append each note as one write of a complete line under an advisory lock, so concurrent
servers never interleave or tear notes. Readers take no lock: they parse complete lines only (an
unterminated last line is re-read every time, never cached), skip lines that are not notes, and
cache the parse by the file's identity, size and mtime, so after an append only the new tail is
parsed.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from stat import S_ISREG
from typing import Any, NamedTuple

from skillshelf.library.locks import fd_lock
from skillshelf.library.skill.reading import NotRegularFile

logger = logging.getLogger(__name__)

# Binary mode matters on Windows, where os.open defaults to text mode and would turn '\n' into '\r\n'.
# The caller passes the resolved path, so O_NOFOLLOW only trips if a link was swapped in since the check.
OPEN_FLAGS = getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
# Never wait on a FIFO put where the notes file should be (the handle is then refused as not a file).
NONBLOCK = getattr(os, "O_NONBLOCK", 0)
MAX_READ_BYTES = 32 * 1024 * 1024  # a larger file is read from its tail: the newest notes, bounded memory
FINGERPRINT_BYTES = 64
MAX_LOGGED_SKIPS = 10
MAX_CACHED_FILES = 64
# JSON allows these raw inside strings, but line splitters such as str.splitlines() break on them.
LINE_BREAKING_CHARACTERS = {"\u0085": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


class StoredNote(NamedTuple):  # a NamedTuple: immutable and twice as fast to build as a frozen dataclass
    line: int
    id: str
    type: str
    content: str
    tags: tuple[str, ...]
    timestamp: str  # as stored
    when: float  # seconds since the epoch: orders notes and serves `since`
    haystack: str  # content and tags, lower-cased, for queries
    author: str | None = None  # the token name of whoever wrote it over authenticated HTTP

    @property
    def order(self) -> tuple[float, int]:
        return (self.when, self.line)


@dataclass(frozen=True)
class NotesView:
    notes: list[StoredNote]  # newest first; never mutated once built (threads share it)
    skipped: list[int]  # line numbers, ascending (counted from the first line read)
    unread_bytes: int = 0  # the start of a file over MAX_READ_BYTES, not read: its oldest notes


EMPTY_VIEW = NotesView(notes=[], skipped=[])


@dataclass(frozen=True)
class ParsedFile:
    """The parse of a file's complete lines, plus the view served for exactly this file state."""

    key: tuple[int, int, int, int]  # st_dev, st_ino, st_size, st_mtime_ns
    offset: int  # bytes of complete lines parsed
    lines: int  # complete lines parsed
    fingerprint: bytes  # the bytes just before `offset`: notices a rewrite that happened to grow the file
    complete: NotesView
    view: NotesView


class BadLine(ValueError):
    pass


_cache: dict[Path, ParsedFile] = {}
_cache_lock = threading.Lock()


# --- writing ---------------------------------------------------------------------------------------


def encode_line(record: dict[str, Any]) -> bytes:
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
    for character, escape in LINE_BREAKING_CHARACTERS.items():
        text = text.replace(character, escape)
    return (text + "\n").encode("utf-8")


def append_line(path: Path, line: bytes) -> bool:
    """Append one complete line; True when a torn last line (a crash mid-write) had to be terminated first.

    O_APPEND puts every write at the end; the lock keeps the torn-line check and the write together
    so two writers can neither interleave nor both "repair" the same line. A write that fails part way (a
    full disk) is cut back off under the same lock: it leaves no partial line for every later read to report.
    """
    # Read-write, not write-only: the torn-line check reads the last byte under the same lock.
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | OPEN_FLAGS | NONBLOCK, 0o666)
    try:
        _require_regular(fd, path)
        with _locked(fd, path):
            size = os.fstat(fd).st_size
            torn = size > 0 and _read_range(fd, size - 1, size) != b"\n"
            try:
                _write_all(fd, b"\n" + line if torn else line)
            except OSError:
                os.ftruncate(fd, size)  # shrinking needs no space; the file is as it was
                raise
    finally:
        os.close(fd)
    return torn


def _write_all(fd: int, data: bytes) -> None:
    """One os.write in practice; a short write (a full disk, a signal) continues under the same lock."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


if sys.platform == "win32":

    @contextmanager
    def _locked(fd: int, path: Path) -> Iterator[None]:
        # Windows byte-range locks are mandatory: a lock on the notes file itself would make a reader, who
        # takes none, fail mid-read. Writers meet at a lock file of their own instead, in the user's state
        # folder (never beside the notes: nothing new in the user's project), named by the notes file's path.
        from hashlib import sha256

        from filelock import FileLock

        from skillshelf.config.call_log import user_state_dir

        folder = user_state_dir() / "locks"
        folder.mkdir(parents=True, exist_ok=True)
        name = sha256(os.path.normcase(str(path)).encode("utf-8")).hexdigest()[:32]
        with FileLock(folder / f"notes-{name}.lock"):
            yield

else:

    @contextmanager
    def _locked(fd: int, path: Path) -> Iterator[None]:
        with fd_lock(fd):  # flock is advisory: readers, who take no lock, read on
            yield


# --- reading ---------------------------------------------------------------------------------------


def read_notes(path: Path, label: str) -> NotesView:
    """Every readable note in `path` (newest first) and the line numbers of the unreadable ones.

    `label` names the file in warnings. A missing file has no notes.
    """
    try:
        fd = os.open(path, os.O_RDONLY | OPEN_FLAGS | NONBLOCK)
    except FileNotFoundError:
        return EMPTY_VIEW
    try:
        _require_regular(fd, path)
        stat = os.fstat(fd)
        key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        with _cache_lock:
            cached = _cache.get(path)
        if cached is not None and cached.key == key:
            return cached.view
        base = cached if cached is not None and _extends(fd, cached, key) else None
        parsed = _parse(fd, base, key, label)
    finally:
        os.close(fd)
    with _cache_lock:
        _cache.pop(path, None)
        _cache[path] = parsed  # re-inserted last: the oldest entry is the first to go
        while len(_cache) > MAX_CACHED_FILES:
            del _cache[next(iter(_cache))]
    return parsed.view


def _require_regular(fd: int, path: Path) -> None:
    if not S_ISREG(os.fstat(fd).st_mode):
        raise NotRegularFile(path)


def _extends(fd: int, cached: ParsedFile, key: tuple[int, int, int, int]) -> bool:
    """True when the file is the cached one with bytes appended (the only change writers make)."""
    same_file = cached.key[:2] == key[:2]
    if not same_file or key[2] <= cached.key[2]:
        return False  # another file, or rewritten in place (the same size with a new mtime, or shorter)
    start = max(0, cached.offset - FINGERPRINT_BYTES)
    return _read_range(fd, start, cached.offset) == cached.fingerprint


def _parse(fd: int, base: ParsedFile | None, key: tuple[int, int, int, int], label: str) -> ParsedFile:
    offset, lines = (base.offset, base.lines) if base else (0, 0)
    unread = base.complete.unread_bytes if base else 0
    if key[2] - offset > MAX_READ_BYTES:
        # Too much to hold at once: read the tail from its first complete line; older notes stay unread.
        base, lines = None, 0
        start = key[2] - MAX_READ_BYTES
        skip = _read_range(fd, start, min(key[2], start + 1024 * 1024)).find(b"\n") + 1
        offset = unread = start + skip if skip else key[2]
    data = _read_range(fd, offset, key[2])
    complete_end = data.rfind(b"\n") + 1
    new_notes, new_skipped = _parse_lines(data[:complete_end], first_line=lines + 1)
    complete = _merge(base.complete if base else NotesView([], [], unread), new_notes, new_skipped)
    lines += data.count(b"\n", 0, complete_end)
    offset += complete_end
    view = complete
    tail = data[complete_end:]
    tail_skipped: list[tuple[int, str]] = []
    if tail.strip():
        # An unterminated last line: a crash mid-write, or a hand edit without a final newline.
        tail_notes, tail_skipped = _parse_lines(tail, first_line=lines + 1)
        view = _merge(complete, tail_notes, tail_skipped)
    _log_skipped(label, new_skipped + tail_skipped)
    previous = base.fingerprint if base else b""
    fingerprint = (previous + data[max(0, complete_end - FINGERPRINT_BYTES) : complete_end])[-FINGERPRINT_BYTES:]
    return ParsedFile(
        key=key,
        offset=offset,
        lines=lines,
        fingerprint=fingerprint,
        complete=complete,
        view=view,
    )


def _parse_lines(data: bytes, first_line: int) -> tuple[list[StoredNote], list[tuple[int, str]]]:
    """The notes among `data`'s lines, and (line number, reason) for each line that is not one."""
    notes: list[StoredNote] = []
    skipped: list[tuple[int, str]] = []
    for number, raw in enumerate(data.split(b"\n"), start=first_line):
        if not raw.strip():
            continue  # blank lines (and the split's empty last piece) hold nothing to lose
        try:
            notes.append(parse_line(raw, number))
        except BadLine as exc:
            skipped.append((number, str(exc)))
    return notes, skipped


def parse_line(raw: bytes, number: int) -> StoredNote:
    """One line as a note, or BadLine. Extra keys are ignored; a missing id becomes 'line-N'."""
    try:
        record = json.loads(raw.decode("utf-8").lstrip("\ufeff"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise BadLine("not UTF-8 JSON") from exc
    if not isinstance(record, dict):
        raise BadLine("not a JSON object")
    note_type, content, timestamp = record.get("type"), record.get("content"), record.get("timestamp")
    if not isinstance(note_type, str) or not note_type or not isinstance(content, str):
        raise BadLine("no string 'type' and 'content'")
    if not isinstance(timestamp, str):
        raise BadLine("no string 'timestamp'")
    raw_tags = record.get("tags")
    tags = tuple(t for t in raw_tags if isinstance(t, str)) if isinstance(raw_tags, list) else ()
    raw_id = record.get("id")
    return StoredNote(
        line=number,
        id=raw_id if isinstance(raw_id, str) and raw_id else f"line-{number}",
        type=note_type,
        content=content,
        tags=tags,
        timestamp=timestamp,
        when=parse_timestamp(timestamp),
        haystack="\n".join((content, *tags)).lower(),
        author=author if isinstance(author := record.get("author"), str) and author else None,
    )


def parse_timestamp(text: str) -> float:
    """Seconds since the epoch of an ISO 8601 date or date-time; no zone means UTC."""
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.timestamp()
    except (ValueError, OverflowError) as exc:
        raise BadLine(f"timestamp {text[:40]!r} is not ISO 8601") from exc


def _merge(old: NotesView, notes: list[StoredNote], skipped: list[tuple[int, str]]) -> NotesView:
    """`old` plus later lines' notes, newest first. Appends are usually newer than everything before."""
    if not notes and not skipped:
        return old
    notes.sort(key=lambda n: n.order, reverse=True)
    if not old.notes or not notes or notes[-1].order >= old.notes[0].order:
        merged = notes + old.notes
    else:
        merged = sorted(notes + old.notes, key=lambda n: n.order, reverse=True)
    return NotesView(
        notes=merged, skipped=old.skipped + [number for number, _ in skipped], unread_bytes=old.unread_bytes
    )


def _log_skipped(label: str, skipped: list[tuple[int, str]]) -> None:
    if not skipped:
        return
    shown = ", ".join(f"{number} ({reason})" for number, reason in skipped[:MAX_LOGGED_SKIPS])
    more = f" and {len(skipped) - MAX_LOGGED_SKIPS} more" if len(skipped) > MAX_LOGGED_SKIPS else ""
    logger.warning(
        "%s: skipped unreadable line(s) %s%s (torn by a crash or edited by hand); the other notes are intact",
        label,
        shown,
        more,
    )


def _read_range(fd: int, start: int, end: int) -> bytes:
    os.lseek(fd, start, os.SEEK_SET)
    chunks: list[bytes] = []
    remaining = end - start
    while remaining > 0:
        chunk = os.read(fd, remaining)
        if not chunk:
            break  # the file shrank under us; the next read starts over
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def clear_cache() -> None:
    with _cache_lock:
        _cache.clear()
