"""The lock is input from whoever last pushed: a tampered `skillshelf.lock` (or a journal left in a
staging folder) never makes a source command write or delete outside the library. The lock is read
with the rules `add` follows, and every writer resolves its target under the root, refusing the rest."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.lock import (
    Lock,
    LockedSource,
    lock_path,
    parse_lock,
    read_lock,
    render_lock,
    write_lock,
)
from skillshelf.library.sources.swap import JOURNAL, OLD, STAGING_PREFIX, commit, inside_root
from tests.sources.helpers import Repo, add, skill_md, staging_left, tree_of

HOOK = "#!/bin/sh\necho owned > owned.txt\n"


def payload(folder: Path) -> Path:
    """A folder source of one skill, `hooks/`, holding an executable `post-merge`."""
    (folder / "hooks").mkdir(parents=True)
    (folder / "hooks" / "SKILL.md").write_text(skill_md("hooks", "Looks like a skill."), encoding="utf-8")
    (folder / "hooks" / "post-merge").write_text(HOOK, encoding="utf-8")
    (folder / "hooks" / "post-merge").chmod(0o755)
    return folder


def honest_entry(source: Path, scratch: Path) -> LockedSource:
    """The lock entry `add` writes for `source` (its digests real), to be tampered with."""
    scratch.mkdir()
    add(scratch, str(source), name="payload")
    entry = read_lock(scratch / "skillshelf.lock").sources["payload"]
    return replace(entry, url=str(source))


def renamed(entry: LockedSource, name: str, path_of: str | None = None) -> LockedSource:
    """`entry` moved to source name `name`: ids and paths follow (or every path is `path_of`)."""
    skills = tuple(
        replace(s, id=f"{name}/{s.id.split('/', 1)[1]}", path=path_of or f"{name}/{s.path.split('/', 1)[1]}")
        for s in entry.skills
    )
    return replace(entry, name=name, skills=skills)


def tamper(root: Path, *entries: LockedSource) -> None:
    write_lock(root / "skillshelf.lock", Lock({e.name: e for e in entries}))


def outside_of(root: Path, top: Path) -> list[Path]:
    """Everything under `top` but the library."""
    return sorted(p for p in top.rglob("*") if not p.is_relative_to(root))


def sync(root: Path, *flags: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["sync", "--library", str(root), *flags])
    return result.exit_code, result.output


def test_a_source_named_dot_dot_git_cannot_plant_a_hook_in_the_enclosing_repository(tmp_path: Path) -> None:
    project = Repo(tmp_path / "project")  # a team's repository, the library inside it
    project.write("README.md", "# skills\n")
    project.commit("first")
    root = project.path / "library"
    root.mkdir()
    source = payload(project.path / "payload")
    # A path the folder does not hold makes the skill "missing", so a plain sync installs it; everything
    # else of .git is carried over as "added here", so the repository still works afterwards.
    tamper(root, renamed(honest_entry(source, tmp_path / "scratch"), "../.git", path_of="../.git/absent"))
    before = tree_of(project.path / ".git")
    code, output = sync(root)
    assert not (project.path / ".git" / "hooks" / "post-merge").exists()  # today: there, 0755, run by `git merge`
    assert tree_of(project.path / ".git") == before
    assert code != 0 and '[source."../.git"]' in output


def test_sync_force_never_replaces_a_folder_above_the_library(tmp_path: Path) -> None:
    root = tmp_path / "team" / "repo" / "library"
    root.mkdir(parents=True)
    victim = tmp_path / "team" / "victim"
    victim.mkdir()
    (victim / "notes.txt").write_text("mine\n", encoding="utf-8")
    source = payload(tmp_path / "payload")
    tamper(root, renamed(honest_entry(source, tmp_path / "scratch"), "../../victim"))
    code, output = sync(root, "--force")
    assert (victim / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert not (victim / "hooks").exists()
    assert code != 0 and '[source."../../victim"]' in output


def test_a_source_dropped_from_the_lock_is_removed_only_inside_the_library(tmp_path: Path) -> None:
    """What this machine installed (`.skillshelf/`) names `../../victim`, no longer in the lock: sync --force
    removes dropped sources, and never that one."""
    root = tmp_path / "team" / "repo" / "library"
    root.mkdir(parents=True)
    victim = tmp_path / "team" / "victim"
    victim.mkdir()
    (victim / "notes.txt").write_text("mine\n", encoding="utf-8")
    source = payload(tmp_path / "payload")
    entry = honest_entry(source, tmp_path / "scratch")
    tamper(root, entry)
    (root / ".skillshelf").mkdir()
    write_lock(root / ".skillshelf" / "sources-installed.lock", Lock({"x": renamed(entry, "../../victim")}))
    code, output = sync(root, "--force")
    assert code == 0, output
    assert (victim / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert (root / "payload" / "hooks" / "SKILL.md").is_file()  # the lock's own source is installed


def test_a_name_cannot_lead_the_staging_folder_out_of_the_library(tmp_path: Path) -> None:
    root = tmp_path / "a" / "b" / "library"
    root.mkdir(parents=True)
    source = payload(tmp_path / "payload")
    entry = renamed(honest_entry(source, tmp_path / "scratch"), "../../../outside")
    wrong = tuple(replace(s, digest="sha256:" + "0" * 64) for s in entry.skills)  # the sync fails: too late
    tamper(root, replace(entry, skills=wrong))
    around = outside_of(root, tmp_path)
    code, output = sync(root)
    assert not (tmp_path / "a" / "b" / "outside").exists()  # <root>/.skillshelf-staging-*/tree/../../../outside
    assert outside_of(root, tmp_path) == around
    assert code != 0 and '[source."../../../outside"]' in output
    assert staging_left(root) == []


def test_a_journal_naming_a_folder_outside_the_library_moves_nothing_there(tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    staging = root / f"{STAGING_PREFIX}planted"
    (staging / OLD / "hooks").mkdir(parents=True)
    (staging / OLD / "hooks" / "post-merge").write_text(HOOK, encoding="utf-8")
    journal = {"target": "../planted", "expect": "sha256:" + "0" * 64, "lock": render_lock(Lock())}
    (staging / JOURNAL).write_text(json.dumps(journal), encoding="utf-8")
    with open_shelf(root) as shelf:
        assert "outside the library" in shelf.recovered[0]
    assert not (tmp_path / "planted").exists()
    assert staging_left(root) == []


def entry(name: str = "a", *, head: str = "", skill: tuple[str, str, str] | None = None, files: str = "") -> str:
    """A lock of one folder source; `skill`: (id, path, from); `files`: one key of its files table."""
    text = f'[source.{name}]\nkind = "folder"\nurl = "x"\ninstalled = "t"\n{head}'
    if skill is not None:
        skill_id, path, origin = skill
        text += f'[source.{name}.skills]\n"{skill_id}" = {{ path = "{path}", from = "{origin}", digest = "d" }}\n'
    if files:
        text += f'[source.{name}.files]\n"{files}" = "sha256:00"\n'
    return text


def git_entry(url: str, head: str = "") -> str:
    return f'[source.a]\nkind = "git"\nurl = "{url}"\ninstalled = "t"\n{head}'


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (entry('"../.git"'), '[source."../.git"]: the name'),
        (entry('"a/b"'), '[source."a/b"]: the name'),
        (entry("patterns"), "[source.patterns]: the name"),
        (entry(skill=("b/s", "a/s", "s")), 'skills."b/s": the id'),
        (entry(skill=("a/.git", "a/.git", "s")), 'skills."a/.git": the id'),
        (entry(skill=("a/../x", "a/x", "s")), 'skills."a/../x": the id'),
        (entry(skill=("a/s", "a/../../s", "s")), "path"),
        (entry(skill=("a/s", "/etc/s", "s")), "path"),
        (entry(skill=("a/s", "b/s", "s")), "path"),
        (entry(skill=("a/s", "a/s", "../s")), "from"),
        (entry(skill=("a/s", "a/s", "/s")), "from"),
        (entry(files="../LICENSE"), 'files."../LICENSE"'),
        (entry(files="a/.env"), 'files."a/.env"'),
        # a name holding a control character is refused, and the error shows it escaped (TOML's own escapes)
        (entry(skill=("a/evil\\u001b[2K\\r", "a/evil\\u001b[2K\\r", "s")), 'skills."a/evil\\u001b[2K\\r": the id'),
        (entry(skill=("a/\\u009b2J", "a/\\u009b2J", "s")), 'skills."a/\\u009b2J": the id'),
        (entry(files="a/flip\\u202e.sh"), 'files."a/flip\\u202e.sh"'),
        (entry(files="a/\\u2066x"), 'files."a/\\u2066x"'),
        (entry(head='subpath = "../up"\n'), "subpath"),
        (entry(head='subpath = "/etc"\n'), "subpath"),
        (git_entry("ext::sh -c touch% x"), "url"),
        (git_entry("http://example.com/r.git"), "url"),
        (git_entry("--upload-pack=touch x"), "url"),
        (git_entry("https://e.com/r.git", 'commit = "--output=x"\n'), "commit"),
    ],
)
def test_a_lock_entry_add_would_never_write_is_refused_naming_the_entry(text: str, words: str) -> None:
    with pytest.raises(SourceError) as refused:
        parse_lock(text)
    assert words in refused.value.message and "skillshelf.lock: [source." in refused.value.message


def test_what_add_writes_is_read_back_whole(tmp_path: Path) -> None:
    """The rules refuse nothing `add` writes: a seed-style root (`patterns/`), a three-file skill, a license."""
    repo = Repo(tmp_path / "upstream")
    repo.skill(".claude/skills/pdf-fill", "Fill PDF forms.")
    repo.write("tools/retry.md", "# Retry\n")
    repo.write("tools/retry.py", "pass\n")
    repo.write("LICENSE", "MIT License\n\nPermission is hereby granted, free of charge, to any person\n")
    repo.commit()
    root = tmp_path / "library"
    (root / "patterns").mkdir(parents=True)
    add(root, repo.url, name="team")
    entry = read_lock(root / "skillshelf.lock").sources["team"]
    assert {s.path for s in entry.skills} == {"patterns/team/pdf-fill", "patterns/team/retry.md"}
    assert {s.origin for s in entry.skills} == {".claude/skills/pdf-fill", "tools/retry.md"}
    assert list(entry.files) == ["patterns/team/LICENSE"]


# -- every writer resolves its target under the root (the lock's rules aside) ---------------------------
def test_a_writer_refuses_a_target_outside_the_root_or_through_a_link(tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "linked").symlink_to(tmp_path / "elsewhere")
    assert inside_root(root, root / "team") == root / "team"
    for target in ("../x", "team/../../x", ".git", "linked", "linked/team", ""):
        with pytest.raises(SourceError) as refused:
            inside_root(root, root / target)
        assert any(words in refused.value.message for words in ("outside the library", "link", "dot-name"))
    with pytest.raises(SourceError):
        inside_root(root, tmp_path / "x")


def test_the_swap_refuses_a_target_outside_the_root_and_moves_nothing(tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    outside = tmp_path / "victim"
    outside.mkdir()
    (outside / "notes.txt").write_text("mine\n", encoding="utf-8")
    staging = root / f"{STAGING_PREFIX}x"
    (staging / "tree" / "victim").mkdir(parents=True)
    with pytest.raises(SourceError, match="outside the library"):
        commit(root, staging, outside, staging / "tree" / "victim", Lock())
    with pytest.raises(SourceError, match="outside the library"):
        commit(root, staging, outside, None, Lock())
    assert (outside / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    assert not (root / "skillshelf.lock").exists()


def test_a_source_folder_replaced_by_a_link_is_never_followed(tmp_path: Path) -> None:
    """A teammate commits `team -> ~/.ssh`: sync neither copies what the link leads to into the library
    nor replaces what is there."""
    repo = Repo(tmp_path / "upstream")
    repo.skill("pdf-fill", "Fill PDF forms.")
    repo.skill("notes", "Take notes.")
    repo.commit()
    root = tmp_path / "library"
    root.mkdir()
    add(root, repo.url, name="team")
    private = tmp_path / "private"
    private.mkdir()
    (private / "id_key").write_text("SECRET\n", encoding="utf-8")
    shutil.rmtree(root / "team")
    (root / "team").symlink_to(private)
    before = tree_of(private)
    for flags in ((), ("--force",)):
        code, output = sync(root, *flags)
        assert tree_of(private) == before
        copied = [folder for folder, _, names in os.walk(root) if "id_key" in names]  # links not followed
        assert copied == []  # not carried over into the library as "added here"
        assert code != 0 and "team" in output and "link" in output


MAX_LOCK_BYTES = 64 * 1024 * 1024  # lock.py's


@pytest.mark.parametrize("kind", ["device", "oversized"])
def test_a_lock_that_is_a_device_or_oversized_is_refused_naming_it_never_read_whole(tmp_path: Path, kind: str) -> None:
    """A lock pushed as a link to a device (`/dev/zero` is read forever) or a huge file: refused before any
    surface that reads the lock (sync, verify, the approval gate) holds it all in memory."""
    root = tmp_path / "library"
    root.mkdir()
    lock = lock_path(root)
    if kind == "device":
        lock.symlink_to(os.devnull)  # /dev/zero would be the attack; /dev/null ends, so the old code survives
    else:
        lock.write_bytes(b"version = 1\n# " + b"x" * MAX_LOCK_BYTES + b"\n")  # valid TOML, and over the cap
    with pytest.raises(SourceError) as refused:
        read_lock(lock)
    assert str(lock) in refused.value.message and "restore it from version control" in refused.value.message
    code, out = sync(root)
    assert code != 0 and str(lock) in out, out
