"""The read-only web view over HTTP: search, skill pages and the library's charts.

`web_routes` gives the routes `build_server` adds to the MCP HTTP app (`serve --http`), and
`web_app` wraps them in an app of their own for `skillshelf web`. Both read skills through a
`SkillReader` (the served view's: hidden skills are absent everywhere, and their pages answer 404
like unknown ids) and take a `WebAccess`:

- `authorize(request)`: whether this request may see anything (default yes); no gives a 401 page.
- `refuse(request)`: why an authorized viewer may still not see these pages (a token without the
  view they show), or None; a reason gives a 403 page that says it.
- `security`: the MCP endpoint's Host/Origin checks (DNS-rebinding protection), applied here too.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.resources import files

import anyio.to_thread
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from skillshelf import __version__
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.access.reader import SkillReader, ViewReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.patterns import service
from skillshelf.patterns.models import SkillHit
from skillshelf.patterns.service import MAX_LIMIT
from skillshelf.server.auth import Tokens, web_authorize, web_refusal
from skillshelf.server.hosts import transport_security
from skillshelf.web import pages
from skillshelf.web.stats import library_view

logger = logging.getLogger(__name__)

Authorize = Callable[[Request], bool]
Refuse = Callable[[Request], str | None]
Page = Callable[[Request, str], Response]  # (request, base URL) -> response; runs in a worker thread

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


def web_routes(library: SkillReader, access: WebAccess | None = None, *, catch_all: bool = True) -> list[Route]:
    """The web view's routes over what `library` (a view's reader) shows; with `catch_all`, any other GET
    path gets the view's 404 page."""
    access = access or WebAccess()
    guard = TransportSecurityMiddleware(access.security) if access.security else None
    stylesheet = files("skillshelf.web").joinpath(pages.STYLESHEET).read_text(encoding="utf-8")
    icon = files("skillshelf.web").joinpath(pages.ICON).read_bytes()

    def endpoint(page: Page) -> Callable[[Request], Awaitable[Response]]:
        async def handle(request: Request) -> Response:
            if guard is not None and (refused := await guard.validate_request(request)) is not None:
                return refused
            base = request.scope.get("root_path", "").rstrip("/")
            if not access.authorize(request):
                response: Response = _html(pages.unauthorized_page(base), 401)
                response.headers["WWW-Authenticate"] = 'Bearer realm="skillshelf"'
            elif (refusal := access.refuse(request)) is not None:
                response = _html(pages.forbidden_page(base, refusal), 403)
            else:
                response = await anyio.to_thread.run_sync(page, request, base)
            response.headers.update(SECURITY_HEADERS)
            return response

        return handle

    def search(request: Request, base: str) -> Response:
        query = request.query_params.get("q", "").strip()
        category = request.query_params.get("category") or None
        counts = sorted((c.name, c.skills) for c in library.categories())
        if category is not None and category not in dict(counts):
            known = ", ".join(name for name, _ in counts) or "none"
            page = pages.search_page(base, query, [], counts, None, f"No category {category!r}. Categories: {known}.")
            return _html(page, 404)
        found = service.search_patterns(library, query, category=category, limit=MAX_LIMIT)
        if not query:  # every skill, by quality: the chips count the library
            return _html(pages.search_page(base, query, found.hits, counts, category))
        chips, everywhere = _chips_among_hits(library, query, category, found.hits)
        return _html(pages.search_page(base, query, found.hits, chips, category, everywhere=everywhere))

    def skill(request: Request, base: str) -> Response:
        skill_id = f"{request.path_params['category']}/{request.path_params['name']}"
        try:
            loaded = service.load_skill(library, skill_id)
        except SkillshelfError as exc:
            return _error(library, base, exc, skill_id)
        indexed = library.get(loaded.id)
        if indexed is None:  # removed between the two reads
            return _error(library, base, SkillshelfError(ErrorCode.PATTERN_NOT_FOUND, ""), skill_id)
        files = sorted(library.files(indexed))
        return _html(pages.skill_page(base, pages.SkillPage(skill=loaded, tokens=indexed.tokens, files=files)))

    def skill_file(request: Request, base: str) -> Response:
        skill_id = f"{request.path_params['category']}/{request.path_params['name']}"
        path = request.path_params["path"]
        try:
            found = service.read_skill_file(library, skill_id, path)
        except SkillshelfError as exc:
            return _error(library, base, exc, skill_id)
        return _html(pages.file_page(base, found.skill_id, found.path, found.content, found.truncated))

    def library_page(_request: Request, base: str) -> Response:
        return _html(pages.library_page(base, library_view(library)))

    def not_found(request: Request, base: str) -> Response:
        return _html(pages.not_found_page(base, f"There is no page at {request.url.path}.", []), 404)

    async def to_slash(request: Request) -> Response:
        return RedirectResponse(f"{request.url.path}/", status_code=308)

    async def css(_request: Request) -> Response:
        return Response(stylesheet, media_type="text/css", headers={"Cache-Control": "max-age=300"})

    async def favicon(_request: Request) -> Response:
        return Response(icon, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})

    routes = [
        Route("/", endpoint(search), methods=["GET", "HEAD"], name="web-search"),
        Route("/library", endpoint(library_page), methods=["GET", "HEAD"], name="web-library"),
        Route("/skills/{category}/{name}", to_slash, methods=["GET", "HEAD"]),
        Route("/skills/{category}/{name}/", endpoint(skill), methods=["GET", "HEAD"], name="web-skill"),
        Route("/skills/{category}/{name}/{path:path}", endpoint(skill_file), methods=["GET", "HEAD"]),
        Route(f"/{pages.STYLESHEET}", css, methods=["GET", "HEAD"]),
        Route(f"/{pages.ICON}", favicon, methods=["GET", "HEAD"]),
        Route("/favicon.ico", favicon, methods=["GET", "HEAD"]),  # browsers ask there before reading a page
    ]
    if catch_all:
        routes.append(Route("/{path:path}", endpoint(not_found), methods=["GET", "HEAD"]))
    return routes


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


def _error(library: SkillReader, base: str, exc: SkillshelfError, skill_id: str) -> Response:
    if exc.code in (ErrorCode.FILESYSTEM_ERROR, ErrorCode.CONTENT_TOO_LARGE):
        message = "This file cannot be shown as text (it is binary, too large, unreadable or gone)."
        return _html(pages.not_found_page(base, message, []), 415)
    missing_file = exc.code in (ErrorCode.PATTERN_NOT_FOUND, ErrorCode.ACCESS_DENIED, ErrorCode.VALIDATION_ERROR)
    if missing_file and library.get(skill_id) is not None:
        return _html(pages.not_found_page(base, "This skill has no such file.", []), 404)
    return _html(pages.not_found_page(base, f"No skill {skill_id!r} in this library.", library.suggest(skill_id)), 404)


def web_access(
    host: str, extra_hosts: tuple[str, ...], extra_origins: tuple[str, ...], tokens_required: bool | Tokens
) -> WebAccess:
    """Who may see the web view served beside `/mcp`: the same Host/Origin checks, the same tokens
    (given the `Tokens` in force, as a reload leaves them), and only tokens that may use the default
    view (the one it shows)."""
    return WebAccess(
        security=transport_security(host, extra_hosts, extra_origins),
        authorize=web_authorize(tokens_required),
        refuse=web_refusal(),
    )


def web_app(library: SkillLibrary, access: WebAccess | None = None) -> Starlette:
    """The web view on its own (`skillshelf web`): every skill, /health, and the library's freshness."""
    reader = ViewReader(library)

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


def serve_web(library: SkillLibrary, port: int) -> None:
    """Serve the web view on 127.0.0.1 only, with loopback Host checks; blocks until interrupted."""
    import uvicorn

    from skillshelf.server.http import KEEP_ALIVE_S

    host = "127.0.0.1"
    app = web_app(library, WebAccess(security=transport_security(host)))
    logging.getLogger("skillshelf.start").info("web view on http://%s:%d/ (Ctrl-C to stop)", host, port)
    uvicorn.run(app, host=host, port=port, log_level="warning", timeout_keep_alive=KEEP_ALIVE_S)
