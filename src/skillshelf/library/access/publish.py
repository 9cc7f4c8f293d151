"""The Agent Skills discovery index: what `serve --http` publishes under `/.well-known/` and what
`skillshelf export` writes, built here once for both (docs/publishing.md).

Two formats, from the discovery RFC (github.com/cloudflare/agent-skills-discovery-rfc):

- v0.2.0 at `.well-known/agent-skills/index.json`: `$schema` and `skills`, each entry `name`, `type`
  (`skill-md` for a skill that is its SKILL.md alone, else `archive`), `description`, `url` (relative to
  the index) and `digest` (`sha256:` of the artifact's exact bytes).
- v0.1.0 at `.well-known/skills/index.json` (what the `skills` installer reads): `skills`, each entry
  `name`, `description` and `files` (SKILL.md first), every file served at `.well-known/skills/NAME/PATH`.

A skill is published under the name the MCP Skills extension publishes it under (its manifest: the
same rules, files and digests); a second skill of the same name in another category is left out and
logged, since a discovery index names each skill once. An archive is a zip of the manifest's files at
its root, built byte for byte the same every time (fixed dates and modes), so its digest is stable.
Nothing here imports MCP; every byte is read through the view's `SkillReader`.
"""

from __future__ import annotations

import io
import json
import logging
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from skillshelf.library.access.files import SkillFileError
from skillshelf.library.access.manifest import (
    MAX_TOTAL_BYTES,
    SKILL_DOC,
    NotPublishableError,
    SkillManifest,
    sha256_digest,
    uri_name,
)
from skillshelf.library.access.reader import FileReader, SkillReader
from skillshelf.library.index.store import IndexedSkill

logger = logging.getLogger(__name__)

SCHEMA_V2 = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
V2_DIR = ".well-known/agent-skills"
V1_DIR = ".well-known/skills"
INDEX = "index.json"
ARCHIVE_SUFFIX = ".zip"
MAX_DESCRIPTION = 1024  # the RFC's (and the Agent Skills spec's) limit for an index entry
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # the earliest date a zip can hold: the same bytes on every build
_V1_FORBIDDEN = set("\\?#[]")  # v0.1.0: a listed path is printable ASCII without these
_ARCHIVE_DIGESTS: OrderedDict[tuple[tuple[str, str], ...], str] = OrderedDict()
_ARCHIVE_CACHE = 4096

ArtifactType = Literal["skill-md", "archive"]


@dataclass(frozen=True)
class Published:
    """A skill as the discovery index publishes it."""

    skill: IndexedSkill
    manifest: SkillManifest

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def description(self) -> str:
        return str(self.manifest.frontmatter.get("description", ""))[:MAX_DESCRIPTION]

    @property
    def paths(self) -> list[str]:
        """The skill's files, SKILL.md first (v0.1.0 asks for it there)."""
        return sorted((f.path for f in self.manifest.files), key=lambda p: (p != SKILL_DOC, p))

    @property
    def type(self) -> ArtifactType:
        return "skill-md" if self.paths == [SKILL_DOC] else "archive"

    @property
    def url(self) -> str:
        """The artifact's URL, relative to the index (RFC 3986 resolution, as the RFC says)."""
        return f"{self.name}/{SKILL_DOC}" if self.type == "skill-md" else f"{self.name}{ARCHIVE_SUFFIX}"


def published(reader: SkillReader) -> list[Published]:
    """Every skill the view publishes, by id, each name once."""
    found: dict[str, Published] = {}
    for skill in reader.overview():
        entry = _publish(reader, skill)
        if entry is None:
            continue
        if entry.name in found:
            logger.warning(
                "not in the discovery index: %s has the name of %s, and an index names each skill once; rename one",
                skill.id,
                found[entry.name].skill.id,
            )
            continue
        found[entry.name] = entry
    return list(found.values())


def find_published(reader: SkillReader, name: str) -> Published | None:
    """The skill the index publishes as `name` (the same one `published` picks), or None."""
    for skill in reader.overview():
        if uri_name(skill) == name and (entry := _publish(reader, skill)) is not None:
            return entry
    return None


def _publish(reader: SkillReader, skill: IndexedSkill) -> Published | None:
    try:
        return Published(skill, reader.manifest(skill))
    except NotPublishableError as exc:
        logger.debug("not in the discovery index: %s", exc.message)
    except SkillFileError:
        reader.mark_changed()  # changed under us; the next listing sees the new state
    return None


def read_files(reader: FileReader, entry: Published) -> list[tuple[str, bytes]]:
    """The skill's files as (path, bytes), in the manifest's order, through the view's reader."""
    return [(path, reader.read_bytes(entry.skill, path, MAX_TOTAL_BYTES)) for path in entry.paths]


def archive(files: list[tuple[str, bytes]]) -> bytes:
    """A zip of the files at its root (no wrapper folder), the same bytes for the same files."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as packed:
        for path, data in sorted(files):
            info = zipfile.ZipInfo(path, _ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o100644 << 16  # a regular file, rw-r--r--: no mode of the host leaks in
            packed.writestr(info, data)
    return buffer.getvalue()


def artifact_digest(reader: FileReader, entry: Published) -> str:
    """The `sha256:` digest of the entry's artifact: SKILL.md's bytes, or its archive's."""
    if entry.type == "skill-md":
        return entry.manifest.files[[f.path for f in entry.manifest.files].index(SKILL_DOC)].digest
    key = tuple(sorted((f.path, f.digest) for f in entry.manifest.files))
    known = _ARCHIVE_DIGESTS.get(key)
    if known is None:  # the archive's bytes follow from its files' bytes: zip them once per content
        known = sha256_digest(archive(read_files(reader, entry)))
        _ARCHIVE_DIGESTS[key] = known
        while len(_ARCHIVE_DIGESTS) > _ARCHIVE_CACHE:
            _ARCHIVE_DIGESTS.popitem(last=False)
    return known


def index_v2(reader: FileReader, entries: list[Published]) -> dict[str, Any]:
    skills = [
        {
            "name": e.name,
            "type": e.type,
            "description": e.description,
            "url": e.url,
            "digest": artifact_digest(reader, e),
        }
        for e in entries
    ]
    return {"$schema": SCHEMA_V2, "skills": skills}


def index_v1(entries: list[Published]) -> dict[str, Any]:
    skills = []
    for e in entries:
        unlisted = [p for p in e.paths if not _v1_path(p)]
        if unlisted:
            logger.warning("not in the v0.1.0 index: %s has a file name it cannot list (%s)", e.skill.id, unlisted[0])
            continue
        skills.append({"name": e.name, "description": e.description, "files": e.paths})
    return {"skills": skills}


def _v1_path(path: str) -> bool:
    return all(0x20 <= ord(c) <= 0x7E and c not in _V1_FORBIDDEN for c in path)


# -- export: the same set as files --------------------------------------------------------------
ExportFormat = Literal["folders", "zip"]


def export(reader: SkillReader, target: Path, form: ExportFormat = "folders") -> list[Published]:
    """Write the view's published skills under `target`, with the index and digests; what was written.

    `folders`: the `.well-known` tree a static host serves as it is (both indexes, each SKILL.md, each
    archive, and every file the v0.1.0 index lists). `zip`: a release's files side by side, `index.json`
    and one `NAME.zip` per skill (every skill an archive, so the index's relative URLs resolve beside it).
    """
    entries = published(reader)
    if form == "zip":
        as_archives = [(e, archive(read_files(reader, e))) for e in entries]
        index = index_v2(reader, entries)
        for item in index["skills"]:
            item["type"], item["url"] = "archive", f"{item['name']}{ARCHIVE_SUFFIX}"
        for item, (_entry, data) in zip(index["skills"], as_archives, strict=True):
            item["digest"] = sha256_digest(data)
        files = [(f"{e.name}{ARCHIVE_SUFFIX}", data) for e, data in as_archives]
        _write(target, [*files, (INDEX, index_json(index))])
        return entries
    written: list[tuple[str, bytes]] = []
    for entry in entries:
        contents = read_files(reader, entry)
        written += [(f"{V1_DIR}/{entry.name}/{path}", data) for path, data in contents]
        if entry.type == "skill-md":
            written.append((f"{V2_DIR}/{entry.url}", contents[0][1]))
        else:
            written.append((f"{V2_DIR}/{entry.url}", archive(contents)))
    written.append((f"{V2_DIR}/{INDEX}", index_json(index_v2(reader, entries))))
    written.append((f"{V1_DIR}/{INDEX}", index_json(index_v1(entries))))
    _write(target, written)
    return entries


def index_json(index: dict[str, Any]) -> bytes:
    return (json.dumps(index, indent=2, ensure_ascii=False) + "\n").encode()


def _write(target: Path, files: list[tuple[str, bytes]]) -> None:
    """Each file under `target` (its paths are manifest paths: relative, checked by the reader's rules)."""
    for relative, data in files:
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
