"""The Agent Skills discovery index over HTTP (`/.well-known/agent-skills/` and `/.well-known/skills/`).

What each route reads and answers; server/web.py makes each a `Surface`, so every one is read through
the view's `CallPipeline.read` (hooks and the call log, as the Skills extension's reads are) behind the
view's tokens, and answers 404 for a skill the view hides exactly as for one that does not exist. The
index and its digests come from library/access/publish.py, which `skillshelf export` writes from too.
"""

from __future__ import annotations

import base64
import mimetypes
from typing import Any

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.access import publish
from skillshelf.library.access.manifest import MAX_TOTAL_BYTES
from skillshelf.library.access.reader import SkillReader

V2 = f"/{publish.V2_DIR}"
V1 = f"/{publish.V1_DIR}"


class PublishedFile(BaseModel):
    """One file as served: text when it is UTF-8 (what a post_call hook can redact), else base64."""

    skill_id: str
    path: str
    text: str | None = None
    blob: str | None = None

    def data(self) -> bytes:
        return self.text.encode() if self.text is not None else base64.b64decode(self.blob or "")


class PublishedArchive(BaseModel):
    skill_id: str
    files: list[PublishedFile]


class DiscoveryIndex(BaseModel):
    """An index as JSON (its keys include `$schema`, so it is kept as a mapping)."""

    index: dict[str, Any]


def index_arguments(_request: Request) -> dict[str, Any]:
    return {}


class Routes:
    """The loads (what the hooks see) and renders of the discovery routes over one view's reader."""

    def __init__(self, reader: SkillReader) -> None:
        self.reader = reader

    # -- arguments: the skill id a URL's name stands for (hooks and the log see ids, as everywhere) --
    def file_arguments(self, request: Request) -> dict[str, Any]:
        return {"skillId": self._skill_id(request.path_params["name"]), "path": request.path_params["path"]}

    def archive_arguments(self, request: Request) -> dict[str, Any]:
        return {"skillId": self._skill_id(request.path_params["name"])}

    def _skill_id(self, name: str) -> str:
        entry = publish.find_published(self.reader, name)
        return entry.skill.id if entry is not None else name  # not an id: the read answers 404

    # -- loads ----------------------------------------------------------------------------------
    def load_index_v2(self, _arguments: dict[str, Any]) -> DiscoveryIndex:
        return DiscoveryIndex(index=publish.index_v2(self.reader, publish.published(self.reader)))

    def load_index_v1(self, _arguments: dict[str, Any]) -> DiscoveryIndex:
        return DiscoveryIndex(index=publish.index_v1(publish.published(self.reader)))

    def load_file(self, arguments: dict[str, Any]) -> PublishedFile:
        entry = self._entry(arguments)
        path = str(arguments.get("path") or "")
        if path not in entry.paths:
            raise SkillshelfError(ErrorCode.PATTERN_NOT_FOUND, f"{entry.skill.id} has no file {path!r}.")
        return _file(entry.skill.id, path, self.reader.read_bytes(entry.skill, path, MAX_TOTAL_BYTES))

    def load_archive(self, arguments: dict[str, Any]) -> PublishedArchive:
        entry = self._entry(arguments)
        files = [_file(entry.skill.id, path, data) for path, data in publish.read_files(self.reader, entry)]
        return PublishedArchive(skill_id=entry.skill.id, files=files)

    def _entry(self, arguments: dict[str, Any]) -> publish.Published:
        skill_id = str(arguments.get("skillId") or "")
        skill = self.reader.get(skill_id)
        entry = None if skill is None else publish.find_published(self.reader, skill_id.split("/", 1)[-1])
        if entry is None or entry.skill.id != skill_id:
            raise SkillshelfError(ErrorCode.PATTERN_NOT_FOUND, f"No skill {skill_id!r} is published here.")
        return entry

    # -- renders --------------------------------------------------------------------------------
    @staticmethod
    def render_index(_base: str, found: DiscoveryIndex) -> Response:
        return JSONResponse(found.index)

    @staticmethod
    def render_file(_base: str, found: PublishedFile) -> Response:
        kind = "text/markdown" if found.path.endswith(".md") else mimetypes.guess_type(found.path)[0]
        fallback = "text/plain" if found.text is not None else "application/octet-stream"
        return Response(found.data(), media_type=kind or fallback)

    @staticmethod
    def render_archive(_base: str, found: PublishedArchive) -> Response:
        data = publish.archive([(f.path, f.data()) for f in found.files])
        return Response(data, media_type="application/zip")


def _file(skill_id: str, path: str, data: bytes) -> PublishedFile:
    try:
        return PublishedFile(skill_id=skill_id, path=path, text=data.decode("utf-8"))
    except UnicodeDecodeError:
        return PublishedFile(skill_id=skill_id, path=path, blob=base64.b64encode(data).decode("ascii"))
