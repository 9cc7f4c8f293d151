"""Which skills a server set to serve only reviewed bytes does not serve, and why (`require_verified`,
`require_signed`; docs/security.md).

- `require_verified`: a skill is served only while its bytes are the ones its root's `skillshelf.lock`
  approved: a source's skill as `add`/`update` installed it (or a local edit `skillshelf approve`d), a
  skill written here once `skillshelf approve ID` recorded it. Anything else is hidden.
- `require_signed`: the skills sources installed are served only when the lock's signature verifies
  against the allowed signers (signing.py), and then only while their bytes are the lock's approved ones.
  Skills written here are not a source's: this setting alone leaves them served.

A hidden skill is hidden as a view hides one (the reader's `Visibility` asks `hidden()`), and a finding per skill says
why and what a curator runs to serve it again. Worked out once per index sync and lock change, and held at the
moment of serving too (`check`): each serve of a skill's files compares the lstat stamps of its entries and folders
with those taken when its digest last matched, and re-digests that one skill when any differs (docs/security.md).
A run goes one step further (`copy_for_run`): it runs from a copy of the approved files, digested as it is made.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skillshelf.library.index.library import SkillLibrary
from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.skill.digest import TreeEntry, copy_entries, digest_entries, skill_entries
from skillshelf.library.skill.discovery import printable
from skillshelf.library.skill.folder import MAX_FILES, MAX_TOTAL_BYTES, kept
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


_Stamp = tuple[int, int, int, int] | None  # a trust file's: ctime, mtime, size, inode
# An entry's lstat as the check compares it: ctime (a user cannot set it back, unlike mtime), size, inode, mode.
_EntryStamp = tuple[int, int, int, int] | None
# ctime comes from a coarse clock (a scheduler tick, <= 10 ms on Linux): a write in the same tick as an entry's
# last change can leave its stamp as it was. A stamp younger than this is not trusted to show a later write.
RACY_NS = 20_000_000


@dataclass(frozen=True)
class Checked:
    """The stamps of a skill's entries and the folders they were listed from, taken before the
    bytes its digest matched were read; `racy`: one was too young to show a later write (re-digest at each serve)."""

    paths: tuple[str, ...]
    stamps: tuple[_EntryStamp, ...]
    racy: bool = False

    def unchanged(self) -> bool:
        """Whether every stamp is as it was (after a read: nothing was written since the check)."""
        return _entry_stamps(self.paths) == self.stamps


NOT_BOUND = Checked((), ())  # a skill served whatever its bytes (written here, under require_signed alone)


class ApprovalGate:
    def __init__(self, library: SkillLibrary, *, verified: bool, signed: bool) -> None:
        self.library = library
        self.verified = verified
        self.signed = signed
        self._lock = threading.Lock()
        self._cached: tuple[object, dict[str, Finding]] | None = None
        self._roots: list[RootState] = []  # the roots' states the cached answer was worked out with
        self._checked: dict[str, Checked] = {}  # per skill served: the stamps its digest was checked at

    def hidden(self) -> dict[str, Finding]:
        """The ids not served, each with the finding that says why."""
        self.library.ensure_fresh()
        key = (self.library.generation(), tuple(_stamps(root) for root in self.library.roots))
        with self._lock:
            if self._cached is not None and self._cached[0] == key:
                return self._cached[1]
        roots, found, checked = self._work_out()
        with self._lock:
            self._cached, self._roots, self._checked = (key, found), roots, checked
        return found

    def check(self, skill: IndexedSkill) -> Finding | Checked:
        """At the moment of serving `skill`'s files: the finding that holds it back, or the stamps its files were
        checked at (compare them after reading: `Checked.unchanged`). Unchanged stamps cost an lstat per entry and
        folder; a change (a watcher off or late, an edit since the last sync) re-digests this one skill now."""
        held = self.hidden()
        if skill.id in held:
            return held[skill.id]
        with self._lock:
            checked = self._checked.get(skill.id)
            roots = self._roots
        if checked is not None and not checked.racy and checked.unchanged():
            return checked
        root = self.library.root_of(skill)
        why, checked = self._judge(root, skill, roots[skill.details.root_index], wait=True)
        if why is not None:
            return self._hold(root, skill, why)
        with self._lock:
            self._checked[skill.id] = checked  # read only under the lock
        return checked

    def copy_for_run(self, skill: IndexedSkill, into: Callable[[], Path]) -> Finding | Path | None:
        """Checked as `check` does, then `skill`'s approved files copied under the fresh folder `into()` makes (at its
        library path, so its relative links keep their meaning and nothing above it is the library's) and the copy's
        digest compared with the approval: the copy's skill folder; the finding that holds it back (a file changed
        before or while it was copied, held back from then on); None when no approval binds its bytes (it runs from
        the library, `into` never called). Raises CopyRefused over the caps a source's skill has (MAX_FILES,
        MAX_TOTAL_BYTES) or for an absolute link."""
        checked = self.check(skill)
        if isinstance(checked, Finding):
            return checked
        with self._lock:
            roots = self._roots
        root = self.library.root_of(skill)
        why, approved, setting = self._bound(skill, roots[skill.details.root_index])
        if why is not None:
            return self._hold(root, skill, why)
        if approved is None:
            return None
        path = _skill_path(skill)
        folder = into().joinpath(*path.split("/"))
        folder = folder.parent if skill.layout == "three-file" else folder
        if copy_entries(skill_entries(root, path), folder, MAX_FILES, MAX_TOTAL_BYTES) != approved:
            return self._hold(root, skill, _changed(skill, setting))
        return folder

    def _hold(self, root: Path, skill: IndexedSkill, why: str) -> Finding:
        """Hold `skill` back from now until the next sync or lock change, with the finding that says why."""
        finding = _finding(root, skill, why)
        with self._lock:
            self._checked.pop(skill.id, None)
            if self._cached is not None:  # a new dict: callers iterate the one `hidden` gave them
                self._cached = (self._cached[0], {**self._cached[1], skill.id: finding})
        return finding

    def _work_out(self) -> tuple[list[RootState], dict[str, Finding], dict[str, Checked]]:
        roots = [self._root_state(root) for root in self.library.roots]
        found: dict[str, Finding] = {}
        checked: dict[str, Checked] = {}
        for skill in self.library.overview():
            root = self.library.root_of(skill)
            why, checked[skill.id] = self._judge(root, skill, roots[skill.details.root_index])
            if why is not None:
                found[skill.id] = _finding(root, skill, why)
        return roots, found, checked

    def _judge(
        self, root: Path, skill: IndexedSkill, state: RootState, wait: bool = False
    ) -> tuple[str | None, Checked]:
        """Why `skill` is not served (None: it is), with the stamps its files were checked at. `wait`: when a stamp
        is too young to show a later write, wait out the clock's tick and check again (a serve's re-check; a sync
        leaves it racy, re-checked at its first serve)."""
        started = time.time_ns()
        why, checked = self._why(root, skill, state, started)
        if wait and why is None and checked.racy:
            time.sleep(RACY_NS / 1e9)
            why, checked = self._why(root, skill, state, time.time_ns())
        return why, checked

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

    def _bound(self, skill: IndexedSkill, state: RootState) -> tuple[str | None, str | None, str]:
        """Why `skill` is not served whatever its bytes (None: it may be), the approved digest its bytes must match
        (None: none, served whatever its bytes), and the setting that asks."""
        lock, problem = state.lock, state.problem
        # in a source's folder (its id's first part names one) it is the source's, listed in the lock or not
        from_source = lock.owner_of(skill.id) is not None or skill.id.split("/", 1)[0] in state.sources
        setting = "require_signed" if self.signed and (from_source or not self.verified) else "require_verified"
        if problem is not None and (from_source or self.verified):
            return f"not served ({setting}): {problem}", None, setting
        if not from_source and not self.verified:
            return None, None, setting
        approved = approval_of(lock, skill.id)
        if approved is None:
            why = f"not served ({setting}): {LOCK_NAME} has no approval of {skill.id}; review it, then "
            return why + f"`skillshelf approve {skill.id}`", None, setting
        return None, approved, setting

    def _why(self, root: Path, skill: IndexedSkill, state: RootState, started: int) -> tuple[str | None, Checked]:
        """Why `skill` is not served (None: it is), with the stamps its files were checked at (`started`: the time
        before they were taken)."""
        why, approved, setting = self._bound(skill, state)
        if why is not None or approved is None:
            return why, NOT_BOUND
        folders: list[tuple[Path, os.stat_result]] = []
        entries = skill_entries(root, _skill_path(skill), folders)  # stamped before their bytes are read
        checked = _checked(entries, folders, started)
        return _differs(root, skill, entries, approved, setting), checked


def _differs(root: Path, skill: IndexedSkill, entries: list[TreeEntry], approved: str, setting: str) -> str | None:
    """Why the skill's files are not the bytes approved (or show bytes no approval covers); None: they are."""
    if not entries or digest_entries(entries) != approved:
        return _changed(skill, setting)
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


def _changed(skill: IndexedSkill, setting: str) -> str:
    return (
        f"not served ({setting}): its files differ from the bytes approved in {LOCK_NAME}; "
        f"`skillshelf verify` names them. Review them, then `skillshelf approve {skill.id}`"
    )


def _checked(entries: list[TreeEntry], folders: list[tuple[Path, os.stat_result]], started: int) -> Checked:
    """The stamps to compare at a serve: the skill's entries and the folders they were listed from (a folder's stamp
    changes when an entry appears or vanishes in it; a three-file skill's is its category's, shared: another
    skill's file added there re-digests this one too, a few files)."""
    found = [(str(path), info) for path, info in folders] + [(str(e.on_disk), e.info) for e in entries]
    paths = tuple(path for path, _ in found)
    stamps = tuple(_entry_stamp(info) for _, info in found)
    racy = any(stamp is not None and stamp[0] > started - RACY_NS for stamp in stamps)
    return Checked(paths, stamps, racy)


def _entry_stamp(info: os.stat_result) -> _EntryStamp:
    return (info.st_ctime_ns, info.st_size, info.st_ino, info.st_mode)


def _entry_stamps(paths: tuple[str, ...]) -> tuple[_EntryStamp, ...]:
    found: list[_EntryStamp] = []
    for path in paths:
        try:
            found.append(_entry_stamp(os.lstat(path)))
        except OSError:
            found.append(None)
    return tuple(found)


def _finding(root: Path, skill: IndexedSkill, why: str) -> Finding:
    return Finding(_skill_path(skill), None, "warning", CODE, why, printable(display_path(root)))


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
    return tuple(_stamp(path) for path in _trust_files(root))


@functools.lru_cache(maxsize=64)
def _trust_files(root: Path) -> tuple[str, ...]:
    """The files whose change changes what the gate trusts, made once per root (`hidden` stats them at every
    lookup: building the paths again was most of its cost)."""
    paths = (lock_path(root), root / SIGNATURE_NAME, root / STATE_DIR / ALLOWED_SIGNERS, root / STATE_DIR / INSTALLED)
    return tuple(str(path) for path in paths)


def _stamp(path: str) -> _Stamp:
    try:
        info = os.stat(path)  # noqa: PTH116 (a str made once: no Path built per lookup)
    except OSError:
        return None
    return (info.st_ctime_ns, info.st_mtime_ns, info.st_size, info.st_ino)  # ctime: an edit that set mtime back
