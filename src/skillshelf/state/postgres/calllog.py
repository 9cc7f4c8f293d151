"""The call log in the shared PostgreSQL database (`database_url`): one row per call, the same JSON
record as a line of the file. A database that does not answer makes the writer keep the lines and
retry (`RetryLater`); calls never wait on it.

The table keeps what the file keeps: about twice `max_bytes` of records (the file and its `.1`), the
newest. Each store prunes the oldest rows past that after every quarter of `max_bytes` it has written,
so with several replicas the table stays near the bound whichever of them writes."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

from skillshelf.state.calllog import RetryLater
from skillshelf.state.postgres.database import StateUnavailable, database, reason_of
from skillshelf.state.postgres.url import redacted

logger = logging.getLogger(__name__)

PAGE = 5000  # records read per query by `records`


# The oldest rows past `keep` bytes of records (newest first) go; the row where the sum crosses it too.
PRUNE_SQL = """DELETE FROM call_log WHERE id <= (
    SELECT id FROM (SELECT id, sum(octet_length(record::text)) OVER (ORDER BY id DESC) AS newer FROM call_log) sized
    WHERE newer > %s ORDER BY id DESC LIMIT 1)"""


class PostgresCallLogStore:
    def __init__(self, url: str, max_bytes: int) -> None:
        self.url = url
        self.keep_bytes = 2 * max_bytes  # as much as the file and its `.1` hold
        self._prune_every = max(1, max_bytes // 4)
        self._written = 0  # bytes appended since the last prune

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
        self._written += sum(len(line) for line in lines)
        if self._written >= self._prune_every:
            self._prune()

    def _prune(self) -> None:
        """Drop the oldest records past `keep_bytes`; a database gone meanwhile only delays it. Never raises:
        the records are stored already, and the writer would offer them again."""
        try:
            with database(self.url).connection("pruning the call log") as conn:
                conn.execute(PRUNE_SQL, (self.keep_bytes,))
        except StateUnavailable:
            return
        except Exception as exc:  # pruning only bounds the table: try again after the next quarter
            logger.warning(
                "call log %s could not be pruned (%s); trying again later", self.where, reason_of(exc, self.url)
            )
            self._written = 0
            return
        self._written = 0

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
