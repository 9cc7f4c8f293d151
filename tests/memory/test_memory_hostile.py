"""Notes files that would stall or swamp a server: a FIFO in the file's place, a file of hundreds of MB."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.memory import store
from skillshelf.memory.service import add_note, get_notes
from skillshelf.projects import ProjectRoots
from tests.memory.conftest import notes_file
from tests.memory.test_memory_service import seed_line, write_lines

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")


def finishes(call: Callable[[], Any], seconds: float = 20) -> Any:
    """Run `call` on a daemon thread; fail (instead of hanging the suite) if it blocks."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:  # handed to the test below
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "blocked on a FIFO"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def test_a_fifo_in_place_of_the_notes_file_is_refused_without_blocking(roots: ProjectRoots, project: Path) -> None:
    path = notes_file(project)
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    for call in (lambda: get_notes(roots, "app"), lambda: add_note(roots, "app", "general", "hello")):
        with pytest.raises(SkillshelfError) as raised:
            finishes(call)
        assert raised.value.code == ErrorCode.FILESYSTEM_ERROR and "FIFO" in raised.value.message


def test_a_huge_notes_file_is_read_from_its_tail_with_a_warning(
    roots: ProjectRoots, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "MAX_READ_BYTES", 4096)  # stands for the real 32 MiB cap
    lines = [seed_line("general", f"note {i:04d}", f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z") for i in range(400)]
    write_lines(project, *lines)
    listed = get_notes(roots, "app", limit=100)
    contents = [n.content for n in listed.notes]
    assert contents[0] == "note 0399" and "note 0000" not in contents
    assert listed.total < 400 and listed.warnings and "newest notes" in listed.warnings[0]
    assert listed.skipped_lines == []  # the cut-off first line is skipped, not reported as damaged
    add_note(roots, "app", "general", "after")
    again = get_notes(roots, "app", limit=1)
    assert again.notes[0].content == "after" and again.warnings
