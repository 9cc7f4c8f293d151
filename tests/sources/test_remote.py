"""Sources on other servers: a second skillshelf over MCP (`mcp+http://`, a token from --token-env) and the
discovery index `serve --http` publishes (v0.2.0 and v0.1.0), both on real servers on loopback; a file whose
bytes differ from its listed digest is refused with nothing installed."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
from click.testing import CliRunner

from skillshelf.cli import cli
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.lock import lock_path, parse_lock, read_lock
from skillshelf.library.sources.parse import parse_source
from tests.conftest import agent_skill, isolated_env, wait_until, write
from tests.live_server import LiveServer, skillshelf_http

SECRET = "publisher-0123456789abcdef"
KEY = "ghp_" + "c" * 36  # a key the publisher's redaction hook masks in what it serves


def run(*args: str, token: str | None = SECRET) -> tuple[int, str]:
    env = {"PUBLISHER_TOKEN": token} if token is not None else {}
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.output + (str(result.exception) if result.exit_code not in (0, 1) else "")


def publisher_library(root: Path) -> Path:
    agent_skill(root, "docs", "plain-notes", "name: plain-notes\ndescription: Notes alone.", "# Notes\n\nRead.\n")
    tool = agent_skill(root, "ops", "deploy-tool", "name: deploy-tool\ndescription: Deploys things.", "# Deploy\n")
    write(tool.parent / "scripts" / "run.sh", "echo deploy\n")
    write(tool.parent / "references" / "notes.md", "Deploy on Tuesdays.\n")
    # the same name in a later category: published once, as the first (an index names each skill once)
    agent_skill(root, "zz", "plain-notes", "name: plain-notes\ndescription: The other notes.", "# Other\n")
    return root


@contextmanager
def publishing(folder: Path, env: dict[str, str]) -> Iterator[LiveServer]:
    """A second skillshelf serving `folder / "published"` over HTTP behind a token."""
    library = publisher_library(folder / "published")
    arguments = ["serve", "--http", "-l", str(library), "--projects-root", str(folder / "projects")]
    with skillshelf_http(
        arguments, folder / "publisher.log", env={**env, "SKILLSHELF_TOKENS": f"ci={SECRET}"}
    ) as server:
        yield server


@pytest.fixture(scope="module")
def publisher(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """One publisher for the module's tests that only install from it (a server start is seconds on a busy
    machine); a test that changes the published library starts its own (`own_publisher`)."""
    folder = tmp_path_factory.mktemp("publisher")
    with publishing(folder, isolated_env(folder / "home")) as server:
        yield server


@pytest.fixture
def own_publisher(tmp_path: Path, isolated_environment: Path) -> Iterator[LiveServer]:
    """A publisher of this test alone, publishing `tmp_path / "published"`."""
    with publishing(tmp_path, dict(os.environ)) as server:
        yield server


@pytest.fixture(scope="module")
def tampering(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A server whose post_call hook changes a file's bytes after its digest was listed (a redaction); its
    tests only read from it, so the module shares one."""
    folder = tmp_path_factory.mktemp("tampering")
    library = publisher_library(folder / "published")
    vault = agent_skill(library, "secret", "vault-notes", "name: vault-notes\ndescription: Vault keys.", "# Vault\n")
    write(vault.parent / "references" / "keys.md", f"the vault key is {KEY}\n")
    config = write(
        folder / "config.toml",
        '[views.default]\nextends = "agent"\n\n[views.default.hooks]\n'
        'post_call = "skillshelf.server.hooks:redact_secrets"\n',
    )
    env = {**isolated_env(folder / "home"), "SKILLSHELF_TOKENS": f"ci={SECRET}"}
    arguments = ["--config", str(config), "serve", "--http", "-l", str(library)]
    arguments += ["--projects-root", str(folder / "projects")]
    with skillshelf_http(arguments, folder / "tampering.log", env=env) as server:
        yield server


def installed(root: Path, source: str) -> dict[str, bytes]:
    folder = root / source
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def nothing_installed(root: Path) -> bool:
    """No lock, and no folder but skillshelf's own state (`.skillshelf/`, no staging left in it)."""
    staged = list((root / ".skillshelf").glob("staging*/*")) if (root / ".skillshelf").exists() else []
    return not lock_path(root).exists() and [p.name for p in root.iterdir()] in ([], [".skillshelf"]) and not staged


def test_a_second_server_is_a_source_over_mcp_with_a_token(publisher: LiveServer, tmp_path: Path) -> None:
    root = tmp_path / "mine"
    url = publisher.base.replace("http://", "mcp+http://") + "/mcp"
    code, output = run("add", url, "--token-env", "PUBLISHER_TOKEN", "--name", "team", "-l", str(root))
    assert code == 0, output
    files = installed(root, "team")
    assert files["deploy-tool/scripts/run.sh"] == b"echo deploy\n"
    assert files["deploy-tool/references/notes.md"] == b"Deploy on Tuesdays.\n"
    assert b"description: Notes alone." in files["plain-notes/SKILL.md"]  # docs/plain-notes, not zz/plain-notes
    entry = read_lock(lock_path(root)).sources["team"]
    assert (entry.kind, entry.url, entry.token_env) == ("mcp", url, "PUBLISHER_TOKEN")
    assert {s.id for s in entry.skills} == {"team/plain-notes", "team/deploy-tool"}
    assert SECRET not in lock_path(root).read_text(encoding="utf-8")  # the variable's name, never its value
    code, output = run("update", "--check", "-l", str(root))
    assert code == 0, output  # nothing changed on the publisher: nothing pending
    shutil.rmtree(root / "team")
    code, output = run("sync", "-l", str(root))
    assert code == 0, output
    assert installed(root, "team") == files  # fetched again and checked like a git source


def test_without_its_token_the_server_is_refused_and_nothing_is_installed(
    publisher: LiveServer, tmp_path: Path
) -> None:
    root = tmp_path / "mine"
    url = publisher.base.replace("http://", "mcp+http://") + "/mcp"
    code, output = run("add", url, "--token-env", "PUBLISHER_TOKEN", "-l", str(root), token=None)
    assert code == 1 and "$PUBLISHER_TOKEN" in output
    code, output = run("add", url, "-l", str(root))
    assert code == 1 and "401" in output, output
    assert nothing_installed(root)


def test_a_discovery_index_from_serve_is_consumed_by_add(publisher: LiveServer, tmp_path: Path) -> None:
    root = tmp_path / "mine"
    for name, path in (("v2", "agent-skills/index.json"), ("v1", "skills")):
        code, output = run(
            "add", f"{publisher.base}/.well-known/{path}", "--token-env", "PUBLISHER_TOKEN", "--name", name,
            "-l", str(root),
        )  # fmt: skip
        assert code == 0, output
        assert installed(root, name)["deploy-tool/scripts/run.sh"] == b"echo deploy\n"
        assert installed(root, name)["deploy-tool/references/notes.md"] == b"Deploy on Tuesdays.\n"
    lock = read_lock(lock_path(root))
    assert lock.sources["v2"].kind == lock.sources["v1"].kind == "index"
    assert lock.sources["v1"].url == f"{publisher.base}/.well-known/skills/index.json"
    assert installed(root, "v1") == installed(root, "v2")


@pytest.mark.parametrize("kind", ["mcp", "index"])
def test_a_file_that_does_not_match_its_digest_is_refused_with_nothing_installed(
    tampering: LiveServer, tmp_path: Path, kind: str
) -> None:
    root = tmp_path / "mine"
    root.mkdir()
    if kind == "mcp":
        url = tampering.base.replace("http://", "mcp+http://") + "/mcp"
    else:
        url = f"{tampering.base}/.well-known/agent-skills/index.json"
    code, output = run("add", url, "--token-env", "PUBLISHER_TOKEN", "--name", "team", "-l", str(root))
    assert code == 1, output
    assert "does not match its digest" in output and "vault-notes" in output
    assert nothing_installed(root)


def test_an_update_on_the_publisher_is_reviewed_and_applied_like_a_git_sources(
    own_publisher: LiveServer, tmp_path: Path
) -> None:
    root = tmp_path / "mine"
    url = own_publisher.base.replace("http://", "mcp+http://") + "/mcp"
    assert run("add", url, "--token-env", "PUBLISHER_TOKEN", "--name", "team", "-l", str(root))[0] == 0
    index_url = f"{own_publisher.base}/.well-known/agent-skills/index.json"
    headers = {"Authorization": f"Bearer {SECRET}"}
    before = httpx2.get(index_url, headers=headers).json()
    write(tmp_path / "published" / "ops" / "deploy-tool" / "references" / "notes.md", "Deploy on Fridays.\n")
    wait_until(lambda: httpx2.get(index_url, headers=headers).json() != before, "the publisher's new digest")
    code, output = run("update", "--check", "-l", str(root))
    assert code == 1 and "notes.md" in output, output  # pending, and the review names the changed file
    code, output = run("update", "--yes", "-l", str(root))
    assert code == 0, output
    assert (root / "team" / "deploy-tool" / "references" / "notes.md").read_text(encoding="utf-8") == (
        "Deploy on Fridays.\n"
    )


@pytest.mark.parametrize(
    ("text", "kind", "url"),
    [
        ("mcp+https://skills.example/mcp", "mcp", "mcp+https://skills.example/mcp"),
        ("https://example.com/.well-known/agent-skills", "index", "https://example.com/.well-known/agent-skills/index.json"),
        ("https://example.com/docs/.well-known/skills/", "index", "https://example.com/docs/.well-known/skills/index.json"),
        ("http://127.0.0.1:8765/.well-known/skills/index.json", "index", "http://127.0.0.1:8765/.well-known/skills/index.json"),
        ("mcp+http://localhost:8765/mcp", "mcp", "mcp+http://localhost:8765/mcp"),
    ],
)  # fmt: skip
def test_an_index_url_or_an_mcp_server_is_a_source(text: str, kind: str, url: str) -> None:
    spec = parse_source(text)
    assert (spec.kind, spec.url) == (kind, url)


@pytest.mark.parametrize(
    ("text", "token_env", "says"),
    [
        ("http://example.com/.well-known/skills/index.json", None, "plain http"),
        ("mcp+http://example.com/mcp", None, "plain http"),
        ("mcp+ftp://example.com/mcp", None, "not mcp+ftp://"),
        ("https://example.com/repo.git", "TOKEN", "--token-env is for"),
        ("mcp+https://example.com/mcp", "NOT A NAME", "must name an environment variable"),
    ],
)
def test_a_remote_source_that_breaks_a_rule_is_refused_naming_it(text: str, token_env: str | None, says: str) -> None:
    with pytest.raises(SourceError, match=re.escape(says)):
        parse_source(text, token_env=token_env)


@pytest.mark.parametrize(
    ("lines", "says"),
    [
        ('kind = "index"\nurl = "../elsewhere"', "is a https URL"),
        ('kind = "mcp"\nurl = "mcp+http://example.com/mcp"', "plain http"),
        ('kind = "mcp"\nurl = "mcp+https://example.com/mcp"\ntoken_env = "$(id)"', "token_env"),
        ('kind = "git"\nurl = "https://example.com/r.git"\ntoken_env = "TOKEN"', "token_env"),
    ],
)
def test_a_lock_naming_a_remote_source_is_read_with_the_rules_add_follows(lines: str, says: str) -> None:
    text = f'version = 1\n\n[source.team]\n{lines}\ninstalled = "2026-01-01T00:00:00Z"\n'
    with pytest.raises(SourceError, match=re.escape(says)):
        parse_lock(text, "skillshelf.lock")
