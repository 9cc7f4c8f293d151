"""A source's folder replaced whole: staged beside the old one, swapped in, the lock written after.

Each change to a source (add, update, sync, remove) is staged in `<root>/.skillshelf-staging-*/`: a
dot-name, so discovery and the file watcher never look in it, and inside the root, so the swap is a
rename on one file system. Before the swap, a journal there names the target folder, the digest of
the folder it must hold afterwards and the lock to write then. The swap itself is one atomic
`renameat2(RENAME_EXCHANGE)` on Linux (two renames elsewhere); the old folder ends in the staging
folder and is deleted once the lock is written.

A process killed at any point leaves either the old folder whole or the new one whole, never a mix;
`recover` (run before every source command) finishes a swap that happened, writing its lock, and
otherwise puts back what was there and drops the staging folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from skillshelf.library.skill.digest import digest_entries, walk_tree
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.lock import Lock, parse_lock, read_lock, render_lock, write_atomically, write_lock

logger = logging.getLogger(__name__)

STAGING_PREFIX = ".skillshelf-staging-"
JOURNAL = "journal.json"
TREE = "tree"  # the staged library: TREE/<name>/ is the new folder of source <name>
OLD = "old"
ABSENT = "absent"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _no_checkpoint(point: str) -> None:
    """Where a test may stop a process: fetched, staged, journaled, swapped, locked."""


CHECKPOINT: Callable[[str], None] = _no_checkpoint


def checkpoint(point: str) -> None:
    CHECKPOINT(point)


def new_staging(root: Path) -> Path:
    try:
        return Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=root))
    except OSError as exc:
        raise SourceError(f"cannot make a staging folder in {root}: {exc.strerror}; is the library writable?") from exc


def folder_digest(folder: Path | None) -> str:
    """A digest of everything servable in `folder`, or 'absent'."""
    if folder is None or not folder.is_dir():
        return ABSENT
    return digest_entries(list(walk_tree(folder)))


def inside_root(root: Path, path: Path) -> Path:
    """`path`, when a writer may replace or fill it: strictly below `root`, with no '..' and no dot-name
    on the way (a source's folder never has one), through no link (the folders above it resolve inside
    `root`), and not a link itself; else a SourceError. A name comes from the lock or a journal, input
    from whoever last pushed, so every writer resolves its target here, whatever was checked before."""
    rest = path.parts[len(root.parts) :]
    if path.parts[: len(root.parts)] != root.parts or not rest or any(part in (".", "..") for part in rest):
        raise SourceError(f"{path} is outside the library {root}; skillshelf writes only its sources' folders there")
    if any(part.startswith(".") for part in rest):
        raise SourceError(f"{path} has a dot-name in it; a source's folder in {root} never has one")
    if not path.parent.resolve().is_relative_to(root.resolve()):
        raise SourceError(f"{path} leads outside the library {root} through a link; nothing was changed")
    if path.is_symlink():
        raise SourceError(
            f"{path.relative_to(root).as_posix()} is a link in {root}; skillshelf installs a source as a folder and "
            "never writes through a link. Remove the link (nothing was changed) and run the command again"
        )
    return path


def commit(root: Path, staging: Path, target: Path, new_folder: Path | None, new_lock: Lock) -> None:
    """Make `target` hold `new_folder` (None: nothing), then write `new_lock`; see the module's doc."""
    inside_root(root, target)
    if new_folder is not None:
        inside_root(staging, new_folder)
    journal = {
        "target": target.relative_to(root).as_posix(),
        "expect": folder_digest(new_folder),
        "lock": render_lock(new_lock),
    }
    write_atomically(staging / JOURNAL, json.dumps(journal, indent=1))
    checkpoint("journaled")
    try:
        _swap(staging, target, new_folder)
    except OSError as exc:
        raise SourceError(f"could not move the new {target.name} into place: {exc}; the library is unchanged") from exc
    checkpoint("swapped")
    write_lock(root / "skillshelf.lock", new_lock)
    checkpoint("locked")
    discard(staging)


def _swap(staging: Path, target: Path, new_folder: Path | None) -> None:
    if new_folder is None:
        if os.path.lexists(target):
            target.rename(staging / OLD)
        return
    if not os.path.lexists(target):
        new_folder.rename(target)
    elif not _exchange(new_folder, target):
        target.rename(staging / OLD)
        try:
            new_folder.rename(target)
        except OSError:
            (staging / OLD).rename(target)
            raise


def _exchange(first: Path, second: Path) -> bool:
    """Swap two paths in one step (Linux renameat2); False where the system cannot, so the caller renames twice."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(second))


def discard(staging: Path) -> None:
    """Delete a staging folder, its journal first (a half-deleted one is then plainly abandoned)."""
    with contextlib.suppress(FileNotFoundError):
        (staging / JOURNAL).unlink()
    shutil.rmtree(staging, ignore_errors=True)
    if staging.exists():
        logger.warning("could not delete %s; delete it by hand (it holds nothing the library uses)", staging)


def recover(root: Path) -> list[str]:
    """Finish or undo what an interrupted command left in `root`; what was done, for the curator."""
    stagings = sorted(root.glob(STAGING_PREFIX + "*"))
    return [_recover_one(root, staging) for staging in stagings if staging.is_dir() and not staging.is_symlink()]


def _recover_one(root: Path, staging: Path) -> str:
    try:
        journal = json.loads((staging / JOURNAL).read_text(encoding="utf-8"))
        named = str(journal["target"])
        expected, lock = str(journal["expect"]), parse_lock(str(journal["lock"]), str(staging / JOURNAL))
    except (OSError, ValueError, KeyError, TypeError, SourceError):  # never reached the swap: nothing changed
        discard(staging)
        return f"removed {staging.name}, left by a command that stopped before changing the library"
    try:
        target = inside_root(root, root.joinpath(*named.split("/")))
    except SourceError:  # no swap of skillshelf's wrote that journal: follow it nowhere
        discard(staging)
        return f"removed {staging.name}: its journal names {named!r}, outside the library (or a link); nothing moved"
    if folder_digest(target) == expected:
        if read_lock(root / "skillshelf.lock") != lock:
            write_lock(root / "skillshelf.lock", lock)
        discard(staging)
        return f"finished the change of {target.name} a stopped command had made (the lock now says so)"
    old = staging / OLD
    if not os.path.lexists(target) and os.path.lexists(old):
        old.rename(target)
    discard(staging)
    return f"undid the unfinished change of {target.name}: it holds what it held before"
