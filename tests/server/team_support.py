"""Helpers for the team HTTP tests: a real uvicorn on 127.0.0.1 in the test's own event loop."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp

from skillshelf.config.views import ViewSettings
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.server.calllog import CallLog
from skillshelf.server.web import WebAccess
from skillshelf.settings import Settings


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
) -> MCPServer[Any]:
    """A server over an already synced library (so searches never meet a first index build); with `view`,
    its `default` view is that one (every tool unless it filters them), hooks and composites included."""
    settings = Settings(
        roots=library.roots, watch=False, project_roots=[projects], views={"default": view or ViewSettings()}
    )
    return build_server(settings, library=library, web=web, view="default", call_log=call_log)


@asynccontextmanager
async def serving(app: ASGIApp, running: list[uvicorn.Server] | None = None) -> AsyncIterator[str]:
    """Serve `app` with uvicorn on a free loopback port; the base URL while it runs (and the server
    appended to `running`, for a test that stops it itself)."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    if running is not None:
        running.append(server)
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        with anyio.fail_after(30):
            while not server.started:
                await anyio.sleep(0.02)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
