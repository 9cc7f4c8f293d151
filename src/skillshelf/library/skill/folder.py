"""Walking a skill's folder: every file it holds, safely.

One walk for every listing of a skill's files (loadSkill's `metadata.resources`, the Skills extension's
manifests, readSkillFile's list, the web page's file list, `skillshelf show`, `skillshelf check`'s size
limits), and one ignore list (`kept`) for it, for discovery, for the digest's tree and for what
`readSkillFile` serves, so what is listed is exactly what is served. Dot-names (`.git/`, `.env`,
`.skillshelf/`) and build folders are never entered; a symlink is followed only while its target
stays inside the library root without a dot-name on the way; a folder reached twice (a symlink loop
such as `references/a -> .`) is walked once; depth and file count are bounded, so no folder makes a listing run forever.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from skillshelf.library.skill.ignored import IGNORED_NAMES
from skillshelf.library.skill.paths import is_servable

# C0 and C1 controls, DEL, the bidirectional marks and overrides, and the zero-width characters: in a name
# they could move a terminal's cursor, erase a line ("\x1b[2K\r"), reorder what a curator reads or make
# `pdf-fi\u200cll` look like `pdf-fill`. A name holding one is refused here (never listed, served or
# installed); cli/output.py escapes the same characters in any text it prints.
CONTROL_CHARACTERS = "\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060\u2066-\u2069\ufeff"
_CONTROL = re.compile(f"[{CONTROL_CHARACTERS}]")

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
    mtime_ns: int = 0  # of the file itself (a link followed), for a change signature
    mode: int = 0


class TooManyFiles(Exception):
    """The folder holds more than the walk's limit; nothing past it was listed."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} files")
        self.limit = limit


def ignored(name: str) -> bool:
    """A dot-name (`.git`, `.env`, `.skillshelf`) or a build or dependency folder: never looked into."""
    return name.startswith(".") or name in IGNORED_NAMES


def undecodable(name: str) -> bool:
    """True for a file name that is not valid UTF-8: Python carries its bad bytes as lone surrogates,
    which SQLite, JSON and the MCP answer cannot encode, so such a name is reported, never served."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def has_controls(name: str) -> bool:
    """True for a name holding a control character (CONTROL_CHARACTERS)."""
    return _CONTROL.search(name) is not None


def is_refused(name: str) -> bool:
    """A name that is not ignored yet is never listed nor served, and is reported: not UTF-8, or holding a
    control character."""
    return undecodable(name) or has_controls(name)


def kept(name: str) -> bool:
    """Names a listing may show and a read may serve: not ignored, valid UTF-8, no control character."""
    return not ignored(name) and not is_refused(name)


def listed(directory: Path | str, refused: list[Path] | None = None) -> list[os.DirEntry[str]]:
    """The entries of one folder a walk may look at, sorted by name (raises OSError when it cannot be
    listed); an entry whose name is refused (not UTF-8, a control character) is left out and added to
    `refused`, to be reported."""
    with os.scandir(directory) as iterator:
        entries = sorted(iterator, key=lambda e: e.name)
    found = []
    for entry in entries:
        if ignored(entry.name):
            continue
        if is_refused(entry.name):
            if refused is not None:
                refused.append(Path(entry.path))
            continue
        found.append(entry)
    return found


def walk_folder(
    folder: Path,
    real_root: Path,
    *,
    max_files: int,
    crossing: Callable[[Path], bool] | None = None,
    loops: list[Path] | None = None,
    refused: list[Path] | None = None,
) -> Iterator[FolderFile]:
    """Every regular file under `folder`, sorted by served path per folder; raises TooManyFiles past `max_files`.

    `refused` collects the names left out for not being UTF-8 or holding a control character (a caller
    reports them).
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
            entries = listed(directory, refused)
        except OSError:
            continue
        entered += 1
        if entered > MAX_FOLDERS:
            raise TooManyFiles(max_files)
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
                yield FolderFile(prefix + entry.name, path, target.st_size, target.st_mtime_ns, target.st_mode)
        pending.extend(reversed(folders))


def _admitted(
    entry: os.DirEntry[str], path: Path, real_root: Path, linked: bool, crossing: Callable[[Path], bool] | None
) -> os.stat_result | None:
    """The entry's stat (symlinks followed) when the walk may show or enter it, else None."""
    if len(entry.name.encode()) > MAX_NAME_BYTES:
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
