"""`serve --include/--exclude`: tool rules in command-line order, and the one-argument mistake caught.

Click gathers a repeatable option's values per option, losing how `--include` and `--exclude`
interleave; first-match-wins rules need that order, so the command reads it from the arguments.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click

from skillshelf.library.access.rules import Action, Rule, check_rules

FLAG_ACTIONS: tuple[tuple[str, Action], ...] = (("--include", "include"), ("--exclude", "exclude"))
_GLUED = re.compile(r"^--(include|exclude)\s+(.*)$", re.DOTALL)


def glued_flag_message(argument: str) -> str | None:
    """The explanation when one argument holds a flag and its value (a JSON `args` list mistake)."""
    found = _GLUED.match(argument)
    if found is None and not (argument.startswith("--") and " --" in argument):
        return None
    flag, value = (found.group(1), found.group(2).strip()) if found else ("include", "...")
    return (
        f'Malformed argument: "{argument}". A flag and its value must be separate arguments.\n'
        f'  WRONG:   "args": ["serve", "--{flag} {value}"]\n'
        f'  CORRECT: "args": ["serve", "--{flag}", "{value}"]'
    )


def ordered_rules(args: list[str]) -> list[Rule]:
    rules: list[Rule] = []
    for position, argument in enumerate(args):
        if argument == "--":
            break
        for flag, action in FLAG_ACTIONS:
            if argument == flag and position + 1 < len(args):
                rules.append((action, args[position + 1]))
            elif argument.startswith(flag + "="):
                rules.append((action, argument[len(flag) + 1 :]))
    return rules


class RulesCommand(click.Command):
    """A command whose --include/--exclude values keep their order (ctx.meta["tool_rules"])."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        for argument in args:
            if (message := glued_flag_message(argument)) is not None:
                raise click.UsageError(message, ctx)
        rules = ordered_rules(args)
        if problems := check_rules(rules, skills=False):  # the config file's check, with the flag's name
            raise click.UsageError("; ".join(f"--include/--exclude {problem}" for problem in problems), ctx)
        ctx.meta["tool_rules"] = rules
        return super().parse_args(ctx, args)


def rule_options(fn: Any) -> Any:
    fn = click.option(
        "--exclude",
        multiple=True,
        expose_value=False,  # the command reads both flags, in order, from ctx.meta["tool_rules"]
        metavar="GLOB",
        help="Hide tools matching GLOB (repeatable; with --include, the first matching rule decides).",
    )(fn)
    return click.option(
        "--include",
        multiple=True,
        expose_value=False,
        metavar="GLOB",
        help="Show only tools matching GLOB (repeatable, order kept; before the view's own rules).",
    )(fn)


def with_flag_rules(settings: Any, rules: list[Rule]) -> Any:
    """Settings whose served view puts the flags' rules before its own (the flags decide first)."""
    if not rules:
        return settings
    from skillshelf.config.views import FilterRule, resolve_view

    view = resolve_view(settings.view, settings.views, settings.execution.enabled)
    flagged = [FilterRule(include=p) if a == "include" else FilterRule(exclude=p) for a, p in rules]
    served = view.model_copy(update={"tools": [*flagged, *view.tools]})
    return settings.model_copy(update={"views": {**settings.views, settings.view: served}})


def config_reloader(load: Callable[[], Any], rules: list[Rule]) -> Callable[[], Any]:
    """Settings read afresh by `load` (the same flags), the flags' rules first again: the server calls
    it when the config file changes."""
    return lambda: with_flag_rules(load(), rules)
