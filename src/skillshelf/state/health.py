"""The database's part of `/health`: what a proxy or an operator needs to see about the shared state."""

from __future__ import annotations

from typing import Any

from skillshelf.errors import SkillshelfError
from skillshelf.state.schema import LATEST
from skillshelf.state.url import redacted


def database_health(url: str) -> dict[str, Any]:
    """`{"url" (no password), "state": "ok" | "unreachable" | "schema-differs", "schemaVersion", "schemaLatest"}`;
    never raises: a database that cannot even be opened is "unreachable", with the reason."""
    from skillshelf.state.database import database

    try:
        return database(url).health()
    except SkillshelfError as exc:
        return health_report(redacted(url), None, exc.message)


def health_report(shown: str, version: int | None, error: str | None = None) -> dict[str, Any]:
    """The report for the database at `shown` (its URL without the password): unreachable with `error`, else
    whether the schema `version` it holds is the one this skillshelf runs."""
    if error is not None:
        state = "unreachable"
    else:
        state = "ok" if version == LATEST else "schema-differs"
    found: dict[str, Any] = {"url": shown, "state": state, "schemaVersion": version, "schemaLatest": LATEST}
    if error is not None:
        found["error"] = error
    return found
