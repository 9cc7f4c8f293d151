"""`skillshelf install`, `uninstall` and `agents`: the library in each agent's own skills folder
(library/agents/, docs/agents.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from skillshelf.cli.common import command_settings, json_option, library_option, opened_app, start_log
from skillshelf.cli.output import print_json, shown
from skillshelf.library.skill.paths import display_path

if TYPE_CHECKING:
    from skillshelf.library.access.reader import SkillReader
    from skillshelf.library.agents.cost import CatalogueCost
    from skillshelf.library.agents.installer import HeldBack, Outcome, ReaderFor, Target
    from skillshelf.library.agents.record import Record
    from skillshelf.server.app import App
    from skillshelf.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")


def _agent_option(required: bool) -> Callable[[F], F]:
    from skillshelf.library.agents.table import AGENTS

    return click.option(
        "--agent",
        "agent_name",
        type=click.Choice(list(AGENTS)),
        required=required,
        help="The agent (`skillshelf agents`).",
    )


def _scope_options(fn: F) -> F:
    fn = click.option(
        "--project",
        type=click.Path(path_type=Path, file_okay=False),
        help="The agent's folder in this project (e.g. DIR/.claude/skills) instead of the user's.",
    )(fn)
    return click.option("--user", is_flag=True, help="The agent's folder in your home folder (the default).")(fn)


@click.command("install", short_help="Install the library's skills into an agent's own skills folder.")
@_agent_option(required=False)
@_scope_options
@click.option("--view", help="Install the skills this view shows (read through the view, as served).")
@click.option("--only", multiple=True, metavar="GLOB", help="Only skills whose id or name matches (repeatable).")
@click.option("--link/--copy", default=False, help="Link Agent Skills folders where the agent follows links.")
@click.option("--force", is_flag=True, help="Replace a folder skillshelf did not put there, or an edited copy.")
@click.option("--dry-run", is_flag=True, help="Say what would be installed and what it costs; write nothing.")
@click.option("--check", is_flag=True, help="List every install that drifted (exit 1 when any did).")
@click.option("--sync", "do_sync", is_flag=True, help="Bring every install up to date with the library.")
@library_option
@json_option
def install(
    agent_name: str | None,
    user: bool,
    project: Path | None,
    view: str | None,
    only: tuple[str, ...],
    link: bool,
    force: bool,
    dry_run: bool,
    check: bool,
    do_sync: bool,
    libraries: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Install the library's skills into an agent's skills folder (--agent NAME), or check (--check) or
    sync (--sync) what was installed before. Three-file skills become SKILL.md folders; Codex and any
    agent not known to follow links get copies. Before installing, says what the skills cost the
    agent's catalogue against its budget. docs/agents.md has the agents, their folders and budgets."""
    if check or do_sync:
        if check and do_sync:
            raise click.UsageError("pass --check or --sync, not both")
        _check_or_sync(libraries, agent_name, sync=do_sync, force=force, as_json=as_json)
        return
    if agent_name is None:
        raise click.UsageError("pass --agent NAME (`skillshelf agents` lists them), or --check or --sync")
    if user and project is not None:
        raise click.UsageError("pass --user or --project DIR, not both")
    settings = command_settings(libraries)
    target = _target(agent_name, project)
    with _readers(settings) as reader_for:
        _install(
            settings, target, reader_for(view), view, only, link=link, force=force, dry_run=dry_run, as_json=as_json
        )


def _install(
    settings: Settings,
    target: Target,
    reader: SkillReader,
    view: str | None,
    only: tuple[str, ...],
    *,
    link: bool,
    force: bool,
    dry_run: bool,
    as_json: bool,
) -> None:
    from skillshelf.library.agents.installer import Request, choose
    from skillshelf.library.agents.installer import install as install_skills

    chosen, refused = _domain(lambda: choose(reader, only))
    with _updating(settings) as record:
        cost = _cost(record, target, [c.listed for c in chosen])
        outcomes: list[Outcome] = list(refused)
        if not dry_run:
            request = Request(target, view=view, link=_may_link(settings, link), force=force)
            outcomes = _domain(lambda: install_skills(record, reader, chosen, request)) + outcomes
    serve_tokens = _agent_view_tokens(settings) if cost.over else None
    _report(target, cost, serve_tokens, outcomes, dry_run=dry_run, as_json=as_json, planned=[c.name for c in chosen])
    _exit_if_left(outcomes)


def _may_link(settings: Settings, link: bool) -> bool:
    """`--link`, unless only approved bytes are served: a link shows the folder's later edits, approved or not."""
    if link and settings.serves_only_approved():
        click.echo(
            "note: --link is not used with require_verified or require_signed: copies of the approved bytes", err=True
        )
        return False
    return link


def _exit_if_left(outcomes: list[Outcome]) -> None:
    """Exit 1 when a skill was left as it was (a name not ours, an edited copy, one held back): as `update`
    does, so a script sees it."""
    if any(o.action in ("refused", "kept", "held") for o in outcomes):
        sys.exit(1)


def _cost(record: Record, target: Target, planned: list[Any]) -> CatalogueCost:
    """The agent's catalogue once these are in: what is planned, plus what skillshelf installed there before."""
    from skillshelf.library.agents.cost import Listed, catalogue_cost

    names = {p.name for p in planned}
    before = [Listed(i.name, i.description_chars) for i in record.of(target.agent.name, target.folder)]
    return catalogue_cost(target.agent, planned + [b for b in before if b.name not in names])


def _report(
    target: Target,
    cost: CatalogueCost,
    serve_tokens: int | None,
    outcomes: list[Outcome],
    *,
    dry_run: bool,
    as_json: bool,
    planned: list[str],
) -> None:
    if as_json:
        print_json(
            {
                "agent": target.agent.name,
                "folder": str(target.folder),
                "dryRun": dry_run,
                "planned": planned,
                "cost": cost.to_dict(),
                "serveTokens": serve_tokens,
                "outcomes": [{"name": o.name, "action": o.action, "detail": o.detail} for o in outcomes],
            }
        )
        return
    for line in cost.lines():
        click.echo(shown(line))
    if serve_tokens is not None:
        click.echo(
            f"serve the rest by search instead: `skillshelf serve` (the agent view) costs ~{serve_tokens:,} tokens "
            "whatever the library's size; install only the skills used in every session (--only GLOB)"
        )
    where = display_path(target.folder)
    if dry_run:
        click.echo(f"would install {len(planned)} skills into {where} (dry run: nothing written)")
    for outcome in outcomes:
        click.echo(shown(f"{outcome} ({where})" if outcome.action != "skipped" else str(outcome)))


@click.command("uninstall", short_help="Remove what `skillshelf install` put in an agent's skills folder.")
@_agent_option(required=True)
@_scope_options
@click.option("--only", multiple=True, metavar="GLOB", help="Only skills whose id or name matches (repeatable).")
@click.option("--force", is_flag=True, help="Also remove files someone edited or added in an installed skill.")
@json_option
def uninstall(
    agent_name: str, user: bool, project: Path | None, only: tuple[str, ...], force: bool, as_json: bool
) -> None:
    """Remove the skills skillshelf installed for an agent, and the folders it made for them; a folder
    skillshelf did not create is never touched, and an edited copy keeps the edits unless --force."""
    from skillshelf.library.agents.installer import uninstall as uninstall_skills

    if user and project is not None:
        raise click.UsageError("pass --user or --project DIR, not both")
    settings = command_settings()
    target = _target(agent_name, project)
    with _updating(settings) as record:
        outcomes = uninstall_skills(record, target, only, force=force)
    if as_json:
        print_json([{"name": o.name, "action": o.action, "detail": o.detail} for o in outcomes])
        return
    if not outcomes:
        click.echo(f"nothing skillshelf installed for {agent_name} in {display_path(target.folder)}")
    for outcome in outcomes:
        click.echo(shown(f"{outcome} ({display_path(target.folder)})"))


@click.command("agents", short_help="The agents `install` knows: their folders, links, budgets.")
@json_option
def agents(as_json: bool) -> None:
    """Each agent `skillshelf install --agent` installs into: its user and project skills folders,
    whether it gets links or copies, and its catalogue budget (docs/agents.md)."""
    from skillshelf.library.agents.table import AGENTS

    rows = [
        {
            "agent": a.name,
            "user": a.user.shown(),
            "project": a.project,
            "links": a.follows_links,
            "budgetChars": a.budget.chars,
            "descriptionChars": a.budget.entry_chars,
            "source": a.source,
        }
        for a in AGENTS.values()
    ]
    if as_json:
        print_json(rows)
        return
    for agent in AGENTS.values():
        budget = f"{agent.budget.chars:,} characters ({agent.budget.note})" if agent.budget.chars else "none documented"
        click.echo(f"{agent.name}: {agent.user.shown()} | DIR/{agent.project}; {agent.link_note()}; budget {budget}")


# -- check and sync ------------------------------------------------------------------------------------
def _check_or_sync(libraries: tuple[Path, ...], agent: str | None, *, sync: bool, force: bool, as_json: bool) -> None:
    from skillshelf.library.agents.installer import drift
    from skillshelf.library.agents.installer import sync as sync_installs

    settings = command_settings(libraries)
    record = _read_record(settings)
    if not record.of(agent):
        click.echo("nothing installed" + (f" for {agent}" if agent else "") + "; `skillshelf install --agent NAME`")
        return
    with opened_app(settings) as app:
        reader_for, held = readers_of(app), held_back_of(app)
        if sync:
            with _updating(settings) as current:  # read again under the lock: an install may have run since
                outcomes = _domain(lambda: sync_installs(current, reader_for, agent, force=force, held_back=held))
            _print_outcomes(outcomes, as_json, "every install is up to date")
            _exit_if_left(outcomes)
            return
        found = [d for d in drift(record, reader_for, agent, held_back=held) if not d.current]
    if as_json:
        print_json(
            [
                {
                    "agents": d.install.agents,
                    "path": str(d.install.path),
                    "library": d.library,
                    "edits": d.edits,
                    "heldBack": d.held,
                }
                for d in found
            ]
        )
    else:
        for d in found:
            said = [d.library] if d.library else []
            said += [f"edited here ({', '.join(d.edits)})"] if d.edits else []
            click.echo(shown(f"{', '.join(d.install.agents)} {display_path(d.install.path)}: {'; '.join(said)}"))
        if not found:
            click.echo("every install is up to date")
    if found:
        sys.exit(1)


def _print_outcomes(outcomes: list[Outcome], as_json: bool, none: str) -> None:
    if as_json:
        print_json([{"name": o.name, "action": o.action, "detail": o.detail} for o in outcomes])
        return
    for outcome in outcomes:
        click.echo(shown(str(outcome)))
    if not outcomes:
        click.echo(none)


# -- shared ----------------------------------------------------------------------------------------------
def _target(agent_name: str, project: Path | None) -> Target:
    from skillshelf.library.agents.installer import Target
    from skillshelf.library.agents.table import agent_named

    return _domain(lambda: Target.of(agent_named(agent_name), project))


@contextmanager
def _readers(settings: Settings) -> Iterator[ReaderFor]:
    """The library, read as a view reads it (`--view NAME`) or whole (None)."""
    with opened_app(settings) as app:
        yield readers_of(app)


def readers_of(app: App) -> ReaderFor:
    """The reader of each view of the app's library (the App makes each once), or of the whole library (None)."""
    views = app.views()

    def reader_for(view: str | None) -> SkillReader:
        if view is not None and view not in views:
            raise click.UsageError(f"no view {view!r}; the views: {', '.join(sorted(views))}")
        return app.reader(view)

    return reader_for


def held_back_of(app: App) -> HeldBack | None:
    """Why require_verified or require_signed hold a skill back (None: served); None when neither is set,
    so `install --check`/`--sync` tell a held-back skill from one gone from the library."""
    from skillshelf.library.access.reader import ViewReader

    if not app.settings.serves_only_approved():
        return None
    served = app.reader(None)  # the reader `readers_of` gives: its gate is worked out once for both
    visibility = served.visibility if isinstance(served, ViewReader) else app.served_reader().visibility

    def held_back(skill_id: str) -> str | None:
        finding = visibility.held_back(skill_id)
        return finding.message if finding is not None else None

    return held_back


def keep_installed(app: App) -> None:
    """`serve --keep-installed`: after each change the watcher finds, the installs of the app's library's
    skills are brought up to date (library/agents/installer.py `keeper`)."""
    from skillshelf.library.agents.installer import keeper

    settings = app.settings
    if not settings.keep_installed:
        return
    if not settings.watch:
        start_log.warning("--keep-installed needs the library watched; with --no-watch installs stay as they are")
        return
    roots = list(app.library.roots)
    app.library.add_change_listener(keeper(settings.state_dir, readers_of(app), roots, held_back_of(app)))
    start_log.info("keeping the skills installed in agents' folders current (`skillshelf install --check`)")


def _agent_view_tokens(settings: Settings) -> int:
    """What serving the agent view costs a session (its tools/list and instructions), measured."""
    from skillshelf.cli.config import tool_catalogue
    from skillshelf.config.views import all_views
    from skillshelf.server.views import ToolSelection, surface_cost

    view = all_views(settings.views, settings.execution.enabled)["agent"]
    with tool_catalogue(settings) as tools:
        return surface_cost(ToolSelection.of("agent", view, tools)).total_tokens


def agents_reached(folder: Path) -> str | None:
    """For `update` and `sources`: which agents have skills of `folder` (a source's) installed, or None.
    Only a hint: a record that cannot be read says nothing here (`install --check` reports it)."""
    from skillshelf.library.agents.record import RecordError, reach_line, read_record

    try:
        return reach_line(read_record(command_settings().state_dir), folder)
    except RecordError:
        return None


def _read_record(settings: Settings) -> Record:
    from skillshelf.library.agents.record import read_record

    return _domain(lambda: read_record(settings.state_dir))


@contextmanager
def _updating(settings: Settings) -> Iterator[Record]:
    """The install record for a change, under its lock (record.updating), its errors as click errors."""
    from skillshelf.library.agents.record import RecordError, updating

    try:
        with updating(settings.state_dir) as record:
            yield record
    except RecordError as exc:
        raise click.ClickException(str(exc)) from None


def _domain(call: Callable[[], T]) -> T:
    """Domain errors as click errors (their message says what to fix)."""
    from skillshelf.library.agents.installer import InstallError
    from skillshelf.library.agents.record import RecordError
    from skillshelf.library.agents.table import UnknownAgentError

    try:
        return call()
    except (InstallError, RecordError, UnknownAgentError) as exc:
        raise click.ClickException(str(exc)) from None


COMMANDS = (install, uninstall, agents)
