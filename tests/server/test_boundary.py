"""The rules the review found skipped on newer surfaces, now held by every surface of a real server:
dot-paths and symlinks into hidden skills are served by none, the alias bomb reaches none, and a hidden
skill is never named in a suggestion."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
import pytest
from mcp import Client, MCPError
from starlette.applications import Starlette

from skillshelf.config.views import FilterRule, ViewSettings
from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.server.web import WebAccess, web_routes
from skillshelf.settings import Settings
from tests.conftest import agent_skill, call, synced_library, write
from tests.server.test_skills_ext import all_skills, request

pytestmark = pytest.mark.anyio

HIDDEN = "secret/vault-notes"
VIEW = ViewSettings(skills=[FilterRule(exclude="secret/*")], tools=[FilterRule(include="*")])
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
    for i in range(7)
)  # 9**8 = 43 million values once expanded, from 400 bytes


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    agent_skill(root, "secret", "vault-notes", "name: vault-notes\ndescription: Where the vault keys live.")
    write(root / "secret" / "vault-notes" / "references" / "keys.md", "root token: hunter2\n")
    tool = agent_skill(root, "docs", "tool", "name: tool\ndescription: A tool everyone may read.")
    write(tool.parent / ".env", "API_KEY=sk-live-123\n")
    write(tool.parent / ".git" / "config", "[remote]\n\turl = https://bob:ghp_token@example.com/x\n")
    (tool.parent / "references").mkdir()
    (tool.parent / "references" / "config").symlink_to("../.git/config")
    (tool.parent / "references" / "keys.md").symlink_to(root / "secret" / "vault-notes" / "references" / "keys.md")
    write(root / "docs" / "bomb" / "SKILL.md", f"---\nname: bomb\ndescription: d\n{BOMB}---\n# Bomb\n")
    return root


@pytest.fixture
def library(root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    with synced_library(root, tmp_path / "index") as opened:
        yield opened


@asynccontextmanager
async def serve(library: SkillLibrary, view: str | None = "default") -> AsyncIterator[Client]:
    settings = Settings(roots=library.roots, views={"default": VIEW})
    async with Client(build_server(settings, library, view=view), raise_exceptions=True) as client:
        yield client


@pytest.mark.parametrize("path", [".env", ".git/config", "references/config", "references/keys.md"])
async def test_no_surface_serves_a_dot_path_or_a_symlink_into_a_hidden_skill(library: SkillLibrary, path: str) -> None:
    async with serve(library) as client:
        with pytest.raises(MCPError):
            await client.read_resource(f"skill://docs/tool/{path}")
        failed, envelope = await call(client, "readSkillFile", {"skillId": "docs/tool", "path": path})
        assert failed and "hunter2" not in str(envelope) and "ghp_token" not in str(envelope)
        got = await request(client, "skills/get", {"uri": "skill://docs/tool/SKILL.md"})
        assert [r["uri"] for r in got["skill"]["resources"]] == ["skill://docs/tool/SKILL.md"]
    app = Starlette(routes=web_routes(ViewReader(library, VIEW.skill_rules()), WebAccess()))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://t") as web:
        page = await web.get(f"/skills/docs/tool/{path}")
        assert page.status_code == 404 and "hunter2" not in page.text and "ghp_token" not in page.text


async def test_the_alias_bomb_is_refused_by_skills_list_and_get_as_by_the_loaders(library: SkillLibrary) -> None:
    async with serve(library) as client:
        listed = await all_skills(client)  # before: yaml.safe_load expanded it (gigabytes, no answer)
        assert [s["uri"] for s in listed] == ["skill://docs/tool/SKILL.md"]
        with pytest.raises(MCPError) as refused:
            await request(client, "skills/get", {"uri": "skill://docs/bomb/SKILL.md"})
        assert "frontmatter" in refused.value.error.message


async def test_a_bare_name_suggests_no_hidden_skill_on_any_surface(library: SkillLibrary) -> None:
    async with serve(library) as client:
        for tool, arguments in (
            ("loadSkill", {"skillId": "vault-notes"}),
            ("loadSkill", {"skillIds": ["vault-notes", "secret/vault-note"]}),
            ("readSkillFile", {"skillId": "vault-notes", "path": "SKILL.md"}),
            ("trackPatternUsage", {"patternId": "vault-notes"}),
        ):
            _failed, envelope = await call(client, tool, arguments)
            assert HIDDEN not in str(envelope), (tool, envelope)
        with pytest.raises(MCPError) as hidden:
            await client.read_resource("skill://secret/vault-notes/SKILL.md")
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("skill://secret/no-such/SKILL.md")
        same = hidden.value.error.message.replace("vault-notes", "no-such")
        assert (same, hidden.value.error.code) == (unknown.value.error.message, unknown.value.error.code)


async def test_a_name_no_file_system_takes_is_a_clear_error_on_every_read(library: SkillLibrary) -> None:
    long_name = "a" * 256 + ".md"
    async with serve(library) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(f"skill://docs/tool/references/{long_name}")
        assert refused.value.error.code != 0 and "255 bytes" in refused.value.error.message
        assert "/tmp" not in refused.value.error.message and "/root" not in refused.value.error.message
        failed, envelope = await call(client, "readSkillFile", {"skillId": "docs/tool", "path": long_name})
        error = envelope["error"]
        assert failed and error["code"] == "VALIDATION_ERROR" and "255 bytes" in error["message"]
