"""Read-only everywhere: a library that cannot be written and a HOME where no cache can be made.

The server must start and serve from an index kept in a temporary folder (or memory), with one
clear warning per index, and usage must be read from a read-only file, never reported as 0.

How "read-only" is made for real (root ignores permission bits, and these tests run as root too):
- A cache path under a regular file (ENOTDIR): no folder can ever be made there, for root or anyone,
  on any filesystem, so the tests that need "HOME is not writable" run everywhere.
- A library root with no write bit: skillshelf itself never writes into such a root (its mode says
  read-only), whoever runs it.
- A read-only bind mount in a private mount namespace (`unshare --mount`, root only): EROFS for
  everything, HOME included, exactly as on a read-only volume.
- `chattr +i` (tests/library/read_only.py) for one file or folder, as root; chmod otherwise.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import SearchFilters
from skillshelf.library.usage.store import USAGE_FILE
from skillshelf.server.app import build_server
from skillshelf.settings import Settings
from tests.conftest import USER_FOLDERS, call, deadline
from tests.library.read_only import read_only
from tests.library.test_usage import filled_store


def unwritable_home(tmp_path: Path) -> Path:
    """A HOME under a regular file: nothing can ever be created below it (ENOTDIR)."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where a folder would have to be\n", encoding="utf-8")
    return blocker / "home"


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def home_environment(home: Path) -> dict[str, str]:
    """The environment of a server whose HOME, caches and state all live under `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SKILLSHELF_")}
    env.update({"HOME": str(home), "USERPROFILE": str(home)})
    env.update({variable: str(home / folder) for variable, folder in USER_FOLDERS.items()})
    return env


@pytest.fixture
def read_only_root(sample_root: Path) -> Iterator[Path]:
    """The sample library with no write bit anywhere: skillshelf must not write into it."""
    folders = [sample_root, *(p for p in sample_root.rglob("*") if p.is_dir())]
    for folder in folders:
        folder.chmod(0o555)
    yield sample_root
    for folder in folders:
        folder.chmod(0o755)


@pytest.fixture
def no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = unwritable_home(tmp_path)
    monkeypatch.setenv("SKILLSHELF_CACHE_DIR", str(home / ".cache" / "skillshelf"))  # what settings read
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))  # a LibraryConfig with no cache_dir: the platform's
    return home


def test_a_read_only_library_with_no_cache_indexes_into_a_temporary_folder_and_says_so_once(
    read_only_root: Path, no_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    library = SkillLibrary(LibraryConfig(roots=[read_only_root], watch=False))
    temporary = library.index_path.parent
    try:
        library.sync()
        assert library.search("slugify", SearchFilters(), 3)[0].id == "python/slugify"
        assert temporary.is_relative_to(tempfile.gettempdir()) and temporary.name.startswith("skillshelf-")
        assert "temporary folder" in str(library.status()["indexLocation"])
        assert library.status()["status"] == "healthy"
    finally:
        library.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len([w for w in warnings if "cannot be written" in w]) == 1
    assert "SKILLSHELF_CACHE_DIR" in warnings[0] and "Not a directory" in warnings[0]
    assert not temporary.exists()  # the temporary index goes with the library
    assert not (read_only_root / ".skillshelf").exists()


def test_closing_waits_for_the_vocabulary_refresh_before_the_temporary_folder_goes(
    read_only_root: Path, no_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refresh opening its own connection while the folder was being removed made the index file (and
    its lock) again behind the removal, and the folder stayed (CI saw it once)."""
    library = SkillLibrary(LibraryConfig(roots=[read_only_root], watch=False))
    library.sync()
    index, temporary = library.index, library.index_path.parent
    go, reading = threading.Event(), threading.Event()
    read_apart = index._read_apart

    def held_read(sql: str) -> list[tuple[object, ...]]:
        reading.set()
        assert go.wait(30)
        return read_apart(sql)

    monkeypatch.setattr(index, "_read_apart", held_read)
    with index._lock:
        index._refresh_vocabulary_soon()
    assert reading.wait(30)
    closing = threading.Thread(target=library.close)
    closing.start()
    assert wait_for(lambda: index._closed)
    assert closing.is_alive() and temporary.exists()  # waiting for the refresh, folder still there
    go.set()
    closing.join(30)
    assert not closing.is_alive()
    assert not temporary.exists()  # and the refresh, finding the index closed, made nothing again


def test_with_no_temporary_folder_either_the_index_lives_in_memory(
    read_only_root: Path, no_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(no_cache / "tmp"))  # under the file too
    library = SkillLibrary(LibraryConfig(roots=[read_only_root], watch=False))
    try:
        library.sync()
        assert library.sync().parsed == 0  # the signatures are read back from the memory index
        assert library.search("retry flaky network calls", SearchFilters(), 3)[0].id == "python/retry-backoff"
        assert "memory" in str(library.status()["indexLocation"])
    finally:
        library.close()


def test_recording_a_use_with_no_folder_for_usage_says_why_and_reads_answer_empty(
    read_only_root: Path, no_cache: Path
) -> None:
    library = SkillLibrary(LibraryConfig(roots=[read_only_root], watch=False))
    try:
        warnings: list[str] = []
        assert library.read_usage(lambda store: store.usage(), warnings) == [] and warnings == []
        with pytest.raises(Exception, match=r"read-only \(its folder cannot be made") as refused:
            library.usage.record("python/slugify", None, None, "test")
        assert getattr(refused.value, "code", None) == "FILESYSTEM_ERROR"
    finally:
        library.close()


@pytest.fixture
async def client_on_read_only_usage(sample_root: Path, tmp_path: Path) -> AsyncIterator[tuple[Client, Path]]:
    index_dir = tmp_path / "state"
    index_dir.mkdir()
    filled_store(index_dir / USAGE_FILE)  # 300 uses of cat/skill-0..6 from project-0..4
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=index_dir, watch=False))
    try:
        with read_only(index_dir / USAGE_FILE, index_dir):
            server = build_server(Settings(roots=[sample_root]), library, view="full")
            async with Client(server, raise_exceptions=True) as client:
                yield client, index_dir
    finally:
        library.close()


@pytest.mark.anyio
async def test_get_library_stats_counts_the_uses_in_a_read_only_usage_file(
    client_on_read_only_usage: tuple[Client, Path],
) -> None:
    client, _ = client_on_read_only_usage
    is_error, body = await call(client, "getLibraryStats", {})
    assert not is_error, body
    assert sum(u["uses"] for u in body["data"]["mostUsed"]) == 300 and not body["data"].get("warnings")
    is_error, body = await call(client, "trackPatternUsage", {"patternId": "python/slugify"})
    assert is_error and body["error"]["code"] == "FILESYSTEM_ERROR" and "read-only" in body["error"]["message"]


# -- a real server process ----------------------------------------------------------------------


Calls = list[tuple[str, dict[str, Any]]]


def serve_and_call(command: list[str], env: dict[str, str], calls: Calls, log: Path) -> list[dict[str, Any]]:
    """Start `skillshelf serve` (stdio), make `calls`, and return each tool's envelope; stderr goes to `log`."""
    requests: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]  # fmt: skip
    requests += [
        {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
        for n, (name, arguments) in enumerate(calls, start=1)
    ]
    with (
        log.open("w", encoding="utf-8") as errors,
        subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True, env=env
        ) as process,
    ):
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        process.stdin.flush()
        answers: dict[int, dict[str, Any]] = {}
        while len(answers) < len(calls) + 1:
            line = process.stdout.readline()
            assert line, f"the server stopped before answering: {log.read_text(encoding='utf-8')}"
            message = json.loads(line)
            if "id" in message:
                answers[message["id"]] = message
        process.stdin.close()
        process.wait(timeout=deadline())
    return [answers[n]["result"]["structuredContent"] for n in range(1, len(calls) + 1)]


CALLS: Calls = [
    ("searchPatterns", {"query": "retry flaky network calls"}),
    ("getLibraryStats", {}),
    ("trackPatternUsage", {"patternId": "python/slugify"}),
]


def check_answers(answers: list[dict[str, Any]]) -> None:
    searched, stats, tracked = answers
    assert searched["data"]["hits"][0]["id"] == "python/retry-backoff"
    assert stats["data"]["skills"] == 4
    assert not tracked["success"] and tracked["error"]["code"] == "FILESYSTEM_ERROR"
    assert "read-only" in tracked["error"]["message"]


def test_serve_starts_and_answers_with_a_read_only_library_and_no_writable_home(
    read_only_root: Path, tmp_path: Path
) -> None:
    env = home_environment(unwritable_home(tmp_path))
    command = [sys.executable, "-m", "skillshelf", "serve", "--library", str(read_only_root), "--view", "full"]
    check_answers(serve_and_call(command, env, CALLS, tmp_path / "stderr.log"))
    errors = (tmp_path / "stderr.log").read_text(encoding="utf-8")
    assert "Traceback" not in errors
    assert errors.count("search index is kept in a temporary folder") == 1


def can_mount_read_only() -> bool:
    if not (sys.platform == "linux" and hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("unshare")):
        return False
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not can_mount_read_only(), reason="needs root and mount namespaces (unshare --mount)")
def test_serve_starts_and_answers_on_a_read_only_mount_holding_library_and_home(
    sample_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    volume = sample_root.parent  # holds the library and, below, the HOME
    home = volume / "home"
    home.mkdir()
    env = home_environment(home)
    serve = [sys.executable, "-m", "skillshelf", "serve", "--library", str(sample_root), "--view", "full"]
    remount = 'mount --bind -o ro "$0" "$0" && exec "$@"'  # in the new namespace only
    command = ["unshare", "--mount", "--", "sh", "-c", remount, str(volume), *serve]
    before = sorted(p.relative_to(volume) for p in volume.rglob("*"))
    log = tmp_path_factory.mktemp("logs") / "stderr.log"  # outside the read-only volume
    check_answers(serve_and_call(command, env, CALLS, log))
    errors = log.read_text(encoding="utf-8")
    assert "Traceback" not in errors and "Read-only file system" in errors
    assert sorted(p.relative_to(volume) for p in volume.rglob("*")) == before  # nothing was written
