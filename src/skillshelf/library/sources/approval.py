"""Approvals bound to bytes: who approved which digest of each skill, when, and whether what is on disk
is still those bytes.

An approval is a digest (library/skill/digest.py) with a reviewer and a time, recorded in
`skillshelf.lock` (lock.py): `add` and an applied `update` approve what they install (the reviewer is
whoever ran them: `--reviewer`, else git's `user.email` in the library's repository, else the login
name); `skillshelf approve` approves what is installed now (a local edit, or a skill written here). A
digest says the bytes are the approved ones; it is not a trust anchor by itself (whoever can write the
lock can write a digest): a signature over the lock is (signing.py).

`verify` compares every installed byte with the lock and names what differs. To name the files of a
changed skill it keeps, per approved digest, the digest of each file (`.skillshelf/approved-files/`,
local and never trusted: it only names files; the verdict is the skill's digest).
"""

from __future__ import annotations

import contextlib
import getpass
import json
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from skillshelf.library.skill.digest import PREFIX, digest_entries, file_digest, skill_digest, skill_entries
from skillshelf.library.skill.discovery import CODE_EXTENSIONS, METADATA_SUFFIX, discover, library_base
from skillshelf.library.sources import git
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.local import state_dir, untracked
from skillshelf.library.sources.lock import (
    Approval,
    LocalApproval,
    Lock,
    LockedSkill,
    LockedSource,
    lock_path,
    read_lock,
    reviewer_ok,
    write_atomically,
    write_lock,
)
from skillshelf.library.sources.spec import STATE_DIR

FILES_DIR = "approved-files"
CHANGED = "changed"
ADDED = "added"
MISSING = "missing"


# -- who ---------------------------------------------------------------------------------------------
def reviewer(root: Path, given: str | None = None, *, required: bool = False) -> str | None:
    """Who approves: `given` (--reviewer), else git's user.email in the library's repository, else the
    login name; None when nothing says (`required`: a SourceError saying how to say it)."""
    if given is not None:
        if not reviewer_ok(given):
            raise SourceError(f"--reviewer {given[:80]!r}: give one line of printable text, such as an email")
        return given
    found = _git_email(root) or _login()
    if found is None and required:
        raise SourceError("who approves? set `git config user.email` in the library, or pass --reviewer NAME")
    return found


def _git_email(root: Path) -> str | None:
    email = git.config_value(root, "user.email")
    return email if email is not None and reviewer_ok(email) else None


def _login() -> str | None:
    with contextlib.suppress(Exception):  # getpass raises whatever the platform's lookup does
        name = getpass.getuser()
        return name if reviewer_ok(name) else None
    return None


# -- recording ---------------------------------------------------------------------------------------
def stamp(entry: LockedSource, previous: LockedSource | None, by: str | None, at: str) -> LockedSource:
    """`entry` with each skill approved as installed: by `by` at `at`; a skill whose bytes did not change
    keeps the approval it had (a smaller diff of the lock, and the truth)."""
    skills = []
    for skill in entry.skills:
        before = previous.skill(skill.id) if previous else None
        if before is not None and before.approval is not None and before.approval.digest == skill.digest:
            skills.append(replace(skill, approval=before.approval))
        else:
            skills.append(replace(skill, approval=Approval(skill.digest, by, at)))
    return replace(entry, skills=tuple(skills))


def approve(root: Path, lock: Lock, targets: tuple[str, ...], by: str, at: str) -> list[str]:
    """Approve the bytes installed now of each target (a source, a skill of a source, or a skill no source
    installed) and write the lock (the caller holds the shelf: install.open_shelf); the ids approved.
    Nothing is written when a target is unknown or gone."""
    approved: list[str] = []
    local = LocalSkills(root)
    for target in targets:
        lock, ids = _approve_one(root, lock, target, Approval("", by, at), local)
        approved += ids
    write_lock(lock_path(root), lock)
    for skill_id in approved:
        remember(root, *_path_and_digest(lock, skill_id))
    return approved


def _approve_one(
    root: Path, lock: Lock, target: str, blank: Approval, local_skills: LocalSkills
) -> tuple[Lock, list[str]]:
    source = lock.sources.get(target)
    owner = source or lock.owner_of(target)
    if owner is not None:
        chosen = owner.skills if source is not None else tuple(s for s in owner.skills if s.id == target)
        skills = {s.id: replace(s, approval=replace(blank, digest=_installed(root, s.id, s.path))) for s in chosen}
        entry = replace(owner, skills=tuple(skills.get(s.id, s) for s in owner.skills))
        return lock.with_source(entry), sorted(skills)
    path = local_skills.path_of(target)
    local = LocalApproval(target, path, replace(blank, digest=_installed(root, target, path)))
    return replace(lock, approved={**lock.approved, target: local}), [target]


def _installed(root: Path, skill_id: str, path: str) -> str:
    digest = skill_digest(root, path)
    if digest is None:
        raise SourceError(f"{skill_id} is not in {root} (deleted here?); `skillshelf sync` restores a source's skill")
    return digest


class LocalSkills:
    """The library paths (as the lock keeps them) of `root`'s skills by id, found by one walk of the library on
    first use: approving many skills written here walked the whole library once per id (minutes for 972)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @cached_property
    def paths(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for skill in discover([self.root]).sources:
            doc_file = skill.doc_file.relative_to(self.root).as_posix()
            found.setdefault(skill.skill_id, library_path(doc_file, skill.layout))
        return found

    def path_of(self, skill_id: str) -> str:
        """The path of the skill `skill_id` that no source installed; SourceError naming the fix when none is."""
        path = self.paths.get(skill_id)
        if path is None:
            raise SourceError(
                f"no source or skill named {skill_id!r} in {self.root}; give a source's name (`skillshelf sources`) "
                "or a skill's id (`skillshelf doc` lists them)"
            )
        return path


def library_path(doc_file: str, layout: str) -> str:
    """A skill's path as the lock keeps it, from its main document's (relative to the root): its folder,
    or a three-file skill's .md."""
    return doc_file if layout == "three-file" else doc_file.rsplit("/", 1)[0]


def _path_and_digest(lock: Lock, skill_id: str) -> tuple[str, str]:
    owner = lock.owner_of(skill_id)
    skill = owner.skill(skill_id) if owner else None
    if skill is not None:
        return skill.path, skill.approved_digest
    local = lock.approved[skill_id]
    return local.path, local.approval.digest


# -- the files of approved bytes, to name them when they change ---------------------------------------
def remember(root: Path, path: str, digest: str) -> None:
    """Keep the digest of each file of the skill at `path`, when its bytes are the approved `digest`."""
    entries = skill_entries(root, path)
    if not entries or digest_entries(entries) != digest:
        return
    files = {entry.path: digest_entries([entry]) for entry in entries}
    with contextlib.suppress(SourceError):  # only a convenience: verify then names the skill, not its files
        folder = state_dir(root) / FILES_DIR
        folder.mkdir(exist_ok=True)
        write_atomically(folder / f"{digest.removeprefix(PREFIX)}.json", json.dumps(files, sort_keys=True) + "\n")


def remember_source(root: Path, entry: LockedSource) -> None:
    for skill in entry.skills:
        with contextlib.suppress(OSError):
            remember(root, skill.path, skill.approved_digest)


def _remembered(root: Path, digest: str) -> dict[str, str] | None:
    name = digest.removeprefix(PREFIX)
    if not name.isalnum():
        return None
    try:
        raw = json.loads((root / STATE_DIR / FILES_DIR / f"{name}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        return None
    return {str(k): v for k, v in raw.items()}


# -- verifying -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Difference:
    what: str  # a skill id, or a library path (a source's license file, an entry added by hand)
    how: str  # CHANGED, ADDED or MISSING
    files: tuple[str, ...] = ()  # 'changed: scripts/run.sh', ... ; empty when not known

    def lines(self) -> list[str]:
        head = f"{self.what}: {self.how}"
        if self.how == CHANGED and not self.files:
            head += " (its files are not named: no record here of the approved ones)"
        return [head, *(f"  {line}" for line in self.files)]

    def to_dict(self) -> dict[str, object]:
        return {"what": self.what, "how": self.how, "files": list(self.files)}


def verify(root: Path, lock: Lock | None = None) -> list[Difference]:
    """Every way the installed bytes of `root` differ from the approvals of its lock (empty: none)."""
    lock = read_lock(lock_path(root)) if lock is None else lock
    found: list[Difference] = []
    base = library_base(root)
    for source in sorted(lock.sources.values(), key=lambda s: s.name):
        found += [d for skill in source.skills if (d := _skill_difference(root, skill)) is not None]
        for path, digest in sorted(source.files.items()):
            now = file_digest(root.joinpath(*path.split("/")))
            if now != digest:
                found.append(Difference(path, MISSING if now is None else CHANGED))
        for name in untracked(base / source.name, source):
            if f"{source.name}/{_stem(name)}" not in lock.approved:
                found.append(Difference(f"{(base / source.name / name).relative_to(root).as_posix()}", ADDED))
    for local in sorted(lock.approved.values(), key=lambda a: a.id):
        difference = _compare(root, local.id, local.path, local.approval.digest)
        if difference is not None:
            found.append(difference)
    return found


def _stem(name: str) -> str:
    """The skill an entry of a source's folder belongs to: a folder's name, a three-file skill's stem."""
    for suffix in ("-SKILL.md", METADATA_SUFFIX, *CODE_EXTENSIONS, ".md"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _skill_difference(root: Path, skill: LockedSkill) -> Difference | None:
    return _compare(root, skill.id, skill.path, skill.approved_digest)


def _compare(root: Path, skill_id: str, path: str, approved: str) -> Difference | None:
    now = skill_digest(root, path)
    if now == approved:
        return None
    if now is None:
        return Difference(skill_id, MISSING)
    return Difference(skill_id, CHANGED, _changed_files(root, path, approved))


def _changed_files(root: Path, path: str, approved: str) -> tuple[str, ...]:
    before = _remembered(root, approved)
    if before is None:
        return ()
    now = {entry.path: digest_entries([entry]) for entry in skill_entries(root, path)}
    lines = [f"{CHANGED}: {p}" for p in sorted(now.keys() & before.keys()) if now[p] != before[p]]
    lines += [f"{ADDED}: {p}" for p in sorted(now.keys() - before.keys())]
    lines += [f"{MISSING}: {p}" for p in sorted(before.keys() - now.keys())]
    return tuple(lines)


def unapproved(root: Path, lock: Lock) -> list[str]:
    """The skills of `root` no approval in its lock covers (written here, never `approve`d): not a
    difference from the lock, but what `require_verified` hides."""
    return sorted(found.skill_id for found in discover([root]).sources if approval_of(lock, found.skill_id) is None)


def approval_of(lock: Lock, skill_id: str) -> str | None:
    """The approved digest of `skill_id` in `lock`: its source's, else its local approval; None: none."""
    owner = lock.owner_of(skill_id)
    skill = owner.skill(skill_id) if owner else None
    if skill is not None:
        return skill.approved_digest
    local = lock.approved.get(skill_id)
    return local.approval.digest if local is not None else None
