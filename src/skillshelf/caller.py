"""Who is calling: the authenticated token's name for the duration of one tool call.

The HTTP server sets it per call (`skillshelf.server.hooks`); stores that record who wrote something
(notes, usage events) read it. None on stdio and without authentication.
"""

from __future__ import annotations

from contextvars import ContextVar

current_caller: ContextVar[str | None] = ContextVar("skillshelf_caller", default=None)
