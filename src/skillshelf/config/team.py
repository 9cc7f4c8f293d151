"""Serving a team over HTTP: bearer tokens and the views each may use, hooks, composite tools,
and the local call log."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class HookSettings(BaseModel):
    """Dotted paths (`package.module:function`) called before and after each tool call of a view."""

    model_config = ConfigDict(extra="forbid")

    pre_call: str | None = None
    post_call: str | None = None
    timeout_s: float = Field(default=5.0, gt=0, le=60)


class CompositeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["string", "integer", "number", "boolean", "array", "object"] = "string"
    description: str = ""
    default: Any = None
    required: bool | None = None  # None: required unless a default is given


class CompositeStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="Values; '{inputs.x}' and '{steps.NAME.data...}'"
    )


class ChainStep(CompositeStep):
    name: str


class CompositeTool(BaseModel):
    """One tool made of others: `parallel` steps run at once, or a `chain` runs them in order."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    inputs: dict[str, CompositeInput] = Field(default_factory=dict)
    parallel: dict[str, CompositeStep] | None = None
    chain: list[ChainStep] | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> CompositeTool:
        if (self.parallel is None) == (self.chain is None):
            raise ValueError("a composite tool has either `parallel` steps or a `chain`, exactly one")
        return self


class TokenSettings(BaseModel):
    """A bearer token, stored only as the SHA-256 of its text, and the views it may use."""

    model_config = ConfigDict(extra="forbid")

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    views: list[str] = Field(default_factory=lambda: ["default"])


class AuthSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tokens: dict[str, TokenSettings] = Field(default_factory=dict, description="By token name")


class CallLogSettings(BaseModel):
    """The local call log: what was called and how it went, never arguments or contents."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    path: Path | None = None  # default: the user state folder
    max_bytes: int = Field(default=5 * 1024 * 1024, ge=4096)
