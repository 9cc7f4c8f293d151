"""How the CLI speaks: domain errors turned into click errors once, one output helper (a model, the
`--json` flag, a renderer for people), rich tables for tabular output, plurals, and `shown`, which
every line printed for people passes a name from a skill or a source through.

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

from skillshelf.catalogue import cli_twins
from skillshelf.errors import SkillshelfError
from skillshelf.library.skill.folder import CONTROL_CHARACTERS

if TYPE_CHECKING:  # rich is imported where a table is printed: `serve` never needs it (start-up time)
    from rich.console import Console

M = TypeVar("M", bound=BaseModel)

# Tool names (each tool's CLI twin, skillshelf/catalogue.py) and parameters as the CLI spells them, each matched
# as a whole word.
CLI_WORDS: dict[str, str] = {
    **cli_twins(),
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
# C0 and C1 controls, DEL, the bidirectional marks and overrides, zero-width characters (the set a name may
# not hold: folder.py):
# text holding them could move the cursor, erase a line ("\x1b[2K\r") or reorder what a curator reads.
_CONTROLS = re.compile(f"[{CONTROL_CHARACTERS}]")
_BEYOND_C0 = re.compile(f"[{CONTROL_CHARACTERS.removeprefix(chr(0) + '-' + chr(0x1F))}]")  # json escapes C0
_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_WORD_RE = re.compile(r"(?<![\w`-])(" + "|".join(map(re.escape, CLI_WORDS)) + r")\b")


def shown(text: object, *, lines: bool = False) -> str:
    """`text` as the terminal may show it: every control character escaped (`\\x1b`, `\\r`, `\\u202e`).

    For anything from a skill or a source (a name, a path, an id, a description, a finding, a review's
    line). `lines=True` keeps newlines and tabs, for a document printed whole.
    """

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        if lines and char in "\n\t":
            return char
        return _NAMED_ESCAPES.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")

    return _CONTROLS.sub(escape, str(text))


def say(line: object, *, err: bool = False) -> None:
    """Print one line that holds a name from a skill or a source, every control character escaped."""
    click.echo(shown(line), err=err)


def cli_message(message: str) -> str:
    """A domain message in CLI vocabulary: tool names become commands, parameters become flags."""
    text = _WORD_RE.sub(lambda match: CLI_WORDS[match.group(1)], message)
    for word, flag in QUOTED_WORDS.items():
        text = text.replace(f"`{word}`", flag)
    return text


class CliError(click.ClickException):
    """A SkillshelfError as the CLI shows it: the message in CLI words, then the stable code."""

    def __init__(self, exc: SkillshelfError) -> None:
        super().__init__(shown(f"{cli_message(exc.message)} [{exc.code}]", lines=True))
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
    """JSON with every control character in a string escaped: json.dumps escapes C0 itself; DEL, C1 and
    the bidirectional marks (found only inside strings) become \\uXXXX."""
    text = json.dumps(value, ensure_ascii=False, indent=2)
    click.echo(_BEYOND_C0.sub(lambda match: f"\\u{ord(match.group()):04x}", text))


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
    from rich.text import Text

    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for name in columns:
        grid.add_column(name, justify="right" if name in numeric else "left", no_wrap=True)
    for row in rows:  # cells as plain text: a name is neither rich markup nor terminal control
        grid.add_row(*(Text(shown(cell)) for cell in row))
    console().print(grid)
