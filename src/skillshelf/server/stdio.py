"""stdio for `skillshelf serve`: the SDK's transport, with a bound on unanswered requests and a quiet end.

The SDK's `stdio_server` reads stdin and writes stdout in worker threads, and while it serves, fd 0 reads
the null device and fd 1 writes to stderr (skills and other children must never read the requests or
write into the protocol). Around it, skillshelf adds:

- At most `MAX_UNANSWERED` requests are handed to the server before their answers are written: a client
  that sends requests but never reads the answers stops being read (its requests wait in its own pipe)
  instead of growing the server by one handler and one answer per request. The SDK's transport alone
  dispatches every request it reads at once.
- A client that stops reading the answers (it exited, or closed its end) ends the session with status 0
  and a line in the log, not a traceback. The SDK's reader may then be blocked reading stdin, which
  nothing interrupts: the session ends when the client next writes or closes stdin.

skillshelf served pipes on a transport of its own until issue 20 (the event loop reading and writing
non-blocking descriptors, no thread hop per message). Measured against the SDK's side by side, once every
tool's work ran in a worker thread, it saved 3-10 % of a search plus a load with the official client, not
clearly beyond the noise, so it went (docs/performance.md, "After the boundary redesign").
"""

from __future__ import annotations

import errno
import logging
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Self

import anyio
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, RequestId

logger = logging.getLogger(__name__)
MAX_UNANSWERED = 32  # requests handed to the server and not yet answered before reading pauses


def loop_options() -> dict[str, Any]:
    """anyio's asyncio options: uvloop where it is installed (a dependency outside Windows). It takes
    another 0.3-0.6 ms off a call over stdio here (docs/performance.md)."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


async def serve_stdio(server: Server[Any]) -> None:
    """What `MCPServer.run_stdio_async` does, with the bound on unanswered requests and the quiet end."""
    unanswered = _Unanswered(MAX_UNANSWERED)
    with _quiet_when_the_answers_cannot_be_written():
        async with stdio_server() as (read_stream, write_stream):
            await server.run(
                _Admitting(read_stream, unanswered),
                _Answering(write_stream, unanswered),
                server.create_initialization_options(),
            )


GONE = frozenset({errno.EPIPE, errno.ECONNRESET, errno.EIO})  # a pipe, a socket, a terminal nobody reads


@contextmanager
def _quiet_when_the_answers_cannot_be_written() -> Iterator[None]:
    """The SDK's writer fails with the write's error when the client no longer reads the answers:
    that ends the session, and is no crash. Any other error stays one."""
    try:
        yield
    except* OSError as failed:
        if failed.subgroup(lambda exc: isinstance(exc, OSError) and exc.errno not in GONE) is not None:
            raise
        logger.info("the client stopped reading the answers; the session ended")
        _ignore_unwritable_leftovers()


def _ignore_unwritable_leftovers() -> None:
    """The SDK's stdout wrappers still hold the unwritten answers; when they are collected (Python 3.13
    does at exit) their flush fails the same way, and Python prints that as a traceback on stderr.
    The session ended on purpose: those failures, and only they, are not printed."""
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        failed = unraisable.exc_value
        if isinstance(failed, OSError) and failed.errno in GONE:
            return
        previous(unraisable)

    sys.unraisablehook = hook


class _Unanswered:
    """The requests handed to the server whose answers are not written yet, by id (a client may reuse
    one). `admit` waits while `limit` are: the server then takes no message from the SDK's reader,
    which holds the next line until it is taken, so stdin is not read and the client's writes block
    in its own pipe. A request leaves on its answer (result or error) or its `notifications/cancelled` (the SDK
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
