"""A full disk, for real: a tiny tmpfs mounted in a private mount namespace (`unshare`), where the kernel answers
ENOSPC. A start with no room for the index says so naming the file; a note that does not fit leaves nothing of
itself in the notes file, so later reads report no broken line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import deadline

MOUNT = 'mount -t tmpfs -o size=256k tmpfs "$0" && exec "$@"'


def unshare_prefix() -> list[str] | None:
    """How to get a mount namespace of our own here: as root, or in a user namespace; None: no way."""
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return None
    for prefix in (["unshare", "--mount"], ["unshare", "--user", "--map-root-user", "--mount"]):
        probe = subprocess.run([*prefix, "sh", "-c", MOUNT, "/tmp", "true"], capture_output=True, check=False)
        if probe.returncode == 0:
            return prefix
    return None


PREFIX = unshare_prefix()
pytestmark = pytest.mark.skipif(PREFIX is None, reason="needs a mount namespace (unshare) to mount a tiny tmpfs")


def on_full_disk(disk: Path, *command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `command` with a 256 KiB tmpfs mounted at `disk` (only it sees the mount)."""
    assert PREFIX is not None
    disk.mkdir()
    return subprocess.run(
        [*PREFIX, "sh", "-c", MOUNT, str(disk), *command],
        capture_output=True,
        text=True,
        timeout=deadline(60),
        env={**os.environ, **(env or {})},
        check=False,
    )


FILL = """
def fill(folder):
    fd = os.open(os.path.join(folder, "filler"), os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
"""


def test_a_start_with_no_room_for_the_index_names_the_disk_and_the_file(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    script = f"""
import errno, os, sys
{FILL}
library = os.path.join(sys.argv[1], "library")
os.makedirs(os.path.join(library, "python", "slugify"))
with open(os.path.join(library, "python", "slugify", "SKILL.md"), "w") as skill:
    skill.write("---\\nname: slugify\\ndescription: Make slugs from text.\\n---\\n# Slugify\\n")
os.makedirs(os.path.join(library, ".skillshelf"))
fill(sys.argv[1])
os.execv(sys.executable, [sys.executable, "-m", "skillshelf", "search", "slug", "-l", library])
"""
    done = on_full_disk(disk, sys.executable, "-c", script, str(disk))
    assert done.returncode != 0, done.stdout
    assert "No space left on the disk holding the search index" in done.stderr, done.stderr
    assert f"{disk}/library/.skillshelf/index-" in done.stderr and "df -h" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_note_that_does_not_fit_leaves_no_partial_line_and_later_reads_report_none(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    script = f"""
import errno, json, os, sys
from pathlib import Path
from skillshelf.errors import SkillshelfError
from skillshelf.memory.service import add_note, get_notes
from skillshelf.projects import ProjectRoots
{FILL}
dev = os.path.join(sys.argv[1], "dev")
os.makedirs(os.path.join(dev, "app"))
roots = ProjectRoots.of([Path(dev)])
first = add_note(roots, "app", "decision", "fits")
fill(sys.argv[1])
try:
    add_note(roots, "app", "general", "x" * 16000)  # part of it fits in the file's last block
    failure = None
except SkillshelfError as exc:
    failure = exc.message
os.remove(os.path.join(sys.argv[1], "filler"))
third = add_note(roots, "app", "general", "after space was freed")
listed = get_notes(roots, "app")
with open(os.path.join(dev, "app", ".agent-memory", "session-notes.jsonl"), "rb") as notes:
    lines = notes.read().splitlines()
print(json.dumps({{"failure": failure, "notes": [n.content for n in listed.notes], "skipped": listed.skipped_lines,
                  "lines": len(lines)}}))
"""
    done = on_full_disk(disk, sys.executable, "-c", script, str(disk))
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["failure"] is not None and "No space left on device" in found["failure"]
    assert "nothing of the note was kept" in found["failure"] and "Free space on that disk" in found["failure"]
    assert found["notes"] == ["after space was freed", "fits"]
    assert found["skipped"] == [] and found["lines"] == 2
