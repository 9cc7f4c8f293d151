"""Path safety and display.

Paths that reach an agent are always relative to a library root, or shown with the home
directory as '~', so messages never leak the user's directory layout.
"""

from __future__ import annotations

import os
from pathlib import Path


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
    try:
        resolved = path.resolve(strict=True)
    except PermissionError:
        # Not a question of where it points: the read that follows reports it as unreadable.
        resolved = path.resolve()
    except (OSError, RuntimeError):
        return None
    return resolved if resolved == root or resolved.is_relative_to(root) else None


def is_servable(path: Path, root: Path) -> bool:
    """Inside `root` (resolved) after following links, with no dot-name on the way, before or after them.

    Discovery never lists `.git/`, `.env` or `.skillshelf/`; a symlink must not serve them either
    (a `references/config` linking to `.git/config` would hand out a remote URL with its token).
    """
    return servable_target(path, root) is not None


def servable_target(path: Path, root: Path) -> Path | None:
    """`path` resolved when it is servable (see `is_servable`), else None."""
    resolved = _resolved_within(path, root)
    if resolved is None:
        return None
    lexical = path.relative_to(root).parts if path.is_relative_to(root) else ()
    if any(part.startswith(".") for part in (*lexical, *resolved.relative_to(root).parts)):
        return None
    return resolved


def relative_to_root(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return path.name
