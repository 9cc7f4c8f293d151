"""Provenance where people look: `show`, loadSkill's brief and full metadata, the Skills extension's
entries and the web skill page say which source a skill came from, at which version, under which
license; a skill written by hand says nothing (the web page says it was written by hand), and every
surface follows the lock when an update moves it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client

from skillshelf.cli import cli
from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.library.sources.install import open_shelf
from skillshelf.server.app import build_server
from skillshelf.server.skills_ext import SOURCE_META_KEY
from skillshelf.server.web import WebAccess, web_app
from skillshelf.settings import Settings
from tests.conftest import call, synced_library
from tests.server.test_skills_ext import request
from tests.sources.helpers import Repo, add, skill_md

pytestmark = pytest.mark.anyio


@pytest.fixture
def upstream(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "upstream")
    repo.skill("release-notes", "Draft release notes from merged pull requests.")
    repo.skill("pdf-fill", "Fill PDF forms from JSON data.", license="MIT")
    repo.write("LICENSE", "Apache License\n                           Version 2.0, January 2004\n")
    repo.commit("first")
    return repo


@pytest.fixture
def root(tmp_path: Path, upstream: Repo) -> Path:
    library_root = tmp_path / "library"
    library_root.mkdir()
    add(library_root, upstream.url, name="team")
    mine = library_root / "hand" / "mine"
    mine.mkdir(parents=True)
    (mine / "SKILL.md").write_text(skill_md("mine", "A skill written here by hand."), encoding="utf-8")
    return library_root


@pytest.fixture
def library(root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    with synced_library(root, tmp_path / "idx") as opened:
        yield opened


@pytest.fixture
async def client(root: Path, library: SkillLibrary) -> AsyncIterator[Client]:
    server = build_server(Settings(roots=[root], watch=False), library, view="full")
    async with Client(server, raise_exceptions=True) as connected:
        yield connected


async def test_load_skill_names_the_source_in_one_short_field_and_in_full_on_request(
    client: Client, upstream: Repo
) -> None:
    commit = upstream.git("rev-parse", "HEAD")
    _, brief = await call(client, "loadSkill", {"skillId": "team/release-notes"})
    assert brief["data"]["metadata"]["source"] == f"team@{commit[:8]} (Apache-2.0)"
    _, own_license = await call(client, "loadSkill", {"skillId": "team/pdf-fill"})
    assert own_license["data"]["metadata"]["source"] == f"team@{commit[:8]} (MIT)"  # the skill's own wins
    _, full = await call(client, "loadSkill", {"skillId": "team/release-notes", "detail": True})
    assert full["data"]["metadata"]["source"] == {
        "name": "team",
        "kind": "git",
        "url": upstream.url,
        "commit": commit,
        "license": "Apache-2.0",
    }
    _, by_hand = await call(client, "loadSkill", {"skillId": "hand/mine"})
    assert "source" not in by_hand["data"]["metadata"]  # nothing to say, and no tokens spent saying it


async def test_skills_extension_entries_carry_the_source_in_meta(client: Client, upstream: Repo) -> None:
    commit = upstream.git("rev-parse", "HEAD")
    got = await request(client, "skills/get", {"uri": "skill://team/release-notes/SKILL.md"})
    assert got["skill"]["_meta"][SOURCE_META_KEY] == {
        "name": "team",
        "kind": "git",
        "url": upstream.url,
        "commit": commit,
        "license": "Apache-2.0",
    }
    assert "license" not in got["skill"]["frontmatter"]  # the frontmatter stays verbatim
    listed = await request(client, "skills/list", {})
    by_uri = {entry["uri"]: entry for entry in listed["skills"]}
    assert by_uri["skill://team/pdf-fill/SKILL.md"]["_meta"][SOURCE_META_KEY]["license"] == "MIT"
    assert "_meta" not in by_uri["skill://hand/mine/SKILL.md"]


def test_show_prints_the_source_and_follows_an_update(root: Path, upstream: Repo, tmp_path: Path) -> None:
    env = {"SKILLSHELF_CACHE_DIR": str(tmp_path / "cache")}
    first = upstream.git("rev-parse", "HEAD")
    shown = CliRunner().invoke(cli, ["show", "team/release-notes", "--library", str(root)], env=env)
    assert shown.exit_code == 0, shown.output
    assert f"source: team (git {upstream.url} @ {first}, Apache-2.0)" in shown.stdout
    upstream.skill("release-notes", "Draft release notes from merged pull requests, grouped by label.")
    second = upstream.commit("second")
    with open_shelf(root) as shelf:
        prepared = shelf.prepare_update("team")
        assert prepared is not None
        shelf.apply(prepared)
    shown = CliRunner().invoke(cli, ["show", "team/release-notes", "--library", str(root)], env=env)
    assert f"@ {second}, Apache-2.0" in shown.stdout and first not in shown.stdout
    by_hand = CliRunner().invoke(cli, ["show", "hand/mine", "--library", str(root)], env=env)
    assert by_hand.exit_code == 0 and "source:" not in by_hand.stdout


async def test_the_web_skill_page_shows_the_source_and_links_only_an_https_url(
    library: SkillLibrary, upstream: Repo
) -> None:
    commit = upstream.git("rev-parse", "HEAD")
    transport = httpx2.ASGITransport(app=web_app(ViewReader(library), WebAccess()))
    async with httpx2.AsyncClient(transport=transport, base_url="http://t") as http:
        page = (await http.get("/skills/team/release-notes/")).text
        by_hand = (await http.get("/skills/hand/mine/")).text
    card = page.split('id="source"', 1)[1].split("</section>", 1)[0]
    assert "<strong>team</strong>" in card and f"<code>{commit[:12]}</code>" in card
    assert "License: Apache-2.0" in card
    assert f"<code>{upstream.url}</code>" in card and "<a href" not in card  # a file:// URL is text, not a link
    assert "Written here by hand." in by_hand.split('id="source"', 1)[1]
