"""Composite tools: one tool of a view made of others, run in parallel or as a chain (docs/deploy.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class CompositeInput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["string", "integer", "number", "boolean", "array", "object"] = "string"
    description: str = ""
    default: Any = None
    required: bool | None = None  # None: required unless a default is given


class CompositeStep(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    tool: str
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="Values; '{inputs.x}' and '{steps.NAME.data...}'"
    )


class ChainStep(CompositeStep):
    name: str


class CompositeTool(BaseModel):
    """One tool made of others: `parallel` steps run at once, or a `chain` runs them in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    inputs: dict[str, CompositeInput] = Field(default_factory=dict)
    parallel: dict[str, CompositeStep] | None = None
    chain: list[ChainStep] | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> CompositeTool:
        if (self.parallel is None) == (self.chain is None):
            raise ValueError("a composite tool has either `parallel` steps or a `chain`, exactly one")
        return self
