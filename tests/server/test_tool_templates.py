"""Tools built again for another server reuse what the SDK derived from the signature, never another server's state."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Annotated, Any

import pytest
from mcp import Client
from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel

from skillshelf.envelope import Envelope
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server import tooling
from skillshelf.server.app import build_server
from skillshelf.server.tools.skills import untitled
from skillshelf.settings import Settings
from tests.conftest import call, write

pytestmark = pytest.mark.anyio


def _answering(value: str) -> Any:
    async def answer(word: str = "x") -> str:
        """Say the value."""
        return f"{value}:{word}"

    return answer


def test_a_function_made_again_gets_its_own_fn_and_schema_and_shares_the_derived_model() -> None:
    first = tooling.make_tool(_answering("one"), "answerWord", "Answer a word")
    second = tooling.make_tool(_answering("two"), "answerWord", "Answer a word")

    assert first.fn is not second.fn
    assert first.fn_metadata is second.fn_metadata  # derived once
    assert first.parameters == second.parameters and first.parameters is not second.parameters
    untitled(first)  # a caller edits its tool's schema in place
    assert "title" not in first.parameters["properties"]["word"]
    assert second.parameters["properties"]["word"]["title"] == "Word"


def test_other_words_or_defaults_build_another_tool() -> None:
    plain = tooling.make_tool(_answering("one"), "answerWord", "Answer a word")
    retitled = tooling.make_tool(_answering("one"), "answerWord", "Another title")

    def with_default(limit: int = 5) -> int:
        return limit

    def with_other_default(limit: int = 9) -> int:
        return limit

    with_other_default.__code__ = with_default.__code__  # the same code, another default
    five = tooling.make_tool(with_default, "limitTool", "Limit")
    nine = tooling.make_tool(with_other_default, "limitTool", "Limit")

    # a composite tool's signature is set by hand on functions of one code (server/composite.py)
    signed = []
    for argument in ("topic", "project"):
        composite = _answering("one")
        composite.__signature__ = inspect.Signature(
            [inspect.Parameter(argument, inspect.Parameter.KEYWORD_ONLY, annotation=str)]
        )
        composite.__annotations__ = {argument: str}
        signed.append(tooling.make_tool(composite, "composite", "Composite"))

    assert retitled.title == "Another title" and plain.title == "Answer a word"
    assert [list(tool.parameters["properties"]) for tool in signed] == [["topic"], ["project"]]
    assert five.parameters["properties"]["limit"]["default"] == 5
    assert nine.parameters["properties"]["limit"]["default"] == 9


async def test_two_servers_in_one_process_each_answer_from_their_own_library(sample_root: Path, tmp_path: Path) -> None:
    other_root = tmp_path / "other"
    write(
        other_root / "zebra-herding" / "SKILL.md",
        "---\nname: zebra-herding\ndescription: Herd zebras across a river when the herd is nervous.\n---\n# Zebras\n",
    )
    libraries = [
        SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / f"idx{n}", watch=False))
        for n, root in enumerate((sample_root, other_root))
    ]
    try:
        servers = [build_server(Settings(roots=[lib.roots[0]]), lib, view="full") for lib in libraries]
        found = []
        for server in servers:
            async with Client(server, raise_exceptions=True) as client:
                _, envelope = await call(client, "searchPatterns", {"query": "herd zebras across a river"})
                found.append([hit["id"] for hit in envelope["data"]["hits"]])
        assert not any(hit.endswith("zebra-herding") for hit in found[0])
        assert found[1][:1] == ["general/zebra-herding"]
    finally:
        for lib in libraries:
            lib.close()


class _Answer(BaseModel):
    word: str


def _enveloped() -> Any:
    async def answer() -> Annotated[CallToolResult, Envelope[_Answer]]:
        """Answer with structured content that is not the declared envelope (no `data.word`)."""
        return CallToolResult(content=[TextContent(type="text", text="{}")], structured_content={"odd": 1})

    return answer


def _modelled() -> Any:
    async def answer() -> _Answer:
        """Answer a model, which the SDK turns into structured content through the output model."""
        return _Answer(word="hi")

    return answer


async def test_a_tool_answering_envelopes_publishes_its_output_schema_and_is_not_validated_again() -> None:
    """An envelope is built from the tool's own models (`to_call_result`): the SDK checking it against the
    output model again cost every call 13-22 us (issue 36). The schema is still published; clients check it."""
    enveloped = tooling.make_tool(_enveloped(), "enveloped", "Enveloped")
    modelled = tooling.make_tool(_modelled(), "modelled", "Modelled")

    assert enveloped.output_schema is not None and "data" in enveloped.output_schema["properties"]
    answered = await enveloped.run({}, Context(), convert_result=True)  # validated before: a ToolError
    assert answered.structured_content == {"odd": 1}
    converted = await modelled.run({}, Context(), convert_result=True)  # a model still goes through its model
    assert converted.structured_content == {"word": "hi"}
