"""`skillshelf db migrate | status | import`, and `serve` against a database that does not answer."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import psycopg
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.usage.store import UsageStore
from skillshelf.memory.notes import FileNotes
from skillshelf.memory.service import add_note, get_notes
from skillshelf.projects import ProjectRoots
from skillshelf.state.postgres.notes import PostgresNotes
from skillshelf.state.postgres.schema import LATEST
from skillshelf.state.postgres.usage import PostgresUsage
from tests.conftest import deadline
from tests.live_server import refused_serve
from tests.postgres_support import free_port

PASSWORD = "s3cret-pw"


def with_password(url: str) -> str:
    """The same URL with a password (the test cluster trusts local users, so any password works)."""
    return url.replace("skillshelf@", f"skillshelf:{PASSWORD}@", 1)


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        return result.exit_code, f"{result.output}{result.exception!r}"  # shown by a failing assertion
    return result.exit_code, result.output


def test_migrate_creates_the_schema_once_and_says_so_without_the_password(postgres_url: str) -> None:
    url = with_password(postgres_url)
    code, output = run("db", "migrate", "--database-url", url)
    assert code == 0, output
    assert f"schema at version {LATEST} (was empty)" in output
    code, output = run("db", "migrate", "--database-url", url)
    assert code == 0 and f"already at version {LATEST}" in output
    assert PASSWORD not in output and "skillshelf:***@" in output


def test_status_gives_the_redacted_url_reachability_and_schema_version(postgres_url: str) -> None:
    url = with_password(postgres_url)
    code, output = run("db", "status", "--json", env={"SKILLSHELF_DATABASE_URL": url})
    assert output.startswith("{"), output
    status = json.loads(output)
    assert code == 1 and status["reachable"] and status["schemaVersion"] == 0  # not migrated yet
    code, output = run("db", "status", "--database-url", url)
    assert code == 1 and f"schema: version 0 (this skillshelf: {LATEST}); run `skillshelf db migrate`" in output
    run("db", "migrate", "--database-url", url)
    code, output = run("db", "status", "--database-url", url)
    assert code == 0, output
    assert "reachable: yes" in output and f"schema: version {LATEST}" in output
    assert PASSWORD not in output


def test_status_of_an_unreachable_database_names_it_without_the_password_and_fails() -> None:
    url = f"postgresql://app:{PASSWORD}@127.0.0.1:{free_port()}/shelf"
    code, output = run("db", "status", "--database-url", url)
    assert code == 1
    assert f"database: postgresql://app:***@127.0.0.1:{url.rsplit(':', 1)[1].split('/', maxsplit=1)[0]}/shelf" in output
    assert "reachable: no (" in output and PASSWORD not in output


def test_db_commands_without_a_database_url_say_how_to_set_one() -> None:
    code, output = run("db", "status")
    assert code != 0 and "database_url is not set" in output and "--database-url" in output


def test_a_url_that_is_not_postgresql_is_refused_in_the_validators_words_alone() -> None:
    code, output = run("db", "migrate", "--database-url", "mysql://root:s3cret@db/shelf")
    assert code != 0 and "the known schemes are file://, postgresql://" in output
    assert "Value error" not in output and "s3cret" not in output


def test_a_password_with_an_unencoded_at_sign_shows_no_part_of_itself() -> None:
    url = "postgresql://app:s3cr@t-tail@127.0.0.1:1/shelf"
    code, output = run("db", "status", "--database-url", url)
    assert code != 0 and "%40" in output
    assert "s3cr" not in output and "t-tail" not in output


def test_serve_with_an_unreachable_database_stops_at_once_with_a_clear_error(tmp_path: Path) -> None:
    url = f"postgresql://app:{PASSWORD}@127.0.0.1:{free_port()}/shelf"
    done = refused_serve("--library", str(tmp_path), "--database-url", url)  # stdio or HTTP: before serving
    assert "PostgreSQL at postgresql://app:***@127.0.0.1:" in done.stderr and "is unreachable" in done.stderr
    assert "STATE_UNAVAILABLE" in done.stderr
    assert PASSWORD not in done.stderr + done.stdout


def embedded_state(tmp_path: Path) -> tuple[Path, ProjectRoots]:
    """An embedded usage history and two projects' notes files, as a personal library leaves them."""
    usage_file = tmp_path / "usage.sqlite3"
    events = UsageStore(usage_file)
    for skill, project in [("python/slugify", "app"), ("python/slugify", "web"), ("git/rebase", None)]:
        events.record(skill, project, None, "tool")
    events.close()
    for name in ("app", "web"):
        (tmp_path / "dev" / name).mkdir(parents=True)
    roots = ProjectRoots.of([tmp_path / "dev"])
    add_note(roots, "app", "decision", "Move to PostgreSQL", ["db"], FileNotes())
    add_note(roots, "app", "blocker", "Needs a backup plan", None, FileNotes())
    add_note(roots, "web", "general", "Nothing yet", None, FileNotes())
    return usage_file, roots


def test_import_moves_the_embedded_state_and_a_second_run_adds_nothing(postgres_url: str, tmp_path: Path) -> None:
    usage_file, roots = embedded_state(tmp_path)
    args = ["db", "import", "--json", "--database-url", postgres_url, "--usage-file", str(usage_file)]
    args += ["--projects-root", str(tmp_path / "dev")]
    code, output = run(*args)
    assert code == 0, output
    first = json.loads(output)
    assert first["usage"] == {"file": str(usage_file), "read": 3, "added": 3}
    assert [(n["project"], n["read"], n["added"]) for n in first["notes"]] == [("app", 2, 2), ("web", 1, 1)]
    code, output = run(*args)
    second = json.loads(output)
    assert second["usage"]["added"] == 0 and [n["added"] for n in second["notes"]] == [0, 0]

    embedded = UsageStore(usage_file)
    shared = PostgresUsage(postgres_url)
    assert sorted(shared.usage(), key=str) == sorted(embedded.usage(), key=str)
    embedded.close()
    for project in ("app", "web"):
        assert get_notes(roots, project, notes=PostgresNotes(postgres_url)) == get_notes(roots, project)


def test_import_reads_a_usage_file_an_older_version_wrote_and_leaves_it_as_it_is(
    postgres_url: str, tmp_path: Path
) -> None:
    usage_file = tmp_path / "usage.sqlite3"
    with closing(sqlite3.connect(usage_file)) as old, old:  # version 2: the skill in `pattern_id`
        old.executescript(
            """CREATE TABLE events (id INTEGER PRIMARY KEY, pattern_id TEXT NOT NULL, project TEXT, note TEXT,
                                    source TEXT NOT NULL, at TEXT NOT NULL, author TEXT);
               INSERT INTO events(pattern_id, project, note, source, at, author) VALUES
                   ('a/b', 'p1', NULL, 'tool', '2026-01-01T00:00:00Z', 'ana'),
                   ('c/d', NULL, NULL, 'cli', '2026-01-02T00:00:00Z', NULL);
               PRAGMA user_version = 2;"""
        )
    before = usage_file.read_bytes()
    args = ["db", "import", "--json", "--database-url", postgres_url, "--usage-file", str(usage_file), "--no-notes"]
    code, output = run(*args)
    assert code == 0, output
    assert json.loads(output)["usage"] == {"file": str(usage_file), "read": 2, "added": 2}
    assert usage_file.read_bytes() == before
    shared = PostgresUsage(postgres_url)
    assert {u.skill_id: u.projects for u in shared.usage()} == {"a/b": ["p1"], "c/d": []}
    shared.close()


def test_import_after_more_embedded_use_adds_only_what_is_new(postgres_url: str, tmp_path: Path) -> None:
    usage_file, roots = embedded_state(tmp_path)
    args = ["db", "import", "--json", "--database-url", postgres_url, "--usage-file", str(usage_file)]
    args += ["--projects-root", str(tmp_path / "dev")]
    run(*args)
    events = UsageStore(usage_file)
    events.record("git/rebase", "api", None, "tool")
    events.close()
    add_note(roots, "web", "decision", "Written after the first import", None, FileNotes())
    code, output = run(*args)
    assert code == 0, output
    again = json.loads(output)
    assert again["usage"] == {"file": str(usage_file), "read": 4, "added": 1}
    assert [(n["project"], n["added"]) for n in again["notes"]] == [("app", 0), ("web", 1)]
    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("SELECT count(*) FROM usage_events").fetchone() == (4,)
        assert conn.execute("SELECT count(*) FROM memory_notes").fetchone() == (4,)


def test_the_log_and_notes_commands_read_the_database_when_it_is_set(postgres_url: str, tmp_path: Path) -> None:
    from skillshelf.server.calllog import CallRecord, open_call_log
    from skillshelf.settings import resolve_settings

    env = {"SKILLSHELF_DATABASE_URL": with_password(postgres_url)}
    log = open_call_log(resolve_settings(env=env))
    assert log is not None
    log.write(CallRecord("loadSkill", "default", "alice", 2.0, True, None, 30, 900, skill="python/slugify"))
    log.close()
    code, output = run("log", env=env)
    assert code == 0, output
    assert "1 call, 0 errors (postgresql://skillshelf:***@127.0.0.1:" in output and PASSWORD not in output
    (tmp_path / "dev" / "app").mkdir(parents=True)
    roots = ProjectRoots.of([tmp_path / "dev"])
    add_note(roots, "app", "decision", "Kept in the database", None, PostgresNotes(postgres_url))
    code, output = run("notes", "app", "--projects-root", str(tmp_path / "dev"), env=env)
    assert code == 0 and "Kept in the database" in output, output
    assert not (tmp_path / "dev" / "app" / ".agent-memory").exists()


def test_import_without_a_local_usage_history_imports_the_notes_and_a_missing_usage_file_is_an_error(
    postgres_url: str, tmp_path: Path
) -> None:
    embedded_state(tmp_path)
    library = tmp_path / "library"
    library.mkdir()
    args = ["db", "import", "--json", "--database-url", postgres_url, "--library", str(library)]
    code, output = run(*args, "--projects-root", str(tmp_path / "dev"))
    assert code == 0, output
    report = json.loads(output)
    assert report["usage"]["read"] == 0 and [n["added"] for n in report["notes"]] == [2, 1]
    code, output = run(*args, "--usage-file", str(tmp_path / "nowhere.sqlite3"), "--no-notes")
    assert code != 0 and "No usage history at" in output


def test_a_database_url_without_psycopg_installed_says_which_extra_to_install(tmp_path: Path) -> None:
    blocked = (
        "import sys; sys.modules['psycopg'] = None; from skillshelf.cli import main; "
        "sys.argv = ['skillshelf', 'db', 'status', '--database-url', 'postgresql://app:pw@127.0.0.1/shelf']; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, timeout=deadline(), check=False, cwd=tmp_path
    )
    assert done.returncode != 0
    assert "psycopg is not installed" in done.stderr and "skillshelf[postgres]" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_import_with_no_library_configured_refuses_to_read_the_bundled_examples_and_names_the_fix(
    postgres_url: str,
) -> None:
    """It read the bundled examples' (empty) usage history and reported "0 of 0" for the served library's."""
    code, output = run("db", "import", "--database-url", postgres_url)
    assert code != 0 and "no library configured" in output and "--library PATH" in output and "--no-usage" in output
    code, output = run("db", "import", "--database-url", postgres_url, "--no-usage")
    assert code == 0, output


def test_import_of_a_library_never_used_says_which_library_it_looked_in(postgres_url: str, tmp_path: Path) -> None:
    library = tmp_path / "served"
    library.mkdir()
    code, output = run("db", "import", "--database-url", postgres_url, env={"SKILLSHELF_LIBRARY": str(library)})
    assert code == 0, output
    assert f"usage: nothing to import: the library at {library} has no usage history" in output
