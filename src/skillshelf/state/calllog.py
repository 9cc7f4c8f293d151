"""What a call log store is (server/calllog.py's writer hands it lines): the JSONL file (state/files/calllog.py) or
the shared database (state/postgres/calllog.py); `state.open_stores` gives the one `database_url` names. Here, not
in server/, so each backend package can implement it without importing the server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class RetryLater(Exception):
    """A store could not take these lines now but may later (its database is restarting): keep them."""


class StoreFailed(Exception):
    """A store could not take these lines and will not later (its disk failed); it has said why in the log
    already. The writer counts them as dropped and shows the failure in /health."""


class CallLogStore(Protocol):
    """Where call log lines go and are read back from."""

    @property
    def where(self) -> str:
        """What to name in messages: the file, or the database (its URL without a password)."""

    def append(self, lines: list[bytes]) -> None:
        """Store these JSON lines, oldest first; `RetryLater` to have them offered again, `StoreFailed` when
        they are lost. Any other exception is taken as a line the store cannot hold: the writer offers the
        lines again one by one and drops only those that still fail."""

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record stored, oldest first."""
