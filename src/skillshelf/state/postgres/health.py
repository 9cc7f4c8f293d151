"""The database's part of `/health`: what a proxy or an operator needs to see about the shared state."""

from __future__ import annotations

from typing import Any

from skillshelf.errors import SkillshelfError
from skillshelf.state.postgres.schema import health_report
from skillshelf.state.postgres.url import redacted


def database_health(url: str) -> dict[str, Any]:
    """`{"url" (no password), "state": "ok" | "unreachable" | "schema-differs", "schemaVersion", "schemaLatest"}`;
    never raises: a database that cannot even be opened is "unreachable", with the reason."""
    from skillshelf.state.postgres.database import database

    try:
        return database(url).health()
    except SkillshelfError as exc:
        return health_report(redacted(url), None, exc.message)
