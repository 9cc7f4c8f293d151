"""Find skills under the library roots by listing directories; no skill file is read here.

Layouts (docs/library-format.md):
- three-file: <root>/<category>/<name>.md [+ <name>.py|.js|.ts] [+ <name>-SKILL.md]
- Agent Skills: <root>/<category>/<skill>/SKILL.md, or <root>/<skill>/SKILL.md (category 'general')
A root holding `patterns/` reads its categories there (the seed's `~/.shared-patterns/patterns`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from skillshelf.library.skill import folder, ignored
from skillshelf.library.skill.folder import MAX_FILES, TooManyFiles, listed, walk_folder
from skillshelf.library.skill.models import Finding, SkillSource
from skillshelf.library.skill.paths import display_path, relative_to_root

# The one ignore list (ignored.py, read by the one walk in folder.py); named here too for this module's importers.
IGNORED_NAMES = ignored.IGNORED_NAMES
undecodable = folder.undecodable
NOT_SKILL_DOCS = frozenset({"readme.md", "changelog.md", "contributing.md", "license.md", "index.md"})
CODE_EXTENSIONS = (".py", ".js", ".ts")
METADATA_SUFFIX = "-SKILL.md"
AGENT_DOC_NAMES = ("SKILL.md", "skill.md")
RESOURCE_DIRS = ("scripts", "references", "assets")
TOP_LEVEL_CATEGORY = "general"


@dataclass
class Discovery:
    sources: list[SkillSource] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def printable(text: str) -> str:
    """`text` with the bytes of an undecodable name shown as \\xNN (as a shell's $'...' writes them)."""
    return os.fsencode(text).decode("utf-8", "backslashreplace") if undecodable(text) else text


def name_not_utf8(name: str, *, folder: bool) -> str:
    """The finding message for a file or folder named `name` (undecodable): what to rename, and how."""
    skipped = "this folder and everything in it were skipped" if folder else "this file was skipped"
    return (
        f"name is not valid UTF-8 (its bad bytes are shown as \\xNN), so {skipped}. Rename it to a UTF-8 "
        f"name; in a shell: mv $'{printable(name)}' NEW-NAME"
    )


def name_refused(name: str, *, folder: bool) -> tuple[str, str]:
    """The finding (code, message) for a file or folder left out for its name (folder.is_refused)."""
    if undecodable(name):
        return "name-not-utf8", name_not_utf8(name, folder=folder)
    skipped = "this folder and everything in it were skipped" if folder else "this file was skipped"
    return (
        "name-control-characters",
        f"name holds a control character (ESC, CR, a C1 control, a bidirectional override or a zero-width "
        f"character, which could rewrite what a terminal or a listing shows, or pass for another name), so "
        f"{skipped}. Rename it without them",
    )


def library_base(root: Path) -> Path:
    nested = root / "patterns"
    return nested if nested.is_dir() else root


def discover(roots: list[Path]) -> Discovery:
    """All skill sources across roots; the first root wins an id collision, the loser is reported."""
    result = Discovery()
    winners: dict[str, SkillSource] = {}
    for index, root in enumerate(roots):
        walker = _RootWalker(root, index, result.findings)
        for source in walker.sources():
            kept = winners.get(source.skill_id)
            if kept is None:
                winners[source.skill_id] = source
                result.sources.append(source)
                continue
            same_root = kept.root_index == source.root_index
            where = "in the same root" if same_root else f"in root {display_path(kept.root)}"
            result.findings.append(
                Finding(
                    relative_to_root(source.doc_file, root),
                    None,
                    "warning",
                    "name-collision",
                    f"skill id {source.skill_id!r} is already taken by "
                    f"{relative_to_root(kept.doc_file, kept.root)} {where}; this one is not served. "
                    "Rename one of them.",
                    display_path(root),
                )
            )
    return result


class _RootWalker:
    def __init__(self, root: Path, index: int, findings: list[Finding]) -> None:
        self.root = root
        self.index = index
        self.findings = findings
        self.label = printable(display_path(root))

    @cached_property
    def real_root(self) -> Path:
        return self.root.resolve()

    def report(self, path: Path, severity: str, code: str, message: str) -> None:
        rel = printable(relative_to_root(path, self.root))
        self.findings.append(Finding(rel, None, severity, code, message, self.label))  # type: ignore[arg-type]

    def sources(self) -> list[SkillSource]:
        if not self.root.is_dir():
            self.findings.append(
                Finding(
                    ".",
                    None,
                    "error",
                    "root-missing",
                    "library root does not exist or is not a folder",
                    self.label,
                )
            )
            return []
        found: list[SkillSource] = []
        base = library_base(self.root)
        for entry in self._entries(base):
            if not entry.is_dir():
                continue
            path = Path(entry.path)
            agent_doc = _agent_doc(path)
            if agent_doc is not None:
                found.append(self._agent_source(path, agent_doc, TOP_LEVEL_CATEGORY))
            else:
                found.extend(self._category(path))
        return found

    def _entries(self, directory: Path) -> list[os.DirEntry[str]]:
        """Directory entries worth looking at; symlinks that leave the root are reported, not followed."""
        refused: list[Path] = []
        try:
            entries = listed(directory, refused)
        except PermissionError:
            self.report(directory, "error", "file-unreadable", "folder cannot be listed (permission denied)")
            return []
        except OSError as exc:
            self.report(directory, "error", "file-unreadable", f"folder cannot be listed ({exc.strerror})")
            return []
        for path in refused:
            self.report(path, "error", *name_refused(path.name, folder=path.is_dir()))
        kept = []
        for entry in entries:
            if entry.is_symlink() and not self._symlink_ok(Path(entry.path)):
                continue
            if not entry.is_dir() and not entry.is_file():
                self.report(
                    Path(entry.path),
                    "error",
                    "file-not-regular",
                    "is not a regular file (a FIFO, socket or device); it was not opened. Replace it with a file.",
                )
                continue
            kept.append(entry)
        return kept

    def _symlink_ok(self, link: Path) -> bool:
        try:
            target = link.resolve(strict=True)
        except RuntimeError:
            self.report(link, "warning", "symlink-loop", "symlink loop; not followed. Remove or fix the link.")
            return False
        except OSError as exc:
            if exc.errno == 40:  # ELOOP
                self.report(link, "warning", "symlink-loop", "symlink loop; not followed. Remove or fix the link.")
            else:
                self.report(link, "warning", "symlink-broken", "symlink target does not exist; not followed")
            return False
        real_root = self.real_root
        if target != real_root and not target.is_relative_to(real_root):
            self.report(
                link,
                "warning",
                "symlink-outside-root",
                "symlink points outside the library root; not followed. Add its target as another "
                "--library root to serve it.",
            )
            return False
        return True

    def _category(self, directory: Path) -> list[SkillSource]:
        category = directory.name
        entries = self._entries(directory)
        files = {e.name: e for e in entries if e.is_file()}
        found: list[SkillSource] = []
        for name, entry in files.items():
            stem = name[:-3]
            if not name.endswith(".md") or name.endswith(METADATA_SUFFIX) or _is_repo_doc(stem):
                continue
            meta = files.get(stem + METADATA_SUFFIX)
            code = next((files[stem + ext] for ext in CODE_EXTENSIONS if stem + ext in files), None)
            parts = [entry, *(e for e in (code, meta) if e is not None)]
            found.append(
                SkillSource(
                    key=f"{self.index}:{relative_to_root(Path(entry.path), self.root)}",
                    root=self.root,
                    root_index=self.index,
                    category=category,
                    name=stem,
                    layout="three-file",
                    doc_file=Path(entry.path),
                    code_file=Path(code.path) if code else None,
                    meta_file=Path(meta.path) if meta else None,
                    signature=_signature(parts),
                )
            )
        for name in files:
            if name.endswith(METADATA_SUFFIX) and name[: -len(METADATA_SUFFIX)] + ".md" not in files:
                self.report(
                    directory / name,
                    "warning",
                    "metadata-orphan",
                    f"metadata file has no document; add {name[: -len(METADATA_SUFFIX)]}.md beside it",
                )
        for entry in entries:
            if not entry.is_dir():
                continue
            path = Path(entry.path)
            agent_doc = _agent_doc(path)
            if agent_doc is not None:
                found.append(self._agent_source(path, agent_doc, category))
            else:
                self.report(
                    path,
                    "info",
                    "not-a-skill",
                    "folder has no SKILL.md and categories cannot be nested; skipped",
                )
        return found

    def _agent_source(self, directory: Path, doc: Path, category: str) -> SkillSource:
        parts: list[os.DirEntry[str] | Path] = [doc, directory]
        parts.extend(directory / sub for sub in RESOURCE_DIRS)
        return SkillSource(
            key=f"{self.index}:{relative_to_root(doc, self.root)}",
            root=self.root,
            root_index=self.index,
            category=category,
            name=directory.name,
            layout="agent-skills",
            doc_file=doc,
            signature=f"{_signature(parts)}|{_files_stamp(directory, self.real_root)}",
        )


def _is_repo_doc(stem: str) -> bool:
    """README, LICENSE, THIRD_PARTY_NOTICES and friends document the folder; they are not skills."""
    return stem.lower() + ".md" in NOT_SKILL_DOCS or (stem == stem.upper() and any(c.isalpha() for c in stem))


def _agent_doc(directory: Path) -> Path | None:
    for name in AGENT_DOC_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def _files_stamp(folder: Path, real_root: Path) -> str:
    """A digest of every file the one walk lists in an Agent Skills folder (its path, mtime, size and
    permissions): what the scanner reads and the skill's digest covers. A file edited in place
    (scripts/run.sh) changes no folder's mtime, so the folders' stamps alone kept stale findings."""
    digest = hashlib.blake2b(digest_size=12)
    try:
        for file in walk_folder(folder, real_root, max_files=MAX_FILES):
            stamp = f"{file.served}\0{file.mtime_ns}:{file.size}:{file.mode & 0o777:o}\n"
            digest.update(stamp.encode("utf-8", "surrogateescape"))
    except TooManyFiles:
        digest.update(b"\0over the limit")  # what was listed before the limit still counts
    return digest.hexdigest()


def _signature(parts: Sequence[os.DirEntry[str] | Path]) -> str:
    """mtime, size and permissions of every file or folder that feeds a skill; missing ones count as
    '-'. Permissions count: a file made unreadable must be re-read (and reported), not kept."""
    stamps = []
    for part in parts:
        try:
            info = part.stat()
        except OSError:
            stamps.append("-")
            continue
        stamps.append(f"{info.st_mtime_ns}:{info.st_size}:{info.st_mode & 0o777:o}")
    return "|".join(stamps)
