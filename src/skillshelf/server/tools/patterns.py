"""MCP tools of the patterns module: thin wrappers (validate, call the service, wrap)."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from skillshelf.envelope import Envelope
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.skill_library import SkillLibrary
from skillshelf.patterns import service
from skillshelf.patterns.models import CategoryList, LoadedSkill, SearchResult, SkillFile, UsageRecorded
from skillshelf.projects import ProjectRoots
from skillshelf.server.tooling import make_tool, respond, respond_fresh

RECORDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)


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
    ) -> Annotated[CallToolResult, Envelope[SearchResult]]:
        """Search the skill library by what you need to do, ranked by relevance, quality breaking ties. Returns compact hits (id, name, category, one-line description, quality, executable, tokens to load), about 100 tokens each. Call this first, then loadSkill with the best hit's id."""  # noqa: E501
        return await respond_fresh(
            library,
            lambda: service.search_patterns(
                library,
                one_query(query, keyword),
                category=category,
                include_executable=includeExecutable,
                min_quality=minQuality,
                limit=limit,
            ),
            lambda result: len(result.hits),
        )

    async def load_skill(
        skillId: Annotated[
            str, Field(description="A skill id from searchPatterns, 'category/name'.", min_length=1, max_length=300)
        ],
        includeCode: Annotated[bool, Field(description="Also return the implementation or scripts.")] = False,
        includeMetadata: Annotated[bool, Field(description="Return quality, tags, input schema, findings.")] = True,
    ) -> Annotated[CallToolResult, Envelope[LoadedSkill]]:
        """Load one skill's documentation by id, read fresh from the library. Set includeCode to also get its implementation (three-file skills) or scripts (Agent Skills folders); metadata carries quality, tags and the input schema. Unknown ids fail with PATTERN_NOT_FOUND and close matches."""  # noqa: E501
        return await respond_fresh(
            library,
            lambda: service.load_skill(library, skillId, include_code=includeCode, include_metadata=includeMetadata),
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
        return await respond_fresh(library, lambda: service.read_skill_file(library, skillId, path))

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
