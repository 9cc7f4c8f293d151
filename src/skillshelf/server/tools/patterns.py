"""MCP tools of the patterns module: thin wrappers (validate, call the service, wrap)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

import anyio
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field

from skillshelf.envelope import Envelope
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.skill_library import SkillLibrary
from skillshelf.patterns import service
from skillshelf.patterns.models import (
    BulkLoadResult,
    BulkSearchResult,
    CategoryList,
    CompactSearchResult,
    LoadedSkill,
    SearchQuery,
    SearchResult,
    SkillFile,
    SkillLoad,
    UsageRecorded,
)
from skillshelf.projects import ProjectRoots
from skillshelf.server.tooling import make_tool, respond, respond_fresh

RECORDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
T = TypeVar("T", bound=BaseModel)


async def in_thread(call: Callable[[], T], count: Callable[[T], int | None] | None = None) -> CallToolResult:
    """`respond` in a worker thread: file reads never run on the event loop."""
    return await anyio.to_thread.run_sync(respond, call, count)


def _both(one: str, other: str) -> Callable[[], BaseModel]:
    def fail() -> BaseModel:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"Give either {one} or {other}, not both.")

    return fail


def _missing(one: str, other: str) -> Callable[[], BaseModel]:
    def fail() -> BaseModel:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"Give {one} (one skill) or {other} (1-5 skills).")

    return fail


def one_query(query: str | None, keyword: str | None) -> str:
    """`keyword` is the seed's name for `query`: either one, or both saying the same; never one silently dropped."""
    if query and keyword and query.strip() != keyword.strip():
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"query {query!r} and keyword {keyword!r} differ, and keyword is only query's old name. Pass one of them.",
        )
    return query or keyword or ""


def patterns_tools(library: SkillLibrary, projects: ProjectRoots | None = None) -> list[Tool]:
    async def search_patterns(
        query: Annotated[
            str | None,
            Field(
                description="What you need, in a few words, any order (e.g. 'retry http calls with backoff'). "
                "Empty lists skills by quality.",
                max_length=500,
            ),
        ] = None,
        keyword: Annotated[str | None, Field(description="Alias of query, for seed clients.", max_length=500)] = None,
        category: Annotated[str | None, Field(description="Only this category (see listCategories).")] = None,
        includeExecutable: Annotated[
            bool | None,
            Field(description="true: only skills with runnable code; false: only docs-only skills; omit: both."),
        ] = None,
        minQuality: Annotated[
            float | None, Field(description="Only skills scoring at least this (0-10).", ge=0, le=10)
        ] = None,
        limit: Annotated[
            int, Field(description="Maximum hits (1-50).", ge=1, le=service.MAX_LIMIT)
        ] = service.DEFAULT_LIMIT,
        queries: Annotated[
            list[SearchQuery] | None,
            Field(
                description="Several searches in one call (1-5), each with its own filters; instead of query.",
                min_length=1,
                max_length=service.MAX_BULK,
            ),
        ] = None,
        detail: Annotated[
            bool, Field(description="Long hits: name, category, layout, the full description, every flag.")
        ] = False,
    ) -> Annotated[CallToolResult, Envelope[CompactSearchResult | SearchResult | BulkSearchResult]]:
        """Search the skill library by what you need to do, ranked by relevance, quality breaking ties; queries (1-5) runs several searches in one call. Returns compact hits (id, one-line description, quality, tokens to load, score; executable and verified only when true), about 50 tokens each, or the long form with detail. Call this first, then loadSkill with the best hit's id."""  # noqa: E501
        if queries is not None:
            if query or keyword:
                return respond(_both("query", "queries"))
            return await respond_fresh(
                library,
                lambda: service.search_many(library, queries, detail=detail),
                lambda result: sum(len(item.hits or []) for item in result.results),
            )

        def search() -> CompactSearchResult | SearchResult:
            found = service.search_patterns(
                library,
                one_query(query, keyword),
                category=category,
                include_executable=includeExecutable,
                min_quality=minQuality,
                limit=limit,
            )
            return found if detail else service.compact_result(found)

        return await respond_fresh(library, search, lambda result: len(result.hits))

    async def load_skill(
        skillId: Annotated[
            str | None,
            Field(description="A skill id from searchPatterns, 'category/name'.", min_length=1, max_length=300),
        ] = None,
        skillIds: Annotated[
            list[Annotated[str, Field(min_length=1, max_length=300)]] | None,
            Field(description="Several ids in one call (1-5); instead of skillId.", min_length=1, max_length=5),
        ] = None,
        includeCode: Annotated[bool, Field(description="Also return the implementation or scripts.")] = False,
        includeMetadata: Annotated[
            bool | None,
            Field(
                description="Omit: quality, tags, input schema and files. true: everything (usage, quality reasons, "
                "frontmatter, findings). false: none."
            ),
        ] = None,
        maxTokens: Annotated[
            int | None,
            Field(
                description="Cap the result at about this many tokens: the documentation is cut at a heading or "
                "paragraph (never inside a code block) and continuation.cursor fetches the rest.",
                ge=100,
                le=200_000,
            ),
        ] = None,
        section: Annotated[
            str | None,
            Field(description="Only this section, by heading path ('Usage > Options' or 'Options').", max_length=300),
        ] = None,
        cursor: Annotated[
            str | None, Field(description="continuation.cursor from a previous load of this skill.", max_length=100)
        ] = None,
        detail: Annotated[
            bool, Field(description="Long form: name, category, layout, the documentation as written.")
        ] = False,
    ) -> Annotated[CallToolResult, Envelope[SkillLoad | LoadedSkill | BulkLoadResult]]:
        """Load a skill's documentation by id (or up to 5 with skillIds), read fresh and minified (comments and badges dropped; code blocks and tables untouched), with quality, tags, input schema and readable files in metadata. includeCode adds its implementation or scripts; maxTokens caps the size at a heading or paragraph, and continuation.cursor or section fetches the rest. Unknown ids fail with PATTERN_NOT_FOUND and close matches."""  # noqa: E501
        if skillIds is not None:
            if skillId is not None:
                return respond(_both("skillId", "skillIds"))
            if section is not None or cursor is not None:
                return respond(_both("section or cursor", "skillIds"))
            ids = skillIds
            return await in_thread(
                lambda: service.load_many(
                    library,
                    ids,
                    include_code=includeCode,
                    include_metadata=includeMetadata,
                    detail=detail,
                    max_tokens=maxTokens,
                ),
                lambda result: sum(item.success for item in result.results),
            )
        if skillId is None:
            return respond(_missing("skillId", "skillIds"))
        wanted = skillId
        return await in_thread(
            lambda: service.load_for_agent(
                library,
                wanted,
                include_code=includeCode,
                include_metadata=includeMetadata,
                detail=detail,
                max_tokens=maxTokens,
                section=section,
                cursor=cursor,
            )
        )

    async def read_skill_file(
        skillId: Annotated[str, Field(description="A skill id, 'category/name'.", min_length=1, max_length=300)],
        path: Annotated[
            str,
            Field(
                description="A file of that skill as loadSkill lists it, e.g. 'references/checklist.md'.",
                min_length=1,
                max_length=500,
            ),
        ],
    ) -> Annotated[CallToolResult, Envelope[SkillFile]]:
        """Read one file that belongs to a skill: a reference, script or asset listed in loadSkill's metadata.resources, or a three-file skill's own files. Only that skill's files can be read; anything else fails with the list of its files."""  # noqa: E501
        return await in_thread(lambda: service.read_skill_file(library, skillId, path))

    def track_pattern_usage(
        patternId: Annotated[
            str, Field(description="The skill id you used, 'category/name'.", min_length=1, max_length=300)
        ],
        projectPath: Annotated[
            str | None, Field(description="The project you used it in (name or path).", max_length=1000)
        ] = None,
        note: Annotated[str | None, Field(description="What it was used for (short).", max_length=2000)] = None,
    ) -> Annotated[CallToolResult, Envelope[UsageRecorded]]:
        """Record that you used a skill, optionally from which project and why. Returns the skill's use count and projects; a skill used from three distinct projects becomes verified. Call it after a skill helped, so the library learns what is reused."""  # noqa: E501
        return respond(lambda: service.track_usage(library, projects, patternId, projectPath, note))

    async def list_categories() -> Annotated[CallToolResult, Envelope[CategoryList]]:
        """List the library's categories with skill counts, how many are executable and verified, and mean quality. Use it to see what the library covers or to pick a category filter for searchPatterns."""  # noqa: E501
        return await respond_fresh(
            library, lambda: service.list_categories(library), lambda result: len(result.categories)
        )

    return [
        make_tool(search_patterns, "searchPatterns", "Search skills"),
        make_tool(load_skill, "loadSkill", "Load a skill"),
        make_tool(read_skill_file, "readSkillFile", "Read a skill's file"),
        make_tool(track_pattern_usage, "trackPatternUsage", "Record a skill's use", RECORDS),
        make_tool(list_categories, "listCategories", "List skill categories"),
    ]
