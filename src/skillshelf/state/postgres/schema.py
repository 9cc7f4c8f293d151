"""The shared database's schema: numbered migrations, applied on start under an advisory lock.

`migrate` takes a transaction-scoped advisory lock first, so when several replicas start at once
one applies the missing migrations and the others wait, then find nothing left to do. Each migration
and its row in `skillshelf_schema` commit together: a crash leaves the schema at a whole version.
A database migrated by a newer skillshelf is refused, never written with an older idea of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from skillshelf.errors import ErrorCode, SkillshelfError

if TYPE_CHECKING:
    import psycopg

LOCK_KEY = 0x736B696C6C736866  # "skillshf": the advisory lock every skillshelf migration takes
VERSION_TABLE = "skillshelf_schema"

_V1 = """
CREATE TABLE usage_events (
    id bigserial PRIMARY KEY,
    pattern_id text NOT NULL,
    project text,
    note text,
    source text NOT NULL,
    at text NOT NULL,
    author text,
    import_key text UNIQUE
);
CREATE INDEX usage_events_pattern ON usage_events (pattern_id, at);
CREATE TABLE memory_notes (
    seq bigserial PRIMARY KEY,
    project text NOT NULL,
    id text NOT NULL,
    type text NOT NULL,
    content text NOT NULL,
    tags text[] NOT NULL DEFAULT '{}',
    stamp text NOT NULL,
    at_epoch double precision NOT NULL,
    author text,
    UNIQUE (project, id)
);
CREATE INDEX memory_notes_project ON memory_notes (project, at_epoch DESC, seq DESC);
CREATE TABLE call_log (
    id bigserial PRIMARY KEY,
    record jsonb NOT NULL
);
"""

# One word per idea (issue 32): a usage event's skill is `skill_id`, as everywhere else in the code.
_V2 = """
ALTER TABLE usage_events RENAME COLUMN pattern_id TO skill_id;
ALTER INDEX usage_events_pattern RENAME TO usage_events_skill;
"""

# (version, what it does, SQL). Only ever appended to: a released migration never changes.
MIGRATIONS: tuple[tuple[int, str, str], ...] = (
    (1, "usage events, memory notes, call log", _V1),
    (2, "usage_events.pattern_id renamed skill_id", _V2),
)
LATEST = MIGRATIONS[-1][0]


class SchemaTooNew(SkillshelfError):
    def __init__(self, found: int) -> None:
        super().__init__(
            ErrorCode.STATE_UNAVAILABLE,
            f"The database's skillshelf schema is version {found}, newer than this skillshelf knows ({LATEST}): "
            "upgrade skillshelf on this machine to the version the other servers run.",
        )


def migrate(conn: psycopg.Connection[Any]) -> int:
    """Bring the schema to LATEST (idempotent; safe when several processes run it at once)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
        conn.execute(
            f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version integer PRIMARY KEY, "
            "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = _version(conn)
        if current > LATEST:
            raise SchemaTooNew(current)
        for version, description, sql in MIGRATIONS:
            if version > current:
                conn.execute(sql.encode())
                conn.execute(
                    f"INSERT INTO {VERSION_TABLE} (version, description) VALUES (%s, %s)", (version, description)
                )
    return max(current, LATEST)


def schema_version(conn: psycopg.Connection[Any]) -> int:
    """The version the database is at (0: never migrated), without changing anything."""
    found = conn.execute("SELECT to_regclass(%s)", (VERSION_TABLE,)).fetchone()
    if found is None or found[0] is None:
        return 0
    return _version(conn)


def _version(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(f"SELECT coalesce(max(version), 0) FROM {VERSION_TABLE}").fetchone()
    return int(row[0]) if row else 0


def health_report(shown: str, version: int | None, error: str | None = None) -> dict[str, Any]:
    """The report for the database at `shown` (its URL without the password): unreachable with `error`, else
    whether the schema `version` it holds is the one this skillshelf runs."""
    found: dict[str, Any] = {"url": shown, "schemaVersion": version, "schemaLatest": LATEST}
    if error is not None:
        return {**found, "state": "unreachable", "error": error}
    return {**found, "state": "ok" if version == LATEST else "schema-differs"}
