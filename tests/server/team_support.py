"""Helpers for the team HTTP tests: a real uvicorn on 127.0.0.1 in the test's own event loop."""

from __future__ import annotations

import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import uvicorn
from starlette.types import ASGIApp

from skillshelf.config.views import ViewSettings
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.server.calllog import CallLog
from skillshelf.server.sdk import ViewServer
from skillshelf.server.web import WebAccess
from skillshelf.settings import Settings
from tests.conftest import deadline, wait_until, wait_until_async


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def make_server(
    library: SkillLibrary,
    projects: Path,
    web: WebAccess | None = None,
    view: ViewSettings | None = None,
    call_log: CallLog | None = None,
) -> ViewServer:
    """A server over an already synced library (so searches never meet a first index build); with `view`,
    its `default` view is that one (every tool unless it filters them), hooks and composites included."""
    settings = Settings(
        roots=library.roots, watch=False, project_roots=[projects], views={"default": view or ViewSettings()}
    )
    return build_server(settings, library=library, web=web, view="default", call_log=call_log)


def listening_socket() -> socket.socket:
    """A socket listening on a free loopback port, for uvicorn: no other test can take the port meanwhile."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@asynccontextmanager
async def serving(app: ASGIApp, running: list[uvicorn.Server] | None = None) -> AsyncIterator[str]:
    """Serve `app` with uvicorn on a free loopback port; the base URL while it runs (and the server
    appended to `running`, for a test that stops it itself)."""
    sock = listening_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    if running is not None:
        running.append(server)
    stopped = anyio.Event()

    async def serve() -> None:
        try:
            await server.serve(sockets=[sock])
        finally:
            stopped.set()

    with sock:
        async with anyio.create_task_group() as group:
            group.start_soon(serve)
            await wait_until_async(lambda: server.started or stopped.is_set(), "uvicorn never started")
            assert server.started, "uvicorn stopped before it started (its log is above)"
            try:
                yield f"http://127.0.0.1:{sock.getsockname()[1]}"
            finally:
                server.should_exit = True


@contextmanager
def serving_in_thread(app: ASGIApp) -> Iterator[str]:
    """Serve `app` with uvicorn in a thread of its own (for a synchronous client such as a browser)."""
    sock = listening_socket()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    with sock:
        wait_until(lambda: server.started or not thread.is_alive(), "uvicorn never started")
        assert server.started, "uvicorn stopped before it started (its log is above)"
        try:
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True
            thread.join(deadline(30))
