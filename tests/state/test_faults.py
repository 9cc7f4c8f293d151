"""PostgreSQL stopped while in use: calls that need it fail with STATE_UNAVAILABLE (retryable, naming the
database without its password), nothing crashes, nothing the call log held is lost, and everything
works again once PostgreSQL is back, without restarting anything. Each test has a cluster of its own,
which it stops and starts for real."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import pytest
from mcp import Client

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.index.library import SkillLibrary
from skillshelf.library.usage.store import UsageUnavailable
from skillshelf.memory.service import add_note, get_notes
from skillshelf.projects import ProjectRoots
from skillshelf.server.app import build_server
from skillshelf.server.calllog import CallRecord, open_call_log
from skillshelf.settings import resolve_settings
from skillshelf.state.postgres.database import database
from skillshelf.state.postgres.notes import PostgresNotes
from skillshelf.state.postgres.usage import PostgresUsage
from tests.conftest import call, deadline
from tests.postgres_support import PostgresCluster

T = TypeVar("T")
PASSWORD = "s3cret-pw"
CALL = CallRecord("loadSkill", "default", "alice", 2.0, True, None, 30, 900, skill="python/slugify")


def shared_url(cluster: PostgresCluster) -> str:
    return cluster.create_database("shelf").replace("skillshelf@", f"skillshelf:{PASSWORD}@", 1)


def assert_retryable(exc: SkillshelfError, doing: str) -> None:
    assert exc.code is ErrorCode.STATE_UNAVAILABLE and exc.details == {"retryable": True}
    assert "PostgreSQL at postgresql://skillshelf:***@127.0.0.1:" in exc.message
    assert f"{doing} was not done" in exc.message and "Try again" in exc.message
    assert PASSWORD not in exc.message


def test_stores_fail_clearly_while_postgresql_is_down_and_recover_when_it_is_back(
    own_cluster: PostgresCluster, tmp_path: Path
) -> None:
    url = shared_url(own_cluster)
    (tmp_path / "dev" / "app").mkdir(parents=True)
    roots = ProjectRoots.of([tmp_path / "dev"])
    usage, notes = PostgresUsage(url), PostgresNotes(url)
    usage.record("python/slugify", "app", None, "tool")
    add_note(roots, "app", "decision", "Before the restart", None, notes)

    own_cluster.stop()
    with pytest.raises(UsageUnavailable) as refused:
        usage.record("python/slugify", "web", None, "tool")
    assert_retryable(refused.value, "recording this use of python/slugify")
    # The first call of the outage found its pooled connection dead and asked the server at once, rather
    # than queueing in the pool for a fresh connection until the pool's timeout.
    pool = database(url)._pool
    assert pool is not None and pool.get_stats().get("requests_errors", 0) == 0
    with pytest.raises(UsageUnavailable) as refused:
        usage.usage()
    assert "Connection refused" in refused.value.message  # asked at once, not after waiting in the pool's queue
    with pytest.raises(SkillshelfError) as refused_note:
        add_note(roots, "app", "blocker", "During the restart", None, notes)
    assert_retryable(refused_note.value, "storing this note of app")

    own_cluster.start()  # every call from now on succeeds, while the pool is still backing off
    usage.record("python/slugify", "web", None, "tool")
    assert [(u.uses, u.projects) for u in usage.usage()] == [(2, ["app", "web"])]
    add_note(roots, "app", "blocker", "After the restart", None, notes)
    assert [n.content for n in get_notes(roots, "app", notes=notes).notes] == [
        "After the restart",
        "Before the restart",
    ]
    usage.close()


def test_call_records_written_while_postgresql_is_down_are_kept_and_written_once_it_is_back(
    own_cluster: PostgresCluster,
) -> None:
    env = {"SKILLSHELF_DATABASE_URL": shared_url(own_cluster)}
    log = open_call_log(resolve_settings(env=env))
    assert log is not None
    log.write(CALL)
    assert log.flush(deadline())
    own_cluster.stop()
    for _ in range(5):
        log.write(CALL)  # never waits, never fails: the writer keeps them
    own_cluster.start()
    assert log.flush(deadline()), "the call log did not write its records once PostgreSQL was back"
    log.close()
    assert len(list(log.store.records())) == 6 and log.dropped == 0


def test_records_still_held_when_the_server_stops_are_counted_and_logged_not_silently_lost(
    own_cluster: PostgresCluster, caplog: pytest.LogCaptureFixture
) -> None:
    log = open_call_log(resolve_settings(env={"SKILLSHELF_DATABASE_URL": shared_url(own_cluster)}))
    assert log is not None
    own_cluster.stop()
    log.write(CALL)
    log.write(CALL)
    with caplog.at_level("ERROR", logger="skillshelf.server.calllog"):
        log.close()
    assert log.dropped == 2
    assert any("2 call records were not written" in r.getMessage() for r in caplog.records)
    assert all(PASSWORD not in r.getMessage() for r in caplog.records)


@pytest.mark.anyio
async def test_tools_answer_with_a_retryable_error_while_postgresql_is_down_and_work_again_after(
    own_cluster: PostgresCluster, sample_root: Path, tmp_path: Path
) -> None:
    (tmp_path / "dev" / "app").mkdir(parents=True)
    env = {"SKILLSHELF_DATABASE_URL": shared_url(own_cluster), "SKILLSHELF_PROJECTS": str(tmp_path / "dev")}
    settings = resolve_settings([sample_root], env=env)
    library = SkillLibrary(settings.library_config())
    track: dict[str, Any] = {"patternId": "python/slugify", "projectPath": "app"}
    note: dict[str, Any] = {"projectPath": "app", "type": "decision", "content": "Shared"}
    try:
        async with Client(build_server(settings, library, view="full"), raise_exceptions=True) as client:
            is_error, body = await call(client, "trackPatternUsage", track)
            assert not is_error, body
            own_cluster.stop()
            for tool, arguments in (("trackPatternUsage", track), ("addNote", note)):
                is_error, body = await call(client, tool, arguments)
                assert is_error and body["error"]["code"] == "STATE_UNAVAILABLE", (tool, body)
                assert PASSWORD not in str(body)
            is_error, body = await call(client, "searchPatterns", {"query": "slugify"})
            assert not is_error and any("Usage counts are left out" in w for w in body["data"]["warnings"])
            own_cluster.start()
            is_error, body = await call(client, "trackPatternUsage", track)
            assert not is_error and body["data"]["uses"] == 2, body
            is_error, body = await call(client, "addNote", note)
            assert not is_error, body
    finally:
        library.close()


@pytest.mark.anyio
async def test_health_says_whether_postgresql_answers_and_which_schema_it_holds(
    own_cluster: PostgresCluster, sample_root: Path
) -> None:
    """What a proxy's health check or an operator reads: a replica that lost its database shows it."""
    import httpx2

    from skillshelf.state.postgres.schema import LATEST

    settings = resolve_settings([sample_root], env={"SKILLSHELF_DATABASE_URL": shared_url(own_cluster)})
    library = SkillLibrary(settings.library_config())

    async def health() -> dict[str, Any]:
        app = build_server(settings, library).http_app()
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            found: dict[str, Any] = (await http.get("/health")).json()
        assert PASSWORD not in str(found)
        return found

    try:
        up = (await health())["database"]
        assert up["state"] == "ok" and up["schemaVersion"] == up["schemaLatest"] == LATEST
        assert up["url"].startswith("postgresql://skillshelf:***@127.0.0.1:")
        own_cluster.stop()
        down = (await health())["database"]
        assert down["state"] == "unreachable" and down["schemaVersion"] is None and down["error"]
        own_cluster.start()
        assert (await health())["database"]["state"] == "ok"
        embedded = resolve_settings([sample_root], env={})
        app = build_server(embedded, library).http_app()
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            assert "database" not in (await http.get("/health")).json()  # the embedded files: nothing to report
    finally:
        library.close()
