"""Several worker processes behind one port (`serve --http --workers N`): the supervisor and each
worker's app. Every worker builds its own servers over the same library and answers statelessly."""

from __future__ import annotations

import socket
from contextlib import suppress
from dataclasses import dataclass
from functools import partial

from starlette.types import ASGIApp

from skillshelf.library import children
from skillshelf.server.http import finish_calls_on_shutdown, uvicorn_limits
from skillshelf.server.web import web_access


@dataclass(frozen=True)
class WorkerSetup:
    """What a worker process needs from the supervisor. It travels pickled through the spawn pipe
    (uvicorn passes the worker's config that way), never in an environment variable or a file:
    another process of the user can read neither the pipe nor, once it is non-dumpable, the worker."""

    settings_json: str
    extra_hosts: tuple[str, ...] = ()
    extra_origins: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()  # the server's, without its secrets
    supervisor_pid: int = 0


def run_http_workers(
    settings_json: str,
    host: str,
    port: int,
    workers: int,
    extra_hosts: tuple[str, ...] = (),
    extra_origins: tuple[str, ...] = (),
) -> None:
    """Several uvicorn worker processes on one port, each with its own server over the same library.

    Sessions cannot follow a client from one process to the next, so workers answer statelessly.
    The shared listening socket gets TCP_NODELAY, which accepted connections inherit: uvicorn's own
    socket for workers lacks it, and Nagle's algorithm then holds every response's body behind its
    headers for a delayed ACK on every request (docs/performance.md).

    What the processes get (library/children.py): this supervisor is non-dumpable (its environment
    may hold tokens), and spawns its workers (and multiprocessing's resource tracker) with the helper
    environment only; each worker receives the settings and the server's environment in its
    `WorkerSetup`, turns non-dumpable and only then restores that environment; it stops (SIGTERM)
    when the supervisor dies, however it dies.
    """
    import os

    from uvicorn import Config
    from uvicorn.supervisors import Multiprocess

    from skillshelf.settings import Settings

    children.make_nondumpable()
    environment = tuple(children.server_environment().items())
    setup = WorkerSetup(settings_json, extra_hosts, extra_origins, environment, os.getpid())
    config = Config(
        partial(worker_app, setup),
        factory=True,
        host=host,
        port=port,
        workers=workers,
        log_level="warning",
        **uvicorn_limits(Settings.model_validate_json(settings_json).http),  # header timeout, connection cap
    )
    sock = config.bind_socket()
    sock.set_inheritable(False)  # the workers get it through the spawn, which passes it explicitly
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    with suppress(KeyboardInterrupt), children.helper_environment_only():
        Multiprocess(config, sockets=[sock]).run()


def worker_app(setup: WorkerSetup) -> ASGIApp:
    """The app of one worker process (uvicorn's factory, called in the worker)."""
    import os

    from mcp.server.mcpserver.utilities.logging import configure_logging

    from skillshelf.server.app import App
    from skillshelf.settings import Settings

    children.make_nondumpable()  # before the server's environment is back in this process
    children.seal_inherited_fds()  # the listener and the supervisor's pipes reach no child of ours
    children.die_with_parent(setup.supervisor_pid)  # a supervisor killed outright takes its workers along
    os.environ.clear()
    os.environ.update(dict(setup.environment))
    settings = Settings.model_validate_json(setup.settings_json)
    finish_calls_on_shutdown()
    extra, origins = setup.extra_hosts, setup.extra_origins
    access = web_access(settings.http_host, extra, origins, tokens_required=bool(settings.auth.tokens))
    # A worker's warnings on stderr, as the SDK's MCPServer set them up when it built the servers (a view's
    # server is the SDK's low-level one now: server/sdk.py).
    configure_logging("WARNING")
    # One App per worker process: its library and archive, shared by its view servers, live as long as
    # the process does (each server's lifespan starts and stops their watchers).
    return App(settings).http_app(access, extra_hosts=extra, extra_origins=origins, stateless=True)
