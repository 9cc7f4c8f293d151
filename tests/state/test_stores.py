"""The same store tests over both backends: the embedded files (SQLite, JSONL) and PostgreSQL.

Each test takes `backend`, which opens stores the way the server does (`open_stores`, from a
`database_url` or none); two stores opened on one backend stand for two replicas sharing it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from skillshelf.caller import current_caller
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.usage.events import UsageEvents
from skillshelf.library.usage.store import BUSY_TIMEOUT_S, USAGE_FILE, UsageUnavailable
from skillshelf.memory import store as notes_file
from skillshelf.memory.notes import NotesStore
from skillshelf.memory.service import add_note, get_notes
from skillshelf.projects import ProjectRoots
from skillshelf.server.calllog import CallLog, CallLogStore, CallRecord, call_log_store, summarise
from skillshelf.settings import resolve_settings
from skillshelf.state import open_stores
from tests.conftest import deadline


@dataclass
class Backend:
    name: str
    database_url: str | None
    folder: Path  # the embedded files' folder (the usage DB, the call log)
    roots: ProjectRoots

    def usage(self) -> UsageEvents:
        return open_stores(self.database_url).usage(self.folder / USAGE_FILE, BUSY_TIMEOUT_S)

    def notes(self) -> NotesStore:
        return open_stores(self.database_url).notes()

    def call_log(self, max_bytes: int | None = None) -> CallLog:
        env = {"SKILLSHELF_STATE_DIR": str(self.folder)}
        if max_bytes is not None:
            env["SKILLSHELF_CALL_LOG__MAX_BYTES"] = str(max_bytes)
        if self.database_url:
            env["SKILLSHELF_DATABASE_URL"] = self.database_url
        settings = resolve_settings(env=env)
        from skillshelf.server.calllog import open_call_log

        log = open_call_log(settings)
        assert log is not None
        return log

    def call_log_reader(self) -> CallLogStore:
        env = {"SKILLSHELF_STATE_DIR": str(self.folder)}
        if self.database_url:
            env["SKILLSHELF_DATABASE_URL"] = self.database_url
        return call_log_store(resolve_settings(env=env))


@pytest.fixture(params=["embedded", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    project = tmp_path / "dev" / "app"
    project.mkdir(parents=True)
    (tmp_path / "dev" / "web").mkdir()
    url = request.getfixturevalue("postgres_url") if request.param == "postgres" else None
    notes_file.clear_cache()
    yield Backend(request.param, url, tmp_path / "state", ProjectRoots.of([tmp_path / "dev"]))
    notes_file.clear_cache()


def opened(factory: Callable[[], UsageEvents]) -> Iterator[UsageEvents]:
    events = factory()
    try:
        yield events
    finally:
        events.close()


# -- usage events ----------------------------------------------------------------------------------------


def test_recorded_uses_are_counted_per_skill_with_their_projects_and_dates(backend: Backend) -> None:
    events = backend.usage()
    try:
        first = events.record("python/slugify", "web", None, "tool")
        events.record("python/slugify", "app", "helped", "tool")
        last = events.record("python/slugify", None, None, "cli")
        events.record("git/rebase", "app", None, "tool")
        by_id = {u.skill_id: u for u in events.usage()}
        assert by_id["python/slugify"].uses == 3
        assert by_id["python/slugify"].projects == ["app", "web"]
        assert (by_id["python/slugify"].first_used, by_id["python/slugify"].last_used) == (first, last)
        assert [u.skill_id for u in events.usage("git/rebase")] == ["git/rebase"]
        assert events.usage("no/such") == []
        assert events.warning is None
    finally:
        events.close()


def test_uses_per_day_are_grouped_oldest_day_first(backend: Backend) -> None:
    events = backend.usage()
    try:
        at = events.record("b/skill", "app", None, "tool")
        events.record("a/skill", "app", None, "tool")
        events.record("b/skill", "web", None, "tool")
        assert events.daily_uses() == [(at[:10], "a/skill", 1), (at[:10], "b/skill", 2)]
    finally:
        events.close()


def test_a_skill_used_from_three_projects_is_verified_even_when_another_replica_records_the_third(
    backend: Backend,
) -> None:
    here, there = backend.usage(), backend.usage()
    try:
        here.record("python/slugify", "app", None, "tool")
        here.record("python/slugify", "web", None, "tool")
        here.record("python/slugify", "web", None, "tool")
        assert here.verified_by_use() == frozenset()  # cached now
        there.record("python/slugify", "api", None, "tool")
        assert here.verified_by_use() == {"python/slugify"}
    finally:
        here.close()
        there.close()


def test_a_use_is_recorded_with_the_caller_as_its_author(backend: Backend) -> None:
    events = backend.usage()
    token = current_caller.set("alice")
    try:
        events.record("python/slugify", "app", None, "tool")
    finally:
        current_caller.reset(token)
        events.close()
    authors = _authors(backend)
    assert authors == ["alice"]


def _authors(backend: Backend) -> list[str | None]:
    if backend.database_url is None:
        import sqlite3
        from contextlib import closing

        with closing(sqlite3.connect(backend.folder / USAGE_FILE)) as conn:  # `with` alone leaves it open
            return [row[0] for row in conn.execute("SELECT author FROM events")]
    import psycopg

    with psycopg.connect(backend.database_url) as conn:
        return [row[0] for row in conn.execute("SELECT author FROM usage_events")]


def test_a_closed_store_refuses_to_record(backend: Backend) -> None:
    events = backend.usage()
    events.close()
    with pytest.raises(UsageUnavailable, match="closed"):
        events.record("python/slugify", "app", None, "tool")


# -- memory notes ----------------------------------------------------------------------------------------


def test_notes_are_read_back_newest_first_with_their_fields(backend: Backend) -> None:
    notes = backend.notes()
    first = add_note(backend.roots, "app", "decision", "Use PostgreSQL for shared state", ["db"], notes)
    second = add_note(backend.roots, "app", "blocker", "Waiting on the DBA", None, notes)
    found = get_notes(backend.roots, "app", notes=notes)
    assert [n.id for n in found.notes] == [second.note.id, first.note.id]
    assert found.notes[1] == first.note and found.total == 2 and found.skipped_lines == []
    if backend.database_url is None:
        assert (first.file, first.stored_in) == (".agent-memory/session-notes.jsonl", "file")
    else:  # it said "file": "postgresql"
        assert (first.file, first.stored_in) == (None, "database")


def test_notes_filter_by_type_words_and_time(backend: Backend) -> None:
    notes = backend.notes()
    add_note(backend.roots, "app", "decision", "Cache the index in SQLite", ["perf"], notes)
    add_note(backend.roots, "app", "hypothesis", "The pool is too small", None, notes)
    assert [n.type for n in get_notes(backend.roots, "app", note_type="decision", notes=notes).notes] == ["decision"]
    assert [n.content for n in get_notes(backend.roots, "app", query="PERF cache", notes=notes).notes] == [
        "Cache the index in SQLite"
    ]
    assert get_notes(backend.roots, "app", since="2999-01-01", notes=notes).notes == []
    assert get_notes(backend.roots, "app", limit=1, notes=notes).total == 2


def test_notes_are_kept_per_project_and_shared_by_every_replica(backend: Backend) -> None:
    writer, reader = backend.notes(), backend.notes()
    added = add_note(backend.roots, "app", "general", "Seen by the other replica", None, writer)
    add_note(backend.roots, "web", "general", "Another project's note", None, writer)
    assert [n.id for n in get_notes(backend.roots, "app", notes=reader).notes] == [added.note.id]
    assert get_notes(backend.roots, str(backend.roots.roots[0] / "app"), notes=reader).total == 1


def test_a_note_records_its_author(backend: Backend) -> None:
    notes = backend.notes()
    token = current_caller.set("bob")
    try:
        add_note(backend.roots, "app", "general", "Written by bob", None, notes)
    finally:
        current_caller.reset(token)
    assert get_notes(backend.roots, "app", notes=notes).notes[0].author == "bob"


# -- the call log -----------------------------------------------------------------------------------------

CALL = CallRecord("loadSkill", "default", "alice", 2.0, True, None, 30, 900, skill="python/slugify")
FAILED = CallRecord("searchPatterns", "default", None, 5.0, False, "VALIDATION_ERROR", 10, 100)


def test_logged_calls_are_read_back_in_order_and_summarised(backend: Backend) -> None:
    log = backend.call_log()
    for record in (CALL, FAILED, CALL):
        log.write(record)
    log.close()
    reader = backend.call_log_reader()
    records = list(reader.records())
    assert [r["tool"] for r in records] == ["loadSkill", "searchPatterns", "loadSkill"]
    summary = summarise(records, reader.where)
    assert summary.calls == 3 and summary.errors == 1 and summary.busiest_skills == [("python/slugify", 2)]
    assert summary.callers == {"alice": 2, "anonymous": 1}


def test_a_call_naming_a_tool_with_nul_or_a_lone_surrogate_is_logged_and_every_call_after_it_too(
    backend: Backend,
) -> None:
    """A NUL in a tool name failed PostgreSQL's insert and the error ended the writer thread: every later
    record of that replica was lost. Such strings are stored with U+FFFD in their place, on both backends."""
    log = backend.call_log()
    log.write(CallRecord("evil\x00tool", "default", "mallory\ud800", 1.0, False, "UNKNOWN", 2, 60, known=False))
    assert log.flush(deadline())
    for _ in range(3):
        log.write(CALL)
    log.close()
    records = list(backend.call_log_reader().records())
    assert [(r["tool"], r["caller"]) for r in records] == [
        ("evil\ufffdtool", "mallory\ufffd"),
        *[("loadSkill", "alice")] * 3,
    ]
    assert log.health() == {"state": "ok", "dropped": 0, "lastError": None}


def test_the_call_log_keeps_about_twice_max_bytes_of_the_newest_records(backend: Backend) -> None:
    """The file rotates to `.1`; the table drops its oldest rows: either way a busy server's log is bounded,
    and what is kept is the newest."""
    log = backend.call_log(max_bytes=4096)
    for number in range(400):  # about 60 KB of records
        log.write(CallRecord("searchPatterns", "default", f"caller{number}", 1.0, True, None, 10, 10))
        if number % 50 == 49:
            assert log.flush(deadline())  # batches as a server's writer makes them
    log.close()
    records = list(backend.call_log_reader().records())
    kept = sum(len(json.dumps(r, separators=(",", ":"))) + 1 for r in records)
    assert records and kept <= 2 * 4096 + 4096 // 4 + 200, (len(records), kept)
    callers = [r["caller"] for r in records]
    assert callers[-1] == "caller399" and callers == sorted(callers, key=lambda c: int(c[len("caller") :]))
    assert len(records) < 200  # the oldest went


def test_a_note_postgresql_cannot_hold_is_refused_as_invalid_and_the_embedded_file_keeps_it(backend: Backend) -> None:
    """Text with a NUL character: JSON escapes it in the file, PostgreSQL's text cannot hold it."""
    notes = backend.notes()
    if backend.database_url is None:
        add_note(backend.roots, "app", "general", "before\x00after", None, notes)
        assert get_notes(backend.roots, "app", notes=notes).notes[0].content == "before\x00after"
        return
    with pytest.raises(SkillshelfError) as refused:
        add_note(backend.roots, "app", "general", "before\x00after", None, notes)
    assert refused.value.code is ErrorCode.VALIDATION_ERROR and "NUL" in refused.value.message
    assert get_notes(backend.roots, "app", notes=notes).total == 0


def test_a_prune_that_fails_neither_loses_nor_repeats_the_records_it_follows(
    postgres_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Pruning runs after the insert: were its failure taken for the batch's, the batch would be offered again."""
    import psycopg

    backend = Backend("postgres", postgres_url, tmp_path / "state", ProjectRoots.of([tmp_path]))
    log = backend.call_log(max_bytes=4096)  # a prune after every 1,024 bytes written (about 7 records)
    log.write(CALL)
    log.close()  # the schema exists now
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'no deletes'; END $$"
        )
        conn.execute("CREATE TRIGGER no_prune BEFORE DELETE ON call_log FOR EACH STATEMENT EXECUTE FUNCTION refuse()")
    with caplog.at_level("WARNING", logger="skillshelf.state.postgres.calllog"):
        for _ in range(12):
            log.write(CALL)
            assert log.flush(deadline())
        log.close()
    assert len(list(backend.call_log_reader().records())) == 13
    assert log.health()["dropped"] == 0 and "could not be pruned (no deletes)" in caplog.text
