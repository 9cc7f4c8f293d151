"""The executeSkill tool: a thin wrapper; progress notifications go to the caller while a skill runs."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from skillshelf.config.execution_cap import ExecutionCap
from skillshelf.envelope import Envelope
from skillshelf.execution import service
from skillshelf.execution.models import DryRunResult, ExecutionResult
from skillshelf.library.access.reader import SkillReader
from skillshelf.server.tooling import make_tool, respond, respond_async
from skillshelf.settings import ExecutionSettings

# Running code can do anything the skill does: not read-only, possibly destructive, not idempotent,
# and it may reach the network (without bubblewrap, or where the configuration allows; docs/security.md).
RUNS_CODE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)


def execution_tools(library: SkillReader, settings: ExecutionSettings, cap: ExecutionCap | None = None) -> list[Tool]:
    """executeSkill over the view's reader; `cap` is the view's cap on what a run may be granted."""

    async def execute_skill(
        skillId: Annotated[str, Field(description="The skill to run, 'category/name'.", min_length=1, max_length=300)],
        ctx: Context[Any, Any],
        input: Annotated[
            dict[str, Any], Field(description="JSON input; must match the skill's inputSchema from loadSkill.")
        ] = {},  # noqa: B006 - pydantic copies defaults
        script: Annotated[
            str | None, Field(description="For Agent Skills with several scripts: e.g. 'scripts/check.py'.")
        ] = None,
        args: Annotated[
            list[str] | None,
            Field(
                description="Command-line arguments for an Agent Skills script (not for three-file skills).",
                max_length=64,
            ),
        ] = None,
        dryRun: Annotated[bool, Field(description="Only validate the input and show what would run.")] = False,
        timeoutS: Annotated[
            float | None, Field(description="Wall-clock limit in seconds (capped by the configured maximum).", gt=0)
        ] = None,
    ) -> Annotated[CallToolResult, Envelope[ExecutionResult | DryRunResult]]:
        """Run a skill's implementation or script in a separate, resource-limited process with JSON input, and return its output, exit status and duration. Use dryRun first to validate input against the skill's schema; execution must be enabled by the user (EXECUTION_DISABLED otherwise)."""  # noqa: E501
        if dryRun:  # it may wait for the first index and probes bubblewrap: never on the event loop
            return await service.off_loop(
                lambda: respond(lambda: service.dry_run(library, settings, skillId, input, script, timeoutS, args, cap))
            )

        async def progress(elapsed: float, total: float) -> None:
            await ctx.report_progress(elapsed, total, message=f"{skillId} running for {elapsed:g} s")

        return await respond_async(
            lambda: service.execute_skill(library, settings, skillId, input, script, timeoutS, progress, args, cap=cap)
        )

    return [make_tool(execute_skill, "executeSkill", "Run a skill", RUNS_CODE)]
