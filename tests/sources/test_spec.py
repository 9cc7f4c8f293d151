"""What a SOURCE on the command line means, and what is refused before anything is fetched: transports
that run commands, plain http, paths out of the source; credentials never reach the lock."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillshelf.library.sources import git
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.kinds import kind_of
from skillshelf.library.sources.parse import parse_source
from skillshelf.library.sources.spec import (
    Kind,
    portable_path,
    resolve_local,
    source_name,
    strip_credentials,
)
from tests.sources.helpers import Repo


@pytest.mark.parametrize(
    ("text", "kind", "url", "ref", "subpath", "name"),
    [
        ("https://example.com/t/skills.git", "git", "https://example.com/t/skills.git", None, "", "skills"),
        ("ssh://git@example.com/team/skills", "git", "ssh://git@example.com/team/skills", None, "", "skills"),
        ("git@github.com:obra/superpowers.git", "git", "git@github.com:obra/superpowers.git", None, "", "superpowers"),
        ("git://example.com/skills.git", "git", "git://example.com/skills.git", None, "", "skills"),
        ("anthropics/skills", "git", "https://github.com/anthropics/skills.git", None, "", "skills"),
        ("o/skills/skills/pdf@v1.2", "git", "https://github.com/o/skills.git", "v1.2", "skills/pdf", "skills"),
        ("obra/superpowers@main", "git", "https://github.com/obra/superpowers.git", "main", "", "superpowers"),
    ],
)  # fmt: skip
def test_urls_and_github_shorthand_name_git_sources(
    text: str, kind: str, url: str, ref: str | None, subpath: str, name: str, tmp_path: Path
) -> None:
    spec = parse_source(text, base=tmp_path)
    assert (spec.kind, spec.url, spec.ref, spec.subpath, spec.default_name) == (kind, url, ref, subpath, name)


def test_local_paths_are_repositories_folders_archives_or_one_skill(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "repo")
    folder = tmp_path / "plain"
    folder.mkdir()
    (tmp_path / "pack.skill").write_bytes(b"")
    (tmp_path / "bundle.zip").write_bytes(b"")
    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "SKILL.md").write_text("---\nname: one\n---\n", encoding="utf-8")
    found = {
        text: (spec.kind, spec.default_name)
        for text in ("repo", "plain", "pack.skill", "bundle.zip", "one/SKILL.md", "one")
        for spec in [parse_source(text, base=tmp_path)]
    }
    assert found == {
        "repo": ("git", "repo"),
        "plain": ("folder", "plain"),
        "pack.skill": ("archive", "pack"),
        "bundle.zip": ("archive", "bundle"),
        "one/SKILL.md": ("file", "one"),
        "one": ("folder", "one"),
    }
    assert parse_source(repo.url).kind == "git"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("ext::sh -c touch% /tmp/pwned", "runs a command"),
        ("fd::3", "runs a command"),
        ("http://example.com/skills.git", "use https"),
        ("ftp://example.com/skills.git", "not ftp"),
        ("--upload-pack=touch /tmp/pwned", "starts with '-'"),
        ("https://example.com/pack.zip", "download it"),
        ("no/such/thing/here@x y", "nothing at"),
        ("", "SOURCE is empty"),
    ],
)
def test_sources_that_could_run_a_command_or_be_changed_on_the_way_are_refused(
    text: str, words: str, tmp_path: Path
) -> None:
    with pytest.raises(SourceError) as refused:
        parse_source(text, base=tmp_path)
    assert words in refused.value.message


def test_git_itself_refuses_the_ext_transport_whatever_reaches_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    with pytest.raises(SourceError):
        git.resolve(f"ext::sh -c touch% {marker}", None)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("url", "kept"),
    [
        ("https://user:s3cret@example.com/team/skills.git", "https://example.com/team/skills.git"),
        ("https://ghp_token123@github.com/o/r.git", "https://github.com/o/r.git"),
        ("ssh://git:pw@example.com/r.git", "ssh://git@example.com/r.git"),
        ("https://example.com/r.git?token=abc", "https://example.com/r.git"),
        ("https://x-access-token:ghs_abc@github.com/o/r.git", "https://github.com/o/r.git"),
        ("https://gitlab.example.com/r.git?private_token=abc&x=1", "https://gitlab.example.com/r.git"),
        ("https://example.com/r.git#access_token=abc", "https://example.com/r.git"),
        ("file://user:pw@localhost/srv/r.git", "file://localhost/srv/r.git"),
        ("https://example.com/r.git", "https://example.com/r.git"),
        ("git@github.com:o/r.git", "git@github.com:o/r.git"),
    ],
)
def test_credentials_are_stripped_from_a_url_before_it_is_kept(url: str, kept: str) -> None:
    assert strip_credentials(url) == kept


def test_ref_and_path_may_come_from_flags_but_not_disagree_with_the_source(tmp_path: Path) -> None:
    spec = parse_source("o/r", ref="v2", path="skills/", base=tmp_path)
    assert (spec.ref, spec.subpath) == ("v2", "skills")
    with pytest.raises(SourceError, match="give one of them"):
        parse_source("o/r@v1", ref="v2", base=tmp_path)
    with pytest.raises(SourceError, match="give one of them"):
        parse_source("o/r/skills", path="other", base=tmp_path)
    for bad in ("../up", "/abs", "a/../../b", "c:/x"):
        with pytest.raises(SourceError, match="inside the source"):
            parse_source("o/r", path=bad, base=tmp_path)
    (tmp_path / "plain").mkdir()
    with pytest.raises(SourceError, match="--ref is for git"):
        parse_source("plain", ref="main", base=tmp_path)


def test_a_given_name_must_follow_the_rule_and_a_default_one_is_made_to() -> None:
    assert source_name("team-skills", given=True) == "team-skills"
    for bad in ("Team", "../x", ".hidden", "patterns", "general", "node_modules", "a/b", ""):
        with pytest.raises(SourceError):
            source_name(bad, given=True)
    assert source_name("My Skills!", given=False) == "my-skills"
    assert source_name("patterns", given=False) == "patterns-skills"
    assert source_name("...", given=False) == "source"


@pytest.mark.parametrize(
    ("kind", "url", "name"),
    [
        ("git", "https://example.com/team/skills.git", "skills"),
        ("git", "git@github.com:obra/superpowers.git", "superpowers"),
        ("git", "../repos/kit", "kit"),
        ("archive", "../vendor/pdf-fill.skill", "pdf-fill"),
        ("folder", "~/drafts/kit", "kit"),
        ("file", "/tmp/drafts/commit-style/SKILL.md", "commit-style"),
    ],
)
def test_a_locked_source_goes_by_the_name_its_address_gives(kind: Kind, url: str, name: str, tmp_path: Path) -> None:
    assert kind_of(kind).default_name(url) == name


def test_a_local_source_beside_the_library_is_kept_relative_so_every_clone_finds_it(tmp_path: Path) -> None:
    root = tmp_path / "team" / "library"
    beside = tmp_path / "team" / "vendor" / "pack.skill"
    assert portable_path(beside, root) == "../vendor/pack.skill"
    assert resolve_local("../vendor/pack.skill", root) == beside
    elsewhere = Path.home() / "Downloads" / "x.zip"
    assert portable_path(elsewhere, root) == "~/Downloads/x.zip"
    assert resolve_local("~/Downloads/x.zip", root) == elsewhere
