"""`skillshelf serve`: the MCP server over stdio or streamable HTTP (one process, or several workers)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from skillshelf.cli.common import (
    Progress,
    announce_roots,
    index_progress,
    library_option,
    logger,
    settings_loader,
    start_log,
)
from skillshelf.cli.install import keep_installed
from skillshelf.cli.output import plural
from skillshelf.cli.rules import RulesCommand, config_reloader, rule_options, with_flag_rules
from skillshelf.cli.setting_flags import setting_flags
from skillshelf.library.skill.paths import display_path

if TYPE_CHECKING:
    from skillshelf.server.app import App
    from skillshelf.settings import Settings


def _warn_of(settings: Settings, http: bool) -> None:
    """What a user should know about these settings before the server says it serves."""
    _warn_if_exec(settings)
    _warn_if_projects_unused(settings, http)
    _warn_if_default_widened(settings)
    if (reason := settings.semantic_off_reason()) is not None:
        logger.warning("semantic search is off: %s", reason)


def _warn_if_default_widened(settings: Settings) -> None:
    from skillshelf.catalogue import TOOL_NAMES
    from skillshelf.config.views import widened_default

    widened = widened_default(settings.views, list(TOOL_NAMES), settings.execution.enabled)
    if widened is not None:
        logger.warning(
            "[views.default] replaces the built-in agent view: agents get %d tools instead of %d. Add "
            'extends = "agent" to it to keep the agent\'s tools (and add hooks or composites), or list its tools',
            *widened,
        )


def _warn_if_exec(settings: Settings) -> None:
    if settings.execution.enabled:
        scope = ", ".join(settings.execution.allow) or "any skill"
        logger.warning("skill execution is ON (%s); see docs/security.md", scope)


def _check_stream_responses(stream_responses: bool, http: bool, workers: int) -> None:
    if stream_responses and (not http or workers > 1):
        problem = "serves HTTP only; add --http" if not http else "needs --workers 1 (workers answer statelessly)"
        raise click.UsageError(f"--stream-responses {problem}.")


@click.command(cls=RulesCommand)
@library_option
@click.option("--http", is_flag=True, help="Serve streamable HTTP (/mcp, /health) instead of stdio.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="HTTP port.")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="Extra Host header value to accept over HTTP (repeatable), e.g. skills.example.com:8765.",
)
@click.option(
    "--allowed-origin",
    "allowed_origins",
    multiple=True,
    help="Extra Origin to accept over HTTP (repeatable), e.g. https://app.example.com.",
)
@setting_flags()  # every flag that sets a setting: --host, --projects-root, --allow-exec, --view, ...
@rule_options
@click.option("--insecure-no-auth", is_flag=True, help="Serve a non-loopback address without tokens (logged).")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="HTTP worker processes.")
@click.option(
    "--stream-responses",
    is_flag=True,
    help="Over HTTP, answer each call as an SSE stream (progress while the first index builds) instead of one "
    "JSON body; about a third less throughput. One worker only.",
)
def serve(
    libraries: tuple[Path, ...],
    http: bool,
    port: int,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    insecure_no_auth: bool,
    workers: int,
    stream_responses: bool,
) -> None:
    """Run the MCP server (stdio by default). Logs go to stderr; stdout is the protocol."""
    from skillshelf.server.app import App

    load = settings_loader(libraries)
    rules = click.get_current_context().meta.get("tool_rules", [])
    settings = with_flag_rules(load(), rules)
    reload = config_reloader(load, rules) if settings.watch else None
    _check_before_start(settings, stream_responses, http, workers)
    host = settings.http_host
    if http:
        from skillshelf.cli.http import prepare_http

        if prepare_http(settings, port, allowed_hosts, allowed_origins, insecure_no_auth, workers):
            start_log.info("stopped")  # what stdio says at Ctrl-C too
            return  # the worker processes served until interrupted
    _warn_of(settings, http)
    announce_roots(settings.roots, settings.using_bundled)
    listener = _bind(host, port) if http else None  # before anything says "serving"
    with App(settings) as app:
        _serve(app, listener, allowed_hosts, allowed_origins, stream_responses, reload)


def _serve(
    app: App,
    listener: Any,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    stream_responses: bool,
    reload: Callable[[], Settings] | None,
) -> None:
    """Serve the App's servers: every view over HTTP on `listener`, else the settings' view over stdio."""
    settings, library, host = app.settings, app.library, app.settings.http_host
    keep_installed(app)  # when asked to (--keep-installed): a listener of the watcher
    logger.info("library roots: %s; index: %s", [display_path(r) for r in library.roots], library.index_path)
    from skillshelf.server.auth import BearerTokens
    from skillshelf.server.hosts import reachable_name
    from skillshelf.server.http import HttpReload

    # the tokens in force (a reload replaces them), judged by where the server is reachable, proxy included
    http_reload = HttpReload(reachable_name(host, allowed_hosts), BearerTokens(settings.auth.tokens))
    progress = index_progress()
    library.add_progress_listener(progress)
    roots = ", ".join(display_path(r) for r in library.roots)
    if listener is not None:
        from skillshelf.server.http import run_http
        from skillshelf.server.web import web_access

        access = web_access(host, allowed_hosts, allowed_origins, tokens_required=http_reload.tokens)
        served = app.http_app(
            access,
            reload and http_reload.guard(reload),
            extra_hosts=allowed_hosts,
            extra_origins=allowed_origins,
            stream_responses=stream_responses,
            tokens=http_reload.tokens,
        )
        bound = _announce_http(settings, host, listener, roots)
        stopped = partial(start_log.info, "stopped")  # what stdio says at Ctrl-C too
        run_http(served, host, bound, sock=listener, limits=settings.http, stopped=stopped)
    else:
        server = app.server(settings.view, None, reload)  # (no web view over stdio)
        announce = None
        if sys.stderr.isatty():
            library.start()  # the lifespan's start() is then a no-op; the line waits for the index
            announce = partial(_announce_when_indexed, library, roots, progress, view_label(settings))
        _run_stdio(server, announce)


def _announce_http(settings: Settings, host: str, listener: Any, roots: str) -> int:
    """Say where the server listens (the port a --port 0 got); the port."""
    bound: int = listener.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    start_log.info(
        "serving %s on http://%s:%d/mcp (view %s; every view at /view/NAME/mcp, web view: /, "
        "health: /health); Ctrl-C to stop",
        roots,
        shown,
        bound,
        view_label(settings),
    )
    return bound


def _check_before_start(settings: Settings, stream_responses: bool, http: bool, workers: int) -> None:
    """What fails a start before anything is served or any worker starts."""
    from skillshelf.config.views import resolve_view

    resolve_view(settings.view, settings.views, settings.execution.enabled)  # an unknown view fails here
    _check_stream_responses(stream_responses, http, workers)
    _open_shared_state(settings)


def _open_shared_state(settings: Settings) -> None:
    """Connect to the stores `database_url` names now (PostgreSQL: and migrate), so an unreachable database is
    one clear error at start (naming its URL without the password) rather than a failure at each call."""
    from skillshelf.server.app import App

    if (said := App(settings).stores.start()) is not None:
        start_log.info("shared state: %s", said)


def _bind(host: str, port: int) -> Any:
    """A listening socket, so a busy port fails before anything says "serving" and --port 0 is known."""
    import socket

    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise click.ClickException(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}. Pick another --port (--port 0: any free port) "
            "or --host."
        ) from exc
    return sock  # not inheritable (Python's default): no child process, a skill least of all, gets it


def _announce_when_indexed(library: Any, roots: str, progress: Progress, view: str) -> None:
    """One line on a terminal's stderr once the index is ready: what is served, how many skills, how to stop."""
    import threading

    def announce() -> None:
        library.ensure_fresh()
        progress.done()
        count = library.index.count()
        sys.stderr.write(
            f"skillshelf: serving {plural(count, 'skill')} from {roots} over stdio ({view} view); "
            "an MCP client talks to it on stdin/stdout. Press Ctrl-C to stop.\n"
        )
        sys.stderr.flush()

    threading.Thread(target=announce, name="skillshelf-announce", daemon=True).start()


def _run_stdio(server: Any, announce: Callable[[], None] | None = None) -> None:
    """Serve stdio until the client closes it; Ctrl-C stops at once, even while stdin is being read.

    `announce` (the terminal's "serving" line) starts only once Ctrl-C is handled: a user who reads
    "Press Ctrl-C" and presses it at once must get the clean stop, not Python's KeyboardInterrupt."""
    import os
    import signal

    def stop_now(_signum: int, _frame: Any) -> None:
        sys.stderr.write("\nskillshelf: stopped\n")
        sys.stderr.flush()
        os._exit(130)  # a thread blocked reading stdin would otherwise hold the process until Enter

    import anyio

    from skillshelf.server.stdio import loop_options, serve_stdio

    previous = signal.signal(signal.SIGINT, stop_now)
    if announce is not None:
        announce()
    try:
        anyio.run(serve_stdio, server, backend_options=loop_options())
    finally:
        signal.signal(signal.SIGINT, previous)


def _warn_if_projects_unused(settings: Settings, http: bool) -> None:
    """A projects root given when no served view has a memory or session tool is a setting nothing reads:
    say so. Over HTTP every view is served (/view/NAME/mcp), so every view counts; stdio serves one."""
    from skillshelf.catalogue import project_tools
    from skillshelf.config.views import all_views, resolve_view
    from skillshelf.library.access.rules import decide_tool
    from skillshelf.projects import DEFAULT_PROJECTS_ROOT

    if settings.project_roots == [DEFAULT_PROJECTS_ROOT.expanduser()]:  # not set: nothing to warn about
        return
    enabled = settings.execution.enabled
    served = (
        all_views(settings.views, enabled).values() if http else [resolve_view(settings.view, settings.views, enabled)]
    )
    if not any(decide_tool(view.tool_rules(), tool).kept for view in served for tool in project_tools()):
        which = "no view served over HTTP has a" if http else f"the {view_label(settings)} view has no"
        logger.warning(
            "projects root is set, but %s memory or session tool to read it; serve --view memory or --view "
            "full to use project notes and past sessions",
            which,
        )


def view_label(settings: Settings) -> str:
    """How the start line names the served view: `default (agent)` when `default` is the built-in agent view."""
    if settings.view == "default" and "default" not in settings.views:
        return "default (agent)"
    return settings.view
