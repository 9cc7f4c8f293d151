"""MCP tools of the artifacts module: thin wrappers (validate, call the service, wrap)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, TypeVar

from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from skillshelf.artifacts import service
from skillshelf.artifacts.archive import SessionArchive
from skillshelf.artifacts.models import ArtifactSearchResult, LoadedSession, SectionName, SessionCode
from skillshelf.envelope import Envelope
from skillshelf.server.tooling import make_tool, run_work

T = TypeVar("T", bound=BaseModel)

PROJECT = "A project under the project roots: its folder name (e.g. 'my-app') or its path."
SESSION_ID = "A session id from searchArtifacts, e.g. '2025-11-05-auth-flow'."


def artifacts_tools(archive: SessionArchive) -> list[Tool]:
    async def search_artifacts(
        query: Annotated[
            str,
            Field(
                description="What you are looking for in past sessions, in a few words, any order "
                "(e.g. 'jwt refresh token rotation'). Empty lists sessions newest first.",
                max_length=500,
            ),
        ],
        project: Annotated[
            str | None, Field(description=PROJECT + " Omit to search every project.", max_length=1000)
        ] = None,
        since: Annotated[dt.date | None, Field(description="Only sessions on or after this date (YYYY-MM-DD).")] = None,
        until: Annotated[
            dt.date | None, Field(description="Only sessions on or before this date (YYYY-MM-DD).")
        ] = None,
        limit: Annotated[
            int, Field(description="Maximum hits (1-50).", ge=1, le=service.MAX_LIMIT)
        ] = service.DEFAULT_LIMIT,
    ) -> Annotated[CallToolResult, Envelope[ArtifactSearchResult]]:
        """Search past sessions' artifacts (summaries, decisions, finalization packs) across projects, ranked by relevance with newer sessions first among equals. Returns compact hits (project, sessionId, date, title, one-line summary, score, tokens to load). Call this before solving something that may have been solved before, then loadSession with the best hit."""  # noqa: E501
        return await run_work(
            lambda: service.search_artifacts(archive, query, project=project, since=since, until=until, limit=limit),
            lambda result: len(result.hits),
            waits_on=archive,
        )

    async def load_session(
        project: Annotated[str, Field(description=PROJECT, min_length=1, max_length=1000)],
        sessionId: Annotated[str, Field(description=SESSION_ID, min_length=1, max_length=200)],
        sections: Annotated[
            list[SectionName] | None,
            Field(description="Only these parts (summary, decisions, implementations, challenges, nextSteps, code)."),
        ] = None,
    ) -> Annotated[CallToolResult, Envelope[LoadedSession]]:
        """Load one past session, read fresh from its artifacts: summary, decisions, implementations, challenges, next steps and code blocks. Pass sections to get only some of them and save tokens. Unknown sessions fail with SESSION_NOT_FOUND and close matches."""  # noqa: E501
        return await run_work(
            lambda: service.load_session(archive.projects, project, sessionId, sections, archive.max_file_bytes)
        )

    async def get_session_code(
        project: Annotated[str, Field(description=PROJECT, min_length=1, max_length=1000)],
        sessionId: Annotated[str, Field(description=SESSION_ID, min_length=1, max_length=200)],
        language: Annotated[
            str | None, Field(description="Only code in this language (e.g. 'python', 'ts').", max_length=50)
        ] = None,
    ) -> Annotated[CallToolResult, Envelope[SessionCode]]:
        """Get only the code blocks of a past session, each with its language, file name and the section it came from. Filter by language to fetch just the part you will reuse."""  # noqa: E501
        return await run_work(
            lambda: service.get_session_code(archive.projects, project, sessionId, language, archive.max_file_bytes),
            lambda result: len(result.blocks),
        )

    return [
        make_tool(search_artifacts, "searchArtifacts", "Search past sessions"),
        make_tool(load_session, "loadSession", "Load a past session"),
        make_tool(get_session_code, "getSessionCode", "Get a session's code"),
    ]
