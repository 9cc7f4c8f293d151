"""Real `skillshelf serve --http` (and `skillshelf web`) processes for the tests.

Started on port 0 where the command can say which port it bound, waited on by event: the line that
announces the URL, then /health past its first index. Deadlines scale (tests/conftest.py); a server
that exits first fails the test at once with its log, instead of the test waiting out its deadline.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx2
from click.testing import CliRunner, Result

from skillshelf.cli import cli
from tests.conftest import LIVENESS_S, deadline, wait_until


def refused_serve(*arguments: str, env: Mapping[str, str] | None = None) -> Result:
    """`skillshelf serve --http ARGUMENTS` run in this process, which must refuse to start; what it said. A
    refusal comes before anything listens or serves, so it needs no process of its own (1.2 s of CPU each).
    The port it is given is held here: a server that failed to refuse fails to listen, and never serves in
    this process until the run's timeout."""
    with socket.create_server(("0.0.0.0", 0)) as held:
        port = str(held.getsockname()[1])
        result = CliRunner().invoke(cli, ["serve", "--http", *arguments, "--port", port], env=env)
    assert result.exit_code not in (0, None), result.output
    return result


# "serving ... on http://HOST:PORT/mcp", "serving MCP on http://...", "web view on http://HOST:PORT/"
ANNOUNCED = re.compile(rb"(?:serving|web view) .*?on https?://(?:\[[^\]]+\]|[^/:\s]+):(\d+)/")


@dataclass
class StderrLines:
    """A process's stderr, copied line by line into its log file as it comes, and waitable on."""

    log: Path
    lines: list[bytes] = field(default_factory=list)
    ended: bool = False
    changed: threading.Condition = field(default_factory=threading.Condition)

    def copy(self, stream: IO[bytes]) -> None:
        with self.log.open("ab") as sink:
            for line in iter(stream.readline, b""):
                sink.write(line)
                sink.flush()
                with self.changed:
                    self.lines.append(line)
                    self.changed.notify_all()
        with self.changed:
            self.ended = True
            self.changed.notify_all()

    def wait_for(self, pattern: re.Pattern[bytes], seconds: float = LIVENESS_S) -> re.Match[bytes] | None:
        """The first line matching `pattern`, as soon as it is said; None when stderr ended (the process
        exited) or the deadline passed without it."""
        found: list[re.Match[bytes]] = []

        def said() -> bool:
            found[:] = [m for m in (pattern.search(line) for line in self.lines) if m][:1]
            return bool(found) or self.ended

        with self.changed:
            self.changed.wait_for(said, timeout=deadline(seconds))
        return found[0] if found else None


@dataclass
class LiveServer:
    process: subprocess.Popen[bytes]
    stderr: StderrLines
    base: str = ""

    def log_text(self) -> str:
        return self.stderr.log.read_text(encoding="utf-8", errors="replace") if self.stderr.log.exists() else ""

    def health(self) -> dict[str, Any] | None:
        """/health's answer, or None while nothing answers on the port yet."""
        try:
            answer = httpx2.get(f"{self.base}/health", timeout=deadline(10))
            return dict(answer.json())
        except (httpx2.TransportError, ValueError):
            return None

    def wait_healthy(self, seconds: float = LIVENESS_S) -> dict[str, Any]:
        """/health once the first index is built (any worker's answer, with several)."""
        seen: list[dict[str, Any]] = []

        def ready() -> bool:
            assert self.process.poll() is None, f"the server exited ({self.process.returncode}):\n{self.log_text()}"
            health = self.health()
            seen[:] = [health] if health else []
            return health is not None and health.get("status") != "indexing"

        wait_until(ready, f"the server at {self.base} never finished its first index:\n{self.log_text()}", seconds)
        return seen[0]


@contextmanager
def skillshelf_http(
    arguments: Sequence[str],
    log: Path,
    *,
    env: Mapping[str, str] | None = None,
    port: int = 0,
    launcher: Sequence[str] = (),
    healthy: bool = True,
) -> Iterator[LiveServer]:
    """`python -m skillshelf ARGUMENTS --port PORT` (the last command in ARGUMENTS takes `--port`), its
    stderr in `log`. Yields once it has announced its URL (and, when `healthy`, once /health is past the
    first index); stops it at the end. Port 0 (any free port: no race with another test for one) suits a
    single `serve --http`, which binds before it says so; `web` and `--workers` announce the port they
    were given, so give them one (team_support.free_port)."""
    command = [*launcher, sys.executable, "-m", "skillshelf", *arguments, "--port", str(port)]
    log.write_bytes(b"")
    stderr = StderrLines(log)
    process = subprocess.Popen(
        command, env=dict(env if env is not None else os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    copier = threading.Thread(target=stderr.copy, args=(process.stderr,), name="stderr-copy", daemon=True)
    copier.start()
    server = LiveServer(process, stderr)
    try:
        announced = stderr.wait_for(ANNOUNCED)
        if announced is None and stderr.ended:
            status = process.wait(deadline(30))
            raise AssertionError(f"the server exited ({status}) before announcing its URL:\n{server.log_text()}")
        assert announced, f"the server did not announce its URL within {deadline():.0f} s:\n{server.log_text()}"
        bound = int(announced.group(1))
        assert bound, f"port 0 with a command that announces the port it was given: pass a port\n{server.log_text()}"
        server.base = f"http://127.0.0.1:{bound}"
        if healthy:
            server.wait_healthy()
        yield server
    finally:
        stop(process)
        copier.join(deadline(30))
        process.stderr.close()


def stop(process: subprocess.Popen[Any], seconds: float = 30) -> int:
    """Terminate `process` as an operator does and wait for it; killed if it does not stop in time."""
    if process.poll() is None:
        process.terminate()
    try:
        return process.wait(timeout=deadline(seconds))
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()
