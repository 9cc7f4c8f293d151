"""Eight processes appending at once lose and tear nothing: the notes file's hard requirement."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from skillshelf.memory.service import get_notes
from skillshelf.projects import ProjectRoots
from tests.conftest import deadline
from tests.memory.conftest import notes_file

WRITERS = 8
NOTES_EACH = 500

# Each writer imports, says "ready", waits for "go" so all eight append at the same moment, then
# appends through the real service. Contents vary in length (up to ~3 KB, some multi-byte) so a torn or
# interleaved write would show.
WRITER = """
import sys
from pathlib import Path
from skillshelf.memory.service import add_note
from skillshelf.projects import ProjectRoots

roots, writer = ProjectRoots.of([Path(sys.argv[1])]), int(sys.argv[2])
print("ready", flush=True)
sys.stdin.readline()
for i in range(int(sys.argv[3])):
    content = sys.argv[4].format(writer=writer, i=i) * (1 + (writer * 7 + i) % 40)
    add_note(roots, "app", "general", content, [f"w{writer}"])
"""
CONTENT = "writer {writer} note {i} é✓ "


def expected_content(writer: int, i: int) -> str:
    return CONTENT.format(writer=writer, i=i) * (1 + (writer * 7 + i) % 40)


@pytest.mark.slow  # 8 processes, 4,000 appends
def test_eight_processes_appending_500_notes_each_lose_and_tear_nothing(roots: ProjectRoots, project: Path) -> None:
    torn = b'{"type":"decision","content":"a crash cut th'  # exactly one writer must end this line
    notes_file(project).parent.mkdir()
    notes_file(project).write_bytes(torn)
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(project.parent), str(w), str(NOTES_EACH), CONTENT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )
        for w in range(WRITERS)
    ]
    try:
        for writer in writers:
            assert writer.stdout is not None and writer.stdout.readline().strip() == "ready"
        for writer in writers:
            assert writer.stdin is not None
            writer.stdin.write("go\n")
            writer.stdin.flush()
        assert [w.wait(timeout=deadline()) for w in writers] == [0] * WRITERS
    finally:
        for writer in writers:
            writer.kill()
            writer.communicate()

    raw = notes_file(project).read_bytes()
    assert raw.endswith(b"\n")
    first, *lines = raw.split(b"\n")[:-1]
    assert first == torn and len(lines) == WRITERS * NOTES_EACH
    seen: dict[int, list[int]] = {w: [] for w in range(WRITERS)}
    for line in lines:
        note = json.loads(line.decode("utf-8"))
        writer_number, i = int(note["tags"][0][1:]), int(note["content"].split()[3])
        assert note["content"] == expected_content(writer_number, i)
        seen[writer_number].append(i)
    assert all(order == list(range(NOTES_EACH)) for order in seen.values())  # each writer's notes, in its order

    listed = get_notes(roots, "app", limit=500)
    assert listed.total == WRITERS * NOTES_EACH and listed.skipped_lines == [1]
    assert len({n.id for n in listed.notes}) == 500
