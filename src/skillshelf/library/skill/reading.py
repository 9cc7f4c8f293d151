"""Reading library files defensively: size caps, binary detection, encodings, line endings."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from skillshelf.library.skill.models import Finding, Severity

DEFAULT_MAX_FILE_BYTES = 1024 * 1024
MAX_FILE_BYTES_CEILING = 256 * 1024 * 1024  # the most `max_file_bytes` may be: one read sets aside that much
BINARY_SNIFF_BYTES = 8192


@dataclass
class Reporter:
    """Collects findings for one file, already relative to its root."""

    path: str
    root: str = ""
    findings: list[Finding] = field(default_factory=list)

    def add(self, severity: Severity, code: str, message: str, line: int | None = None) -> None:
        self.findings.append(Finding(self.path, line, severity, code, message, self.root))


@dataclass(frozen=True)
class ReadFile:
    """One read of a regular file: its first bytes (up to the cap the reader asked for) and its mode, both
    from the open handle. A skill's parse hands its documents' reads to the scanner, which judges the same
    bytes: each file is opened once, not three times (the loader's read, the scanner's head, its whole)."""

    data: bytes
    mode: int


def read_text(path: Path, report: Reporter, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> str | None:
    """Read a text file; None when it cannot be used at all (unreadable or binary).

    Oversized files are cut at `max_bytes` and reported: a 50 MB "skill" must not take
    the server's memory or an agent's context. Invalid UTF-8 is replaced and reported,
    BOMs are dropped and CRLF/CR become LF so every later step sees one shape.
    """
    read = read_reported(path, report, max_bytes)
    return None if read is None else text_of(read, report, max_bytes)


def read_reported(path: Path, report: Reporter, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> ReadFile | None:
    """`read_text`'s read (up to `max_bytes` + 1 bytes, to tell an oversized file); None, reported, when
    the file cannot be opened or read."""
    try:
        return read_regular(path, max_bytes + 1)
    except NotRegularFile:
        report.add(
            "error",
            "file-not-regular",
            "is not a regular file (a FIFO, socket or device); it was not opened. Replace it with a file.",
        )
    except PermissionError:
        report.add("error", "file-unreadable", "permission denied; make the file readable to this user")
    except OSError as exc:
        report.add("error", "file-unreadable", f"cannot be read ({exc.strerror or type(exc).__name__})")
    return None


def text_of(read: ReadFile, report: Reporter, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> str | None:
    """`read_text`'s text of what `read_reported` read: None, reported, when it looks binary."""
    raw = read.data
    if b"\x00" in raw[:BINARY_SNIFF_BYTES]:
        report.add("error", "file-binary", "looks binary (contains NUL bytes); a skill document must be text")
        return None
    if len(raw) > max_bytes:
        raw = raw[:max_bytes]
        report.add(
            "error",
            "file-too-large",
            f"larger than the {max_bytes // 1024} KiB limit; only the first {max_bytes // 1024} KiB are "
            "used. Split it into smaller files (for example references/).",
        )
    text = _decode(raw, report)
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


class NotRegularFile(OSError):
    """A FIFO, socket or device where a file was expected: opening or reading one can block forever."""

    def __init__(self, path: Path) -> None:
        super().__init__(errno.EINVAL, "not a regular file (a FIFO, socket or device)", str(path))


# O_NONBLOCK: opening a FIFO for reading must not wait for a writer; regular files ignore the flag.
READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def read_regular_file(path: Path, limit: int) -> bytes:
    """Up to `limit` bytes of a regular file; NotRegularFile for anything else (checked on the open handle)."""
    return read_regular(path, limit).data


def read_regular(path: Path, limit: int) -> ReadFile:
    """`read_regular_file`'s bytes with the file's mode, from one open."""
    fd = os.open(path, READ_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return ReadFile(handle.read(limit), mode)
    finally:
        os.close(fd)


def _decode(raw: bytes, report: Reporter) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(raw) - 3 and len(raw) > 3:
            # A multi-byte character cut by the size cap, not an encoding problem.
            return raw[: exc.start].decode("utf-8", errors="replace")
        line = raw[: exc.start].count(b"\n") + 1
        report.add(
            "warning",
            "encoding-invalid-utf8",
            "is not valid UTF-8; undecodable bytes were replaced with U+FFFD. Re-save the file as UTF-8.",
            line,
        )
        return raw.decode("utf-8", errors="replace")
