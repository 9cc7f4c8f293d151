"""The session index on real SQLite: ranking, filters, freshness, rebuild on damage, path safety."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from skillshelf.artifacts import service
from skillshelf.artifacts.archive import SessionArchive, index_path_for
from skillshelf.artifacts.index import SCHEMA_VERSION, SessionRef
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.projects import ProjectRoots
from tests.artifacts.conftest import session_file, session_json, set_mtime
from tests.conftest import wait_until_async


def ids(archive: SessionArchive, query: str, **options: object) -> list[str]:
    result = service.search_artifacts(archive, query, **options)  # type: ignore[arg-type]
    return [hit.session_id for hit in result.hits]


def open_archive(dev: Path, tmp_path: Path, *, watch: bool = False) -> SessionArchive:
    return SessionArchive(ProjectRoots.of([dev]), index_dir=tmp_path / "index", watch=watch)


def test_search_ranks_sessions_and_returns_compact_hits(archive: SessionArchive) -> None:
    result = service.search_artifacts(archive, "jwt refresh tokens")
    hit = result.hits[0]
    assert (hit.project, hit.session_id, hit.date) == ("app", "2025-11-05-auth-flow", "2025-11-05")
    assert hit.title == "Auth flow with JWT refresh"
    assert hit.summary == "Implemented login with rotating refresh tokens stored in cookies."
    assert hit.score > 0 and hit.tokens > 50
    assert ids(archive, "token bucket redis")[0] == "2025-09-15-rate-limits"  # from a JSON pack
    assert ids(archive, "invoices webhook")[0] == "2025-10-01-billing"  # flat form, stemmed


def test_a_title_match_outranks_a_body_match_and_newer_sessions_win_ties(dev: Path, tmp_path: Path) -> None:
    session_file(dev / "web", "2025-01-01-zebra-body.md", "# Other\n\nA long note that mentions zebra once.\n")
    session_file(dev / "web", "2024-01-01-zebra-title.md", "# Zebra\n\nCrossing paint.\n")
    session_file(dev / "web", "2025-06-01-twin.md", "# Twin walrus\n\nSame.\n")
    session_file(dev / "web", "2025-07-01-twin.md", "# Twin walrus\n\nSame.\n")
    with open_archive(dev, tmp_path).opened() as archive:
        assert ids(archive, "zebra") == ["2024-01-01-zebra-title", "2025-01-01-zebra-body"]
        assert ids(archive, "walrus") == ["2025-07-01-twin", "2025-06-01-twin"]


def test_an_empty_query_lists_sessions_newest_first(archive: SessionArchive) -> None:
    assert ids(archive, "") == [
        "2025-12-01-cookie-auth",
        "2025-11-05-auth-flow",
        "2025-10-01-billing",
        "2025-09-15-rate-limits",
    ]
    assert ids(archive, "", limit=2) == ["2025-12-01-cookie-auth", "2025-11-05-auth-flow"]


def test_since_and_until_are_inclusive_date_bounds(archive: SessionArchive) -> None:
    assert ids(archive, "", since=dt.date(2025, 10, 1), until=dt.date(2025, 11, 5)) == [
        "2025-11-05-auth-flow",
        "2025-10-01-billing",
    ]
    assert ids(archive, "auth", until=dt.date(2025, 11, 30)) == ["2025-11-05-auth-flow"]
    with pytest.raises(SkillshelfError) as raised:
        service.search_artifacts(archive, "", since=dt.date(2025, 2, 1), until=dt.date(2025, 1, 1))
    assert raised.value.code == ErrorCode.VALIDATION_ERROR


def test_a_project_filter_searches_one_project_and_none_searches_all(archive: SessionArchive, dev: Path) -> None:
    assert set(ids(archive, "cookie auth")) == {"2025-11-05-auth-flow", "2025-12-01-cookie-auth"}
    assert ids(archive, "cookie auth", project="api") == ["2025-12-01-cookie-auth"]
    assert ids(archive, "cookie auth", project=str(dev / "app")) == ["2025-11-05-auth-flow"]
    assert ids(archive, "", project="docs") == []


def test_a_nested_project_named_explicitly_is_indexed(archive: SessionArchive, dev: Path) -> None:
    session_file(dev / "team" / "payments", "2025-08-08-refunds.md", "# Refunds\n\nPartial refunds.\n")
    assert ids(archive, "refunds") == []  # not a direct child of a root
    assert ids(archive, "refunds", project="team/payments") == ["2025-08-08-refunds"]
    assert ids(archive, "refunds") == ["2025-08-08-refunds"]


def test_query_syntax_never_reaches_fts(archive: SessionArchive) -> None:
    for hostile in ['"', "NEAR(", "a OR", "*", "title:jwt", "-x", "'; DROP TABLE sessions; --"]:
        service.search_artifacts(archive, hostile)  # must not raise
    assert archive.index.count() == 4


def test_a_warm_open_reparses_nothing_and_a_change_reparses_only_that_session(dev: Path, tmp_path: Path) -> None:
    first = open_archive(dev, tmp_path)
    assert first.sync().parsed == 4
    first.close()
    archive = open_archive(dev, tmp_path)
    try:
        assert archive.sync().parsed == 0
        path = session_file(dev / "api", "2025-12-01-cookie-auth/session-summary.md", "# Cookie auth\n\nWalrus.\n")
        os.utime(path, ns=(1, 1))  # a different mtime even on coarse clocks
        report = archive.sync()
        assert (report.parsed, report.removed) == (1, 0)
        assert ids(archive, "walrus") == ["2025-12-01-cookie-auth"]
        session_file(dev / "docs", "2025-12-24-new.md", "# Brand new\n\nNarwhal migration.\n")
        assert archive.sync().parsed == 1
        assert ids(archive, "narwhal") == ["2025-12-24-new"]
        path.unlink()
        assert archive.sync().removed == 1 and ids(archive, "walrus") == []
    finally:
        archive.close()


@pytest.mark.anyio
async def test_the_watchers_make_new_sessions_visible_to_the_next_search(dev: Path, tmp_path: Path) -> None:
    archive = open_archive(dev, tmp_path, watch=True)
    archive.start()
    try:
        assert ids(archive, "narwhal") == []
        session_file(dev / "app", "2025-12-24-narwhal.md", "# Narwhal\n\nTusks.\n")
        await wait_until_async(lambda: ids(archive, "narwhal") == ["2025-12-24-narwhal"], "no narwhal session")
        # A project without artifacts is watched shallowly, so its first session shows up too.
        session_file(dev / "docs", "2025-12-25-orca/session-summary.md", "# Orca\n\nPods.\n")
        await wait_until_async(lambda: ids(archive, "orca") == ["2025-12-25-orca"], "no orca session")
    finally:
        archive.close()


def test_watchers_cover_roots_and_artifact_folders_never_whole_project_trees(
    archive: SessionArchive, dev: Path
) -> None:
    plan = archive.watch_plan
    assert set(plan.shallow) == {dev.resolve(), (dev / "docs").resolve()}
    assert set(plan.deep) == {(dev / p / ".agent-artifacts").resolve() for p in ("app", "api")}


def test_a_corrupt_index_file_is_rebuilt(dev: Path, tmp_path: Path) -> None:
    path = index_path_for(ProjectRoots.of([dev]), tmp_path / "index")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 100)
    archive = open_archive(dev, tmp_path)
    try:
        assert archive.sync().parsed == 4
        assert ids(archive, "billing")[0] == "2025-10-01-billing"
    finally:
        archive.close()


def test_an_index_from_an_older_schema_is_rebuilt(dev: Path, tmp_path: Path) -> None:
    path = index_path_for(ProjectRoots.of([dev]), tmp_path / "index")
    path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE sessions(key TEXT)")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    archive = open_archive(dev, tmp_path)
    try:
        assert archive.sync().parsed == 4
    finally:
        archive.close()


def test_the_index_lives_in_the_user_cache_keyed_by_the_project_roots(dev: Path, isolated_environment: Path) -> None:
    archive = SessionArchive(ProjectRoots.of([dev]), watch=False)
    try:
        assert archive.index_path.parent == isolated_environment / ".cache" / "skillshelf"
        assert archive.index_path.name.startswith("artifacts-")
        other = index_path_for(ProjectRoots.of([dev / "app"]))
        assert other != archive.index_path
    finally:
        archive.close()


def test_sessions_mentioning_a_skill_id_come_from_text_and_pack_lists(archive: SessionArchive, dev: Path) -> None:
    session_json(dev / "api", "2025-12-02-pack/finalization-pack.json", {"patternsUsed": ["Database/RLS-Policy"]})
    archive.sync()
    found = service.sessions_mentioning(archive, ["database/rls-policy", "python/slugify"])
    assert found == {
        "database/rls-policy": [
            SessionRef("api", "2025-12-02-pack", "2025-12-02"),
            SessionRef("app", "2025-11-05-auth-flow", "2025-11-05"),
        ],
        "python/slugify": [],
    }


def test_a_session_without_a_date_is_searchable_and_dated_by_mtime(dev: Path, tmp_path: Path) -> None:
    set_mtime(session_file(dev / "docs", "walrus-notes.md", "# Walrus notes\n"), "2024-05-05")
    with open_archive(dev, tmp_path).opened() as archive:
        (hit,) = service.search_artifacts(archive, "walrus").hits
        assert (hit.session_id, hit.date) == ("walrus-notes", "2024-05-05")
        assert ids(archive, "", until=dt.date(2024, 12, 31)) == ["walrus-notes"]


def test_symlinks_out_of_the_artifacts_are_skipped_and_refused(dev: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    session_file(outside, "secret/session-summary.md", "# Secret\n\nplatypus key material\n")
    artifacts = dev / "app" / ".agent-artifacts"
    (artifacts / "leak").symlink_to(outside / ".agent-artifacts" / "secret")
    (artifacts / "leak.md").symlink_to(outside / ".agent-artifacts" / "secret" / "session-summary.md")
    (artifacts / "2025-11-05-auth-flow" / "finalization-pack.md").symlink_to(
        outside / ".agent-artifacts" / "secret" / "session-summary.md"
    )
    (dev / "docs" / ".agent-artifacts").symlink_to(outside / ".agent-artifacts")
    with open_archive(dev, tmp_path).opened() as archive:
        result = service.search_artifacts(archive, "platypus")
        assert result.hits == []
        assert any("links outside" in w for w in result.warnings)
        assert str(tmp_path) not in " ".join(result.warnings)
    roots = ProjectRoots.of([dev])
    for project, session_id in [("app", "leak"), ("docs", "secret")]:
        with pytest.raises(SkillshelfError) as raised:
            service.load_session(roots, project, session_id)
        assert raised.value.code == ErrorCode.ACCESS_DENIED
        assert str(outside) not in raised.value.message
    loaded = service.load_session(roots, "app", "2025-11-05-auth-flow")
    assert "platypus" not in str(loaded.model_dump()) and len(loaded.files) == 2


def test_a_project_linked_out_of_the_roots_is_access_denied(dev: Path, tmp_path: Path) -> None:
    session_file(tmp_path / "elsewhere", "s.md", "# Elsewhere\n")
    (dev / "sneaky").symlink_to(tmp_path / "elsewhere")
    with open_archive(dev, tmp_path).opened() as archive:
        assert ids(archive, "elsewhere") == []
        for project in ["sneaky", "../elsewhere", "app/../../elsewhere", str(tmp_path / "elsewhere")]:
            with pytest.raises(SkillshelfError) as raised:
                service.search_artifacts(archive, "x", project=project)
            assert raised.value.code == ErrorCode.ACCESS_DENIED
        with pytest.raises(SkillshelfError) as raised:
            service.search_artifacts(archive, "x", project="nope")
        assert raised.value.code == ErrorCode.PROJECT_NOT_FOUND


@pytest.mark.parametrize("session_id", ["../api/2025-12-01-cookie-auth", "..", "a/b", "x\x00"])
def test_dot_dot_in_a_session_id_is_refused_before_anything_is_read(archive: SessionArchive, session_id: str) -> None:
    with pytest.raises(SkillshelfError) as raised:
        service.load_session(archive.projects, "app", session_id)
    assert raised.value.code == ErrorCode.VALIDATION_ERROR


def test_a_word_matching_nothing_does_not_empty_a_search_whose_other_words_are_common(tmp_path: Path) -> None:
    solo = tmp_path / "solo-dev"
    session_file(solo / "app", "2025-03-01-jwt.md", "# JWT refresh\n\nRotate the jwt refresh token.\n")
    with open_archive(solo, tmp_path).opened() as archive:  # one session: every word is in "over half"
        assert ids(archive, "jwt refresh kubernetes") == ["2025-03-01-jwt"]
        assert ids(archive, "kubernetes") == []


def test_two_archives_on_one_index_file_sync_one_at_a_time(dev: Path, tmp_path: Path) -> None:
    # Servers started together on one projects root: the second waits for the first's whole sync (the
    # lock beside the file), then finds nothing left to parse, instead of parsing every session again.
    import threading

    first, second = open_archive(dev, tmp_path), open_archive(dev, tmp_path)
    first.sync()
    second.sync()  # both have the file open and up to date; then a session arrives
    session_file(dev / "app", "2025-12-01-search/session-summary.md", "# Search tuning\n\nTuned BM25 weights.\n")
    holding, release = threading.Event(), threading.Event()
    reports: dict[str, object] = {}

    def sync_holding_the_index() -> None:
        with first.index.exclusive():
            holding.set()
            release.wait(60)
            reports["first"] = first.sync()

    holder = threading.Thread(target=sync_holding_the_index)
    holder.start()
    assert holding.wait(60)
    syncer = threading.Thread(target=lambda: reports.setdefault("second", second.sync()))
    syncer.start()
    try:
        syncer.join(1.0)
        assert syncer.is_alive()  # waiting for the first's turn
    finally:
        release.set()
        holder.join(60)
    syncer.join(60)
    assert getattr(reports["first"], "parsed", 0) > 0
    assert getattr(reports["second"], "parsed", None) == 0  # the first's work, not done twice
    assert ids(second, "bm25 weights")[0] == "2025-12-01-search"
    first.close()
    second.close()


def test_a_sync_of_the_archive_is_recorded_and_a_failed_one_is_said(
    dev: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The archive's own scan was named `_sync_locked`, the name of BackgroundSync's step that records a sync, so
    # `sync()` ran the scan alone: no file lock, no rebuild of a damaged index, no `synced_wall`, no `sync_error`.
    archive = open_archive(dev, tmp_path)
    try:
        archive.sync()
        assert archive.synced_wall is not None and archive.sync_error is None

        def broken() -> None:
            raise OSError("disk gone")

        monkeypatch.setattr(archive, "_scan", broken)
        with pytest.raises(OSError):
            archive.sync()
        assert archive.sync_error == "OSError: disk gone"
        assert archive.needs_sync()  # the next read retries it
    finally:
        archive.close()
