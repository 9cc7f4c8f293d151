"""Credentials in a source's URL stay on the machine that typed them: the lock is written without them
(whatever lock was read), and provenance, the one place every surface reads a source's URL from, strips
them again, so a hand-written lock with a token never reaches a client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from skillshelf.library.access.reader import ViewReader
from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.lock import Lock, read_lock, write_lock
from skillshelf.library.sources.provenance import provenance_for_id
from skillshelf.server.app import build_server
from skillshelf.server.skills_ext import SOURCE_META_KEY
from skillshelf.server.web import WebAccess, web_app
from skillshelf.settings import Settings
from tests.conftest import call, synced_library
from tests.server.test_skills_ext import request
from tests.sources.helpers import Repo, add

SECRET = "ghs_s3cretT0ken"
TOKENED = f"https://x-access-token:{SECRET}@github.com/team/skills.git?private_token={SECRET}#access_token={SECRET}"


@pytest.fixture
def upstream(tmp_path: Path) -> Repo:
    repo = Repo(tmp_path / "upstream")
    repo.skill("release-notes", "Draft release notes from merged pull requests.")
    repo.commit("first")
    return repo


def with_credentials(repo: Repo) -> str:
    """The repository's file:// URL with a user and password in it (git accepts and ignores them)."""
    return f"file://reader:{SECRET}@localhost{repo.path.as_posix()}"


def hand_written(root: Path, url: str) -> None:
    """The lock as someone edited it: the source's URL replaced by `url`."""
    lock = read_lock(root / "skillshelf.lock")
    write_lock(root / "skillshelf.lock", Lock({"team": replace(lock.sources["team"], url="PLACEHOLDER")}))
    text = (root / "skillshelf.lock").read_text(encoding="utf-8")
    (root / "skillshelf.lock").write_text(text.replace("PLACEHOLDER", url), encoding="utf-8")
    assert SECRET in (root / "skillshelf.lock").read_text(encoding="utf-8")


def test_add_from_a_url_with_credentials_locks_none(upstream: Repo, tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    add(root, with_credentials(upstream), name="team")
    text = (root / "skillshelf.lock").read_text(encoding="utf-8")
    assert SECRET not in text and "reader" not in text
    assert f'url = "file://localhost{upstream.path.as_posix()}"' in text


def test_an_update_rewrites_a_hand_written_lock_without_its_credentials(upstream: Repo, tmp_path: Path) -> None:
    root = tmp_path / "library"
    root.mkdir()
    add(root, upstream.url, name="team")
    hand_written(root, with_credentials(upstream))
    upstream.skill("release-notes", "Draft release notes, grouped by label.")
    upstream.commit("second")
    with open_shelf(root) as shelf:
        prepared = shelf.prepare_update("team")
        assert prepared is not None
        shelf.apply(prepared)
    assert SECRET not in (root / "skillshelf.lock").read_text(encoding="utf-8")
    assert SECRET not in (root / ".skillshelf" / "sources-installed.lock").read_text(encoding="utf-8")


@pytest.fixture
def tokened(upstream: Repo, tmp_path: Path) -> Path:
    root = tmp_path / "library"
    root.mkdir()
    add(root, upstream.url, name="team")
    hand_written(root, TOKENED)
    return root


@pytest.fixture
async def client(tokened: Path, tmp_path: Path) -> AsyncIterator[Client]:
    with synced_library(tokened, tmp_path / "idx") as library:
        server = build_server(Settings(roots=[tokened], watch=False), library, view="full")
        async with Client(server, raise_exceptions=True) as connected:
            yield connected


@pytest.mark.anyio
async def test_a_token_in_a_hand_written_lock_reaches_no_client(client: Client) -> None:
    listed = await request(client, "skills/list", {})
    meta = next(e for e in listed["skills"] if e["uri"] == "skill://team/release-notes/SKILL.md")["_meta"]
    assert meta[SOURCE_META_KEY]["url"] == "https://github.com/team/skills.git"
    got = await request(client, "skills/get", {"uri": "skill://team/release-notes/SKILL.md"})
    assert got["skill"]["_meta"][SOURCE_META_KEY]["url"] == "https://github.com/team/skills.git"
    _, full = await call(client, "loadSkill", {"skillId": "team/release-notes", "detail": True})
    assert full["data"]["metadata"]["source"]["url"] == "https://github.com/team/skills.git"
    assert SECRET not in str(listed) + str(got) + str(full)


@pytest.mark.anyio
async def test_the_web_views_link_to_the_source_holds_no_token(tokened: Path, tmp_path: Path) -> None:
    with synced_library(tokened, tmp_path / "idx") as library:
        transport = httpx2.ASGITransport(app=web_app(ViewReader(library), WebAccess()))
        async with httpx2.AsyncClient(transport=transport, base_url="http://t") as http:
            page = (await http.get("/skills/team/release-notes/")).text
    assert SECRET not in page and 'href="https://github.com/team/skills.git"' in page
    found = provenance_for_id(tokened, "team/release-notes")
    assert found is not None and found.url == "https://github.com/team/skills.git"
