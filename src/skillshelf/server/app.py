"""`build_server(settings)`: the one place an MCP server is assembled. Nothing registers at import."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from starlette.requests import Request
from starlette.responses import JSONResponse

from skillshelf import __version__
from skillshelf.errors import SkillshelfError
from skillshelf.execution.tools import execution_tools
from skillshelf.library.skill_library import SkillLibrary
from skillshelf.memory.tools import memory_tools
from skillshelf.metrics.tools import metrics_tools
from skillshelf.patterns import service
from skillshelf.patterns.tools import patterns_tools
from skillshelf.settings import Settings

logger = logging.getLogger(__name__)

INSTRUCTIONS = """\
skillshelf serves a curated library of reusable skills (how-tos with optional code).
1. searchPatterns with a few words about the task: compact hits, ~100 tokens each.
2. loadSkill with the best hit's id to read its documentation (includeCode=true for its code).
3. Apply it (executeSkill runs its code when the user enabled it); readSkillFile fetches a reference or script.
4. trackPatternUsage when a skill helped. Keep project memory with addNote and getDecisions/getBlockers.
listCategories shows what the library covers; skills are also resources skill://{category}/{name}.
"""


def build_server(settings: Settings, library: SkillLibrary | None = None) -> MCPServer[Any]:
    """A server over `library` (or a new one from `settings`). The caller owns the library's close()."""
    shelf = library or SkillLibrary(settings.library_config())

    @asynccontextmanager
    async def lifespan(_server: MCPServer[Any]) -> AsyncIterator[SkillLibrary]:
        shelf.start()
        try:
            yield shelf
        finally:
            shelf.stop_watching()

    projects = settings.projects()
    server: MCPServer[Any] = MCPServer(
        "skillshelf",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level="WARNING",
        tools=[
            *patterns_tools(shelf, projects),
            *execution_tools(shelf, settings.execution),
            *memory_tools(projects),
            *metrics_tools(shelf),
        ],
    )

    @server.resource(
        "skill://{category}/{name}",
        name="skill",
        title="Skill documentation",
        description="A skill's documentation as markdown; the id is category/name.",
        mime_type="text/markdown",
    )
    def skill_resource(category: str, name: str) -> str:
        try:
            return service.read_documentation(shelf, f"{category}/{name}")
        except SkillshelfError as exc:
            raise ResourceNotFoundError(exc.message) from exc

    @server.custom_route("/health", methods=["GET"])  # type: ignore[untyped-decorator]
    async def health(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "healthy", "version": __version__, "skills": shelf.index.count()})

    return server
