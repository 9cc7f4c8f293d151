"""What a call log store is (calllog.py writes to one): the file, or the shared database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class RetryLater(Exception):
    """A store could not take these lines now but may later (its database is restarting): keep them."""


class CallLogStore(Protocol):
    """Where call log lines go and are read back from."""

    @property
    def where(self) -> str:
        """What to name in messages: the file, or the database (its URL without a password)."""

    def append(self, lines: list[bytes]) -> None:
        """Store these JSON lines, oldest first; `RetryLater` to have them offered again."""

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record stored, oldest first."""
