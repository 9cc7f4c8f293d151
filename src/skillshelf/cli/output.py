"""How the CLI speaks: domain errors turned into click errors once, one output helper (a model, the
`--json` flag, a renderer for people), rich tables for tabular output, and plurals.

Domain messages are written for agents and name tools and their parameters ("call searchPatterns",
"timeoutS"); `cli_message` rewrites those names into the CLI's own commands and flags, so a
curator is told what to type.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click
from pydantic import BaseModel

from skillshelf.errors import SkillshelfError

if TYPE_CHECKING:  # rich is imported where a table is printed: `serve` never needs it (start-up time)
    from rich.console import Console

M = TypeVar("M", bound=BaseModel)

# Tool names and parameters as the CLI spells them, each matched as a whole word.
CLI_WORDS: dict[str, str] = {
    "searchPatterns": "`skillshelf search`",
    "loadSkill": "`skillshelf show`",
    "listCategories": "`skillshelf categories`",
    "executeSkill": "`skillshelf run`",
    "getLibraryStats": "`skillshelf stats`",
    "getPatternReuse": "`skillshelf usage`",
    "searchArtifacts": "`skillshelf sessions`",
    "getNotes": "`skillshelf notes`",
    "timeoutS": "--timeout",
    "dryRun": "--dry-run",
    "includeCode": "--code",
    "minQuality": "--min-quality",
    "projectPath": "PROJECT",
    "skillId": "SKILL_ID",
    "patternId": "SKILL_ID",
}
# Plain words that are also parameter names: rewritten only when quoted as code (`script`).
QUOTED_WORDS: dict[str, str] = {"script": "--script", "args": "--arg", "input": "--input"}
_WORD_RE = re.compile(r"(?<![\w`-])(" + "|".join(map(re.escape, CLI_WORDS)) + r")\b")


def cli_message(message: str) -> str:
    """A domain message in CLI vocabulary: tool names become commands, parameters become flags."""
    text = _WORD_RE.sub(lambda match: CLI_WORDS[match.group(1)], message)
    for word, flag in QUOTED_WORDS.items():
        text = text.replace(f"`{word}`", flag)
    return text


class CliError(click.ClickException):
    """A SkillshelfError as the CLI shows it: the message in CLI words, then the stable code."""

    def __init__(self, exc: SkillshelfError) -> None:
        super().__init__(f"{cli_message(exc.message)} [{exc.code}]")
        self.error = exc

    def show(self, file: Any = None) -> None:
        tail = (self.error.details or {}).get("stderrTail")
        if tail:
            click.echo(str(tail).rstrip(), err=True)
        super().show(file)


class SkillshelfGroup(click.Group):
    """The command group: a SkillshelfError raised anywhere below becomes one clean CLI error."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SkillshelfError as exc:
            raise CliError(exc) from exc


def plural(count: int, word: str, many: str | None = None) -> str:
    """'1 use', '2 uses', '0 categories' (pass the plural when it is not word + 's')."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def print_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))


def model_json(model: BaseModel) -> Any:
    """A tool's data as the tools send it (camelCase, no empty optional fields)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def emit(model: M, as_json: bool, render: Callable[[M], None]) -> None:
    """Print `model` as the tools' JSON with --json, else through `render` for people."""
    if as_json:
        print_json(model_json(model))
    else:
        render(model)


def console() -> Console:
    """A rich console on the current stdout (so CliRunner captures it). Not a terminal: no colour and
    no wrapping at 80 columns, so piped output stays one row per line."""
    from rich.console import Console

    stream = sys.stdout
    terminal = stream.isatty()
    width = None if terminal else max(shutil.get_terminal_size((200, 24)).columns, 200)
    return Console(file=stream, width=width, no_color=not terminal, highlight=False, soft_wrap=False)


def table(columns: Sequence[str], rows: Sequence[Sequence[object]], *, numeric: Sequence[str] = ()) -> None:
    """A table for people: headers and columns aligned whatever the widths; `numeric` columns right-aligned."""
    from rich import box
    from rich.table import Table

    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for name in columns:
        grid.add_column(name, justify="right" if name in numeric else "left", no_wrap=True)
    for row in rows:
        grid.add_row(*(str(cell) for cell in row))
    console().print(grid)
