"""The local call log's settings (the log itself: server/calllog.py)."""

from __future__ import annotations

from pathlib import Path

import platformdirs
from pydantic import BaseModel, ConfigDict, Field

LOG_NAME = "calls.jsonl"


class CallLogSettings(BaseModel):
    """The local call log: what was called and how it went, never arguments or contents."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    path: Path | None = None  # default: calls.jsonl in the user state folder
    max_bytes: int = Field(
        default=5 * 1024 * 1024,
        ge=4096,
        description="Rotate to calls.jsonl.1 past this size (PostgreSQL: keep about twice this)",
    )


def user_state_dir() -> Path:
    """The platform's folder for local state that is not a cache (the call log lives there; platformdirs:
    $XDG_STATE_HOME on Linux, ~/Library/Application Support on macOS, %LOCALAPPDATA% on Windows)."""
    return platformdirs.user_state_path("skillshelf", appauthor=False)
