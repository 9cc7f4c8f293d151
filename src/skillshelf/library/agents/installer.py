"""Install skills into an agent's own skills folder, find drift, sync, uninstall (docs/agents.md).

Each skill goes in as the MCP Skills extension publishes it (`SkillReader.manifest`): an Agent Skills
folder file for file, a three-file skill as a SKILL.md folder (name and description in frontmatter,
its code under `scripts/`). Every byte comes through the reader (a view's reader for `--view`), so the
files an agent gets are the files the view serves. A folder is linked instead only when asked
(`--link`), when it is an Agent Skills folder read through the whole library, and when every agent
known to read that skills folder follows links (`table.may_link`).

Every change is staged first, in a folder beside the skills folder, and then renamed into place; the
record (record.py) is written last. A name in the skills folder that skillshelf did not put there is
never touched without `force`; an installed copy someone edited is not overwritten or removed
without `force`; uninstall removes the files it wrote (unchanged), the folders it made, nothing else.
"""

from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from skillshelf.library.access.manifest import MAX_TOTAL_BYTES, NotPublishableError, SkillManifest, folder_name
from skillshelf.library.access.reader import FileReader, SkillReader
from skillshelf.library.agents.cost import Listed
from skillshelf.library.agents.record import Install, Record, RecordError, under, updating
from skillshelf.library.agents.table import Agent, may_link
from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.skill.digest import walk_tree

logger = logging.getLogger(__name__)
ReaderFor = Callable[[str | None], SkillReader]  # the reader of a view (None: the whole library)
# Why require_verified or require_signed hold a skill back (None: they serve it). Given only when one is
# set: then the agent's folders get copies of approved bytes, never links (a link shows later edits).
HeldBack = Callable[[str], str | None]


class InstallError(Exception):
    """The install cannot go ahead; the message says what to fix. Nothing was changed."""


@dataclass(frozen=True)
class Target:
    """One agent's skills folder: its user folder, or the folder in a project."""

    agent: Agent
    folder: Path
    project: Path | None

    @classmethod
    def of(cls, agent: Agent, project: Path | None = None) -> Target:
        if project is None:
            return cls(agent, agent.user.user(), None)
        if not project.is_dir():
            raise InstallError(f"project folder {project} does not exist; pass an existing folder to --project")
        project = project.resolve()
        return cls(agent, project.joinpath(*agent.project.split("/")), project)


@dataclass(frozen=True)
class Chosen:
    """A skill to install, as the reader publishes it."""

    skill: IndexedSkill
    manifest: SkillManifest

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def listed(self) -> Listed:
        return Listed(self.name, len(str(self.manifest.frontmatter.get("description", ""))))


@dataclass
class Outcome:
    name: str
    action: str  # installed, updated, unchanged, skipped, removed, kept, refused, held (held back: left)
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.action} {self.name}" + (f": {self.detail}" if self.detail else "")


@dataclass
class Drift:
    install: Install
    library: str | None = None  # how the library's skill differs (None: it does not)
    edits: list[str] = field(default_factory=list)  # how the installed copy differs from what was written
    held: str | None = None  # why the approval gate holds the skill back (it is not "gone": see `sync`)

    @property
    def current(self) -> bool:
        return self.library is None and not self.edits


# -- choosing ----------------------------------------------------------------------------------------
def choose(reader: SkillReader, only: tuple[str, ...] = ()) -> tuple[list[Chosen], list[Outcome]]:
    """The skills to install (every visible skill, or those whose id or name matches a glob of `only`),
    and the ones that cannot be installed with why (not publishable, a second skill of one name)."""
    chosen: dict[str, Chosen] = {}
    refused: list[Outcome] = []
    for skill in reader.overview():
        name = folder_name(skill)
        if only and not any(fnmatch.fnmatchcase(skill.id, g) or fnmatch.fnmatchcase(name, g) for g in only):
            continue
        try:
            manifest = reader.manifest(skill)
        except NotPublishableError as exc:
            refused.append(Outcome(skill.id, "skipped", exc.message))
            continue
        if manifest.name in chosen:
            other = chosen[manifest.name].skill.id
            refused.append(Outcome(skill.id, "skipped", f"{other} has the same name; an agent's folder holds one"))
            continue
        chosen[manifest.name] = Chosen(skill, manifest)
    if only and not chosen and not refused:
        raise InstallError(f"no skill matches {', '.join(only)}; `skillshelf doc` lists every skill's id")
    return list(chosen.values()), refused


def set_digest(manifest: SkillManifest) -> str:
    """One digest over the skill's files as served (path and sha256 of each)."""
    lines = "".join(f"{f.path}\0{f.digest}\n" for f in sorted(manifest.files, key=lambda f: f.path))
    return "sha256:" + hashlib.sha256(lines.encode("utf-8")).hexdigest()


# -- staging and swapping ----------------------------------------------------------------------------
@dataclass
class Change:
    """One skill folder to (re)place: staged, then renamed over `install.path`."""

    install: Install
    chosen: Chosen
    reader: SkillReader
    staged: Path | None = None


class Stage:
    """A folder beside the skills folder (same file system: a rename, never a copy) holding what is
    about to go in; removed at the end whatever happened."""

    def __init__(self, folder: Path) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=".skillshelf-install-", dir=folder.parent))

    def put(self, change: Change) -> None:
        target = self.root / change.install.name
        if change.install.mode == "link":
            target.symlink_to(change.install.link or "", target_is_directory=True)
        else:
            change.install.files = write_copy(change.reader, change.chosen, target)
        change.staged = target

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def write_copy(reader: FileReader, chosen: Chosen, target: Path) -> dict[str, str]:
    """The skill's files, read through the reader, written under `target`; each checked against the
    manifest's digest (a file that changed meanwhile stops the install: run it again)."""
    written: dict[str, str] = {}
    target.mkdir()
    for entry in chosen.manifest.files:
        data = reader.read_bytes(chosen.skill, entry.path, MAX_TOTAL_BYTES)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        if digest != entry.digest:
            raise InstallError(f"{chosen.skill.id}/{entry.path} changed while it was being installed; run it again")
        out = target.joinpath(*entry.path.split("/"))
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(data)
        out.chmod(0o755 if _executable(reader, chosen.skill, entry.path) else 0o644)
        written[entry.path] = digest
    return written


def _executable(reader: FileReader, skill: IndexedSkill, served: str) -> bool:
    source = reader.locate(skill, served)
    try:
        return source is not None and bool(source.stat().st_mode & stat.S_IXUSR)
    except OSError:
        return False


def swap_in(change: Change) -> None:
    """Rename the staged folder over the installed one; the old one is put back if the rename fails."""
    assert change.staged is not None
    path = change.install.path
    old = change.staged.with_name(change.staged.name + ".old")
    had_old = os.path.lexists(path)
    if had_old:
        path.rename(old)
    try:
        change.staged.rename(path)
    except OSError:
        if had_old:
            old.rename(path)
        raise
    if had_old:
        _remove_tree(old)


def apply(changes: list[Change]) -> None:
    """Stage every change (in every folder), then swap each in: a failure while staging changes nothing
    installed in any agent's folder."""
    stages: dict[Path, Stage] = {}
    try:
        for change in changes:
            _stage(change, stages)
        for change in changes:
            swap_in(change)
    finally:
        for stage in stages.values():
            stage.close()


def _stage(change: Change, stages: dict[Path, Stage]) -> None:
    folder = Path(change.install.folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        stage = stages.get(folder) or stages.setdefault(folder, Stage(folder))
        stage.put(change)
    except OSError as exc:
        raise InstallError(
            f"cannot stage {change.install.name} beside {folder} ({exc.strerror or exc}); nothing was changed"
        ) from exc


def _remove_tree(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path)


# -- installing ------------------------------------------------------------------------------------
@dataclass
class Request:
    target: Target
    view: str | None = None
    link: bool = False
    force: bool = False


def install(record: Record, reader: SkillReader, chosen: list[Chosen], request: Request) -> list[Outcome]:
    """Install `chosen` for the request's agent; the record is updated in place (the caller writes it)."""
    target = request.target
    try:
        made = make_folder(target.folder)
    except OSError as exc:
        raise InstallError(f"cannot make {target.folder} ({exc.strerror or exc}); nothing was installed") from exc
    record.created.setdefault(str(target.folder), [str(p) for p in made])
    outcomes: list[Outcome] = []
    changes: list[Change] = []
    for item in chosen:
        outcome, change = _plan(record, reader, item, request)
        outcomes.append(outcome)
        if change is not None:
            changes.append(change)
    apply(changes)
    for change in changes:
        _remember(record, change.install)
    _remove_made_folders(record, target.folder)  # nothing went in (all refused): leave no empty folder
    for outcome in outcomes:  # a copy already there for another agent sharing the folder serves this one too
        existing = record.at(target.folder, outcome.name)
        if outcome.action in ("unchanged", "kept") and existing and target.agent.name not in existing.agents:
            existing.agents = sorted([*existing.agents, target.agent.name])
    return outcomes


def _plan(record: Record, reader: SkillReader, item: Chosen, request: Request) -> tuple[Outcome, Change | None]:
    target = request.target
    path = target.folder / item.name
    existing = record.at(target.folder, item.name)
    fresh = _entry(reader, item, request, existing)
    if existing is None:
        if os.path.lexists(path) and not request.force:
            return Outcome(
                item.name, "refused", f"{path} exists and skillshelf did not put it there (--force replaces it)"
            ), None
        return Outcome(item.name, "installed", fresh.mode), Change(fresh, item, reader)
    if existing.skill != item.skill.id or existing.view != request.view:
        if not request.force:
            return Outcome(item.name, "refused", f"{path} holds {existing.skill} (--force replaces it)"), None
        return Outcome(item.name, "installed", f"replacing {existing.skill}"), Change(fresh, item, reader)
    edits = installed_edits(existing)
    if edits and not request.force:
        return Outcome(
            item.name, "kept", f"edited since it was installed ({', '.join(edits)}); --force replaces it"
        ), None
    if not edits and existing.digest == fresh.digest and existing.mode == fresh.mode:
        return Outcome(item.name, "unchanged"), None
    return Outcome(item.name, "updated", fresh.mode), Change(fresh, item, reader)


def _entry(reader: FileReader, item: Chosen, request: Request, existing: Install | None) -> Install:
    target = request.target
    linked = (
        request.link
        and request.view is None
        and item.skill.layout != "three-file"
        and may_link(target.agent, target.folder, target.project)
    )
    agents = sorted({*(existing.agents if existing else []), target.agent.name})
    return Install(
        folder=str(target.folder),
        name=item.name,
        agents=agents,
        skill=item.skill.id,
        view=request.view,
        mode="link" if linked else "copy",
        digest=set_digest(item.manifest),
        files={f.path: f.digest for f in item.manifest.files},
        description_chars=item.listed.description_chars,
        project=str(target.project) if target.project else None,
        link=str(reader.folder_of(item.skill)) if linked else None,
        origin=str(reader.folder_of(item.skill)),
    )


def _remember(record: Record, entry: Install) -> None:
    record.installs = [i for i in record.installs if not (i.folder == entry.folder and i.name == entry.name)]
    record.installs.append(entry)


def make_folder(folder: Path) -> list[Path]:
    """Make the skills folder and its missing parents; the ones made, outermost first."""
    missing: list[Path] = []
    probe = folder
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    folder.mkdir(parents=True, exist_ok=True)
    return list(reversed(missing))


# -- drift ---------------------------------------------------------------------------------------------
def installed_edits(entry: Install) -> list[str]:
    """How the installed folder differs from what was written: 'missing', 'FILE modified', ... ."""
    path = entry.path
    if entry.mode == "link":
        if not path.is_symlink():
            return ["missing" if not os.path.lexists(path) else "no longer a link"]
        return [] if str(path.readlink()) == entry.link else ["points elsewhere"]
    if path.is_symlink() or not path.is_dir():
        return ["missing" if not os.path.lexists(path) else "no longer a folder"]
    found: dict[str, str] = {}
    for item in walk_tree(path):
        if item.kind not in ("file", "exec") or item.info.st_size > MAX_TOTAL_BYTES:
            found[item.path] = f"not a file skillshelf wrote ({item.kind}, {item.info.st_size} bytes)"  # never read
            continue
        found[item.path] = "sha256:" + hashlib.sha256(item.content()).hexdigest()
    edits = [f"{p} deleted" for p in sorted(entry.files) if p not in found]
    edits += [f"{p} modified" for p in sorted(entry.files) if p in found and found[p] != entry.files[p]]
    edits += [f"{p} added" for p in sorted(found) if p not in entry.files]
    return edits


def drift(
    record: Record,
    reader_for: ReaderFor,
    agent: str | None = None,
    within: list[Path] | None = None,
    held_back: HeldBack | None = None,
) -> list[Drift]:
    """Each install (of `agent`; of a skill under one of `within`, the library's roots) and how it drifted.
    With `held_back` (only approved bytes are served), a skill the gate holds back says so, and a link
    has drifted: it shows the library's folder as it is now, approved or not."""
    found = []
    for entry in record.of(agent):
        if within is not None and not any(under(entry.origin, root) for root in within):
            continue
        result = Drift(entry, edits=installed_edits(entry))
        link = entry.mode == "link"
        result.held = held_back(entry.skill) if held_back is not None else None
        if result.held is not None:
            result.library = f"held back: {result.held}" + ("; `install --sync` removes the link" * link)
        elif held_back is not None and link:
            result.library = f"a link while only approved bytes are served: {LINK_SHOWS_EDITS}"
        else:
            result.library = library_change(entry, reader_for(entry.view))
        found.append(result)
    return found


LINK_SHOWS_EDITS = "it shows the library's later edits, approved or not; `install --sync` makes it a copy"


def library_change(entry: Install, reader: SkillReader) -> str | None:
    skill = reader.get(entry.skill)
    if skill is None:
        return f"{entry.skill} is no longer in the library" + (f" (view {entry.view})" if entry.view else "")
    try:
        manifest = reader.manifest(skill)
    except NotPublishableError as exc:
        return f"no longer publishable: {exc.message}"
    if entry.mode == "link":  # the agent reads the library's folder itself: always current
        return None
    return None if set_digest(manifest) == entry.digest else "changed in the library"


# -- syncing and uninstalling ------------------------------------------------------------------------
def sync(
    record: Record,
    reader_for: ReaderFor,
    agent: str | None = None,
    force: bool = False,
    within: list[Path] | None = None,
    held_back: HeldBack | None = None,
) -> list[Outcome]:
    """Bring every install (of `agent`) up to the library: changed skills re-rendered, skills gone from
    the library removed, edited copies kept (reported) unless `force`. All staged, then swapped in.
    With `held_back` (only approved bytes are served): a link becomes a copy of the approved files; a skill
    the gate holds back is not gone: its copy is left as it was installed ("held"), its link removed."""
    outcomes: list[Outcome] = []
    changes: list[Change] = []
    gone: list[tuple[Install, str]] = []
    for result in drift(record, reader_for, agent, within, held_back):
        entry = result.install
        if result.current:
            continue
        if result.edits and result.edits != ["missing"] and not force:
            outcomes.append(
                Outcome(entry.name, "kept", f"{entry.path} edited ({', '.join(result.edits)}); --force replaces it")
            )
            continue
        if result.held is not None:
            if entry.mode == "link":  # the link shows the unapproved files themselves
                gone.append((entry, f"{result.held}; a link would show its unapproved files"))
            else:
                left = "missing, not put back" if result.edits else "left as it was installed"
                outcomes.append(Outcome(entry.name, "held", f"{entry.path} {left}; {result.held}"))
            continue
        reader = reader_for(entry.view)
        skill = reader.get(entry.skill)
        if skill is None or (result.library or "").startswith("no longer publishable"):
            gone.append((entry, result.library or ""))
            continue
        changes.append(_refreshed(entry, Chosen(skill, reader.manifest(skill)), reader, links=held_back is None))
        outcomes.append(Outcome(entry.name, "updated", f"{entry.path} ({result.library or ', '.join(result.edits)})"))
    apply(changes)
    for change in changes:
        _remember(record, change.install)
    for entry, reason in gone:  # removed once every update is in: a failed staging removes nothing
        outcomes.append(_remove_entry(record, entry, force=force, reason=reason))
        _remove_made_folders(record, Path(entry.folder))
    return outcomes


def _refreshed(entry: Install, chosen: Chosen, reader: SkillReader, *, links: bool) -> Change:
    """`entry` brought up to the skill as the reader serves it now; a link stays one only where `links`."""
    fresh = replace(entry, digest=set_digest(chosen.manifest), files={f.path: f.digest for f in chosen.manifest.files})
    fresh.description_chars = chosen.listed.description_chars
    fresh.origin = str(reader.folder_of(chosen.skill))
    if fresh.mode == "link" and not links:
        fresh.mode, fresh.link = "copy", None
    if fresh.mode == "link":
        fresh.link = str(reader.folder_of(chosen.skill))
    return Change(fresh, chosen, reader)


def uninstall(record: Record, target: Target, only: tuple[str, ...] = (), force: bool = False) -> list[Outcome]:
    """Remove what skillshelf installed for `target` (and only that); the record is updated in place."""
    outcomes = []
    for entry in record.of(target.agent.name, target.folder):
        if only and not any(fnmatch.fnmatchcase(entry.name, g) or fnmatch.fnmatchcase(entry.skill, g) for g in only):
            continue
        if len(entry.agents) > 1:
            entry.agents.remove(target.agent.name)
            outcomes.append(Outcome(entry.name, "kept", f"still installed for {', '.join(entry.agents)}"))
            continue
        outcomes.append(_remove_entry(record, entry, force=force))
    _remove_made_folders(record, target.folder)
    return outcomes


def _remove_entry(record: Record, entry: Install, *, force: bool, reason: str = "") -> Outcome:
    left = remove_installed(entry, force=force)
    record.installs.remove(entry)
    if left:
        return Outcome(entry.name, "kept", f"{entry.path}: {', '.join(left)} since install, left (--force removes it)")
    return Outcome(entry.name, "removed", reason)


def remove_installed(entry: Install, *, force: bool) -> list[str]:
    """Remove the files `entry` wrote that are unchanged, then the folders they leave empty; what is
    left (edited or added files) is returned. `force` removes the whole skill folder."""
    path = entry.path
    if entry.mode == "link":
        if path.is_symlink() and (force or str(path.readlink()) == entry.link):
            path.unlink()
            return []
        return ["something else at its place"] if os.path.lexists(path) else []
    if not os.path.lexists(path):
        return []
    if path.is_symlink() or not path.is_dir():
        return ["something else at its place"]
    if force:
        shutil.rmtree(path)
        return []
    edits = set(installed_edits(entry))
    for served in entry.files:
        if f"{served} modified" not in edits:
            with contextlib.suppress(FileNotFoundError):
                path.joinpath(*served.split("/")).unlink()
    for folder in _folders_of(entry):
        with contextlib.suppress(OSError):
            folder.rmdir()
    return sorted(e for e in edits if not e.endswith(" deleted"))


def _folders_of(entry: Install) -> Iterator[Path]:
    """The folders of an installed copy, deepest first, the skill folder last."""
    folders = {entry.path.joinpath(*p.split("/")[:depth]) for p in entry.files for depth in range(1, p.count("/") + 1)}
    yield from sorted(folders, key=lambda f: len(f.parts), reverse=True)
    yield entry.path


def _remove_made_folders(record: Record, folder: Path) -> None:
    """Once nothing of skillshelf's is left in `folder`, remove the folders install made for it (empty ones)."""
    if record.of(folder=folder):
        return
    for made in reversed(record.created.pop(str(folder), [])):
        try:
            Path(made).rmdir()
        except OSError:
            break


def keeper(
    state_dir: Path, reader_for: ReaderFor, roots: list[Path], held_back: HeldBack | None = None
) -> Callable[[], None]:
    """A library change listener (`serve --keep-installed`): every install of a skill under `roots` brought
    up to date as `install --sync` would, edited copies kept; what it did is logged, and a failure is a
    warning (the next change tries again), never an error of the server."""

    def on_change() -> None:
        try:
            with updating(state_dir) as record:  # an `install` meanwhile waits, and is not undone
                if all(found.current for found in drift(record, reader_for, within=roots, held_back=held_back)):
                    return
                outcomes = sync(record, reader_for, within=roots, held_back=held_back)
        except (InstallError, RecordError, OSError) as exc:
            logger.warning("could not keep agents' installed skills current: %s", exc)
            return
        for outcome in outcomes:
            logger.info("kept installed skills current: %s", outcome)

    return on_change
