"""Views: which tools and which skills one agent sees, and how the tools are presented to it.

A view is a named table in the config file (`[views.NAME]`). Filters are ordered include/exclude
glob rules (mcp-filter semantics): the first rule that matches decides; when none matches, the
item is hidden if any include rule exists, else shown.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from skillshelf.catalogue import AGENT, CURATOR, MEMORY, in_view
from skillshelf.config.composites import CompositeTool
from skillshelf.config.execution_cap import ExecutionCap
from skillshelf.config.hooks import HookSettings
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.access.rules import Rule, check_rules, decide_tool

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
VIEW_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DEFAULT_VIEW = "default"


class FilterRule(BaseModel):
    """One rule: exactly one of `include` or `exclude`, a glob pattern."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    include: str | None = None
    exclude: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> FilterRule:
        if (self.include is None) == (self.exclude is None):
            raise ValueError('a rule is {include = "glob"} or {exclude = "glob"}, exactly one of them')
        return self

    def as_rule(self) -> Rule:
        return ("include", self.include) if self.include is not None else ("exclude", self.exclude or "")


class ToolOverride(BaseModel):
    """How a view presents one tool: a new name, a new description, arguments pinned to a value."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = Field(default=None, description="The name the view exposes instead of the tool's own")
    description: str | None = Field(default=None, description="Replaces the description; {original} inserts it")
    pinned: dict[str, Any] = Field(
        default_factory=dict, description="Arguments fixed to a value and removed from the input schema"
    )

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str | None) -> str | None:
        if value is not None and not TOOL_NAME.match(value):
            raise ValueError(f"{value!r} is not a tool name: use 1-128 letters, digits, '_', '-' or '.'")
        return value


class ViewSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    extends: str | None = Field(
        default=None,
        description="A built-in view (agent, full, memory, curator) whose settings fill every key this one leaves "
        'out: `[views.default] extends = "agent"` adds hooks without widening the agent\'s tools',
    )
    description: str = ""
    exposure: Literal["direct", "search"] = Field(
        default="direct", description="direct: every tool listed; search: three meta-tools find, describe and call them"
    )
    tools: list[FilterRule] = Field(default_factory=list, description="Ordered tool filter (by tool name)")
    skills: list[FilterRule] = Field(default_factory=list, description="Ordered skill filter (by id or selector)")
    overrides: dict[str, ToolOverride] = Field(default_factory=dict, description="By the tool's own name")
    output_schemas: bool = Field(
        default=False, description="Send each tool's output schema in tools/list (clients that validate results)"
    )
    hooks: HookSettings = Field(default_factory=HookSettings)
    composites: dict[str, CompositeTool] = Field(default_factory=dict)
    execution: ExecutionCap | None = Field(
        default=None, description="Caps what a skill run from this view may be granted (network, env, paths, limits)"
    )

    @field_validator("tools")
    @classmethod
    def _tool_rules(cls, rules: list[FilterRule]) -> list[FilterRule]:
        if problems := check_rules([r.as_rule() for r in rules], skills=False):
            raise ValueError("; ".join(problems))
        return rules

    @field_validator("skills")
    @classmethod
    def _skill_rules(cls, rules: list[FilterRule]) -> list[FilterRule]:
        if problems := check_rules([r.as_rule() for r in rules], skills=True):
            raise ValueError("; ".join(problems))
        return rules

    @model_validator(mode="after")
    def _distinct_names(self) -> ViewSettings:
        renamed = [o.name for o in self.overrides.values() if o.name]
        if len(renamed) != len(set(renamed)):
            raise ValueError(f"overrides give two tools the same name: {sorted(renamed)}")
        return self

    def tool_rules(self) -> list[Rule]:
        return [r.as_rule() for r in self.tools]

    def skill_rules(self) -> list[Rule]:
        return [r.as_rule() for r in self.skills]


def _only(*names: str) -> list[FilterRule]:
    return [FilterRule(include=n) for n in names]


# The built-in views' tools, from the catalogue (skillshelf/catalogue.py: a tool names the views that show it).
AGENT_TOOLS = in_view(AGENT, execution_enabled=False)
MEMORY_TOOLS = in_view(MEMORY, execution_enabled=False)
CURATOR_TOOLS = in_view(CURATOR, execution_enabled=False)
AGENT_VIEW = AGENT


def builtin_views(execution_enabled: bool) -> dict[str, ViewSettings]:
    """The views that work with no config. `agent` runs skills only where the user enabled execution."""

    def tools(view: str) -> list[FilterRule]:
        return _only(*in_view(view, execution_enabled=execution_enabled))

    return {
        AGENT_VIEW: ViewSettings(
            description="Find, load and apply skills: the default for an agent", tools=tools(AGENT)
        ),
        "full": ViewSettings(description="Every tool", output_schemas=True),
        MEMORY: ViewSettings(description="Project notes and past sessions", tools=tools(MEMORY)),
        CURATOR: ViewSettings(description="Library health: categories, statistics, reuse", tools=tools(CURATOR)),
    }


def all_views(configured: dict[str, ViewSettings], execution_enabled: bool) -> dict[str, ViewSettings]:
    """Built-in views, then configured ones (a configured view replaces a built-in of the same name, or with
    `extends` fills in from it whatever it leaves out).

    `default` is the configured `[views.default]` when there is one, else the built-in `agent`.
    """
    builtin = builtin_views(execution_enabled)
    views = {**builtin, **{name: _extended(name, view, builtin) for name, view in configured.items()}}
    views.setdefault(DEFAULT_VIEW, views[AGENT_VIEW])
    return views


def _extended(name: str, view: ViewSettings, builtin: dict[str, ViewSettings]) -> ViewSettings:
    """`view` with the keys it does not set taken from the built-in view it extends."""
    if view.extends is None:
        return view
    base = builtin.get(view.extends)
    if base is None:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"views.{name}.extends: {view.extends!r} is not a built-in view; they are {', '.join(sorted(builtin))}",
        )
    inherited = {key: getattr(base, key) for key in type(view).model_fields if key not in view.model_fields_set}
    return view.model_copy(update=inherited)


def widened_default(
    configured: dict[str, ViewSettings], tool_names: list[str], execution_enabled: bool
) -> tuple[int, int] | None:
    """(tools it shows, tools the agent view shows) when a configured `default` view replaces the agent view
    with a wider one (no `extends`, and more tools): a hooks-only `[views.default]` silently gave agents
    every tool. None otherwise."""
    view = configured.get(DEFAULT_VIEW)
    if view is None or view.extends is not None:
        return None
    agent = builtin_views(execution_enabled)[AGENT_VIEW]
    shown = sum(decide_tool(view.tool_rules(), name).kept for name in tool_names)
    agents = sum(decide_tool(agent.tool_rules(), name).kept for name in tool_names)
    return (shown, agents) if shown > agents else None


def resolve_view(name: str | None, configured: dict[str, ViewSettings], execution_enabled: bool) -> ViewSettings:
    views = all_views(configured, execution_enabled)
    wanted = name or DEFAULT_VIEW
    if wanted not in views:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"no view {wanted!r}; views: {', '.join(sorted(views))}")
    return views[wanted]
