"""Which skills a server set to serve only reviewed bytes does not serve, and why (`require_verified`,
`require_signed`; docs/security.md).

- `require_verified`: a skill is served only while its bytes are the ones its root's `skillshelf.lock`
  approved: a source's skill as `add`/`update` installed it (or a local edit `skillshelf approve`d), a
  skill written here once `skillshelf approve ID` recorded it. Anything else is hidden.
- `require_signed`: the skills sources installed are served only when the lock's signature verifies
  against the allowed signers (signing.py), and then only while their bytes are the lock's approved ones.
  Skills written here are not a source's: this setting alone leaves them served.

A hidden skill is hidden as a view hides one (the reader's `Visibility` asks `hidden()`), and a finding per skill says
why and what a curator runs to serve it again. Worked out once per index sync and lock change.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path

from skillshelf.library.index.library import SkillLibrary
from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.skill.digest import TreeEntry, digest_entries, skill_entries
from skillshelf.library.skill.discovery import printable
from skillshelf.library.skill.folder import kept
from skillshelf.library.skill.ignored import IGNORED_NAMES
from skillshelf.library.skill.models import Finding
from skillshelf.library.skill.paths import display_path
from skillshelf.library.sources.approval import approval_of, library_path
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.local import INSTALLED, read_installed
from skillshelf.library.sources.lock import LOCK_NAME, Lock, lock_path, read_lock
from skillshelf.library.sources.signers import ALLOWED_SIGNERS
from skillshelf.library.sources.signing import SIGNATURE_NAME, verify_signed
from skillshelf.library.sources.spec import STATE_DIR

CODE = "not-approved"


@dataclass(frozen=True)
class RootState:
    lock: Lock  # the root's lock (the verified one under require_signed)
    problem: str | None  # why the lock cannot be trusted (None: it can)
    sources: frozenset[str]  # the names of its sources: the lock's and those this machine installed


_Stamp = tuple[int, int, int] | None


class ApprovalGate:
    def __init__(self, library: SkillLibrary, *, verified: bool, signed: bool) -> None:
        self.library = library
        self.verified = verified
        self.signed = signed
        self._lock = threading.Lock()
        self._cached: tuple[object, dict[str, Finding]] | None = None

    def hidden(self) -> dict[str, Finding]:
        """The ids not served, each with the finding that says why."""
        self.library.ensure_fresh()
        key = (self.library.generation(), tuple(_stamps(root) for root in self.library.roots))
        with self._lock:
            if self._cached is not None and self._cached[0] == key:
                return self._cached[1]
        found = self._work_out()
        with self._lock:
            self._cached = (key, found)
        return found

    def _work_out(self) -> dict[str, Finding]:
        roots = [self._root_state(root) for root in self.library.roots]
        found: dict[str, Finding] = {}
        for skill in self.library.overview():
            root = self.library.root_of(skill)
            why = self._why(root, skill, roots[skill.details.root_index])
            if why is not None:
                found[skill.id] = Finding(_skill_path(skill), None, "warning", CODE, why, printable(display_path(root)))
        return found

    def _root_state(self, root: Path) -> RootState:
        """The root's lock (the signed one under require_signed), its sources, and why it cannot be trusted."""
        # The sources this machine installed count too (`.skillshelf/`, never committed): a lock whose
        # source, or one of its skills, was deleted after signing must not turn them into skills "written here".
        sources = frozenset(read_installed(root).sources)
        try:
            lock = read_lock(lock_path(root))
        except SourceError as exc:
            return RootState(Lock(), f"{LOCK_NAME} cannot be read ({exc.message})", sources)
        sources |= frozenset(lock.sources)
        if self.signed and (sources or (root / SIGNATURE_NAME).exists()):
            try:
                return RootState(verify_signed(root).lock, None, sources)
            except SourceError as exc:
                return RootState(lock, exc.message, sources)
        return RootState(lock, None, sources)

    def _why(self, root: Path, skill: IndexedSkill, state: RootState) -> str | None:
        lock, problem = state.lock, state.problem
        # in a source's folder (its id's first part names one) it is the source's, listed in the lock or not
        from_source = lock.owner_of(skill.id) is not None or skill.id.split("/", 1)[0] in state.sources
        setting = "require_signed" if self.signed and (from_source or not self.verified) else "require_verified"
        if problem is not None and (from_source or self.verified):
            return f"not served ({setting}): {problem}"
        if not from_source and not self.verified:
            return None
        approved = approval_of(lock, skill.id)
        if approved is None:
            return (
                f"not served ({setting}): {LOCK_NAME} has no approval of {skill.id}; review it, then "
                f"`skillshelf approve {skill.id}`"
            )
        entries = skill_entries(root, _skill_path(skill))
        if not entries or digest_entries(entries) != approved:
            return (
                f"not served ({setting}): its files differ from the bytes approved in {LOCK_NAME}; "
                f"`skillshelf verify` names them. Review them, then `skillshelf approve {skill.id}`"
            )
        outward = _link_out(root, skill, entries)
        if outward is not None:
            return (
                f"not served ({setting}): {outward} is a link out of its files; the approval pins where a link "
                "points, not the bytes it shows. Put the file itself in the skill, then "
                f"`skillshelf approve {skill.id}`"
            )
        uncovered = _uncovered_code(root, skill)
        if uncovered is not None:
            return (
                f"not served ({setting}): {uncovered} is in its folder; no approval covers it (the digest leaves "
                "build and dependency folders out) and the skill's code can load it when it runs. Remove it, or "
                f"put what the code needs among the skill's own files, then `skillshelf approve {skill.id}`"
            )
        return None


# Build and dependency folders the digest leaves out whose code a run could load: `sys.path.insert(0,
# here / "build")`, a bundled `venv/bin/python`, Node's `require` (node_modules). Not `__pycache__`: a run
# compiles the skill's Python from its source (execution/_child.py, PYTHONPYCACHEPREFIX).
UNCOVERED_CODE_NAMES = IGNORED_NAMES - {"__pycache__"}


def _uncovered_code(root: Path, skill: IndexedSkill) -> str | None:
    """The first entry of a folder skill named in UNCOVERED_CODE_NAMES (relative to the skill; a folder with a
    `/`), empty or not: the watcher does not look inside such a folder, so a file added to one that was there
    at approval would go unseen; its appearing in the skill's folder is seen. A three-file skill's folder is
    its category's, shared: a sandboxed run shows only the skill's own files."""
    if skill.layout == "three-file":
        return None
    folder = root.joinpath(*_skill_path(skill).split("/"))
    for here, folders, files in os.walk(folder):
        for name in sorted(folders + files):
            if name in UNCOVERED_CODE_NAMES:
                return (Path(here) / name).relative_to(folder).as_posix() + ("/" if name in folders else "")
        folders[:] = [name for name in folders if kept(name)]
    return None


def _link_out(root: Path, skill: IndexedSkill, entries: list[TreeEntry]) -> str | None:
    """The first link of the skill whose target the digest does not cover (it lies outside the skill's own
    folder, or under a name the digest leaves out); a three-file skill's folder is shared, so any link."""
    folder = None if skill.layout == "three-file" else root.joinpath(*_skill_path(skill).split("/")).resolve()
    for entry in entries:
        if entry.kind != "link":
            continue
        try:
            target = entry.on_disk.resolve()
        except (OSError, RuntimeError):  # a loop: it shows nothing the approval covers either
            return entry.path
        if folder is None or not target.is_relative_to(folder):
            return entry.path
        if not all(kept(part) for part in target.relative_to(folder).parts):
            return entry.path
    return None


def _skill_path(skill: IndexedSkill) -> str:
    return library_path(skill.details.doc_file, skill.layout)


def _stamps(root: Path) -> tuple[_Stamp, ...]:
    paths = (lock_path(root), root / SIGNATURE_NAME, root / STATE_DIR / ALLOWED_SIGNERS, root / STATE_DIR / INSTALLED)
    return tuple(_stamp(path) for path in paths)


def _stamp(path: Path) -> _Stamp:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)
