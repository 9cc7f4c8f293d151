"""`skillshelf config validate|show|schema`, `skillshelf views` and `skillshelf explain` (docs/views.md)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from pydantic import ValidationError

from skillshelf.cli.main import _settings, json_option, library_option, open_library
from skillshelf.cli.output import print_json
from skillshelf.errors import SkillshelfError

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
    if given is not None:
        return given
    context = click.get_current_context(silent=True)
    root = context.find_root().obj if context else None
    return root.get("config") if root else None


@contextmanager
def tool_catalogue(settings: Settings) -> Iterator[list[Tool]]:
    """Every tool, built over a throwaway index (nothing is parsed or written near the library)."""
    from skillshelf.artifacts.archive import SessionArchive
    from skillshelf.library.access.reader import LibraryReader
    from skillshelf.library.index.library import LibraryConfig, SkillLibrary
    from skillshelf.server.app import every_tool

    with tempfile.TemporaryDirectory(prefix="skillshelf-views-") as scratch:
        library = SkillLibrary(LibraryConfig(roots=settings.roots, index_dir=Path(scratch), watch=False))
        archive = SessionArchive(settings.projects(), watch=False)
        try:
            yield every_tool(settings, LibraryReader(library), archive)
        finally:
            library.close()
            archive.close()


def mask(value: Any, key: str = "") -> Any:
    """Secrets (any key naming a token, secret, password or hash) replaced by a mask."""
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
    """Check the config file: every problem with its key path; exit 1 if there is any."""
    from skillshelf.config.views import all_views
    from skillshelf.server.views import ToolSelection
    from skillshelf.settings import _SOURCES, ConfigFile, config_errors, config_file_path, read_config_data

    env = os.environ
    target, explicit = config_file_path(_config_path(config_path), env)
    if not target.is_file():
        if explicit:
            raise click.ClickException(f"config file {target} does not exist")
        click.echo(f"no config file at {target}: defaults apply")
        return
    try:
        data = read_config_data(target, env)
    except SkillshelfError as exc:
        raise click.ClickException(exc.message) from exc
    token = _SOURCES.set(({}, data))  # the file alone: variables are checked where they are used
    try:
        ConfigFile()
    except ValidationError as exc:
        for problem in config_errors(exc):
            click.echo(f"{target}: {problem}", err=True)
        raise click.ClickException(f"{len(exc.errors())} problem(s) in {target}") from exc
    finally:
        _SOURCES.reset(token)
    settings = _settings((), view=None)
    problems = []
    with tool_catalogue(settings) as tools:
        for name, view in all_views(settings.views, settings.execution.enabled).items():
            try:
                ToolSelection.of(name, view, tools)
            except SkillshelfError as exc:
                problems.append(f"views.{name}.{exc.message}")
    for problem in problems:
        click.echo(f"{target}: {problem}", err=True)
    if problems:
        raise click.ClickException(f"{len(problems)} problem(s) in {target}")
    click.echo(f"{target}: valid")


@config_group.command("show")
@click.option("--resolved", is_flag=True, help="Flags, environment and file merged (the default).")
@_config_option
def show(resolved: bool, config_path: Path | None) -> None:
    """The settings in effect (file + SKILLSHELF_* variables + defaults), secrets masked, as JSON."""
    from skillshelf.settings import load_config

    config = load_config(_config_path(config_path), os.environ)
    print_json(mask(config.model_dump(mode="json")))


@config_group.command("schema")
def schema() -> None:
    """The JSON Schema of the config file (for editors and CI)."""
    from skillshelf.settings import ConfigFile

    click.echo(json.dumps(ConfigFile.model_json_schema(), indent=2))


@click.command("views")
@library_option
@json_option
def views(libraries: tuple[Path, ...], as_json: bool) -> None:
    """Each view, its tools and its cost in tokens."""
    from skillshelf.config.views import all_views
    from skillshelf.server.views import ToolSelection, surface_cost

    settings = _settings(libraries)
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

    settings = _settings(libraries)
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
        with open_library(libraries) as library:
            skill = library.get(name)
            if skill is None:
                raise click.ClickException(f"no tool or skill {name!r} (tools: {', '.join(sorted(own))})")
            rules = view.skill_rules()
            decision = decide_skill(rules, facts_of(skill))
        answer = {"kind": "skill", "name": name, "view": chosen, "shown": decision.kept}
        answer["reason"] = decision.reason(rules)
    if as_json:
        print_json(answer)
        return
    verdict = "shown" if answer["shown"] else "hidden"
    renamed = f" as {answer['exposedAs']}" if answer.get("exposedAs") not in (None, name) else ""
    click.echo(f"{answer['kind']} {name} is {verdict}{renamed} in view {chosen!r}: {answer['reason']}")


COMMANDS = (config_group, views, explain)
