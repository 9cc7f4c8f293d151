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
