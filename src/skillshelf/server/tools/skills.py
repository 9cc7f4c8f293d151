"""MCP tools of the skill service (skills/): thin wrappers (validate, call the service, wrap)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from skillshelf.envelope import Envelope
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.access.reader import SkillReader
from skillshelf.projects import ProjectRoots
from skillshelf.server.tooling import describe_validation_error, make_tool, respond, run_work
from skillshelf.skills import service
from skillshelf.skills.models import (
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
    lean,
)

ToolFunction = Callable[..., Awaitable[CallToolResult]]
RECORDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
T = TypeVar("T", bound=BaseModel)


def _both(one: str, other: str) -> Callable[[], BaseModel]:
    def fail() -> BaseModel:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"Give either {one} or {other}, not both.")

    return fail


def _invalid(where: str, exc: ValidationError) -> Callable[[], BaseModel]:
    def fail() -> BaseModel:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"{where}: " + describe_validation_error(exc))

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


def skills_tools(library: SkillReader, projects: ProjectRoots | None = None) -> list[Tool]:
    """The patterns module's tools over a view's reader (one factory per tool)."""
    return [
        untitled(make_tool(_search_patterns(library), "searchPatterns", "Search skills")),
        untitled(make_tool(_load_skill(library), "loadSkill", "Load a skill")),
        untitled(make_tool(_read_skill_file(library), "readSkillFile", "Read a skill's file")),
        untitled(
            make_tool(_track_pattern_usage(library, projects), "trackPatternUsage", "Record a skill's use", RECORDS)
        ),
        untitled(make_tool(_list_categories(library), "listCategories", "List skill categories")),
    ]


def _search_patterns(library: SkillReader) -> ToolFunction:
    async def search_patterns(
        query: Annotated[
            str | None,
            Field(
                json_schema_extra=lean,
                description="What you need, in a few words, any order (e.g. 'retry http calls with backoff'). "
                "Empty lists skills by quality.",
                max_length=500,
            ),
        ] = None,
        keyword: Annotated[
            str | None, Field(json_schema_extra=lean, description="Alias of query, for seed clients.", max_length=500)
        ] = None,
        category: Annotated[
            str | None, Field(json_schema_extra=lean, description="Only this category (an id's part before the /).")
        ] = None,
        includeExecutable: Annotated[
            bool | None,
            Field(
                json_schema_extra=lean,
                description="true: only runnable skills; false: only docs; omit: both.",
            ),
        ] = None,
        minQuality: Annotated[
            float | None,
            Field(json_schema_extra=lean, description="Only skills scoring at least this (0-10).", ge=0, le=10),
        ] = None,
        limit: Annotated[
            int, Field(json_schema_extra=lean, description="Maximum hits (1-50).", ge=1, le=service.MAX_LIMIT)
        ] = service.DEFAULT_LIMIT,
        queries: Annotated[
            list[dict[str, Any]] | None,
            Field(
                json_schema_extra=lean,
                description="1-5 searches at once instead of query, each {query, category, includeExecutable, "
                "minQuality, limit}.",
                min_length=1,
                max_length=service.MAX_BULK,
            ),
        ] = None,
        detail: Annotated[
            bool, Field(json_schema_extra=lean, description="Long hits (name, category, layout).")
        ] = False,
    ) -> Annotated[CallToolResult, Envelope[CompactSearchResult | SearchResult | BulkSearchResult]]:
        """Search the skill library by what you need to do, ranked by relevance, quality breaking ties; queries runs up to 5 searches at once. Returns compact hits (id, one-line description, quality, tokens to load, score), ~50 tokens each; detail gives the long form. Call this first, then loadSkill with the best hit's id."""  # noqa: E501
        if queries is not None:
            if query or keyword:
                return respond(_both("query", "queries"))
            try:
                parsed = [SearchQuery.model_validate(q) for q in queries]
            except ValidationError as exc:
                return respond(_invalid("queries", exc))
            return await run_work(
                lambda: service.search_many(library, parsed, detail=detail),
                lambda result: sum(len(item.hits or []) for item in result.results),
                waits_on=library,
            )

        def search() -> CompactSearchResult | SearchResult:
            answer = service.search_patterns if detail else service.search_patterns_compact
            return answer(
                library,
                one_query(query, keyword),
                category=category,
                include_executable=includeExecutable,
                min_quality=minQuality,
                limit=limit,
            )

        return await run_work(search, lambda result: len(result.hits), waits_on=library)

    return search_patterns


def _load_skill(library: SkillReader) -> ToolFunction:
    async def load_skill(
        skillId: Annotated[
            str | None,
            Field(
                json_schema_extra=lean,
                description="A skill id from searchPatterns, 'category/name'.",
                min_length=1,
                max_length=300,
            ),
        ] = None,
        skillIds: Annotated[
            list[str] | None,
            Field(
                json_schema_extra=lean,
                description="1-5 ids, instead of skillId.",
                min_length=1,
                max_length=5,
            ),
        ] = None,
        includeCode: Annotated[
            bool, Field(json_schema_extra=lean, description="Also return the implementation or scripts.")
        ] = False,
        includeMetadata: Annotated[
            bool | None,
            Field(
                json_schema_extra=lean,
                description="Omit: brief. true: all (usage, frontmatter, findings). false: none.",
            ),
        ] = None,
        maxTokens: Annotated[
            int | None,
            Field(
                json_schema_extra=lean,
                description="Cap the result's tokens; continuation.cursor gets the rest.",
                ge=100,
                le=200_000,
            ),
        ] = None,
        section: Annotated[
            str | None,
            Field(
                json_schema_extra=lean, description="One section by heading, e.g. 'Usage > Options'.", max_length=300
            ),
        ] = None,
        cursor: Annotated[
            str | None,
            Field(json_schema_extra=lean, description="continuation.cursor of a previous load.", max_length=100),
        ] = None,
        detail: Annotated[
            bool, Field(json_schema_extra=lean, description="Long form, documentation as written.")
        ] = False,
    ) -> Annotated[CallToolResult, Envelope[SkillLoad | LoadedSkill | BulkLoadResult]]:
        """Load a skill's minified documentation by id (skillIds: up to 5), with quality, tags, input schema and files in metadata. includeCode adds its code; maxTokens caps the size, and continuation.cursor or section fetches the rest. Unknown ids fail with PATTERN_NOT_FOUND and close matches."""  # noqa: E501
        if skillIds is not None:
            if skillId is not None:
                return respond(_both("skillId", "skillIds"))
            if section is not None or cursor is not None:
                return respond(_both("section or cursor", "skillIds"))
            ids = skillIds
            return await run_work(
                lambda: service.load_many(
                    library,
                    ids,
                    include_code=includeCode,
                    include_metadata=includeMetadata,
                    detail=detail,
                    max_tokens=maxTokens,
                ),
                lambda result: sum(item.success for item in result.results),
                waits_on=library,
            )
        if skillId is None:
            return respond(_missing("skillId", "skillIds"))
        wanted = skillId
        return await run_work(
            lambda: service.load_for_agent(
                library,
                wanted,
                include_code=includeCode,
                include_metadata=includeMetadata,
                detail=detail,
                max_tokens=maxTokens,
                section=section,
                cursor=cursor,
            ),
            waits_on=library,
        )

    return load_skill


def _read_skill_file(library: SkillReader) -> ToolFunction:
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
        return await run_work(lambda: service.read_skill_file(library, skillId, path), waits_on=library)

    return read_skill_file


def _track_pattern_usage(library: SkillReader, projects: ProjectRoots | None) -> ToolFunction:
    async def track_pattern_usage(
        patternId: Annotated[
            str, Field(description="The skill id you used, 'category/name'.", min_length=1, max_length=300)
        ],
        projectPath: Annotated[
            str | None, Field(description="The project you used it in (name or path).", max_length=1000)
        ] = None,
        note: Annotated[str | None, Field(description="What it was used for (short).", max_length=2000)] = None,
    ) -> Annotated[CallToolResult, Envelope[UsageRecorded]]:
        """Record that you used a skill, optionally from which project and why. Returns the skill's use count and projects; a skill used from three distinct projects becomes verified. Call it after a skill helped, so the library learns what is reused."""  # noqa: E501
        return await run_work(lambda: service.track_usage(library, projects, patternId, projectPath, note))

    return track_pattern_usage


def _list_categories(library: SkillReader) -> ToolFunction:
    async def list_categories() -> Annotated[CallToolResult, Envelope[CategoryList]]:
        """List the library's categories with skill counts, how many are executable and verified, and mean quality. Use it to see what the library covers or to pick a category filter for searchPatterns."""  # noqa: E501
        return await run_work(
            lambda: service.list_categories(library), lambda result: len(result.categories), waits_on=library
        )

    return list_categories


def untitled(tool: Tool) -> Tool:
    """The listed input schema without pydantic's generated titles ("Skillid"): every session pays for them.

    Only the listing changes; arguments are still validated by the function's own model.
    """
    tool.parameters.pop("title", None)
    for schema in tool.parameters.get("properties", {}).values():
        schema.pop("title", None)
    return tool
