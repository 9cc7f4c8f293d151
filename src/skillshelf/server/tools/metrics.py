"""MCP tools of the metrics module: compression of sessions, reuse of skills, library health."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult
from pydantic import Field

from skillshelf.artifacts.archive import SessionArchive
from skillshelf.envelope import Envelope
from skillshelf.library.access.reader import SkillReader
from skillshelf.metrics import compression
from skillshelf.metrics.compression import CompressionReport
from skillshelf.metrics.library_stats import library_stats
from skillshelf.metrics.models import LibraryStats, ReuseReport
from skillshelf.metrics.reuse import MentionFinder, pattern_reuse
from skillshelf.server.tooling import make_tool, run_work
from skillshelf.server.tools.artifacts import PROJECT, SESSION_ID


def metrics_tools(library: SkillReader, archive: SessionArchive) -> list[Tool]:
    mentions: MentionFinder = archive.sessions_mentioning

    async def get_compression_ratio(
        project: Annotated[str, Field(description=PROJECT, min_length=1, max_length=1000)],
        sessionId: Annotated[
            str | None, Field(description=SESSION_ID + " Omit for every session of the project.", max_length=200)
        ] = None,
    ) -> Annotated[CallToolResult, Envelope[CompressionReport]]:
        """Report how much sessions compressed their context: per session the original and compressed tokens, the ratio (compressed/original, lower is better) and tokens saved. The aggregate gives the mean ratio, total tokens saved and the best and worst sessions."""  # noqa: E501
        return await run_work(
            lambda: compression.compression_report(archive.projects, project, sessionId, archive.max_file_bytes),
            lambda result: len(result.sessions),
        )

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
        return await run_work(
            lambda: pattern_reuse(library, patternId, minReuse, sortBy, mentions, limit),
            lambda report: len(report.patterns),
            waits_on=library,
        )

    async def get_library_stats() -> Annotated[CallToolResult, Envelope[LibraryStats]]:
        """Summarise the library's health: skills per category and layout, the quality histogram, verified and executable counts, tokens to load, most and never used skills, and findings by severity. Use it to decide what to curate next."""  # noqa: E501
        return await run_work(lambda: library_stats(library), waits_on=library)

    return [
        make_tool(get_compression_ratio, "getCompressionRatio", "Session compression ratios"),
        make_tool(get_pattern_reuse, "getPatternReuse", "Pattern reuse"),
        make_tool(get_library_stats, "getLibraryStats", "Library health"),
    ]
