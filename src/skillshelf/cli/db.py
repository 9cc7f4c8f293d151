"""`skillshelf db`: the shared PostgreSQL database of `database_url` (docs/deploy.md): `migrate` brings its
schema up to date, `status` says where it is and whether it answers, `import` moves the embedded usage
history and notes files into it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from skillshelf.cli.common import announce_roots, command_settings, json_option, library_option
from skillshelf.cli.output import plural, print_json
from skillshelf.cli.setting_flags import setting_flags
from skillshelf.library.skill.paths import display_path

if TYPE_CHECKING:
    from skillshelf.settings import Settings


@click.group("db")
def db() -> None:
    """The shared PostgreSQL database."""


def _url(settings: Settings) -> str:
    if settings.database_url is None:
        raise click.ClickException(
            "database_url is not set: pass --database-url postgresql://USER:PASSWORD@HOST:PORT/DB, or set "
            "SKILLSHELF_DATABASE_URL or `database_url` in the config file (docs/deploy.md)"
        )
    return settings.database_url


@db.command("migrate")
@setting_flags("database_url")
@json_option
def migrate_command(as_json: bool) -> None:
    """Create or upgrade the database's schema (servers do this on start too; safe to run any time)."""
    from skillshelf.state.postgres.status import migrate_now

    done = migrate_now(_url(command_settings()))
    shown, before, version = done["database"], done["before"], done["schemaVersion"]
    if as_json:
        print_json(done)
    elif before == version:
        click.echo(f"{shown}: schema already at version {version}")
    else:
        click.echo(f"{shown}: schema at version {version} (was {before or 'empty'})")


@db.command("status")
@setting_flags("database_url")
@json_option
def status_command(as_json: bool) -> None:
    """Where the database is (without its password), whether it answers, and its schema version.
    Exit status 1 when it does not answer or its schema is not current."""
    from skillshelf.state.postgres.status import database_status

    status = database_status(_url(command_settings()))
    if as_json:
        print_json(status)
    else:
        click.echo(f"database: {status['database']}")
        click.echo(f"reachable: {'yes' if status['reachable'] else 'no (' + str(status['error']) + ')'}")
        if status["reachable"]:
            click.echo(
                f"schema: version {status['schemaVersion']} (this skillshelf: {status['latest']}){_hint(status)}"
            )
    if not status["reachable"] or status["schemaVersion"] != status["latest"]:
        raise SystemExit(1)


def _hint(status: dict[str, Any]) -> str:
    """What to do about a schema that is not this skillshelf's."""
    if status["schemaVersion"] < status["latest"]:
        return "; run `skillshelf db migrate` to bring it up to date (a server does so on start too)"
    if status["schemaVersion"] > status["latest"]:
        return "; a newer skillshelf migrated it: upgrade skillshelf here"
    return ""


@db.command("import")
@library_option
@setting_flags("database_url", "projects")
@click.option(
    "--usage-file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The embedded usage history to import. Default: the library's (its .skillshelf/usage.sqlite3).",
)
@click.option("--no-usage", is_flag=True, help="Import the notes only.")
@click.option("--no-notes", is_flag=True, help="Import the usage history only.")
@json_option
def import_command(
    libraries: tuple[Path, ...], usage_file: Path | None, no_usage: bool, no_notes: bool, as_json: bool
) -> None:
    """Copy the embedded usage history and every project's notes file into the database. Idempotent:
    run it again (after more use of the embedded stores, or after an interruption) and only what is
    missing is added. The embedded files are only read, never changed."""
    from skillshelf.state.postgres.database import database
    from skillshelf.state.postgres.notes import import_notes
    from skillshelf.state.postgres.usage import import_events

    settings = command_settings(libraries)
    url = _url(settings)
    if not no_usage and usage_file is None:
        _check_served_library(settings)
    shown = database(url).shown  # unreachable: a clear error before anything is read
    report: dict[str, Any] = {"database": shown}
    if not no_usage:
        path = usage_file or embedded_usage_path(settings)
        if usage_file is None and not path.is_file():  # a library never used: only its notes to import
            report["usage"] = {"file": str(path), "read": 0, "added": 0, "found": False, "library": _roots(settings)}
        else:
            events = import_events(url, path)  # a --usage-file that does not exist is an error
            report["usage"] = {"file": str(path), "read": events.read, "added": events.added}
    if not no_notes:
        report["notes"] = []
        for project, notes_file in notes_files(settings):
            found = import_notes(url, project, notes_file)
            report["notes"].append(
                {"project": project, "read": found.read, "added": found.added, "skippedLines": found.skipped_lines}
            )
    if as_json:
        print_json(report)
        return
    _print_import(report)


def _check_served_library(settings: Settings) -> None:
    """The library whose usage history is imported is found as `serve` finds it (--library, then
    SKILLSHELF_LIBRARY, then `library` in the config file); the bundled examples have none worth importing."""
    if settings.using_bundled:
        raise click.ClickException(
            "no library configured: `db import` reads the usage history of the library you serve; pass it as "
            "you pass it to serve (--library PATH, SKILLSHELF_LIBRARY or `library` in the config file), or "
            "--usage-file FILE, or --no-usage to import the notes only"
        )
    announce_roots(settings.roots, settings.using_bundled)  # a root that is no folder: the error serve gives


def _roots(settings: Settings) -> list[str]:
    return [display_path(root) for root in settings.roots]


def _print_import(report: dict[str, Any]) -> None:
    click.echo(f"into {report['database']}:")
    if "usage" in report:
        usage = report["usage"]
        where = display_path(Path(usage["file"]))
        if usage.get("found", True):
            click.echo(f"  usage: {plural(usage['added'], 'event')} added of {usage['read']} in {where}")
        else:
            library = ", ".join(usage["library"])
            click.echo(f"  usage: nothing to import: the library at {library} has no usage history ({where})")
    for notes in report.get("notes", []):
        skipped = f"; unreadable lines left out: {notes['skippedLines']}" if notes["skippedLines"] else ""
        click.echo(f"  notes of {notes['project']}: {plural(notes['added'], 'note')} added of {notes['read']}{skipped}")
    if "notes" in report and not report["notes"]:
        click.echo("  notes: no project under the project roots has a notes file")


def embedded_usage_path(settings: Settings) -> Path:
    """The usage history the library's servers write without database_url."""
    from skillshelf.library.index.places import LibraryConfig, choose_state_dir
    from skillshelf.library.usage.store import USAGE_FILE

    config = settings.library_config()
    roots = [r.expanduser().resolve() if r.exists() else r.expanduser() for r in config.roots]
    return choose_state_dir(LibraryConfig(**{**config.__dict__, "roots": roots})) / USAGE_FILE


def notes_files(settings: Settings) -> list[tuple[str, Path]]:
    """(project name, notes file) of every project folder directly under the project roots that has one;
    a name in two roots is the first root's, as the memory tools resolve it."""
    from skillshelf.memory.notes import NOTES_RELATIVE, notes_path
    from skillshelf.projects import Project

    found: dict[str, Path] = {}
    for root in settings.projects().roots:
        for candidate in sorted(root.glob(f"*/{NOTES_RELATIVE}")):
            project = Project(name=candidate.parents[1].name, path=candidate.parents[1], root=root)
            if project.name not in found:
                found[project.name] = notes_path(project)  # ACCESS_DENIED for a link out of the project
    return sorted(found.items())
