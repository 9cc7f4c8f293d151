"""`skillshelf export DIR`: a view's skills with the Agent Skills discovery index and digests, as files for a
static host or a release; the same set `serve --http` publishes under `/.well-known/` (one builder:
library/access/publish.py). docs/publishing.md."""

from __future__ import annotations

from pathlib import Path

import click

from skillshelf.cli.common import command_settings, library_option, opened_app
from skillshelf.cli.output import plural, shown
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.skill.paths import display_path


@click.command(short_help="Write a view's skills and their discovery index to a folder.")
@library_option
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--view", "view", default=None, help="The view to export (default: the one `serve` serves).")
@click.option(
    "--format",
    "form",
    type=click.Choice(["folders", "zip"]),
    default="folders",
    show_default=True,
    help="folders: the .well-known tree a static host serves as it is; zip: index.json and one NAME.zip "
    "per skill side by side, for a release.",
)
def export(libraries: tuple[Path, ...], directory: Path, view: str | None, form: str) -> None:
    """Write the skills VIEW publishes into DIRECTORY (new or empty), with the Agent Skills discovery
    index (v0.2.0 `.well-known/agent-skills/index.json` and v0.1.0 `.well-known/skills/index.json`) and
    each artifact's sha256 digest. A skill that does not follow the Agent Skills rules is left out and
    `skillshelf check` says why."""
    from skillshelf.config.views import resolve_view
    from skillshelf.library.access import publish

    target = directory.expanduser()
    if target.exists() and any(target.iterdir()):
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"{display_path(target)} is not empty; export into a new or empty folder (it never overwrites).",
        )
    settings = command_settings(libraries)
    resolve_view(view or settings.view, settings.views, settings.execution.enabled)  # an unknown view fails first
    with opened_app(settings) as app:
        reader = app.reader(view or settings.view)
        written = publish.export(reader, target, "zip" if form == "zip" else "folders")
    index = target / (publish.INDEX if form == "zip" else f"{publish.V2_DIR}/{publish.INDEX}")
    click.echo(f"{plural(len(written), 'skill')} exported to {shown(display_path(target))}")
    click.echo(f"index: {shown(display_path(index))}")
