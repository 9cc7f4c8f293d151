"""The memory tool surface is a contract with agents: names, parameters and annotations change only on purpose."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server.lowlevel.server import Server

from skillshelf.projects import ProjectRoots
from skillshelf.server.tools.memory import memory_tools
from tests.conftest import serving

pytestmark = pytest.mark.anyio

CONTRACT = {
    "addNote": ["projectPath", "type", "content", "tags"],
    "getNotes": ["projectPath", "type", "query", "since", "limit"],
    "getDecisions": ["projectPath", "since", "limit"],
    "getHypotheses": ["projectPath", "since", "limit"],
    "getBlockers": ["projectPath", "since", "limit"],
}
REQUIRED = {"addNote": ["projectPath", "type", "content"]} | {
    name: ["projectPath"] for name in CONTRACT if name != "addNote"
}
# (readOnly, destructive, idempotent, openWorld). Reads touch nothing and can be repeated freely.
# addNote appends: not read-only, destroys nothing, and each call adds another note (not idempotent).
ANNOTATIONS = dict.fromkeys(CONTRACT, (True, False, True, False)) | {"addNote": (False, False, False, False)}
NOTE_TYPES = ["decision", "hypothesis", "blocker", "general"]


def enum_of(schema: dict[str, Any]) -> list[str]:
    """The allowed values of a Literal parameter, optional (anyOf with null) or not."""
    options = schema.get("anyOf", [schema])
    return next(o["enum"] for o in options if "enum" in o)


async def test_tools_parameters_and_annotations_are_pinned(roots: ProjectRoots) -> None:
    server: Server[Any] = serving(memory_tools(roots))
    async with Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == set(CONTRACT)
    for name, parameters in CONTRACT.items():
        tool = tools[name]
        assert list(tool.input_schema.get("properties", {})) == parameters, name
        assert tool.input_schema.get("required", []) == REQUIRED[name], name
        hints = tool.annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint) == (
            ANNOTATIONS[name]
        ), name
        assert tool.output_schema is not None and "success" in tool.output_schema["properties"]
        sentences = [s for s in (tool.description or "").split(". ") if s.strip()]
        assert 2 <= len(sentences) <= 3, name
        if "limit" in parameters:
            limit = tool.input_schema["properties"]["limit"]
            assert (limit["default"], limit["minimum"], limit["maximum"]) == (50, 1, 500), name
    assert enum_of(tools["addNote"].input_schema["properties"]["type"]) == NOTE_TYPES
    assert enum_of(tools["getNotes"].input_schema["properties"]["type"]) == NOTE_TYPES
