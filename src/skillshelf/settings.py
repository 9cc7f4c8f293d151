"""Settings: one model built from command-line flags, then SKILLSHELF_* environment variables,
then an optional TOML config file, then defaults (in that order of precedence).

Roots: `--library PATH` (repeatable) beats `SKILLSHELF_LIBRARY` (os.pathsep-separated), which
beats `library = [...]` in the config file, which beats `~/.shared-patterns`. With nothing
configured and no default library, the bundled example library is served (and the log says so).
"""

from __future__ import annotations

import logging
import os
import sys
import tomllib
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from skillshelf.config.team import AuthSettings, CallLogSettings
from skillshelf.config.views import ViewSettings
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.paths import display_path
from skillshelf.library.reading import DEFAULT_MAX_FILE_BYTES
from skillshelf.library.skill_library import LibraryConfig
from skillshelf.projects import DEFAULT_PROJECTS_ROOT, PROJECTS_ENV, ProjectRoots

logger = logging.getLogger(__name__)

DEFAULT_LIBRARY = Path("~/.shared-patterns")
LIBRARY_ENV = "SKILLSHELF_LIBRARY"
MAX_FILE_ENV = "SKILLSHELF_MAX_FILE_BYTES"
CONFIG_ENV = "SKILLSHELF_CONFIG"
ALLOW_EXEC_ENV = "SKILLSHELF_ALLOW_EXEC"
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})


class ExecutionSettings(BaseModel):
    """executeSkill: off unless enabled; every limit has a safe default."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    allow: list[str] = Field(default_factory=list, description="Skill id patterns (fnmatch); empty: any skill")
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    cpu_s: int = Field(default=30, ge=1, le=3600)
    memory_mb: int = Field(default=1024, ge=32)
    max_processes: int = Field(default=32, ge=1, le=4096)
    max_output_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_stderr_bytes: int = Field(default=64 * 1024, ge=1024)
    env: list[str] = Field(default_factory=list, description="Extra environment variable names passed to skills")
    bubblewrap: bool = Field(default=True, description="Run skills in a bubblewrap sandbox when bwrap works here")
    require_isolation: bool = Field(default=False, description="Refuse to run skills without the sandbox")
    network: list[str] = Field(default_factory=list, description="Skill id patterns that may use the network")


class ConfigFile(BaseModel):
    """The TOML config file; unknown keys are errors so a typo never silently does nothing."""

    model_config = ConfigDict(extra="forbid")

    library: list[Path] | None = None
    projects: list[Path] | None = None
    max_file_bytes: int | None = Field(default=None, ge=1024)
    execution: ExecutionSettings | None = None
    views: dict[str, ViewSettings] = Field(default_factory=dict)
    auth: AuthSettings | None = None
    call_log: CallLogSettings | None = None

    @field_validator("library", "projects", mode="before")
    @classmethod
    def _one_path_or_many(cls, value: object) -> object:
        """`library = "~/skills"` means the same as `library = ["~/skills"]`, as the variables allow."""
        return [value] if isinstance(value, str) else value


class Settings(BaseModel):
    roots: list[Path]
    project_roots: list[Path] = Field(default_factory=lambda: [DEFAULT_PROJECTS_ROOT.expanduser()])
    using_bundled: bool = False
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1024)
    watch: bool = True
    index_dir: Path | None = None
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8765, ge=0, le=65535)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    views: dict[str, ViewSettings] = Field(default_factory=dict)
    auth: AuthSettings = Field(default_factory=AuthSettings)
    call_log: CallLogSettings = Field(default_factory=CallLogSettings)

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


def default_config_path(env: Mapping[str, str]) -> Path:
    if sys.platform == "win32":
        return Path(env.get("APPDATA", Path.home() / "AppData" / "Roaming")) / "skillshelf" / "config.toml"
    return Path(env.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "skillshelf" / "config.toml"


def load_config_file(path: Path | None, env: Mapping[str, str]) -> ConfigFile:
    """The config file named by --config or SKILLSHELF_CONFIG (must exist), else the default (optional)."""
    explicit = path or (Path(env[CONFIG_ENV]) if env.get(CONFIG_ENV, "").strip() else None)
    target = (explicit or default_config_path(env)).expanduser()
    if not target.is_file():
        if explicit is not None:
            raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"config file {display_path(target)} does not exist")
        return ConfigFile()
    try:
        raw = tomllib.loads(target.read_text(encoding="utf-8"))
        return ConfigFile.model_validate(raw)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"{display_path(target)} is not valid TOML: {exc}") from exc
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"{display_path(target)}: {problems}") from exc


def _paths(value: str) -> list[Path]:
    return [Path(p).expanduser() for p in value.split(os.pathsep) if p.strip()]


def resolve_settings(
    cli_roots: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    cli_project_roots: Sequence[Path] = (),
    config_path: Path | None = None,
    execution: Mapping[str, Any] | None = None,
    **overrides: object,
) -> Settings:
    """Flags (arguments here) beat the environment, which beats the config file, which beats defaults."""
    env = os.environ if env is None else env
    config = load_config_file(config_path, env)
    using_bundled = False
    if cli_roots:
        roots = [Path(r).expanduser() for r in cli_roots]
    elif env.get(LIBRARY_ENV, "").strip():
        roots = _paths(env[LIBRARY_ENV])
    elif config.library:
        roots = [p.expanduser() for p in config.library]
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
        values["project_roots"] = _paths(env[PROJECTS_ENV])
    elif config.projects:
        values["project_roots"] = [p.expanduser() for p in config.projects]
    if env.get(MAX_FILE_ENV, "").strip():
        values["max_file_bytes"] = env[MAX_FILE_ENV]
    elif config.max_file_bytes:
        values["max_file_bytes"] = config.max_file_bytes
    exec_values = (config.execution or ExecutionSettings()).model_dump()
    if env.get(ALLOW_EXEC_ENV, "").strip():
        exec_values["enabled"] = env[ALLOW_EXEC_ENV].strip().lower() in TRUE_WORDS
    exec_values.update({k: v for k, v in (execution or {}).items() if v is not None and v != ()})
    values["execution"] = exec_values
    values["views"] = config.views
    values["auth"] = config.auth or AuthSettings()
    values["call_log"] = config.call_log or CallLogSettings()
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Settings.model_validate(values)
