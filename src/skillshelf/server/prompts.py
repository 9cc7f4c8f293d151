"""Prompts a user can pick in a client: they start the workflows the tools serve.

Each is the SDK's `Prompt`, built from a function (its arguments from the signature, checked when it is
rendered), served from this module's table on a view's low-level server (server/sdk.py) as MCPServer
serves its own: prompts/list and prompts/get are answered even by a view that shows no prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any

import pydantic_core
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.prompts.base import UserMessage
from pydantic import Field

FIND_TOOLS = ("searchPatterns", "loadSkill", "readSkillFile", "trackPatternUsage")
RECORD_TOOLS = ("getDecisions", "addNote")


def register_prompts(server: Server[Any], names: Mapping[str, str] | None = None) -> None:
    """The prompts whose tools the view shows; `names` maps a tool's own name to the name it is shown
    under (None: every tool, under its own name)."""
    shown = {n: n for n in (*FIND_TOOLS, *RECORD_TOOLS)} if names is None else dict(names)
    table = PromptTable()
    if all(t in shown for t in FIND_TOOLS):
        table.add(_find_skill(shown), name="find-skill", title="Find a skill for this task")
    if all(t in shown for t in RECORD_TOOLS):
        table.add(_record_decisions(shown), name="record-decisions", title="Record what this session decided")
    server.add_request_handler("prompts/list", types.PaginatedRequestParams, table.list_prompts)
    server.add_request_handler("prompts/get", types.GetPromptRequestParams, table.get_prompt)


class PromptTable:
    """prompts/list and prompts/get over the SDK's `Prompt`s, answered as MCPServer answers them."""

    def __init__(self) -> None:
        self.prompts: dict[str, Prompt] = {}

    def add(self, fn: Callable[..., Any], *, name: str, title: str) -> None:
        self.prompts[name] = Prompt.from_function(fn, name=name, title=title)

    async def list_prompts(
        self, _ctx: ServerRequestContext[Any, Any], _params: types.PaginatedRequestParams
    ) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[_wire(p) for p in self.prompts.values()])

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        """Raises ValueError for an unknown prompt or missing arguments, as MCPServer does (the SDK's runner
        answers it as an internal error)."""
        prompt = self.prompts.get(params.name)
        if prompt is None:
            raise ValueError(f"Unknown prompt: {params.name}")
        rendered = await prompt.render(params.arguments, Context(request_context=ctx))
        if isinstance(rendered, types.InputRequiredResult):
            return rendered
        return types.GetPromptResult(
            description=prompt.description, messages=pydantic_core.to_jsonable_python(rendered)
        )


def _wire(prompt: Prompt) -> types.Prompt:
    arguments = [
        types.PromptArgument(name=a.name, description=a.description, required=a.required)
        for a in prompt.arguments or []
    ]
    return types.Prompt(
        name=prompt.name, title=prompt.title, description=prompt.description, arguments=arguments, icons=prompt.icons
    )


def _find_skill(n: Mapping[str, str]) -> Callable[..., list[UserMessage]]:
    def find_skill(
        task: Annotated[str, Field(description="The task, in a sentence: what you are about to do.")],
    ) -> list[UserMessage]:
        """Search the skill library for the task, load the best skill and apply it."""
        return [
            UserMessage(
                f"Find a skill in the skillshelf library for this task: {task}\n\n"
                f"1. Call {n['searchPatterns']} with a few words about the task.\n"
                "2. Pick the hit whose description fits best (quality breaks ties); if none fits, say so and stop.\n"
                f"3. Call {n['loadSkill']} with its id and follow its documentation; {n['readSkillFile']} fetches "
                "the files it mentions.\n"
                f"4. When the skill helped, call {n['trackPatternUsage']} with its id and this project."
            )
        ]

    return find_skill


def _record_decisions(n: Mapping[str, str]) -> Callable[..., list[UserMessage]]:
    def record_decisions(
        projectPath: Annotated[str, Field(description="The project's folder (or its name under the projects root).")],
    ) -> list[UserMessage]:
        """Save this session's decisions, open hypotheses and blockers as the project's notes."""
        return [
            UserMessage(
                f"Record what this session decided for the project {projectPath}.\n\n"
                f"Call {n['getDecisions']} first so you do not repeat a note. Then call {n['addNote']} once per "
                "item, with "
                f"projectPath={projectPath!r}:\n"
                "- type 'decision' for each choice made and why, in one or two sentences;\n"
                "- type 'hypothesis' for each assumption still to be checked;\n"
                "- type 'blocker' for each thing that stops progress, with what would unblock it.\n"
                "Add tags naming the area (e.g. 'auth', 'schema'). Report the notes you stored."
            )
        ]

    return record_decisions
