"""A config reload while serving HTTP: tokens are revoked and re-scoped at once, and the start-up rule
(no skill execution served without authentication beyond loopback) holds on reload too.

Real `skillshelf serve --http` processes with a config file that the tests edit as an operator would.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from skillshelf.config.auth import AuthSettings, TokenSettings, token_digest
from skillshelf.server.auth import BearerTokens
from skillshelf.server.http import HttpReload, ReloadRefused
from skillshelf.settings import Settings, resolve_settings
from tests.conftest import wait_until_async
from tests.live_server import skillshelf_http

pytestmark = pytest.mark.anyio

ALICE = "alice-0123456789abcdef"
BOB = "bob-0123456789abcdef0"
CI = "ci-from-the-environment-0123=="  # base64-like padding: must parse as part of the token


def token_table(name: str, secret: str, views: list[str]) -> str:
    return f'[auth.tokens.{name}]\nsha256 = "{token_digest(secret)}"\nviews = {views!r}\n'.replace("'", '"')


def replace_file(path: Path, text: str) -> None:
    """Save as an editor does: a new file renamed over the old one (a new inode, so the watcher sees it)."""
    scratch = path.with_suffix(".tmp")
    scratch.write_text(text, encoding="utf-8")
    scratch.replace(path)


@contextmanager
def serve_http(config: Path, library: Path, log: Path, *flags: str, env: dict[str, str] | None = None) -> Iterator[str]:
    arguments = ["--config", str(config), "serve", "--http", "-l", str(library), *flags]
    with skillshelf_http(arguments, log, env={**os.environ, **(env or {})}) as server:
        yield server.base


async def until(condition: Callable[[], Any], what: str) -> None:
    """Until a sync or async condition holds (a generous deadline: it proves no hang)."""
    await wait_until_async(condition, what, poll_s=0.1)


async def status(base: str, path: str, token: str | None = None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx2.AsyncClient() as http:
        try:
            return (await http.get(f"{base}{path}", headers=headers)).status_code
        except httpx2.TransportError:
            return 0  # not listening yet


def logged(log: Path, text: str) -> int:
    return log.read_text(encoding="utf-8", errors="replace").count(text) if log.exists() else 0


async def test_a_token_deleted_from_the_config_is_refused_and_changed_views_apply_without_a_restart(
    sample_root: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    replace_file(config, token_table("alice", ALICE, ["default"]) + token_table("bob", BOB, ["default"]))
    log = tmp_path / "server.log"
    with serve_http(config, sample_root, log, env={"SKILLSHELF_TOKENS": f"ci={CI}"}) as base:
        await until(lambda: status(base, "/views", ALICE), "the server never answered alice")
        assert await status(base, "/views", ALICE) == 200
        assert await status(base, "/views/curator", BOB) == 403  # bob may use the default view only
        assert await status(base, "/views", CI) == 200

        replace_file(config, token_table("bob", BOB, ["default", "curator"]))  # alice revoked, bob widened

        async def alice_refused() -> bool:
            return await status(base, "/views", ALICE) == 401

        await until(alice_refused, "alice's token still works after it was deleted from the config")
        await until(lambda: logged(log, "tokens reloaded"), "no log line said what the reload changed")
        assert await status(base, "/views/curator", BOB) == 200
        assert await status(base, "/views", CI) == 200  # from the environment: not the file's to revoke
    text = log.read_text(encoding="utf-8")
    assert "revoked: alice" in text and "new secret or views: bob" in text
    assert ALICE not in text and token_digest(ALICE) not in text


async def tool_names(url: str) -> set[str]:
    async with Client(streamable_http_client(url)) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


async def test_a_reload_that_enables_execution_on_an_unauthenticated_network_bind_is_refused(
    sample_root: Path, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    replace_file(config, "[execution]\nenabled = false\n")
    log = tmp_path / "server.log"
    with serve_http(config, sample_root, log, "--host", "0.0.0.0", "--insecure-no-auth") as base:
        await until(lambda: status(base, "/health"), "the server never answered")
        assert "executeSkill" not in await tool_names(f"{base}/view/agent/mcp")  # listed only when enabled

        replace_file(config, "[execution]\nenabled = true\n")
        await until(lambda: logged(log, "config change ignored"), "the refused reload was not logged")

        assert "executeSkill" not in await tool_names(f"{base}/view/agent/mcp")
        async with Client(streamable_http_client(f"{base}/view/full/mcp")) as client:
            result = await client.call_tool("executeSkill", {"skillId": "python/slugify", "input": {}})
            assert result.is_error and result.structured_content is not None
            assert result.structured_content["error"]["code"] == "EXECUTION_DISABLED"
    text = log.read_text(encoding="utf-8")
    assert "enables skill execution" in text and "--insecure-no-auth" in text
    assert "config reloaded" not in text


# -- the rules themselves ------------------------------------------------------------------------------


def settings_with(config: Path, execution: bool = False, tokens: dict[str, TokenSettings] | None = None) -> Settings:
    return Settings.model_validate(
        {
            "roots": [config.parent],
            "config_path": config,
            "execution": {"enabled": execution},
            "auth": AuthSettings(tokens=tokens or {}),
        }
    )


def test_a_refused_reload_is_logged_once_however_many_views_reload_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[execution]\nenabled = true\n", encoding="utf-8")
    rules = HttpReload("0.0.0.0", BearerTokens())
    with caplog.at_level(logging.ERROR, logger="skillshelf.server.http"):
        for _view in range(5):  # one config watcher per view server reads the same edit
            with pytest.raises(ReloadRefused, match="enables skill execution"):
                rules.vet(settings_with(config, execution=True))
    assert len([r for r in caplog.records if "config change ignored" in r.message]) == 1


def test_execution_may_be_enabled_by_a_reload_on_loopback_or_with_tokens(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    HttpReload("127.0.0.1", BearerTokens()).vet(settings_with(config, execution=True))
    alice = {"alice": TokenSettings(sha256=token_digest(ALICE))}
    with_token = HttpReload("0.0.0.0", BearerTokens()).vet(settings_with(config, execution=True, tokens=alice))
    assert "alice" in with_token.auth.tokens  # a token added in the same edit makes it safe


def test_deleting_the_last_token_locks_the_api_instead_of_opening_it(tmp_path: Path) -> None:
    tokens = BearerTokens({"alice": TokenSettings(sha256=token_digest(ALICE))})
    rules = HttpReload("127.0.0.1", tokens)
    rules.vet(settings_with(tmp_path / "config.toml"))
    assert tokens.required and tokens.table.verify(ALICE) is None
    # and with authentication still required, execution beyond loopback is no longer unauthenticated
    HttpReload("0.0.0.0", tokens).vet(settings_with(tmp_path / "config.toml", execution=True))


def test_tokens_from_the_environment_survive_a_reload(tmp_path: Path) -> None:
    env = {"SKILLSHELF_TOKENS": f"ci={CI}"}
    config = tmp_path / "config.toml"
    config.write_text("[execution]\nenabled = false\n", encoding="utf-8")
    tokens = BearerTokens(resolve_settings([tmp_path], env, config).auth.tokens)
    rules = HttpReload("127.0.0.1", tokens)
    fresh = rules.vet(resolve_settings([tmp_path], env, config))  # a reload reads the file and the variables
    assert "ci" in fresh.auth.tokens
    found = tokens.table.verify(CI)
    assert found is not None and found.name == "ci"
