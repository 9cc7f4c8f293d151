"""Settings: one model, built from command-line flags, then SKILLSHELF_* environment variables.

Roots: `--library PATH` (repeatable) beats `SKILLSHELF_LIBRARY` (os.pathsep-separated), which
beats `~/.shared-patterns`. With nothing configured and no default library, the bundled example
library is served (and the log says so).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, Field

from skillshelf.library.reading import DEFAULT_MAX_FILE_BYTES
from skillshelf.library.skill_library import LibraryConfig
from skillshelf.projects import DEFAULT_PROJECTS_ROOT, PROJECTS_ENV, ProjectRoots

logger = logging.getLogger(__name__)

DEFAULT_LIBRARY = Path("~/.shared-patterns")
LIBRARY_ENV = "SKILLSHELF_LIBRARY"
MAX_FILE_ENV = "SKILLSHELF_MAX_FILE_BYTES"


class Settings(BaseModel):
    roots: list[Path]
    project_roots: list[Path] = Field(default_factory=lambda: [DEFAULT_PROJECTS_ROOT.expanduser()])
    using_bundled: bool = False
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1024)
    watch: bool = True
    index_dir: Path | None = None
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8765, ge=0, le=65535)

    def projects(self) -> ProjectRoots:
        return ProjectRoots.of(self.project_roots)

    def library_config(self) -> LibraryConfig:
        bundled = bundled_library_path()
        return LibraryConfig(
            roots=self.roots,
            max_file_bytes=self.max_file_bytes,
            index_dir=self.index_dir,
            read_only_roots=frozenset({bundled.resolve()}) if bundled else frozenset(),
            watch=self.watch,
        )


def bundled_library_path() -> Path | None:
    """The example library: packaged in the wheel, or `patterns/` of a source checkout."""
    packaged = Path(str(resources.files("skillshelf"))) / "_bundled_patterns"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "patterns"
    return checkout if checkout.is_dir() else None


def resolve_settings(
    cli_roots: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    cli_project_roots: Sequence[Path] = (),
    **overrides: object,
) -> Settings:
    env = os.environ if env is None else env
    using_bundled = False
    if cli_roots:
        roots = [Path(r).expanduser() for r in cli_roots]
    elif env.get(LIBRARY_ENV, "").strip():
        roots = [Path(p).expanduser() for p in env[LIBRARY_ENV].split(os.pathsep) if p.strip()]
    elif DEFAULT_LIBRARY.expanduser().is_dir():
        roots = [DEFAULT_LIBRARY.expanduser()]
    else:
        bundled = bundled_library_path()
        roots = [bundled] if bundled else []
        using_bundled = True
    values: dict[str, object] = {"roots": roots, "using_bundled": using_bundled}
    if cli_project_roots:
        values["project_roots"] = [Path(p).expanduser() for p in cli_project_roots]
    elif env.get(PROJECTS_ENV, "").strip():
        values["project_roots"] = [Path(p).expanduser() for p in env[PROJECTS_ENV].split(os.pathsep) if p.strip()]
    if env.get(MAX_FILE_ENV, "").strip():
        values["max_file_bytes"] = env[MAX_FILE_ENV]
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Settings.model_validate(values)
