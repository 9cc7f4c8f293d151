"""The call log in the shared PostgreSQL database (`database_url`): one row per call, the same JSON
record as a line of the file. A database that does not answer makes the writer keep the lines and
retry (`RetryLater`); calls never wait on it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from skillshelf.server.calllog_store import RetryLater
from skillshelf.state.database import StateUnavailable, database
from skillshelf.state.url import redacted

PAGE = 5000  # records read per query by `records`


class PostgresCallLogStore:
    def __init__(self, url: str) -> None:
        self.url = url

    @property
    def where(self) -> str:
        return redacted(self.url)

    def append(self, lines: list[bytes]) -> None:
        try:
            with database(self.url).connection(f"logging {len(lines)} calls") as conn, conn.transaction():
                conn.cursor().executemany(
                    "INSERT INTO call_log (record) VALUES (%s::jsonb)", [(line.decode("utf-8"),) for line in lines]
                )
        except StateUnavailable as exc:
            raise RetryLater(exc.message) from exc

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record, oldest first, a page at a time (no connection is held between pages)."""
        after = 0
        while True:
            with database(self.url).connection("reading the call log") as conn:
                rows = conn.execute(
                    "SELECT id, record::text FROM call_log WHERE id > %s ORDER BY id LIMIT %s", (after, PAGE)
                ).fetchall()
            for row_id, text in rows:
                after = int(row_id)
                record = json.loads(text)
                if isinstance(record, dict) and isinstance(record.get("tool"), str):
                    yield record
            if len(rows) < PAGE:
                return
