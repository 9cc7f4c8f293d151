"""Editing the config file changes a running server's view: list_changed is sent, bad edits are ignored."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, types

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.settings import resolve_settings
from tests.conftest import deadline, wait_until_async, write

pytestmark = pytest.mark.anyio

ONLY_SEARCH = '[views.default]\ntools = [{include = "searchPatterns"}]\n'
HIDE_PYTHON = '[views.default]\nskills = [{exclude = "python/*"}]\ntools = [{include = "search*"}]\n'
SEARCH_AND_LOAD = '[views.default]\ntools = [{include = "searchPatterns"}, {include = "loadSkill"}]\n'


def replace_file(path: Path, text: str) -> None:
    """As an editor saves: a new file renamed over the old one."""
    fresh = path.with_suffix(".new")
    fresh.write_text(text, encoding="utf-8")
    fresh.replace(path)


async def test_editing_the_config_sends_tools_list_changed_from_a_real_server(
    sample_root: Path, isolated_environment: Path, tmp_path: Path
) -> None:
    config = write(tmp_path / "config.toml", ONLY_SEARCH)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    env = {**os.environ, "HOME": str(isolated_environment), "SKILLSHELF_CACHE_DIR": str(isolated_environment / "c")}
    args = ["-m", "skillshelf", "--config", str(config), "serve", "--library", str(sample_root)]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["searchPatterns"]
        replace_file(config, SEARCH_AND_LOAD)
        with anyio.fail_after(deadline()):
            await changed.wait()
        assert sorted(t.name for t in (await client.list_tools()).tools) == ["loadSkill", "searchPatterns"]
        loaded = await client.call_tool("loadSkill", {"skillId": "python/slugify"})
        assert not loaded.is_error


async def test_an_invalid_edit_keeps_the_last_good_config_and_says_why(
    sample_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = write(tmp_path / "config.toml", ONLY_SEARCH)
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))

    def reload() -> Any:
        return resolve_settings([sample_root], env={}, config_path=config)

    settings = reload()
    server = build_server(settings, library, view="default", reload=reload)
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    try:
        async with Client(server, mode="legacy", message_handler=on_message, raise_exceptions=True) as client:
            await client.list_tools()
            replace_file(config, '[views.default]\ntools = [{include = "[broken"}]\n')
            await wait_until_async(lambda: "config change ignored" in caplog.text, "the invalid edit was not logged")
            assert [t.name for t in (await client.list_tools()).tools] == ["searchPatterns"]
            assert not changed.is_set()
            replace_file(config, HIDE_PYTHON)
            with anyio.fail_after(deadline()):
                await changed.wait()
            found = await client.call_tool("searchPatterns", {"query": "slugify"})
            assert found.structured_content is not None
            hits = [h["id"] for h in found.structured_content["data"]["hits"]]
            assert not [h for h in hits if h.startswith("python/")]
    finally:
        library.close()


async def test_an_edit_to_a_setting_read_at_start_says_a_restart_is_needed_and_notes_stay_put(
    sample_root: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The stores and the approval gate are made at start: a reload that changes `database_url` (or
    require_verified) is not applied, and one log line says a restart is; notes still land where they did."""
    project = tmp_path / "app"
    project.mkdir()
    config = write(tmp_path / "config.toml", f"projects = [{str(tmp_path)!r}]\n")
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))

    def reload() -> Any:
        return resolve_settings([sample_root], env={}, config_path=config)

    server = build_server(reload(), library, view="full", reload=reload)
    note = {"projectPath": "app", "type": "decision", "content": "{}"}
    try:
        async with Client(server, mode="legacy", raise_exceptions=True) as client:
            assert not (await client.call_tool("addNote", {**note, "content": "before the edit"})).is_error
            moved = 'database_url = "postgresql://skillshelf:secret@127.0.0.1:9/elsewhere"\nrequire_verified = true\n'
            replace_file(config, config.read_text(encoding="utf-8") + moved)
            await wait_until_async(lambda: "not applied" in caplog.text, "the restart was not asked for")
            assert "database_url, require_verified" in caplog.text and "restart" in caplog.text
            assert "secret" not in caplog.text
            assert not (await client.call_tool("addNote", {**note, "content": "after the edit"})).is_error
            got = await client.call_tool("getNotes", {"projectPath": "app"})
            assert got.structured_content is not None
            assert {"before the edit", "after the edit"} <= {
                n["content"] for n in got.structured_content["data"]["notes"]
            }
    finally:
        library.close()
    assert "after the edit" in (project / ".agent-memory" / "session-notes.jsonl").read_text(encoding="utf-8")
