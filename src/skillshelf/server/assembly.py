"""One view's MCP server, assembled from the parts the composition root made (server/app.py `App`, the only
caller). Nothing registers at import."""

from __future__ import annotations

import gc
import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.subscriptions import ListenHandler
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from skillshelf import __version__
from skillshelf.artifacts.archive import SessionArchive
from skillshelf.config.views import ViewSettings, resolve_view
from skillshelf.errors import SkillshelfError
from skillshelf.library.access.reader import SkillReader, ViewReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.memory.notes import NotesStore
from skillshelf.server.calllog import CallLog
from skillshelf.server.composite import install_composites
from skillshelf.server.health import health_report, sees_details
from skillshelf.server.hooks import Hooks
from skillshelf.server.hosts import transport_security
from skillshelf.server.http import ReloadRefused
from skillshelf.server.pipeline import CallPipeline
from skillshelf.server.prompts import register_prompts
from skillshelf.server.sdk import ViewServer
from skillshelf.server.skills_ext import SkillsSurface
from skillshelf.server.tooling import argument_places
from skillshelf.server.tools.artifacts import artifacts_tools
from skillshelf.server.tools.execution import execution_tools
from skillshelf.server.tools.memory import memory_tools
from skillshelf.server.tools.metrics import metrics_tools
from skillshelf.server.tools.skills import skills_tools
from skillshelf.server.views import ConfigWatcher, LiveView, ToolSelection, instructions_for
from skillshelf.settings import Settings
from skillshelf.state import Stores

if TYPE_CHECKING:
    from skillshelf.server.web import WebAccess

logger = logging.getLogger(__name__)


def every_tool(
    settings: Settings,
    library: SkillReader,
    sessions: SessionArchive,
    notes: NotesStore,
    view: ViewSettings | None = None,
) -> list[Tool]:
    """Every tool the server has, before a view picks and presents some of them (`view`: the one it serves,
    whose execution cap bounds what a skill's run may be granted): the ones skillshelf/catalogue.py declares
    (tests/test_second_contact.py checks the two agree)."""
    projects = settings.projects()
    return [
        *skills_tools(library, projects),
        *execution_tools(library, settings.execution, view.execution if view else None),
        *artifacts_tools(sessions),
        *memory_tools(projects, notes),
        *metrics_tools(library, sessions),
    ]


@dataclass(frozen=True)
class Parts:
    """What every view's server of one application shares, made by the composition root (server/app.py)."""

    settings: Settings
    library: SkillLibrary
    archive: SessionArchive
    stores: Stores
    call_log: CallLog | None
    read_at_start: ReadAtStart


# What a running server reads once: the stores (where notes, usage events and the call log go) and the
# approval gate every view's reader holds. A reload cannot swap them under live sessions; it says so.
READ_AT_START = ("database_url", "require_verified", "require_signed")


class ReadAtStart:
    """Says once per edit, for every view that reloads it, that a setting read at start changed and takes
    a restart: the stores and the approval gate stay as they started (docs/views.md, Reload)."""

    def __init__(self, started: Settings) -> None:
        self.started = started
        self._lock = threading.Lock()
        self._said: tuple[tuple[str, object], ...] = ()

    def check(self, fresh: Settings) -> None:
        started = self.started
        changed = tuple((n, getattr(fresh, n)) for n in READ_AT_START if getattr(fresh, n) != getattr(started, n))
        with self._lock:
            if changed == self._said:
                return
            self._said = changed
        if changed:
            names = ", ".join(name for name, _ in changed)
            logger.warning(
                "config change to %s not applied: read at start only, so notes, usage events and the call log "
                "stay where they were and the approval gate as it was; restart the server to apply it",
                names,
            )


@dataclass(frozen=True)
class Serving:
    """One view's server as the root asks for it: the view, its reader (made by the root), who sees the web
    view, how to read the settings afresh (None: no reload), and what to run when its lifespan ends."""

    name: str
    view: ViewSettings
    reader: ViewReader
    web: WebAccess | None = None
    reload: Callable[[], Settings] | None = None
    on_exit: Callable[[], None] = lambda: None


NAME = "skillshelf"


def assemble(parts: Parts, serving: Serving) -> ViewServer:
    """The MCP server of one view over the application's parts (server/app.py `App.server`)."""
    settings, shelf, sessions = parts.settings, parts.library, parts.archive
    chosen, view_name, reload, call_log = serving.view, serving.name, serving.reload, parts.call_log
    # One reader and one pipeline: every tool, resource, listing and page reads skills through this view's
    # reader, and every request passes this view's pipeline.
    reader = serving.reader
    skills = SkillsSurface(reader)
    shelf.add_change_listener(skills.library_changed)
    pipeline = CallPipeline(view_name, Hooks.load(chosen.hooks), call_log, argument_places())
    notes = parts.stores.notes()
    tools = every_tool(settings, reader, sessions, notes, chosen)
    selection = ToolSelection.of(view_name, chosen, tools, pipeline.call)
    live = LiveView(selection, skills.bus)
    view = _View(view_name, chosen, reader, skills, pipeline, live, notes, parts.read_at_start)
    watcher = None
    if reload is not None and settings.config_path is not None:
        watcher = ConfigWatcher(settings.config_path, lambda: view.reload(reload, sessions))
    server = ViewServer(
        NAME,
        version=__version__,
        instructions=instructions_for(selection),
        lifespan=_lifespan(shelf, sessions, serving.on_exit, watcher),
        on_subscriptions_listen=ListenHandler(skills.bus),
    )
    # What MCPServer puts first among a server's middleware (after the SDK's tracing): `requestState` sealed
    # and checked at the wire, under a key of this process, the server's name as its audience.
    server.middleware += [
        RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=NAME),
        live.middleware,
    ]
    view.server = server
    live.serve(server)
    pipeline.attach(server, live)
    pipeline.passthrough.update(install_composites(live, chosen.composites, pipeline.call))
    pipeline.passthrough.update(t.name for t in selection.listed() if t.name not in selection.shown)
    skills.install(server)
    register_prompts(server, {own: selection.renamed.get(own, own) for own in selection.own_names()})
    server.routes = lambda: _routes(parts, reader, serving.web, pipeline)  # when served over HTTP
    return server


@dataclass
class _View:
    """What one view's server is made of, for a config reload to replace."""

    name: str
    settings: ViewSettings
    reader: ViewReader
    skills: SkillsSurface
    pipeline: CallPipeline
    live: LiveView
    notes: NotesStore
    read_at_start: ReadAtStart
    server: Server[Any] | None = None

    def reload(self, read: Callable[[], Settings], sessions: SessionArchive) -> None:
        """Serve the view as the config read afresh defines it (called on the config watcher's thread); an
        invalid config is logged and the last good one stays."""
        try:
            fresh = read()
            new_view = resolve_view(self.name, fresh.views, fresh.execution.enabled)
            tools = every_tool(fresh, self.reader, sessions, self.notes, new_view)
            selection = ToolSelection.of(self.name, new_view, tools, self.pipeline.call)
            hooks = Hooks.load(new_view.hooks)
        except ReloadRefused:
            return  # the HTTP rules refused it and said why, once (server/http.py HttpReload)
        except SkillshelfError as exc:
            logger.warning("config change ignored, still serving the last good config: %s", exc.message)
            return
        self.read_at_start.check(fresh)
        if new_view.composites != self.settings.composites:
            logger.warning("composite tools changed in the config: they apply when the server restarts")
        skills_changed = self.reader.set_rules(new_view.skill_rules())
        assert self.server is not None
        self.live.install_from_thread(self.server, selection, lambda: self.pipeline.set_hooks(hooks))
        logger.info("config reloaded: view %r now serves %d tool(s)", self.name, len(selection.shown))
        self.live.announce_from_thread()
        if skills_changed:
            self.skills.library_changed()  # resources/list_changed: skills appeared or vanished


def _lifespan(
    shelf: SkillLibrary,
    sessions: SessionArchive,
    on_exit: Callable[[], None],
    watcher: ConfigWatcher | None,
) -> Callable[[Server[Any]], AbstractAsyncContextManager[SkillLibrary]]:
    """Start the library's and the archive's background sync (and the config watcher); stop them after, and
    run `on_exit` (a server the root built alone closes the root's parts: server/app.py `build_server`)."""

    @asynccontextmanager
    async def lifespan(_server: Server[Any]) -> AsyncIterator[SkillLibrary]:
        freeze_heap()
        shelf.start()
        threading.Thread(target=_freeze_when_indexed, args=(shelf,), name="skillshelf-freeze", daemon=True).start()
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
            on_exit()

    return lifespan


# Tracked objects allocated beyond those freed before the collector's youngest generation runs (CPython's
# default: 700). 50 requests in flight hold more than 700 between them, so at the default it ran about 50 times
# a second under load, each run promoting the requests' live objects towards the older generations, whose
# collections then stalled every request 5-100 ms (issue 36, docs/performance.md). Memory is freed by reference
# counting either way: only cyclic garbage waits for the collector, and at most this many objects of it.
YOUNG_GENERATION = 50_000


def freeze_heap() -> None:
    """Move every object alive now out of the garbage collector's sight (`gc.freeze`), and let the collector
    run only when the heap really grows (YOUNG_GENERATION), not at every burst of requests in flight.

    A full collection walks every tracked object while holding the GIL: with a library indexed it stalled
    the event loop for tens of milliseconds, whichever thread triggered it (docs/performance.md). What is alive
    once the server is up and its index is built (modules, the SDK, caches) lives as long as the process.
    """
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(YOUNG_GENERATION, young), older, oldest)


def _freeze_when_indexed(library: SkillLibrary) -> None:
    """Once the first index is built: its spelling vocabulary (else the first searches build it: at 10,000 skills
    every request of the first second waited 1-2 s for it, issue 36), then the heap frozen, the vocabulary with it."""
    with suppress(Exception):  # a failed first sync is reported where it is met; the heap stays as it is
        library.ensure_fresh()
        library.index.vocabulary()
        freeze_heap()


def _routes(parts: Parts, reader: ViewReader, web: WebAccess | None, pipeline: CallPipeline) -> tuple[Route, ...]:
    """/health and the web view beside /mcp, over the view's reader; the web view's pages read through the
    view's pipeline (its hooks and call log), as resources/read does."""
    from skillshelf.server.web import WebAccess, web_routes  # (Jinja2 and the pages: never over stdio)

    access = web or WebAccess(security=transport_security(parts.settings.http_host))
    stores, sessions, call_log = parts.stores, parts.archive, parts.call_log

    async def health(request: Request) -> JSONResponse:
        counts = await anyio.to_thread.run_sync(lambda: {"skills": reader.count(), "sessions": sessions.index.count()})
        parts: dict[str, dict[str, Any]] = {}  # what writes need: one not "ok" makes the status "degraded"
        if stores.shared and (shared := await anyio.to_thread.run_sync(stores.health)) is not None:
            parts["database"] = shared
        if call_log is not None:
            parts["callLog"] = call_log.health()
        detailed = sees_details(request, access.authorize)
        return JSONResponse(health_report(reader.status(), counts, parts, detailed=detailed))

    return (Route("/health", health, methods=["GET"]), *web_routes(reader, access, reads=pipeline.read))
