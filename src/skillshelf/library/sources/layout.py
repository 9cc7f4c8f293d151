"""Which skills a source holds, and where each goes in the library.

A source installs into its own folder, `<root>/<name>/`, in the layout the library reads (and the
real corpora use): one folder per skill, `<name>/<skill>/SKILL.md`, id `<name>/<skill>`.

- An Agent Skills folder is any folder of the source with a `SKILL.md` (or `skill.md`), however deep
  (`skills/`, `.claude/skills/`, categories): it is placed one level down, `<name>/<folder name>/`.
  The source's top folder itself may be one (a repository or archive of one skill): it takes the
  source's own name. A skill inside another is placed beside it, and left out of the outer one,
  unless it is under the outer one's `scripts/`, `references/` or `assets/`: an example it ships.
- A three-file skill is a `NAME.md` with its `NAME.py|.js|.ts` or `NAME-SKILL.md` beside it (a lone
  markdown file is documentation, not a skill), outside any skill folder: placed as `<name>/NAME.md`.
- Two skills that would get the same place: the shallower one (then the first by path) is installed,
  the other reported. `--only GLOB` keeps the skills whose name or path in the source matches.
- Inside a skill, what the library never serves is not installed: dot-names (`.git/`, `.env`) and
  build folders (`node_modules/`, `__pycache__/`, ...), and (with a warning) a name holding a control
  character. A link that leads out of its skill is left out.
- Each skill is held to the Skills extension's limits (512 files, 16 MiB), or the source is refused.
"""

from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath
from typing import Literal

from skillshelf.library.skill.discovery import (
    AGENT_DOC_NAMES,
    CODE_EXTENSIONS,
    METADATA_SUFFIX,
    NOT_SKILL_DOCS,
    RESOURCE_DIRS,
)
from skillshelf.library.skill.folder import MAX_FILES, MAX_TOTAL_BYTES, ignored, kept
from skillshelf.library.sources.archive import Member, link_table, resolve_link
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.fetch import Snapshot
from skillshelf.library.sources.spec import plain_name

Layout = Literal["agent-skills", "three-file"]


@dataclass(frozen=True)
class PlannedSkill:
    name: str  # its name in the library: the folder name, or the three-file stem
    layout: Layout
    origin: str  # where it is in the source: its folder ('' for the top), or its .md
    files: tuple[tuple[Member, str], ...]  # each member and its path inside the source's folder

    @property
    def placed(self) -> str:
        """Its path inside the source's folder: the skill's folder, or its .md."""
        return self.name if self.layout == "agent-skills" else f"{self.name}.md"

    @property
    def size(self) -> int:
        return sum(member.size for member, _ in self.files)


@dataclass
class Plan:
    skills: list[PlannedSkill]
    license: tuple[Member, str] | None = None  # the source's license file, placed at the folder's top
    warnings: list[str] = field(default_factory=list)


def plan_source(
    snapshot: Snapshot, *, top_name: str, only: tuple[str, ...] = (), exclude: tuple[str, ...] = ()
) -> Plan:
    """The skills of `snapshot` to install, placed; a SourceError when there are none."""
    members = [m for m in snapshot.members if _listed(m.path)]
    warnings: list[str] = []
    links = link_table(snapshot.members)
    found = _agent_skills(members, top_name, links, warnings) + _three_file_skills(members, warnings)
    if not found:
        raise SourceError(
            f"no skills in {snapshot.label}: looked for folders with a SKILL.md and for NAME.md "
            f"files with NAME.py/.js/.ts or NAME-SKILL.md beside them, among {len(members)} files. "
            "Point --path at the folder that holds the skills"
        )
    wanted = [s for s in found if _wanted(s, only)]
    if not wanted:
        names = ", ".join(sorted(s.name for s in found)[:20])
        globs = " ".join(only)
        raise SourceError(f"none of the {len(found)} skills in {snapshot.label} matches --only {globs}: {names}")
    chosen = [s for s in wanted if not _matches(s, exclude)]
    if not chosen:
        raise SourceError(f"every skill of {snapshot.label} was removed here (`skillshelf remove`); remove the source")
    skills = _without_collisions(chosen, snapshot.label, warnings)
    for skill in skills:
        _check_limits(skill, snapshot.label)
    plan = Plan(sorted(skills, key=lambda s: s.name), warnings=warnings)
    if snapshot.license_file is not None:
        name = snapshot.license_file.path.rsplit("/", 1)[-1]
        if name.casefold() not in {s.placed.casefold() for s in skills}:
            plan.license = (snapshot.license_file, name)
    return plan


def _listed(path: str) -> bool:
    """Anything under `.git/` or a build folder is never a skill nor part of one."""
    return not any(part == ".git" or (part in ("node_modules", "__pycache__")) for part in path.split("/"))


def _agent_skills(
    members: list[Member], top_name: str, links: dict[str, str], warnings: list[str]
) -> list[PlannedSkill]:
    folders = sorted(agent_folders(members))
    if not folders:
        return []
    owned: dict[str, list[Member]] = {folder: [] for folder in folders}
    for member in members:
        owner = _deepest_owner(member.path, owned)
        if owner is not None:
            owned[owner].append(member)
    skills = []
    for folder in folders:
        name = posixpath.basename(folder) or top_name
        if not _placeable(name):
            warnings.append(f"{folder or '.'}: the folder name {name!r} cannot be a skill's name here; left out")
            continue
        files = tuple(_inside(member, folder, name, links, warnings) for member in owned[folder])
        skills.append(PlannedSkill(name, "agent-skills", folder, tuple(f for f in files if f is not None)))
    return skills


def agent_folders(members: list[Member]) -> set[str]:
    """The folders with a SKILL.md (or skill.md) file: Agent Skills folders. One under another skill's
    `scripts/`, `references/` or `assets/` is an example that skill ships (a skill tester's sample
    skill), part of it, not a skill of its own."""
    docs = [m for m in members if m.kind != "link" and posixpath.basename(m.path) in AGENT_DOC_NAMES]
    folders = {posixpath.dirname(m.path) for m in docs}
    return {f for f in folders if not any(_shipped_by(f, other) for other in folders if other != f)}


def _shipped_by(folder: str, other: str) -> bool:
    """Whether `folder` lies in a resource folder of the skill folder `other`."""
    if other and not folder.startswith(other + "/"):
        return False
    inside = folder[len(other) + 1 :] if other else folder
    return inside.split("/", 1)[0] in RESOURCE_DIRS


def _deepest_owner(path: str, owned: dict[str, list[Member]]) -> str | None:
    for parent in [str(p) for p in PurePosixPath(path).parents]:
        folder = "" if parent == "." else parent
        if folder in owned:
            return folder
    return None


def _inside(
    member: Member, folder: str, name: str, links: dict[str, str], warnings: list[str]
) -> tuple[Member, str] | None:
    """The member's place inside its skill's placed folder, or None when the library would not serve it.
    A link is resolved through the source's other links, as it will be where it is written: one that
    steps out of its skill on the way is left out (the folder around the skill is not the source's)."""
    relative = member.path[len(folder) + 1 :] if folder else member.path
    parts = relative.split("/")
    if not all(kept(part) for part in parts):
        if not any(ignored(part) for part in parts):  # a dot-name or build folder goes unsaid, as always
            warnings.append(f"{member.path}: a name with a control character, which the library never serves; left out")
        return None
    if member.kind == "link" and resolve_link(member.path, links, folder) is None:
        warnings.append(f"{member.path}: a link to {member.target!r}, outside its skill; left out")
        return None
    return member, f"{name}/{relative}"


def _three_file_skills(members: list[Member], warnings: list[str]) -> list[PlannedSkill]:
    skill_folders = agent_folders(members)
    by_path = {m.path: m for m in members if m.kind != "link"}
    skills = []
    for path in sorted(by_path):
        folder, filename = posixpath.split(path)
        if not _is_three_file_doc(filename) or _inside_any(path, skill_folders):
            continue
        stem = filename[: -len(".md")]
        companions = [posixpath.join(folder, stem + ext) for ext in (*CODE_EXTENSIONS, METADATA_SUFFIX)]
        present = [by_path[c] for c in companions if c in by_path]
        if not present:
            continue  # a lone markdown file: documentation
        if not _placeable(stem):
            warnings.append(f"{path}: the name {stem!r} cannot be a skill's name here; left out")
            continue
        files = [by_path[path], *present]
        placed = tuple((m, stem + m.path[len(posixpath.join(folder, stem)) :]) for m in files)
        skills.append(PlannedSkill(stem, "three-file", path, placed))
    return skills


def _is_three_file_doc(filename: str) -> bool:
    if not filename.endswith(".md") or filename in AGENT_DOC_NAMES or filename.endswith(METADATA_SUFFIX):
        return False
    stem = filename[: -len(".md")]
    return not (filename.lower() in NOT_SKILL_DOCS or (stem == stem.upper() and any(c.isalpha() for c in stem)))


def _inside_any(path: str, folders: set[str]) -> bool:
    return any(folder == "" or path.startswith(folder + "/") for folder in folders)


def _placeable(name: str) -> bool:
    return plain_name(name)  # the rule the lock's names are read with too


def _wanted(skill: PlannedSkill, only: tuple[str, ...]) -> bool:
    return not only or _matches(skill, only)


def _matches(skill: PlannedSkill, globs: tuple[str, ...]) -> bool:
    return any(fnmatchcase(skill.name, g) or fnmatchcase(skill.origin, g) for g in globs)


def _without_collisions(skills: list[PlannedSkill], label: str, warnings: list[str]) -> list[PlannedSkill]:
    """One skill per place: the shallowest, then the first by path; the others reported."""
    winners: dict[str, PlannedSkill] = {}
    for skill in sorted(skills, key=lambda s: (s.origin.count("/") + (s.origin != ""), s.origin)):
        key = skill.name.casefold()
        kept_one = winners.get(key)
        if kept_one is None:
            winners[key] = skill
            continue
        warnings.append(
            f"{skill.origin} and {kept_one.origin or '.'} in {label} would both be {skill.name}; installed "
            f"{kept_one.origin or '.'}, left out {skill.origin}. Choose with --only or --path"
        )
    return list(winners.values())


def _check_limits(skill: PlannedSkill, label: str) -> None:
    if len(skill.files) > MAX_FILES or skill.size > MAX_TOTAL_BYTES:
        raise SourceError(
            f"{skill.origin or skill.name} in {label} has {len(skill.files)} files of {skill.size} bytes, over the "
            f"limit of one skill ({MAX_FILES} files, {MAX_TOTAL_BYTES} bytes); refusing the source. Leave the "
            "skill out with --only (naming the others)"
        )


# -- writing a plan --------------------------------------------------------------------------------
def write_plan(snapshot: Snapshot, plan: Plan, folder: Path) -> None:
    """The planned files under `folder` (the source's folder, new): plain files 0644, executables 0755,
    folders 0755, links as links. Modes are set, not left to the umask, so every machine gets the same."""
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    entries = [pair for skill in plan.skills for pair in skill.files]
    if plan.license is not None:
        entries.append(plan.license)
    real = folder.resolve()
    for member, relative in sorted(entries, key=lambda pair: pair[1]):
        try:
            _write_member(snapshot, member, folder, real, relative)
        except OSError as exc:  # two names one file system takes as one (case), a full disk, ...
            raise SourceError(f"could not write {relative} from {snapshot.label}: {exc.strerror or exc}") from exc


def _write_member(snapshot: Snapshot, member: Member, folder: Path, real: Path, relative: str) -> None:
    destination = folder.joinpath(*relative.split("/"))
    for parent in reversed(destination.relative_to(folder).parents):
        where = folder / parent
        if not where.is_dir():
            where.mkdir(mode=0o755)
            where.chmod(0o755)
    if not destination.parent.resolve().is_relative_to(real):  # through a link of the source: never out
        raise SourceError(f"{relative} in {snapshot.label} would be written outside its skill; refusing the source")
    if member.kind == "link":
        destination.symlink_to(member.target)
        return
    data = snapshot.read(member)
    descriptor = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(descriptor, "wb") as out:
        out.write(data)
    destination.chmod(0o755 if member.kind == "exec" else 0o644)


LICENSE_TEXTS = (
    ("Apache-2.0", re.compile(r"Apache License.{0,80}Version 2\.0", re.S | re.I)),
    ("MIT", re.compile(r"Permission is hereby granted, free of charge", re.I)),
    ("BSD-3-Clause", re.compile(r"Neither the name of .{0,200} nor the names of", re.S | re.I)),
    ("BSD-2-Clause", re.compile(r"Redistributions in binary form must reproduce", re.I)),
    ("GPL-3.0", re.compile(r"GNU GENERAL PUBLIC LICENSE\s+Version 3", re.I)),
    ("GPL-2.0", re.compile(r"GNU GENERAL PUBLIC LICENSE\s+Version 2", re.I)),
    ("LGPL-3.0", re.compile(r"GNU LESSER GENERAL PUBLIC LICENSE\s+Version 3", re.I)),
    ("AGPL-3.0", re.compile(r"GNU AFFERO GENERAL PUBLIC LICENSE\s+Version 3", re.I)),
    ("MPL-2.0", re.compile(r"Mozilla Public License,?\s+(Version|v\.)\s*2\.0", re.I)),
    ("CC-BY-SA-4.0", re.compile(r"Attribution-ShareAlike 4\.0 International", re.I)),
    ("CC-BY-4.0", re.compile(r"Attribution 4\.0 International", re.I)),
    ("CC0-1.0", re.compile(r"CC0 1\.0 Universal", re.I)),
    ("Unlicense", re.compile(r"This is free and unencumbered software released into the public domain", re.I)),
    ("ISC", re.compile(r"Permission to use, copy, modify, and(/or)? distribute this software for any", re.I)),
)


def license_name(text: str, filename: str) -> str:
    """The SPDX id of a license text skillshelf recognises; else 'see FILENAME'."""
    head = text[:8192]
    # In order: BSD-3-Clause before BSD-2-Clause, whose words it holds too.
    return next((spdx for spdx, pattern in LICENSE_TEXTS if pattern.search(head)), f"see {filename}")
