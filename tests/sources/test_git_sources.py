"""Skills come in from real git repositories made in tmp and added over file://: every skill installed
into <root>/<name>/ and pinned at its commit; refs, paths and --only; hooks, submodules and the
repository's attributes never act; an unreachable source leaves the library untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.lock import read_lock
from tests.sources.helpers import Repo, add, skill_md, staging_left, tree_of


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "upstream")
    repo.skill("skills/pdf-fill", "Fill PDF forms from JSON data. Use when a form must be filled.", license="MIT")
    repo.write("skills/pdf-fill/scripts/fill.py", "print('filled')\n", executable=True)
    repo.skill("skills/release-notes", "Draft release notes from merged pull requests.")
    repo.write("LICENSE", "Apache License\nVersion 2.0, January 2004\n")
    repo.write("README.md", "# Our skills\n")
    repo.commit("first")
    return repo


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    root.mkdir()
    return root


def test_a_repository_added_over_file_installs_every_skill_and_pins_its_commit(repo: Repo, root: Path) -> None:
    outcome = add(root, repo.url, name="team")
    assert outcome.skills == ["team/pdf-fill", "team/release-notes"]
    assert (root / "team" / "pdf-fill" / "SKILL.md").read_text(encoding="utf-8").startswith("---\nname: pdf-fill")
    assert (root / "team" / "pdf-fill" / "scripts" / "fill.py").stat().st_mode & 0o777 == 0o755
    assert (root / "team" / "LICENSE").is_file()
    assert not (root / "team" / "README.md").exists()  # documentation of the repository, not of a skill
    entry = read_lock(root / "skillshelf.lock").sources["team"]
    assert entry.kind == "git" and entry.commit == repo.git("rev-parse", "HEAD") and entry.url == repo.url
    assert entry.license == "Apache-2.0"
    assert {s.id: s.license for s in entry.skills} == {"team/pdf-fill": "MIT", "team/release-notes": None}
    assert [s.origin for s in entry.skills] == ["skills/pdf-fill", "skills/release-notes"]
    assert staging_left(root) == []


def test_a_tag_a_branch_and_a_commit_each_install_what_they_name(repo: Repo, tmp_path: Path) -> None:
    first = repo.git("rev-parse", "HEAD")
    repo.git("tag", "-a", "v1", "-m", "one")
    repo.skill("skills/release-notes", "Version two of the release notes.")
    second = repo.commit("second")
    repo.git("checkout", "--quiet", "-b", "beta")
    repo.skill("skills/beta-only", "Only on the beta branch.")
    third = repo.commit("beta")
    repo.git("checkout", "--quiet", "main")
    for ref, commit, ids in [
        ("v1", first, {"up/pdf-fill", "up/release-notes"}),
        ("beta", third, {"up/pdf-fill", "up/release-notes", "up/beta-only"}),
        (first, first, {"up/pdf-fill", "up/release-notes"}),
        (None, second, {"up/pdf-fill", "up/release-notes"}),
    ]:
        root = tmp_path / f"lib-{ref}"
        root.mkdir()
        outcome = add(root, repo.url, name="up", ref=ref)
        entry = read_lock(root / "skillshelf.lock").sources["up"]
        assert (entry.commit, entry.ref, set(outcome.skills)) == (commit, ref, ids)
    notes = (tmp_path / "lib-v1" / "up" / "release-notes" / "SKILL.md").read_text(encoding="utf-8")
    assert "Draft release notes" in notes  # the tag's version, not the branch's newest


def test_an_unknown_ref_is_an_error_listing_the_branches_and_tags(repo: Repo, root: Path) -> None:
    repo.git("tag", "v1")
    with pytest.raises(SourceError) as refused:
        add(root, repo.url, ref="v9")
    assert "no branch or tag 'v9'" in refused.value.message and "main" in refused.value.message
    assert "v1" in refused.value.message


def test_an_unreachable_source_is_a_clear_error_and_the_library_is_untouched(repo: Repo, root: Path) -> None:
    add(root, repo.url, name="team")
    before = tree_of(root)
    missing = (repo.path.parent / "gone").as_uri()
    with pytest.raises(SourceError) as refused:
        add(root, missing, name="other")
    assert "git could not reach" in refused.value.message and "gone" in refused.value.message
    assert tree_of(root) == before and staging_left(root) == []


def test_hooks_configured_for_the_user_never_run_while_fetching(
    repo: Repo, root: Path, isolated_environment: Path
) -> None:
    older = repo.git("rev-parse", "HEAD")
    repo.skill("skills/later", "A later skill, so the first commit is no branch tip.")
    repo.commit("later")
    hooks = isolated_environment / "hooks"
    marker = isolated_environment / "hook-ran"
    for hook in ("reference-transaction", "post-checkout", "post-merge", "pre-auto-gc"):
        (hooks / hook).parent.mkdir(exist_ok=True)
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {marker}\n", encoding="utf-8")
        (hooks / hook).chmod(0o755)
    # Protocol v0 serves no commit by its id, so fetching an older commit takes the fallback path,
    # which updates refs: without hooks off, `reference-transaction` would run there.
    config = f"[core]\n\thooksPath = {hooks}\n[protocol]\n\tversion = 0\n"
    (isolated_environment / ".gitconfig").write_text(config, encoding="utf-8")  # after the test's own commits
    add(root, repo.url, name="team", ref=older)
    assert (root / "team" / "pdf-fill" / "SKILL.md").is_file() and not (root / "team" / "later").exists()
    assert not marker.exists(), "a git hook ran during add"


def test_submodules_are_never_fetched(repo: Repo, root: Path, tmp_path: Path) -> None:
    inner = Repo(tmp_path / "inner")
    inner.skill("secret-skill", "Should never arrive through a submodule.")
    inner.commit("inner")
    repo.git("submodule", "add", "--quiet", inner.url, "skills/vendored")
    repo.commit("with a submodule")
    outcome = add(root, repo.url, name="team")
    assert "team/secret-skill" not in outcome.skills and "team/vendored" not in outcome.skills
    assert not (root / "team" / "vendored").exists()
    assert any("submodule" in note for note in outcome.warnings)


def test_the_repositorys_own_attributes_change_no_byte_of_what_is_installed(repo: Repo, root: Path) -> None:
    repo.write(".gitattributes", "*.md export-subst\nskills/pdf-fill/scripts/* export-ignore\n")
    repo.write("skills/pdf-fill/notes.md", "Commit $Format:%H$ here.\n")
    repo.commit("attributes")
    add(root, repo.url, name="team")
    assert (root / "team" / "pdf-fill" / "notes.md").read_text(encoding="utf-8") == "Commit $Format:%H$ here.\n"
    assert (root / "team" / "pdf-fill" / "scripts" / "fill.py").is_file()


def test_skills_deep_in_a_repository_are_placed_one_level_down_and_collisions_reported(repo: Repo, root: Path) -> None:
    repo.skill(".claude/skills/hidden-helper", "A skill kept in a dot-folder of the repository.")
    repo.skill("catalog/writing/style-guide", "Apply the house style guide to a draft.")
    repo.skill("examples/extra/pdf-fill", "A second pdf-fill deeper in the repository.")
    repo.commit("deep")
    outcome = add(root, repo.url, name="team")
    assert set(outcome.skills) == {"team/hidden-helper", "team/style-guide", "team/pdf-fill", "team/release-notes"}
    assert "Fill PDF forms" in (root / "team" / "pdf-fill" / "SKILL.md").read_text(encoding="utf-8")
    collision = next(w for w in outcome.warnings if "examples/extra/pdf-fill" in w)
    assert "skills/pdf-fill" in collision and "--only" in collision


def test_path_takes_the_skills_of_one_folder_and_only_keeps_those_that_match(repo: Repo, root: Path) -> None:
    repo.skill("other/unwanted", "Not under skills/.")
    repo.commit("other")
    outcome = add(root, repo.url, name="team", path="skills", only=("pdf-*",))
    assert outcome.skills == ["team/pdf-fill"]
    entry = read_lock(root / "skillshelf.lock").sources["team"]
    assert (entry.subpath, entry.only) == ("skills", ("pdf-*",))
    assert (root / "team" / "LICENSE").is_file()  # the repository's license, above --path, comes too


def test_a_repository_without_skills_is_an_error_saying_where_it_looked(root: Path, tmp_path: Path) -> None:
    empty = Repo(tmp_path / "docs-only")
    empty.write("README.md", "# Nothing here\n")
    empty.write("guide/intro.md", "# Intro\n")
    empty.commit("docs")
    with pytest.raises(SourceError) as refused:
        add(root, empty.url)
    message = refused.value.message
    assert "no skills in" in message and "SKILL.md" in message and "--path" in message
    assert list(root.iterdir()) == [root / ".skillshelf"]


def test_a_folder_already_there_is_never_overwritten_unless_forced(repo: Repo, root: Path) -> None:
    (root / "team" / "mine").mkdir(parents=True)
    (root / "team" / "mine" / "SKILL.md").write_text(skill_md("mine", "Hand-written."), encoding="utf-8")
    before = tree_of(root)
    with pytest.raises(SourceError) as refused:
        add(root, repo.url, name="team")
    assert "already exists" in refused.value.message and "--force" in refused.value.message
    assert tree_of(root) == before
    add(root, repo.url, name="team", force=True)
    assert not (root / "team" / "mine").exists() and (root / "team" / "pdf-fill").is_dir()


def test_the_same_source_name_twice_is_refused(repo: Repo, root: Path) -> None:
    add(root, repo.url, name="team")
    with pytest.raises(SourceError) as refused:
        add(root, repo.url, name="team")
    assert "skillshelf update team" in refused.value.message


def test_a_second_command_while_one_holds_the_library_is_refused(repo: Repo, root: Path) -> None:
    with open_shelf(root), pytest.raises(SourceError) as refused, open_shelf(root):
        pass
    assert "another skillshelf command" in refused.value.message


def test_git_variables_of_the_callers_environment_never_point_git_elsewhere(
    repo: Repo, root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = Repo(tmp_path / "other")  # as when skillshelf runs from a git hook: GIT_DIR is someone else's
    monkeypatch.setenv("GIT_DIR", str(other.path / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other.path))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other.path / ".git" / "index"))
    outcome = add(root, repo.url, name="team")
    assert outcome.skills == ["team/pdf-fill", "team/release-notes"]
    assert other.git("--git-dir", str(other.path / ".git"), "log", "--oneline", "--all") == ""  # untouched


def test_a_chain_of_links_leading_out_of_a_repository_is_refused(repo: Repo, root: Path) -> None:
    """Each link alone looks inside (`u/u/../../etc/passwd` reads as `etc/passwd`); through `u -> .`
    it leads two folders up, as it would where it is written."""
    (repo.path / "skills" / "pdf-fill" / "u").symlink_to(".")
    (repo.path / "skills" / "pdf-fill" / "leak").symlink_to("u/u/u/u/../../../../etc/passwd")
    repo.commit("links")
    with pytest.raises(SourceError, match=r"the link skills/pdf-fill/leak points to .* leads outside the source"):
        add(root, repo.url, name="team")
    assert list(root.iterdir()) == [root / ".skillshelf"] and staging_left(root) == []
