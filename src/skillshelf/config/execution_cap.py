"""A view's cap on what a skill's run may be granted (`[views.NAME.execution]`).

Each key narrows what the `[execution]` settings allow for the skills this view runs; a key left out
caps nothing. A skill whose policy asks for more than its view allows is refused before it runs
(execution/policy.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from skillshelf.library.skill.policy import ENV_NAME


def absolute_folders(paths: list[Path] | None) -> list[Path] | None:
    """Read-path folders are absolute: a relative one would mean whatever the server's working directory is."""
    for path in paths or []:
        if not path.is_absolute():
            raise ValueError(f"{str(path)!r} is not an absolute path; write the full path, e.g. /srv/data")
    return paths


def variable_names(names: list[str] | None) -> list[str] | None:
    for name in names or []:
        if not ENV_NAME.match(name):
            raise ValueError(f"{name!r} is not an environment variable name (letters, digits and '_')")
    return names


class ExecutionCap(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    network: Literal["none", "any"] | None = Field(
        default=None, description='"none": no skill run from this view has the network, whatever execution.network says'
    )
    env: list[str] | None = Field(
        default=None, description="The only variable names (of execution.env) a run from this view may receive"
    )
    read_paths: list[Path] | None = Field(
        default=None, description="The only folders (of execution.read_paths) a run from this view may read"
    )
    timeout_s: float | None = Field(default=None, gt=0, description="At most this long, below execution.timeout_s")
    memory_mb: int | None = Field(default=None, ge=32, description="At most this much memory per process")

    @field_validator("read_paths")
    @classmethod
    def _absolute(cls, paths: list[Path] | None) -> list[Path] | None:
        return absolute_folders(paths)

    @field_validator("env")
    @classmethod
    def _names(cls, names: list[str] | None) -> list[str] | None:
        return variable_names(names)
