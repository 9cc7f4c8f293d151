"""stdio served on the event loop: no thread hop per message.

The SDK's `stdio_server` reads stdin and writes stdout through `anyio.wrap_file`, which runs every
readline, write and flush in a worker thread: three hops per call, about 0.1 ms each on a small
machine, a tenth of a fast search's round trip. When stdin and stdout are pipes or sockets (as an MCP
client starts a server), this module hands the SDK's `stdio_server` a line reader and a writer that
the event loop wakes when the pipe is readable or writable (`add_reader` / `add_writer` on
non-blocking descriptors this module owns), so the SDK still parses, frames and routes every
message. Anything else (a terminal, a file, Windows) keeps the SDK's transport as it is.

As in the SDK, fd 0 and fd 1 are pointed at the null device and stderr while serving (skills and
other children must never read the requests or write into the protocol), and put back afterwards.

On either transport, at most `MAX_UNANSWERED` requests are handed to the server before their
answers are written: a client that sends requests but never reads the answers stops being read
(its requests wait in its own pipe) instead of growing the server by one handler and one answer per
request. The SDK's transport alone dispatches every request it reads at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any, Self

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, RequestId

from skillshelf.server import sdk

logger = logging.getLogger(__name__)
MAX_LINE = 256 * 1024 * 1024  # a request line larger than this ends the session (the SDK reads any size)
CHUNK = 1024 * 1024
HIGH_WATER = 4 * 1024 * 1024  # bytes of whole requests read ahead before reading pauses
MAX_UNANSWERED = 32  # requests handed to the server and not yet answered before reading pauses
# False: the SDK's transport even on pipes. An internal switch, not a setting: bench/serve_variant.py
# sets it for the transport A/B of docs/performance.md.
OWN_TRANSPORT_ON_PIPES = True


def loop_options() -> dict[str, Any]:
    """anyio's asyncio options: uvloop where it is installed (a dependency outside Windows). It takes
    another 0.3-0.6 ms off a call over stdio here (docs/performance.md)."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def event_loop_stdio_possible() -> bool:
    """True when both standard streams are pipes or sockets on a POSIX system."""
    if sys.platform == "win32":
        return False
    try:
        return all(_is_pipe_or_socket(os.fstat(fd).st_mode) for fd in (0, 1))
    except OSError:
        return False


def _is_pipe_or_socket(mode: int) -> bool:
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


async def serve_stdio(server: MCPServer[Any]) -> None:
    """What `MCPServer.run_stdio_async` does, on the event-loop transport when it can be used."""
    lowlevel = sdk.lowlevel(server)  # the SDK's run_stdio_async uses it the same way
    unanswered = _Unanswered(MAX_UNANSWERED)
    if not (OWN_TRANSPORT_ON_PIPES and event_loop_stdio_possible()):
        async with stdio_server() as (read_stream, write_stream):
            await lowlevel.run(
                _Admitting(read_stream, unanswered),
                _Answering(write_stream, unanswered),
                lowlevel.create_initialization_options(),
            )
        return
    with _claimed_standard_streams() as (wire_in, wire_out), _nonblocking(wire_in, wire_out):
        async with (
            _Lines(wire_in) as lines,
            stdio_server(lines, _Writer(wire_out, lines.end)) as (read_stream, write_stream),  # type: ignore[arg-type]
        ):
            await lowlevel.run(
                _Admitting(read_stream, unanswered),
                _Answering(write_stream, unanswered),
                lowlevel.create_initialization_options(),
            )


class _Unanswered:
    """The requests handed to the server whose answers are not written yet, by id (a client may reuse
    one). `admit` waits while `limit` are: the server's reader then stops taking lines, `_Lines`
    stops reading the pipe once HIGH_WATER bytes wait, and the client's writes block in its own
    pipe. A request leaves on its answer (result or error) or its `notifications/cancelled` (the SDK
    never answers a cancelled request). skillshelf sends clients no requests of its own, so no
    answer it waits for can be stuck behind the requests held back."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._ids: Counter[RequestId] = Counter()
        self._count = 0
        self._room = anyio.Event()

    def __len__(self) -> int:
        return self._count

    async def admit(self, message: SessionMessage | Exception) -> None:
        if not isinstance(message, SessionMessage):
            return
        inner = message.message
        if isinstance(inner, JSONRPCRequest):
            while self._count >= self.limit:
                self._room = anyio.Event()
                await self._room.wait()
            self._ids[coerce_request_id(inner.id)] += 1
            self._count += 1
        elif isinstance(inner, JSONRPCNotification) and inner.method == "notifications/cancelled":
            cancelled = cancelled_request_id_from_params(inner.params)
            if cancelled is not None:
                self._settle(cancelled)

    def answered(self, message: SessionMessage) -> None:
        inner = message.message
        if isinstance(inner, JSONRPCResponse | JSONRPCError) and inner.id is not None:
            self._settle(inner.id)

    def _settle(self, request_id: RequestId) -> None:
        key = coerce_request_id(request_id)
        if self._ids[key] <= 0:
            self._ids.pop(key, None)
            return
        self._ids[key] -= 1
        if not self._ids[key]:
            del self._ids[key]
        self._count -= 1
        self._room.set()


class _Admitting:
    """The SDK's read stream, handing the server a request only when `_Unanswered` has room."""

    def __init__(self, inner: Any, unanswered: _Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    @property
    def last_context(self) -> Any:  # the sender's contextvars, which the SDK's dispatcher reads
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        message: SessionMessage | Exception = await self._inner.receive()
        await self._unanswered.admit(message)
        return message

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


class _Answering:
    """The SDK's write stream, telling `_Unanswered` when an answer has gone to the writer."""

    def __init__(self, inner: Any, unanswered: _Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    async def send(self, message: SessionMessage, /) -> None:
        await self._inner.send(message)
        self._unanswered.answered(message)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()


@contextmanager
def _claimed_standard_streams() -> Iterator[tuple[int, int]]:
    """Private duplicates of fd 0 and 1 (close-on-exec) while fd 0 reads the null device and fd 1
    writes to stderr; both are restored on exit."""
    import fcntl

    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield wire_in, wire_out
    finally:
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)
        os.close(wire_in)
        os.close(wire_out)


@contextmanager
def _nonblocking(*fds: int) -> Iterator[None]:
    """The descriptors non-blocking while serving (the loop must never wait in a read or a write)."""
    for fd in fds:
        os.set_blocking(fd, False)
    try:
        yield
    finally:
        for fd in fds:
            with suppress(OSError):
                os.set_blocking(fd, True)


class _Lines:
    """stdin as the SDK's `stdio_server` reads it: an async iterator of text lines. The loop calls
    `_readable` when the pipe has data. Reading pauses while more than `HIGH_WATER` bytes of whole
    requests wait (as the SDK's reader waits for each message to be taken), so a client that floods
    requests fills its pipe, not the server's memory."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buffer = bytearray()
        self._scanned = 0  # the buffer holds no newline before this offset
        self._partial = 0  # bytes after the last newline: the line still arriving
        self._ended = False
        self._reading = False
        self._arrived = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    async def __aenter__(self) -> _Lines:
        self._read(True)
        return self

    async def __aexit__(self, *_: object) -> None:
        self.end()

    def end(self) -> None:
        """No more input: the client closed stdin, or can no longer read the answers."""
        self._ended = True
        self._read(False)
        self._arrived.set()

    def _read(self, on: bool) -> None:
        if on and not self._ended and not self._reading:
            self._loop.add_reader(self._fd, self._readable)
        elif not on and self._reading:
            self._loop.remove_reader(self._fd)
        self._reading = on and not self._ended

    def _readable(self) -> None:
        try:
            chunk = os.read(self._fd, CHUNK)
        except BlockingIOError:
            return
        except OSError:
            logger.info("stdin could not be read; ending the session", exc_info=True)
            self.end()
            return
        if not chunk:
            self.end()  # the client closed stdin
            return
        self._buffer += chunk
        last = chunk.rfind(b"\n")
        self._partial = len(chunk) - last - 1 if last >= 0 else self._partial + len(chunk)
        if self._partial > MAX_LINE:
            logger.error("a request line over %d bytes; ending the session", MAX_LINE)
            self._buffer.clear()
            self.end()
            return
        if len(self._buffer) - self._partial > HIGH_WATER:
            self._read(False)  # whole requests enough for now: resumed as they are taken
        self._arrived.set()

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            newline = self._buffer.find(b"\n", self._scanned)
            if newline >= 0:
                line = bytes(self._buffer[: newline + 1])
                del self._buffer[: newline + 1]
                self._scanned = 0
                if len(self._buffer) - self._partial <= HIGH_WATER:
                    self._read(True)
                return line.decode("utf-8", errors="replace")
            self._scanned = len(self._buffer)
            if self._ended:
                if self._buffer:  # a last line without its newline
                    line = bytes(self._buffer)
                    self._buffer.clear()
                    return line.decode("utf-8", errors="replace")
                raise StopAsyncIteration
            self._arrived.clear()
            await self._arrived.wait()


class _Writer:
    """stdout as the SDK's `stdio_server` writes it: `write` then `flush`, both awaited. A write that
    would block waits for the loop to say the pipe has room. A client that stops reading (it exited,
    or closed its end) ends the session quietly: the SDK's writer stops on `ClosedResourceError`, and
    stdin is ended too, since no answer can reach anyone."""

    def __init__(self, fd: int, end_input: Callable[[], None]) -> None:
        self._fd = fd
        self._end_input = end_input
        self._pending = bytearray()

    async def write(self, text: str) -> None:
        self._pending += text.encode("utf-8")

    async def flush(self) -> None:
        while self._pending:
            try:
                written = os.write(self._fd, self._pending)
            except BlockingIOError:
                await self._writable()
                continue
            except OSError as exc:  # EPIPE and the like: nobody reads the answers any more
                logger.info("the client stopped reading the answers; ending the session")
                self._pending.clear()
                self._end_input()
                raise anyio.ClosedResourceError from exc
            del self._pending[:written]

    async def _writable(self) -> None:
        loop = asyncio.get_running_loop()
        room: asyncio.Future[None] = loop.create_future()

        def ready() -> None:
            if not room.done():
                room.set_result(None)

        loop.add_writer(self._fd, ready)
        try:
            await room
        finally:
            loop.remove_writer(self._fd)
