"""The memory service over real files: round trips, filters, damaged lines, caps and path safety."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.memory import service
from skillshelf.memory.service import add_note, get_notes
from skillshelf.projects import ProjectRoots
from tests.memory.conftest import notes_file


def seed_line(note_type: str, content: str, timestamp: str, **extra: object) -> str:
    return json.dumps({"type": note_type, "content": content, "timestamp": timestamp, **extra}) + "\n"


def write_lines(project: Path, *lines: str | bytes) -> Path:
    path = notes_file(project)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(line.encode("utf-8") if isinstance(line, str) else line for line in lines))
    return path


def refused(code: ErrorCode, call: object) -> SkillshelfError:
    assert callable(call)
    with pytest.raises(SkillshelfError) as raised:
        call()
    assert raised.value.code == code, raised.value.message
    return raised.value


def test_a_note_round_trips_and_creates_the_folder_and_file_on_first_write(roots: ProjectRoots, project: Path) -> None:
    assert not (project / ".agent-memory").exists()
    added = add_note(roots, "app", "decision", "Use SQLite for the index", ["db", " storage ", "db", ""])
    assert added.project == "app" and added.file == ".agent-memory/session-notes.jsonl"
    assert added.note.tags == ["db", "storage"] and len(added.note.id) == 12
    assert added.note.timestamp.endswith("Z")

    (line,) = notes_file(project).read_text(encoding="utf-8").splitlines()
    assert json.loads(line) == {
        "type": "decision",
        "content": "Use SQLite for the index",
        "timestamp": added.note.timestamp,
        "id": added.note.id,
        "tags": ["db", "storage"],
    }
    listed = get_notes(roots, "app")
    assert listed.notes == [added.note] and listed.total == 1 and listed.skipped_lines == []


def test_notes_come_back_newest_first_and_filter_by_type(roots: ProjectRoots) -> None:
    for note_type in ["decision", "blocker", "decision", "hypothesis", "general"]:
        add_note(roots, "app", note_type, f"a {note_type}")
    everything = get_notes(roots, "app")
    assert [n.type for n in everything.notes] == ["general", "hypothesis", "decision", "blocker", "decision"]
    decisions = get_notes(roots, "app", note_type="decision")
    assert [n.type for n in decisions.notes] == ["decision", "decision"] and decisions.total == 2
    assert get_notes(roots, "app", note_type="blocker").total == 1


def test_since_takes_a_date_or_a_date_time_and_rejects_anything_else(roots: ProjectRoots, project: Path) -> None:
    write_lines(
        project,
        seed_line("decision", "old", "2025-01-10T09:00:00.000Z"),
        seed_line("decision", "middle", "2025-03-01T12:00:00+02:00"),
        seed_line("decision", "new", "2025-06-30T23:59:59Z"),
    )
    assert [n.content for n in get_notes(roots, "app", since="2025-03-01").notes] == ["new", "middle"]
    assert [n.content for n in get_notes(roots, "app", since="2025-03-01T10:00:01Z").notes] == ["new"]
    assert [n.content for n in get_notes(roots, "app", since="2025-03-01T10:00:00").notes] == ["new", "middle"]
    assert get_notes(roots, "app", since="2030-01-01").total == 0
    for bad in ["yesterday", "2025-13-01", "01/02/2025", " "]:
        error = refused(ErrorCode.VALIDATION_ERROR, lambda bad=bad: get_notes(roots, "app", since=bad))
        assert "2025-11-05" in error.message


def test_limit_caps_the_notes_but_total_counts_every_match(roots: ProjectRoots) -> None:
    for i in range(7):
        add_note(roots, "app", "general", f"note {i}")
    limited = get_notes(roots, "app", limit=3)
    assert [n.content for n in limited.notes] == ["note 6", "note 5", "note 4"] and limited.total == 7
    for bad in [0, -1, service.MAX_LIMIT + 1]:
        refused(ErrorCode.VALIDATION_ERROR, lambda bad=bad: get_notes(roots, "app", limit=bad))


def test_a_query_needs_every_word_in_the_content_or_tags_in_any_case(roots: ProjectRoots) -> None:
    add_note(roots, "app", "decision", "Cache the Auth tokens in Redis", ["performance"])
    add_note(roots, "app", "blocker", "Redis is down in staging", ["infra"])
    add_note(roots, "app", "hypothesis", "auth latency comes from DNS")

    def contents(query: str) -> list[str]:
        return [n.content for n in get_notes(roots, "app", query=query).notes]

    assert contents("redis") == ["Redis is down in staging", "Cache the Auth tokens in Redis"]
    assert contents("AUTH redis") == ["Cache the Auth tokens in Redis"]
    assert contents("redis INFRA") == ["Redis is down in staging"]
    assert contents("perf tokens") == ["Cache the Auth tokens in Redis"]  # words match inside longer words
    assert contents("redis dns") == []
    assert len(contents("   ")) == 3


def test_notes_written_by_the_seed_server_read_fine(roots: ProjectRoots, project: Path) -> None:
    write_lines(
        project,
        seed_line("decision", "Use pgvector", "2025-11-05T10:00:00.000Z"),
        seed_line("insight", "An unknown type reads as-is", "2025-11-05T11:00:00.000Z", sessionId="s-1"),
        seed_line("blocker", "CI is red", "2025-11-05T12:00:00.000Z", tags="not-a-list"),
    )
    listed = get_notes(roots, "app")
    assert [(n.id, n.type, n.tags) for n in listed.notes] == [
        ("line-3", "blocker", []),
        ("line-2", "insight", []),
        ("line-1", "decision", []),
    ]
    assert listed.skipped_lines == []
    assert get_notes(roots, "app", note_type="insight").total == 1
    added = add_note(roots, "app", "general", "after the seed's notes")
    assert get_notes(roots, "app").notes[0] == added.note
    assert get_notes(roots, "app").notes[1].id == "line-3"  # derived ids stay put as the file grows


def test_a_torn_last_line_is_reported_and_the_next_note_starts_on_its_own_line(
    roots: ProjectRoots, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    first = add_note(roots, "app", "decision", "first")
    second = add_note(roots, "app", "blocker", "second")
    with notes_file(project).open("ab") as handle:
        handle.write(b'{"type":"decision","content":"cut off by a cra')  # a crash mid-write
    with caplog.at_level(logging.WARNING):
        torn = get_notes(roots, "app")
    assert torn.notes == [second.note, first.note] and torn.skipped_lines == [3]
    assert "app/.agent-memory/session-notes.jsonl: skipped unreadable line(s) 3 (not UTF-8 JSON)" in caplog.text

    third = add_note(roots, "app", "hypothesis", "third")
    lines = notes_file(project).read_bytes().split(b"\n")
    assert lines[2] == b'{"type":"decision","content":"cut off by a cra' and json.loads(lines[3])["content"] == "third"
    after = get_notes(roots, "app")
    assert after.notes == [third.note, second.note, first.note] and after.skipped_lines == [3]


def test_a_complete_last_line_without_a_newline_is_a_note_and_stays_one(roots: ProjectRoots, project: Path) -> None:
    write_lines(project, seed_line("decision", "hand-written", "2025-01-01T00:00:00Z").rstrip("\n"))
    assert [n.content for n in get_notes(roots, "app").notes] == ["hand-written"]
    add_note(roots, "app", "general", "appended")
    listed = get_notes(roots, "app")
    assert [n.content for n in listed.notes] == ["appended", "hand-written"] and listed.skipped_lines == []


def test_garbage_in_the_middle_is_skipped_and_hides_nothing_else(
    roots: ProjectRoots, project: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_lines(
        project,
        seed_line("decision", "kept 1", "2025-01-01T00:00:00Z"),
        "this is not json\n",
        "[1, 2, 3]\n",
        '{"type": "decision", "timestamp": "2025-01-01T00:00:00Z"}\n',
        seed_line("decision", "bad time", "last tuesday"),
        seed_line("", "no type", "2025-01-01T00:00:00Z"),
        '{"type": "decision", "content": 42, "timestamp": "2025-01-01T00:00:00Z"}\n',
        "\n",
        "   \n",
        seed_line("decision", "kept 2", "2025-01-02T00:00:00Z"),
    )
    with caplog.at_level(logging.WARNING):
        listed = get_notes(roots, "app")
    assert [n.content for n in listed.notes] == ["kept 2", "kept 1"]
    assert listed.skipped_lines == [2, 3, 4, 5, 6, 7]  # blank lines hold nothing and are not reported
    assert "skipped unreadable line(s) 2 (not UTF-8 JSON), 3 (not a JSON object), 4 (no string 'type'" in caplog.text
    assert "5 (timestamp 'last tuesday' is not ISO 8601)" in caplog.text


def test_a_line_that_is_not_utf8_is_skipped(roots: ProjectRoots, project: Path) -> None:
    write_lines(
        project,
        seed_line("decision", "before", "2025-01-01T00:00:00Z"),
        b'{"type":"decision","content":"\xff\xfe latin-1 \xe9","timestamp":"2025-01-01T00:00:00Z"}\n',
        seed_line("decision", "after ✓", "2025-01-02T00:00:00Z"),
    )
    listed = get_notes(roots, "app")
    assert [n.content for n in listed.notes] == ["after ✓", "before"] and listed.skipped_lines == [2]


def test_an_empty_or_missing_file_has_no_notes_and_reading_creates_nothing(roots: ProjectRoots, project: Path) -> None:
    assert get_notes(roots, "app").model_dump(exclude_none=True) == {
        "project": "app",
        "notes": [],
        "total": 0,
        "skippedLines": [],
    }
    assert not (project / ".agent-memory").exists()
    write_lines(project, b"")
    assert get_notes(roots, "app").total == 0


def test_content_over_16_kib_is_refused_and_nothing_is_written(roots: ProjectRoots, project: Path) -> None:
    error = refused(
        ErrorCode.CONTENT_TOO_LARGE,
        lambda: add_note(roots, "app", "general", "é" * (service.MAX_CONTENT_BYTES // 2 + 1)),
    )
    assert "16 KiB" in error.message and "split" in error.message
    assert not (project / ".agent-memory").exists()
    add_note(roots, "app", "general", "x" * service.MAX_CONTENT_BYTES)  # exactly the cap is fine
    assert get_notes(roots, "app").total == 1


def test_tags_are_capped_in_count_and_length(roots: ProjectRoots) -> None:
    refused(ErrorCode.CONTENT_TOO_LARGE, lambda: add_note(roots, "app", "general", "x", [f"t{i}" for i in range(21)]))
    refused(ErrorCode.CONTENT_TOO_LARGE, lambda: add_note(roots, "app", "general", "x", ["t" * 65]))
    assert add_note(roots, "app", "general", "x", [f"t{i}" for i in range(20)]).note.tags[-1] == "t19"


@pytest.mark.parametrize(
    ("note_type", "content"),
    [("idea", "x"), ("Decision", "x"), ("decision", ""), ("decision", " \n"), ("general", "\ud800")],
)
def test_invalid_notes_are_a_validation_error(roots: ProjectRoots, project: Path, note_type: str, content: str) -> None:
    refused(ErrorCode.VALIDATION_ERROR, lambda: add_note(roots, "app", note_type, content))
    assert not (project / ".agent-memory").exists()


def test_line_breaking_characters_stay_escaped_so_every_note_is_one_line(roots: ProjectRoots, project: Path) -> None:
    content = "one\ntwo\r\nthree\u2028four\u2029five\u0085six 🎉"
    added = add_note(roots, "app", "general", content)
    text = notes_file(project).read_text(encoding="utf-8")
    assert len(text.splitlines()) == 1 and "🎉" in text  # non-ASCII stays readable
    assert get_notes(roots, "app").notes == [added.note] and added.note.content == content


def test_a_symlinked_agent_memory_escaping_the_project_is_refused(
    roots: ProjectRoots, project: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "session-notes.jsonl").write_text(seed_line("decision", "secret", "2025-01-01T00:00:00Z"), "utf-8")
    (project / ".agent-memory").symlink_to(outside)
    error = refused(ErrorCode.ACCESS_DENIED, lambda: add_note(roots, "app", "decision", "leak"))
    assert str(tmp_path) not in error.message and "app/.agent-memory" in error.message
    refused(ErrorCode.ACCESS_DENIED, lambda: get_notes(roots, "app"))
    assert (outside / "session-notes.jsonl").read_text("utf-8").count("\n") == 1  # nothing appended


def test_a_symlinked_notes_file_escaping_the_project_is_refused(
    roots: ProjectRoots, project: Path, tmp_path: Path
) -> None:
    (project / ".agent-memory").mkdir()
    notes_file(project).symlink_to(tmp_path / "outside" / "stolen.jsonl")
    refused(ErrorCode.ACCESS_DENIED, lambda: add_note(roots, "app", "decision", "leak"))
    assert not (tmp_path / "outside" / "stolen.jsonl").exists()


def test_a_symlink_that_stays_inside_the_project_is_followed(roots: ProjectRoots, project: Path) -> None:
    (project / "docs" / "memory").mkdir(parents=True)
    (project / ".agent-memory").symlink_to(project / "docs" / "memory")
    added = add_note(roots, "app", "decision", "kept with the docs")
    assert (project / "docs" / "memory" / "session-notes.jsonl").exists()
    assert get_notes(roots, "app").notes == [added.note]


def test_an_agent_memory_that_is_a_file_is_a_filesystem_error(
    roots: ProjectRoots, project: Path, tmp_path: Path
) -> None:
    (project / ".agent-memory").write_text("not a folder", encoding="utf-8")
    for call in (lambda: add_note(roots, "app", "decision", "x"), lambda: get_notes(roots, "app")):
        error = refused(ErrorCode.FILESYSTEM_ERROR, call)
        assert "app/.agent-memory/session-notes.jsonl" in error.message and str(tmp_path) not in error.message


def snapshot(tree: Path) -> list[str]:
    return sorted(str(p.relative_to(tree)) for p in tree.rglob("*"))


@pytest.mark.parametrize("escape", ["../outside", "app/../../outside", "ABSOLUTE_OUTSIDE", "/tmp", "~"])
def test_paths_outside_the_project_roots_are_refused_and_nothing_is_created(
    roots: ProjectRoots, tmp_path: Path, escape: str
) -> None:
    project = escape.replace("ABSOLUTE_OUTSIDE", str(tmp_path / "outside"))
    before = snapshot(tmp_path)
    error = refused(ErrorCode.ACCESS_DENIED, lambda: add_note(roots, project, "decision", "x"))
    refused(ErrorCode.ACCESS_DENIED, lambda: get_notes(roots, project))
    assert snapshot(tmp_path) == before
    assert str(tmp_path / "outside") not in error.message.replace(project, "")


def test_an_unknown_project_is_project_not_found_with_the_known_ones(roots: ProjectRoots) -> None:
    error = refused(ErrorCode.PROJECT_NOT_FOUND, lambda: add_note(roots, "nope", "decision", "x"))
    assert "app" in error.message


def test_the_cache_sees_appends_rewrites_and_in_place_edits(roots: ProjectRoots, project: Path) -> None:
    path = write_lines(project, seed_line("decision", "one", "2025-01-01T00:00:00Z"))
    assert [n.content for n in get_notes(roots, "app").notes] == ["one"]
    with path.open("a", encoding="utf-8") as handle:  # another writer (the seed's server, an editor)
        handle.write(seed_line("decision", "two", "2025-01-02T00:00:00Z"))
    assert [n.content for n in get_notes(roots, "app").notes] == ["two", "one"]

    write_lines(project, seed_line("blocker", "rewritten", "2025-02-01T00:00:00Z"))  # shorter: a rewrite
    assert [n.content for n in get_notes(roots, "app").notes] == ["rewritten"]

    stat = path.stat()
    path.write_bytes(path.read_bytes().replace(b"rewritten", b"REWRITTEN"))  # same size, in place
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert [n.content for n in get_notes(roots, "app").notes] == ["REWRITTEN"]

    grown = seed_line("general", "edited", "2025-03-01T00:00:00Z") + seed_line(
        "general", "more", "2025-03-02T00:00:00Z"
    )
    path.write_text(grown, encoding="utf-8")  # longer, but not an append
    assert [n.content for n in get_notes(roots, "app").notes] == ["more", "edited"]


def test_a_10000_note_file_reads_and_filters_correctly_from_the_cache(roots: ProjectRoots, project: Path) -> None:
    types = ["decision", "hypothesis", "blocker", "general"]
    write_lines(
        project,
        *(
            seed_line(types[i % 4], f"note {i} on the auth cache", f"2025-01-01T00:{i // 600:02d}:{i % 60:02d}Z")
            for i in range(10_000)
        ),
    )
    assert get_notes(roots, "app").total == 10_000  # the first read parses the file
    # Later reads come from the cache (speed is measured by tests/memory/bench_notes.py, not asserted here).
    for _ in range(3):
        decisions = get_notes(roots, "app", note_type="decision", query="auth", limit=500)
        assert decisions.total == 2_500 and len(decisions.notes) == 500
        assert {n.type for n in decisions.notes} == {"decision"}
