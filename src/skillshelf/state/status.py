"""`skillshelf db status`: where the database is (its URL without the password), whether it answers,
and its schema version against the one this skillshelf knows. Read-only: it never migrates."""

from __future__ import annotations

from typing import Any

import psycopg

from skillshelf.state.database import CONNECT_TIMEOUT_S, Database
from skillshelf.state.schema import LATEST, schema_version


def database_status(url: str) -> dict[str, Any]:
    shown = Database(url)
    status: dict[str, Any] = {"database": shown.shown, "latest": LATEST, "reachable": False, "schemaVersion": None}
    try:
        with psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S) as conn:
            status["schemaVersion"] = schema_version(conn)
            status["server"] = conn.info.parameter_status("server_version")
    except psycopg.Error as exc:
        status["error"] = shown.reason(exc)
        return status
    status["reachable"] = True
    return status
