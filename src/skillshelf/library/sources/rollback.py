"""`skillshelf rollback ID [REV]`: a skill put back to a version its history keeps (history.py).

The source's folder is copied into a staging folder, the skill's files replaced there by the kept ones
(proved by their digest), and the copy swapped in whole with the lock written after (swap.py: a process
stopped at any point leaves the old folder or the new one, and the next command finishes or undoes it).
The lock then pins the restored bytes, with a note saying what was rolled back, when and why: `sources`
shows it as a local change, `sync` keeps it, and the next update is reviewed against it. What is installed
now is kept in the history first, so a rollback can be rolled back.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from skillshelf.library.skill.digest import skill_digest
from skillshelf.library.sources.approval import reviewer
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.history import Version, drop, now, restore, short, version
from skillshelf.library.sources.install import Shelf
from skillshelf.library.sources.local import record_installed
from skillshelf.library.sources.lock import Approval, LockedSkill, LockedSource, with_skills
from skillshelf.library.sources.scanning import accept, scan_staged
from skillshelf.library.sources.swap import TREE, commit, discard, new_staging

MAX_REASON = 300


@dataclass(frozen=True)
class RolledBack:
    skill_id: str
    rev: int
    digest: str
    note: str  # what the lock now records


def installed_skill(shelf: Shelf, skill_id: str) -> tuple[LockedSource, LockedSkill]:
    """The source that installed `skill_id` and its entry; a SourceError naming the sources otherwise."""
    lock = shelf.lock()
    owner = lock.owner_of(skill_id)
    skill = owner.skill(skill_id) if owner is not None else None
    if owner is None or skill is None:
        known = ", ".join(sorted(lock.sources)) or "none yet"
        raise SourceError(
            f"no skill {skill_id!r} is installed from a source here (sources: {known}); only a skill a source "
            "installed has versions kept (`skillshelf history`, `rollback`). Nothing was changed"
        )
    return owner, skill


def rollback(
    shelf: Shelf, skill_id: str, rev: int | None, reason: str | None = None, accepted: tuple[str, ...] = ()
) -> RolledBack:
    """Put `skill_id` back to revision `rev` (None: the newest kept); see the module's doc. What lands is
    scanned as an update's files are: a high finding needs the acceptance kept with the version, or
    `accepted` (scanning.py)."""
    owner, skill = installed_skill(shelf, skill_id)
    kept = version(shelf.root, skill_id, rev)
    if skill_digest(shelf.root, skill.path) == kept.digest:
        raise SourceError(f"{skill_id} already holds revision {kept.rev} ({short(kept.digest)}); nothing was changed")
    why = " ".join((reason or "").split())[:MAX_REASON]
    note = f"rolled back to rev {kept.rev} ({short(kept.digest)}) at {now()}" + (f": {why}" if why else "")
    folder = shelf.folder(owner.name)
    staging = new_staging(shelf.root)
    try:
        staged = staging / TREE / owner.name
        (staging / TREE).mkdir()
        shutil.copytree(folder, staged, symlinks=True)  # the rest of the source as it is here, edits and all
        leaf = skill.path.rsplit("/", 1)[-1]
        drop(staged, leaf)
        _restore(shelf, kept, staged, leaf)
        # the curator who rolls back approves those bytes, so `verify` and require_verified hold them
        approval = Approval(kept.digest, reviewer(shelf.root), now())
        restored = replace(skill, digest=kept.digest, rollback=note, accepted=(), approval=approval)
        entry = with_skills(owner, [restored if s.id == skill_id else s for s in owner.skills])
        entry = accept(entry, scan_staged(staged, entry), (*accepted, *kept.accepted), owner)  # or refused
        shelf.keep_history(owner, staged, f"before the rollback to rev {kept.rev}" + (f": {why}" if why else ""))
        commit(shelf.root, staging, folder, staged, shelf.lock().with_source(entry))
    except BaseException:
        discard(staging)
        raise
    record_installed(shelf.root, shelf.lock())
    return RolledBack(skill_id, kept.rev, kept.digest, note)


def _restore(shelf: Shelf, kept: Version, staged: Path, leaf: str) -> None:
    """The kept files written in the staged copy, proved by their hashes and the version's digest."""
    try:
        restore(shelf.root, kept, staged, leaf)
    except SourceError as exc:
        raise SourceError(
            f"cannot roll back {kept.skill_id} to revision {kept.rev}: {exc.message}; nothing was changed"
        ) from exc
