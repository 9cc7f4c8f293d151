"""MCP tools of the memory module: thin wrappers (validate, call the service, wrap)."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Literal

from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from skillshelf.envelope import Envelope
from skillshelf.memory import service
from skillshelf.memory.models import NoteAdded, NoteList
from skillshelf.memory.notes import FileNotes, NotesStore
from skillshelf.projects import ProjectRoots
from skillshelf.server.tooling import make_tool, run_work

# Appends a note: not read-only, destroys nothing, and each call adds another note.
APPENDS = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)

NoteType = Literal["decision", "hypothesis", "blocker", "general"]
ProjectPath = Annotated[
    str,
    Field(
        description="The project: its folder name under the project roots (e.g. 'my-app') or its path.",
        min_length=1,
        max_length=1000,
    ),
]
Since = Annotated[
    str | None,
    Field(
        description="Only notes at or after this ISO 8601 date or date-time (e.g. '2025-11-05', "
        "'2025-11-05T14:30:00Z'; no zone means UTC).",
        max_length=40,
    ),
]
Limit = Annotated[
    int, Field(description=f"Maximum notes to return (1-{service.MAX_LIMIT}).", ge=1, le=service.MAX_LIMIT)
]


def _count(result: NoteList) -> int:
    return len(result.notes)


def memory_tools(projects: ProjectRoots, notes: NotesStore | None = None) -> list[Tool]:
    store = notes or FileNotes()
    read = partial(service.get_notes, projects, notes=store)

    async def add_note(
        projectPath: ProjectPath,
        type: Annotated[
            NoteType,
            Field(
                description="decision (a choice made and why), hypothesis (a belief to verify), "
                "blocker (what stops progress), or general."
            ),
        ],
        content: Annotated[str, Field(description="The note, in plain words; at most 16 KiB (UTF-8).", min_length=1)],
        tags: Annotated[
            list[str] | None,
            Field(
                description=f"Short labels to find it by (at most {service.MAX_TAGS}, {service.MAX_TAG_CHARS} "
                "characters each)."
            ),
        ] = None,
    ) -> Annotated[CallToolResult, Envelope[NoteAdded]]:
        """Add a note (decision, hypothesis, blocker or general) to a project's running memory, stored in <project>/.agent-memory/session-notes.jsonl. Returns the stored note with its id and timestamp. Record decisions with their reasons as you make them, so later sessions need not rediscover them."""  # noqa: E501
        return await run_work(lambda: service.add_note(projects, projectPath, type, content, tags, store))

    async def get_notes(
        projectPath: ProjectPath,
        type: Annotated[NoteType | None, Field(description="Only notes of this type; omit for all.")] = None,
        query: Annotated[
            str | None,
            Field(
                description="Words that must all appear in the content or tags (any case, any order).", max_length=500
            ),
        ] = None,
        since: Since = None,
        limit: Limit = service.DEFAULT_LIMIT,
    ) -> Annotated[CallToolResult, Envelope[NoteList]]:
        """Read a project's notes, newest first, optionally filtered by type, words and time. Returns each note's id, type, content, tags and timestamp, the total matching before the limit, and skippedLines (unreadable lines left in the file)."""  # noqa: E501
        return await run_work(
            lambda: read(projectPath, note_type=type, query=query, since=since, limit=limit),
            _count,
        )

    async def get_decisions(
        projectPath: ProjectPath, since: Since = None, limit: Limit = service.DEFAULT_LIMIT
    ) -> Annotated[CallToolResult, Envelope[NoteList]]:
        """List the decisions recorded for a project, newest first. Returns each note's id, content, tags and timestamp, and the total before the limit. Read them at the start of a session before changing direction."""  # noqa: E501
        return await run_work(
            lambda: read(projectPath, note_type="decision", since=since, limit=limit),
            _count,
        )

    async def get_hypotheses(
        projectPath: ProjectPath, since: Since = None, limit: Limit = service.DEFAULT_LIMIT
    ) -> Annotated[CallToolResult, Envelope[NoteList]]:
        """List the hypotheses recorded for a project (beliefs still to verify), newest first. Returns each note's id, content, tags and timestamp, and the total before the limit."""  # noqa: E501
        return await run_work(
            lambda: read(projectPath, note_type="hypothesis", since=since, limit=limit),
            _count,
        )

    async def get_blockers(
        projectPath: ProjectPath, since: Since = None, limit: Limit = service.DEFAULT_LIMIT
    ) -> Annotated[CallToolResult, Envelope[NoteList]]:
        """List the blockers recorded for a project, newest first. Returns each note's id, content, tags and timestamp, and the total before the limit."""  # noqa: E501
        return await run_work(
            lambda: read(projectPath, note_type="blocker", since=since, limit=limit),
            _count,
        )

    return [
        make_tool(add_note, "addNote", "Add a project note", APPENDS),
        make_tool(get_notes, "getNotes", "Read project notes"),
        make_tool(get_decisions, "getDecisions", "List project decisions"),
        make_tool(get_hypotheses, "getHypotheses", "List project hypotheses"),
        make_tool(get_blockers, "getBlockers", "List project blockers"),
    ]
