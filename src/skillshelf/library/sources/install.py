"""Add, sync, update and remove sources: each one staged beside the old, checked, swapped in whole.

`open_shelf(root)` holds the library's source lock (one such command at a time, across processes),
finishes or undoes whatever an interrupted one left (swap.py), and gives the operations:

- `add`: fetch a new source, place its skills in `<root>/<name>/`, pin it in the lock;
- `sync`: make the root hold exactly what the lock says, every digest verified, local edits kept
  unless forced, sources a teammate removed from the lock removed here too;
- `prepare_update` / `apply`: fetch a source's newest version and review it (review.py), then swap it in;
- `remove`: a whole source, or one skill of it (it then stays out on later updates).

A failure leaves the library as it was (nothing is swapped before everything is staged and checked),
with an error that names the source and what to do. Nothing from a source is ever run.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from skillshelf.library.index.places import READ_ONLY_MARKER
from skillshelf.library.locks import file_lock
from skillshelf.library.skill.checker import check_roots
from skillshelf.library.skill.digest import file_digest, skill_digest
from skillshelf.library.skill.discovery import library_base
from skillshelf.library.sources import approval
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.fetch import Snapshot
from skillshelf.library.sources.history import DEFAULT_KEEP, keep_changed, restore_rolled_back, short
from skillshelf.library.sources.kinds import SignatureFields, kind_of, open_snapshot
from skillshelf.library.sources.layout import Plan, PlannedSkill, license_name, plan_source, write_plan
from skillshelf.library.sources.local import (
    DELETED,
    MODIFIED,
    OPERATIONS_LOCK,
    LocalEdit,
    forget_check,
    local_edits,
    read_checks,
    read_installed,
    record_check,
    record_installed,
    state_dir,
    untracked,
)
from skillshelf.library.sources.lock import (
    LOCK_NAME,
    Lock,
    LockedSkill,
    LockedSource,
    lock_path,
    lock_text,
    read_lock,
    read_lock_bytes,
    render_lock,
    spec_of,
    write_lock,
)
from skillshelf.library.sources.parse import require_signed
from skillshelf.library.sources.review import Review, review_update
from skillshelf.library.sources.scanning import accept, scan_staged
from skillshelf.library.sources.spec import SourceSpec, portable_path, source_name, strip_credentials
from skillshelf.library.sources.swap import TREE, checkpoint, commit, discard, inside_root, new_staging, recover

MAX_LICENSE_FIELD = 200


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Outcome:
    """What one command did to one source, for the curator."""

    source: str
    # 'added', 'installed', 'unchanged', 'updated', 'removed', 'kept' (local edits), 'failed',
    # 'refused' (a high scan finding not accepted)
    action: str
    skills: list[str] = field(default_factory=list)
    local_edits: list[LocalEdit] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


@dataclass
class Prepared:
    """A source's new version, staged and reviewed, not yet swapped in."""

    entry: LockedSource
    staging: Path
    review: Review
    local_edits: list[LocalEdit]
    warnings: list[str]

    @property
    def folder(self) -> Path:
        return self.staging / TREE / self.entry.name


@dataclass(frozen=True)
class SourceStatus:
    entry: LockedSource
    local_edits: list[LocalEdit]
    check: dict[str, object] | None  # the last `update --check` of the installed version, if any


@contextmanager
def open_shelf(root: Path, *, reading: bool = False, history_keep: int = DEFAULT_KEEP) -> Iterator[Shelf]:
    """The sources of the library at `root`, for one command (see the module's doc). `reading`: only to
    look (`sources`, `update --check`), which a read-only library allows. `history_keep`: versions kept
    per skill (history.py)."""
    root = root.expanduser().absolute()
    if not root.is_dir():
        raise SourceError(f"library root {root} is not a folder; create it, or pass --library")
    if not reading and (root / READ_ONLY_MARKER).exists():
        raise SourceError(f"{root} is marked read-only ({READ_ONLY_MARKER}); remove the marker to change its sources")
    try:
        state = state_dir(root)
    except SourceError:
        if not reading:
            raise
        yield Shelf(root)  # a read-only library: nobody changes it through this folder, nothing to lock
        return
    with file_lock(state / OPERATIONS_LOCK, blocking=False) as held:
        if not held:
            raise SourceError(f"another skillshelf command is changing the sources of {root}; run this one after it")
        shelf = Shelf(root, history_keep)
        try:
            shelf.recovered = recover(root)
            yield shelf
        except OSError as exc:  # the disk, permissions: said as what to fix, never a traceback
            where = f" ({exc.filename})" if exc.filename else ""
            raise SourceError(
                f"{exc.strerror or exc}{where}. Fix that and run the command again: a change it left unfinished "
                "is finished or undone then"
            ) from exc


class Shelf:
    def __init__(self, root: Path, history_keep: int = DEFAULT_KEEP) -> None:
        self.root = root
        self.base = library_base(root)
        self.recovered: list[str] = []
        self.history_keep = history_keep

    # -- reading ---------------------------------------------------------------------------------
    def lock(self) -> Lock:
        return read_lock(lock_path(self.root))

    def folder(self, name: str) -> Path:
        """The source's folder, `<root>/<name>/`: refused when it would be anywhere else (swap.inside_root)."""
        return inside_root(self.root, self.base / name)

    def local_edits(self, entry: LockedSource) -> list[LocalEdit]:
        return local_edits(self.root, self.base, entry)

    def status(self) -> list[SourceStatus]:
        checks = read_checks(self.root)
        found = []
        for name, entry in sorted(self.lock().sources.items()):
            check = checks.get(name)
            current = isinstance(check, dict) and check.get("from") == entry.version
            found.append(SourceStatus(entry, self.local_edits(entry), check if current else None))
        return found

    # -- add ---------------------------------------------------------------------------------------
    def add(
        self,
        spec: SourceSpec,
        *,
        name: str | None = None,
        only: tuple[str, ...] = (),
        force: bool = False,
        accepted: tuple[str, ...] = (),
        reviewer: str | None = None,
    ) -> Outcome:
        lock = self.lock()
        by = approval.reviewer(self.root, reviewer)
        chosen = source_name(name or spec.default_name, given=bool(name))
        if chosen in lock.sources:
            raise SourceError(
                f"a source named {chosen} is already installed; `skillshelf update {chosen}` takes its newest "
                "version, or pass --name to add this one under another name"
            )
        target = self.folder(chosen)
        if target.exists() and not force:
            raise SourceError(
                f"{self._shown(target)} already exists and holds skills skillshelf did not install; nothing was "
                "changed. Pass --name to install the source elsewhere, or --force to replace that folder"
            )
        staging = new_staging(self.root)
        try:
            entry, warnings = self._stage(spec, chosen, staging, only=only, exclude=())
            entry = accept(entry, scan_staged(staging / TREE / chosen, entry), accepted, None)  # or refused
            entry = approval.stamp(entry, None, by, now())  # whoever added it approved these bytes
            commit(self.root, staging, target, staging / TREE / chosen, lock.with_source(entry))
        except BaseException:
            discard(staging)
            raise
        record_installed(self.root, self.lock())
        approval.remember_source(self.root, entry)
        return Outcome(chosen, "added", [s.id for s in entry.skills], warnings=warnings)

    # -- staging -----------------------------------------------------------------------------------
    def _stage(
        self,
        spec: SourceSpec,
        name: str,
        staging: Path,
        *,
        only: tuple[str, ...],
        exclude: tuple[str, ...],
        commit_id: str | None = None,
        previous: LockedSource | None = None,
    ) -> tuple[LockedSource, list[str]]:
        """The source fetched and written to `staging/tree/<name>`, with its lock entry."""
        tree = staging / TREE
        tree.mkdir()
        folder = inside_root(tree, tree / name)
        with ExitStack() as stack:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fetch-", dir=staging)))
            snapshot = stack.enter_context(open_snapshot(spec, self.root, scratch, commit=commit_id))
            checkpoint("fetched")
            top_name = source_name(spec.default_name, given=False)
            plan = plan_source(snapshot, top_name=top_name, only=only, exclude=exclude)
            write_plan(snapshot, plan, folder)
            entry = self._entry(spec, name, snapshot, plan, tree, only, exclude, previous)
        checkpoint("staged")
        return entry, [*snapshot.notes, *plan.warnings]

    def _entry(
        self,
        spec: SourceSpec,
        name: str,
        snapshot: Snapshot,
        plan: Plan,
        tree: Path,
        only: tuple[str, ...],
        exclude: tuple[str, ...],
        previous: LockedSource | None,
    ) -> LockedSource:
        prefix = self._prefix(name)
        declared = _declared_licenses(tree, name)
        skills = [self._locked_skill(tree, name, prefix, skill, declared.get(skill.name)) for skill in plan.skills]
        files: dict[str, str] = {}
        license_text: str | None = None
        if plan.license is not None:
            member, placed = plan.license
            files[f"{prefix}/{placed}"] = file_digest(tree / name / placed) or ""
            license_text = license_name(snapshot.read(member).decode("utf-8", "replace"), placed)
        shared = {s.license for s in skills}
        if license_text is None and len(shared) == 1:  # every skill declares the same one
            license_text = shared.pop()
        return LockedSource(
            name=name,
            kind=spec.kind,
            url=previous.url if previous else kind_of(spec.kind).locked_url(spec, self.root),
            installed=now(),
            ref=spec.ref,
            commit=snapshot.commit,
            digest=snapshot.digest,
            subpath=spec.subpath,
            only=tuple(sorted(set(only))),
            exclude=tuple(sorted(set(exclude))),
            license=license_text,
            files=files,
            skills=tuple(skills),
            token_env=spec.token_env,
            **self._signature(spec, snapshot.signer),
        )

    def _signature(self, spec: SourceSpec, signer: str | None) -> SignatureFields:
        """The lock's record of a required commit signature: required, against which file, who signed."""
        signers = portable_path(Path(spec.signers), self.root) if spec.signers else None
        return SignatureFields(signed="ssh" if spec.signed else None, signers=signers, signer=signer)

    def _prefix(self, name: str) -> str:
        """The source's folder relative to the root ('name', or 'patterns/name' in a seed-style root)."""
        return (self.base / name).relative_to(self.root).as_posix()

    def _locked_skill(
        self, tree: Path, name: str, prefix: str, skill: PlannedSkill, license_text: str | None
    ) -> LockedSkill:
        digest = skill_digest(tree / name, skill.placed)
        return LockedSkill(f"{name}/{skill.name}", f"{prefix}/{skill.placed}", skill.origin, digest or "", license_text)

    def _shown(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() + "/" if path.is_relative_to(self.root) else str(path)

    # -- update --------------------------------------------------------------------------------------
    def names(self, wanted: tuple[str, ...]) -> list[str]:
        lock = self.lock()
        unknown = [n for n in wanted if n not in lock.sources]
        if unknown:
            known = ", ".join(sorted(lock.sources)) or "none yet"
            raise SourceError(f"no source named {', '.join(unknown)} in the lock (sources: {known})")
        return list(wanted) or sorted(lock.sources)

    def prepare_update(
        self, name: str, *, check_only: bool = False, signed_commit: bool = False, allowed_signers: Path | None = None
    ) -> Prepared | None:
        """The source's newest version staged and reviewed; None when it is what is installed. With
        `check_only` it is staged outside the library (which may then be read-only) and the result recorded
        for `skillshelf sources`. With `signed_commit` the new commit (and every later one) must be signed."""
        entry = self.lock().sources[name]
        spec = require_signed(spec_of(entry, self.root), signed_commit, allowed_signers)
        newest = kind_of(spec.kind).newest_commit(spec, self.root)
        if newest is not None and newest == entry.commit:  # one ls-remote, nothing fetched
            if signed_commit:
                self._require_signatures(entry, spec, check_only)
            return self._checked(entry, None)
        staging = Path(tempfile.mkdtemp(prefix="skillshelf-check-")) if check_only else new_staging(self.root)
        try:
            new, warnings = self._stage(
                spec, name, staging, only=entry.only, exclude=entry.exclude, commit_id=newest, previous=entry
            )
            if new.version == entry.version:
                discard(staging)
                return self._checked(entry, None)
            self._carry_untracked(entry, staging / TREE / name)  # what a curator added stays: not a change
            review = review_update(self.folder(name), staging / TREE / name, entry, new)
            review.risks = scan_staged(staging / TREE / name, new)
            review.warnings = warnings
            edits = self.local_edits(entry)
            review.local_edits = [str(edit) for edit in edits]
        except BaseException:
            discard(staging)
            raise
        if not review.pending:
            discard(staging)
        return self._checked(entry, Prepared(new, staging, review, edits, warnings) if review.pending else None)

    def _require_signatures(self, entry: LockedSource, spec: SourceSpec, check_only: bool) -> None:
        """`update --require-signed-commit` of a source at its newest commit: that commit verified, and the
        requirement recorded in the lock (nothing else changes)."""
        with ExitStack() as stack:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="skillshelf-verify-")))
            signer = stack.enter_context(open_snapshot(spec, self.root, scratch, commit=entry.commit)).signer
        if not check_only:
            changed = replace(entry, **self._signature(spec, signer))
            write_lock(lock_path(self.root), self.lock().with_source(changed))

    def _checked(self, entry: LockedSource, prepared: Prepared | None) -> Prepared | None:
        """Record what a check found, for `skillshelf sources`; the prepared update, if any."""
        found = {"checked": now(), "from": entry.version, "pending": prepared is not None}
        if prepared is not None:
            found.update({"to": prepared.entry.version, "summary": prepared.review.summary()})
        record_check(self.root, entry.name, found)
        return prepared

    def apply(
        self, prepared: Prepared, *, force: bool = False, accepted: tuple[str, ...] = (), reviewer: str | None = None
    ) -> Outcome:
        """Swap a prepared update in; refused (nothing changed) when the source has local edits, unless forced,
        or a high scan finding not accepted (scanning.py). Skills a curator added to the source's folder by
        hand are carried over."""
        name = prepared.entry.name
        edits = [e for e in prepared.local_edits if e.modified]
        if edits and not force:
            discard(prepared.staging)
            return Outcome(name, "kept", local_edits=edits)
        lock = self.lock()
        try:
            entry = accept(prepared.entry, prepared.review.risks, accepted, lock.sources.get(name))
            entry = approval.stamp(entry, lock.sources.get(name), approval.reviewer(self.root, reviewer), now())
        except SourceError as exc:
            discard(prepared.staging)
            return Outcome(name, "refused", warnings=[exc.message])
        try:
            self.keep_history(lock.sources[name], prepared.folder, f"before the update to {short(entry.version)}")
            commit(self.root, prepared.staging, self.folder(name), prepared.folder, lock.with_source(entry))
        except BaseException:
            discard(prepared.staging)
            raise
        record_installed(self.root, self.lock())
        forget_check(self.root, name)
        approval.remember_source(self.root, entry)
        return Outcome(name, "updated", [s.id for s in prepared.entry.skills], warnings=prepared.warnings)

    def discard(self, prepared: Prepared) -> None:
        discard(prepared.staging)

    def keep_history(self, old: LockedSource, new_folder: Path | None, why: str) -> None:
        """Keep each skill of `old` that the swap to `new_folder` changes (history.py): before the swap."""
        keep_changed(self.root, old, new_folder, why, self.history_keep)

    def _carry_untracked(self, entry: LockedSource, new_folder: Path) -> None:
        old_folder = self.folder(entry.name)
        for name in untracked(old_folder, entry):
            destination = new_folder / name
            if destination.exists() or destination.is_symlink():
                continue  # the source now brings that name: its version wins (the review showed it)
            _copy(old_folder / name, destination)

    # -- sync ----------------------------------------------------------------------------------------
    def sync(self, *, force: bool = False, accepted: tuple[str, ...] = (), frozen: bool = False) -> list[Outcome]:
        """Make the root hold exactly what the lock says (see the module's doc). `frozen` (CI): install what
        is missing, but refuse (SourceError, nothing written) when anything here differs from the lock."""
        lock = self.lock()
        if not lock.sources and not lock_path(self.root).exists():
            raise SourceError(f"no {lock_path(self.root).name} in {self.root}: add a source first, or copy one there")
        installed = read_installed(self.root).sources
        if frozen:
            self._refuse_differences(lock, installed)
        outcomes = [self._drop(installed[name], lock, force) for name in sorted(installed) if name not in lock.sources]
        outcomes += [self._sync_or_fail(entry, force, accepted) for _, entry in sorted(lock.sources.items())]
        record_installed(self.root, self._installed_now(lock, outcomes))
        for outcome in outcomes:
            if outcome.action == "installed":
                approval.remember_source(self.root, lock.sources[outcome.source])
        return outcomes

    def _refuse_differences(self, lock: Lock, installed: dict[str, LockedSource]) -> None:
        """`sync --frozen`: what a sync would change other than installing what is missing, refused."""
        dropped = [name for name in sorted(installed) if name not in lock.sources and self.folder(name).exists()]
        lines = [f"{name}: no longer in the lock (a sync would remove it)" for name in dropped]
        restorable = {s.id for e in lock.sources.values() for s in e.skills} | {
            p for e in lock.sources.values() for p in e.files
        }
        for difference in approval.verify(self.root, lock):
            if not (difference.how == approval.MISSING and difference.what in restorable):
                lines += difference.lines()
        if render_lock(lock) != lock_text(read_lock_bytes(lock_path(self.root))):
            lines.append(f"{LOCK_NAME}: not as skillshelf writes it (a sync would rewrite it)")
        if lines:
            shown = "\n".join(f"  {line}" for line in lines)
            raise SourceError(
                f"the library differs from {LOCK_NAME}; nothing was changed (--frozen):\n{shown}\n"
                "Approve what is right (`skillshelf approve ID`), or `skillshelf sync --force` to put back the bytes "
                "the lock pins"
            )

    def _sync_or_fail(self, entry: LockedSource, force: bool, accepted: tuple[str, ...]) -> Outcome:
        """One source synced; a source that fails is left as it was and said so, the others still synced."""
        try:
            return self._sync_one(entry, force, accepted)
        except SourceError as exc:
            return Outcome(entry.name, "failed", warnings=[exc.message])

    def _installed_now(self, lock: Lock, outcomes: list[Outcome]) -> Lock:
        """What this machine holds now: the lock's sources that synced, and dropped ones still kept here."""
        previous = read_installed(self.root).sources
        kept = {o.source for o in outcomes if o.action == "kept" and o.source not in lock.sources}
        failed = {o.source for o in outcomes if o.action == "failed"}
        held = {n: s for n, s in lock.sources.items() if n not in failed}
        held.update({n: previous[n] for n in kept | failed if n in previous})
        return Lock(held)

    def _drop(self, entry: LockedSource, lock: Lock, force: bool) -> Outcome:
        """A source this machine installed that the lock no longer has (a teammate removed it)."""
        target = self.folder(entry.name)
        if not target.exists():
            return Outcome(entry.name, "removed")
        edits = [e for e in self.local_edits(entry) if e.in_the_way]
        if edits and not force:
            return Outcome(entry.name, "kept", local_edits=edits, warnings=["no longer in the lock"])
        self._swap_out(target, lock)
        return Outcome(entry.name, "removed")

    def _swap_out(self, target: Path, new_lock: Lock) -> None:
        """Remove `target` and write `new_lock`, as one change (swap.py)."""
        staging = new_staging(self.root)
        try:
            commit(self.root, staging, target, None, new_lock)
        except BaseException:
            discard(staging)
            raise

    def _sync_one(self, entry: LockedSource, force: bool, accepted: tuple[str, ...] = ()) -> Outcome:
        """Install what is missing; overwrite local edits (and drop what was added by hand) only if forced."""
        edits = self.local_edits(entry)
        missing = [e for e in edits if e.how == DELETED]
        in_the_way = [e for e in edits if e.in_the_way]
        if not missing and not (force and in_the_way):
            return Outcome(entry.name, "kept" if in_the_way else "unchanged", local_edits=in_the_way)
        staging = new_staging(self.root)
        try:
            self._stage_locked(entry, staging)
            new_folder = staging / TREE / entry.name
            scanned = accept(entry, scan_staged(new_folder, entry), accepted, entry)  # the lock's acceptances hold
            if not force:
                self._keep_edits(entry, in_the_way, new_folder)
            lock = self.lock().with_source(scanned) if accepted else self.lock()  # a sync alone never edits it
            self.keep_history(entry, new_folder, "before `sync --force`")
            commit(self.root, staging, self.folder(entry.name), new_folder, lock)
        except BaseException:
            discard(staging)
            raise
        return Outcome(entry.name, "installed", [s.id for s in entry.skills], local_edits=[] if force else in_the_way)

    def _stage_locked(self, entry: LockedSource, staging: Path) -> None:
        """Stage the source at its locked version, and prove it is what the lock pinned."""
        spec = spec_of(entry, self.root)
        staged, _ = self._stage(
            spec, entry.name, staging, only=entry.only, exclude=entry.exclude, commit_id=entry.commit, previous=entry
        )
        if entry.digest is not None and staged.digest != entry.digest:
            raise SourceError(
                f"{entry.name}: {strip_credentials(entry.url)} is no longer what the lock pinned (its content "
                f"changed); nothing was changed. `skillshelf update {entry.name}` reviews and takes what it holds now"
            )
        rolled = {s.id for s in entry.skills if s.rollback is not None}  # their bytes come from history, below
        locked = {s.id: s.digest for s in entry.skills if s.id not in rolled}
        fetched = {s.id: s.digest for s in staged.skills if s.id not in rolled}
        wrong = sorted(i for i in locked.keys() | fetched.keys() if locked.get(i) != fetched.get(i))
        if wrong or staged.files != entry.files:
            what = ", ".join(wrong[:5]) or "its license file"
            raise SourceError(
                f"{entry.name} at {entry.version[:12]} does not give what the lock says ({what} differ): the lock was "
                f"edited by hand or the source rewritten. Restore the lock, or `skillshelf update {entry.name}` to "
                "review and take what the source holds now"
            )
        restore_rolled_back(self.root, entry, staging / TREE / entry.name)

    def _keep_edits(self, entry: LockedSource, edits: list[LocalEdit], new_folder: Path) -> None:
        """Put the curator's edited skills and files (and what they added) in place of the fetched ones."""
        folder = self.folder(entry.name)
        for edit in edits:
            if not edit.modified:
                continue
            skill = entry.skill(edit.what)
            names = _skill_names(skill.path) if skill else [edit.what.rsplit("/", 1)[-1]]
            for name in names:
                self._replace_with(folder / name, new_folder / name)
        self._carry_untracked(entry, new_folder)

    @staticmethod
    def _replace_with(current: Path, staged: Path) -> None:
        if staged.is_dir() and not staged.is_symlink():
            shutil.rmtree(staged)
        elif staged.exists() or staged.is_symlink():
            staged.unlink()
        if current.exists() or current.is_symlink():
            _copy(current, staged)

    # -- remove --------------------------------------------------------------------------------------
    def remove(self, what: str, *, force: bool = False) -> Outcome:
        """Remove a whole source, or one skill of one (which then stays out on later updates)."""
        lock = self.lock()
        if what in lock.sources:
            return self._remove_source(lock.sources[what], lock, force)
        owner = lock.owner_of(what)
        if owner is None:
            known = ", ".join(sorted(lock.sources)) or "none yet"
            raise SourceError(f"no source or installed skill named {what!r} (sources: {known}; `skillshelf sources`)")
        return self._remove_skill(owner, what, lock, force)

    def _remove_source(self, entry: LockedSource, lock: Lock, force: bool) -> Outcome:
        edits = [e for e in self.local_edits(entry) if e.in_the_way]
        if edits and not force:
            return Outcome(entry.name, "kept", local_edits=edits)
        self._swap_out(self.folder(entry.name), lock.without(entry.name))
        record_installed(self.root, self.lock())
        forget_check(self.root, entry.name)
        return Outcome(entry.name, "removed", [s.id for s in entry.skills])

    def _remove_skill(self, entry: LockedSource, skill_id: str, lock: Lock, force: bool) -> Outcome:
        skill = entry.skill(skill_id)
        assert skill is not None
        now_digest = skill_digest(self.root, skill.path)
        if now_digest is not None and now_digest != skill.digest and not force:
            return Outcome(entry.name, "kept", local_edits=[LocalEdit(skill_id, MODIFIED)])
        if len(entry.skills) == 1:  # its last skill: the source goes (a later `add` brings it back)
            outcome = self._remove_source(entry, lock, force=True)
            return replace(outcome, skills=[skill_id])
        staging = new_staging(self.root)
        try:
            new_folder = staging / TREE / entry.name
            skip = set(_skill_names(skill.path))
            folder = self.folder(entry.name)
            shutil.copytree(folder, new_folder, symlinks=True, ignore=lambda at, names: _top(at, folder, names, skip))
            remaining = tuple(s for s in entry.skills if s.id != skill_id)
            exclude = (*entry.exclude, skill.origin or skill.id.split("/", 1)[1])
            new_entry = replace(entry, skills=remaining, exclude=tuple(sorted(set(exclude))))
            commit(self.root, staging, folder, new_folder, lock.with_source(new_entry))
        except BaseException:
            discard(staging)
            raise
        record_installed(self.root, self.lock())
        return Outcome(entry.name, "removed", [skill_id])


def _skill_names(path: str) -> list[str]:
    """The entries of a source's folder that make up the skill at library path `path`."""
    name = path.rsplit("/", 1)[-1]
    if not name.endswith(".md"):
        return [name]
    stem = name[: -len(".md")]
    return [name, f"{stem}.py", f"{stem}.js", f"{stem}.ts", f"{stem}-SKILL.md"]


def _top(directory: str, folder: Path, names: list[str], skip: set[str]) -> set[str]:
    return {n for n in names if n in skip} if Path(directory) == folder else set()


def _copy(source: Path, destination: Path) -> None:
    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, destination, symlinks=True)
    else:
        shutil.copy2(source, destination, follow_symlinks=False)


def _declared_licenses(tree: Path, name: str) -> dict[str, str]:
    """Each staged skill's own frontmatter `license`, by name, read as `skillshelf check` reads skills."""
    found = {}
    for skill in check_roots([tree]).skills:
        value = skill.frontmatter.get("license")
        if skill.category == name and isinstance(value, str) and value.strip():
            found[skill.name] = " ".join(value.split())[:MAX_LICENSE_FIELD]
    return found
