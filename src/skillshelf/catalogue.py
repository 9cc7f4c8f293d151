"""Every tool declared once: its name and what it is (the built-in views that show it, where its arguments can
also be sent, its line in the server's instructions, its CLI twin, whether it reads project roots).

Everything that used to spell a tool's name in its own list derives from `TOOLS`: the names the server
registers (`TOOL_NAMES`), the built-in views' tool filters (config/views.py), the instructions' steps
(server/views.py), the argument places the pipeline reads (server/tooling.py `argument_places`), the CLI's
rewriting of tool names into commands (cli/output.py) and the serve command's project-roots check. The tool
itself (its arguments and what it calls) is its factory in server/tools/; tests/test_second_contact.py checks
the factories register exactly these names, and tests/server/test_docs_catalogue.py checks docs/tools.md and
the README against them. Imports nothing from MCP: the CLI and the config read it without the SDK.
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

AGENT, MEMORY, CURATOR = "agent", "memory", "curator"  # the built-in views that filter (`full` shows every tool)


@dataclass(frozen=True)
class ToolSpec:
    """What one tool is, beside its code.

    - `views`: the built-in views that show it (`full` shows every tool);
    - `aliases`, `items`, `objects`: where its arguments can also be sent (server/tooling.py `Places`);
    - `step`: its line in the instructions, `{toolName}` placeholders for the names a view exposes them under;
      shown when the view offers every tool it names;
    - `cli`: the command a curator types for it, which CLI messages say instead of the tool's name;
    - `projects`: it reads the project roots (notes, sessions);
    - `executes`: it runs skill code: in the agent view only where the user enabled execution.
    """

    name: str
    views: tuple[str, ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    items: Mapping[str, str] = field(default_factory=dict)
    objects: tuple[str, ...] = ()
    step: str = ""
    cli: str = ""
    projects: bool = False
    executes: bool = False

    def step_needs(self) -> tuple[str, ...]:
        """The tools the instructions' step names (its placeholders)."""
        return tuple(name for _, name, _, _ in string.Formatter().parse(self.step) if name)


# In the order of the instructions' steps (the order here is the order an agent reads them).
_DECLARED = (
    ToolSpec(
        "searchPatterns",
        (AGENT, CURATOR),
        aliases={"keyword": "query"},
        objects=("queries",),
        step="{searchPatterns} with a few words about the task: compact hits, ~50 tokens each.",
        cli="`skillshelf search`",
    ),
    ToolSpec(
        "loadSkill",
        (AGENT, CURATOR),
        items={"skillIds": "skillId"},
        step="{loadSkill} with the best hit's id to read its documentation (includeCode=true for its code).",
        cli="`skillshelf show`",
    ),
    ToolSpec("readSkillFile", (AGENT,), step="{readSkillFile} fetches a file a skill lists (a reference or script)."),
    ToolSpec(
        "executeSkill",
        (AGENT,),
        step="{executeSkill} runs a skill's code (dryRun first to check the input).",
        cli="`skillshelf run`",
        executes=True,
    ),
    ToolSpec("trackPatternUsage", (AGENT,), step="{trackPatternUsage} when a skill helped."),
    ToolSpec(
        "addNote",
        (MEMORY,),
        step="Keep project memory with {addNote}; read it back with the get* note tools.",
        projects=True,
    ),
    ToolSpec("getNotes", (MEMORY,), cli="`skillshelf notes`", projects=True),
    ToolSpec("getDecisions", (MEMORY,), projects=True),
    ToolSpec("getHypotheses", (MEMORY,), projects=True),
    ToolSpec("getBlockers", (MEMORY,), projects=True),
    ToolSpec(
        "searchArtifacts",
        (MEMORY,),
        step="{searchArtifacts} and {loadSession} recall what past sessions did.",
        cli="`skillshelf sessions`",
        projects=True,
    ),
    ToolSpec("loadSession", (MEMORY,), projects=True),
    ToolSpec("getSessionCode", (MEMORY,), projects=True),
    ToolSpec(
        "listCategories",
        (CURATOR,),
        step="{listCategories} shows what the library covers.",
        cli="`skillshelf categories`",
    ),
    ToolSpec(
        "getLibraryStats",
        (CURATOR,),
        step="{getLibraryStats} and the other metrics tools report the library's health.",
        cli="`skillshelf stats`",
    ),
    ToolSpec("getPatternReuse", (CURATOR,), cli="`skillshelf usage`"),
    ToolSpec("getCompressionRatio", (CURATOR,), projects=True),
)

TOOLS: Mapping[str, ToolSpec] = MappingProxyType({spec.name: spec for spec in _DECLARED})
TOOL_NAMES: tuple[str, ...] = tuple(TOOLS)


def in_view(view: str, *, execution_enabled: bool) -> tuple[str, ...]:
    """The tools a built-in view shows, in declaration order."""
    return tuple(s.name for s in _DECLARED if view in s.views and (execution_enabled or not s.executes))


def cli_twins() -> dict[str, str]:
    """Tool name -> the CLI command that does the same, for the tools that have one."""
    return {spec.name: spec.cli for spec in _DECLARED if spec.cli}


def project_tools() -> tuple[str, ...]:
    """The tools that read the project roots (notes, sessions)."""
    return tuple(spec.name for spec in _DECLARED if spec.projects)
