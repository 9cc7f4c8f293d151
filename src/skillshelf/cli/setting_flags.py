"""Flags that set a setting: one line each, naming the settings key it sets (skillshelf.settings).

A command takes them with `@setting_flags("view", ...)` (`serve` and `config show`: all of them);
their values reach `resolve_settings` through the click context, so a command never passes a setting
by hand. A new setting with a flag is its field in `UserSettings` plus one line here.
`--library/-l` is `library_option` (cli/main.py): every command takes it and passes the roots itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])
META_KEY = "skillshelf.setting_flags"


@dataclass(frozen=True)
class SettingFlag:
    key: str  # the settings key it sets, dotted: "execution.timeout_s"
    declaration: str  # "--exec-timeout"
    help: str
    options: dict[str, Any] = field(default_factory=dict)  # more click.option keywords
    value: Callable[[Any], Any] = lambda given: given  # the setting's value from the flag's

    def apply(self, fn: F) -> F:
        def remember(ctx: click.Context, _param: click.Parameter, given: Any) -> None:
            if given is not None and given != ():
                ctx.meta.setdefault(META_KEY, {})[self.key] = self.value(given)

        defaults: dict[str, Any] = {"default": None} if self.options.get("is_flag") else {}
        option = click.option(
            self.declaration, help=self.help, expose_value=False, callback=remember, **defaults, **self.options
        )
        return option(fn)


PATHS = click.Path(path_type=Path)
FLAGS = (
    SettingFlag("http_host", "--host", "HTTP bind address.  [default: 127.0.0.1]"),
    SettingFlag(
        "projects",
        "--projects-root",
        "Folder holding projects for artifacts and memory (repeatable). Default: $SKILLSHELF_PROJECTS, "
        "then `projects` in the config file, then ~/Dev.",
        {"multiple": True, "type": PATHS},
    ),
    SettingFlag("execution.enabled", "--allow-exec", "Let agents run skills with executeSkill.", {"is_flag": True}),
    SettingFlag(
        "execution.allow",
        "--exec-allow",
        "Only skill ids matching this pattern may run (repeatable).",
        {"multiple": True},
    ),
    SettingFlag(
        "execution.timeout_s",
        "--exec-timeout",
        "Longest a skill may run, in seconds.",
        {"type": click.FloatRange(min=0.1)},
    ),
    SettingFlag(
        "database_url",
        "--database-url",
        "A postgresql:// URL: usage events, memory notes and the call log live there (docs/deploy.md). "
        "Default: $SKILLSHELF_DATABASE_URL, then `database_url` in the config file, else the embedded files.",
        {"metavar": "URL"},
    ),
    SettingFlag("view", "--view", "The view to serve (docs/views.md). Default: `view` in the config, else `default`."),
    SettingFlag(
        "keep_installed",
        "--keep-installed",
        "Keep the skills `skillshelf install` put in agents' folders current as the library changes.",
        {"is_flag": True},
    ),
    SettingFlag(
        "watch",
        "--no-watch",
        "Do not watch the library or the config file for changes.",
        {"is_flag": True},
        lambda _given: False,
    ),
)
BY_KEY = {flag.key: flag for flag in FLAGS}


def setting_flags(*keys: str) -> Callable[[F], F]:
    """The flags of these settings keys, in this order in --help; without keys, every one (`serve` and
    `config show` take every flag, so a new one reaches both with nothing else to edit)."""

    def decorate(fn: F) -> F:
        for key in reversed(keys or tuple(BY_KEY)):
            fn = BY_KEY[key].apply(fn)
        return fn

    return decorate


def given_flags(ctx: click.Context | None) -> dict[str, Any]:
    """The settings the command line set, as nested tables: {"execution": {"timeout_s": 9.0}}."""
    nested: dict[str, Any] = {}
    for key, value in (ctx.meta.get(META_KEY, {}) if ctx else {}).items():
        *tables, last = key.split(".")
        node = nested
        for table in tables:
            node = node.setdefault(table, {})
        node[last] = value
    return nested


def flag_name(key: str) -> str | None:
    """The flag that sets a dotted settings key, if one does (`config show` says where values came from)."""
    if key == "library":
        return "--library"
    flag = BY_KEY.get(key)
    return flag.declaration if flag else None
