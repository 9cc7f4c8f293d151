"""Compact hits, minified and paged loads and bulk calls, through a real in-process MCP client."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from skillshelf.library.access.files import SkillFiles
from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.indexing.filecache import FileCache
from skillshelf.library.skill import frontmatter
from skillshelf.server.app import build_server
from skillshelf.settings import Settings
from skillshelf.skills import minify
from skillshelf.skills.models import SkillHit
from skillshelf.skills.service import compact_hit, compact_result, one_line, search_patterns, search_patterns_compact
from skillshelf.tokens import estimate_json_tokens
from tests.conftest import agent_skill, call, three_file

pytestmark = pytest.mark.anyio

LONG_BODY = "\n\n".join(
    [
        "# Deploy guide",
        "<!-- internal: remember to update -->",
        "[![CI](https://img.shields.io/badge/ci-passing-green)](https://ci.example)",
        "Deploy the service to the cluster step by step.",
        *[
            f"## Step {i}\n\nParagraph {i} explains what to run and why it matters for a safe rollout. " * 2
            + f"\n\n```sh\nkubectl apply -f step-{i}.yaml\n\n\n# keep these blank lines {i}   \n```"
            for i in range(1, 13)
        ],
        "## Reference\n\n| flag | meaning |\n|---|---|\n| -f | file |",
    ]
)


@pytest.fixture
async def client(sample_root: Path, tmp_path: Path) -> AsyncIterator[Client]:
    agent_skill(
        sample_root,
        "ops",
        "deploy-guide",
        """
        name: deploy-guide
        description: >-
          Roll a service out to a Kubernetes cluster safely, one verified step at a time,
          with rollback at each stage.
        """,
        LONG_BODY,
    )
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    server = build_server(Settings(roots=[sample_root]), library, view="full")
    try:
        async with Client(server, raise_exceptions=True) as connected:
            yield connected
    finally:
        library.close()


def assert_honest(body: dict[str, Any]) -> None:
    """tokensUsed is what the data sent costs, by the documented estimate."""
    assert body["metadata"]["tokensUsed"] == estimate_json_tokens(body["data"])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Short one.", "Short one."),
        ("word " * 40, ("word " * 18).strip() + "…"),
        (
            "A first sentence that is long enough to stand alone here. Then a second one follows " + "x" * 80,
            "A first sentence that is long enough to stand alone here.",
        ),
        ("multi\n  line\tdescription", "multi line description"),
    ],
)
def test_one_line_cuts_at_a_word_or_sentence(text: str, expected: str) -> None:
    assert one_line(text) == expected and len(one_line(text)) <= 90


def test_a_compact_hit_writes_its_numbers_in_the_fewest_characters() -> None:
    hit = SkillHit(
        id="a/b",
        name="b",
        category="a",
        description="d",
        quality=9.0,
        verified=False,
        executable=False,
        tokens=120,
        layout="agent-skills",
        score=0.5874,
    )
    wire = compact_hit(hit).model_dump(mode="json", by_alias=True, exclude_none=True)
    assert (
        json.dumps(wire, separators=(",", ":"))
        == '{"id":"a/b","description":"d","quality":9,"tokens":120,"score":0.59}'
    )
    whole = compact_hit(hit.model_copy(update={"quality": 8.5, "score": 1.0})).model_dump(mode="json")
    assert (whole["quality"], whole["score"]) == (8.5, 1)


async def test_search_hits_are_compact_and_tokens_used_is_honest(client: Client) -> None:
    _, body = await call(client, "searchPatterns", {"query": "deploy kubernetes cluster"})
    hit = body["data"]["hits"][0]
    assert hit["id"] == "ops/deploy-guide" and "executable" not in hit  # a false flag is left out
    assert set(hit) - {"verified"} == {"id", "description", "quality", "tokens", "score"}
    assert hit["description"].endswith("…") and len(hit["description"]) <= 90
    assert estimate_json_tokens(hit) <= 60
    assert set(body["data"]) == {"hits"}  # the caller knows its query: not echoed by default
    assert_honest(body)
    _, detailed = await call(client, "searchPatterns", {"query": "deploy kubernetes cluster", "detail": True})
    assert detailed["data"]["query"] == "deploy kubernetes cluster"
    assert detailed["data"]["hits"][0]["description"].startswith(hit["description"][:-1])
    assert detailed["data"]["hits"][0]["layout"] == "agent-skills" or "layout" in detailed["data"]["hits"][0]
    assert_honest(detailed)


async def test_a_load_is_minified_and_sends_each_fact_once(client: Client) -> None:
    _, body = await call(client, "loadSkill", {"skillId": "ops/deploy-guide"})
    data = body["data"]
    doc = data["documentation"]
    assert "<!--" not in doc and "shields.io" not in doc and "\n\n\n" not in doc.split("```")[0]
    assert "kubectl apply -f step-1.yaml\n\n\n# keep these blank lines 1   \n```" in doc  # fences untouched
    assert "| flag | meaning |\n|---|---|\n| -f | file |" in doc
    assert "description" not in data  # the agent chose the skill by it: not sent again by default
    assert set(data["metadata"]) <= {"quality", "verified", "tags", "inputSchema", "resources"}
    assert "name" not in data and "category" not in data and "continuation" not in data
    assert_honest(body)
    _, full = await call(client, "loadSkill", {"skillId": "ops/deploy-guide", "includeMetadata": True})
    assert full["data"]["description"].startswith("Roll a service out")  # not in the body, so sent once
    assert "description" not in full["data"]["metadata"]["frontmatter"]
    assert full["data"]["metadata"]["frontmatter"] == {}
    _, raw = await call(client, "loadSkill", {"skillId": "ops/deploy-guide", "detail": True})
    assert "<!--" in raw["data"]["documentation"] and raw["data"]["name"] == "deploy-guide"
    assert raw["data"]["description"].startswith("Roll a service out")


async def test_a_description_already_in_the_documentation_is_not_repeated(client: Client) -> None:
    _, body = await call(client, "loadSkill", {"skillId": "python/slugify", "includeMetadata": True})
    assert "description" not in body["data"]
    assert "Turn any title into a URL slug" in body["data"]["documentation"]


@pytest.mark.parametrize("max_tokens", [200, 250, 400, 700])
async def test_max_tokens_pages_at_block_boundaries_and_the_cursor_fetches_the_rest(
    client: Client, max_tokens: int
) -> None:
    _, whole = await call(client, "loadSkill", {"skillId": "ops/deploy-guide", "includeMetadata": False})
    full_doc = whole["data"]["documentation"]
    parts: list[str] = []
    args: dict[str, Any] = {"skillId": "ops/deploy-guide", "maxTokens": max_tokens}
    for _ in range(100):
        is_error, body = await call(client, "loadSkill", args)
        assert not is_error, body
        assert body["metadata"]["tokensUsed"] <= max_tokens
        assert_honest(body)
        doc = body["data"]["documentation"]
        assert doc.count("```") % 2 == 0  # a fence is never cut
        parts.append(doc)
        more = body["data"].get("continuation")
        if more is None:
            break
        assert more["remainingTokens"] > 0
        assert all(title.startswith(("Step", "Reference")) for title in more["remainingSections"])
        args = {"skillId": "ops/deploy-guide", "cursor": more["cursor"], "maxTokens": max_tokens}
    assert len(parts) > 1 and "".join(parts) == full_doc


async def test_a_section_by_heading_path(client: Client) -> None:
    _, body = await call(client, "loadSkill", {"skillId": "ops/deploy-guide", "section": "step 3"})
    data = body["data"]
    assert data["section"] == "Deploy guide > Step 3"
    assert data["documentation"].startswith("## Step 3") and "## Step 4" not in data["documentation"]
    is_error, missing = await call(client, "loadSkill", {"skillId": "ops/deploy-guide", "section": "Step 99"})
    assert is_error and missing["error"]["code"] == "VALIDATION_ERROR"
    assert "Deploy guide > Step 9" in missing["error"]["message"]


async def test_only_a_cut_or_a_section_parses_the_blocks_and_once_per_version(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Splitting the document into blocks (markdown-it) was most of a first load's work, and only a page
    # cut or a section uses the blocks (issue 36).
    parsed: list[int] = []
    split_blocks = minify.split_blocks

    def counted(doc: str) -> list[minify.Block]:
        parsed.append(len(doc))
        return split_blocks(doc)

    monkeypatch.setattr(minify, "split_blocks", counted)
    is_error, whole = await call(client, "loadSkill", {"skillId": "ops/deploy-guide"})
    assert not is_error and "## Step 12" in whole["data"]["documentation"]
    assert parsed == []
    for args in ({"section": "Step 3"}, {"maxTokens": 400}, {"section": "Step 4"}):
        is_error, body = await call(client, "loadSkill", {"skillId": "ops/deploy-guide", **args})
        assert not is_error, body
    assert len(parsed) == 1  # the blocks of this version of the file, parsed once


async def test_a_repeated_load_looks_its_document_up_once(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each lookup resolves the file's path and stats it; whether the document says the description is kept
    # with the served text, not looked up again beside it (issue 36).
    args = {"skillId": "ops/deploy-guide", "includeMetadata": True}  # the full form: the description looked for
    await call(client, "loadSkill", args)
    kinds: list[str] = []
    get = FileCache.get

    def counted(self: FileCache, path: Path, kind: str, *args: Any) -> Any:
        kinds.append(kind)
        return get(self, path, kind, *args)

    monkeypatch.setattr(FileCache, "get", counted)
    is_error, body = await call(client, "loadSkill", args)
    assert not is_error and "description" in body["data"]
    assert kinds == ["served:min"]


async def test_a_first_load_reads_its_document_where_it_found_it(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Locating a file resolves its path (a realpath) and stats it: what a load serves is derived from the
    # document in its one lookup, not located again to parse it and again to read it (issue 36).
    located: list[str] = []
    locate = SkillFiles._located  # what `locate` and every read of a file call

    def counted(self: SkillFiles, skill: Any, served: str) -> Any:
        located.append(served)
        return locate(self, skill, served)

    monkeypatch.setattr(SkillFiles, "_located", counted)
    is_error, body = await call(client, "loadSkill", {"skillId": "ops/deploy-guide"})
    assert not is_error and body["data"]["documentation"].startswith("# Deploy guide")
    assert located == ["SKILL.md"]


async def test_a_first_load_loads_no_frontmatter_yaml(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    # A load serves the document's body: loading its frontmatter's YAML (the index already holds what it says)
    # was a tenth of a first load's work on a skill with frontmatter (issue 36, H93).
    await call(client, "searchPatterns", {"query": "deploy"})  # the index is built (its YAML loaded) first
    loaded: list[str] = []
    safe_load = frontmatter.safe_load

    def counted(text: str) -> Any:
        loaded.append(text)
        return safe_load(text)

    monkeypatch.setattr(frontmatter, "safe_load", counted)
    is_error, body = await call(client, "loadSkill", {"skillId": "ops/deploy-guide"})
    assert not is_error and body["data"]["documentation"].startswith("# Deploy guide")
    assert loaded == []


async def test_a_load_that_pages_nothing_hashes_nothing(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    # The served text's digest only names a page's version (a cursor, the blocks' cache key): a first load
    # hashed every document it served for nothing (issue 36, H78). A page still gets it.
    await call(client, "searchPatterns", {"query": "deploy"})  # the index is built (and hashed) first
    hashed: list[int] = []
    blake2b = hashlib.blake2b

    def counted(*args: Any, **options: Any) -> Any:
        hashed.append(len(args))
        return blake2b(*args, **options)

    monkeypatch.setattr(hashlib, "blake2b", counted)  # the module the service hashes with
    is_error, body = await call(client, "loadSkill", {"skillId": "ops/deploy-guide"})
    assert not is_error and "continuation" not in body["data"] and hashed == []
    is_error, body = await call(client, "loadSkill", {"skillId": "ops/deploy-guide", "maxTokens": 100})
    assert not is_error and body["data"]["continuation"]["cursor"] and hashed


async def test_a_first_load_reads_the_implementation_where_it_found_it(
    sample_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The derived input schema and the code of a three-file skill parse the file their lookup found too.
    three_file(sample_root, "python", "slugify", "# Slugify\n\nTurn a title into a URL slug.\n", code=SLUGIFY)
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    server = build_server(Settings(roots=[sample_root]), library, view="full")
    located: list[str] = []
    locate = SkillFiles._located  # what `locate` and every read of a file call

    def counted(self: SkillFiles, skill: Any, served: str) -> Any:
        located.append(served)
        return locate(self, skill, served)

    try:
        async with Client(server, raise_exceptions=True) as client:
            monkeypatch.setattr(SkillFiles, "_located", counted)
            is_error, body = await call(client, "loadSkill", {"skillId": "python/slugify", "includeCode": True})
    finally:
        library.close()
    assert not is_error and body["data"]["metadata"]["inputSchema"]["required"] == ["title"]
    assert body["data"]["code"][0]["content"] == SLUGIFY
    assert sorted(located) == ["slugify.md", "slugify.py", "slugify.py"]  # the document's, the code's, the schema's


SLUGIFY = "def slugify(title: str) -> str:\n    return title.lower().replace(' ', '-')\n"


async def test_a_three_file_skill_is_named_once_while_its_files_stay(
    sample_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A three-file skill's served names map to its files by the index's row alone: every lookup of a file built
    # them again, pathlib parsing five paths (a tenth of a repeat load, issue 36, H85). A row naming other files
    # (its code file gone) is named again.
    three_file(sample_root, "python", "slugify", "# Slugify\n\nTurn a title into a URL slug.\n", code=SLUGIFY)
    library = SkillLibrary(LibraryConfig(roots=[sample_root], index_dir=tmp_path / "idx", watch=False))
    server = build_server(Settings(roots=[sample_root]), library, view="full")
    named: list[str | None] = []
    name = SkillFiles._three_file_names

    def counted(root: Path, doc: str, code: str | None, meta: str | None) -> Any:
        named.append(code)
        return name(root, doc, code, meta)

    monkeypatch.setattr(SkillFiles, "_three_file_names", staticmethod(counted))
    arguments = {"skillId": "python/slugify", "includeCode": True}
    try:
        async with Client(server, raise_exceptions=True) as client:
            for _ in range(3):
                is_error, body = await call(client, "loadSkill", arguments)
                assert not is_error and body["data"]["code"][0]["content"] == SLUGIFY
            assert named == ["python/slugify.py"]
            (sample_root / "python" / "slugify.py").unlink()
            library.sync()
            is_error, body = await call(client, "loadSkill", arguments)
    finally:
        library.close()
    assert not is_error and not body["data"].get("code") and named == ["python/slugify.py", None]


async def test_too_small_a_budget_says_what_it_needs(client: Client) -> None:
    is_error, body = await call(
        client, "loadSkill", {"skillId": "database/rls-policy", "maxTokens": 100, "includeCode": True}
    )
    assert is_error and body["error"]["code"] == "VALIDATION_ERROR" and "Raise maxTokens" in body["error"]["message"]


async def test_a_cursor_from_an_older_version_is_refused(client: Client, sample_root: Path) -> None:
    _, body = await call(client, "loadSkill", {"skillId": "ops/deploy-guide", "maxTokens": 200})
    cursor = body["data"]["continuation"]["cursor"]
    doc = sample_root / "ops" / "deploy-guide" / "SKILL.md"
    doc.write_text(doc.read_text(encoding="utf-8") + "\n## New\n\nAdded later.\n", encoding="utf-8")
    is_error, stale = await call(client, "loadSkill", {"skillId": "ops/deploy-guide", "cursor": cursor})
    assert is_error and "changed since" in stale["error"]["message"]
    is_error, bad = await call(client, "loadSkill", {"skillId": "ops/deploy-guide", "cursor": "nonsense"})
    assert is_error and "not one loadSkill gave" in bad["error"]["message"]


async def test_bulk_search_answers_each_query_with_its_own_filters_and_errors(client: Client) -> None:
    queries = [
        {"query": "tenant isolation postgres"},
        {"query": "x", "category": "nope"},
        {"query": "", "includeExecutable": True, "limit": 1},
    ]
    is_error, body = await call(client, "searchPatterns", {"queries": queries})
    assert not is_error and body["success"] is True
    first, second, third = body["data"]["results"]
    assert first["success"] and first["hits"][0]["id"] == "database/rls-policy"
    assert not second["success"] and second["error"]["code"] == "CATEGORY_INVALID" and "hits" not in second
    assert third["success"] and len(third["hits"]) == 1 and third["hits"][0]["executable"] is True
    assert body["metadata"]["resultsCount"] == len(first["hits"]) + 1
    assert_honest(body)


async def test_bulk_load_answers_each_id(client: Client) -> None:
    ids = ["python/slugify", "python/nope", "database/rls-policy"]
    is_error, body = await call(client, "loadSkill", {"skillIds": ids, "maxTokens": 400})
    assert not is_error
    results = body["data"]["results"]
    assert [r["skillId"] for r in results] == ids and [r["success"] for r in results] == [True, False, True]
    assert results[1]["error"]["code"] == "PATTERN_NOT_FOUND"
    assert results[2]["skill"]["documentation"].startswith("# Row Level Security Policy")
    assert all(estimate_json_tokens(r["skill"]) <= 400 for r in results if r["success"])
    assert_honest(body)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"query": "x", "queries": [{"query": "y"}]}, "not both"),
        ({"queries": []}, "queries"),
        ({"queries": [{"query": "q"}] * 6}, "queries"),
        ({"queries": [{"limit": 0}]}, "limit"),
        ({"queries": [{"qury": "misspelt"}]}, "qury"),
    ],
)
async def test_bulk_search_limits(client: Client, arguments: dict[str, Any], message: str) -> None:
    is_error, body = await call(client, "searchPatterns", arguments)
    assert is_error and body["error"]["code"] == "VALIDATION_ERROR" and message in body["error"]["message"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "Give skillId"),
        ({"skillId": "a/b", "skillIds": ["a/b"]}, "not both"),
        ({"skillIds": ["a/b"] * 6}, "skillIds"),
        ({"skillIds": ["a/b"], "section": "x"}, "not both"),
        ({"skillId": "a/b", "maxTokens": 10}, "maxTokens"),
    ],
)
async def test_bulk_load_limits(client: Client, arguments: dict[str, Any], message: str) -> None:
    is_error, body = await call(client, "loadSkill", arguments)
    assert is_error and body["error"]["code"] == "VALIDATION_ERROR" and message in body["error"]["message"]


async def test_a_repeat_load_stats_its_document_once(client: Client, monkeypatch: pytest.MonkeyPatch) -> None:
    # The path rule's stat of the document (a regular file?) is the file cache's signature too: a repeat load
    # stat'ed it twice, once per rule (issue 36, H85). An edit is still seen: the one stat is made each load.
    await call(client, "loadSkill", {"skillId": "ops/deploy-guide"})  # the first load fills the file cache
    statted: list[str] = []
    real_stat = os.stat

    def counted(path: Any, *args: Any, **options: Any) -> Any:
        statted.append(os.fspath(path))
        return real_stat(path, *args, **options)

    monkeypatch.setattr(os, "stat", counted)
    is_error, body = await call(client, "loadSkill", {"skillId": "ops/deploy-guide"})
    monkeypatch.undo()
    assert not is_error and body["data"]["documentation"]
    assert [Path(p).name for p in statted if p.endswith(".md")] == ["SKILL.md"]


async def test_a_repeat_load_serves_a_document_swapped_under_it(
    client: Client, sample_root: Path, tmp_path: Path
) -> None:
    # The one stat a repeat load makes is still the cache's check (no watcher here): a document replaced by
    # another file of the same size and times is served new.
    doc = sample_root / "ops" / "deploy-guide" / "SKILL.md"
    await call(client, "loadSkill", {"skillId": "ops/deploy-guide"})
    before = doc.stat()
    swapped = tmp_path / "swapped.md"
    swapped.write_bytes(doc.read_bytes().replace(b"# Deploy guide", b"# Deploy GUIDE"))
    os.utime(swapped, ns=(before.st_atime_ns, before.st_mtime_ns))
    swapped.replace(doc)
    is_error, body = await call(client, "loadSkill", {"skillId": "ops/deploy-guide"})
    assert not is_error and body["data"]["documentation"].startswith("# Deploy GUIDE")


def test_the_default_answer_is_the_long_answer_made_compact(sample_library: SkillLibrary) -> None:
    """searchPatterns' default answer is built from the skills without the long hits between (issue 36): it must
    be `compact_result` of the long answer, byte for byte, for every query and filter."""
    reader = LibraryReader(sample_library)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("deploy kubernetes", {}),
        ("debug", {"limit": 2}),
        ("", {"limit": 3}),
        ("the", {}),
        ("nothing matches this", {}),
        ("deploy", {"include_executable": True}),
        ("deploy", {"min_quality": 5.0}),
    ]
    for query, options in calls:
        made = search_patterns_compact(reader, query, **options)
        expected = compact_result(search_patterns(reader, query, **options))
        assert made.model_dump_json() == expected.model_dump_json(), query
        assert [h.model_fields_set for h in made.hits] == [h.model_fields_set for h in expected.hits]
