"""A bug in one tool never takes the session down: the call answers INTERNAL_ERROR (no traceback
text sent to the agent) and the same session keeps answering every tool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.settings import Settings
from skillshelf.skills import service
from tests.conftest import call

pytestmark = pytest.mark.anyio


class Bug(RuntimeError):
    pass


def explode(*_args: object, **_kwargs: object) -> None:
    raise Bug("secret internal detail /etc/shadow")


# searchPatterns answers compactly by default (`search_patterns_compact`), with `detail` by `search_patterns`
@pytest.mark.parametrize("broken", ["search_patterns_compact", "search_patterns", "load_for_agent", "list_categories"])
async def test_a_crashing_service_is_an_internal_error_and_the_session_goes_on(
    broken: str, sample_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    arguments: dict[str, tuple[str, dict[str, Any]]] = {
        "search_patterns_compact": ("searchPatterns", {"query": "slugify"}),
        "search_patterns": ("searchPatterns", {"query": "slugify", "detail": True}),
        "load_for_agent": ("loadSkill", {"skillId": "python/slugify"}),
        "list_categories": ("listCategories", {}),
    }
    try:
        async with Client(build_server(Settings(roots=[sample_root]), library, view="full")) as client:
            monkeypatch.setattr(service, broken, explode)  # fault injection: a bug in the service
            tool, args = arguments[broken]
            is_error, envelope = await call(client, tool, args)
            assert is_error
            assert envelope["success"] is False
            assert envelope["error"]["code"] == "INTERNAL_ERROR"
            assert "shadow" not in str(envelope)  # internals stay in the log, not in the answer
            assert "tool crashed" in caplog.text
            monkeypatch.undo()
            for tool, args in arguments.values():  # the same session still answers everything
                is_error, envelope = await call(client, tool, args)
                assert not is_error, (tool, envelope)
            assert (await client.list_tools()).tools
    finally:
        library.close()
