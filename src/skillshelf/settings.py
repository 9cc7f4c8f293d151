"""Settings: command-line flags, then SKILLSHELF_* environment variables, then the TOML config file,
then defaults (in that order of precedence), merged and validated by pydantic-settings.

Every key of the file (`ConfigFile`) is also a variable: `SKILLSHELF_` plus the key, nested keys
joined by `__` (`SKILLSHELF_EXECUTION__TIMEOUT_S`). `${VAR}` in the file's strings expands from the
environment. The file is `--config`, else `SKILLSHELF_CONFIG`, else the user config folder's
`config.toml` (platformdirs). Roots: `--library PATH` (repeatable) beats `SKILLSHELF_LIBRARY`
(os.pathsep-separated), which beats `library` in the file, which beats `~/.shared-patterns`. With
nothing configured and no default library, the bundled example library is served (and the log says so).
"""

from __future__ import annotations

import logging
import os
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    InitSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings.sources.utils import parse_env_vars

from skillshelf.config.team import AuthSettings, CallLogSettings
from skillshelf.config.views import DEFAULT_VIEW, VIEW_NAME, ViewSettings
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.index.library import LibraryConfig
from skillshelf.library.skill.paths import display_path
from skillshelf.library.skill.reading import DEFAULT_MAX_FILE_BYTES
from skillshelf.projects import DEFAULT_PROJECTS_ROOT, ProjectRoots

logger = logging.getLogger(__name__)

DEFAULT_LIBRARY = Path("~/.shared-patterns")
LIBRARY_ENV = "SKILLSHELF_LIBRARY"
MAX_FILE_ENV = "SKILLSHELF_MAX_FILE_BYTES"
CONFIG_ENV = "SKILLSHELF_CONFIG"
ALLOW_EXEC_ENV = "SKILLSHELF_ALLOW_EXEC"
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
ENV_PREFIX = "SKILLSHELF_"
APP = "skillshelf"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class ExecutionSettings(BaseModel):
    """executeSkill: off unless enabled; every limit has a safe default."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = False
    allow: list[str] = Field(default_factory=list, description="Skill id patterns (fnmatch); empty: any skill")
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    cpu_s: int = Field(default=30, ge=1, le=3600)
    memory_mb: int = Field(default=1024, ge=32)
    run_memory_mb: int = Field(
        default=2048, ge=32, description="Memory of a whole run: every process and its tmpfs (a memory cgroup)"
    )
    work_dir_mb: int = Field(default=512, ge=1, description="Total size of a run's working directory")
    tmp_mb: int = Field(default=64, ge=1, description="Size of the sandbox's /tmp (a tmpfs, held in memory)")
    max_processes: int = Field(default=32, ge=1, le=4096)
    max_output_bytes: int = Field(default=1024 * 1024, ge=1024)
    max_stderr_bytes: int = Field(default=64 * 1024, ge=1024)
    env: list[str] = Field(default_factory=list, description="Extra environment variable names passed to skills")
    bubblewrap: bool = Field(default=True, description="Run skills in a bubblewrap sandbox when bwrap works here")
    require_isolation: bool = Field(default=False, description="Refuse to run skills without the sandbox")
    network: list[str] = Field(default_factory=list, description="Skill id patterns that may use the network")


class ConfigFile(BaseSettings):
    """Every setting a user sets: a key in the TOML file, a `SKILLSHELF_` variable (nested keys joined
    by `__`, e.g. `SKILLSHELF_EXECUTION__TIMEOUT_S`), and for most a `serve` flag.

    Unknown keys are errors, so a typo never silently does nothing. `library` and `projects` take a
    list of paths or one string of paths separated by os.pathsep (`:`; `;` on Windows).
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid", validate_default=False
    )

    library: Annotated[list[Path] | None, NoDecode] = Field(default=None, description="Library roots, first wins")
    projects: Annotated[list[Path] | None, NoDecode] = Field(default=None, description="Project roots")
    max_file_bytes: int | None = Field(default=None, ge=1024, description="Largest file read, in bytes")
    semantic_model: Path | None = Field(
        default=None,
        description="A sentence-transformers BERT model folder (e.g. all-MiniLM-L6-v2): search by meaning too",
    )
    view: str = Field(default=DEFAULT_VIEW, description="The view `skillshelf serve` serves")
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    views: dict[str, ViewSettings] = Field(default_factory=dict, description="Named views ([views.NAME])")
    auth: AuthSettings = Field(default_factory=AuthSettings)
    call_log: CallLogSettings = Field(default_factory=CallLogSettings)

    @field_validator("library", "projects", mode="before")
    @classmethod
    def _path_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [p for p in value.split(os.pathsep) if p.strip()]
        return value

    @field_validator("views")
    @classmethod
    def _view_names(cls, views: dict[str, ViewSettings]) -> dict[str, ViewSettings]:
        if bad := [name for name in views if not VIEW_NAME.match(name)]:
            raise ValueError(f"view names are 1-64 letters, digits, '_' or '-': {bad}")
        return views

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Flags (init arguments) beat the environment, which beats the file, which beats defaults."""
        env, file_data = _SOURCES.get()
        return (
            init_settings,
            _MappingEnvSource(settings_cls, env),
            _LegacyEnvSource(settings_cls, env),
            InitSettingsSource(settings_cls, file_data),
        )


# (environment, file contents) for the ConfigFile being built: tests pass their own environment.
_SOURCES: ContextVar[tuple[Mapping[str, str], dict[str, Any]]] = ContextVar("_SOURCES", default=({}, {}))


class _MappingEnvSource(EnvSettingsSource):
    """`SKILLSHELF_*` variables read from a given mapping (os.environ in real use)."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        self._env = env
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(self._env, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)


class _LegacyEnvSource(PydanticBaseSettingsSource):
    """SKILLSHELF_ALLOW_EXEC=1 (documented since the first release) is SKILLSHELF_EXECUTION__ENABLED."""

    def __init__(self, settings_cls: type[BaseSettings], env: Mapping[str, str]) -> None:
        super().__init__(settings_cls)
        self._env = env

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        value = self._env.get(ALLOW_EXEC_ENV, "").strip()
        return {"execution": {"enabled": value.lower() in TRUE_WORDS}} if value else {}


def expand_variables(value: Any, env: Mapping[str, str]) -> Any:
    """`${VAR}` in every string of the file, from the environment; an unset variable is an error."""
    if isinstance(value, str):

        def lookup(found: re.Match[str]) -> str:
            name = found.group(1)
            if name not in env:
                raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"${{{name}}} is used in the config file but not set")
            return env[name]

        return _VARIABLE.sub(lookup, value)
    if isinstance(value, dict):
        return {k: expand_variables(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_variables(v, env) for v in value]
    return value


class Settings(BaseModel):
    roots: list[Path]
    project_roots: list[Path] = Field(default_factory=lambda: [DEFAULT_PROJECTS_ROOT.expanduser()])
    using_bundled: bool = False
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, ge=1024)
    semantic_model: Path | None = None
    watch: bool = True
    index_dir: Path | None = None
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8765, ge=0, le=65535)
    view: str = DEFAULT_VIEW
    config_path: Path | None = None  # the config file read, if any (reload watches it)
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
            semantic_model=self.semantic_model,
        )


def bundled_library_path() -> Path | None:
    """The example library: packaged in the wheel, or `patterns/` of a source checkout."""
    packaged = Path(str(resources.files("skillshelf"))) / "_bundled_patterns"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parents[2] / "patterns"
    return checkout if checkout.is_dir() else None


def default_config_path(env: Mapping[str, str]) -> Path:
    """The user config folder's `config.toml` (platformdirs: XDG_CONFIG_HOME on Linux, %APPDATA% on
    Windows, ~/Library/Application Support on macOS, where an existing ~/.config/skillshelf/config.toml
    from earlier releases is still read)."""
    if sys.platform not in ("win32", "darwin") and env.get("XDG_CONFIG_HOME"):
        return Path(env["XDG_CONFIG_HOME"]) / APP / "config.toml"
    found = platformdirs.user_config_path(APP, appauthor=False, roaming=True) / "config.toml"
    legacy = Path.home() / ".config" / APP / "config.toml"
    if sys.platform == "darwin" and not found.is_file() and legacy.is_file():
        return legacy
    return found


def user_state_dir() -> Path:
    """Where local state that is not a cache lives (the call log)."""
    return platformdirs.user_state_path(APP, appauthor=False)


def config_file_path(path: Path | None, env: Mapping[str, str]) -> tuple[Path, bool]:
    """(the file to read, whether it was named explicitly by --config or SKILLSHELF_CONFIG)."""
    explicit = path or (Path(env[CONFIG_ENV]) if env.get(CONFIG_ENV, "").strip() else None)
    return (explicit or default_config_path(env)).expanduser(), explicit is not None


def read_config_data(target: Path, env: Mapping[str, str]) -> dict[str, Any]:
    """The file's table with `${VAR}` expanded; errors name the file."""
    try:
        raw = tomllib.loads(target.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"{display_path(target)} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"{display_path(target)} cannot be read: {exc}") from exc
    try:
        expanded: dict[str, Any] = expand_variables(raw, env)
    except SkillshelfError as exc:
        raise SkillshelfError(exc.code, f"{display_path(target)}: {exc.message}") from exc
    return expanded


def config_errors(exc: ValidationError) -> list[str]:
    """Each problem as `key.path: message`."""
    return [f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}" for e in exc.errors()]


def load_config(path: Path | None, env: Mapping[str, str], flags: Mapping[str, Any] | None = None) -> ConfigFile:
    """Flags, then SKILLSHELF_* variables, then the config file, then defaults, merged and validated.

    The file named by --config or SKILLSHELF_CONFIG must exist; the default one is optional.
    """
    target, explicit = config_file_path(path, env)
    if target.is_file():
        data = read_config_data(target, env)
    elif explicit:
        raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"config file {display_path(target)} does not exist")
    else:
        data = {}
    token = _SOURCES.set((env, data))
    try:
        return ConfigFile(**dict(flags or {}))
    except ValidationError as exc:
        where = display_path(target) if target.is_file() else "settings"
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"{where} (file, SKILLSHELF_* variables or flags): " + "; ".join(config_errors(exc)),
        ) from exc
    finally:
        _SOURCES.reset(token)


def _paths(value: str) -> list[Path]:
    return [Path(p).expanduser() for p in value.split(os.pathsep) if p.strip()]


def resolve_settings(
    cli_roots: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    cli_project_roots: Sequence[Path] = (),
    config_path: Path | None = None,
    execution: Mapping[str, Any] | None = None,
    view: str | None = None,
    **overrides: object,
) -> Settings:
    """Flags (arguments here) beat the environment, which beats the config file, which beats defaults."""
    env = os.environ if env is None else env
    flags: dict[str, Any] = {}
    if cli_roots:
        flags["library"] = [Path(r) for r in cli_roots]
    if cli_project_roots:
        flags["projects"] = [Path(p) for p in cli_project_roots]
    if view:
        flags["view"] = view
    given_exec = {k: v for k, v in (execution or {}).items() if v is not None and v != ()}
    if given_exec:
        flags["execution"] = given_exec
    config = load_config(config_path, env, flags)
    using_bundled = False
    if config.library:
        roots = [p.expanduser() for p in config.library]
    elif DEFAULT_LIBRARY.expanduser().is_dir():
        roots = [DEFAULT_LIBRARY.expanduser()]
    else:
        bundled = bundled_library_path()
        roots = [bundled] if bundled else []
        using_bundled = True
    target, _explicit = config_file_path(config_path, env)
    values: dict[str, object] = {
        "roots": roots,
        "using_bundled": using_bundled,
        "execution": config.execution,
        "views": config.views,
        "view": config.view,
        "auth": config.auth,
        "call_log": config.call_log,
        "config_path": target if target.is_file() else None,
    }
    if config.projects:
        values["project_roots"] = [p.expanduser() for p in config.projects]
    if config.max_file_bytes:
        values["max_file_bytes"] = config.max_file_bytes
    if config.semantic_model:
        values["semantic_model"] = config.semantic_model.expanduser()
    values.update({k: v for k, v in overrides.items() if v is not None})
    return Settings.model_validate(values)
