"""One PostgreSQL cluster for the whole session (started once), and a fresh database per test."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

import pytest

from skillshelf.state.postgres.database import close_databases
from tests.postgres_support import PostgresCluster

_numbers = itertools.count()


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    yield from _running_cluster()


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> Iterator[str]:
    """A fresh, empty database of the session's cluster; dropped after the test."""
    name = f"test_{next(_numbers)}"
    url = postgres_cluster.create_database(name)
    try:
        yield url
    finally:
        close_databases()
        postgres_cluster.drop_database(name)


@pytest.fixture
def own_cluster() -> Iterator[PostgresCluster]:
    """A cluster of this test alone, for tests that stop and start it."""
    yield from _running_cluster()


def _running_cluster() -> Iterator[PostgresCluster]:
    reason = PostgresCluster.unavailable_reason()
    if reason is not None:
        pytest.skip(f"no PostgreSQL server can be started here: {reason}")
    cluster = PostgresCluster.create()
    try:
        cluster.start()
        yield cluster
    finally:
        close_databases()
        with contextlib.suppress(RuntimeError):  # a test may leave it stopped
            cluster.stop()
        cluster.remove()
