"""The tool surface is a contract with agents: names, parameters and annotations change only on purpose."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.settings import Settings

pytestmark = pytest.mark.anyio

CONTRACT = {
    "searchPatterns": ["query", "keyword", "category", "includeExecutable", "minQuality", "limit", "queries", "detail"],
    "loadSkill": [
        "skillId",
        "skillIds",
        "includeCode",
        "includeMetadata",
        "maxTokens",
        "section",
        "cursor",
        "detail",
    ],
    "readSkillFile": ["skillId", "path"],
    "trackPatternUsage": ["patternId", "projectPath", "note"],
    "listCategories": [],
    "executeSkill": ["skillId", "input", "script", "args", "dryRun", "timeoutS"],
    "searchArtifacts": ["query", "project", "since", "until", "limit"],
    "loadSession": ["project", "sessionId", "sections"],
    "getSessionCode": ["project", "sessionId", "language"],
    "getCompressionRatio": ["project", "sessionId"],
    "addNote": ["projectPath", "type", "content", "tags"],
    "getNotes": ["projectPath", "type", "query", "since", "limit"],
    "getDecisions": ["projectPath", "since", "limit"],
    "getHypotheses": ["projectPath", "since", "limit"],
    "getBlockers": ["projectPath", "since", "limit"],
    "getPatternReuse": ["patternId", "minReuse", "sortBy", "limit"],
    "getLibraryStats": [],
}
# (readOnly, destructive, idempotent, openWorld). Reads touch nothing and can be repeated freely.
# trackPatternUsage appends an event: not read-only, not destructive, and each call counts again.
ANNOTATIONS = dict.fromkeys(CONTRACT, (True, False, True, False)) | {
    "trackPatternUsage": (False, False, False, False),
    "addNote": (False, False, False, False),  # appends a note; repeating it appends another
    # executeSkill runs arbitrary skill code: it may change things and reach the network (without the
    # sandbox, or where the configuration allows it).
    "executeSkill": (False, True, False, True),
}


async def test_tools_parameters_and_annotations_are_pinned(sample_root: Path, tmp_path: Path) -> None:
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    try:
        async with Client(build_server(Settings(roots=[sample_root]), library, view="full")) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert client.instructions is not None and "searchPatterns" in client.instructions
    finally:
        library.close()
    assert set(tools) == set(CONTRACT)
    for name, parameters in CONTRACT.items():
        tool = tools[name]
        assert list(tool.input_schema.get("properties", {})) == parameters, name
        hints = tool.annotations
        assert hints is not None
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint, hints.open_world_hint) == (
            ANNOTATIONS[name]
        ), name
        assert tool.output_schema is not None and "success" in tool.output_schema["properties"]
        sentences = [s for s in (tool.description or "").split(". ") if s.strip()]
        assert 2 <= len(sentences) <= 3, name
    assert "required" not in tools["loadSkill"].input_schema  # skillId or skillIds, checked by the tool
    assert tools["readSkillFile"].input_schema["required"] == ["skillId", "path"]
