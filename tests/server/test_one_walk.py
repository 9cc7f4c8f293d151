"""Every place that lists a skill's files lists exactly files readSkillFile serves (issue 30: the one walk).

loadSkill's metadata.resources was built by its own walk (`rglob`) and listed
`scripts/node_modules/x.js` and `references/build/y.md`, which readSkillFile refuses. LISTERS names
every surface that lists a skill's files; each must list only what readSkillFile reads, and together
they must agree with the one walk (`library/skill/folder.py`).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client

from skillshelf.cli import cli
from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.server.web import WebAccess, web_app
from skillshelf.settings import Settings
from skillshelf.skills import service
from tests.conftest import agent_skill, call, synced_library, write
from tests.server.test_skills_ext import all_skills

pytestmark = pytest.mark.anyio

SKILL = "tools/bundle"
SERVED = {"SKILL.md", "scripts/run.py", "references/guide.md", "references/deep/more.md", "assets/logo.txt"}
REFUSED = {
    "scripts/node_modules/x.js",
    "references/build/y.md",
    "references/.secret.md",
    "assets/__pycache__/c.pyc",
    "scripts/venv/bin/python3",
    "references/dist/z.md",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    folder = agent_skill(root, "tools", "bundle", "name: bundle\ndescription: A skill with vendored folders.").parent
    for path in (SERVED | REFUSED) - {"SKILL.md"}:
        write(folder / path, f"content of {path}\n")
    return root


@pytest.fixture
def library(root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    with synced_library(root, tmp_path / "idx") as opened:
        yield opened


@pytest.fixture
async def client(root: Path, library: SkillLibrary) -> AsyncIterator[Client]:
    server = build_server(Settings(roots=[root], watch=False), library, view="full")
    async with Client(server, raise_exceptions=True) as connected:
        yield connected


async def load_skill_resources(client: Client, _library: SkillLibrary, _root: Path) -> set[str]:
    failed, envelope = await call(client, "loadSkill", {"skillId": SKILL, "includeMetadata": True})
    assert not failed, envelope
    return set(envelope["data"]["metadata"]["resources"])


async def brief_resources(client: Client, _library: SkillLibrary, _root: Path) -> set[str]:
    failed, envelope = await call(client, "loadSkill", {"skillId": SKILL})
    assert not failed, envelope
    return set(envelope["data"]["metadata"]["resources"])


async def skills_list_manifest(client: Client, _library: SkillLibrary, _root: Path) -> set[str]:
    (entry,) = [s for s in await all_skills(client) if s["uri"] == f"skill://{SKILL}/SKILL.md"]
    return {r["uri"].removeprefix(f"skill://{SKILL}/") for r in entry["resources"]}


async def resources_list(client: Client, _library: SkillLibrary, _root: Path) -> set[str]:
    listed = (await client.list_resources()).resources
    return {r.uri.removeprefix(f"skill://{SKILL}/") for r in listed if r.uri.startswith(f"skill://{SKILL}/")}


async def web_page(_client: Client, library: SkillLibrary, _root: Path) -> set[str]:
    transport = httpx2.ASGITransport(app=web_app(ViewReader(library), WebAccess()))
    async with httpx2.AsyncClient(transport=transport, base_url="http://t") as web:
        page = (await web.get(f"/skills/{SKILL}/")).text
    return set(re.findall(rf'<a href="/skills/{SKILL}/([^"]+)">', page))


async def cli_show(_client: Client, _library: SkillLibrary, root: Path) -> set[str]:
    result = CliRunner().invoke(cli, ["show", "-l", str(root), SKILL])
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.output.splitlines() if line.startswith("files: ")]
    return set(line.removeprefix("files: ").split(", "))


async def reader_files(_client: Client, library: SkillLibrary, _root: Path) -> set[str]:
    reader = ViewReader(library, [])
    return set(reader.files(reader.find(SKILL)))


Lister = Callable[[Client, SkillLibrary, Path], Awaitable[set[str]]]
# Every surface that lists a skill's files; a new one is added here.
LISTERS: dict[str, Lister] = {
    "loadSkill metadata.resources": load_skill_resources,
    "loadSkill brief metadata.resources": brief_resources,
    "skills/list manifest": skills_list_manifest,
    "resources/list": resources_list,
    "web skill page": web_page,
    "skillshelf show": cli_show,
    "reader.files (readSkillFile's list, the web page's)": reader_files,
}


@pytest.mark.parametrize("lister", LISTERS)
async def test_every_listing_holds_only_files_read_skill_file_serves(
    lister: str, client: Client, library: SkillLibrary, root: Path
) -> None:
    listed = await LISTERS[lister](client, library, root)
    assert listed, f"{lister} listed nothing"
    assert not listed & REFUSED, f"{lister} lists files readSkillFile refuses: {sorted(listed & REFUSED)}"
    for path in listed:
        failed, envelope = await call(client, "readSkillFile", {"skillId": SKILL, "path": path})
        assert not failed, (lister, path, envelope)
    for path in REFUSED:
        failed, _envelope = await call(client, "readSkillFile", {"skillId": SKILL, "path": path})
        assert failed, f"readSkillFile served {path}"


async def test_the_resources_are_the_walked_files_under_the_resource_folders(
    client: Client, library: SkillLibrary, root: Path
) -> None:
    assert await load_skill_resources(client, library, root) == SERVED - {"SKILL.md"}
    assert await skills_list_manifest(client, library, root) == SERVED


async def test_a_link_into_a_skill_the_view_hides_is_not_listed(root: Path, tmp_path: Path) -> None:
    secret = agent_skill(root, "vault", "notes", "name: notes\ndescription: Hidden notes.")
    (root / "tools" / "bundle" / "references" / "notes.md").symlink_to(secret)
    with synced_library(root, tmp_path / "idx2") as library:
        reader = ViewReader(library, [("exclude", "vault/notes")])
        loaded = service.load_skill(reader, SKILL, include_metadata=True)
        assert loaded.metadata is not None
        assert "references/notes.md" not in loaded.metadata.resources
        everyone = service.load_skill(ViewReader(library, []), SKILL, include_metadata=True).metadata
        assert everyone is not None and "references/notes.md" in everyone.resources
