"""What every command shares: logging, the library and JSON options, the settings of a command, and the
library opened as the curator reads it (with index progress on a terminal)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from skillshelf.cli.setting_flags import given_flags
from skillshelf.library.skill.paths import display_path

if TYPE_CHECKING:
    from skillshelf.library.access.reader import LibraryReader
    from skillshelf.server.app import App
    from skillshelf.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])
logger = logging.getLogger("skillshelf")
start_log = logging.getLogger("skillshelf.start")  # start-up lines, shown by default


def configure_logging(verbose: int) -> None:
    """Logs go to stderr (stdout is the protocol). -v/-vv raise skillshelf's own verbosity only:
    libraries such as markdown-it log every parsing step at debug level."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="skillshelf %(levelname)s %(name)s: %(message)s", force=True
    )
    logging.getLogger("skillshelf").setLevel(level)
    start_log.setLevel(min(level, logging.INFO))
    logging.getLogger("skillshelf.audit").setLevel(min(level, logging.INFO))  # the audit hook's lines, shown


def _remember_allow_missing(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    ctx.meta["skillshelf.allow_missing"] = value


def library_option(fn: F) -> F:
    fn = click.option(
        "--allow-missing",
        is_flag=True,
        expose_value=False,
        callback=_remember_allow_missing,
        help="Accept library roots that do not exist (yet); without it a missing root is an error.",
    )(fn)
    return click.option(
        "--library",
        "-l",
        "libraries",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Library root (repeatable; the first wins a name collision). Default: $SKILLSHELF_LIBRARY, then "
        "`library` in the config file (~/.config/skillshelf/config.toml), then ~/.shared-patterns, then the "
        "bundled examples.",
    )(fn)


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print the tools' JSON instead of text.")(fn)


def settings_loader(libraries: tuple[Path, ...] = (), **defaults: Any) -> Callable[[], Settings]:
    """Settings from this command's flags (`defaults` where the command line says nothing), the
    environment and the config file; read afresh at each call (`serve` reloads with it)."""
    from skillshelf.settings import resolve_settings

    context = click.get_current_context(silent=True)
    config = config_flag(context)
    flags = {**defaults, **given_flags(context)}
    return lambda: resolve_settings(libraries, config_path=config, **flags)


def command_settings(libraries: tuple[Path, ...] = (), **defaults: Any) -> Settings:
    """The settings of this command (see `settings_loader`), read once."""
    return settings_loader(libraries, **defaults)()


def config_flag(context: click.Context | None = None) -> Path | None:
    """`skillshelf --config FILE`, if given."""
    context = context or click.get_current_context(silent=True)
    root = context.find_root().obj if context else None
    return root.get("config") if root else None


@contextmanager
def open_library(libraries: tuple[Path, ...], *, watch: bool = False) -> Iterator[LibraryReader]:
    with opened_library(command_settings(libraries, watch=watch)) as library:
        yield library


@contextmanager
def opened_library(settings: Settings) -> Iterator[LibraryReader]:
    """The library of these settings, synced (with progress on a terminal), closed on exit, read as the
    curator reads it: every skill, under the same file rules as a server."""
    with opened_app(settings) as app:
        yield app.curator


@contextmanager
def opened_app(settings: Settings) -> Iterator[App]:
    """The application of these settings (server/app.py, the composition root) with its library synced
    (progress on a terminal); what it opened is closed on exit. A library command builds no server and
    imports no MCP."""
    from skillshelf.server.app import App

    announce_roots(settings.roots, settings.using_bundled)
    with App(settings) as app:
        progress = index_progress()
        app.library.add_progress_listener(progress)
        app.library.sync()
        progress.done()
        yield app


def announce_roots(roots: list[Path], using_bundled: bool) -> None:
    if using_bundled:
        logger.warning(
            "no library configured and ~/.shared-patterns does not exist: serving the bundled examples "
            "(create one with `skillshelf init`, or pass --library PATH)"
        )
    if not roots:
        raise click.ClickException("no library roots; pass --library PATH")
    context = click.get_current_context(silent=True)
    allow_missing = bool(context and context.meta.get("skillshelf.allow_missing"))
    missing = [r for r in roots if not r.expanduser().is_dir()]
    if missing and not allow_missing:
        names = ", ".join(display_path(r) for r in missing)
        raise click.UsageError(
            f"library root {names} is not a folder. Check --library, $SKILLSHELF_LIBRARY or `library` in the "
            "config file, or pass --allow-missing to use it anyway."
        )


class Progress:
    """Progress of a long pass for people: a live line on a terminal (stderr), else one log line.

    Only a pass worth waiting for shows anything: re-syncs of a few changed files stay silent."""

    THRESHOLD = 200  # items before progress is worth showing

    def __init__(self, doing: str, noun: str, note: str) -> None:
        self.doing, self.noun, self.note = doing, noun, note  # note: said once in the log, off a terminal
        self.terminal = sys.stderr.isatty()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if total < self.THRESHOLD:
            return
        if self.terminal:
            sys.stderr.write(f"\r{self.doing}: {done}/{total} {self.noun}")
            sys.stderr.flush()
            self.shown = True
        elif not self.shown:
            start_log.info("%s: %d %s", self.doing, total, self.note)
            self.shown = True

    def done(self) -> None:
        if self.terminal and self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()
        self.shown = False


def index_progress() -> Progress:
    return Progress("indexing the library", "skills", "skills to parse (a first index takes a moment)")


def check_progress() -> Progress:
    return Progress("checking", "skills", "skills to check")
