"""Authoring commands: `skillshelf new` starts a skill from a scaffold, `skillshelf doc` writes the library as
a markdown table for a repository's README or AGENTS.md."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from skillshelf.cli.common import command_settings, library_option, open_library
from skillshelf.cli.output import shown
from skillshelf.library.atomic import write_atomically
from skillshelf.library.skill.paths import display_path
from skillshelf.library.skill.scaffold import (
    LAYOUTS,
    SCRIPTS,
    LayoutChoice,
    Scaffold,
    ScriptChoice,
    is_placeholder_description,
)

if TYPE_CHECKING:
    from skillshelf.library.access.reader import SkillReader

LOCAL = "local"  # the source column of a skill no `skillshelf add` installed


@click.command(name="new", short_help="Start a new skill from a scaffold.")
@click.argument("skill_id", metavar="CATEGORY/NAME")
@click.option(
    "--layout",
    type=click.Choice(LAYOUTS),
    default="folder",
    show_default=True,
    help="An Agent Skills folder (NAME/SKILL.md), or three files (NAME.md, NAME-SKILL.md, NAME.py).",
)
@click.option(
    "--script",
    type=click.Choice(SCRIPTS),
    help="Add a runnable script: JSON in on standard input, JSON out (three-file: a py or js function).",
)
@click.option(
    "--library",
    "-l",
    "library",
    type=click.Path(path_type=Path, file_okay=False),
    help="The library root to write into. Default: the first configured root.",
)
def new(skill_id: str, layout: LayoutChoice, script: ScriptChoice | None, library: Path | None) -> None:
    """Write the skill CATEGORY/NAME from a scaffold that `skillshelf check` passes with no error (it warns of
    the placeholder text until it is written).

    Every place to fill in says TODO. Nothing is overwritten: an existing skill or file of that name
    stops it.
    """
    from skillshelf.library.skill.discovery import discover
    from skillshelf.library.skill.scaffold import write_scaffold

    root, roots = _target_root(library)
    found = discover(roots).sources
    written = write_scaffold(root, skill_id, layout, script, taken=frozenset(s.skill_id for s in found))
    namesakes = sorted(s.skill_id for s in found if s.name == skill_id.rsplit("/", 1)[-1])
    _report(written, layout, namesakes)
    _say_if_inside_a_source(root, written.skill_id)


def _target_root(library: Path | None) -> tuple[Path, list[Path]]:
    """The root to write into, and every root whose ids it must not collide with."""
    if library is not None:
        root = library.expanduser()
        return root, [root]
    settings = command_settings()
    if settings.using_bundled or not settings.roots:
        raise click.UsageError(
            "no library configured (the bundled examples are read-only): pass --library ROOT, or create one "
            "with `skillshelf init`"
        )
    return settings.roots[0], list(settings.roots)


def _report(written: Scaffold, layout: str, namesakes: list[str]) -> None:
    root = display_path(written.root)
    click.echo(f"Created {written.skill_id} ({layout}) in {root}:")
    for path in written.files:
        click.echo(f"  {path}")
    where = f"{root}/{written.files[-1] if layout == 'three-file' else Path(written.files[0]).parent}"
    click.echo("Fill in every TODO, then:")
    click.echo(f"  skillshelf check {where}")
    if written.script:
        click.echo(f'  skillshelf run {written.skill_id} --library {root} --input \'{{"text": "hello"}}\'')
    if layout != "three-file":
        click.echo(f"  skillshelf eval --library {root}   (runs the requests in evals/eval_queries.json)")
    if namesakes:
        click.echo(
            f"note: {', '.join(namesakes)} has the same name; `skillshelf check` of the library reports them as "
            "near-duplicates until one is renamed",
            err=True,
        )


def _say_if_inside_a_source(root: Path, skill_id: str) -> None:
    """A skill written into an installed source's folder is the curator's, not the source's: `sources`
    lists it as a local edit. Say so now rather than let that listing surprise them."""
    from skillshelf.library.sources.errors import SourceError
    from skillshelf.library.sources.local import ADDED
    from skillshelf.library.sources.lock import lock_path, read_lock

    category = skill_id.split("/", 1)[0]
    try:
        source = read_lock(lock_path(root)).sources.get(category)
    except SourceError:  # a broken lock is `skillshelf sources`' to report, not new's
        return
    if source is not None:
        click.echo(
            f"note: {category}/ is the folder of the installed source {category!r} ({source.kind} {source.url}): "
            f"`skillshelf sources` lists {skill_id} as a local edit ({ADDED}), and updates of {category} keep it. "
            "To keep your skills apart from the source, use another category.",
            err=True,
        )


@click.command(short_help="The library as a markdown table, for a README or AGENTS.md.")
@library_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the table to FILE (replaced whole, never half-written) instead of standard output.",
)
def doc(libraries: tuple[Path, ...], out: Path | None) -> None:
    """Print the library as a markdown table: id, description, tokens to load, quality and source, one
    row per skill in id order (the same library gives the same bytes)."""
    with open_library(libraries) as reader:
        text, unfinished = library_table(reader)
        count = reader.count() - len(unfinished)
    if unfinished:
        click.echo(
            f"note: left out {', '.join(unfinished)}: still the placeholder description of `skillshelf new` "
            "(`skillshelf check` lists what is left to write)",
            err=True,
        )
    if out is None:
        click.echo(text, nl=False)
        return
    write_out(out.expanduser(), text)
    click.echo(f"Wrote {display_path(out.expanduser())} ({count} skills)", err=True)


def library_table(reader: SkillReader) -> tuple[str, list[str]]:
    """The markdown table of every skill `reader` shows, sorted by id; the source as loadSkill says it. A
    skill whose description is still the scaffold's is left out (the second value names them): the table
    is published to people and agents, and a row reading "TODO: say in one or two sentences..." tells
    them nothing, while the skill's row appears as soon as its description is written."""
    rows, unfinished = [], []
    for skill in sorted(reader.overview(), key=lambda s: s.id):
        if is_placeholder_description(skill.summary):
            unfinished.append(skill.id)
            continue
        found = reader.provenance(skill)
        source = found.brief if found is not None else LOCAL
        cells = [cell(skill.id), cell(skill.summary), f"{skill.tokens:,}", f"{skill.quality:.1f}", cell(source)]
        rows.append("| " + " | ".join(cells) + " |")
    left_out = f"; {len(unfinished)} unfinished left out" if unfinished else ""
    header = [
        f"<!-- {len(rows)} skills{left_out}; written by `skillshelf doc`, regenerate rather than edit -->",
        "| id | description | tokens | quality | source |",
        "|---|---|--:|--:|---|",
    ]
    return "\n".join(header + rows) + "\n", unfinished


def cell(text: str) -> str:
    """One table cell: one line, control characters and pipes escaped, no HTML tag a renderer would act on."""
    line = shown(" ".join(text.split()))
    return line.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def write_out(path: Path, text: str) -> None:
    """`--out`: replace `path` with `text` whole (library/atomic.py), its permissions kept."""
    if not path.parent.is_dir():
        raise click.UsageError(f"--out: the folder {display_path(path.parent)} does not exist")
    write_atomically(path, text)
