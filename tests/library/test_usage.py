"""Usage events: durable, shared between processes, and never silently dropped."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from skillshelf.library.usage import UsageStore


def test_events_from_other_processes_are_counted_and_verify_a_skill(tmp_path: Path) -> None:
    path = tmp_path / "usage.sqlite3"
    store = UsageStore(path)
    try:
        assert store.verified_by_use() == frozenset()
        script = (
            "import sys; from pathlib import Path; from skillshelf.library.usage import UsageStore\n"
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
