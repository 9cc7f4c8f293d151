"""Walking a skill's folder: every file it holds, safely.

One walk for every listing of a skill's files (the Skills extension's manifests, readSkillFile's list,
`skillshelf check`'s size limits): dot-names (`.git/`, `.env`, `.skillshelf/`) and build folders are
never entered; a symlink is followed only while its target stays inside the library root without a
dot-name on the way; a folder reached twice (a symlink loop such as `references/a -> .`) is walked
once; depth and file count are bounded, so no folder makes a listing run forever.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from skillshelf.library.skill.discovery import IGNORED_NAMES
from skillshelf.library.skill.paths import is_servable

MAX_DEPTH = 16  # folders below the skill's own; far deeper than any real skill
MAX_FOLDERS = 4096  # folders entered in one walk (links between siblings could otherwise multiply them)
MAX_NAME_BYTES = 255  # the longest file name the common filesystems accept
# What one skill may hold to be published by the MCP Skills extension (SEP-2640).
MAX_FILES = 512
MAX_TOTAL_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class FolderFile:
    served: str  # relative to the skill's folder, '/'-separated
    path: Path  # on disk, as reached (symlinks not resolved)
    size: int


class TooManyFiles(Exception):
    """The folder holds more than the walk's limit; nothing past it was listed."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} files")
        self.limit = limit


def kept(name: str) -> bool:
    """Names a listing may show: no dot-names, no build or dependency folders, valid UTF-8."""
    if name.startswith(".") or name in IGNORED_NAMES:
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # an undecodable byte in the name (surrogate-escaped): no URI can carry it
        return False
    return True


def walk_folder(
    folder: Path,
    real_root: Path,
    *,
    max_files: int,
    crossing: Callable[[Path], bool] | None = None,
    loops: list[Path] | None = None,
) -> Iterator[FolderFile]:
    """Every regular file under `folder`, sorted by served path per folder; raises TooManyFiles past `max_files`.

    `crossing(real_path)` is asked about each entry reached through a symlink (its resolved path
    differs from where it was found): False skips it (a view's hidden skill, say). A link to a folder
    that holds it (`references/again -> ..`, `a -> .`) is not followed; `loops` collects them.
    """
    entered = 0
    start = folder.stat() if folder.is_dir() else None
    holders = ((start.st_dev, start.st_ino),) if start else ()
    pending: list[tuple[Path, str, int, bool, tuple[tuple[int, int], ...]]] = [
        (folder, "", 0, _crossed(folder, real_root), holders)
    ]
    count = 0
    while pending:
        directory, prefix, depth, via_link, above = pending.pop()
        try:
            info = directory.stat()
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        entered += 1
        if entered > MAX_FOLDERS:
            raise TooManyFiles(max_files)
        del info
        folders: list[tuple[Path, str, int, bool, tuple[tuple[int, int], ...]]] = []
        for entry in entries:
            path = directory / entry.name
            linked = via_link or entry.is_symlink()
            target = _admitted(entry, path, real_root, linked, crossing)
            if target is None:
                continue
            if stat.S_ISDIR(target.st_mode):
                if (target.st_dev, target.st_ino) in above:
                    if loops is not None:
                        loops.append(path)  # a link back to a folder that holds it: never followed
                elif depth < MAX_DEPTH:
                    inner = (*above, (target.st_dev, target.st_ino))
                    folders.append((path, prefix + entry.name + "/", depth + 1, linked, inner))
            elif stat.S_ISREG(target.st_mode):
                count += 1
                if count > max_files:
                    raise TooManyFiles(max_files)
                yield FolderFile(prefix + entry.name, path, target.st_size)
        pending.extend(reversed(folders))


def _admitted(
    entry: os.DirEntry[str], path: Path, real_root: Path, linked: bool, crossing: Callable[[Path], bool] | None
) -> os.stat_result | None:
    """The entry's stat (symlinks followed) when the walk may show or enter it, else None."""
    if not kept(entry.name) or len(entry.name.encode()) > MAX_NAME_BYTES:
        return None
    try:
        target = path.stat()
    except OSError:
        return None  # a dangling link, or gone
    if linked and (not is_servable(path, real_root) or (crossing is not None and not crossing(path.resolve()))):
        return None
    return target


def _crossed(path: Path, real_root: Path) -> bool:
    """Whether reaching `path` goes through a symlink (the skill's folder itself may be one)."""
    try:
        return path.resolve() != real_root / path.relative_to(real_root)
    except ValueError:
        return True
