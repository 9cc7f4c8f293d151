"""The composition root: `App`, the one place the application is put together.

settings -> stores -> the skill library and the session archive -> a reader per view -> the call log ->
an MCP server per view, the HTTP app's servers, the web view. Every entry point (stdio and HTTP in
cli/serve.py, each HTTP worker in server/workers.py, `skillshelf web`, the CLI's library commands) builds
one `App` and asks it for what it needs; no other module constructs a library, an archive, a reader or
an MCP server (tests/test_architecture.py). A part is made when first asked for, so a library command
opens the library and nothing else, and imports no MCP: the servers' modules are imported only when a
server is asked for (tests/server/test_composition.py).

What the App made, `close` closes (entering it as a context manager closes it on exit); a library or
archive given to it belongs to the caller, who closes it. `build_server` and `build_view_servers` are the
factories for code and tests: an App around given parts, its servers.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, Self

from skillshelf.artifacts.archive import SessionArchive
from skillshelf.config.views import DEFAULT_VIEW, ViewSettings, all_views, resolve_view
from skillshelf.library.access.approved import ApprovalGate
from skillshelf.library.access.reader import LibraryReader, SkillReader, ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.calllog import CallLog, open_call_log
from skillshelf.settings import Settings
from skillshelf.state import Stores, open_stores

if TYPE_CHECKING:
    from mcp.server.mcpserver.tools.base import Tool
    from starlette.applications import Starlette
    from starlette.types import ASGIApp

    from skillshelf.server.assembly import Parts
    from skillshelf.server.auth import BearerTokens
    from skillshelf.server.sdk import ViewServer
    from skillshelf.server.web import WebAccess

_FROM_SETTINGS: Any = object()  # the call log the settings choose (None is a choice: no log)


class App:
    """One application's parts, each made once when first asked for, all closed by `close`.

    `library_config` makes the library from another config than the settings' (a throwaway index);
    `library`, `archive` and `call_log` are given parts, which the caller keeps and closes."""

    def __init__(
        self,
        settings: Settings,
        *,
        library: SkillLibrary | None = None,
        library_config: LibraryConfig | None = None,
        archive: SessionArchive | None = None,
        call_log: CallLog | None = _FROM_SETTINGS,
    ) -> None:
        self.settings = settings
        self._given_library, self._library_config = library, library_config
        self._given_archive, self._given_call_log = archive, call_log
        self._made: list[SkillLibrary | SessionArchive] = []
        self._readers: dict[str | None, SkillReader] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """Close what this App made (its SQLite connections, watchers); given parts stay open. Idempotent."""
        made, self._made = self._made, []
        for part in made:
            part.close()

    @cached_property
    def stores(self) -> Stores:
        """Where usage events, notes and the call log live: the backend `database_url` names."""
        return open_stores(self.settings.database_url)

    @cached_property
    def library(self) -> SkillLibrary:
        if self._given_library is not None:
            return self._given_library
        library = SkillLibrary(self._library_config or self.settings.library_config())
        self._made.append(library)
        return library

    @cached_property
    def archive(self) -> SessionArchive:
        if self._given_archive is not None:
            return self._given_archive
        settings = self.settings
        archive = SessionArchive(settings.projects(), index_dir=settings.cache_dir, watch=settings.watch)
        self._made.append(archive)
        return archive

    @cached_property
    def call_log(self) -> CallLog | None:
        """The call log every view's server writes (None: off), in the stores' backend."""
        if self._given_call_log is not _FROM_SETTINGS:
            return self._given_call_log
        return open_call_log(self.settings, self.stores)

    def view(self, name: str | None = None) -> ViewSettings:
        """A view by name (None: the one the settings serve); an unknown name is refused naming the views."""
        settings = self.settings
        return resolve_view(name or settings.view, settings.views, settings.execution.enabled)

    def views(self) -> dict[str, ViewSettings]:
        """Every view, built-in and configured."""
        return all_views(self.settings.views, self.settings.execution.enabled)

    @cached_property
    def curator(self) -> LibraryReader:
        """The library as the curator reads it: every skill, under the same file rules as a server."""
        return LibraryReader(self.library)

    def reader(self, view: str | None = None) -> SkillReader:
        """What the settings serve, as the view `view` shows it (None: every skill), made once per view: the
        CLI's `export`, `eval` and `install` read through it, so they never take a skill a server refuses."""
        if view not in self._readers:
            self._readers[view] = self.served_reader(self.view(view) if view is not None else None)
        return self._readers[view]

    def served_reader(self, view: ViewSettings | None = None) -> ViewReader:
        """A new reader of what the settings serve: the view's skills (None: every skill), less what
        require_verified and require_signed hold back. Every surface that serves or hands out skills (a
        server, the web view, `export`, `eval`, `install`) reads through one made here; only the curator's
        reader (`curator`) sees every skill. A server's config reload changes its rules, so each has its own."""
        rules = view.skill_rules() if view is not None else ()
        return ViewReader(self.library, rules, self._approval_gate())

    def _approval_gate(self) -> ApprovalGate | None:
        """What require_verified and require_signed hold back (library/access/approved.py); None: neither is set."""
        settings = self.settings
        if not settings.serves_only_approved():
            return None
        return ApprovalGate(self.library, verified=settings.require_verified, signed=settings.require_signed)

    def tools(self) -> list[Tool]:
        """Every tool the server has, over the curator's reader, before a view picks some."""
        from skillshelf.server.assembly import every_tool

        return every_tool(self.settings, self.curator, self.archive, self.stores.notes())

    def server(
        self,
        view: str | None = None,
        web: WebAccess | None = None,
        reload: Callable[[], Settings] | None = None,
        *,
        closes_app: bool = False,
    ) -> ViewServer:
        """The MCP server of `view` (None: the settings' view; docs/views.md). `web`: who sees the web view
        beside /mcp; `reload`: the settings read afresh, so config edits change the view while it runs.
        `closes_app`: the server's lifespan closes this App when it ends (a server built alone)."""
        from skillshelf.server.assembly import Serving, assemble

        name = view or self.settings.view
        chosen = self.view(name)
        on_exit = self.close if closes_app else _nothing
        return assemble(self._parts, Serving(name, chosen, self.served_reader(chosen), web, reload, on_exit))

    def view_servers(
        self, web: WebAccess | None = None, reload: Callable[[], Settings] | None = None
    ) -> dict[str, ViewServer]:
        """One server per view (built-in and configured), for HTTP: each passes its view's call pipeline and
        all write the one call log. `default` (what `/mcp` serves) is the view the settings serve, so a
        plain `/mcp` gives what stdio would."""
        servers = {name: self.server(name, web, reload) for name in self.views()}
        servers[DEFAULT_VIEW] = servers[self.settings.view or DEFAULT_VIEW]
        return servers

    def http_app(
        self,
        web: WebAccess | None = None,
        reload: Callable[[], Settings] | None = None,
        *,
        extra_hosts: tuple[str, ...] = (),
        extra_origins: tuple[str, ...] = (),
        stateless: bool = False,
        stream_responses: bool = False,
        tokens: BearerTokens | None = None,
    ) -> ASGIApp:
        """Every view's server behind one port (server/http.py `team_app`): `/mcp`, `/view/NAME/mcp`, the web
        view, /health. `stateless`: one of several worker processes; `tokens`: the ones in force when a
        reload replaces them (default: the settings')."""
        from skillshelf.server.http import team_app

        settings = self.settings
        return team_app(
            self.view_servers(web, reload),
            host=settings.http_host,
            extra_hosts=extra_hosts,
            extra_origins=extra_origins,
            auth=settings.auth,
            views=self.views(),
            stateless=stateless,
            stream_responses=stream_responses,
            tokens=tokens,
            limits=settings.http,
        )

    def web_app(self, access: WebAccess | None = None) -> Starlette:
        """The web view on its own (`skillshelf web`): every skill the settings serve (what require_verified and
        require_signed hold back is not shown), /health, the library's freshness."""
        from skillshelf.server.web import web_app

        return web_app(self.served_reader(), access)

    @cached_property
    def _parts(self) -> Parts:
        from skillshelf.server.assembly import Parts, ReadAtStart

        settings = self.settings
        return Parts(settings, self.library, self.archive, self.stores, self.call_log, ReadAtStart(settings))


def _nothing() -> None:
    """A server's lifespan end when the App outlives the server (its entry point closes the App)."""


def build_server(
    settings: Settings,
    library: SkillLibrary | None = None,
    archive: SessionArchive | None = None,
    web: WebAccess | None = None,
    view: str | None = None,
    reload: Callable[[], Settings] | None = None,
    call_log: CallLog | None = None,
) -> ViewServer:
    """A server over a skill library and a session archive (new ones from `settings` when not given), for
    code and tests; an entry point asks its `App` (`App.server`).

    `view` names the view it serves (docs/views.md): which tools and skills a client sees; None serves
    `settings.view` (`default`, the agent view, unless configured otherwise). `full` serves every
    tool and skill. With `reload` (settings read afresh) and a config file, edits to the file change the
    view's tools and skills while the server runs; clients are told to re-list, and an invalid edit is
    logged while the last good config stays. Over HTTP it also serves the read-only web view at `/`
    (`web`: who sees it). Every request passes the view's call pipeline (server/pipeline.py), and
    `call_log` (None: no log).

    The lifespan starts the background sync and watchers and stops them. What the factory created, the
    lifespan closes (its SQLite connections), so such a server runs once; a caller that passes its own
    library or archive closes it, and may enter the server again.
    """
    app = App(settings, library=library, archive=archive, call_log=call_log)
    try:
        server = app.server(view, web, reload, closes_app=True)
    except BaseException:
        app.close()  # a view that does not build (a bad override) leaks no SQLite connection
        raise
    weakref.finalize(server, app.close)  # a server built but never run closes them when collected
    return server


def build_view_servers(
    settings: Settings,
    library: SkillLibrary,
    archive: SessionArchive,
    web: WebAccess | None = None,
    reload: Callable[[], Settings] | None = None,
) -> dict[str, ViewServer]:
    """One server per view over a library and archive the caller owns (`App.view_servers`)."""
    return App(settings, library=library, archive=archive).view_servers(web, reload)
