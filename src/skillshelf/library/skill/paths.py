"""Path safety and display.

Paths that reach an agent are always relative to a library root, or shown with the home
directory as '~', so messages never leak the user's directory layout.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal


def display_path(path: Path) -> str:
    """The path with the home directory shown as '~'."""
    text = str(path)
    home = str(Path.home())
    if home not in ("", "/") and (text == home or text.startswith(home + os.sep)):
        return "~" + text[len(home) :]
    return text


def is_within(path: Path, root: Path) -> bool:
    """True when `path` (resolved, following symlinks) stays inside `root` (resolved)."""
    return _resolved_within(path, root) is not None


def _resolved_within(path: Path, root: Path) -> Path | None:
    """`path` resolved, when it stays inside `root` (resolved); else None."""
    found = _resolved_below(path, str(root))
    return Path(found[0]) if found is not None else None


def _resolved_below(path: Path, root: str) -> tuple[str, str] | None:
    """`path` resolved, and that relative to `root`, when it stays inside `root`; else None."""
    resolved = _resolved_text(path)
    inside = None if resolved is None else _below(resolved, root)
    return (resolved, inside) if resolved is not None and inside is not None else None


# Where the kernel says an open descriptor's file is (Linux); None where there is no such folder.
FD_LINKS = "/proc/self/fd" if hasattr(os, "O_PATH") and Path("/proc/self/fd").is_dir() else None


def _resolved_text(path: Path) -> str | None:
    """`path` with every link followed, as text (what `Path.resolve` does, without pathlib's parsing: this
    runs for every file a load serves)."""
    try:
        return _kernel_resolved(path) if FD_LINKS is not None else os.path.realpath(path, strict=True)
    except PermissionError:
        # Not a question of where it points: the read that follows reports it as unreadable.
        return os.path.realpath(path)
    except (OSError, RuntimeError):
        return None


def _kernel_resolved(path: Path) -> str:
    """`os.path.realpath(path, strict=True)` in three system calls: the kernel resolves the path as it opens it
    (O_PATH: nothing is read, a FIFO does not block) and names the file it found; realpath's lstat of every
    component was a tenth of a repeat load (issue 36). Raises OSError as realpath does."""
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        return os.readlink(f"{FD_LINKS}/{fd}")  # noqa: PTH115 (text, as above: no pathlib parsing)
    except OSError:  # /proc hidden from this process (a sandbox, a file system faked in tests): ask realpath
        return os.path.realpath(path, strict=True)
    finally:
        os.close(fd)


def _below(path: str, root: str) -> str | None:
    """`path` relative to `root`, compared as `Path.is_relative_to` does ('' for root itself); None when
    it is not under it. Both are normalised paths (str of a Path, or realpath's answer)."""
    if path == root:
        return ""
    prefix = root if root.endswith(os.sep) else root + os.sep
    return path[len(prefix) :] if path.startswith(prefix) else None


def is_servable(path: Path, root: Path) -> bool:
    """Inside `root` (resolved) after following links, with no dot-name on the way, before or after them.

    Discovery never lists `.git/`, `.env` or `.skillshelf/`; a symlink must not serve them either
    (a `references/config` linking to `.git/config` would hand out a remote URL with its token).
    """
    return servable_target(path, root) is not None


def servable_target(path: Path, root: Path) -> Path | None:
    """`path` resolved when it is servable (see `is_servable`), else None."""
    found = servable_text(path, root)
    return Path(found) if found is not None else None


def servable_text(path: Path, root: Path) -> str | None:
    """`servable_target` as text: a load checks every file it serves, and pathlib's parsing of the answer was a
    tenth of the check (issue 36)."""
    root_text = str(root)
    found = _resolved_below(path, root_text)
    return found[0] if found is not None and not _dot_named(path, root_text, found[1]) else None


def servable_or_why(path: Path, root: Path) -> Path | Literal["outside", "dot-path"]:
    """`path` resolved when it is servable (see `is_servable`), else the rule it breaks: it resolves outside
    `root`, or a dot-name is on its way. One resolve for a reader that reports which (`is_within`, then
    `is_servable`, resolved it twice)."""
    root_text = str(root)
    found = _resolved_below(path, root_text)
    if found is None:
        return "outside"
    if _dot_named(path, root_text, found[1]):
        return "dot-path"
    return Path(found[0])


def _dot_named(path: Path, root: str, inside: str) -> bool:
    """Whether a dot-name is on the way to `path` under `root`, before its links (lexical) or after (`inside`)."""
    lexical = _below(str(path), root) or ""
    parts = (*lexical.split(os.sep), *inside.split(os.sep))  # noqa: PTH206 (text, as above)
    return any(part.startswith(".") for part in parts)


def relative_to_root(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name
