"""`build_server(settings)`: the one place an MCP server is assembled. Nothing registers at import."""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.tools.base import Tool
from starlette.requests import Request
from starlette.responses import JSONResponse

from skillshelf import __version__
from skillshelf.artifacts.archive import SessionArchive
from skillshelf.config.views import DEFAULT_VIEW, ViewSettings, all_views, resolve_view
from skillshelf.errors import SkillshelfError
from skillshelf.library.access.scoped import ScopedLibrary
from skillshelf.library.index.library import SkillLibrary
from skillshelf.patterns import service
from skillshelf.server.http import ReloadRefused, transport_security
from skillshelf.server.prompts import register_prompts
from skillshelf.server.skills_ext import SkillsSurface
from skillshelf.server.tools.artifacts import artifacts_tools
from skillshelf.server.tools.execution import execution_tools
from skillshelf.server.tools.memory import memory_tools
from skillshelf.server.tools.metrics import metrics_tools
from skillshelf.server.tools.patterns import patterns_tools
from skillshelf.server.views import ConfigWatcher, LiveView, ToolSelection, instructions_for
from skillshelf.server.web import WebAccess, web_routes
from skillshelf.settings import Settings

logger = logging.getLogger(__name__)

FULL_VIEW = "full"


def every_tool(settings: Settings, library: SkillLibrary, sessions: SessionArchive) -> list[Tool]:
    """Every tool the server has, before a view picks and presents some of them."""
    projects = settings.projects()
    return [
        *patterns_tools(library, projects),
        *execution_tools(library, settings.execution),
        *artifacts_tools(sessions),
        *memory_tools(projects),
        *metrics_tools(library, sessions),
    ]


def build_server(
    settings: Settings,
    library: SkillLibrary | None = None,
    archive: SessionArchive | None = None,
    web: WebAccess | None = None,
    view: str | None = None,
    reload: Callable[[], Settings] | None = None,
) -> MCPServer[Any]:
    """A server over a skill library and a session archive (new ones from `settings` when not given).

    `view` names the view it serves (docs/views.md): which tools and skills a client sees. None
    serves every tool and skill (`full`), as a library caller expects; `skillshelf serve` passes
    the configured view, `default` unless told otherwise. With `reload` (settings read afresh) and
    a config file, edits to the file change the view's tools and skills while the server runs;
    clients are told to re-list, and an invalid edit is logged while the last good config stays.

    Over HTTP it also serves the read-only web view at `/` (`web`: who sees what; by default every
    skill, to anyone passing the bind host's Host/Origin checks).

    The lifespan starts their background sync and watchers and stops them. What the factory
    created, the lifespan closes (its SQLite connections), so such a server runs once; a caller
    that passes its own library or archive closes it, and may enter the server again.
    """
    view_name = view or FULL_VIEW
    chosen = resolve_view(view_name, settings.views, settings.execution.enabled)
    shelf = library or SkillLibrary(settings.library_config())
    projects = settings.projects()
    sessions = archive or SessionArchive(projects, watch=settings.watch)
    owned = [o for o, given in ((shelf, library), (sessions, archive)) if given is None]
    try:
        server = _assemble(settings, shelf, sessions, owned, chosen, view_name, web, reload)
    except BaseException:
        _close_all(owned)  # a view that does not build (a bad override) leaks no SQLite connection
        raise
    if owned:  # a server built but never run (inspected, or dropped after an error) closes them when collected
        weakref.finalize(server, _close_all, owned)
    return server


def _close_all(resources: list[SkillLibrary | SessionArchive]) -> None:
    for resource in resources:
        resource.close()


def _assemble(
    settings: Settings,
    shelf: SkillLibrary,
    sessions: SessionArchive,
    owned: list[SkillLibrary | SessionArchive],
    chosen: ViewSettings,
    view_name: str,
    web: WebAccess | None,
    reload: Callable[[], Settings] | None,
) -> MCPServer[Any]:
    # One visibility rule at one boundary: every service, resource and listing reads this view of the library.
    scoped = ScopedLibrary(shelf, chosen.skill_rules())
    selection = ToolSelection.of(view_name, chosen, every_tool(settings, scoped, sessions))
    skills = SkillsSurface(scoped, scoped.is_visible)
    live = LiveView(selection, skills.bus)

    def reload_config() -> None:
        assert reload is not None
        try:
            fresh = reload()
            new_view = resolve_view(view_name, fresh.views, fresh.execution.enabled)
            new_selection = ToolSelection.of(view_name, new_view, every_tool(fresh, scoped, sessions))
        except ReloadRefused:
            return  # H3: the HTTP rules refused it and logged why, once (server/http.py HttpReload)
        except SkillshelfError as exc:
            logger.warning("config change ignored, still serving the last good config: %s", exc.message)
            return
        skills_changed = scoped.set_rules(new_view.skill_rules())
        live.install(server, new_selection)
        logger.warning("config reloaded: view %r now serves %d tool(s)", view_name, len(new_selection.shown))
        live.announce_from_thread()
        if skills_changed:
            skills.library_changed()  # resources/list_changed: skills appeared or vanished

    watcher = ConfigWatcher(settings.config_path, reload_config) if reload and settings.config_path else None

    @asynccontextmanager
    async def lifespan(_server: MCPServer[Any]) -> AsyncIterator[SkillLibrary]:
        shelf.start()
        sessions.start()
        if watcher is not None:
            watcher.start()
        try:
            yield shelf
        finally:
            if watcher is not None:
                watcher.stop()
            shelf.stop_watching()
            sessions.stop_watching()
            for resource in owned:
                resource.close()

    server: MCPServer[Any] = MCPServer(
        "skillshelf",
        version=__version__,
        instructions=instructions_for(selection),
        lifespan=lifespan,
        log_level="WARNING",
        extensions=[skills.extension],
        subscriptions=skills.bus,
        tools=selection.listed(),
        middleware=[live.middleware],
    )

    @server.resource(
        "skill://{category}/{name}",
        name="skill",
        title="Skill documentation",
        description="A skill's documentation as markdown; the id is category/name.",
        mime_type="text/markdown",
    )
    def skill_resource(category: str, name: str) -> str:
        try:
            return service.read_documentation(scoped, f"{category}/{name}")
        except SkillshelfError as exc:
            raise ResourceNotFoundError(exc.message) from exc

    skills.install(server)
    register_prompts(server, {own: selection.renamed.get(own, own) for own in selection.own_names()})

    @server.custom_route("/health", methods=["GET"])  # type: ignore[untyped-decorator]
    async def health(_request: Request) -> JSONResponse:
        counts = {"skills": scoped.index.count(), "sessions": sessions.index.count()}
        return JSONResponse({**shelf.status(), "version": __version__, **counts})

    for route in web_routes(scoped, web or WebAccess(security=transport_security(settings.http_host))):
        server.custom_route(route.path, methods=sorted(route.methods or ["GET"]), name=route.name)(route.endpoint)

    return server


def build_view_servers(
    settings: Settings,
    library: SkillLibrary,
    archive: SessionArchive,
    web: WebAccess | None = None,
    reload: Callable[[], Settings] | None = None,
) -> dict[str, MCPServer[Any]]:
    """One server per view (built-in and configured) over one library and archive, for HTTP.

    Each is equipped with its view's composites, hooks and the call log. `default` (what `/mcp`
    serves) is the view `serve --view` names, so a plain `/mcp` gives what stdio would.
    """
    from skillshelf.server.calllog import CallLog
    from skillshelf.server.hooks import equip_view

    call_log = CallLog.from_settings(settings.call_log)
    views = all_views(settings.views, settings.execution.enabled)
    servers: dict[str, MCPServer[Any]] = {}
    for name, view in views.items():
        server = build_server(settings, library, archive, web, view=name, reload=reload)
        equip_view(server, name, view, call_log)
        servers[name] = server
    servers[DEFAULT_VIEW] = servers[settings.view or DEFAULT_VIEW]
    return servers


def equip_served_view(server: MCPServer[Any], settings: Settings) -> None:
    """The served view's composites, hooks and call log, for the one server stdio runs."""
    from skillshelf.server.calllog import CallLog
    from skillshelf.server.hooks import equip_view

    name = settings.view or DEFAULT_VIEW
    view = resolve_view(name, settings.views, settings.execution.enabled)
    equip_view(server, name, view, CallLog.from_settings(settings.call_log))
