"""stdio served on the event loop: no thread hop per message.

The SDK's `stdio_server` reads stdin and writes stdout through `anyio.wrap_file`, which runs every
readline, write and flush in a worker thread: three hops per call, about 0.1 ms each on a small
machine, a tenth of a fast search's round trip. When stdin and stdout are pipes or sockets (as an MCP
client starts a server), this module hands the SDK's `stdio_server` two streams that asyncio drives
directly (`connect_read_pipe` / `connect_write_pipe`), so the SDK still parses, frames and routes
every message. Anything else (a terminal, a file, Windows) keeps the SDK's transport as it is.

As in the SDK, fd 0 and fd 1 are pointed at the null device and stderr while serving (skills and
other children must never read the requests or write into the protocol), and put back afterwards.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

logger = logging.getLogger(__name__)
MAX_LINE = 256 * 1024 * 1024  # a request line larger than this ends the session (the SDK reads any size)


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
    lowlevel = server._lowlevel_server  # the SDK's run_stdio_async uses it the same way
    if not event_loop_stdio_possible():
        await server.run_stdio_async()
        return
    async with (
        _claimed_standard_streams() as (wire_in, wire_out),
        _loop_streams(wire_in, wire_out) as streams,
        stdio_server(*streams) as (read_stream, write_stream),  # type: ignore[arg-type]
    ):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


@asynccontextmanager
async def _claimed_standard_streams() -> AsyncIterator[tuple[int, int]]:
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


class _LineReader:
    """stdin as the SDK's `stdio_server` reads it: an async iterator of text lines."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _LineReader:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _TextWriter:
    """stdout as the SDK's `stdio_server` writes it: `write` then `flush`, both awaited.

    A client that stops reading (it exited, or closed its end) ends the session quietly: the SDK's
    writer stops on `ClosedResourceError`, and stdin is ended too, since no answer can reach anyone."""

    def __init__(self, writer: asyncio.StreamWriter, end_input: Callable[[], None]) -> None:
        self._writer = writer
        self._end_input = end_input

    async def write(self, text: str) -> None:
        with self._closed_as_end():
            self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        with self._closed_as_end():
            await self._writer.drain()  # waits only while the client is not reading (the pipe is full)

    @contextmanager
    def _closed_as_end(self) -> Iterator[None]:
        try:
            yield
        except (ConnectionError, RuntimeError) as exc:  # RuntimeError: uvloop's "the handler is closed"
            if not self._writer.transport.is_closing():
                raise
            logger.info("the client stopped reading the answers; ending the session")
            self._end_input()
            raise anyio.ClosedResourceError from exc


@asynccontextmanager
async def _loop_streams(wire_in: int, wire_out: int) -> AsyncIterator[tuple[_LineReader, _TextWriter]]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE, loop=loop)
    # closefd=False: the descriptors are the claim's to close, after the transports let go of them
    read_file = os.fdopen(wire_in, "rb", buffering=0, closefd=False)
    write_file = os.fdopen(wire_out, "wb", buffering=0, closefd=False)
    read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), read_file)
    write_transport, write_protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, write_file)
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    try:
        yield _LineReader(reader), _TextWriter(writer, reader.feed_eof)
    finally:
        read_transport.close()
        write_transport.close()
        for fd in (wire_in, wire_out):  # the pipe transports made them non-blocking; the claim restores them
            os.set_blocking(fd, True)
