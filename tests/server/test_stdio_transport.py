"""The stdio transport driven by the event loop (skillshelf.server.stdio), byte for byte.

A real `skillshelf serve` process with pipes, as an MCP client starts it: whole messages however large,
several requests in one write, a slow reader, the standard descriptors kept away from the protocol,
a clean exit when the client closes stdin; and the SDK's own transport when stdin is a file.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from tests.conftest import agent_skill

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(number: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def start(library: Path, stderr: BinaryIO, stdin: int | BinaryIO = subprocess.PIPE) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "skillshelf", "serve", "--no-watch", "--library", str(library)]
    return subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE, stderr=stderr, env=dict(os.environ))


def initialized(library: Path, stderr: BinaryIO) -> subprocess.Popen[bytes]:
    """A server that has answered `initialize`."""
    process = start(library, stderr)
    assert process.stdin is not None
    process.stdin.write(line(INITIALIZE))
    process.stdin.flush()
    read_answers(process, {1})
    return process


def read_answers(process: subprocess.Popen[bytes], wanted: set[int]) -> dict[int, dict[str, Any]]:
    assert process.stdout is not None
    answers: dict[int, dict[str, Any]] = {}
    while not wanted <= set(answers):
        raw = process.stdout.readline()
        assert raw, f"the server closed stdout before answering {sorted(wanted - set(answers))}"
        message = json.loads(raw)  # every line is one whole JSON-RPC message
        if "id" in message:
            answers[message["id"]] = message
    return answers


def finish(process: subprocess.Popen[bytes]) -> None:
    """Close stdin as a client does when it is done: the server must exit cleanly."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.close()
    assert process.wait(timeout=30) == 0
    process.stdout.close()


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    agent_skill(root, "ops", "deploy", "name: deploy\ndescription: Deploy a service to a cluster.")
    # 600 KB of documentation: its answer is far larger than a pipe's 64 KB buffer
    body = "# Big\n\n" + "".join(f"Paragraph {i}: {'words ' * 20}\n\n" for i in range(4500))
    agent_skill(root, "docs", "big", "name: big\ndescription: A very long skill.", body)
    return root


def test_large_and_pipelined_messages_cross_whole_while_the_client_reads_slowly(
    library: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    with (tmp_path / "stderr.log").open("wb") as log:
        process = start(library, log)
        assert process.stdin is not None
        huge_query = "deploy " * 50_000  # a 350 KB request line: asyncio's default line limit is 64 KB
        process.stdin.write(
            line(INITIALIZE)
            + line(INITIALIZED)
            + line(call(2, "loadSkill", {"skillId": "docs/big"}))
            + line(call(3, "searchPatterns", {"query": huge_query}))
            + line(call(4, "searchPatterns", {"query": "deploy a service"}))
        )  # one write: the server must split it into messages itself
        process.stdin.flush()
        time.sleep(1.0)  # nobody reads: the big answer fills the pipe and the server must wait, not fail
        answers = read_answers(process, {1, 2, 3, 4})
        finish(process)
    loaded = answers[2]["result"]["structuredContent"]
    assert loaded["success"] and len(json.dumps(answers[2])) > 500_000
    assert "Paragraph 4499" in loaded["data"]["documentation"]
    assert answers[3]["result"]["isError"]  # answered (too long a query is refused), not dropped
    assert "query" in answers[3]["result"]["structuredContent"]["error"]["message"]
    assert answers[4]["result"]["structuredContent"]["data"]["hits"][0]["id"] == "ops/deploy"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the server's descriptors")
def test_while_serving_fd_0_reads_nothing_and_fd_1_goes_to_stderr(
    library: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    """A child that inherits the standard descriptors can neither steal requests nor corrupt answers."""
    log_path = tmp_path / "stderr.log"
    with log_path.open("wb") as log:
        process = initialized(library, log)
        fds = Path(f"/proc/{process.pid}/fd")
        assert str((fds / "0").readlink()) == os.devnull
        assert (fds / "1").readlink() == (fds / "2").readlink() == log_path
        finish(process)


def test_stdin_from_a_file_is_served_by_the_sdk_transport_to_its_end(
    library: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    """A file cannot be watched by the event loop: the SDK's threaded transport serves it instead."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(line(INITIALIZE) + line(INITIALIZED) + line(call(2, "searchPatterns", {"query": "deploy"})))
    with requests.open("rb") as stdin, (tmp_path / "stderr.log").open("wb") as log:
        process = start(library, log, stdin=stdin)
        stdout, _ = process.communicate(timeout=60)
    ids = {json.loads(raw).get("id") for raw in stdout.splitlines() if raw.strip()}
    assert {1} <= ids  # initialize is answered; the call may be cut short by the end of the file
    assert process.returncode == 0


def test_a_client_that_stops_reading_ends_the_session_quietly(
    library: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    """The answers have nowhere to go: the server ends at once with status 0, not with a traceback."""
    log_path = tmp_path / "stderr.log"
    with log_path.open("wb") as log:
        process = initialized(library, log)
        assert process.stdin is not None and process.stdout is not None
        process.stdout.close()  # stdin stays open: only the broken answer pipe can end the session
        with contextlib.suppress(BrokenPipeError):
            for number in range(2, 6):
                process.stdin.write(line(call(number, "searchPatterns", {"query": "deploy"})))
                process.stdin.flush()
                time.sleep(0.1)
        assert process.wait(timeout=30) == 0
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
    assert "Traceback" not in log_path.read_text(encoding="utf-8")


def test_reading_pauses_while_enough_whole_requests_wait() -> None:
    """A client that floods requests fills its own pipe: the server reads ahead at most HIGH_WATER bytes
    of whole lines (plus one read), and reads on as lines are taken; every line arrives whole, in order."""
    import asyncio
    import threading

    from skillshelf.server import stdio

    line_text = b'{"jsonrpc": "2.0", "method": "ping", "padding": "' + b"x" * 1000 + b'"}\n'
    count = (3 * stdio.HIGH_WATER) // len(line_text)
    read_end, write_end = os.pipe()
    written = threading.Event()

    def flood() -> None:
        with os.fdopen(write_end, "wb") as pipe:
            pipe.write(line_text * count)  # blocks while the server is not reading
        written.set()

    async def consume() -> None:
        os.set_blocking(read_end, False)
        async with stdio._Lines(read_end) as lines:
            await asyncio.sleep(0.5)  # no line taken yet: reading must have paused
            assert len(lines._buffer) <= stdio.HIGH_WATER + stdio.CHUNK
            assert not written.is_set()
            taken = [line async for line in lines]
        assert len(taken) == count and all(line.encode() == line_text for line in taken)

    writer = threading.Thread(target=flood)
    writer.start()
    try:
        asyncio.run(consume())
    finally:
        writer.join(timeout=30)
        os.close(read_end)
    assert written.is_set()
