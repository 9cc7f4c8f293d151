"""Usage events: durable, shared between processes, and never silently dropped."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from skillshelf.errors import ErrorCode
from skillshelf.library.db import is_corruption
from skillshelf.library.usage.store import UsageStore, UsageUnavailable
from tests.conftest import deadline
from tests.library.read_only import read_only


def test_events_from_other_processes_are_counted_and_verify_a_skill(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    store = UsageStore(path)
    try:
        assert store.verified_by_use() == frozenset()
        script = (
            "import sys; from pathlib import Path; from skillshelf.library.usage.store import UsageStore\n"
            "s = UsageStore(Path(sys.argv[1]))\n"
            "for i in range(50): s.record('a/b', sys.argv[2], None, 'test')\n"
            "s.close()\n"
        )
        writers = [
            subprocess.Popen([sys.executable, "-c", script, str(path), project]) for project in ("p1", "p2", "p3", "p4")
        ]
        assert [w.wait(timeout=deadline()) for w in writers] == [0, 0, 0, 0]
        (usage,) = store.usage("a/b")
        assert usage.uses == 200 and usage.projects == ["p1", "p2", "p3", "p4"]
        assert store.verified_by_use() == frozenset({"a/b"})  # seen although another process wrote
    finally:
        store.close()


def test_a_file_that_is_not_a_database_is_left_as_it_is_and_recording_says_how_to_start_again(
    tmp_path: Path,
) -> None:
    path = tmp_path / "usage.sqlite3"
    path.write_bytes(b"garbage, not sqlite" * 200)
    store = UsageStore(path)
    try:
        with pytest.raises(UsageUnavailable) as refused:
            store.record("a/b", None, None, "test")
        assert refused.value.code == ErrorCode.FILESYSTEM_ERROR
        assert "damaged" in refused.value.message and "move usage.sqlite3" in refused.value.message
        with pytest.raises(UsageUnavailable, match="Nothing of it can be read"):
            store.usage()
    finally:
        store.close()
    assert path.read_bytes() == b"garbage, not sqlite" * 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["usage.sqlite3"]


HOLD_LOCK = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA locking_mode=EXCLUSIVE")
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
"""


def filled_store(path: Path, events: int = 300) -> None:
    store = UsageStore(path)
    for i in range(events):
        store.record(f"cat/skill-{i % 7}", f"project-{i % 5}", "note " * 10, "test")
    store.close()


def damage_pages(path: Path) -> None:
    """Overwrite the body of every page after the first: SQLite's header still opens, the tree does not."""
    data = bytearray(path.read_bytes())
    page = 4096
    for start in range(page, len(data), page):
        data[start + 8 : start + 600] = b"\xff" * 592
    path.write_bytes(bytes(data))


@contextmanager
def lock_held_by_another_process(path: Path) -> Iterator[None]:
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        assert holder.stdin is not None and holder.stdout is not None
        try:
            assert holder.stdout.readline().strip() == "locked"
            yield
        finally:
            holder.stdin.close()
            holder.wait(timeout=deadline())


def asides(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if ".damaged-" in p.name)


def test_a_lock_held_by_another_process_is_a_clear_error_and_the_data_stays(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    filled_store(path)
    with lock_held_by_another_process(path):
        store = UsageStore(path, busy_timeout=0.1)
        with pytest.raises(UsageUnavailable) as raised:
            store.record("cat/skill-1", None, None, "test")
        assert raised.value.code == ErrorCode.FILESYSTEM_ERROR and "locked" in raised.value.message
        with pytest.raises(UsageUnavailable):
            store.usage()
    try:
        assert asides(tmp_path) == []
        store.record("cat/skill-1", None, None, "test")  # the same store works once the lock is gone
        assert sum(u.uses for u in store.usage()) == 301
    finally:
        store.close()


def damage_the_tail(path: Path) -> None:
    """A file whose events are sound but whose last pages (another table's) are garbage: the quick check
    fails, yet every usage query can still be answered."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE padding(blob BLOB)")
        conn.executemany("INSERT INTO padding VALUES (randomblob(3000))", [()] * 40)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = bytearray(path.read_bytes())
    data[-20 * 4096 :] = b"\xff" * (20 * 4096)
    path.write_bytes(bytes(data))


def test_a_damaged_history_is_read_as_far_as_it_can_be_and_says_so(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    filled_store(path)
    damage_the_tail(path)
    damaged = path.read_bytes()
    store = UsageStore(path)
    try:
        assert sum(u.uses for u in store.usage()) == 300
        assert len(store.daily_uses()) == 7
        assert store.verified_by_use() == {f"cat/skill-{i}" for i in range(7)}  # each used from 5 projects
        assert store.warning is not None and "damaged" in store.warning
        with pytest.raises(UsageUnavailable, match="not recorded"):
            store.record("cat/skill-1", "project-9", None, "test")
    finally:
        store.close()
    assert path.read_bytes() == damaged and asides(tmp_path) == []


def point_the_index_at_the_table(path: Path) -> None:
    """Damage through SQLite while a store has the file open: the events index's root page becomes the
    table's, so the next write into the index finds the b-tree malformed (SQLITE_CORRUPT)."""
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        table = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'events'").fetchone()[0]
        version = conn.execute("PRAGMA schema_version").fetchone()[0]
        conn.execute("PRAGMA writable_schema = ON")
        conn.execute("UPDATE sqlite_master SET rootpage = ? WHERE name = 'events_skill'", (table,))
        conn.execute(f"PRAGMA schema_version = {version + 1}")  # every open connection re-reads the schema


def test_damage_met_while_recording_stops_recording_and_keeps_the_file(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    filled_store(path)
    store = UsageStore(path)
    try:
        store.record("cat/skill-1", None, None, "test")
        point_the_index_at_the_table(path)
        for _ in range(2):
            with pytest.raises(UsageUnavailable, match="not recorded and the file is left as it is"):
                store.record("cat/skill-1", None, None, "test")
        assert store.warning is not None
    finally:
        store.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["usage.sqlite3"]  # closed cleanly, nothing moved


def test_once_the_damaged_file_is_moved_aside_a_new_history_starts(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    filled_store(path)
    damage_pages(path)
    store = UsageStore(path)
    try:
        with pytest.raises(UsageUnavailable):
            store.record("cat/new", None, None, "test")
        for suffix in ("", "-wal", "-shm"):  # what the message tells the curator to do
            if Path(f"{path}{suffix}").exists():
                Path(f"{path}{suffix}").rename(tmp_path / f"kept.sqlite3{suffix}")
        store.record("cat/new", None, None, "test")
        assert [(u.skill_id, u.uses) for u in store.usage()] == [("cat/new", 1)]
        assert store.warning is None
    finally:
        store.close()


def test_a_read_only_file_is_read_refuses_records_clearly_and_works_again_once_writable(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    filled_store(path)  # closed cleanly: no -wal or -shm left, and none can be made while read-only
    with read_only(path, tmp_path):
        store = UsageStore(path, busy_timeout=0.1)
        assert sum(u.uses for u in store.usage()) == 300  # read through a read-only connection
        assert len(store.verified_by_use()) == 7 and store.warning is None
        with pytest.raises(UsageUnavailable) as raised:
            store.record("cat/skill-1", None, None, "test")
        assert raised.value.code == ErrorCode.FILESYSTEM_ERROR
        assert "read-only" in raised.value.message and "writable" in raised.value.message
    try:
        assert asides(tmp_path) == []
        store.record("cat/skill-1", None, None, "test")
        assert sum(u.uses for u in store.usage()) == 301
    finally:
        store.close()


def test_only_corruption_codes_count_as_damage(tmp_path: Path) -> None:
    """Real errors from SQLite: read-only and locked are not damage; 'not a database' is."""
    path = tmp_path / "db.sqlite3"
    sqlite3.connect(path).execute("CREATE TABLE t(x)").connection.close()
    read_only = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError) as readonly_error:
        read_only.execute("INSERT INTO t VALUES (1)")
    read_only.close()
    garbage = tmp_path / "garbage.sqlite3"
    garbage.write_bytes(b"not a database at all" * 100)
    with closing(sqlite3.connect(garbage)) as conn, pytest.raises(sqlite3.DatabaseError) as notadb_error:
        conn.execute("SELECT * FROM sqlite_master").fetchall()
    assert not is_corruption(readonly_error.value)
    assert is_corruption(notadb_error.value)


def test_the_wal_and_shm_of_a_damaged_file_are_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    path.write_bytes(b"garbage, not sqlite" * 200)
    Path(f"{path}-wal").write_bytes(b"old wal")
    Path(f"{path}-shm").write_bytes(b"old shm")
    store = UsageStore(path)
    try:
        with pytest.raises(UsageUnavailable):
            store.record("a/b", None, None, "test")
    finally:
        store.close()
    assert Path(f"{path}-wal").read_bytes() == b"old wal"  # the -shm is only an index of it, rebuilt freely
    assert Path(f"{path}-shm").exists()


def test_a_read_only_state_folder_falls_back_to_the_cache_and_says_usage_moved(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from skillshelf.library.index.places import LibraryConfig, choose_state_dir
    from skillshelf.library.indexing.folders import user_cache_dir

    root = tmp_path / "library"
    state = root / ".skillshelf"
    state.mkdir(parents=True)
    filled_store(state / "usage.sqlite3", events=1)
    with read_only(state):
        assert choose_state_dir(LibraryConfig(roots=[root])) == user_cache_dir()
    assert "usage is recorded in" in caplog.text


def test_a_closed_store_never_reopens(tmp_path: Path) -> None:
    """A call arriving after close (a request in flight while the server stops) must not open a
    connection nobody will close: it gets UsageUnavailable instead."""
    store = UsageStore(tmp_path / "usage.sqlite3")
    store.record("a/b", None, None, "test")
    store.close()
    with pytest.raises(UsageUnavailable, match="closed"):
        store.usage()
    assert store._conn is None


def version_2_file(path: Path) -> None:
    """A usage file as version 2 wrote it: the skill in `pattern_id` (before issue 32), four events."""
    with closing(sqlite3.connect(path)) as old, old:
        old.executescript(
            """CREATE TABLE events (id INTEGER PRIMARY KEY, pattern_id TEXT NOT NULL, project TEXT, note TEXT,
                                    source TEXT NOT NULL, at TEXT NOT NULL, author TEXT);
               CREATE INDEX events_pattern ON events(pattern_id, at);
               INSERT INTO events(pattern_id, project, note, source, at, author) VALUES
                   ('a/b', 'p1', NULL, 'tool', '2026-01-01T00:00:00Z', 'ana'),
                   ('a/b', 'p2', 'fixed it', 'tool', '2026-01-02T00:00:00Z', NULL),
                   ('a/b', 'p3', NULL, 'cli', '2026-01-03T00:00:00Z', NULL),
                   ('c/d', NULL, NULL, 'tool', '2026-01-03T00:00:00Z', NULL);
               PRAGMA user_version = 2;"""
        )


def test_a_usage_file_naming_the_skill_pattern_id_keeps_every_event_and_new_ones_land(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    version_2_file(path)
    store = UsageStore(path)
    try:
        assert {u.skill_id: u.uses for u in store.usage()} == {"a/b": 3, "c/d": 1}
        assert store.verified_by_use() == frozenset({"a/b"})
        store.record("c/d", "p1", None, "tool")
        assert {u.skill_id: u.uses for u in store.usage()} == {"a/b": 3, "c/d": 2}
    finally:
        store.close()
    with closing(sqlite3.connect(path)) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(events)")}
        assert "skill_id" in columns and "pattern_id" not in columns
        rows = conn.execute("SELECT skill_id, project, note, author FROM events ORDER BY id").fetchall()
        assert rows == [
            ("a/b", "p1", None, "ana"),
            ("a/b", "p2", "fixed it", None),
            ("a/b", "p3", None, None),
            ("c/d", None, None, None),
            ("c/d", "p1", None, None),
        ]
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3


def test_a_read_only_usage_file_naming_the_skill_pattern_id_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    version_2_file(path)
    with read_only(path, tmp_path):
        store = UsageStore(path, busy_timeout=0.1)
        try:
            assert {u.skill_id: u.uses for u in store.usage()} == {"a/b": 3, "c/d": 1}
            assert store.verified_by_use() == frozenset({"a/b"}) and store.daily_uses()[0] == ("2026-01-01", "a/b", 1)
        finally:
            store.close()
