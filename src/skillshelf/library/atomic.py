"""The one way skillshelf writes a file of its own whole: a temporary file beside it, flushed to disk, then
renamed over it (or linked, when it must not replace one), and the folder's entry flushed. A reader, or a
crash, sees the old file or the new one, never a part (the lock, the sources' state, `doc --out`, the config
file a token is added to, a new skill's files)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

NEW_FILE_MODE = 0o644


def write_atomically(
    path: Path, text: str | bytes, *, mode: int | None = None, new_mode: int = NEW_FILE_MODE, replace: bool = True
) -> None:
    """Write `text` (str: UTF-8, newlines as given) to `path` whole.

    `mode`: the file's permissions (None: those of the file it replaces, else `new_mode`). `replace=False`: never
    over an existing file (FileExistsError; nothing written). OSError as the system raised it, nothing left
    behind.
    """
    data = text.encode("utf-8") if isinstance(text, str) else text
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    staged = Path(name)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        staged.chmod(mode if mode is not None else _mode_of(path, new_mode))
        if replace:
            staged.replace(path)
        else:
            os.link(staged, path)  # refuses an existing file, where a rename would replace it
    finally:
        staged.unlink(missing_ok=True)
    _sync_folder(path.parent)


def _mode_of(path: Path, new_mode: int) -> int:
    try:
        return path.stat().st_mode & 0o777
    except FileNotFoundError:
        return new_mode


def _sync_folder(folder: Path) -> None:
    """Flush the folder's entry for a renamed file, where the system allows it (not on Windows)."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
