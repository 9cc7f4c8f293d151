"""The read-only web view over HTTP: search, skill pages and the library's charts.

`web_routes` gives the routes `build_server` adds to the MCP HTTP app (`serve --http`), and
`web_app` wraps them in an app of their own for `skillshelf web`. Both read skills through a
`SkillReader` (the served view's: hidden skills are absent everywhere, and their pages answer 404
like unknown ids) and take a `WebAccess`:

- `authorize(request)`: whether this request may see anything (default yes); no gives a 401 page.
- `refuse(request)`: why an authorized viewer may still not see these pages (a token without the
  view they show), or None; a reason gives a 403 page that says it.
- `security`: the MCP endpoint's Host/Origin checks (DNS-rebinding protection), applied here too.

Under `serve --http` every page that reads skills (`surfaces`: search, a skill, a file, the library, and
the Agent Skills discovery index with the files it names, server/wellknown.py) is read through the view's
call pipeline (`CallPipeline.read`), as `resources/read` is: its pre_call hook
sees the page as a call named `web/...` with the skill id and path as `skillId` and `path`, and may
refuse it (a 403 page with its reason); its post_call hook sees what the page shows, before it becomes
HTML, and may replace it (`redact_secrets` masks a key on the page as over MCP); the call log has a
line for each. `skillshelf web`, a curator's own view outside any configured view, reads directly.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.resources import files
from typing import Any, Generic, Protocol, TypeVar

import anyio.to_thread
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from pydantic import BaseModel, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from skillshelf import __version__
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.access.reader import CatalogReader, SkillReader, ViewReader
from skillshelf.server.auth import BearerTokens, caller_of, web_authorize, web_refusal
from skillshelf.server.hosts import transport_security
from skillshelf.server.pipeline import ReadRefused, adapter
from skillshelf.server.wellknown import V1, V2, DiscoveryIndex, PublishedArchive, PublishedFile, index_arguments
from skillshelf.server.wellknown import Routes as DiscoveryRoutes
from skillshelf.skills import service
from skillshelf.skills.models import SkillFile, SkillHit
from skillshelf.skills.service import MAX_LIMIT
from skillshelf.web import pages
from skillshelf.web.stats import LibraryView, library_view

logger = logging.getLogger(__name__)

Authorize = Callable[[Request], bool]
Refuse = Callable[[Request], str | None]
Page = Callable[[Request, str], Response]  # (request, base URL) -> response; runs in a worker thread
T = TypeVar("T")

# Nothing runs on these pages; styles come from our own stylesheet; images only from this server: a
# remote image in a skill's markdown would tell its owner who read the skill, and when (a tracking pixel).
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def allow_everyone(_request: Request) -> bool:
    return True


def refuse_nobody(_request: Request) -> str | None:
    return None


@dataclass(frozen=True)
class WebAccess:
    authorize: Authorize = allow_everyone
    security: TransportSecuritySettings | None = None  # None: no Host/Origin checks (tests, in-process)
    refuse: Refuse = refuse_nobody  # why this (authorized) viewer may not see the pages, if so: a 403 page


class Reads(Protocol):
    """How a page reads: `CallPipeline.read` of the view served (hooks and the call log), or `read_directly`."""

    def __call__(
        self,
        name: str,
        arguments: dict[str, Any],
        run: Callable[[dict[str, Any]], Awaitable[Any]],
        *,
        caller: str | None,
    ) -> Awaitable[Any]: ...


async def read_directly(
    name: str, arguments: dict[str, Any], run: Callable[[dict[str, Any]], Awaitable[Any]], *, caller: str | None
) -> Any:
    """`skillshelf web`: a curator's own view of every skill, outside any configured view (no hooks, no log)."""
    return await run(arguments)


@dataclass(frozen=True)
class Surface(Generic[T]):
    """A page that reads skills, as the view's pipeline sees it: `name` and `arguments` are what its hooks
    and call log see (the skill id and path by the names tools use: `skillId`, `path`); `load` reads (in a
    worker thread, from the arguments a pre_call hook may have changed) and gives what a post_call hook
    sees and may replace; `render` makes the page of that (in a worker thread)."""

    name: str
    shape: type[T]
    arguments: Callable[[Request], dict[str, Any]]
    load: Callable[[dict[str, Any]], T]
    render: Callable[[str, T], Response]


class SearchView(BaseModel):
    """The search page's content: the hits and the category chips (name, count)."""

    query: str
    category: str | None
    hits: list[SkillHit]
    chips: list[tuple[str, int]]
    everywhere: int | None = None  # the "All" chip's count (None: the chips' sum)
    error: str = ""  # an unknown category: the page is a 404 that says so


def surfaces(library: SkillReader) -> dict[str, Surface[Any]]:
    """Every page that reads skills, by the name the view's hooks and call log know it by; each reading
    route serves one (tests/server/test_read_surfaces.py reads a skill through each)."""
    pages_of = _Pages(library)
    listed: list[Surface[Any]] = [
        Surface("web/search", SearchView, _search_arguments, pages_of.load_search, pages_of.render_search),
        Surface("web/skill", pages.SkillPage, _skill_arguments, pages_of.load_skill, pages_of.render_skill),
        Surface("web/file", SkillFile, _file_arguments, pages_of.load_file, pages_of.render_file),
        Surface("web/library", LibraryView, lambda _request: {}, pages_of.load_library, pages_of.render_library),
        *_discovery_surfaces(DiscoveryRoutes(library)),
    ]
    return {surface.name: surface for surface in listed}


def _discovery_surfaces(routes: DiscoveryRoutes) -> list[Surface[Any]]:
    """The Agent Skills discovery index and the files it names (server/wellknown.py, docs/publishing.md)."""
    return [
        Surface("well-known/index", DiscoveryIndex, index_arguments, routes.load_index_v2, routes.render_index),
        Surface("well-known/skills-index", DiscoveryIndex, index_arguments, routes.load_index_v1, routes.render_index),
        Surface("well-known/file", PublishedFile, routes.file_arguments, routes.load_file, routes.render_file),
        Surface(
            "well-known/archive", PublishedArchive, routes.archive_arguments, routes.load_archive, routes.render_archive
        ),
    ]


def web_routes(
    library: SkillReader, access: WebAccess | None = None, *, catch_all: bool = True, reads: Reads = read_directly
) -> list[Route]:
    """The web view's routes over what `library` (a view's reader) shows, each page that reads skills read
    through `reads` (the view's `CallPipeline.read`: its hooks and call log); with `catch_all`, any other
    GET path gets the view's 404 page."""
    access = access or WebAccess()
    guard = TransportSecurityMiddleware(access.security) if access.security is not None else None
    site = _Site(library, access, reads, guard)
    stylesheet = files("skillshelf.web").joinpath(pages.STYLESHEET).read_text(encoding="utf-8")
    read = surfaces(library)
    icon = files("skillshelf.web").joinpath(pages.ICON).read_bytes()

    def not_found(request: Request, base: str) -> Response:
        return _html(pages.not_found_page(base, f"There is no page at {request.url.path}.", []), 404)

    async def to_slash(request: Request) -> Response:
        return RedirectResponse(f"{request.url.path}/", status_code=308)

    async def css(_request: Request) -> Response:
        return Response(stylesheet, media_type="text/css", headers={"Cache-Control": "max-age=300"})

    async def favicon(_request: Request) -> Response:
        return Response(icon, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})

    get = ["GET", "HEAD"]
    routes = [
        Route("/", site.reading(read["web/search"]), methods=get, name="web-search"),
        Route("/library", site.reading(read["web/library"]), methods=get, name="web-library"),
        Route("/skills/{category}/{name}", to_slash, methods=get),
        Route("/skills/{category}/{name}/", site.reading(read["web/skill"]), methods=get, name="web-skill"),
        Route("/skills/{category}/{name}/{path:path}", site.reading(read["web/file"]), methods=get, name="web-file"),
        Route(f"{V2}/index.json", site.reading(read["well-known/index"]), methods=get),
        Route(f"{V1}/index.json", site.reading(read["well-known/skills-index"]), methods=get),
        Route(f"{V2}/{{name}}.zip", site.reading(read["well-known/archive"]), methods=get),
        Route(f"{V2}/{{name}}/{{path:path}}", site.reading(read["well-known/file"]), methods=get),
        Route(f"{V1}/{{name}}/{{path:path}}", site.reading(read["well-known/file"]), methods=get),
        Route(f"/{pages.STYLESHEET}", css, methods=get),
        Route(f"/{pages.ICON}", favicon, methods=get),
        Route("/favicon.ico", favicon, methods=get),  # browsers ask there before reading a page
    ]
    if catch_all:
        routes.append(Route("/{path:path}", site.endpoint(not_found), methods=get))
    return routes


@dataclass(frozen=True)
class _Site:
    """Who may see the pages, and how a page that reads skills is read."""

    library: SkillReader
    access: WebAccess
    reads: Reads
    guard: TransportSecurityMiddleware | None  # the Host/Origin checks of `access.security`

    async def admitted(self, request: Request, base: str) -> Response | None:
        """The Host/Origin check, the token, the view: a page refusing this request, or None."""
        if self.guard is not None and (refused := await self.guard.validate_request(request)) is not None:
            return refused
        if not self.access.authorize(request):
            response: Response = _html(pages.unauthorized_page(base), 401)
            response.headers["WWW-Authenticate"] = 'Bearer realm="skillshelf"'
            return response
        if (refusal := self.access.refuse(request)) is not None:
            return _html(pages.forbidden_page(base, refusal), 403)
        return None

    def endpoint(self, page: Page) -> Callable[[Request], Awaitable[Response]]:
        """A page that reads no skill (the 404 page)."""

        async def handle(request: Request) -> Response:
            base = request.scope.get("root_path", "").rstrip("/")
            response = await self.admitted(request, base)
            if response is None:
                response = await anyio.to_thread.run_sync(page, request, base)
            response.headers.update(SECURITY_HEADERS)
            return response

        return handle

    def reading(self, surface: Surface[Any]) -> Callable[[Request], Awaitable[Response]]:
        """A page that reads skills: through `reads`, then rendered."""

        async def handle(request: Request) -> Response:
            base = request.scope.get("root_path", "").rstrip("/")
            response = await self.admitted(request, base)
            if response is None:
                response = await self.read_page(surface, request, base)
            response.headers.update(SECURITY_HEADERS)
            return response

        return handle

    async def read_page(self, surface: Surface[Any], request: Request, base: str) -> Response:
        asked = await anyio.to_thread.run_sync(surface.arguments, request)  # may look a skill up in the index
        read: dict[str, Any] = dict(asked)  # what was read, after the pre_call hook: an error page names it

        async def run(final: dict[str, Any]) -> Any:
            read.update(final)
            return await anyio.to_thread.run_sync(surface.load, final)

        try:
            found = await self.reads(surface.name, asked, run, caller=caller_of(request))
            shown = found if isinstance(found, surface.shape) else adapter(surface.shape).validate_python(found)
        except ReadRefused as exc:
            status = 500 if exc.code == ErrorCode.HOOK_FAILED else 403
            return _html(pages.refused_page(base, exc.message, status), status)
        except ValidationError:
            logger.error("the view's post_call hook replaced %s with a result of another shape", surface.name)
            message = "The view's post_call hook returned something this page cannot show."
            return _html(pages.refused_page(base, message, 500), 500)
        except SkillshelfError as exc:
            skill_id = str(read.get("skillId") or "")
            return await anyio.to_thread.run_sync(_error, self.library, base, exc, skill_id)
        response: Response = await anyio.to_thread.run_sync(surface.render, base, shown)
        return response


@dataclass(frozen=True)
class _Pages:
    """Each reading page's read (`load_*`: what the hooks see) and its HTML (`render_*`)."""

    library: SkillReader

    def load_search(self, arguments: dict[str, Any]) -> SearchView:
        query = str(arguments.get("query") or "").strip()
        category = arguments.get("category")
        counts = sorted((c.name, c.skills) for c in self.library.categories())
        if category is not None and category not in dict(counts):
            known = ", ".join(name for name, _ in counts) or "none"
            error = f"No category {category!r}. Categories: {known}."
            return SearchView(query=query, category=None, hits=[], chips=counts, error=error)
        found = service.search_patterns(self.library, query, category=category, limit=MAX_LIMIT)
        if not query:  # every skill, by quality: the chips count the library
            return SearchView(query=query, category=category, hits=found.hits, chips=counts)
        chips, everywhere = _chips_among_hits(self.library, query, category, found.hits)
        return SearchView(query=query, category=category, hits=found.hits, chips=chips, everywhere=everywhere)

    def render_search(self, base: str, view: SearchView) -> Response:
        page = pages.search_page(
            base, view.query, view.hits, view.chips, view.category, view.error, everywhere=view.everywhere
        )
        return _html(page, 404 if view.error else 200)

    def load_skill(self, arguments: dict[str, Any]) -> pages.SkillPage:
        loaded = service.load_skill(self.library, str(arguments.get("skillId") or ""))
        indexed = self.library.get(loaded.id)
        if indexed is None:  # removed between the two reads
            raise SkillshelfError(ErrorCode.PATTERN_NOT_FOUND, f"No skill {loaded.id!r}.")
        files = sorted(self.library.files(indexed))
        return pages.SkillPage(loaded, indexed.tokens, files, tuple(self.library.versions(indexed)))

    def render_skill(self, base: str, page: pages.SkillPage) -> Response:
        return _html(pages.skill_page(base, page))

    def load_file(self, arguments: dict[str, Any]) -> SkillFile:
        skill_id, path = str(arguments.get("skillId") or ""), str(arguments.get("path") or "")
        return service.read_skill_file(self.library, skill_id, path)

    def render_file(self, base: str, found: SkillFile) -> Response:
        return _html(pages.file_page(base, found.skill_id, found.path, found.content, found.truncated))

    def load_library(self, _arguments: dict[str, Any]) -> LibraryView:
        return library_view(self.library)

    def render_library(self, base: str, view: LibraryView) -> Response:
        return _html(pages.library_page(base, view))


def _search_arguments(request: Request) -> dict[str, Any]:
    category = request.query_params.get("category") or None
    query = request.query_params.get("q", "")
    return {"query": query} if category is None else {"query": query, "category": category}


def _skill_arguments(request: Request) -> dict[str, Any]:
    return {"skillId": f"{request.path_params['category']}/{request.path_params['name']}"}


def _file_arguments(request: Request) -> dict[str, Any]:
    return {**_skill_arguments(request), "path": request.path_params["path"]}


def _chips_among_hits(
    library: SkillReader, query: str, category: str | None, shown: list[SkillHit]
) -> tuple[list[tuple[str, int]], int]:
    """A search's category chips: (category, hits) among the search's hits in every category, most
    first, and that total. A category without hits has no chip; the chosen one counts the hits its page
    shows."""
    everywhere = shown if category is None else service.search_patterns(library, query, limit=MAX_LIMIT).hits
    among = Counter(hit.category for hit in everywhere)
    if category is not None:
        among[category] = len(shown)
    return sorted(among.items(), key=lambda chip: (-chip[1], chip[0])), len(everywhere)


def _html(page: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(page, status_code=status)


def _error(library: CatalogReader, base: str, exc: SkillshelfError, skill_id: str) -> Response:
    if exc.code in (ErrorCode.FILESYSTEM_ERROR, ErrorCode.CONTENT_TOO_LARGE):
        message = "This file cannot be shown as text (it is binary, too large, unreadable or gone)."
        return _html(pages.not_found_page(base, message, []), 415)
    missing_file = exc.code in (ErrorCode.PATTERN_NOT_FOUND, ErrorCode.ACCESS_DENIED, ErrorCode.VALIDATION_ERROR)
    if missing_file and library.get(skill_id) is not None:
        return _html(pages.not_found_page(base, "This skill has no such file.", []), 404)
    return _html(pages.not_found_page(base, f"No skill {skill_id!r} in this library.", library.suggest(skill_id)), 404)


def web_access(
    host: str, extra_hosts: tuple[str, ...], extra_origins: tuple[str, ...], tokens_required: bool | BearerTokens
) -> WebAccess:
    """Who may see the web view served beside `/mcp`: the same Host/Origin checks, the same tokens
    (given the `BearerTokens` in force, as a reload leaves them), and only tokens that may use the default
    view (the one it shows)."""
    return WebAccess(
        security=transport_security(host, extra_hosts, extra_origins),
        authorize=web_authorize(tokens_required),
        refuse=web_refusal(),
    )


def web_app(reader: ViewReader, access: WebAccess | None = None) -> Starlette:
    """The web view on its own (`skillshelf web`): what `reader` shows (the root's: every skill), /health,
    and the library's freshness (its lifespan starts and stops the library's watcher)."""
    library = reader.library

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        library.start()
        try:
            yield
        finally:
            library.stop_watching()

    async def health(_request: Request) -> JSONResponse:
        skills = await anyio.to_thread.run_sync(reader.count)
        return JSONResponse({"status": "healthy", "version": __version__, "skills": skills})

    routes = [Route("/health", health, methods=["GET"]), *web_routes(reader, access)]
    return Starlette(routes=routes, lifespan=lifespan)


def serve_web(make_app: Callable[[WebAccess], Starlette], port: int) -> None:
    """Serve the web view `make_app` builds (server/app.py `App.web_app`) on 127.0.0.1 only, with loopback
    Host checks; blocks until interrupted."""
    import uvicorn

    from skillshelf.server.http import KEEP_ALIVE_S

    host = "127.0.0.1"
    app = make_app(WebAccess(security=transport_security(host)))
    logging.getLogger("skillshelf.start").info("web view on http://%s:%d/ (Ctrl-C to stop)", host, port)
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_keep_alive=KEEP_ALIVE_S)
