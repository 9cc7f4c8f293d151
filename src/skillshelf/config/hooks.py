"""A view's hooks: functions called before and after each of its tool calls (docs/deploy.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class HookSettings(BaseModel):
    """Dotted paths (`package.module:function`) called before and after each tool call of a view."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    pre_call: str | None = None
    post_call: str | None = None
    timeout_s: float = Field(default=5.0, gt=0, le=60)
