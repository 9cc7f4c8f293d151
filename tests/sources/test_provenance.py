"""`provenance_of(root, skill_path)`: where a skill came from (source, commit, license) for every path a
surface may hold, none for a skill written by hand, and always what the lock says now."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from skillshelf.library.sources import provenance
from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.provenance import Provenance, provenance_for_id, provenance_of
from tests.sources.helpers import Repo, add, skill_md


@pytest.fixture
def sourced(tmp_path: Path) -> tuple[Path, Repo]:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms.", license="Proprietary, see LICENSE.txt")
    repo.skill("release-notes", "Draft release notes.")
    repo.write("retry.md", "# Retry\n\nRetry flaky calls.\n")
    repo.write("retry.py", "def retry() -> None:\n    pass\n")
    repo.write("LICENSE", "Apache License\n                           Version 2.0, January 2004\n")
    repo.commit("first")
    root = tmp_path / "library"
    root.mkdir()
    add(root, repo.url, name="team")
    (root / "hand" / "mine").mkdir(parents=True)
    (root / "hand" / "mine" / "SKILL.md").write_text(skill_md("mine", "Ours."), encoding="utf-8")
    return root, repo


def test_every_path_of_a_sourced_skill_names_its_source_commit_and_license(sourced: tuple[Path, Repo]) -> None:
    root, repo = sourced
    commit = repo.git("rev-parse", "HEAD")
    apache = Provenance("team", "git", repo.url, commit, "Apache-2.0")
    for path in ("team/release-notes", "team/release-notes/SKILL.md", str(root / "team" / "release-notes")):
        assert provenance_of(root, path) == apache
    for path in ("team/retry.md", "team/retry.py"):
        assert provenance_of(root, path) == apache
    assert provenance_for_id(root, "team/retry") == apache
    own = provenance_of(root, "team/pdf-fill/SKILL.md")
    assert own is not None and own.license == "Proprietary, see LICENSE.txt"  # the skill's own declaration wins
    assert apache.brief == f"team@{commit[:8]} (Apache-2.0)"


def test_a_skill_written_by_hand_or_a_root_without_a_lock_has_none(sourced: tuple[Path, Repo], tmp_path: Path) -> None:
    root, _ = sourced
    assert provenance_of(root, "hand/mine") is None and provenance_of(root, "team") is None
    assert provenance_of(root, "/elsewhere/team/pdf-fill") is None
    assert provenance_of(tmp_path, "team/pdf-fill") is None


def test_provenance_follows_the_lock_when_it_changes(sourced: tuple[Path, Repo]) -> None:
    root, repo = sourced
    assert provenance_of(root, "team/pdf-fill") is not None
    repo.skill("release-notes", "Draft release notes, better.")
    newer = repo.commit("second")
    with open_shelf(root) as shelf:
        prepared = shelf.prepare_update("team")
        assert prepared is not None
        shelf.apply(prepared)
    found = provenance_of(root, "team/release-notes")
    assert found is not None and found.commit == newer
    with open_shelf(root) as shelf:
        shelf.remove("team")
    assert provenance_of(root, "team/release-notes") is None


def test_the_lock_is_read_once_while_it_does_not_change(
    sourced: tuple[Path, Repo], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = sourced
    provenance_of(root, "team/pdf-fill")
    reads: list[Path] = []
    real = provenance._build

    def counted(path: Path) -> dict[str, Provenance]:
        reads.append(path)
        return real(path)

    monkeypatch.setattr(provenance, "_build", counted)
    for _ in range(50):
        assert provenance_of(root, "team/pdf-fill") is not None
    assert reads == []
    lock = root / "skillshelf.lock"
    stamp = lock.stat().st_mtime_ns + 1_000_000
    os.utime(lock, ns=(stamp, stamp))
    assert provenance_of(root, "team/pdf-fill") is not None and reads == [lock]


def test_a_damaged_lock_gives_no_provenance_rather_than_an_error(sourced: tuple[Path, Repo]) -> None:
    root, _ = sourced
    (root / "skillshelf.lock").write_text("[source.team\nkind = ", encoding="utf-8")
    assert provenance_of(root, "team/pdf-fill") is None
