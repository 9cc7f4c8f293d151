"""The MCP Skills extension (`io.modelcontextprotocol/skills`, SEP-2640) and skills as resources.

- `skills/list` (paginated, `ttlMs`/`cacheScope`) and `skills/get` serve each published skill's
  `SKILL.md` URI, its frontmatter verbatim and its complete resources manifest (`uri`, `sha256:`
  digest, size), through the SDK's `Extension` hook; the extension is advertised in capabilities.
- `resources/list` lists every skill's `SKILL.md` (paginated) and `resources/read` serves every
  file a manifest lists, as the same bytes the digest covers.
- Files changing under the library send `notifications/resources/list_changed` (legacy sessions)
  and a `ResourcesListChanged` event (2026 `subscriptions/listen` streams).

URIs are `skill://<category>/<name>/<file>`; the skill name is the last directory segment.
Everything is read through the view's `SkillReader`: a hidden skill is absent from every listing and
unreadable, exactly like one that does not exist, and files obey the same path rules and size caps as
every other read (one read returns at most the extension's 16 MiB per skill).
- `resources/templates/list` lists `skill://{category}/{name}`, a skill's documentation as markdown.

`install` answers these on the low-level server skillshelf builds (server/sdk.py): MCPServer's resource
table holds no per-file MIME type and no listing of a library that changes.
"""

from __future__ import annotations

import base64
import binascii
import logging
import mimetypes
from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import quote, unquote

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp import MCPError, types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.lowlevel.server import Server
from mcp.server.subscriptions import InMemorySubscriptionBus
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.access.files import SkillFileError
from skillshelf.library.access.manifest import (
    MAX_TOTAL_BYTES,
    SKILL_DOC,
    NotPublishableError,
    SkillManifest,
    folder_name,
    uri_name,
)
from skillshelf.library.access.reader import SkillReader
from skillshelf.library.index.store import IndexedSkill
from skillshelf.server import sdk
from skillshelf.server.list_changed import ListChanged
from skillshelf.skills import service

logger = logging.getLogger(__name__)

EXTENSION_ID = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
SKILLS_PAGE = 50  # entries carry whole manifests
RESOURCES_PAGE = 200
LIST_TTL_MS = 30_000  # a hint only: files change under a watcher, and resources/list_changed says so
SOURCE_META_KEY = "skillshelf/source"  # a skill's provenance in its entry's _meta
DOCUMENTATION = types.ResourceTemplate(
    uri_template="skill://{category}/{name}",
    name="skill",
    title="Skill documentation",
    description="A skill's documentation as markdown; the id is category/name.",
    mime_type="text/markdown",
)


def skill_uri(category: str, name: str, path: str = SKILL_DOC) -> str:
    segments = [quote(category, safe=""), quote(name, safe=""), *(quote(p, safe="") for p in path.split("/"))]
    return SCHEME + "/".join(segments)


def parse_skill_uri(uri: str) -> tuple[str, str, str | None] | None:
    """(category, name, file path or None for the bare `skill://category/name`); None if not a skill URI."""
    if not uri.startswith(SCHEME):
        return None
    segments = [unquote(s) for s in uri[len(SCHEME) :].split("/")]
    if len(segments) < 2 or any(not s or "/" in s for s in segments):
        return None
    category, name, *path = segments
    return category, name, "/".join(path) if path else None


# -- wire shapes (field names become camelCase on the wire, as in mcp.types) --------------------
class _Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class SkillResource(_Wire):
    uri: str
    digest: str
    size: int


class SkillEntry(_Wire):
    uri: str
    frontmatter: dict[str, Any]
    resources: list[SkillResource]
    # MCP's place for what a protocol does not define: {SOURCE_META_KEY: {name, kind, url, commit, license}}
    # for a skill `skillshelf add` installed (docs/curating.md); absent for a skill written by hand.
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class ListSkillsResult(types.PaginatedResult, types.CacheableResult):
    skills: list[SkillEntry]
    result_type: Literal["complete"] = "complete"


class GetSkillParams(types.RequestParams):
    uri: str


class GetSkillResult(types.CacheableResult):
    skill: SkillEntry
    result_type: Literal["complete"] = "complete"


class SkillsExtension(Extension):
    identifier = EXTENSION_ID

    def __init__(self, surface: SkillsSurface) -> None:
        self.surface = surface

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("skills/list", types.PaginatedRequestParams, self.surface.list_skills),
            MethodBinding("skills/get", GetSkillParams, self.surface.get_skill),
        )


class SkillsSurface:
    """Skills as MCP resources and as the Skills extension, over one library and one visibility rule."""

    def __init__(self, reader: SkillReader) -> None:
        self.reader = reader
        self.bus = InMemorySubscriptionBus()
        self.extension = SkillsExtension(self)
        self.changes = ListChanged(self.bus, "resources")  # told when the resource list changes
        self._reported: set[tuple[str, str]] = set()

    def install(self, server: Server[Any]) -> None:
        """Serve the Skills extension and skills as resources, and announce library changes."""
        sdk.add_extension(server, self.extension)
        server.add_request_handler("resources/list", types.PaginatedRequestParams, self.list_resources)
        server.add_request_handler("resources/templates/list", types.PaginatedRequestParams, self.list_templates)
        server.add_request_handler("resources/read", types.ReadResourceRequestParams, self.read_resource)
        server.middleware.append(self.middleware)

    # -- skills/list and skills/get ------------------------------------------------------------
    async def list_skills(
        self, _ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> ListSkillsResult:
        return await anyio.to_thread.run_sync(self._skills_page, params.cursor)

    def _skills_page(self, cursor: str | None) -> ListSkillsResult:
        skills = self.reader.overview()  # ordered by id
        start = _page_start(skills, cursor)
        entries: list[SkillEntry] = []
        position = start
        while position < len(skills) and len(entries) < SKILLS_PAGE:
            manifest = self._manifest(skills[position])
            if manifest is not None:
                entries.append(_entry(manifest))
            position += 1
        next_cursor = _cursor(skills[position - 1].id) if position < len(skills) else None
        return ListSkillsResult(skills=entries, next_cursor=next_cursor, ttl_ms=LIST_TTL_MS, cache_scope="private")

    async def get_skill(self, _ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> GetSkillResult:
        manifest = await anyio.to_thread.run_sync(self._get_manifest, params.uri)
        return GetSkillResult(skill=_entry(manifest), ttl_ms=LIST_TTL_MS, cache_scope="private")

    def _get_manifest(self, uri: str) -> SkillManifest:
        parsed = parse_skill_uri(uri)
        if parsed is None or parsed[2] != SKILL_DOC:
            raise _invalid(f"{uri} is not a skill URI; skills are addressed as skill://<category>/<name>/SKILL.md")
        skill = self._find(parsed[0], parsed[1])
        if skill is None:
            raise _invalid(f"No skill is served at {uri}; skills/list shows the skills this server serves")
        try:
            return self.reader.manifest(skill)
        except NotPublishableError as exc:
            self._report(exc)
            raise _invalid(f"No skill is served at {uri}: {exc.message}") from exc
        except SkillFileError as exc:
            self.reader.mark_changed()
            raise _invalid(f"No skill is served at {uri}: {exc.message}") from exc

    def _manifest(self, skill: IndexedSkill) -> SkillManifest | None:
        try:
            return self.reader.manifest(skill)
        except NotPublishableError as exc:
            self._report(exc)
        except SkillFileError:
            self.reader.mark_changed()  # changed under us; the next listing sees the new state
        return None

    def _report(self, exc: NotPublishableError) -> None:
        """Once per skill and reason: why a skill is not published (never silently left out)."""
        if (exc.skill_id, exc.reason) not in self._reported:
            self._reported.add((exc.skill_id, exc.reason))
            logger.warning("not published through the MCP skills extension: %s [%s]", exc.message, exc.reason)

    # -- resources ------------------------------------------------------------------------------
    async def list_resources(
        self, _ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> types.ListResourcesResult:
        return await anyio.to_thread.run_sync(self._resources_page, params.cursor)

    def _resources_page(self, cursor: str | None) -> types.ListResourcesResult:
        skills = [s for s in self.reader.overview() if uri_name(s) is not None]
        start = _page_start(skills, cursor)
        page = skills[start : start + RESOURCES_PAGE]
        resources = [
            types.Resource(
                uri=skill_uri(s.category, folder_name(s)),
                name=folder_name(s),
                title=f"{s.id} ({s.layout})",
                description=str(s.details.description or s.summary),
                mime_type="text/markdown",
            )
            for s in page
        ]
        more = start + RESOURCES_PAGE < len(skills)
        return types.ListResourcesResult(resources=resources, next_cursor=_cursor(page[-1].id) if more else None)

    async def list_templates(
        self, _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[DOCUMENTATION])

    async def read_resource(
        self, _ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        """A skill's file (`skill://<category>/<name>/<path>`) or its documentation (`skill://<category>/<name>`):
        the skill the hooks were told of (tooling.Places.uris: this parser) is the one read."""
        parsed = parse_skill_uri(params.uri)
        if parsed is None:
            if params.uri.startswith(SCHEME):
                raise _not_found(params.uri, f"{params.uri} is not a skill URI; skills are skill://<category>/<name>")
            raise _not_found(params.uri, f"Unknown resource: {params.uri}")
        if parsed[2] is not None:
            return await anyio.to_thread.run_sync(self._read_file, params.uri, *parsed)
        return await anyio.to_thread.run_sync(self._read_documentation, params.uri, parsed[0], parsed[1])

    def _read_documentation(self, uri: str, category: str, name: str) -> types.ReadResourceResult:
        skill = self._find(category, name)
        if skill is None:
            raise _not_found(uri, f"No skill {category}/{name}; call searchPatterns to find skill ids.")
        try:
            text = service.read_documentation(self.reader, skill)
        except SkillshelfError as exc:
            raise _not_found(uri, exc.message) from exc
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, text=text, mime_type=DOCUMENTATION.mime_type)]
        )

    def _read_file(self, uri: str, category: str, name: str, path: str | None) -> types.ReadResourceResult:
        skill = self._find(category, name)
        if skill is None or path is None or uri_name(skill) is None:
            raise _not_found(uri, f"No skill is served at {uri}; resources/list shows the skills' SKILL.md files")
        try:
            data = self.reader.read_bytes(skill, path, MAX_TOTAL_BYTES)
        except SkillFileError as exc:
            if exc.code == ErrorCode.CONTENT_TOO_LARGE:
                raise _invalid(exc.message) from exc
            raise _not_found(uri, f"{exc.message} skills/get lists the skill's files.") from exc
        mime = "text/markdown" if path.endswith(".md") else mimetypes.guess_type(path)[0]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            blob = base64.b64encode(data).decode("ascii")
            contents: Any = types.BlobResourceContents(uri=uri, blob=blob, mime_type=mime or "application/octet-stream")
        else:
            contents = types.TextResourceContents(uri=uri, text=text, mime_type=mime or "text/plain")
        return types.ReadResourceResult(contents=[contents])

    # -- change notifications ----------------------------------------------------------------------
    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Remembers the event loop and legacy sessions, and advertises resources.listChanged on them."""
        return await self.changes.middleware(ctx, call_next)

    def library_changed(self) -> None:
        """Called on the library watcher's thread: tell every client to re-list."""
        self.changes.from_thread()

    async def announce_change(self) -> None:
        await self.changes.announce()

    # -- lookups ------------------------------------------------------------------------------
    def _find(self, category: str, name: str) -> IndexedSkill | None:
        return self.reader.get(f"{category}/{name}")


def _entry(manifest: SkillManifest) -> SkillEntry:
    source = manifest.source
    return SkillEntry(
        uri=skill_uri(manifest.category, manifest.name),
        frontmatter=manifest.frontmatter,
        resources=[
            SkillResource(uri=skill_uri(manifest.category, manifest.name, f.path), digest=f.digest, size=f.size)
            for f in manifest.files
        ],
        meta=None
        if source is None
        else {
            SOURCE_META_KEY: {
                "name": source.source,
                "kind": source.kind,
                "url": source.url,
                "commit": source.commit,
                "license": source.license,
            }
        },
    )


def _cursor(after_id: str) -> str:
    return base64.urlsafe_b64encode(after_id.encode()).decode("ascii")


def _page_start(skills: list[IndexedSkill], cursor: str | None) -> int:
    """Index of the first skill after the cursor's id (ids are sorted, so removals do not shift pages)."""
    if not cursor:
        return 0
    try:
        after = base64.urlsafe_b64decode(cursor.encode("ascii")).decode()
    except (binascii.Error, UnicodeError, ValueError) as exc:
        raise _invalid("cursor is not one this server issued; list again without a cursor") from exc
    return next((i for i, s in enumerate(skills) if s.id > after), len(skills))


def _invalid(message: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=message)


def _not_found(uri: str, message: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message=message, data={"uri": uri})
