"""`skillshelf config validate|show|schema`, `skillshelf views` and `skillshelf explain` (docs/views.md)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from skillshelf.cli.common import command_settings, config_flag, json_option, library_option, opened_app
from skillshelf.cli.output import print_json
from skillshelf.cli.setting_flags import flag_name, given_flags, setting_flags
from skillshelf.config.variables import KeyPath, leaves
from skillshelf.errors import SkillshelfError
from skillshelf.library.skill.paths import display_path
from skillshelf.state.postgres.url import redacted

if TYPE_CHECKING:
    from mcp.server.mcpserver.tools.base import Tool

    from skillshelf.settings import Settings

SECRET_WORDS = ("secret", "token", "password", "sha256", "key")
MASK = "********"


def _config_option(fn: Any) -> Any:
    return click.option(
        "--config",
        "config_path",
        type=click.Path(path_type=Path, dir_okay=False),
        help="The config file (default: skillshelf --config, $SKILLSHELF_CONFIG, then the user config folder's).",
    )(fn)


def _config_path(given: Path | None) -> Path | None:
    """`config ... --config FILE`, else `skillshelf --config FILE`, if either is given."""
    return given if given is not None else config_flag()


@contextmanager
def tool_catalogue(settings: Settings) -> Iterator[list[Tool]]:
    """Every tool, built over a throwaway index (nothing is parsed or written near the library)."""
    from skillshelf.library.index.library import LibraryConfig
    from skillshelf.server.app import App

    with tempfile.TemporaryDirectory(prefix="skillshelf-views-") as scratch:
        throwaway = settings.model_copy(update={"cache_dir": Path(scratch), "watch": False})
        config = LibraryConfig(roots=settings.roots, index_dir=Path(scratch), watch=False)
        with App(throwaway, library_config=config) as app:
            yield app.tools()


def mask(value: Any, key: str = "") -> Any:
    """Secrets (any key naming a token, secret, password or hash) replaced by a mask."""
    if key == "database_url" and isinstance(value, str):
        return redacted(value)  # the URL shows where the database is; only its password is secret
    if isinstance(value, dict):
        return {k: mask(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask(v, key) for v in value]
    if value not in (None, "", [], {}) and any(word in key.lower() for word in SECRET_WORDS):
        return MASK
    return value


@click.group("config")
def config_group() -> None:
    """Check, show and describe the config file."""


@config_group.command("validate")
@_config_option
def validate(config_path: Path | None) -> None:
    """Check the settings: the config file, the SKILLSHELF_* variables and each view's tools. Every
    problem is printed with where it is and its key path; exit 1 if there is any."""
    from skillshelf.config.views import all_views
    from skillshelf.server.views import ToolSelection
    from skillshelf.settings import SettingsError, resolve

    try:
        resolution = resolve(config_path=_config_path(config_path))
    except SettingsError as exc:
        for problem in exc.problems:
            click.echo(problem, err=True)
        raise click.ClickException(f"{len(exc.problems)} problem(s)") from exc
    settings, where = resolution.settings, display_path(resolution.config.path)
    problems = []
    with tool_catalogue(settings) as tools:
        for name, view in all_views(settings.views, settings.execution.enabled).items():
            try:
                ToolSelection.of(name, view, tools)
            except SkillshelfError as exc:
                problems.append(f"views.{name}.{exc.message}")
    for problem in problems:
        click.echo(f"{where}: {problem}", err=True)
    if problems:
        raise click.ClickException(f"{len(problems)} problem(s) in {where}")
    click.echo(f"{where}: valid" if settings.config_path else f"no config file at {where}: defaults apply; valid")


@config_group.command("show")
@library_option
@setting_flags()
@_config_option
@json_option
def show(libraries: tuple[Path, ...], config_path: Path | None, as_json: bool) -> None:
    """The settings in effect, flags included (serve's setting flags apply here too), each with where it
    came from: a flag, a SKILLSHELF_* variable, the config file, or the default. Secrets are masked."""
    from skillshelf.settings import resolve

    context = click.get_current_context()
    resolution = resolve(libraries, config_path=_config_path(config_path), **given_flags(context))
    settings = resolution.settings
    shown = mask(settings.model_dump(mode="json", by_alias=True))
    installed = settings.semantic_model_folder() if settings.semantic_model is None else None
    if installed is not None:  # meaning is on with no setting: say which model, not `null`
        shown["semantic_model"] = str(installed)
    rows = [(path, value, _origin_label(resolution.origin(path), path)) for path, value in leaves(shown)]
    if installed is not None:
        rows = [
            (p, v, "default: the model `skillshelf model fetch` installed" if p == ("semantic_model",) else o)
            for p, v, o in rows
        ]
    if (reason := settings.semantic_off_reason()) is not None:  # set or fetched, yet off: say why
        rows = [(p, v, f"off: {reason}" if p == ("semantic_model",) else o) for p, v, o in rows]
    if as_json:
        print_json({"settings": shown, "origins": {_dotted(path): origin for path, _, origin in rows}})
        return
    location = resolution.config
    found = "" if location.path.is_file() else ", not present"
    click.echo(f"# config file: {display_path(location.path)} ({location.named_by or 'default location'}{found})")
    lines = [(f"{_dotted(path)} = {json.dumps(value, ensure_ascii=False)}", origin) for path, value, origin in rows]
    width = max(len(line) for line, _ in lines)
    for line, origin in lines:
        click.echo(f"{line:<{width}}  # {origin}")


def _dotted(path: KeyPath) -> str:
    return ".".join(map(str, path))


def _origin_label(origin: str, path: KeyPath) -> str:
    """A flag is named as typed (`--exec-timeout`)."""
    return (flag_name(_dotted(path)) or "flag") if origin == "flag" else origin


@config_group.command("schema")
def schema() -> None:
    """The JSON Schema of the config file (for editors and CI)."""
    from skillshelf.settings import UserSettings

    click.echo(json.dumps(UserSettings.model_json_schema(), indent=2))


@click.command("views")
@library_option
@json_option
def views(libraries: tuple[Path, ...], as_json: bool) -> None:
    """Each view, its tools and its cost in tokens."""
    from skillshelf.config.views import all_views
    from skillshelf.server.views import ToolSelection, surface_cost

    settings = command_settings(libraries)
    rows: list[dict[str, Any]] = []
    with tool_catalogue(settings) as tools:
        for name, view in sorted(all_views(settings.views, settings.execution.enabled).items()):
            cost = surface_cost(ToolSelection.of(name, view, tools))
            rows.append(
                {
                    "view": name,
                    "description": view.description,
                    "exposure": view.exposure,
                    "tools": cost.tools,
                    "tokens": cost.total_tokens,
                    "toolsTokens": cost.read_tokens,
                    "instructionsTokens": cost.instructions_tokens,
                    "wireChars": cost.wire_chars,
                }
            )
    if as_json:
        print_json(rows)
        return
    for row in rows:
        default = " (served by `skillshelf serve`)" if row["view"] == settings.view else ""
        click.echo(f"{row['view']}{default}  ~{row['tokens']} tokens, {row['exposure']}: {row['description']}")
        click.echo(f"    {', '.join(row['tools'])}")


@click.command("explain")
@click.argument("name")
@click.option("--view", "view_name", help="The view to explain (default: the one `serve` serves).")
@library_option
@json_option
def explain(name: str, view_name: str | None, libraries: tuple[Path, ...], as_json: bool) -> None:
    """Which rule shows or hides a tool or a skill in a view, and why."""
    from skillshelf.config.views import resolve_view
    from skillshelf.library.access.reader import facts_of
    from skillshelf.library.access.rules import decide_skill, decide_tool
    from skillshelf.server.views import ToolSelection

    settings = command_settings(libraries, watch=False)
    chosen = view_name or settings.view
    view = resolve_view(chosen, settings.views, settings.execution.enabled)
    with tool_catalogue(settings) as tools:
        own = {t.name for t in tools}
        selection = ToolSelection.of(chosen, view, tools)
    exposed_as = {v: k for k, v in selection.renamed.items()}
    if name in own or name in exposed_as:
        tool = exposed_as.get(name, name)
        rules = view.tool_rules()
        decision = decide_tool(rules, tool)
        answer = {
            "kind": "tool",
            "name": tool,
            "view": chosen,
            "shown": decision.kept,
            "exposedAs": selection.renamed.get(tool, tool) if decision.kept else None,
            "reason": decision.reason(rules),
        }
    else:
        with opened_app(settings) as app:
            skill = app.curator.get(name)
            if skill is None:
                import difflib

                close = difflib.get_close_matches(name, sorted(own), n=3, cutoff=0.6) or app.curator.suggest(name)
                hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
                raise click.ClickException(f"no tool or skill {name!r}.{hint} Tools: {', '.join(sorted(own))}")
            rules = view.skill_rules()
            decision = decide_skill(rules, facts_of(skill))
            # the view's rules show it, but require_verified or require_signed may still hold it back
            held = app.served_reader(view).visibility.held_back(skill.id) if decision.kept else None
        answer = {"kind": "skill", "name": name, "view": chosen, "shown": decision.kept and held is None}
        answer["reason"] = held.message if held is not None else decision.reason(rules)
    if as_json:
        print_json(answer)
        return
    verdict = "shown" if answer["shown"] else "hidden"
    renamed = f" as {answer['exposedAs']}" if answer.get("exposedAs") not in (None, name) else ""
    click.echo(f"{answer['kind']} {name} is {verdict}{renamed} in view {chosen!r}: {answer['reason']}")


COMMANDS = (config_group, views, explain)
