"""`skillshelf serve` over stdio, byte for byte: the SDK's transport and what skillshelf adds around it.

A real `skillshelf serve` process with pipes, as an MCP client starts it: whole messages however large,
several requests in one write, a slow reader, the standard descriptors kept away from the protocol,
a clean exit when the client closes stdin or stops reading, a bound on unanswered requests, and stdin
from a file.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import io
import json
import os
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from skillshelf.server.stdio import MAX_UNANSWERED
from tests.conftest import agent_skill, deadline, wait_until

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}  # fmt: skip
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(number: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def line(message: dict[str, Any]) -> bytes:
    return (json.dumps(message) + "\n").encode()


def serve_command(library: Path) -> list[str]:
    return [sys.executable, "-m", "skillshelf", "serve", "--no-watch", "--library", str(library)]


def start(library: Path, stderr: BinaryIO, stdin: int | BinaryIO = subprocess.PIPE) -> subprocess.Popen[bytes]:
    return subprocess.Popen(serve_command(library), stdin=stdin, stdout=subprocess.PIPE, stderr=stderr)


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


def pipe_filled(fd: int) -> bool:
    """True once the pipe at `fd` holds over half what it can. A writer of more than the pipe holds
    fills it in one write (non-blocking: all that fits), and waits for a reader from then on. (Full to
    the byte is not observable: the kernel's page slots leave some room unused.)"""
    return unread_bytes(fd) > pipe_capacity(fd) // 2


def unread_bytes(fd: int) -> int:
    """What the pipe at `fd` (either end) holds that its reader has not taken."""
    waiting = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, waiting)
    return waiting[0]


def pipe_capacity(fd: int) -> int:
    if hasattr(fcntl, "F_GETPIPE_SZ"):  # Linux
        return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    return 16384  # elsewhere (macOS): a pipe holds at least this much before its writer waits


def finish(process: subprocess.Popen[bytes]) -> None:
    """Close stdin as a client does when it is done: the server must exit cleanly."""
    assert process.stdin is not None and process.stdout is not None
    process.stdin.close()
    assert process.wait(timeout=deadline()) == 0
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
        assert process.stdout is not None  # nobody reads: the big answer fills the pipe, the server must wait
        answer_pipe = process.stdout.fileno()
        wait_until(lambda: pipe_filled(answer_pipe), "the server never filled its answer pipe")
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


def test_stdin_from_a_file_is_served_to_its_end(library: Path, isolated_environment: Path, tmp_path: Path) -> None:
    """Requests written to a file beforehand (a script's way to drive the server) are read to the end."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(line(INITIALIZE) + line(INITIALIZED) + line(call(2, "searchPatterns", {"query": "deploy"})))
    with requests.open("rb") as stdin, (tmp_path / "stderr.log").open("wb") as log:
        process = start(library, log, stdin=stdin)
        stdout, _ = process.communicate(timeout=deadline())
    ids = {json.loads(raw).get("id") for raw in stdout.splitlines() if raw.strip()}
    assert {1} <= ids  # initialize is answered; the call may be cut short by the end of the file
    assert process.returncode == 0


def initialized_answering_to(answers_to: str, library: Path, log_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`serve` with its answers going to a pipe or a terminal (a pty), past initialize; and the end the
    test reads the answers from."""
    import pty

    reading, output = os.pipe() if answers_to == "pipe" else pty.openpty()
    with log_path.open("wb") as log:
        process = subprocess.Popen(serve_command(library), stdin=subprocess.PIPE, stdout=output, stderr=log)
    os.close(output)
    assert process.stdin is not None
    try:
        process.stdin.write(line(INITIALIZE) + line(INITIALIZED))
        process.stdin.flush()
        read_lines(reading, {1})
    except BaseException:
        process.kill()
        process.wait()
        os.close(reading)
        raise
    return process, reading


@pytest.mark.parametrize("answers_to", ["pipe", "terminal"])
def test_a_client_that_stops_reading_ends_the_session_quietly(
    answers_to: str, library: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    """The answers have nowhere to go (a closed pipe: EPIPE; a closed terminal: EIO): the server ends
    with status 0 and no traceback once it reads its next request, although stdin stays open."""
    log_path = tmp_path / "stderr.log"
    process, reading = initialized_answering_to(answers_to, library, log_path)
    assert process.stdin is not None
    try:
        os.close(reading)  # stdin stays open: only the answers that cannot be written can end the session
        assert requests_until_it_ends(process) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
    assert "Traceback" not in log_path.read_text(encoding="utf-8")


def requests_until_it_ends(process: subprocess.Popen[bytes]) -> int:
    """Send searches until the server exits (a read of stdin it is blocked in returns only when a
    line comes); its exit status."""
    assert process.stdin is not None
    end = time.monotonic() + deadline(60)
    number = 2
    while process.poll() is None:
        assert time.monotonic() < end, "the server did not end though nothing reads its answers"
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write(line(call(number, "searchPatterns", {"query": "deploy"})))
            process.stdin.flush()
        number += 1
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.1)
    return process.returncode


# -- a client that never reads the answers -------------------------------------------------------------

GROWTH_LIMIT_MB = 120  # MAX_UNANSWERED answers of ~1 MB each, and room to spare
IDLE_POLLS = 10  # the server used no CPU for this many polls in a row: it has done what it will


def memory_mb(pid: int, field: str) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith(f"{field}:"):
            return int(row.split()[1]) // 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def wait_until_idle(pid: int, deadline_s: float = deadline(120)) -> None:
    """Until the server has stopped working: its CPU time unchanged across IDLE_POLLS polls (a
    generous deadline: it only proves that it did stop)."""
    end = time.monotonic() + deadline_s
    last, unchanged = -1, 0
    while unchanged < IDLE_POLLS:
        assert time.monotonic() < end, "the server never went idle"
        ticks = cpu_ticks(pid)
        unchanged = unchanged + 1 if ticks == last else 0
        last = ticks
        time.sleep(0.1)


def read_lines(fd: int, wanted: set[int]) -> set[int]:
    """The ids answered on `fd` until every wanted one is (answers cross whole, one per line)."""
    pending, seen = b"", set[int]()
    while not wanted <= seen:
        chunk = os.read(fd, 1 << 20)
        assert chunk, f"the server closed its output before answering {sorted(wanted - seen)[:5]}"
        pending += chunk
        *complete, pending = pending.split(b"\n")
        seen |= {json.loads(row).get("id") for row in complete if row.strip()}
    return seen


def ping(number: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": number, "method": "ping"}


def never_read_requests(pipe_room: int) -> bytes:
    """2 x MAX_UNANSWERED loads of the 600 KB skill (whatever the server admits while nothing reads its
    answers is one of them), then pings up to 3/4 of `pipe_room`: one write that never waits, with
    several times what the server may take in still unread when it pauses."""
    first = 2
    loads = [line(call(n, "loadSkill", {"skillId": "docs/big"})) for n in range(first, first + 2 * MAX_UNANSWERED)]
    requests, number = b"".join(loads), first + len(loads)
    while len(requests) < pipe_room * 3 // 4:
        requests += line(ping(number))
        number += 1
    return requests


def most_requests_taken(requests: bytes) -> int:
    """What a server reading with the bound may take from stdin before it pauses: MAX_UNANSWERED
    requests, the one its reader holds and the one waiting for room (3 to spare), and the two 8 KB
    buffers of the SDK's line reader (the text layer's and the binary one's, io.DEFAULT_BUFFER_SIZE)."""
    longest = max(len(row) + 1 for row in requests.split(b"\n"))
    return (MAX_UNANSWERED + 3) * longest + 2 * io.DEFAULT_BUFFER_SIZE


@pytest.mark.slow  # 64 answers of 600 KB and a second of watching the server stand still
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the server's memory from /proc")
@pytest.mark.parametrize("answers_to", ["pipe", "terminal"])
def test_a_client_that_never_reads_the_answers_does_not_grow_the_server(
    answers_to: str, library: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    """Answers wait for the client, so reading requests waits too, whether the answers go to a pipe or
    to a terminal that is never read (a paused or stuck one). The bound is measured where it holds:
    the requests the server has not taken are still in the client's pipe (a server reading them all,
    as the SDK's transport alone does, leaves it empty and holds one handler and one 600 KB answer
    for each load: 250+ MB for 400 of them); and the server grew by no more than the answers it holds."""
    process, reading = initialized_answering_to(answers_to, library, tmp_path / "stderr.log")
    assert process.stdin is not None
    try:
        baseline = memory_mb(process.pid, "VmRSS")
        requests = never_read_requests(pipe_capacity(process.stdin.fileno()))
        sent = {json.loads(row)["id"] for row in requests.splitlines()}
        assert len(requests) > 2 * most_requests_taken(requests)  # a server that reads them all is seen
        process.stdin.write(requests)  # the pipe takes it all, whatever the server does
        process.stdin.flush()
        wait_until_idle(process.pid)
        taken = len(requests) - unread_bytes(process.stdin.fileno())
        assert taken <= most_requests_taken(requests), f"the server took {taken} bytes of requests unanswered"
        grown = memory_mb(process.pid, "VmHWM") - baseline
        assert grown < GROWTH_LIMIT_MB, f"the server grew by {grown} MB while nobody read its answers"
        if answers_to == "pipe":  # (a terminal carries the answers too slowly to read them all here)
            assert read_lines(reading, sent) >= sent  # none lost: the paused reading resumes
            process.stdin.close()
            assert process.wait(timeout=deadline()) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        with contextlib.suppress(BrokenPipeError):
            process.stdin.close()
        os.close(reading)


def test_a_request_leaves_the_unanswered_count_on_its_answer_or_its_cancellation() -> None:
    """The admission rule alone: at most MAX requests handed over; an answer, an error answer or the
    client's cancellation each make room for one more; a reused id counts twice."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse
    from mcp_types.jsonrpc import ErrorData

    from skillshelf.server.stdio import _Admitting, _Answering, _Unanswered

    def request(number: int) -> SessionMessage:
        return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=number, method="ping"))

    def cancelled(number: int) -> SessionMessage:
        params = {"requestId": number, "reason": "the client gave up"}
        return SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params=params))

    async def scenario() -> None:
        incoming_send, incoming = anyio.create_memory_object_stream[Any](100)
        outgoing, outgoing_receive = anyio.create_memory_object_stream[Any](100)
        async with incoming_send, incoming, outgoing, outgoing_receive:
            unanswered = _Unanswered(3)
            reader, writer = _Admitting(incoming, unanswered), _Answering(outgoing, unanswered)
            for number in (1, 2, 2, 3, 4):  # id 2 reused while the first is in flight
                incoming_send.send_nowait(request(number))
            for _ in range(3):
                await reader.receive()
            assert len(unanswered) == 3
            async with anyio.create_task_group() as group:
                group.start_soon(reader.receive)
                await anyio.wait_all_tasks_blocked()
                assert len(unanswered) == 3  # the fourth (id 3) waits for room
                await writer.send(SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=2, result={})))
            assert len(unanswered) == 3  # the answer made room and id 3 took it
            error = ErrorData(code=-32600, message="duplicate id")
            await writer.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=2, error=error)))
            assert len(unanswered) == 2  # the reused id 2 answered twice: both gone
            await reader.receive()  # id 4 takes the room
            incoming_send.send_nowait(cancelled(3))
            incoming_send.send_nowait(request(5))
            await reader.receive()  # the cancellation of 3 goes on to the server, and makes room
            assert len(unanswered) == 2
            await reader.receive()  # id 5
            assert len(unanswered) == 3

    anyio.run(scenario)
