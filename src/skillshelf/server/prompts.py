"""Prompts a user can pick in a client: they start the workflows the tools serve."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from pydantic import Field

FIND_TOOLS = ("searchPatterns", "loadSkill", "readSkillFile", "trackPatternUsage")
RECORD_TOOLS = ("getDecisions", "addNote")


def register_prompts(server: MCPServer[Any], names: Mapping[str, str] | None = None) -> None:
    """The prompts whose tools the view shows; `names` maps a tool's own name to the name it is shown
    under (None: every tool, under its own name)."""
    shown = {n: n for n in (*FIND_TOOLS, *RECORD_TOOLS)} if names is None else dict(names)
    if all(t in shown for t in FIND_TOOLS):
        _find_skill(server, shown)
    if all(t in shown for t in RECORD_TOOLS):
        _record_decisions(server, shown)


def _find_skill(server: MCPServer[Any], n: Mapping[str, str]) -> None:
    @server.prompt(name="find-skill", title="Find a skill for this task")
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


def _record_decisions(server: MCPServer[Any], n: Mapping[str, str]) -> None:
    @server.prompt(name="record-decisions", title="Record what this session decided")
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
