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

import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import Any

from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.skill.folder import MAX_FILES, MAX_TOTAL_BYTES
from skillshelf.library.skill.frontmatter import YAMLError, dump_frontmatter, split_frontmatter
from skillshelf.library.skill.layouts import MAX_DESCRIPTION, valid_name
from skillshelf.library.sources.provenance import Provenance

SKILL_DOC = "SKILL.md"
__all__ = ["MAX_FILES", "MAX_TOTAL_BYTES", "SKILL_DOC"]


class NotPublishableError(Exception):
    """The skill breaks one of the extension's rules; `reason` is a stable code, the message says what to fix."""

    def __init__(self, skill_id: str, reason: str, message: str) -> None:
        super().__init__(message)
        self.skill_id = skill_id
        self.reason = reason
        self.message = message


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
    source: Provenance | None = None  # where the skill came from, when `skillshelf add` installed it

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_name(skill: IndexedSkill) -> str:
    """The name the skill is published under; NotPublishableError when it breaks the naming rules."""
    declared = str(skill.details.declared_name or skill.name)
    if declared != folder_name(skill):
        raise NotPublishableError(
            skill.id,
            "name-mismatch",
            f"{skill.id}: frontmatter name {declared!r} differs from {folder_name(skill)!r}; the MCP skills "
            "extension requires them to match. Rename one.",
        )
    if not valid_name(declared):
        raise NotPublishableError(
            skill.id,
            "name-invalid",
            f"{skill.id}: name {declared!r} breaks the Agent Skills naming rules (1-64 lowercase letters, digits "
            "and single hyphens); rename it to publish it through the MCP skills extension.",
        )
    return declared


def uri_name(skill: IndexedSkill) -> str | None:
    """The name the skill is published under, or None when it breaks the naming rules (no file is read)."""
    try:
        return check_name(skill)
    except NotPublishableError:
        return None


def publishable_frontmatter(skill: IndexedSkill, doc: bytes) -> dict[str, Any]:
    """SKILL.md's frontmatter exactly as a YAML parser reads the served bytes, as JSON values.

    Parsed by `frontmatter.safe_load`, the one YAML loader (it refuses alias bombs)."""
    try:
        text = doc.decode("utf-8").removeprefix("\ufeff")
        loaded = split_frontmatter(text)
    except (UnicodeDecodeError, ValueError, YAMLError) as exc:
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
        raise NotPublishableError(
            skill.id,
            "name-mismatch",
            f"{skill.id}: frontmatter name {name!r} differs from {folder_name(skill)!r}; the MCP skills "
            "extension requires them to match. Rename one.",
        )
    return frontmatter


def three_file_skill_md(skill: IndexedSkill, body: str) -> bytes:
    """SKILL.md for a three-file skill: frontmatter generated from the index, then the documentation body."""
    description = " ".join(str(skill.details.description or "").split())
    if len(description) > MAX_DESCRIPTION:
        description = description[: MAX_DESCRIPTION - 1].rstrip() + "…"
    metadata = {"category": skill.category, "layout": "three-file", "quality": f"{skill.quality:g}"}
    if skill.details.tags:
        metadata["tags"] = ", ".join(skill.details.tags)
    frontmatter: dict[str, Any] = {"name": folder_name(skill), "description": description, "metadata": metadata}
    return f"---\n{dump_frontmatter(frontmatter)}---\n\n{body}".encode()


def folder_name(skill: IndexedSkill) -> str:
    """The skill's name from its path (folder or file stem), which the extension's URI ends with."""
    return skill.id.split("/", 1)[1]


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
