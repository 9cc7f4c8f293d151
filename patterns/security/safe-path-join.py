"""Join an untrusted relative path onto a base directory without letting it escape.

Rejects absolute paths, drive letters, UNC paths and NUL bytes, then resolves ``..`` and
symlinks and checks that the result is still inside the resolved base directory.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any


class PathEscapeError(ValueError):
    """The requested path would resolve outside the base directory."""


def safe_path_join(base: str, relative: str, must_exist: bool = False) -> str:
    """Return the absolute, resolved path of ``relative`` inside ``base``.

    ``relative`` is untrusted input (an archive member name, a URL path, a tool argument).
    The check is done on fully resolved paths, so both ``../`` segments and symlinks that point
    outside ``base`` are caught. ``base`` itself may be a symlink; it is resolved first.
    Reads the file system (to resolve symlinks) but never writes to it.

    Raises:
        ValueError: empty base, NUL byte, or an absolute / drive / UNC ``relative``.
        PathEscapeError: the resolved path is outside ``base`` (a ValueError subclass).
        FileNotFoundError: ``must_exist`` is true and the path does not exist.
    """
    if not base:
        raise ValueError("base must not be empty")
    if "\x00" in base or "\x00" in relative:
        raise ValueError("paths must not contain NUL bytes")
    windows = PureWindowsPath(relative)
    if PurePosixPath(relative).is_absolute() or windows.drive or windows.root:
        raise ValueError(f"relative path must be relative: {relative!r}")
    root = Path(base).resolve()
    target = (root / relative).resolve()
    if target != root and not target.is_relative_to(root):
        raise PathEscapeError(f"{relative!r} resolves outside the base directory")
    if must_exist and not target.exists():
        raise FileNotFoundError(f"{relative!r} does not exist in the base directory")
    return str(target)


def run(input: dict[str, Any]) -> dict[str, Any]:
    """JSON entry point.

    Input keys: ``base`` and ``relative`` (required), ``must_exist`` (optional).
    Returns ``{"path": str}``.
    """
    return {"path": safe_path_join(**input)}


if __name__ == "__main__":
    try:
        result = run(json.load(sys.stdin))
    except (ValueError, TypeError, FileNotFoundError) as exc:
        print(json.dumps({"error": str(exc)}))
        sys.exit(1)
    print(json.dumps(result))
