"""The `UsageEvents` interface every usage store implements.

The embedded store (store.py: SQLite beside the index) is the default, for a personal library; with
`database_url` set to a PostgreSQL URL the events live in the shared database (state/postgres/usage.py),
where every replica records to and counts from the same history. `state.open_stores` picks one; the
library is given the opener (`LibraryConfig.open_usage`).
"""

from __future__ import annotations

from typing import Protocol

from skillshelf.library.usage.store import SkillUsage


class UsageEvents(Protocol):
    """Usage events: recorded one at a time, read as totals. Every failure is `UsageUnavailable`."""

    @property
    def warning(self) -> str | None:
        """Said with every answer while the history can only be read in part (None: it is whole)."""

    def record(self, skill_id: str, project: str | None, note: str | None, source: str) -> str:
        """Record one use (its author: the current caller); the time recorded, ISO 8601 UTC."""

    def usage(self, skill_id: str | None = None) -> list[SkillUsage]:
        """Uses per skill (of one skill, or of all)."""

    def daily_uses(self) -> list[tuple[str, str, int]]:
        """(UTC day 'YYYY-MM-DD', skill id, uses that day), oldest day first."""

    def verified_by_use(self) -> frozenset[str]:
        """Skills used from at least three distinct projects."""

    def close(self) -> None:
        """Final: later calls fail with UsageUnavailable."""
