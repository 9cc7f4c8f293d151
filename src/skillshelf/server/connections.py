"""What a stranger's connections may hold: a header timeout and a cap, in uvicorn's HTTP protocol.

uvicorn times out a connection only between requests (keep-alive), never one that has not sent a
request yet: 1,100 connections that never sent a byte used up a 1,024-descriptor limit and /health
stopped answering. `GuardedHttpProtocol` (uvicorn's httptools protocol, which `serve --http` uses)
adds what it lacks:

- a **header timeout**: from the moment a connection opens, or the first byte of its next request,
  the request's headers must be complete within `header_timeout_s`, else the connection is closed;
- a **cap**: past `max_connections` open connections, a new one closes the one that has waited
  longest without a request in flight (no headers yet first, then idle keep-alive ones), so a flood
  of idle connections never locks out a real client; when every connection is busy, the new one is
  closed. `descriptor_room` makes sure the process may open that many files.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass
from functools import partial
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

logger = logging.getLogger(__name__)

FD_RESERVE = 256  # descriptors kept for everything else: indexes, the database pool, the log, skill runs
FULL_WARNING_S = 60.0  # "every connection is busy" is logged at most this often


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int
    header_timeout_s: float


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a header timeout and a connection cap (see the module)."""

    last_full_warning = float("-inf")

    def __init__(self, *args: Any, limits: ConnectionLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limits = limits
        self.opened_at = 0.0
        self.head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.opened_at = self.loop.time()
        self._await_head()
        self._make_room()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._await_head()  # the next request on a kept-alive connection: its headers are timed too

    def on_headers_complete(self) -> None:
        self._stop_waiting()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def idle(self) -> bool:
        """No request in flight: waiting for headers, or kept alive between requests."""
        return self.cycle is None or self.cycle.response_complete

    def _await_head(self) -> None:
        if self.head_timer is None:
            self.head_timer = self.loop.call_later(self.limits.header_timeout_s, self._head_timed_out)

    def _stop_waiting(self) -> None:
        if self.head_timer is not None:
            self.head_timer.cancel()
            self.head_timer = None

    def _head_timed_out(self) -> None:
        self.head_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def _make_room(self) -> None:
        connections = self.server_state.connections
        if len(connections) <= self.limits.max_connections:
            return
        live = [c for c in connections if isinstance(c, GuardedHttpProtocol) and not c.transport.is_closing()]
        if len(live) <= self.limits.max_connections:
            return  # the surplus is closing already
        waiting = [c for c in live if c is not self and c.idle()]
        if waiting:
            # headers still missing first, then the longest open
            victim = min(waiting, key=lambda c: (c.head_timer is None, c.opened_at))
            victim.transport.close()
            return
        self._warn_full()
        self.transport.close()

    def _warn_full(self) -> None:
        now = self.loop.time()
        if now - GuardedHttpProtocol.last_full_warning >= FULL_WARNING_S:
            GuardedHttpProtocol.last_full_warning = now
            logger.warning(
                "%d connections open, every one with a request in flight: new connections are closed until one "
                "ends ([http] max_connections)",
                self.limits.max_connections,
            )


def guarded_protocol(limits: ConnectionLimits) -> Any:
    """What uvicorn's `Config(http=...)` takes: the protocol with these limits (a partial, so a worker
    process's pickled config carries it)."""
    return partial(GuardedHttpProtocol, limits=limits)


def descriptor_room(max_connections: int) -> int:
    """The connections this process can hold: raises its open-file limit (the soft one, up to the hard one)
    to `max_connections` plus a reserve when it is lower; when even the hard limit is too low, fewer, said
    once in the log (systemd's default is 1,024: the unit in docs/deploy.md sets LimitNOFILE)."""
    if sys.platform == "win32":
        return max_connections
    import resource

    wanted = max_connections + FD_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass  # keep the soft limit; the cap below follows it
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return max_connections
    room = max(8, soft - FD_RESERVE)
    logger.warning(
        "the open-file limit (%d) leaves room for %d connections, not [http] max_connections = %d: raise it "
        "(LimitNOFILE= in a systemd unit, ulimit -n in a shell)",
        soft,
        room,
        max_connections,
    )
    return room
