"""`skillshelf db status`: where the database is (its URL without the password), whether it answers,
and its schema version against the one this skillshelf knows. Read-only: it never migrates."""

from __future__ import annotations

from typing import Any

from skillshelf.state.postgres.database import Database, connect, reason_of
from skillshelf.state.postgres.driver import psycopg
from skillshelf.state.postgres.schema import LATEST, schema_version
from skillshelf.state.postgres.url import redacted


def database_status(url: str) -> dict[str, Any]:
    status: dict[str, Any] = {"database": redacted(url), "latest": LATEST, "reachable": False, "schemaVersion": None}
    try:
        with connect(url) as conn:
            status["schemaVersion"] = schema_version(conn)
            status["server"] = conn.info.parameter_status("server_version")
    except psycopg.Error as exc:
        status["error"] = reason_of(exc, url)
        return status
    status["reachable"] = True
    return status


def migrate_now(url: str) -> dict[str, Any]:
    """`skillshelf db migrate`: the schema brought up to date now; its version before (None: the database
    did not answer then) and after. StateUnavailable naming the URL when it does not answer."""
    try:
        with connect(url) as conn:
            before: int | None = schema_version(conn)
    except psycopg.OperationalError:
        before = None  # opening it below says why, naming the URL
    shared = Database(url)
    try:
        version = shared.start()
    finally:
        shared.close()
    return {"database": shared.shown, "before": before, "schemaVersion": version}
