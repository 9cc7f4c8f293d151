"""What a stranger's connections may hold (server/connections.py), against a real `serve --http`: a
connection that does not send its request's headers in time is closed, and a flood of idle connections
leaves room for /health."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

import httpx2
import pytest

from tests.conftest import deadline, isolated_env
from tests.live_server import LiveServer, skillshelf_http


@contextmanager
def serving(
    sample_root: Path,
    home: Path,
    log: Path,
    launcher: list[str] | None = None,
    env: Mapping[str, str] | None = None,
    **http: str,
) -> Iterator[LiveServer]:
    env = {**(os.environ if env is None else env), "HOME": str(home), "SKILLSHELF_CACHE_DIR": str(home / "c")}
    env.update({f"SKILLSHELF_HTTP__{key.upper()}": value for key, value in http.items()})
    with skillshelf_http(["serve", "--http", "-l", str(sample_root)], log, env=env, launcher=launcher or []) as server:
        yield server


def connect(server: LiveServer) -> socket.socket:
    host, port = server.base.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=deadline(10))
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """True once the server closed it (EOF or a reset); a timeout (still open) fails the test."""
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True


@pytest.fixture(scope="module")
def impatient(shared_sample_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server with a 0.3 s header timeout, shared by the tests that only open connections to it."""
    home = tmp_path_factory.mktemp("home")
    with serving(
        shared_sample_root, home, home / "server.log", env=isolated_env(home), header_timeout_s="0.3"
    ) as server:
        yield server


@pytest.mark.parametrize("sent", [b"", b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n"], ids=["nothing", "half a head"])
def test_a_connection_that_does_not_send_its_request_head_in_time_is_closed(impatient: LiveServer, sent: bytes) -> None:
    """Before, a connection that never sent a byte (or never finished its headers) stayed open for good."""
    with connect(impatient) as idle:
        idle.sendall(sent)
        assert closed_by_server(idle)
    with connect(impatient) as prompt:  # a request in time is answered on a connection kept alive
        prompt.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert prompt.recv(1024).startswith(b"HTTP/1.1 200")


def test_health_answers_while_idle_connections_outnumber_the_descriptors(
    sample_root: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    """With 400 idle connections against a 400-descriptor limit, /health stopped answering (1,100 against
    systemd's 1,024 did for 85 s). The cap (20 here) closes the oldest connection without a request to make
    room for a new one, and keeps the process well inside its descriptors."""
    launcher = ["prlimit", "--nofile=400:400", "--"]
    log = tmp_path / "server.log"
    with (
        serving(
            sample_root, isolated_environment, log, launcher, max_connections="20", header_timeout_s="600"
        ) as server,
        ExitStack() as idle,
    ):
        for _ in range(450):
            idle.enter_context(connect(server))
        answer = httpx2.get(f"{server.base}/health", timeout=deadline(30))
        assert answer.status_code == 200 and answer.json()["status"] == "healthy"
    assert "leaves room for" not in log.read_text(encoding="utf-8")  # 20 fit in 400 descriptors: said nothing


def test_the_cap_closes_idle_connections_never_one_with_a_request_in_flight(
    sample_root: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n" % len(body)
    )
    log = tmp_path / "server.log"
    with (
        serving(sample_root, isolated_environment, log, max_connections="8", header_timeout_s="600") as server,
        connect(server) as busy,
        ExitStack() as idle,
    ):
        busy.sendall(head + body[:5])  # its headers are in: a request in flight, waiting for the rest
        first_idle = idle.enter_context(connect(server))
        for _ in range(30):
            idle.enter_context(connect(server))
        assert closed_by_server(first_idle)  # the oldest idle one made room
        busy.sendall(body[5:])
        assert busy.recv(1024).startswith(b"HTTP/1.1 ")  # answered: never closed for the newcomers
