"""The artifacts tool surface is a contract with agents: names, parameters and annotations change only on purpose."""

from __future__ import annotations

import pytest
from mcp import Client

from skillshelf.artifacts.archive import SessionArchive
from skillshelf.server.tools.artifacts import artifacts_tools
from tests.conftest import serving

pytestmark = pytest.mark.anyio

CONTRACT = {
    "searchArtifacts": ["query", "project", "since", "until", "limit"],
    "loadSession": ["project", "sessionId", "sections"],
    "getSessionCode": ["project", "sessionId", "language"],
}
REQUIRED = {
    "searchArtifacts": ["query"],
    "loadSession": ["project", "sessionId"],
    "getSessionCode": ["project", "sessionId"],
}


async def test_tools_parameters_and_annotations_are_pinned(archive: SessionArchive) -> None:
    async with Client(serving(artifacts_tools(archive))) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(CONTRACT)
    for name, parameters in CONTRACT.items():
        tool = tools[name]
        assert list(tool.input_schema.get("properties", {})) == parameters, name
        assert tool.input_schema.get("required", []) == REQUIRED[name], name
        # Every artifacts tool only reads session files: safe to repeat, touches nothing outside the projects.
        annotations = tool.annotations
        assert annotations is not None
        assert (annotations.read_only_hint, annotations.destructive_hint) == (True, False)
        assert (annotations.idempotent_hint, annotations.open_world_hint) == (True, False)
        assert tool.output_schema is not None and "success" in tool.output_schema["properties"]
        sentences = [s for s in (tool.description or "").split(". ") if s.strip()]
        assert 2 <= len(sentences) <= 3, name
    sections = tools["loadSession"].input_schema["properties"]["sections"]
    assert "nextSteps" in str(sections)
