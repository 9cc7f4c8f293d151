"""The library's content digest (/health): the same files give the same digest wherever they lie and
whenever they were written; any change of a served file's bytes, name or mode gives another one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from skillshelf.library.index.digest import LibraryDigest
from skillshelf.library.skill.discovery import discover
from tests.conftest import deadline, synced_library


def digest_of(root: Path) -> str:
    digest = LibraryDigest()
    digest.request(discover([root]).sources)
    assert digest.wait(deadline())
    assert digest.value is not None and digest.value.startswith("sha256:"), digest.status()
    return digest.value


def test_the_same_files_elsewhere_and_written_later_have_the_same_digest(sample_root: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(sample_root, tmp_path / "elsewhere" / "library", symlinks=True)
    for path in copy.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000), follow_symlinks=False)  # other times, same bytes
    assert digest_of(copy) == digest_of(sample_root)


def test_a_changed_byte_deep_in_a_skill_a_new_file_or_a_mode_changes_it(sample_root: Path) -> None:
    before = digest_of(sample_root)
    script = sample_root / "git" / "release-notes" / "scripts" / "collect.sh"
    script.write_text(script.read_text() + "# one more line\n")  # a deep file: no skill signature changes
    edited = digest_of(sample_root)
    script.chmod(0o755)
    made_executable = digest_of(sample_root)
    (sample_root / "git" / "release-notes" / "references").mkdir()
    (sample_root / "git" / "release-notes" / "references" / "notes.md").write_text("more\n")
    added = digest_of(sample_root)
    assert len({before, edited, made_executable, added}) == 4


def test_a_reused_skill_digest_still_sees_an_edit_that_keeps_the_size(sample_root: Path) -> None:
    """A second pass reuses the digests of skills whose files kept their stamps; an edit changes the
    modification time even when the size stays, so the skill is read again."""
    digest = LibraryDigest()
    digest.request(discover([sample_root]).sources)
    assert digest.wait(deadline())
    first = digest.value
    doc = sample_root / "database" / "rls-policy.md"
    text = doc.read_text()
    doc.write_text(text.replace("tenant", "TENANT"))  # same length
    stat = doc.stat()
    os.utime(doc, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    digest.request(discover([sample_root]).sources)
    assert digest.wait(deadline())
    assert digest.value != first and digest.value == digest_of(sample_root)


def test_the_library_reports_its_digest_once_asked_and_after_each_sync_from_then_on(
    sample_root: Path, tmp_path: Path
) -> None:
    with synced_library(sample_root, tmp_path / "idx") as library:
        assert library.digest.value is None  # nobody asked: a stdio server never reads every file for it
        library.status()  # asked (as /health does): worked out in the background from now on
        assert library.digest.wait(deadline())
        status = library.status()["library"]
        assert isinstance(status, dict) and status["digest"] == digest_of(sample_root)
        assert status["skills"] == library.index.count() and status["computedAt"]
        (sample_root / "database" / "rls-policy.md").unlink()
        library.sync()
        assert library.digest.wait(deadline())
        after = library.status()["library"]
        assert isinstance(after, dict) and after["digest"] != status["digest"]
        assert after["skills"] == status["skills"] - 1


def test_before_its_first_pass_the_digest_says_it_is_being_worked_out() -> None:
    assert LibraryDigest().status() == {"digest": None, "state": "computing"}
