"""docs/tools.md is the catalogue users read: every registered tool and each of its parameters is in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp import Client

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.settings import ExecutionSettings, Settings

pytestmark = pytest.mark.anyio

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tools.md"


def sections(text: str) -> dict[str, str]:
    """Each `## heading` with the text under it."""
    parts = re.split(r"^## (.+)$", text, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


async def test_every_tool_and_parameter_is_documented(sample_root: Path, tmp_path: Path) -> None:
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    settings = Settings(roots=[sample_root], execution=ExecutionSettings(enabled=True))
    try:
        async with Client(build_server(settings, library, view="full")) as client:
            tools = (await client.list_tools()).tools
    finally:
        library.close()
    docs = sections(DOCS.read_text(encoding="utf-8"))
    missing = []
    for tool in tools:
        # The tool's own section: a heading naming it (a heading may group several tools).
        homes = [body for heading, body in docs.items() if re.search(rf"\b{tool.name}\b", heading)]
        if not homes:
            missing.append(f"{tool.name}: no '## ...{tool.name}...' section")
            continue
        missing.extend(
            f"{tool.name}.{parameter}"
            for parameter in tool.input_schema.get("properties", {})
            if not any(f"`{parameter}`" in body or f"`{parameter}?`" in body for body in homes)
        )
    assert missing == [], f"document these in docs/tools.md: {missing}"
