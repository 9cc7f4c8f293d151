"""`skillshelf remove`: a whole source or one skill of it; usage history kept; a removed skill stays out
on later updates; local edits need --force; an unknown name lists the sources there are."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.lock import read_lock
from skillshelf.library.usage.store import UsageStore
from tests.sources.helpers import Repo, add, staging_left


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.")
    repo.skill("release-notes", "Draft release notes.")
    repo.write("retry.md", "# Retry\n\nRetry flaky calls.\n")
    repo.write("retry-SKILL.md", "---\ndescription: Retry flaky calls with backoff.\n---\n")
    repo.commit("first")
    return repo


@pytest.fixture
def root(tmp_path: Path, repo: Repo) -> Path:
    root = tmp_path / "library"
    root.mkdir()
    add(root, repo.url, name="team")
    return root


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_removing_a_source_deletes_its_folder_and_entry_and_keeps_usage_history(root: Path) -> None:
    usage = UsageStore(root / ".skillshelf" / "usage.sqlite3")
    usage.record("team/pdf-fill", "proj", None, "test")
    usage.close()
    code, output = run("remove", "team", "--library", str(root))
    assert code == 0 and "Removed team (3 skills); usage history is kept." in output
    assert not (root / "team").exists() and read_lock(root / "skillshelf.lock").sources == {}
    usage = UsageStore(root / ".skillshelf" / "usage.sqlite3")
    try:
        assert [u.skill_id for u in usage.usage("team/pdf-fill")] == ["team/pdf-fill"]
    finally:
        usage.close()
    assert staging_left(root) == []


def test_a_removed_skill_stays_out_on_later_updates(root: Path, repo: Repo) -> None:
    assert run("remove", "team/retry", "--library", str(root))[0] == 0
    assert not (root / "team" / "retry.md").exists() and not (root / "team" / "retry-SKILL.md").exists()
    entry = read_lock(root / "skillshelf.lock").sources["team"]
    assert entry.exclude == ("retry.md",) and {s.id for s in entry.skills} == {"team/pdf-fill", "team/release-notes"}
    repo.write("retry.md", "# Retry\n\nRetry flaky calls, improved.\n")
    repo.skill("pdf-fill", "Fill PDF forms, version two.")
    repo.commit("second")
    assert run("update", "--yes", "--library", str(root))[0] == 0
    assert not (root / "team" / "retry.md").exists()
    assert "version two" in (root / "team" / "pdf-fill" / "SKILL.md").read_text(encoding="utf-8")


def test_removing_an_edited_skill_or_source_needs_force(root: Path) -> None:
    edited = root / "team" / "pdf-fill" / "SKILL.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nOurs.\n", encoding="utf-8")
    code, output = run("remove", "team/pdf-fill", "--library", str(root))
    assert code == 1 and "modified here since install" in output and "--force" in output
    code, output = run("remove", "team", "--library", str(root))
    assert code == 1 and edited.is_file()
    assert run("remove", "team/pdf-fill", "--force", "--library", str(root))[0] == 0
    assert not (root / "team" / "pdf-fill").exists() and (root / "team" / "release-notes").is_dir()


def test_removing_something_unknown_names_the_sources_there_are(root: Path) -> None:
    code, output = run("remove", "nothing/here", "--library", str(root))
    assert code == 1 and "no source or installed skill named 'nothing/here'" in output and "team" in output
    with open_shelf(root) as shelf:
        assert set(shelf.lock().sources) == {"team"}


def test_removing_the_last_skill_of_a_source_removes_the_source(tmp_path: Path) -> None:
    single = Repo(tmp_path / "single")
    single.skill("only-one", "The one skill of this source.")
    single.commit("one")
    root = tmp_path / "solo"
    root.mkdir()
    add(root, single.url, name="solo")
    code, output = run("remove", "solo/only-one", "--library", str(root))
    assert code == 0 and "Removed solo/only-one" in output
    assert not (root / "solo").exists() and read_lock(root / "skillshelf.lock").sources == {}
