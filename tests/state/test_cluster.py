"""The test cluster itself: it starts, and each test gets a database of its own."""

from __future__ import annotations

import psycopg
import pytest

from tests import postgres_support


def test_each_test_gets_an_empty_database_of_its_own(postgres_url: str) -> None:
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
    assert tables == (0,)


def test_without_the_binaries_the_reason_to_skip_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres_support, "find_binaries", lambda: None)
    reason = postgres_support.PostgresCluster.unavailable_reason()
    assert reason is not None and "apt-get install postgresql" in reason
