"""A damaged index is derived data: found where it surfaces, moved aside, rebuilt from the files, said once.

Damage is made for real: garbage written over pages of a real index file (as the review did: 20
pages), or FTS5's own index blobs scrambled through SQLite (damage the quick check cannot see and
only a query meets).
"""

from __future__ import annotations

import contextvars
import logging
import random
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any, cast

import pytest
from mcp import Client

from skillshelf.artifacts.archive import SessionArchive
from skillshelf.artifacts.index import SessionFilters
from skillshelf.library.db import file_identity
from skillshelf.library.index import sync as skill_sync
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import SearchFilters
from skillshelf.library.indexing import freshness, fts
from skillshelf.projects import ProjectRoots
from tests.artifacts.conftest import session_file
from tests.conftest import call, deadline, three_file, wait_until
from tests.live_server import skillshelf_http

SKILLS = 300
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"]
PAGE = 4096


def make_library(root: Path) -> Path:
    for i in range(SKILLS):
        body = (
            f"# Skill {i}\n\nDoes {WORDS[i % 12]} work number{i} with {WORDS[(i * 7) % 12]} care.\n\n"
            + "lorem ipsum dolor sit amet " * 30
            + f"\n\n## Steps\n\nunique{i} steps.\n"
        )
        three_file(root, f"cat{i % 10}", f"skill-{i}", body)
    return root


def overwrite_pages(path: Path, pages: int = 20, seed: int = 21) -> None:
    """Garbage over `pages` pages of the file, never the first (its header): SQLite still opens it,
    and the damage is met by whatever reads those pages."""
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    for page in rng.sample(range(1, len(data) // PAGE), pages):
        data[page * PAGE : (page + 1) * PAGE] = rng.randbytes(PAGE)
    path.write_bytes(bytes(data))


def overwrite_sources_roots(path: Path) -> None:
    """Garbage over the root pages of the table of sources and its key: opening the file and searching
    it never read them, so only the quick check at a sync's start finds the damage."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        sql = "SELECT rootpage FROM sqlite_master WHERE tbl_name = 'sources' AND rootpage > 0"
        roots = [int(row[0]) for row in conn.execute(sql)]
    data = bytearray(path.read_bytes())
    rng = random.Random(5)
    for page in roots:
        data[(page - 1) * PAGE : page * PAGE] = rng.randbytes(PAGE)
    path.write_bytes(bytes(data))


# Over an FTS5 leaf block: a header saying the leaf is 65,535 bytes long, longer than any block, then zeros.
# FTS5 reports every read of such a leaf as corrupt. (Random bytes did not always: 1 run in 30 a query for a
# word read garbage that parsed, and silently matched nothing.)
MALFORMED_LEAVES = "X'0004FFFF' || zeroblob(max(length(block) - 4, 0))"


def scramble_fts_blobs(path: Path, table: str = "skills_fts_data") -> None:
    """Write malformed leaves over FTS5's index blobs through SQLite: every page stays a valid b-tree page
    (the quick check passes), yet every full-text query finds its structure malformed."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(f"UPDATE {table} SET block = {MALFORMED_LEAVES} WHERE id > 10")


def twelve_calls(library: SkillLibrary) -> list[object]:
    """What a session asks: searches, a get, categories, the overview, the count, the findings."""
    answers: list[object] = [sorted(s.id for s in library.search(w, SearchFilters(), 100)) for w in WORDS[:7]]
    answers.append(library.get("cat3/skill-13") is not None)
    answers.append([(c.name, c.skills) for c in library.categories()])
    answers.append(len(library.overview()))
    answers.append(library.index.count())
    answers.append(len(library.findings()))
    return answers


def corrupt_copies(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if ".corrupt-" in p.name and not p.name.endswith(("-wal", "-shm")))


def damage_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING and "damaged" in r.getMessage()]


@pytest.fixture(scope="module")
def library_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_library(tmp_path_factory.mktemp("damage") / "library")


@pytest.fixture
def config(library_root: Path, tmp_path: Path) -> LibraryConfig:
    return LibraryConfig(roots=[library_root], index_dir=tmp_path / "idx", watch=False)


@pytest.fixture
def expected(config: LibraryConfig) -> list[object]:
    """The answers of an undamaged index (built in a folder of its own)."""
    clean = SkillLibrary(LibraryConfig(roots=config.roots, index_dir=config.index_dir.parent / "clean", watch=False))  # type: ignore[union-attr]
    try:
        clean.sync()
        return twelve_calls(clean)
    finally:
        clean.close()


@pytest.fixture
def built(config: LibraryConfig) -> Path:
    library = SkillLibrary(config)
    library.sync()
    library.close()
    return library.index_path


@pytest.fixture
def started(config: LibraryConfig) -> Iterator[SkillLibrary]:
    library = SkillLibrary(config)
    library.start()  # as a server does: a warm, complete index answers while the quick re-check runs
    yield library
    library.close()


def test_twenty_overwritten_pages_are_rebuilt_at_start_and_every_call_answers_in_full(
    config: LibraryConfig, built: Path, expected: list[object], caplog: pytest.LogCaptureFixture
) -> None:
    overwrite_pages(built)
    damaged = built.read_bytes()
    caplog.set_level(logging.INFO)
    library = SkillLibrary(config)
    library.start()
    try:
        assert twelve_calls(library) == expected
        assert library.status()["status"] == "healthy"
        rebuilt = library.status()["indexRebuilt"]
        notice = library.index_warning()
        assert notice is not None and "rebuilt from the files" in notice and rebuilt["keptAs"] in notice  # type: ignore[index]
        assert library.index_warning() is None  # said once
    finally:
        library.close()
    (kept,) = corrupt_copies(built.parent)
    assert kept.read_bytes() == damaged and kept.name == rebuilt["keptAs"]  # type: ignore[index]
    assert len(damage_warnings(caplog)) == 1


def test_a_restart_after_the_rebuild_finds_a_sound_index_and_says_nothing(
    config: LibraryConfig, built: Path, expected: list[object], caplog: pytest.LogCaptureFixture
) -> None:
    overwrite_pages(built)
    first = SkillLibrary(config)
    first.sync()
    first.close()
    caplog.clear()
    again = SkillLibrary(config)
    again.start()
    try:
        assert twelve_calls(again) == expected
        assert again.sync().parsed == 0
        assert "indexRebuilt" not in again.status() and again.index_warning() is None
    finally:
        again.close()
    assert damage_warnings(caplog) == [] and len(corrupt_copies(built.parent)) == 1


def test_damage_a_query_meets_while_serving_is_rebuilt_and_the_query_answers(
    config: LibraryConfig, built: Path, expected: list[object], started: SkillLibrary
) -> None:
    assert twelve_calls(started) == expected  # checked and serving
    scramble_fts_blobs(built)
    assert twelve_calls(started) == expected
    assert started.status()["indexRebuilt"]["reason"] == "database disk image is malformed"  # type: ignore[index]
    assert len(corrupt_copies(built.parent)) == 1


def test_a_sync_that_meets_damage_rebuilds_the_index_instead_of_failing(
    config: LibraryConfig, built: Path, expected: list[object]
) -> None:
    library = SkillLibrary(config)
    try:
        assert library.sync().parsed == 0  # checked: sound
        overwrite_pages(built, pages=len(built.read_bytes()) // PAGE - 1)  # the sync's own reads meet it
        assert library.sync().parsed == SKILLS
        assert library.sync_error is None and twelve_calls(library) == expected
    finally:
        library.close()


def test_a_file_that_is_not_a_database_is_kept_aside_and_rebuilt(config: LibraryConfig, built: Path) -> None:
    for suffix in ("-wal", "-shm"):
        Path(f"{built}{suffix}").unlink(missing_ok=True)
    built.write_bytes(b"this is not a database" * 400)
    library = SkillLibrary(config)
    try:
        assert library.sync().parsed == SKILLS and library.index.count() == SKILLS
    finally:
        library.close()
    (kept,) = corrupt_copies(built.parent)
    assert kept.read_bytes().startswith(b"this is not a database")


def test_only_the_latest_damaged_copy_is_kept(config: LibraryConfig, built: Path) -> None:
    for seed in (1, 2):
        overwrite_pages(built, seed=seed)
        library = SkillLibrary(config)
        library.sync()
        library.close()
    assert len(corrupt_copies(built.parent)) == 1


OPEN_AND_COUNT = """
import sys
from pathlib import Path
from skillshelf.library.index import sync as skill_sync
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.db import file_identity
from skillshelf.library.index.store import SearchFilters
from skillshelf.library.indexing import freshness, fts
library = SkillLibrary(LibraryConfig(roots=[Path(sys.argv[1])], index_dir=Path(sys.argv[2]), watch=False))
sys.stdin.readline()  # every process has its connection open before any of them syncs
library.start()
print("started", flush=True)  # its connection is open and its start has decided whether to wait
hits = [len(library.search(word, SearchFilters(), 100)) for word in ("alpha", "bravo", "charlie")]
print(library.index.count(), sum(hits), flush=True)
library.close()
"""
# A sync held at a known point: it has moved the damaged file aside and started a new one, and has written
# nothing to it yet. It says "rebuilding" and goes on at the test's word (a line on stdin).
HELD_REBUILD = """
import sys
from pathlib import Path
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import SkillIndex
real_signatures = SkillIndex.signatures
def held_signatures(self):
    found = real_signatures(self)
    if self.renewal is not None and not found:
        print("rebuilding", flush=True)
        sys.stdin.readline()
    return found
SkillIndex.signatures = held_signatures
library = SkillLibrary(LibraryConfig(roots=[Path(sys.argv[1])], index_dir=Path(sys.argv[2]), watch=False))
library.sync()
print(library.index.count(), flush=True)
library.close()
"""


# The damaged file is moved aside and its -wal and -shm are not yet: the sync says "half moved" and goes on at
# the test's word.
HALF_MOVED = """
import sys
from pathlib import Path
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
real_replace = Path.replace
def held_replace(self, target):
    moved = real_replace(self, target)
    if self.suffix == ".sqlite3":
        print("half moved", flush=True)
        sys.stdin.readline()
    return moved
Path.replace = held_replace
library = SkillLibrary(LibraryConfig(roots=[Path(sys.argv[1])], index_dir=Path(sys.argv[2]), watch=False))
library.sync()
print(library.index.count(), flush=True)
library.close()
"""
OPEN_AND_COUNT_LOGGED = "import logging\nlogging.basicConfig(level=logging.INFO)\n" + OPEN_AND_COUNT


def next_line(process: subprocess.Popen[str], timeout: float = 60.0, *, stderr: bool = False) -> str:
    """The process's next line of output (or of its errors); the test fails (and the process is killed) if
    none comes in time."""
    stream = process.stderr if stderr else process.stdout
    assert stream is not None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.append(stream.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    if reader.is_alive():
        process.kill()
        pytest.fail(f"no output within {timeout:.0f} s: the process hung")
    return lines[0]


def say(process: subprocess.Popen[str], line: str) -> None:
    assert process.stdin is not None
    process.stdin.write(line + "\n")
    process.stdin.flush()


def python(script: str, config: LibraryConfig) -> subprocess.Popen[str]:
    assert config.index_dir is not None
    command = [sys.executable, "-c", script, str(config.roots[0]), str(config.index_dir)]
    return subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_processes_that_meet_one_damaged_index_at_once_move_it_aside_once_and_all_answer(
    config: LibraryConfig, built: Path, expected: list[object]
) -> None:
    overwrite_pages(built)
    processes = [python(OPEN_AND_COUNT, config) for _ in range(4)]
    outcomes = []
    for process in processes:
        say(process, "go")
    for process in processes:
        with process:
            outcomes.append(process.communicate(timeout=deadline(120)))
    searched = sum(len(cast(list[str], hits)) for hits in expected[:3])
    for process, (out, err) in zip(processes, outcomes, strict=True):
        assert process.returncode == 0, err
        assert out.split() == ["started", str(SKILLS), str(searched)], err
    assert len(corrupt_copies(built.parent)) == 1
    with closing(sqlite3.connect(built)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_process_that_starts_while_another_rebuilds_the_damaged_index_waits_for_the_rebuild(
    config: LibraryConfig, built: Path, expected: list[object]
) -> None:
    """The failure seen in a full run, made certain: one process has moved the damaged file aside and holds a new,
    empty one; another starts right then (the marker of the old, complete index still beside it). It must wait
    for the rebuild, not answer "0 skills" from the empty file."""
    overwrite_pages(built)
    with python(HELD_REBUILD, config) as builder:
        try:
            assert next_line(builder) == "rebuilding\n", builder.communicate(timeout=60)[1]
            with python(OPEN_AND_COUNT, config) as reader:  # opens the path now: the new, empty file
                try:
                    say(reader, "go")
                    assert next_line(reader) == "started\n", reader.communicate(timeout=60)[1]
                    say(builder, "")  # only now may the rebuild go on
                    searched = sum(len(cast(list[str], hits)) for hits in expected[:3])
                    assert next_line(reader).split() == [str(SKILLS), str(searched)]
                finally:
                    reader.kill()
            assert next_line(builder).split() == [str(SKILLS)]
        finally:
            builder.kill()
    assert len(corrupt_copies(built.parent)) == 1


def test_a_process_that_opens_the_index_while_another_moves_it_aside_waits_for_the_new_file(
    config: LibraryConfig, built: Path, expected: list[object]
) -> None:
    """Opening a SQLite file while another process renames it and its -wal and -shm one by one fails with an
    I/O error (a server that could not start: seen 1 run in 30), or pairs the new file with the old one's -shm.
    An open waits until the move and the new file are done, and says why."""
    overwrite_pages(built)
    with python(HALF_MOVED, config) as mover:
        try:
            assert next_line(mover) == "half moved\n", mover.communicate(timeout=60)[1]
            with python(OPEN_AND_COUNT_LOGGED, config) as opener:
                try:
                    said = ""
                    while "waiting" not in said:
                        said = next_line(opener, stderr=True)
                        assert said, "the opener ended without waiting: " + opener.communicate(timeout=60)[1]
                    assert "being replaced by another process" in said
                    say(mover, "")
                    say(opener, "go")
                    assert next_line(opener) == "started\n"
                    searched = sum(len(cast(list[str], hits)) for hits in expected[:3])
                    assert next_line(opener).split() == [str(SKILLS), str(searched)]
                finally:
                    opener.kill()
            assert next_line(mover).split() == [str(SKILLS)]
        finally:
            mover.kill()
    assert len(corrupt_copies(built.parent)) == 1
    with closing(sqlite3.connect(built)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_warm_start_whose_recheck_finds_damage_waits_for_its_own_rebuild(
    config: LibraryConfig, built: Path, expected: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Damage only the quick check sees: the start answers at once from the index it judged complete, then its
    own re-check moves the file aside and starts a new one. From then until the rebuild ends, reads wait."""
    overwrite_sources_roots(built)
    release = threading.Event()
    real_parse = skill_sync.parse_sources

    def held_parse(sources: list[Any], max_bytes: int) -> Iterator[Any]:
        assert release.wait(60)
        yield from real_parse(sources, max_bytes)

    monkeypatch.setattr(skill_sync, "parse_sources", held_parse)
    library = SkillLibrary(config)
    answers: list[object] = []
    try:
        assert library.index.damage is None  # opening it met nothing
        library.start()
        deadline = time.monotonic() + 60
        while library.index.renewal is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert library.index.renewal is not None and "malformed" in library.index.renewal.reason
        assert library.needs_sync()  # the new file is empty: a read now waits for the rebuild
        reader = threading.Thread(target=lambda: answers.extend(twelve_calls(library)))
        reader.start()
        release.set()
        reader.join(60)
        assert not reader.is_alive()
        assert answers == expected
    finally:
        release.set()
        library.close()


def test_a_damaged_session_index_is_rebuilt_when_a_search_meets_it(tmp_path: Path) -> None:
    projects = tmp_path / "dev"
    for n in range(40):
        text = f"# Topic {n}\n\nWorked on billing{n} and invoices with care.\n\n" + "notes " * 200
        session_file(projects / "app", f"2025-10-{n % 28 + 1:02d}-topic-{n}.md", text)
    archive = SessionArchive(ProjectRoots.of([projects]), index_dir=tmp_path / "idx", watch=False)
    try:
        archive.sync()
        before = [s.session_id for s in archive.search("invoices", SessionFilters(), 50)]
        assert len(before) == 40
        scramble_fts_blobs(archive.index_path, "sessions_fts_data")
        assert [s.session_id for s in archive.search("invoices", SessionFilters(), 50)] == before
        assert archive.index.renewal is not None
    finally:
        archive.close()


def test_a_server_holding_the_old_file_follows_the_replacement_and_moves_nothing(
    config: LibraryConfig, built: Path, expected: list[object]
) -> None:
    """Two servers on one index: the one that meets the damage rebuilds it; the other, still holding the
    damaged file, sees another file at the path, reopens it and answers from it."""
    first, second = SkillLibrary(config), SkillLibrary(config)
    try:
        first.sync()
        second.sync()
        scramble_fts_blobs(built)
        assert twelve_calls(first) == expected  # met the damage: moved it aside, rebuilt
        assert twelve_calls(second) == expected
        assert second.index.renewal is None and second.index.path.stat().st_ino == built.stat().st_ino
    finally:
        first.close()
        second.close()
    assert len(corrupt_copies(built.parent)) == 1


def test_a_needs_sync_answer_stands_once_for_its_own_index_in_its_own_context(
    config: LibraryConfig, built: Path, expected: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`needs_sync`'s look at the file spares the next read's stat, and only that one: a later read, a read
    in another context (another call's worker thread) or a read past VOUCHED_S looks at the file itself, so a
    file another process replaced meanwhile is still followed."""
    stats: list[Path] = []

    def watched(path: Path) -> tuple[int, int] | None:
        stats.append(path)
        return file_identity(path)

    monkeypatch.setattr(fts, "file_identity", watched)
    first, second = SkillLibrary(config), SkillLibrary(config)
    try:
        first.sync()
        second.sync()
        stats.clear()
        assert not second.needs_sync() and len(stats) == 1
        second.ensure_fresh()
        assert len(stats) == 1  # the look just made stands for this read
        second.ensure_fresh()
        assert len(stats) == 2  # ... and for that one only
        assert not contextvars.copy_context().run(second.needs_sync)
        second.ensure_fresh()
        assert len(stats) == 4  # another context's answer is not this one's
        assert not second.needs_sync()
        monkeypatch.setattr(freshness, "VOUCHED_S", 0.0)
        second.ensure_fresh()
        assert len(stats) == 6  # too old to stand
        assert not second.needs_sync()
        scramble_fts_blobs(built)
        assert twelve_calls(first) == expected  # another library replaced the damaged file
        monkeypatch.setattr(freshness, "VOUCHED_S", 60.0)
        assert second.needs_sync()  # the file at the path is another one: the next read reopens it
        assert twelve_calls(second) == expected
        assert second.index.path.stat().st_ino == built.stat().st_ino
    finally:
        first.close()
        second.close()


@pytest.mark.anyio
async def test_health_and_the_first_search_say_the_index_was_rebuilt(sample_root: Path, tmp_path: Path) -> None:
    library = SkillLibrary(LibraryConfig(roots=[sample_root], watch=False))  # where the server keeps it
    library.sync()
    library.close()
    overwrite_pages(library.index_path, pages=len(library.index_path.read_bytes()) // PAGE - 1)
    arguments = ["serve", "--http", "-l", str(sample_root)]
    with skillshelf_http(arguments, tmp_path / "server.log") as server:
        # a warm start answers from the old index until its re-check meets the damage: wait for that
        wait_until(lambda: "indexRebuilt" in (server.health() or {}), "/health never said the index was rebuilt")
        health = server.health()
        assert health is not None and health["status"] == "healthy" and health["skills"] == 4
        assert "keptAs" in health["indexRebuilt"]
        async with Client(f"{server.base}/mcp") as client:
            answers = [await call(client, "searchPatterns", {"query": "slugify"}) for _ in range(2)]
    (first_error, first), (_, second) = answers
    assert not first_error and first["data"]["hits"][0]["id"] == "python/slugify"
    assert any("rebuilt from the files" in w for w in first["data"]["warnings"])
    assert not second["data"].get("warnings")  # said once
    log = (tmp_path / "server.log").read_text(encoding="utf-8")
    assert log.count("is damaged") == 1 and "Traceback" not in log
