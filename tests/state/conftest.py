"""One PostgreSQL cluster for the whole session (started once), and a fresh database per test."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator

import pytest

from skillshelf.state.postgres.database import close_databases
from tests.conftest import built_once
from tests.postgres_support import PostgresCluster

_numbers = itertools.count()


@pytest.fixture(scope="session")
def postgres_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresCluster]:
    yield from _running_cluster(tmp_path_factory)


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> Iterator[str]:
    """A fresh, empty database of the session's cluster; dropped after the test."""
    with fresh_database(postgres_cluster) as url:
        yield url


@pytest.fixture(scope="module")
def shared_postgres_url(postgres_cluster: PostgresCluster) -> Iterator[str]:
    """`postgres_url` once per module, for module-scoped servers whose tests only read (or add
    records no other test of the module counts)."""
    with fresh_database(postgres_cluster) as url:
        yield url


@contextlib.contextmanager
def fresh_database(cluster: PostgresCluster) -> Iterator[str]:
    name = f"test_{next(_numbers)}"
    url = cluster.create_database(name)
    try:
        yield url
    finally:
        close_databases()
        cluster.drop_database(name)


@pytest.fixture
def own_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresCluster]:
    """A cluster of this test alone, for tests that stop and start it."""
    yield from _running_cluster(tmp_path_factory)


def _running_cluster(factory: pytest.TempPathFactory) -> Iterator[PostgresCluster]:
    """A cluster started on a copy of the run's one `initdb` (`built_once`: seconds each, several clusters)."""
    reason = PostgresCluster.unavailable_reason()
    if reason is not None:
        pytest.skip(f"no PostgreSQL server can be started here: {reason}")
    cluster = PostgresCluster.create(built_once(factory, "postgres-data", PostgresCluster.initdb_template))
    try:
        cluster.start()
        yield cluster
    finally:
        close_databases()
        with contextlib.suppress(RuntimeError):  # a test may leave it stopped
            cluster.stop()
        cluster.remove()
