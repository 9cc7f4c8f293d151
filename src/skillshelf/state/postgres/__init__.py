"""The PostgreSQL backend (`database_url` = postgresql://...): usage events (usage.py), memory notes
(notes.py) and the call log (calllog.py) in one shared database, so every replica sees the same ones.
They share the URL and its redaction (url.py), one connection pool per database and process
(database.py) and the versioned schema (schema.py). psycopg, the optional `postgres` extra, is imported
only through driver.py, and only once a store is used: this module imports none of them at the top."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from skillshelf.state.postgres.url import check_database_url

if TYPE_CHECKING:
    from skillshelf.state.postgres.calllog import PostgresCallLogStore
    from skillshelf.state.postgres.notes import PostgresNotes
    from skillshelf.state.postgres.usage import PostgresUsage


def check_url(url: str) -> str:
    return check_database_url(url)


def open_backend(url: str | None) -> PostgresStores:
    assert url is not None  # a scheme named this backend
    return PostgresStores(url)


class PostgresStores:
    shared = True

    def __init__(self, url: str) -> None:
        self.url = url

    def start(self) -> str | None:
        """Connect and migrate now; StateUnavailable naming the URL (without its password) when it does not answer."""
        from skillshelf.state.postgres.database import database

        return f"PostgreSQL at {database(self.url).shown}"

    def health(self) -> dict[str, Any] | None:
        from skillshelf.state.postgres.health import database_health

        return database_health(self.url)

    def usage(self, embedded_path: Path, busy_timeout: float) -> PostgresUsage:
        from skillshelf.state.postgres.usage import PostgresUsage

        return PostgresUsage(self.url)

    def notes(self) -> PostgresNotes:
        from skillshelf.state.postgres.notes import PostgresNotes

        return PostgresNotes(self.url)

    def call_log(self, path: Path, max_bytes: int) -> PostgresCallLogStore:
        from skillshelf.state.postgres.calllog import PostgresCallLogStore

        return PostgresCallLogStore(self.url, max_bytes)
