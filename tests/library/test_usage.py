"""Usage events: durable, shared between processes, and never silently dropped."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from skillshelf.errors import ErrorCode
from skillshelf.library.index.locking import is_corruption
from skillshelf.library.usage.store import UsageStore, UsageUnavailable


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
        assert [w.wait(timeout=60) for w in writers] == [0, 0, 0, 0]
        (usage,) = store.usage("a/b")
        assert usage.uses == 200 and usage.projects == ["p1", "p2", "p3", "p4"]
        assert store.verified_by_use() == frozenset({"a/b"})  # seen although another process wrote
    finally:
        store.close()


def test_a_damaged_usage_file_is_kept_aside_not_deleted(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    path.write_bytes(b"garbage, not sqlite" * 200)
    store = UsageStore(path)
    try:
        store.record("a/b", None, None, "test")
        assert [u.uses for u in store.usage()] == [1]
    finally:
        store.close()
    aside = [p for p in tmp_path.iterdir() if ".damaged-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"garbage")


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
            holder.wait(timeout=30)


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


def test_a_proven_damaged_file_moves_aside_under_a_unique_name_each_time(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    damaged = []
    for round_ in range(2):  # twice within the same second: neither quarantine overwrites the other
        filled_store(path, events=300 + round_)
        damage_pages(path)
        damaged.append(path.read_bytes())
        store = UsageStore(path)
        try:
            store.record("cat/new", None, None, "test")
            assert [(u.pattern_id, u.uses) for u in store.usage()] == [("cat/new", 1)]
        finally:
            store.close()
    mains = [p for p in asides(tmp_path) if not p.name.endswith(("-wal", "-shm", ".lock"))]
    assert sorted(m.read_bytes() for m in mains) == sorted(damaged)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores file permissions")
def test_a_read_only_file_is_a_clear_error_and_works_again_once_writable(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    filled_store(path)
    path.chmod(0o444)
    tmp_path.chmod(0o555)
    try:
        store = UsageStore(path, busy_timeout=0.1)
        with pytest.raises(UsageUnavailable) as raised:
            store.record("cat/skill-1", None, None, "test")
        assert raised.value.code == ErrorCode.FILESYSTEM_ERROR
    finally:
        tmp_path.chmod(0o755)
        path.chmod(0o644)
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


def test_the_wal_and_shm_of_a_damaged_file_move_aside_with_it(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    path.write_bytes(b"garbage, not sqlite" * 200)
    Path(f"{path}-wal").write_bytes(b"old wal")
    Path(f"{path}-shm").write_bytes(b"old shm")
    store = UsageStore(path)
    try:
        store.record("a/b", None, None, "test")
    finally:
        store.close()
    (main,) = [p for p in asides(tmp_path) if not p.name.endswith(("-wal", "-shm"))]
    assert Path(f"{main}-wal").read_bytes() == b"old wal"  # the -shm is only an index of it, rebuilt freely
    assert Path(f"{main}-shm").exists()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root ignores file permissions")
def test_a_read_only_state_folder_falls_back_to_the_cache_and_says_usage_moved(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from skillshelf.library.index.library import LibraryConfig, choose_state_dir, user_cache_dir

    root = tmp_path / "library"
    state = root / ".skillshelf"
    state.mkdir(parents=True)
    filled_store(state / "usage.sqlite3", events=1)
    state.chmod(0o555)
    try:
        assert choose_state_dir(LibraryConfig(roots=[root])) == user_cache_dir()
    finally:
        state.chmod(0o755)
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
