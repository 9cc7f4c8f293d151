"""Settings: one frozen `Settings`, built once per command by `resolve_settings` from command-line
flags, then `SKILLSHELF_*` environment variables, then the TOML config file, then defaults (in that
order of precedence). It is the only reader of the environment and the config file for settings:
the CLI passes it down, and library and server code take their values from it.

Every key of the file (a field of `UserSettings`) is also a variable: `SKILLSHELF_` plus the key,
nested keys joined by `__` (`SKILLSHELF_EXECUTION__TIMEOUT_S`), read from the model
(config/variables.py); some have a flag too (cli/setting_flags.py). So a new setting is one field
here, plus its flag if it wants one. `${VAR}` in the file's strings expands from the environment.
The file is `--config`, else `SKILLSHELF_CONFIG`, else the user config folder's `config.toml`.
Roots: `--library PATH` beats `SKILLSHELF_LIBRARY` (os.pathsep-separated), which beats `library`
in the file, which beats `~/.shared-patterns`; with none of them, the bundled examples are served.

A misspelt key or `SKILLSHELF_*` variable is an error naming the closest real one, whichever source
it comes from: a typo in a security setting that is silently ignored is the harm this prevents.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import platformdirs
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from skillshelf.config.auth import AuthSettings, tokens_from_variable
from skillshelf.config.call_log import LOG_NAME, CallLogSettings, user_state_dir
from skillshelf.config.execution_cap import absolute_folders
from skillshelf.config.variables import (
    PREFIX,
    KeyPath,
    UnknownKey,
    closest,
    decode,
    keys_at,
    path_of,
    type_at,
    variable_for,
    variables,
)
from skillshelf.config.views import DEFAULT_VIEW, VIEW_NAME, ViewSettings
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.index.places import LibraryConfig
from skillshelf.library.indexing.folders import user_cache_dir
from skillshelf.library.semantic.install import (
    NUMPY_MISSING,
    fetched_model,
    installed_model,
    numpy_missing,
    user_data_dir,
)
from skillshelf.library.skill.paths import display_path
from skillshelf.library.skill.reading import DEFAULT_MAX_FILE_BYTES, MAX_FILE_BYTES_CEILING
from skillshelf.projects import DEFAULT_PROJECTS_ROOT, ProjectRoots
from skillshelf.state import check_url, open_stores

APP = "skillshelf"
DEFAULT_LIBRARY = Path("~/.shared-patterns")
# Variables that are read but are not keys: which file to read, tokens as NAME=TOKEN, a legacy switch.
CONFIG_ENV = "SKILLSHELF_CONFIG"
TOKENS_ENV = "SKILLSHELF_TOKENS"
ALLOW_EXEC_ENV = "SKILLSHELF_ALLOW_EXEC"  # documented since the first release: SKILLSHELF_EXECUTION__ENABLED
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
# SKILLSHELF_* variables that are no settings at all, so never reported as misspelt ones.
NOT_SETTINGS = frozenset(
    {
        "SKILLSHELF_SKILL_DIR",  # given to each skill process (execution/runner.py)
        "SKILLSHELF_CHROMIUM",  # the browser the test suite drives (tests/server/test_web_browser.py)
    }
)
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


# Ceilings on sizes a stranger's config could set: a run's limits become rlimits and cgroup values (a huge
# one overflowed them), and a run's output is held in memory before it is answered.
MEGABYTES_CEILING = 1024 * 1024  # 1 TiB
BUFFERED_BYTES_CEILING = 256 * 1024 * 1024


class ExecutionSettings(BaseModel):
    """executeSkill: off unless enabled; every limit has a safe default."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = False
    allow: list[str] = Field(default_factory=list, description="Skill id patterns (fnmatch); empty: any skill")
    timeout_s: float = Field(default=30.0, gt=0, le=3600)
    cpu_s: int = Field(default=30, ge=1, le=3600)
    memory_mb: int = Field(default=1024, ge=32, le=MEGABYTES_CEILING)
    run_memory_mb: int = Field(
        default=2048,
        ge=32,
        le=MEGABYTES_CEILING,
        description="Memory of a whole run: every process and its tmpfs (a memory cgroup)",
    )
    work_dir_mb: int = Field(
        default=512, ge=1, le=MEGABYTES_CEILING, description="Total size of a run's working directory"
    )
    tmp_mb: int = Field(
        default=64, ge=1, le=MEGABYTES_CEILING, description="Size of the sandbox's /tmp (a tmpfs, held in memory)"
    )
    max_processes: int = Field(default=32, ge=1, le=4096)
    max_output_bytes: int = Field(default=1024 * 1024, ge=1024, le=BUFFERED_BYTES_CEILING)
    max_stderr_bytes: int = Field(default=64 * 1024, ge=1024, le=BUFFERED_BYTES_CEILING)
    env: list[str] = Field(default_factory=list, description="Extra environment variable names passed to skills")
    bubblewrap: bool = Field(default=True, description="Run skills in a bubblewrap sandbox when bwrap works here")
    require_isolation: bool = Field(default=False, description="Refuse to run skills without the sandbox")
    network: list[str] = Field(default_factory=list, description="Skill id patterns that may use the network")
    read_paths: list[Path] = Field(
        default_factory=list, description="Folders a skill's policy may ask to read (bound read-only); default none"
    )

    @field_validator("read_paths")
    @classmethod
    def _absolute(cls, paths: list[Path]) -> list[Path]:
        return absolute_folders(paths) or []


class HttpSettings(BaseModel):
    """`serve --http`: what bounds the connections and sessions strangers can hold open (docs/deploy.md)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    header_timeout_s: float = Field(
        default=10.0, gt=0, le=600, description="A connection that has not sent a request's headers by then is closed"
    )
    max_connections: int = Field(
        default=1000, ge=8, description="Open connections per process; past it the oldest one with no request is closed"
    )
    max_sessions: int = Field(default=1000, ge=1, description="Open MCP sessions (legacy clients), every view together")
    sessions_per_client: int = Field(
        default=100, ge=1, description="Open MCP sessions per token, or per address without tokens"
    )
    session_idle_s: float = Field(
        default=600.0, gt=0, le=86400, description="A session with no request in flight for this long is closed"
    )


class UserSettings(BaseModel):
    """Every setting a user sets: a key of the config file, a `SKILLSHELF_` variable (nested keys
    joined by `__`), and for some a flag. Unknown keys are errors, so a typo never silently does
    nothing. `library` and `projects` take a list of paths or one string of paths separated by
    os.pathsep (`:`; `;` on Windows)."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_by_name=True, validate_by_alias=True)

    roots: list[Path] = Field(
        default_factory=list,
        alias="library",
        description="Library roots, first wins (default: ~/.shared-patterns, else the bundled examples)",
    )
    project_roots: list[Path] = Field(
        default_factory=lambda: [DEFAULT_PROJECTS_ROOT.expanduser()],
        alias="projects",
        description="Project roots, for artifacts and memory",
    )
    max_file_bytes: int = Field(  # bounded: a read sets aside this much at once (a trillion failed every read)
        default=DEFAULT_MAX_FILE_BYTES, ge=1024, le=MAX_FILE_BYTES_CEILING, description="Largest file read, in bytes"
    )
    eval_threshold: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="`skillshelf eval` exits 1 when the share of trigger examples passed is below this (0-1)",
    )
    history_keep: int = Field(
        default=10, ge=1, le=1000, description="Earlier versions of each skill kept for `skillshelf rollback`"
    )
    semantic_model: Literal["off"] | Path | None = Field(
        default=None,
        description="A sentence-transformers BERT model folder: search by meaning too (default: the model "
        '`skillshelf model fetch` installed, if any; "off": words alone)',
    )
    view: str = Field(default=DEFAULT_VIEW, description="The view `skillshelf serve` serves")
    keep_installed: bool = Field(
        default=False,
        description="`serve` keeps the skills `skillshelf install` put in agents' folders current as the library "
        "changes (edited copies are kept; docs/agents.md)",
    )
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    views: dict[str, ViewSettings] = Field(default_factory=dict, description="Named views ([views.NAME])")
    auth: AuthSettings = Field(default_factory=AuthSettings)
    call_log: CallLogSettings = Field(default_factory=CallLogSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    cache_dir: Path = Field(
        default_factory=user_cache_dir,
        description="Indexes that cannot live in their library, and the sessions index (default: the user cache)",
    )
    state_dir: Path = Field(
        default_factory=user_state_dir, description="Local state that is not a cache: the call log's default folder"
    )
    data_dir: Path = Field(
        default_factory=user_data_dir, description="Downloaded data: where `skillshelf model fetch` installs"
    )
    require_verified: bool = Field(
        default=False,
        description="Serve only skills whose bytes match an approval in their root's skillshelf.lock (`skillshelf "
        "approve`); a changed or unapproved skill is hidden, with a finding saying why",
    )
    require_signed: bool = Field(
        default=False,
        description="Serve skills from sources only when skillshelf.lock's signature verifies against the allowed "
        "signers (`skillshelf sign`), and their bytes match it",
    )
    database_url: str | None = Field(
        default=None,
        description="A postgresql:// URL: usage events, memory notes and the call log live there, shared by "
        "every server using it (docs/deploy.md); unset: the embedded SQLite and JSONL files",
    )

    @field_validator("roots", "project_roots", mode="before")
    @classmethod
    def _path_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [p for p in value.split(os.pathsep) if p.strip()]
        return value

    @field_validator("roots", "project_roots")
    @classmethod
    def _expand_all(cls, paths: list[Path]) -> list[Path]:
        return [p.expanduser() for p in paths]

    @field_validator("semantic_model", mode="before")
    @classmethod
    def _semantic_off(cls, value: Any) -> Any:
        return "off" if isinstance(value, str) and value.strip().lower() in ("off", "") else value

    @field_validator("semantic_model", "cache_dir", "state_dir", "data_dir")
    @classmethod
    def _expand(cls, path: Path | str | None) -> Path | str | None:
        return path.expanduser() if isinstance(path, Path) else path

    @field_validator("database_url")
    @classmethod
    def _database_url(cls, url: str | None) -> str | None:
        return check_url(url) if url is not None and url.strip() else None

    @field_validator("views")
    @classmethod
    def _view_names(cls, views: dict[str, ViewSettings]) -> dict[str, ViewSettings]:
        if bad := [name for name in views if not VIEW_NAME.match(name)]:
            raise ValueError(f"view names are 1-64 letters, digits, '_' or '-': {bad}")
        return views


class Settings(UserSettings):
    """Every setting in effect: what the user set, resolved (roots, paths, the call log's file), plus
    what this run decided. Frozen; HTTP workers receive it as JSON (`model_dump_json`)."""

    roots: list[Path] = Field(alias="library", description="Library roots, first wins")
    using_bundled: bool = False  # no library configured: the bundled examples are served
    watch: bool = True  # `--no-watch` turns it off
    http_host: str = "127.0.0.1"  # `serve --host`
    config_path: Path | None = None  # the config file read, if any (reload watches it)

    def projects(self) -> ProjectRoots:
        return ProjectRoots.of(self.project_roots)

    def serves_only_approved(self) -> bool:
        """require_verified or require_signed: what is served is held to approved bytes (library/access/approved.py)."""
        return self.require_verified or self.require_signed

    def semantic_model_folder(self) -> Path | None:
        """The model that searches by meaning: the setting, else the one `skillshelf model fetch` installed
        in DATA_DIR (semantic search is on once the model is there); none with `semantic_model = "off"`."""
        if self.semantic_model == "off":
            return None
        return self.semantic_model or installed_model(self.data_dir)

    def semantic_off_reason(self) -> str | None:
        """Why semantic search is off although a model is set or fetched (NumPy is missing), else None."""
        if self.semantic_model == "off" or not numpy_missing():
            return None
        return NUMPY_MISSING if self.semantic_model or fetched_model(self.data_dir) else None

    def library_config(self) -> LibraryConfig:
        bundled = bundled_library_path()
        return LibraryConfig(
            roots=self.roots,
            max_file_bytes=self.max_file_bytes,
            read_only_roots=frozenset({bundled.resolve()}) if bundled else frozenset(),
            watch=self.watch,
            semantic_model=self.semantic_model_folder(),
            cache_dir=self.cache_dir,
            open_usage=open_stores(self.database_url).usage,
        )


USER_KEYS = frozenset(UserSettings.model_fields[name].alias or name for name in UserSettings.model_fields)


class SettingsError(SkillshelfError):
    """Every problem found in the flags, variables and file, each as `where: key: what is wrong`."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        text = problems[0] if len(problems) == 1 else f"{len(problems)} settings problems:\n  " + "\n  ".join(problems)
        super().__init__(ErrorCode.VALIDATION_ERROR, text)


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


@dataclass(frozen=True)
class ConfigLocation:
    """The config file settings are read from (and `token new` writes to), and what named it."""

    path: Path
    named_by: str | None  # "--config" or SKILLSHELF_CONFIG; None: the default location (optional)


def config_location(flag: Path | None, env: Mapping[str, str] | None = None) -> ConfigLocation:
    """The one place that decides which config file is read: --config, else SKILLSHELF_CONFIG, else the
    user config folder's."""
    env = os.environ if env is None else env
    if flag is not None:
        return ConfigLocation(flag.expanduser(), "--config")
    if env.get(CONFIG_ENV, "").strip():
        return ConfigLocation(Path(env[CONFIG_ENV]).expanduser(), CONFIG_ENV)
    return ConfigLocation(default_config_path(env).expanduser(), None)


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


@dataclass
class _Layer:
    """What one source set, as nested tables, and where each value came from."""

    label: str  # "flag", the file's path, or "SKILLSHELF_* variables"
    data: dict[str, Any] = field(default_factory=dict)
    named: dict[KeyPath, str] = field(default_factory=dict)  # a key path -> the variable that set it

    def put(self, path: tuple[str, ...], value: Any, name: str) -> None:
        node = self.data
        for key in path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        node[path[-1]] = _deep_merge(node.get(path[-1]), value)
        self.named[path] = name

    def origin(self, path: KeyPath) -> str | None:
        """Where this source set `path` (or a value holding it), or None if it did not."""
        node: Any = self.data
        for key in path:
            if not isinstance(node, dict):
                break  # a list or a value set whole holds the rest of the path
            if key not in node:
                return None
            node = node[key]
        named = [self.named[path[:depth]] for depth in range(len(path), 0, -1) if path[:depth] in self.named]
        return named[0] if named else self.label


def _deep_merge(base: Any, top: Any) -> Any:
    if isinstance(base, dict) and isinstance(top, dict):
        return {**base, **{k: _deep_merge(base.get(k), v) for k, v in top.items()}}
    return top


def _given(value: Any) -> Any:
    """Flags as values: what was not given (None, an empty repeatable option) is left out."""
    if isinstance(value, dict):
        return {k: v for k, v in ((k, _given(v)) for k, v in value.items()) if v is not None}
    if isinstance(value, (list, tuple)):
        return list(value) or None
    return value


def _flags_layer(roots: Sequence[Path], flags: Mapping[str, Any]) -> _Layer:
    by_key = {name: info.alias or name for name, info in Settings.model_fields.items()}
    data = _given({by_key.get(k, k): v for k, v in {"roots": roots, **flags}.items()}) or {}
    return _Layer("flag", data)


def _variables_layer(env: Mapping[str, str], problems: list[str]) -> _Layer:
    """`SKILLSHELF_*` variables: each is a key path of `UserSettings`, or an error naming the closest."""
    layer = _Layer("SKILLSHELF_* variables")
    if legacy := env.get(ALLOW_EXEC_ENV, "").strip():
        layer.put(("execution", "enabled"), legacy.lower() in TRUE_WORDS, ALLOW_EXEC_ENV)
    try:
        for name, token in tokens_from_variable(env.get(TOKENS_ENV, "")).items():
            layer.put(("auth", "tokens", name), token.model_dump(), TOKENS_ENV)
    except SkillshelfError as exc:
        problems.append(f"{TOKENS_ENV}: {exc.message}")
    inputs = {CONFIG_ENV, TOKENS_ENV, ALLOW_EXEC_ENV} | NOT_SETTINGS
    for name in sorted(n for n in env if n.upper().startswith(PREFIX) and n.upper() not in inputs):
        path = path_of(name)
        try:
            value = decode(type_at(UserSettings, path), env[name])
        except UnknownKey as unknown:
            problems.append(_unknown_variable(name, unknown))
            continue
        except ValueError as exc:
            problems.append(f"{name} {exc}")
            continue
        layer.put(path, value, name)  # sorted: a nested key's variable goes over its table's
    return layer


def _unknown_variable(name: str, unknown: UnknownKey) -> str:
    """`NAME is not a skillshelf setting; did you mean NAME'?`, NAME' being `name` with its first wrong key
    replaced by the closest real one (or cut before it, when that key's value takes no sub-keys), else
    the closest variable of all."""
    path = [str(key) for key in unknown.path]
    guess = unknown.suggestion
    if unknown.depth == 0:
        extra = [n[len(PREFIX) :].lower() for n in (CONFIG_ENV, TOKENS_ENV, ALLOW_EXEC_ENV)]
        guess = closest(path[0], keys_at(UserSettings) + extra)
        nested = [v for v in variables(UserSettings) if v.endswith("__" + name[len(PREFIX) :].upper())]
        if len(nested) == 1:  # exactly a nested key, given without its table: that beats a near top-level one
            return f"{name} is not a skillshelf setting; did you mean {nested[0]}?"
    if guess is not None:
        suggestion: str | None = variable_for((*path[: unknown.depth], guess, *path[unknown.depth + 1 :]))
    elif unknown.depth > 0:
        suggestion = variable_for(tuple(path[: unknown.depth]))  # a value that takes no sub-keys
    else:  # e.g. a nested key given without its table (`require_isolation` for `execution__require_isolation`)
        keys = {variable[len(PREFIX) :]: variable for variable in variables(UserSettings)}
        found = closest(name[len(PREFIX) :].upper(), list(keys))
        suggestion = keys[found] if found else None
    if suggestion is None:
        return f"{name} is not a skillshelf setting (`skillshelf config show` lists them all)"
    return f"{name} is not a skillshelf setting; did you mean {suggestion}?"


def _file_layer(location: ConfigLocation, env: Mapping[str, str], problems: list[str]) -> _Layer:
    layer = _Layer(display_path(location.path))
    if not location.path.is_file():
        if location.named_by is not None:
            problems.append(f"config file {display_path(location.path)} (from {location.named_by}) does not exist")
        return layer
    try:
        layer.data = read_config_data(location.path, env)
    except SkillshelfError as exc:
        problems.append(exc.message)
        return layer
    for key in [k for k in layer.data if k not in USER_KEYS]:  # e.g. `watch`: a fact of a run, not a key
        problems.append(_problem({"loc": (key,), "type": "extra_forbidden", "msg": "", "input": None}, [layer]))
        del layer.data[key]
    return layer


def _problem(error: ErrorDetails, layers: Sequence[_Layer]) -> str:
    """One validation error as `where: key.path: message`, where being the source that set the key."""
    loc = tuple(error["loc"])
    where = next((found for layer in layers if (found := layer.origin(loc)) is not None), "default")
    key = ".".join(map(str, loc)) or "(top level)"
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        try:
            guess = closest(str(loc[-1]), keys_at(type_at(UserSettings, loc[:-1])))
        except UnknownKey:
            guess = None
        message = "not a setting" + (f"; did you mean {guess!r}?" if guess else "")
    elif error["type"] == "value_error":  # a validator's own message, without pydantic's "Value error, "
        message = str(error.get("ctx", {}).get("error", message))
    elif where.startswith(PREFIX) and error["type"] in ("list_type", "dict_type", "model_type"):
        message += f' (a variable sets a list or a table as JSON, e.g. {where}=\'["a", "b"]\')'
    return f"{where}: {key}: {message}"


def _default_roots() -> tuple[list[Path], bool]:
    """(roots, whether they are the bundled examples) when no library is configured."""
    if DEFAULT_LIBRARY.expanduser().is_dir():
        return [DEFAULT_LIBRARY.expanduser()], False
    bundled = bundled_library_path()
    return ([bundled] if bundled else []), True


@dataclass(frozen=True)
class Resolution:
    """Settings resolved, and where each value came from (`skillshelf config show`)."""

    settings: Settings
    config: ConfigLocation
    layers: tuple[_Layer, ...]  # highest precedence first

    def origin(self, path: KeyPath) -> str:
        """The flag, variable or file that set `path`, or "default"."""
        if path == ("config_path",):
            return self.config.named_by or "default"
        found = (o for layer in self.layers if (o := layer.origin(path)) is not None)
        return next(found, "default")


def resolve(
    roots: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    config_path: Path | None = None,
    **flags: Any,
) -> Resolution:
    """Flags (`roots` and keyword arguments named like the settings, nested as tables), then the
    environment, then the config file, then defaults. Every problem in any of them is collected, and
    raised together as one SettingsError."""
    env = os.environ if env is None else env
    problems: list[str] = []
    location = config_location(config_path, env)
    file = _file_layer(location, env, problems)
    variables = _variables_layer(env, problems)
    flagged = _flags_layer(roots, flags)
    layers = (flagged, variables, file)
    merged: dict[str, Any] = {}
    for layer in reversed(layers):
        merged = _deep_merge(merged, layer.data)
    if not merged.get("library"):
        merged["library"], merged["using_bundled"] = _default_roots()
    merged["config_path"] = location.path if location.path.is_file() else None
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        problems.extend(_problem(error, layers) for error in exc.errors())
    if problems:
        raise SettingsError(problems)
    log_file = (settings.call_log.path or settings.state_dir / LOG_NAME).expanduser()
    settings = settings.model_copy(update={"call_log": settings.call_log.model_copy(update={"path": log_file})})
    return Resolution(settings, location, layers)


def resolve_settings(
    roots: Sequence[Path] = (),
    env: Mapping[str, str] | None = None,
    config_path: Path | None = None,
    **flags: Any,
) -> Settings:
    """The settings in effect (see `resolve`): the CLI calls this once per command."""
    return resolve(roots, env, config_path, **flags).settings
