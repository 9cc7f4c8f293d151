"""What this machine knows about its sources beyond the lock, kept in `<root>/.skillshelf/` (local,
never committed): the lock as last installed here (so `sync` can tell a source a teammate removed
from one it never had), the result of the last `update --check`, and local edits, which are computed.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillshelf.library.skill.digest import file_digest, skill_digest
from skillshelf.library.skill.discovery import CODE_EXTENSIONS, METADATA_SUFFIX
from skillshelf.library.skill.folder import kept
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.lock import Lock, LockedSource, read_lock, write_atomically, write_lock
from skillshelf.library.sources.spec import STATE_DIR

logger = logging.getLogger(__name__)

INSTALLED = "sources-installed.lock"
CHECKED = "sources-checked.json"
OPERATIONS_LOCK = "sources.lock"
_IGNORE_ALL = "# skillshelf's search index and usage events (local to this machine)\n*\n"


def state_dir(root: Path) -> Path:
    """`<root>/.skillshelf/`, made (and ignored by git, as the index makes it) when missing."""
    folder = root / STATE_DIR
    try:
        folder.mkdir(exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            ignore.write_text(_IGNORE_ALL, encoding="utf-8")
    except OSError as exc:
        raise SourceError(f"cannot write {folder}: {exc.strerror}; is the library writable?") from exc
    return folder


def read_installed(root: Path) -> Lock:
    try:
        return read_lock(root / STATE_DIR / INSTALLED)
    except SourceError as exc:  # only a convenience: without it, sync removes no source the lock dropped
        logger.warning("ignoring what %s says was installed here: %s", STATE_DIR, exc.message)
        return Lock()


def record_installed(root: Path, lock: Lock) -> None:
    try:
        write_lock(state_dir(root) / INSTALLED, lock)
    except SourceError as exc:
        logger.warning("could not record what is installed (%s); `sync` may not remove dropped sources", exc)


MODIFIED = "modified here since install"
DELETED = "deleted here"
ADDED = "added here"


@dataclass(frozen=True)
class LocalEdit:
    what: str  # a skill id, or a library path (the source's license file, an entry added by hand)
    how: str  # MODIFIED, DELETED or ADDED; or a rollback's note (the lock records it: `recorded`)
    recorded: bool = False  # a change the lock itself records (`skillshelf rollback`): nothing for sync to undo

    @property
    def modified(self) -> bool:
        """An edit that installing the source's version would overwrite."""
        return self.how == MODIFIED

    @property
    def in_the_way(self) -> bool:
        """An edit a sync or a removal would lose: changed or added here. Not a rollback the lock records (its
        bytes are the lock's, and the history keeps them) nor a deletion (nothing is left to lose)."""
        return self.how != DELETED and not self.recorded

    def __str__(self) -> str:
        return f"{self.what} ({self.how})"


def local_edits(root: Path, base: Path, source: LockedSource) -> list[LocalEdit]:
    """How the source's folder differs from what was installed: skills changed or deleted, files added."""
    edits = []
    for skill in source.skills:
        now = skill_digest(root, skill.path)
        if now != skill.digest:
            edits.append(LocalEdit(skill.id, DELETED if now is None else MODIFIED))
        elif skill.rollback is not None:
            edits.append(LocalEdit(skill.id, skill.rollback, recorded=True))
    for path, digest in source.files.items():
        now = file_digest(root.joinpath(*path.split("/")))
        if now != digest:
            edits.append(LocalEdit(path, DELETED if now is None else MODIFIED))
    edits += [LocalEdit(f"{source.name}/{name}", ADDED) for name in untracked(base / source.name, source)]
    return edits


def untracked(folder: Path, source: LockedSource) -> list[str]:
    """Entries of the source's folder the lock knows nothing of (a skill a curator added by hand). A folder
    that is a link is not looked into: what it leads to is nobody's "added here" (swap.inside_root)."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    known = set()
    for path in [*(s.path for s in source.skills), *source.files]:
        name = path.rsplit("/", 1)[-1]
        known.add(name)
        if name.endswith(".md") and not (folder / name).is_dir():
            stem = name[: -len(".md")]
            known.update(stem + suffix for suffix in (*CODE_EXTENSIONS, METADATA_SUFFIX))
    return sorted(entry.name for entry in folder.iterdir() if kept(entry.name) and entry.name not in known)


# -- the last `update --check` ----------------------------------------------------------------------
def read_checks(root: Path) -> dict[str, Any]:
    try:
        raw = json.loads((root / STATE_DIR / CHECKED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def record_check(root: Path, name: str, result: dict[str, Any]) -> None:
    checks = read_checks(root)
    checks[name] = result
    _write_checks(root, checks)


def forget_check(root: Path, name: str) -> None:
    checks = read_checks(root)
    if checks.pop(name, None) is not None:
        _write_checks(root, checks)


def _write_checks(root: Path, checks: dict[str, Any]) -> None:
    with contextlib.suppress(SourceError):
        write_atomically(state_dir(root) / CHECKED, json.dumps(checks, indent=1, sort_keys=True) + "\n")
