"""Views: which tools and which skills one agent sees, and how the tools are presented to it.

A view is a named table in the config file (`[views.NAME]`). Filters are ordered include/exclude
glob rules (mcp-filter semantics): the first rule that matches decides; when none matches, the
item is hidden if any include rule exists, else shown.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skillshelf.config.team import CompositeTool, HookSettings


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


class ToolOverride(BaseModel):
    """How a view presents one tool: a new name, a new description, arguments pinned to a value."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, description="The name the view exposes instead of the tool's own")
    description: str | None = Field(default=None, description="Replaces the description; {original} inserts it")
    pinned: dict[str, Any] = Field(
        default_factory=dict, description="Arguments fixed to a value and removed from the input schema"
    )


class ViewSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = ""
    exposure: Literal["direct", "search"] = "direct"
    tools: list[FilterRule] = Field(default_factory=list, description="Ordered tool filter (by tool name)")
    skills: list[FilterRule] = Field(default_factory=list, description="Ordered skill filter (by id or selector)")
    overrides: dict[str, ToolOverride] = Field(default_factory=dict, description="By the tool's own name")
    hooks: HookSettings = Field(default_factory=HookSettings)
    composites: dict[str, CompositeTool] = Field(default_factory=dict)
