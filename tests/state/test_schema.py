"""The versioned schema: created on first use, idempotent, and safe when several processes start at once."""

from __future__ import annotations

import subprocess
import sys
import threading

import psycopg
import pytest

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.state.postgres.database import database
from skillshelf.state.postgres.schema import LATEST, MIGRATIONS, VERSION_TABLE, migrate, schema_version
from skillshelf.state.postgres.usage import PostgresUsage
from tests.conftest import deadline


def versions(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        return [row[0] for row in conn.execute(f"SELECT version FROM {VERSION_TABLE} ORDER BY version")]


def test_first_use_creates_the_schema_and_a_second_migration_changes_nothing(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert schema_version(conn) == 0
        assert migrate(conn) == LATEST
        assert migrate(conn) == LATEST
        assert schema_version(conn) == LATEST
    assert versions(postgres_url) == [version for version, _, _ in MIGRATIONS]


def test_threads_migrating_at_the_same_moment_all_succeed_and_apply_each_migration_once(postgres_url: str) -> None:
    """Without the advisory lock, concurrent CREATE TABLEs collide (duplicate key in pg_type)."""
    count = 6
    connections = [psycopg.connect(postgres_url, autocommit=True) for _ in range(count)]
    start = threading.Barrier(count)
    results: list[int | BaseException] = []

    def run(conn: psycopg.Connection[tuple[object, ...]]) -> None:
        start.wait(deadline())
        try:
            results.append(migrate(conn))
        except BaseException as exc:  # reported below, with the others
            results.append(exc)

    threads = [threading.Thread(target=run, args=(conn,)) for conn in connections]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(deadline())
    for conn in connections:
        conn.close()
    assert results == [LATEST] * count
    assert versions(postgres_url) == [version for version, _, _ in MIGRATIONS]


def test_servers_starting_at_once_in_separate_processes_migrate_once(postgres_url: str) -> None:
    script = "import sys; from skillshelf.state.postgres.database import database; database(sys.argv[1])"
    processes = [
        subprocess.Popen([sys.executable, "-c", script, postgres_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    outcomes = [process.communicate(timeout=deadline()) for process in processes]
    assert [p.returncode for p in processes] == [0] * 4, outcomes
    assert versions(postgres_url) == [version for version, _, _ in MIGRATIONS]


def test_a_schema_newer_than_this_skillshelf_is_refused_saying_to_upgrade(postgres_url: str) -> None:
    database(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {VERSION_TABLE} (version, description) VALUES (%s, 'from the future')", (LATEST + 1,)
        )
        with pytest.raises(SkillshelfError, match="upgrade skillshelf") as refused:
            migrate(conn)
    assert refused.value.code is ErrorCode.STATE_UNAVAILABLE


def test_a_version_1_database_naming_the_skill_pattern_id_keeps_every_event_and_new_ones_land(
    postgres_url: str,
) -> None:
    """Migration 2 renames usage_events.pattern_id to skill_id (issue 32) in place: no event is lost."""
    (version, description, sql) = MIGRATIONS[0]
    with psycopg.connect(postgres_url, autocommit=True) as conn:  # the database as version 1 left it
        conn.execute(sql.encode())
        conn.execute(f"CREATE TABLE {VERSION_TABLE} (version integer PRIMARY KEY, description text NOT NULL, "
                     "applied_at timestamptz NOT NULL DEFAULT now())")  # fmt: skip
        conn.execute(f"INSERT INTO {VERSION_TABLE} (version, description) VALUES (%s, %s)", (version, description))
        for skill, project in [("a/b", "p1"), ("a/b", "p2"), ("a/b", "p3"), ("c/d", None)]:
            conn.execute(
                "INSERT INTO usage_events (pattern_id, project, source, at) VALUES (%s, %s, 'tool', '2026-01-01')",
                (skill, project),
            )
    usage = PostgresUsage(postgres_url)
    try:
        assert {u.skill_id: u.uses for u in usage.usage()} == {"a/b": 3, "c/d": 1}
        assert usage.verified_by_use() == frozenset({"a/b"})
        usage.record("c/d", "p1", None, "tool")
        assert {u.skill_id: u.uses for u in usage.usage()} == {"a/b": 3, "c/d": 2}
    finally:
        usage.close()
    assert versions(postgres_url) == [version for version, _, _ in MIGRATIONS]
    with psycopg.connect(postgres_url) as conn:
        columns = {row[0] for row in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'usage_events'"
        )}  # fmt: skip
        assert "skill_id" in columns and "pattern_id" not in columns
