"""A skill as a directory of files with digests: what the MCP Skills extension (SEP-2640) publishes.

Each skill maps onto the Agent Skills shape, whatever its layout on disk:

- Agent Skills folder: `SKILL.md` and every other file in the folder, byte for byte (hidden files,
  `node_modules`-style folders and symlinks leaving the root are not part of a skill).
- three-file skill: a `SKILL.md` written from it (frontmatter `name`, `description` and string
  `metadata`, then the documentation body), the implementation as `scripts/<name>.<ext>` and the
  metadata file as `references/<name>-SKILL.md`, both byte for byte.

A skill is published only when the extension's rules hold: its frontmatter is valid YAML with
`name` and `description`, the name follows the Agent Skills naming rules and equals the last path
segment (the folder or file name), and the skill stays within 512 files and 16 MiB. Otherwise
`NotPublishableError` says which rule failed and what to fix; nothing is truncated.
No MCP here: the server turns manifests into `skills/list` entries and resource reads.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.skill.discovery import IGNORED_NAMES
from skillshelf.library.skill.frontmatter import parse_document
from skillshelf.library.skill.layouts import MAX_DESCRIPTION, valid_name
from skillshelf.library.skill.paths import is_within
from skillshelf.library.skill.reading import Reporter, read_text

MAX_FILES = 512
MAX_TOTAL_BYTES = 16 * 1024 * 1024
SKILL_DOC = "SKILL.md"
_SPLITTER = YAMLHandler()


class NotPublishableError(Exception):
    """The skill breaks one of the extension's rules; `reason` is a stable code, the message says what to fix."""

    def __init__(self, skill_id: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.skill_id = skill_id
        self.reason = reason
        self.message = message


class SkillFileNotFoundError(Exception):
    """The path is not one of the skill's files (or it vanished)."""


@dataclass(frozen=True)
class ManifestFile:
    path: str  # relative to the skill's directory, '/'-separated ('SKILL.md', 'scripts/run.py')
    size: int
    digest: str  # 'sha256:<64 lowercase hex>' of the raw bytes


@dataclass(frozen=True)
class SkillManifest:
    skill_id: str
    category: str
    name: str  # the frontmatter name; equal to the last segment of the skill's path
    frontmatter: dict[str, Any]
    files: tuple[ManifestFile, ...]

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class SkillManifests:
    """Builds manifests and reads skill files as bytes; digests are cached by (path, mtime, size)."""

    def __init__(self, roots: list[Path], max_files: int = MAX_FILES, max_total_bytes: int = MAX_TOTAL_BYTES) -> None:
        self.roots = roots
        self.max_files = max_files
        self.max_total_bytes = max_total_bytes
        self._digests: dict[Path, tuple[int, int, str]] = {}
        self._lock = threading.Lock()

    # -- the skill's files ------------------------------------------------------------------
    def root_of(self, skill: IndexedSkill) -> Path:
        return self.roots[skill.details.root_index]

    def uri_name(self, skill: IndexedSkill) -> str | None:
        """The name the skill is published under, or None when it breaks the naming rules.

        The cheap check (no file is read), for listings that must not hash every skill.
        """
        declared = str(skill.details.declared_name or skill.name)
        if declared != folder_name(skill) or not valid_name(declared):
            return None
        return declared

    def build(self, skill: IndexedSkill) -> SkillManifest:
        """The skill's frontmatter and complete file list with digests; raises `NotPublishableError`."""
        if self.uri_name(skill) is None:
            self._check_name(skill, str(skill.details.declared_name or skill.name))
        name = folder_name(skill)
        files = self._file_map(skill)
        sizes = {path: self._size(skill, path, source) for path, source in files.items()}
        total = sum(sizes.values())
        if total > self.max_total_bytes:
            raise NotPublishableError(
                skill.id,
                "over-size-limit",
                f"{skill.id} has {total} bytes of files; the MCP skills extension allows "
                f"{self.max_total_bytes} per skill. Move large assets out of the skill.",
            )
        doc = self.read(skill, SKILL_DOC)
        frontmatter = self._frontmatter(skill, doc)
        entries = [
            ManifestFile(path, len(doc) if path == SKILL_DOC else sizes[path], self._digest(skill, path, source, doc))
            for path, source in sorted(files.items(), key=lambda item: (item[0] != SKILL_DOC, item[0]))
        ]
        return SkillManifest(skill.id, skill.category, name, frontmatter, tuple(entries))

    def read(self, skill: IndexedSkill, path: str) -> bytes:
        """A file of the skill as served (raw bytes; the three-file SKILL.md as written from the skill)."""
        if skill.layout == "three-file" and path == SKILL_DOC:
            return self._three_file_doc(skill)
        source = self._resolve(skill, path)
        try:
            return source.read_bytes()
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise SkillFileNotFoundError(f"{skill.id}/{path} cannot be read ({reason})") from exc

    # -- mapping paths to files -------------------------------------------------------------
    def _file_map(self, skill: IndexedSkill) -> dict[str, Path | None]:
        """Served path -> file on disk (None: written by the server, the three-file SKILL.md)."""
        root = self.root_of(skill)
        details = skill.details
        if skill.layout == "three-file":
            files: dict[str, Path | None] = {SKILL_DOC: None}
            if details.code_file:
                code = root / details.code_file
                files[f"scripts/{code.name}"] = code
            if details.meta_file:
                meta = root / details.meta_file
                files[f"references/{meta.name}"] = meta
            return files
        folder = (root / details.doc_file).parent
        found: dict[str, Path | None] = {}
        real_root = root.resolve()
        for current, dirs, names in os.walk(folder, followlinks=True):
            base = Path(current)
            dirs[:] = sorted(d for d in dirs if _kept(d) and is_within(base / d, real_root))
            for name in sorted(names):
                path = base / name
                if not _kept(name) or not is_within(path, real_root) or not path.is_file():
                    continue
                found[path.relative_to(folder).as_posix()] = path
                if len(found) > self.max_files:
                    raise NotPublishableError(
                        skill.id,
                        "over-file-limit",
                        f"{skill.id} has more than {self.max_files} files; the MCP skills extension allows "
                        f"{self.max_files} per skill. Remove generated or vendored files from its folder.",
                    )
        doc_name = Path(details.doc_file).name
        if doc_name != SKILL_DOC:  # a lowercase skill.md is served under the name the spec requires
            found[SKILL_DOC] = found.pop(doc_name)
        return found

    def _resolve(self, skill: IndexedSkill, path: str) -> Path:
        """The file behind a served path, refusing anything that is not one of the skill's files."""
        root = self.root_of(skill)
        pure = PurePosixPath(path)
        if not path or pure.is_absolute() or any(not _kept(part) or part == ".." for part in pure.parts):
            raise SkillFileNotFoundError(f"{skill.id} has no file {path!r}")
        if skill.layout == "three-file":
            source = self._file_map(skill).get(path)
        else:
            folder = (root / skill.details.doc_file).parent
            name = Path(skill.details.doc_file).name if path == SKILL_DOC else path
            source = folder.joinpath(*PurePosixPath(name).parts)
        if source is None or not source.is_file() or not is_within(source, root.resolve()):
            raise SkillFileNotFoundError(f"{skill.id} has no file {path!r}")
        return source

    def _size(self, skill: IndexedSkill, path: str, source: Path | None) -> int:
        if source is None:
            return len(self.read(skill, path))
        try:
            return source.stat().st_size
        except OSError as exc:
            raise SkillFileNotFoundError(f"{skill.id}/{path} vanished") from exc

    def _digest(self, skill: IndexedSkill, path: str, source: Path | None, doc: bytes) -> str:
        if path == SKILL_DOC:
            return sha256_digest(doc)
        assert source is not None  # only SKILL.md is written by the server
        try:
            info = source.stat()
        except OSError as exc:
            raise SkillFileNotFoundError(f"{skill.id}/{path} vanished") from exc
        with self._lock:
            cached = self._digests.get(source)
        if cached is not None and cached[:2] == (info.st_mtime_ns, info.st_size):
            return cached[2]
        digest = sha256_digest(self.read(skill, path))
        with self._lock:
            self._digests[source] = (info.st_mtime_ns, info.st_size, digest)
        return digest

    # -- frontmatter ------------------------------------------------------------------------
    def _check_name(self, skill: IndexedSkill, declared: str) -> None:
        if declared != folder_name(skill):
            raise NotPublishableError(
                skill.id,
                "name-mismatch",
                f"{skill.id}: frontmatter name {declared!r} differs from {folder_name(skill)!r}; the MCP skills "
                "extension requires them to match. Rename one.",
            )
        raise NotPublishableError(
            skill.id,
            "name-invalid",
            f"{skill.id}: name {declared!r} breaks the Agent Skills naming rules (1-64 lowercase letters, digits "
            "and single hyphens); rename it to publish it through the MCP skills extension.",
        )

    def _frontmatter(self, skill: IndexedSkill, doc: bytes) -> dict[str, Any]:
        """SKILL.md's frontmatter exactly as a YAML parser reads the served bytes, as JSON values."""
        try:
            text = doc.decode("utf-8").removeprefix("\ufeff")
            raw_yaml, _body = _SPLITTER.split(text)
            loaded = yaml.safe_load(raw_yaml)
        except (UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
            raise NotPublishableError(
                skill.id,
                "frontmatter-invalid",
                f"{skill.id}: SKILL.md must start with valid YAML frontmatter ({type(exc).__name__}); "
                "`skillshelf check` shows where it breaks.",
            ) from exc
        if not isinstance(loaded, dict):
            raise NotPublishableError(skill.id, "frontmatter-invalid", f"{skill.id}: frontmatter is not a mapping")
        frontmatter = {str(k): _json_value(v) for k, v in loaded.items()}
        name, description = frontmatter.get("name"), frontmatter.get("description")
        if not isinstance(description, str) or not description.strip():
            raise NotPublishableError(
                skill.id,
                "description-missing",
                f"{skill.id}: frontmatter needs a `description` string to be published as an MCP skill.",
            )
        if name != folder_name(skill):
            self._check_name(skill, str(name))
        return frontmatter

    def _three_file_doc(self, skill: IndexedSkill) -> bytes:
        """SKILL.md for a three-file skill: generated frontmatter, then the documentation body."""
        root = self.root_of(skill)
        doc_file = root / skill.details.doc_file
        if not is_within(doc_file, root.resolve()):
            raise SkillFileNotFoundError(f"{skill.id}/SKILL.md: its document left the library root")
        text = read_text(doc_file, Reporter(skill.details.doc_file))
        if text is None:
            raise SkillFileNotFoundError(f"{skill.id}/SKILL.md: {skill.details.doc_file} cannot be read as text")
        body = parse_document(text, Reporter(skill.details.doc_file)).body
        description = " ".join(str(skill.details.description or "").split())
        if len(description) > MAX_DESCRIPTION:
            description = description[: MAX_DESCRIPTION - 1].rstrip() + "…"
        metadata = {"category": skill.category, "layout": "three-file", "quality": f"{skill.quality:g}"}
        if skill.details.tags:
            metadata["tags"] = ", ".join(skill.details.tags)
        frontmatter: dict[str, Any] = {"name": folder_name(skill), "description": description, "metadata": metadata}
        head = yaml.safe_dump(frontmatter, sort_keys=False, allow_unicode=True, width=10_000)
        return f"---\n{head}---\n\n{body}".encode()


def folder_name(skill: IndexedSkill) -> str:
    """The skill's name from its path (folder or file stem), which the extension's URI ends with."""
    return skill.id.split("/", 1)[1]


def folder_limit_problem(
    skill_id: str, folder: Path, max_files: int = MAX_FILES, max_total_bytes: int = MAX_TOTAL_BYTES
) -> tuple[str, str] | None:
    """(code, message) when a skill folder holds more than the Skills extension allows, else None.

    For `skillshelf check`: the same limits `build` enforces when serving, found before a client asks.
    """
    files = 0
    total = 0
    real_folder = folder.resolve()
    for current, dirs, names in os.walk(folder, followlinks=True):
        base = Path(current)
        dirs[:] = [d for d in dirs if _kept(d) and is_within(base / d, real_folder)]
        for name in names:
            path = base / name
            if not _kept(name) or not path.is_file():
                continue
            files += 1
            with contextlib.suppress(OSError):
                total += path.stat().st_size
            if files > max_files:
                return "over-file-limit", (
                    f"{skill_id} has more than {max_files} files; MCP clients using the skills extension get "
                    f"at most {max_files} per skill, so it is not published there. Remove generated or vendored files."
                )
    if total > max_total_bytes:
        return "over-size-limit", (
            f"{skill_id} has {total} bytes of files; the skills extension allows {max_total_bytes} per skill, "
            "so it is not published there. Move large assets out of the skill."
        )
    return None


def _kept(name: str) -> bool:
    return not name.startswith(".") and name not in IGNORED_NAMES


def _json_value(value: Any) -> Any:
    """YAML values as JSON ones: dates as ISO strings, keys as strings, anything exotic as its text."""
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)
