"""One PostgreSQL database per URL and process: a psycopg connection pool, opened (and the schema
migrated) on first use, and the one place where driver errors become `StateUnavailable`.

A database that does not answer (stopped, restarting, unreachable) fails the call that needed it with
STATE_UNAVAILABLE, a retryable error naming the URL without its password; nothing is half-written,
since every write is one statement or one transaction. The pool checks each connection before lending
it, so once PostgreSQL is back the next call simply works: no restart of the server is needed.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.state.postgres.driver import ConnectionPool, conninfo_to_dict, psycopg
from skillshelf.state.postgres.schema import health_report, migrate, schema_version
from skillshelf.state.postgres.url import MASK, redacted

logger = logging.getLogger(__name__)

POOL_MAX = 8  # connections per process: calls run in worker threads, a few at a time
CONNECT_TIMEOUT_S = 5  # a host that does not answer fails a call after this, not after minutes
WAIT_S = 5.0  # the longest a call waits for a connection of the pool (PostgreSQL down: the call fails then)


class StateUnavailable(SkillshelfError):
    """The shared database did not answer: nothing was stored; the same call may be made again."""

    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.STATE_UNAVAILABLE, message, details={"retryable": True})


class Database:
    """A PostgreSQL database: `connection()` lends a pooled connection (autocommit)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.shown = redacted(url)
        self.pid = os.getpid()  # a forked child opens its own: a pool's threads do not survive fork
        self._down = False  # the last call could not reach the database
        self._pool: ConnectionPool[psycopg.Connection[Any]] | None = None  # made by start()

    def start(self) -> int:
        """Connect once (a clear error now rather than a pool retrying quietly), migrate the schema, then
        open the pool. The schema version; StateUnavailable naming the URL when PostgreSQL is unreachable."""
        try:
            with connect(self.url) as conn:
                version = migrate(conn)
        except psycopg.OperationalError as exc:
            raise StateUnavailable(
                f"PostgreSQL at {self.shown} is unreachable: {self.reason(exc)}. Start it, or correct "
                "database_url (SKILLSHELF_DATABASE_URL, --database-url); unset it to use the embedded files."
            ) from exc
        self._pool = ConnectionPool(
            self.url,
            min_size=1,
            max_size=POOL_MAX,
            timeout=WAIT_S,
            kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
            name="skillshelf",  # no `check`: `_pooled` checks each connection it lends (see there)
            open=True,  # now, filling itself in the background
        )
        return version

    @contextmanager
    def connection(self, doing: str) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for `doing` (e.g. "recording this use"): a lost server becomes
        StateUnavailable saying what was not done; a value PostgreSQL cannot hold, VALIDATION_ERROR."""
        try:
            with self._lend() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise StateUnavailable(
                f"PostgreSQL at {self.shown} is unavailable ({self.reason(exc)}): {doing} was not done. "
                "Try again in a moment: the server reconnects by itself once the database answers."
            ) from exc
        except psycopg.DataError as exc:
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR, f"PostgreSQL cannot store this: {self.reason(exc)}; {doing} was not done."
            ) from exc

    @contextmanager
    def _lend(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool, or a direct one while the pool has none to give after the database was
        found down: then each call fails at once with the server's own reason (not after WAIT_S in the
        pool's queue), and once it is back calls succeed at once, while the pool refills in the background
        at its own (backing off) pace."""
        pool, conn = self._pool, self._pooled()
        if pool is None or conn is None:
            with connect(self.url) as direct:
                yield direct
            return
        try:
            yield conn
            self._down = False
        except psycopg.OperationalError:
            self._down = True  # lost mid-call: the next call asks the server directly
            raise
        finally:
            pool.putconn(conn)  # a broken one is discarded and replaced by the pool

    def _pooled(self) -> psycopg.Connection[Any] | None:
        """A live connection of the pool, or None (the database found down: `_down` says so).

        Each is checked here, not by the pool: the pool's own check, on finding one dead (the server
        restarted), waits up to WAIT_S for a fresh one, so the first call of an outage took 5 s to fail."""
        pool = self._pool
        if pool is None or (self._down and pool.get_stats().get("pool_available", 0) == 0):
            return None
        try:
            conn = pool.getconn()
        except psycopg.OperationalError:  # PoolTimeout: none within WAIT_S
            self._down = True
            return None
        try:
            ConnectionPool.check_connection(conn)
        except psycopg.OperationalError:
            pool.putconn(conn)  # the pool discards it and makes another
            self._down = True
            return None
        return conn

    def reason(self, exc: Exception) -> str:
        return reason_of(exc, self.url)

    def health(self) -> dict[str, Any]:
        """For /health: whether PostgreSQL answers now and the schema version it holds against the one this
        skillshelf runs, so an operator or a proxy sees a replica that lost its database or drifted."""
        try:
            with self._lend() as conn:
                version = schema_version(conn)
        except psycopg.Error as exc:
            return health_report(self.shown, None, self.reason(exc))
        return health_report(self.shown, version)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()


def connect(url: str) -> psycopg.Connection[Any]:
    """A connection of its own (autocommit), failing after CONNECT_TIMEOUT_S rather than minutes."""
    return psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)


def reason_of(exc: Exception, url: str) -> str:
    """The driver's message, first line, with the password masked should a message ever hold it."""
    text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    password = _password_of(url)
    return text.replace(password, MASK) if password else text


def _password_of(url: str) -> str | None:
    try:
        found = conninfo_to_dict(url).get("password")
    except psycopg.ProgrammingError:
        return None
    return str(found) if found else None


_databases: dict[str, Database] = {}
_databases_lock = threading.Lock()


def database(url: str) -> Database:
    """The open database of `url` in this process, opened (and migrated) on first use. StateUnavailable
    when it cannot be opened; the next call tries again."""
    with _databases_lock:
        found = _databases.get(url)
        if found is None or found.pid != os.getpid():
            found = Database(url)
            found.start()
            _databases[url] = found
        return found


def close_databases() -> None:
    """Close every pool of this process (at exit, and between tests)."""
    with _databases_lock:
        opened = [db for db in _databases.values() if db.pid == os.getpid()]
        _databases.clear()
    for db in opened:
        db.close()


atexit.register(close_databases)
