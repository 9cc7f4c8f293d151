"""MCP tools of the metrics module (getCompressionRatio lives with the artifacts it reads)."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult
from pydantic import Field

from skillshelf.envelope import Envelope
from skillshelf.library.skill_library import SkillLibrary
from skillshelf.metrics.library_stats import library_stats
from skillshelf.metrics.models import LibraryStats, ReuseReport
from skillshelf.metrics.reuse import MentionFinder, pattern_reuse
from skillshelf.server.tooling import make_tool, respond_fresh


def metrics_tools(library: SkillLibrary, mentions: MentionFinder | None = None) -> list[Tool]:
    async def get_pattern_reuse(
        patternId: Annotated[
            str | None, Field(description="One skill id; omit for every reused skill.", max_length=300)
        ] = None,
        minReuse: Annotated[int, Field(description="Only skills reused at least this often.", ge=0)] = 0,
        sortBy: Annotated[
            Literal["reuseCount", "recent", "category"], Field(description="Order of the report.")
        ] = "reuseCount",
        limit: Annotated[int, Field(description="Most skills listed (1-500).", ge=1, le=500)] = 50,
    ) -> Annotated[CallToolResult, Envelope[ReuseReport]]:
        """Report how often skills are reused: recorded uses (trackPatternUsage) plus past sessions that mention them. Returns per skill the reuse count, distinct projects, first and last use and whether it is verified."""  # noqa: E501
        return await respond_fresh(
            library,
            lambda: pattern_reuse(library, patternId, minReuse, sortBy, mentions, limit),
            lambda report: len(report.patterns),
        )

    async def get_library_stats() -> Annotated[CallToolResult, Envelope[LibraryStats]]:
        """Summarise the library's health: skills per category and layout, the quality histogram, verified and executable counts, tokens to load, most and never used skills, and findings by severity. Use it to decide what to curate next."""  # noqa: E501
        return await respond_fresh(library, lambda: library_stats(library))

    return [
        make_tool(get_pattern_reuse, "getPatternReuse", "Pattern reuse"),
        make_tool(get_library_stats, "getLibraryStats", "Library health"),
    ]
