"""Every surface that reads a skill passes the view's one call pipeline with the skills it touches: a
pre_call policy on a skill (the one in docs/deploy.md) stops it on each, a post_call redaction holds on
each (the web page included), and the call log has a line for each.

The surfaces are listed from the registries, so a new one that is not added here fails
`test_every_read_surface_is_listed_here`: the pipeline's read methods (METHODS), the resource templates
and the files a skill's manifest lists, the web view's routes, and every tool with a skill parameter."""

from __future__ import annotations

import io
import json
import re
import sys
import types
import zipfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, MCPError

from skillshelf.config.auth import AuthSettings, TokenSettings, token_digest
from skillshelf.config.hooks import HookSettings
from skillshelf.config.views import ViewSettings
from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.server.auth import web_authorize, web_refusal
from skillshelf.server.calllog import CallLog
from skillshelf.server.hooks import HookResult, ToolCall
from skillshelf.server.http import team_app
from skillshelf.server.pipeline import METHODS
from skillshelf.server.web import WebAccess, surfaces, web_routes
from skillshelf.settings import ExecutionSettings, Settings
from tests.conftest import agent_skill, call, synced_library, write
from tests.server.team_support import make_server
from tests.server.test_skills_ext import request

pytestmark = pytest.mark.anyio

VAULT = "secret/vault-notes"
KEY = "ghp_" + "b" * 36
SECRET = KEY[4:]  # what a page shows of the key: it may break a long word after its "_" (<wbr>)
VAULT_DOC = "# Vault\n\nThe vault notes say where the keys are.\n"
SHOWN = ("Vault keys", "vault notes say", SECRET)  # what any read of the vault skill shows of it
SEEN: list[ToolCall] = []
# Reads that name no skill (a prompt, a search, the charts over every skill): a policy refuses them by name.
REFUSED_BY_NAME = {"prompts/get", "web/search", "web/library", "well-known/index", "well-known/skills-index"}


def vault_policy(call: ToolCall) -> HookResult | None:
    """docs/deploy.md's pre_call policy, plus a refusal by name of the reads that name no skill."""
    SEEN.append(call)
    if VAULT in call.skill_ids:
        return HookResult(abort="that skill is off limits")
    if call.own in REFUSED_BY_NAME:
        return HookResult(abort="that page is off limits")
    return None


@dataclass(frozen=True)
class Read:
    """One way to read the vault skill: `kind` is how (mcp, tool or web), `name` what hooks and the log see."""

    kind: str
    name: str
    target: str  # a URI, a prompt, a tool, or a web path
    arguments: dict[str, Any]
    path: str | None = None  # the skill file it names, if it names one


# -- the registry of read surfaces ---------------------------------------------------------------
# A URI for each resource template, naming the vault skill.
TEMPLATES = {"skill://{category}/{name}": f"skill://{VAULT}"}
# A request for each web route: its path template -> the read (the surface, a URL naming the vault skill, the
# file it names); None: a route that reads no skill.
WEB = {
    "/": Read("web", "web/search", "/?q=vault", {}),
    "/library": Read("web", "web/library", "/library", {}),
    "/skills/{category}/{name}/": Read("web", "web/skill", f"/skills/{VAULT}/", {}),
    "/skills/{category}/{name}/{path:path}": Read(
        "web", "web/file", f"/skills/{VAULT}/references/keys.md", {}, "references/keys.md"
    ),
    # the Agent Skills discovery index (server/wellknown.py): the indexes, an archive, a file in either tree
    "/.well-known/agent-skills/index.json": Read("web", "well-known/index", "/.well-known/agent-skills/index.json", {}),
    "/.well-known/skills/index.json": Read("web", "well-known/skills-index", "/.well-known/skills/index.json", {}),
    "/.well-known/agent-skills/{name}.zip": Read(
        "web", "well-known/archive", "/.well-known/agent-skills/vault-notes.zip", {}
    ),
    "/.well-known/agent-skills/{name}/{path:path}": Read(
        "web", "well-known/file", "/.well-known/agent-skills/vault-notes/SKILL.md", {}, "SKILL.md"
    ),
    "/.well-known/skills/{name}/{path:path}": Read(
        "web", "well-known/file", "/.well-known/skills/vault-notes/references/keys.md", {}, "references/keys.md"
    ),
    "/skills/{category}/{name}": None,  # a redirect to the skill page
    "/static/skillshelf.css": None,
    "/static/skillshelf.svg": None,  # the icon
    "/favicon.ico": None,
    "/{path:path}": None,  # the 404 page
}


def mcp_reads() -> list[Read]:
    uris = [*TEMPLATES.values(), f"skill://{VAULT}/SKILL.md", f"skill://{VAULT}/references/keys.md"]
    return [
        *(Read("mcp", "resources/read", uri, {"uri": uri}, uri.partition(VAULT + "/")[2] or None) for uri in uris),
        Read("mcp", "skills/get", "skills/get", {"uri": f"skill://{VAULT}/SKILL.md"}, "SKILL.md"),
        Read("mcp", "prompts/get", "find-skill", {"task": "read the vault notes"}),
    ]


def web_reads() -> list[Read]:
    return [read for read in WEB.values() if read is not None]


async def tool_reads(client: Client) -> list[Read]:
    """Every tool with a skill parameter, naming the vault skill in each place it can."""
    found = []
    for tool in (await client.list_tools()).tools:
        accepted = set(tool.input_schema.get("properties", {}))
        for parameter in sorted(accepted & {"skillId", "patternId", "skillIds"}):
            value: Any = [VAULT] if parameter == "skillIds" else VAULT
            found.append(Read("tool", tool.name, tool.name, {parameter: value}))
    return found


# -- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(autouse=True)
def fresh_seen() -> Iterator[None]:
    SEEN.clear()
    yield
    SEEN.clear()


@pytest.fixture
def library(tmp_path: Path) -> Iterator[SkillLibrary]:
    root = tmp_path / "library"
    tool = agent_skill(root, "docs", "tool", "name: tool\ndescription: Deploy notes.", f"# Deploy\n\nUse `{KEY}`.\n")
    write(tool.parent / "references" / "creds.md", f"use `password={KEY}` for the mirror\n")
    vault = agent_skill(root, "secret", "vault-notes", "name: vault-notes\ndescription: Vault keys.", VAULT_DOC)
    write(vault.parent / "references" / "keys.md", f"the vault key is {KEY}\n")
    with synced_library(root, tmp_path / "index") as opened:
        yield opened


@dataclass
class Served:
    client: Client
    web: httpx2.AsyncClient
    log: CallLog

    def records(self) -> list[dict[str, Any]]:
        assert self.log.flush()
        return [json.loads(line) for line in self.log.path.read_text(encoding="utf-8").splitlines()]


@asynccontextmanager
async def serve(library: SkillLibrary, tmp_path: Path, hooks: HookSettings) -> AsyncIterator[Served]:
    """The full view (every tool, execution on) over MCP in-process, and its web pages over ASGI."""
    settings = Settings(
        roots=library.roots,
        views={"v": ViewSettings(extends="full", hooks=hooks)},
        execution=ExecutionSettings(enabled=True),
        project_roots=[tmp_path / "projects"],
    )
    log = CallLog(tmp_path / "calls.jsonl", 1 << 20)
    server = build_server(settings, library, view="v", call_log=log, web=WebAccess())
    transport = httpx2.ASGITransport(app=server.http_app())
    async with (
        Client(server, raise_exceptions=True) as client,
        httpx2.AsyncClient(transport=transport, base_url="http://t") as web,
    ):
        yield Served(client, web, log)


async def attempt(served: Served, read: Read) -> tuple[bool, str]:
    """(refused, what came back as text) for one read of the vault skill."""
    if read.kind == "tool":
        failed, body = await call(served.client, read.target, read.arguments)
        return failed and body["error"]["code"] == "CALL_ABORTED", json.dumps(body)
    if read.kind == "web":
        page = await served.web.get(read.target)
        text = page.text
        if page.headers.get("content-type") == "application/zip":  # a skill's archive: what its files say
            packed = zipfile.ZipFile(io.BytesIO(page.content))
            text = "".join(packed.read(name).decode() for name in packed.namelist())
        return page.status_code == 403 and "off limits" in page.text, text
    try:
        if read.name == "resources/read":
            got: Any = await served.client.read_resource(read.target)
        elif read.name == "prompts/get":
            got = await served.client.get_prompt(read.target, read.arguments)
        else:
            got = await request(served.client, read.name, read.arguments)
    except MCPError as exc:
        return "off limits" in exc.error.message, exc.error.message
    return False, json.dumps(got, default=str)


# -- the tests ------------------------------------------------------------------------------------
async def test_every_read_surface_is_listed_here(library: SkillLibrary, tmp_path: Path) -> None:
    assert {m for m, kind in METHODS.items() if kind == "read"} == {r.name for r in mcp_reads()}
    routes = web_routes(ViewReader(library), WebAccess())
    assert {route.path for route in routes} == set(WEB), "a web route this test does not read through"
    assert set(surfaces(ViewReader(library))) == {r.name for r in web_reads()}
    async with serve(library, tmp_path, HookSettings()) as served:
        templates = await served.client.list_resource_templates()
        assert {t.uri_template for t in templates.resource_templates} == set(TEMPLATES)
        manifest = await request(served.client, "skills/get", {"uri": f"skill://{VAULT}/SKILL.md"})
        listed = {resource["uri"] for resource in manifest["skill"]["resources"]}
        assert listed <= {r.target for r in mcp_reads()}, "a file of the skill this test does not read"
        reads = await tool_reads(served.client)
    assert {"loadSkill", "readSkillFile", "executeSkill", "trackPatternUsage"} <= {r.name for r in reads}


async def test_a_refusing_hook_stops_every_read_surface_and_the_call_log_records_each(
    library: SkillLibrary, tmp_path: Path
) -> None:
    async with serve(library, tmp_path, HookSettings(pre_call=f"{__name__}:vault_policy")) as served:
        reads = [*mcp_reads(), *web_reads(), *await tool_reads(served.client)]
        for read in reads:
            refused, text = await attempt(served, read)
            assert refused, f"{read.name} {read.target} was not stopped: {text[:300]}"  # before: resources/read,
            assert not any(shown in text for shown in SHOWN)  # skills/get and every web page were served
        records = served.records()
    assert [(r["tool"], r["ok"], r["code"]) for r in records] == [(r.name, False, "CALL_ABORTED") for r in reads]
    assert [c.own for c in SEEN] == [r.name for r in reads]
    for read, seen in zip(reads, SEEN, strict=True):
        if read.name not in REFUSED_BY_NAME:  # the hook saw the skill (and the file) each one reads
            assert seen.skill_ids == [VAULT], read
            assert seen.paths == ([read.path] if read.path else []), read


@pytest.mark.parametrize(
    "uri",
    [
        "skill://%73ecret/vault-notes",  # percent-encoded: the hook sees the decoded id the read finds
        f"skill://{VAULT}/%53KILL.md",
        f"skill://{VAULT}/./references/keys.md",
        f"skill://{VAULT}/",  # not a skill URI: refused before the skill:// template could read it
        "skill://x/secret%2Fvault-notes",
        f"skill:///{VAULT}",
    ],
)
async def test_no_spelling_of_a_skill_uri_reads_past_the_policy(
    library: SkillLibrary, tmp_path: Path, uri: str
) -> None:
    async with serve(library, tmp_path, HookSettings(pre_call=f"{__name__}:vault_policy")) as served:
        _refused, text = await attempt(served, Read("mcp", "resources/read", uri, {"uri": uri}))
    assert not any(shown in text for shown in SHOWN), text


@pytest.fixture
def docs_example(monkeypatch: pytest.MonkeyPatch) -> str:
    """docs/deploy.md's hook example, as written, importable as a hook: its module's name."""
    deploy = (Path(__file__).parents[2] / "docs" / "deploy.md").read_text(encoding="utf-8")
    (code,) = [block for block in re.findall(r"```python\n(.*?)```", deploy, re.DOTALL) if "def pre_call" in block]
    module = types.ModuleType("deploy_hook_example")
    exec(compile(code, "docs/deploy.md", "exec"), module.__dict__)  # the docs' own code, nothing else
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module.__name__


async def test_the_docs_hook_example_holds_on_every_surface_that_names_the_skill(
    library: SkillLibrary, tmp_path: Path, docs_example: str
) -> None:
    async with serve(library, tmp_path, HookSettings(pre_call=f"{docs_example}:pre_call")) as served:
        reads = [*mcp_reads(), *web_reads(), *await tool_reads(served.client)]
        for read in [r for r in reads if r.name not in REFUSED_BY_NAME]:
            refused, text = await attempt(served, read)
            assert refused and not any(shown in text for shown in SHOWN), f"{read.name} {read.target}: {text[:300]}"


async def test_every_read_surface_is_in_the_call_log_with_its_skill(library: SkillLibrary, tmp_path: Path) -> None:
    async with serve(library, tmp_path, HookSettings()) as served:
        reads = [r for r in [*mcp_reads(), *web_reads()] if r.name not in REFUSED_BY_NAME]
        for read in reads:
            refused, text = await attempt(served, read)
            assert not refused and any(shown in text for shown in SHOWN), read
        records = served.records()
    assert [(r["tool"], r["ok"], r.get("skill")) for r in records] == [(r.name, True, VAULT) for r in reads]


async def test_a_post_call_redaction_holds_on_the_web_pages_as_over_mcp(library: SkillLibrary, tmp_path: Path) -> None:
    async with serve(library, tmp_path, HookSettings(post_call="skillshelf.server.hooks:redact_secrets")) as served:
        (content,) = (await served.client.read_resource("skill://docs/tool/references/creds.md")).contents
        assert SECRET not in json.dumps(content.model_dump())
        skill_page = await served.web.get("/skills/docs/tool/")
        file_page = await served.web.get("/skills/docs/tool/references/creds.md")
        search = await served.web.get("/", params={"q": "deploy"})
        published = await served.web.get("/.well-known/skills/tool/references/creds.md")
    for page in (skill_page, file_page, search, published):
        assert page.status_code == 200, page.text[:300]
    assert SECRET not in skill_page.text and "[REDACTED]" in skill_page.text  # before: the page showed the key
    assert SECRET not in file_page.text and "password=[REDACTED]" in file_page.text
    assert 'data-skill="docs/tool"' in search.text
    assert published.text == "use `password=[REDACTED]` for the mirror\n"  # the discovery index's file too


async def test_a_failing_hook_is_a_500_page_that_shows_nothing(library: SkillLibrary, tmp_path: Path) -> None:
    async with serve(library, tmp_path, HookSettings(post_call=f"{__name__}:not_a_page")) as served:
        page = await served.web.get("/skills/docs/tool/")
        broken = await served.web.get("/skills/docs/tool/references/creds.md")
    assert page.status_code == 500 and SECRET not in page.text and "post_call hook" in page.text
    assert broken.status_code == 500 and SECRET not in broken.text


async def test_a_web_page_is_logged_under_the_token_that_read_it(library: SkillLibrary, tmp_path: Path) -> None:
    token = "alice-0123456789abcdef"
    tokens = {"alice": TokenSettings(sha256=token_digest(token), views=["default"])}
    log = CallLog(tmp_path / "calls.jsonl", 1 << 20)
    web = WebAccess(authorize=web_authorize(True), refuse=web_refusal())
    server = make_server(library, tmp_path / "projects", web, call_log=log)
    app = team_app({"default": server}, auth=AuthSettings(tokens=tokens))
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        page = await http.get("/skills/docs/tool/references/creds.md", headers={"Authorization": f"Bearer {token}"})
    assert page.status_code == 200
    assert log.flush()
    (record,) = [json.loads(line) for line in log.path.read_text(encoding="utf-8").splitlines()]
    assert (record["tool"], record["caller"], record["skill"], record["ok"]) == ("web/file", "alice", "docs/tool", True)


def not_a_page(_call: ToolCall, _envelope: dict[str, Any]) -> HookResult:
    """post_call: a replacement of another shape than the read's."""
    return HookResult(result={"success": True, "data": {"nothing": "here"}})
