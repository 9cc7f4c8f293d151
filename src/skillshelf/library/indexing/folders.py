"""Where a derived store (an index, its vectors) is kept: a root's own .skillshelf/ or the user cache.

Every store is rebuilt from the files, so its folder is a cache: the names say which roots a store
is for, and a store nothing opens any more is pruned. The skill library (library/index/places.py)
and the session archive (artifacts/archive.py) both keep their stores here.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
from pathlib import Path

import platformdirs

from skillshelf.library.skill.paths import display_path

logger = logging.getLogger(__name__)

INDEX_DIR_NAME = ".skillshelf"
# How every skillshelf before issue 35 named a root's index and vectors: for the absolute paths of the roots.
_OLD_STORE = re.compile(r"(?:index|vectors)-[0-9a-f]{12}\.sqlite3")


def user_cache_dir(cache_dir: Path | None = None) -> Path:
    """`cache_dir` (the setting), else the platform's user cache folder (platformdirs: XDG on Linux)."""
    return cache_dir or platformdirs.user_cache_path("skillshelf", appauthor=False)


def _roots_digest(roots: list[Path], holder: Path | None = None) -> str:
    names = [b"." if root == holder else os.fsencode(root) for root in roots]  # any bytes a path holds
    return hashlib.sha256(b"\n".join(names)).hexdigest()[:12]


def store_name(kind: str, roots: list[Path], state_dir: Path) -> str:
    """The file name of the `index` or the `vectors` of these roots in `state_dir`, which other root lists
    may share. In a root's own .skillshelf/ that root is named "." (`index-here-…`): the index keeps every
    path relative to its root, so a copied or moved library finds its own index rather than building a
    second one beside the first."""
    holder = state_dir.parent if state_dir.name == INDEX_DIR_NAME and state_dir.parent in roots else None
    if holder is None:
        return f"{kind}-{_roots_digest(roots)}.sqlite3"
    return f"{kind}-here-{_roots_digest(roots, holder)}.sqlite3"


def prune_old_stores(state_dir: Path) -> None:
    """Remove, from a root's own .skillshelf/, the indexes and vectors named for absolute paths (and their
    -wal, -shm and lock files). Nothing opens them any more: each list of roots stored there is now named
    relative to that root, and a copied or moved library carried one for its old path (16 MB for a big one)."""
    if state_dir.name != INDEX_DIR_NAME:
        return
    try:
        entries = list(state_dir.iterdir())
    except OSError:
        return
    for store in [e for e in entries if _OLD_STORE.fullmatch(e.name)]:
        for path in [e for e in entries if e.name.startswith(store.name)]:
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:  # a cache: whatever cannot be removed now is harmless
                logger.debug("could not remove %s: %s", path, exc)
        logger.info("removed %s, an index named for an earlier path of this library", display_path(store))


def writable(root: Path) -> bool:
    """Writable by us, and not marked read-only by its mode: root may write anywhere, but a folder
    with no write bit for anyone (a shared, read-only checkout) is left untouched all the same."""
    try:
        return os.access(root, os.W_OK) and bool(root.stat().st_mode & 0o222)
    except OSError:
        return False


def own_state_dir(root: Path) -> Path:
    """The root's .skillshelf/, made if missing (ignored by git) and proven writable; OSError if it is not."""
    directory = root / INDEX_DIR_NAME
    directory.mkdir(exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# skillshelf's search index and usage events (local to this machine)\n*\n", encoding="utf-8")
    with tempfile.TemporaryFile(dir=directory):
        pass  # a read-only .skillshelf/ in a writable root must fall back too
    return directory
