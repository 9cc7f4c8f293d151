"""Telling clients that a list changed (the view's tools after a config reload, the library's skills after a
change on disk): one broadcaster for both, so the two lists announce the same way.

A change is announced twice over: as an event on the server's subscription bus (2026 `subscriptions/listen`
streams) and as the legacy notification on every session that initialized (the newest MAX_SESSIONS;
one that has gone away is dropped). Its middleware advertises `listChanged` for the list in the
capabilities and remembers the event loop, so a watcher's thread can announce on it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any, Literal

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ResourcesListChanged, SubscriptionBus, ToolsListChanged
from pydantic import BaseModel

logger = logging.getLogger(__name__)

MAX_SESSIONS = 256
NOTIFY_TIMEOUT_S = 5


class ListChanged:
    """Announces that the `list` (tools or resources) changed, to every client of one server."""

    def __init__(self, bus: SubscriptionBus, list_: Literal["tools", "resources"]) -> None:
        self.bus = bus
        self.list = list_
        self.loop_token: anyio.lowlevel.EventLoopToken | None = None  # the server's loop, once a client reached it
        self._sessions: list[ServerSession] = []

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Remembers the event loop and the sessions to notify, and advertises `listChanged` on them."""
        self.loop_token = anyio.lowlevel.current_token()
        result = await call_next(ctx)
        if ctx.method == "initialize":
            if isinstance(result, BaseModel):
                result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            capability = (result or {}).get("capabilities", {}).get(self.list)
            if isinstance(capability, dict):
                capability["listChanged"] = True
            self._sessions = [*self._sessions, ctx.session][-MAX_SESSIONS:]
        return result

    def from_thread(self) -> None:
        """`announce`, from another thread (a watcher's); nothing to do before a client has come."""
        token = self.loop_token
        if token is None:
            return  # no client yet: the next one lists afresh anyway
        try:
            anyio.from_thread.run(self.announce, token=token)
        except RuntimeError:
            logger.debug("no event loop to announce a %s change on (server stopped)", self.list)

    async def announce(self) -> None:
        await self.bus.publish(ToolsListChanged() if self.list == "tools" else ResourcesListChanged())
        alive: list[ServerSession] = []
        for session in self._sessions:
            try:
                with anyio.fail_after(NOTIFY_TIMEOUT_S):
                    await self._notify(session)
            except Exception:
                logger.debug("a session went away before hearing of the %s change", self.list, exc_info=True)
                continue
            alive.append(session)
        self._sessions = alive

    def _notify(self, session: ServerSession) -> Awaitable[None]:
        return session.send_tool_list_changed() if self.list == "tools" else session.send_resource_list_changed()
