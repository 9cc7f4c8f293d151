"""The embedded call log store: one JSON line per call in a file that rotates to `.1` past `max_bytes`
(server/calllog.py's writer thread hands it batches; `skillshelf log` reads it back)."""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.state.calllog import StoreFailed

logger = logging.getLogger(__name__)

NOT_A_FILE = "not a regular file"


class JsonlCallLogStore:
    """The default store: one JSON line per call in a file that rotates to `.1` past `max_bytes`. A disk
    that fails is logged once; its lines are lost (`StoreFailed`, which /health shows) and calls go on
    (never a failed call)."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._warned: set[str] = set()

    @property
    def where(self) -> str:
        return str(self.path)

    def records(self) -> Iterator[dict[str, Any]]:
        return read_records(self.path)

    def append(self, lines: list[bytes]) -> None:
        """Append `lines`, rotating to `.1` whenever the next would pass `max_bytes`."""
        fd = -1
        try:
            fd, size = self._open()
            chunk = bytearray()
            for line in lines:
                if size + len(chunk) + len(line) > self.max_bytes and (size or chunk):
                    os.write(fd, chunk)
                    os.close(fd)
                    fd = -1
                    self.path.replace(self.path.with_name(self.path.name + ".1"))
                    fd, size = self._open()
                    chunk.clear()
                chunk += line
            os.write(fd, chunk)
        except _NotAFile as refused:
            self._warn(
                NOT_A_FILE,
                "call log %s is a %s, not a regular file: calls go on unlogged. Point [call_log] path at a file",
                refused.kind,
            )
            raise StoreFailed(f"the log's path is a {refused.kind}, not a regular file") from refused
        except OSError as exc:
            self._warn("os", "call log %s cannot be written (%s); calls go on unlogged", exc)
            raise StoreFailed(f"the log file cannot be written ({exc.strerror or type(exc).__name__})") from exc
        finally:
            if fd >= 0:
                os.close(fd)

    def _open(self) -> tuple[int, int]:
        """The log opened for appending, and its size. Its folder is made only when the open finds none (the
        first batch, or one deleted since): not asked of the disk before every batch (issue 36)."""
        try:
            return self._open_in_folder()
        except FileNotFoundError:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return self._open_in_folder()

    def _open_in_folder(self) -> tuple[int, int]:
        """`_open` in a folder that exists; `_NotAFile` for a FIFO, socket or device (never opened blocking)."""
        try:
            found = self.path.stat()
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISREG(found.st_mode):
                raise _NotAFile(found.st_mode)
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # a FIFO nobody reads, created since the check
                raise _NotAFile(stat.S_IFIFO) from exc
            raise
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            os.close(fd)
            raise _NotAFile(found.st_mode)
        return fd, found.st_size

    def _warn(self, kind: str, message: str, *args: object) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            logger.warning(message, self.path, *args)


class _NotAFile(OSError):
    def __init__(self, mode: int) -> None:
        super().__init__(NOT_A_FILE)
        self.kind = describe_file_type(mode)


def describe_file_type(mode: int) -> str:
    kinds = (
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISSOCK, "socket"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISDIR, "directory"),
    )
    return next((name for test, name in kinds if test(mode)), "special file")


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every record of the log and its rotated predecessor, oldest first; broken lines skipped."""
    for candidate in (path.with_name(path.name + ".1"), path):
        text = _read_log_file(candidate)
        for line in text.splitlines() if text is not None else ():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("tool"), str):
                yield record


def _read_log_file(path: Path) -> str | None:
    """A log file's text (None: there is none). A FIFO or device there is refused, never read from:
    reading one would wait for a writer forever."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as file:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR,
                f"{path} is a {describe_file_type(mode)}, not a call log file: point --path (or [call_log] path) "
                "at a regular file",
            )
        return file.read().decode("utf-8", errors="replace")
