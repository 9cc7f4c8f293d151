"""`serve --http` publishes the Agent Skills discovery index (v0.2.0 and v0.1.0) per view, behind the view's
tokens, its digests the sha256 of the exact bytes served, and the files through the view's reader."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.config.auth import AuthSettings, TokenSettings, token_digest
from skillshelf.config.views import FilterRule, ViewSettings
from skillshelf.library.access.publish import SCHEMA_V2
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.server.auth import web_authorize, web_refusal
from skillshelf.server.http import team_app
from skillshelf.server.web import WebAccess
from skillshelf.settings import Settings
from tests.conftest import agent_skill, synced_library, three_file, write

pytestmark = pytest.mark.anyio

ALICE = "alice-0123456789abcdef"  # may use the default view only
BOB = "bob-0123456789abcdef01"  # may use the team view only


@pytest.fixture
def library(tmp_path: Path) -> Iterator[SkillLibrary]:
    root = tmp_path / "library"
    agent_skill(root, "docs", "plain-notes", "name: plain-notes\ndescription: Notes alone.", "# Notes\n\nRead.\n")
    tool = agent_skill(root, "ops", "deploy-tool", "name: deploy-tool\ndescription: Deploys things.", "# Deploy\n")
    write(tool.parent / "scripts" / "run.sh", "echo deploy\n")
    agent_skill(root, "secret", "vault-notes", "name: vault-notes\ndescription: Vault keys.", "# Vault\n")
    three_file(root, "python", "retry-loop", "# Retry loop\n\nRetry with backoff.\n", "def retry():\n    pass\n")
    with synced_library(root, tmp_path / "index") as opened:
        yield opened


def app_of(library: SkillLibrary, tmp_path: Path, tokens: bool = False) -> Any:
    views = {"default": ViewSettings(), "team": ViewSettings(skills=[FilterRule(exclude="secret/*")])}
    settings = Settings(roots=library.roots, watch=False, project_roots=[tmp_path / "p"], views=views)
    web = WebAccess(authorize=web_authorize(tokens), refuse=web_refusal())
    servers = {name: build_server(settings, library, web=web, view=name) for name in views}
    table = {
        "alice": TokenSettings(sha256=token_digest(ALICE), views=["default"]),
        "bob": TokenSettings(sha256=token_digest(BOB), views=["team"]),
    }
    return team_app(servers, auth=AuthSettings(tokens=table if tokens else {}), views=views)


def client(app: Any, token: str | None = None) -> httpx2.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1", headers=headers)


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


async def test_the_v2_index_names_each_skill_with_the_digest_of_the_bytes_served(
    library: SkillLibrary, tmp_path: Path
) -> None:
    async with client(app_of(library, tmp_path)) as http:
        answer = await http.get("/.well-known/agent-skills/index.json")
        assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
        index = answer.json()
        assert index["$schema"] == SCHEMA_V2
        entries = {e["name"]: e for e in index["skills"]}
        assert set(entries) == {"plain-notes", "deploy-tool", "vault-notes", "retry-loop"}
        assert entries["plain-notes"]["type"] == "skill-md" and entries["deploy-tool"]["type"] == "archive"
        assert entries["plain-notes"]["description"] == "Notes alone."
        for entry in entries.values():
            assert set(entry) == {"name", "type", "description", "url", "digest"}
            served = await http.get(f"/.well-known/agent-skills/{entry['url']}")
            assert served.status_code == 200, entry
            assert digest(served.content) == entry["digest"], entry
        packed = zipfile.ZipFile(io.BytesIO((await http.get("/.well-known/agent-skills/deploy-tool.zip")).content))
        assert sorted(packed.namelist()) == ["SKILL.md", "scripts/run.sh"]  # at the root, no wrapper folder
        assert packed.read("scripts/run.sh") == b"echo deploy\n"
        three = zipfile.ZipFile(io.BytesIO((await http.get("/.well-known/agent-skills/retry-loop.zip")).content))
        assert "SKILL.md" in three.namelist() and b"name: retry-loop" in three.read("SKILL.md")


async def test_the_v1_index_lists_every_file_the_skills_installer_fetches(
    library: SkillLibrary, tmp_path: Path
) -> None:
    async with client(app_of(library, tmp_path)) as http:
        index = (await http.get("/.well-known/skills/index.json")).json()
        assert "$schema" not in index
        entries = {e["name"]: e for e in index["skills"]}
        assert entries["deploy-tool"] == {
            "name": "deploy-tool",
            "description": "Deploys things.",
            "files": ["SKILL.md", "scripts/run.sh"],
        }
        for entry in entries.values():
            assert entry["files"][0] == "SKILL.md"
            for path in entry["files"]:
                assert (await http.get(f"/.well-known/skills/{entry['name']}/{path}")).status_code == 200
        assert (await http.get("/.well-known/skills/deploy-tool/scripts/run.sh")).content == b"echo deploy\n"


async def test_a_view_publishes_its_skills_and_a_hidden_one_is_a_404(library: SkillLibrary, tmp_path: Path) -> None:
    async with client(app_of(library, tmp_path)) as http:
        index = (await http.get("/view/team/.well-known/agent-skills/index.json")).json()
        assert "vault-notes" not in {e["name"] for e in index["skills"]}
        for path in ("agent-skills/vault-notes/SKILL.md", "skills/vault-notes/SKILL.md", "agent-skills/nope.zip"):
            hidden = await http.get(f"/view/team/.well-known/{path}")
            assert hidden.status_code == 404 and "Vault" not in hidden.text, path
        assert (await http.get("/.well-known/agent-skills/vault-notes/SKILL.md")).status_code == 200
        for bad in ("skills/plain-notes/../vault-notes/SKILL.md", "skills/plain-notes/.git/config"):
            assert (await http.get(f"/view/team/.well-known/{bad}")).status_code == 404


async def test_the_index_is_behind_the_views_tokens(library: SkillLibrary, tmp_path: Path) -> None:
    app = app_of(library, tmp_path, tokens=True)
    async with client(app) as anonymous:
        for path in ("/.well-known/agent-skills/index.json", "/view/team/.well-known/skills/index.json"):
            assert (await anonymous.get(path)).status_code == 401, path
    async with client(app, ALICE) as alice:
        assert (await alice.get("/.well-known/agent-skills/index.json")).status_code == 200
        assert (await alice.get("/view/team/.well-known/agent-skills/index.json")).status_code == 403
    async with client(app, BOB) as bob:
        assert (await bob.get("/.well-known/agent-skills/plain-notes/SKILL.md")).status_code == 403
        assert (await bob.get("/view/team/?q=notes")).status_code == 200  # before: 403, judged against default
        index = await bob.get("/view/team/.well-known/agent-skills/index.json")
        assert index.status_code == 200, index.text[:300]
        assert "plain-notes" in {e["name"] for e in index.json()["skills"]}


# -- skillshelf export: the same set, as files ----------------------------------------------------
def export(library: SkillLibrary, target: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["export", "-l", str(library.roots[0]), str(target), *args])
    return result.exit_code, result.output


async def test_export_writes_what_serve_publishes_byte_for_byte(library: SkillLibrary, tmp_path: Path) -> None:
    code, output = export(library, tmp_path / "site")
    assert code == 0, output
    assert "4 skills exported" in output
    site = tmp_path / "site"
    async with client(app_of(library, tmp_path)) as http:
        for index_path in (".well-known/agent-skills/index.json", ".well-known/skills/index.json"):
            served = (await http.get(f"/{index_path}")).json()
            assert json.loads((site / index_path).read_text(encoding="utf-8")) == served, index_path
        for entry in served["skills"]:  # the v0.1.0 index: every file it lists, as served
            for path in entry["files"]:
                served_file = await http.get(f"/.well-known/skills/{entry['name']}/{path}")
                assert (site / ".well-known/skills" / entry["name"] / path).read_bytes() == served_file.content
    index = json.loads((site / ".well-known/agent-skills/index.json").read_text(encoding="utf-8"))
    for entry in index["skills"]:
        assert digest((site / ".well-known/agent-skills" / entry["url"]).read_bytes()) == entry["digest"]


def test_export_of_a_view_leaves_its_hidden_skills_out(library: SkillLibrary, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[views.team]\nskills = [{ exclude = "secret/*" }]\n', encoding="utf-8")
    result = CliRunner().invoke(
        cli, ["--config", str(config), "export", "-l", str(library.roots[0]), str(tmp_path / "out"), "--view", "team"]
    )
    assert result.exit_code == 0, result.output
    index = json.loads((tmp_path / "out/.well-known/agent-skills/index.json").read_text(encoding="utf-8"))
    assert "vault-notes" not in {e["name"] for e in index["skills"]} and len(index["skills"]) == 3
    assert not (tmp_path / "out/.well-known/skills/vault-notes").exists()


def test_export_as_a_release_is_an_index_beside_one_archive_per_skill(library: SkillLibrary, tmp_path: Path) -> None:
    code, output = export(library, tmp_path / "release", "--format", "zip")
    assert code == 0, output
    release = tmp_path / "release"
    index = json.loads((release / "index.json").read_text(encoding="utf-8"))
    assert sorted(p.name for p in release.iterdir()) == sorted(
        ["index.json", *(f"{e['name']}.zip" for e in index["skills"])]
    )
    for entry in index["skills"]:
        assert entry["type"] == "archive" and entry["url"] == f"{entry['name']}.zip"
        data = (release / entry["url"]).read_bytes()
        assert digest(data) == entry["digest"]
        assert "SKILL.md" in zipfile.ZipFile(io.BytesIO(data)).namelist()


def test_export_never_writes_into_a_folder_that_has_files(library: SkillLibrary, tmp_path: Path) -> None:
    keep = write(tmp_path / "busy" / "mine.txt", "mine\n")
    code, output = export(library, tmp_path / "busy")
    assert code == 1 and "is not empty" in output
    assert keep.read_text(encoding="utf-8") == "mine\n" and len(list(keep.parent.iterdir())) == 1
