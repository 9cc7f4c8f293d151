"""The `skillshelf` command: serve the library over MCP and curate it from a terminal.

Every command calls the same services as the MCP tools; `--json` prints their wire form.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

import click

from skillshelf import __version__
from skillshelf.cli.common import (
    check_progress,
    command_settings,
    configure_logging,
    json_option,
    library_option,
    open_library,
    opened_app,
    opened_library,
)
from skillshelf.cli.output import SkillshelfGroup, emit, model_json, plural, print_json, say, shown, table
from skillshelf.cli.setting_flags import setting_flags
from skillshelf.library.skill.models import SEVERITY_WORDS, Finding, count_of
from skillshelf.library.skill.paths import display_path
from skillshelf.memory.service import NOTE_TYPES

if TYPE_CHECKING:
    from skillshelf.library.semantic.vectors import SemanticIndex

SEMANTIC_WAIT_S = 10.0  # how long `search` waits for semantic search to catch up (docs/search.md)


class _Commands(SkillshelfGroup):
    """The command group; a reader that stops reading (`skillshelf show ID | head`) ends any command quietly,
    with success (click's own handling exits 1)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _stop_on_broken_pipe()


def _stop_on_broken_pipe() -> NoReturn:
    """Nothing more can reach the reader: point stdout at /dev/null, so that Python's flush at exit does
    not fail a second time (a traceback, exit 120), and end with success."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="skillshelf")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="TOML config file (default: $SKILLSHELF_CONFIG, then ~/.config/skillshelf/config.toml if present).",
)
@click.pass_context
def cli(ctx: click.Context, verbose: int, config: Path | None) -> None:
    """Serve a filesystem library of reusable skills to AI agents, and curate it."""
    configure_logging(verbose)
    ctx.obj = {"config": config}


@cli.command(short_help="Browse the library in a web browser (read-only).")
@library_option
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port on 127.0.0.1.")
@setting_flags("watch")
def web(libraries: tuple[Path, ...], port: int) -> None:
    """Browse the library in a web browser: search, skill pages, charts (read-only, on 127.0.0.1)."""
    from skillshelf.server.web import serve_web

    with opened_app(command_settings(libraries, watch=True)) as app:
        serve_web(app.web_app, port)


@cli.command(short_help="Search skills by what they are for.")
@library_option
@json_option
@click.argument("query", nargs=-1)
@click.option("--category", "-c", help="Only this category.")
@click.option(
    "--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 50), help="Most hits to show (1-50)."
)
@click.option("--min-quality", type=click.FloatRange(0, 10), help="Only skills scoring at least this (0-10).")
@click.option("--executable/--docs-only", default=None, help="Only skills with (or without) code.")
def search(
    libraries: tuple[Path, ...],
    as_json: bool,
    query: tuple[str, ...],
    category: str | None,
    limit: int,
    min_quality: float | None,
    executable: bool | None,
) -> None:
    """Search skills by what they are for (no QUERY: list by quality)."""
    from skillshelf.skills import service
    from skillshelf.skills.models import SearchResult

    settings = command_settings(libraries, watch=False)
    with opened_library(settings) as library:
        if query:
            _wait_for_vectors(library.library.semantic)
        if library.library.semantic is None and (reason := settings.semantic_off_reason()) is not None:
            click.echo(f"note: semantic search is off ({reason}); these hits rank by words only", err=True)
        result = service.search_patterns(
            library,
            " ".join(query),
            category=category,
            include_executable=executable,
            min_quality=min_quality,
            limit=limit,
        )

    def render(found: SearchResult) -> None:
        for warning in found.warnings or []:
            say(f"note: {warning}", err=True)
        if not found.hits:
            click.echo("No skills found. Try other words, or `skillshelf categories`.")
        for hit in found.hits:
            badge = " [code]" if hit.executable else ""
            tick = " ✓" if hit.verified else ""
            click.echo(f"{click.style(shown(hit.id), bold=True)}  {hit.quality:.1f}{tick}{badge}  ~{hit.tokens} tokens")
            say(f"    {hit.description}")

    emit(result, as_json, render)


def _wait_for_vectors(semantic: SemanticIndex | None) -> None:
    """Give the background pass a moment: what is embedded by then ranks by meaning (the answer's warnings
    say when semantic search is still embedding, or off)."""
    if semantic is not None:
        semantic.wait_idle(timeout=SEMANTIC_WAIT_S)


@cli.command()
@library_option
@json_option
@click.argument("skill_id")
@click.option("--code", is_flag=True, help="Include the implementation or scripts.")
def show(libraries: tuple[Path, ...], as_json: bool, skill_id: str, code: bool) -> None:
    """Show one skill: metadata, documentation, and code with --code."""
    from skillshelf.skills import service
    from skillshelf.skills.models import LoadedSkill

    with open_library(libraries) as library:
        skill = service.load_skill(library, skill_id, include_code=code, include_metadata=True)

    def render(loaded: LoadedSkill) -> None:
        meta = loaded.metadata
        click.echo(click.style(shown(loaded.id), bold=True) + f"  ({loaded.layout})")
        say(loaded.description)
        if meta is not None:
            verified = ", verified" if meta.verified else ""
            click.echo(f"quality {meta.quality:.1f} ({meta.quality_source}{verified})")
            for reason in meta.quality_reasons:
                say(f"  {reason}")
            if meta.tags:
                say("tags: " + ", ".join(meta.tags))
            if meta.resources:
                say("files: " + ", ".join(meta.resources))
            for finding in meta.findings:  # `check`'s findings, the scan's among them
                where = f"{finding.path}:{finding.line}" if finding.line else finding.path
                say(f"finding: {finding.severity} {where}: {finding.message} [{finding.code}]")
            if meta.source is not None:
                found = meta.source
                license = f", {found.license}" if found.license else ""
                say(f"source: {found.name} ({found.kind} {found.url} @ {found.commit}{license})")
        click.echo("")
        click.echo(shown(loaded.documentation.rstrip(), lines=True))
        for code_file in loaded.code or []:
            click.echo("")
            say(f"--- {code_file.path} ({code_file.language or 'text'})")
            click.echo(shown(code_file.content.rstrip(), lines=True))

    emit(skill, as_json, render)


@cli.command()
@library_option
@json_option
def categories(libraries: tuple[Path, ...], as_json: bool) -> None:
    """List categories with skill counts and mean quality."""
    from skillshelf.skills import service
    from skillshelf.skills.models import CategoryList

    with open_library(libraries) as library:
        result = service.list_categories(library)

    def render(found: CategoryList) -> None:
        rows = [(c.name, c.skills, c.executable, c.verified, f"{c.mean_quality:.1f}") for c in found.categories]
        table(
            ("category", "skills", "code", "verified", "quality"),
            rows,
            numeric=("skills", "code", "verified", "quality"),
        )
        click.echo(
            f"{plural(found.total_skills, 'skill')} in {plural(len(found.categories), 'category', 'categories')}"
        )

    emit(result, as_json, render)


@cli.command(name="run", short_help="Run a skill in a limited child process.")
@library_option
@click.argument("skill_id")
@click.option("--input", "input_text", default="{}", help="JSON input, or @FILE to read it from a file.")
@click.option("--script", help="Which script of an Agent Skills folder, e.g. scripts/check.py.")
@click.option("--arg", "args", multiple=True, help="A command-line argument for the script (repeatable).")
@click.option("--dry-run", is_flag=True, help="Validate the input and show what would run; run nothing.")
@click.option("--timeout", "timeout_s", type=click.FloatRange(min=0.1), help="Wall-clock limit in seconds.")
def run_skill(
    libraries: tuple[Path, ...],
    skill_id: str,
    input_text: str,
    script: str | None,
    args: tuple[str, ...],
    dry_run: bool,
    timeout_s: float | None,
) -> None:
    """Run a skill in a limited child process, as executeSkill does; print its output as JSON.

    Typing this command is consent to run the skill, so --allow-exec is not needed here; an
    execution allow-list in the config file still applies. A curator's run is not recorded as a use
    (agents' executeSkill runs are), so test runs never make a skill "most used".
    """
    import anyio

    from skillshelf.execution import service

    payload = _read_input(input_text)
    settings = command_settings(libraries, watch=False)
    execution = settings.execution.model_copy(update={"enabled": True})
    with opened_library(settings) as library:
        if dry_run:
            result: Any = service.dry_run(library, execution, skill_id, payload, script, timeout_s, list(args))
        else:
            result = anyio.run(
                lambda: service.execute_skill(
                    library, execution, skill_id, payload, script, timeout_s, args=list(args), record_use=False
                )
            )
    print_json(model_json(result))


def _read_input(text: str) -> Any:
    raw = text
    if text.startswith("@"):
        try:
            raw = Path(text[1:]).expanduser().read_text(encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(f"cannot read {text[1:]}: {exc.strerror}") from exc
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise click.ClickException(f"--input is not valid JSON: {exc}") from exc


@cli.command(short_help="Library health: quality, tokens, usage, findings.")
@library_option
@json_option
@click.option("--findability", is_flag=True, help="Work out findability past 200 skills too (a search per skill).")
def stats(libraries: tuple[Path, ...], as_json: bool, findability: bool) -> None:
    """Library health: categories and layouts, quality, tokens to load, usage, findings, findability."""
    from skillshelf.metrics.library_stats import library_stats
    from skillshelf.metrics.models import LibraryStats

    with open_library(libraries) as library:
        report = library_stats(library, findability=findability)

    def render(r: LibraryStats) -> None:
        click.echo(
            f"{plural(r.skills, 'skill')}, mean quality {r.mean_quality:.1f}, {r.verified} verified, "
            f"{r.executable} with code\n"
        )
        table(
            ("category", "three-file", "agent-skills"),
            [(c.category, c.three_file, c.agent_skills) for c in r.categories],
            numeric=("three-file", "agent-skills"),
        )
        click.echo("\nquality  " + "  ".join(f"{band}:{n}" for band, n in r.quality_histogram.items() if n))
        if r.quality_deciles:
            click.echo("deciles  " + " ".join(f"{v:.1f}" for v in r.quality_deciles) + " (10th ... 90th percentile)")
            click.echo(f"  ({r.quality_basis})")
        click.echo(f"tokens to load: {r.load_tokens_total} in all, {r.load_tokens_mean:.0f} on average")
        for item in r.largest[:3]:
            say(f"  largest: {item.id} ~{item.tokens}")
        for used in r.most_used[:5]:
            say(f"  most used: {used.id} ({plural(used.uses, 'use')}, {plural(used.projects, 'project')})")
        click.echo(f"never used: {r.never_used_count}")
        by_severity = r.findings_by_severity
        findings = ", ".join(count_of(sev, by_severity[sev]) for sev in SEVERITY_WORDS if sev in by_severity) or "none"
        click.echo(f"findings: {findings} (details: skillshelf check)")
        click.echo(f"near-duplicates: {r.near_duplicates} (same name or description; skillshelf check names them)")
        found = r.findability
        if found is None:
            click.echo("findability: not worked out past 200 skills (stats --findability, or skillshelf eval)")
        else:
            click.echo(
                f"findability: {found.checked - len(found.unreachable)}/{found.checked} skills found by their own "
                f"description, {plural(len(found.collisions), 'collision')} (skillshelf eval names them)"
            )

    emit(report, as_json, render)


@cli.command()
@library_option
@json_option
@click.argument("skill_id", required=False)
@click.option(
    "--sort",
    "sort_by",
    type=click.Choice(["reuseCount", "recent", "category"]),
    default="reuseCount",
    show_default=True,
    help="Most reused first, most recently used first, or by category.",
)
def usage(libraries: tuple[Path, ...], as_json: bool, skill_id: str | None, sort_by: str) -> None:
    """Recorded reuse of skills (all reused skills, or SKILL_ID)."""
    from skillshelf.metrics.models import ReuseReport
    from skillshelf.metrics.reuse import SortBy, pattern_reuse

    with open_library(libraries) as library:
        report = pattern_reuse(library, skill_id, sort_by=cast("SortBy", sort_by))

    def render(r: ReuseReport) -> None:
        if not r.patterns:
            click.echo("No recorded use yet. Agents record it with trackPatternUsage.")
            return
        rows = [
            (row.skill_id, plural(row.reuse_count, "use"), ", ".join(row.projects) or "-", row.last_used or "-")
            for row in r.patterns
        ]
        table(("skill", "uses", "projects", "last used"), rows, numeric=("uses",))

    emit(report, as_json, render)


@cli.command()
@setting_flags("projects")
@json_option
@click.argument("project")
@click.option("--type", "note_type", type=click.Choice(NOTE_TYPES), help="Only notes of this type.")
@click.option("--query", "-q", help="Only notes containing all these words.")
@click.option("--since", help="Only notes from this ISO date or time on.")
@click.option("--limit", "-n", default=50, show_default=True, type=click.IntRange(1, 500), help="Most notes to show.")
def notes(
    as_json: bool,
    project: str,
    note_type: str | None,
    query: str | None,
    since: str | None,
    limit: int,
) -> None:
    """A project's memory notes, newest first."""
    from skillshelf.memory import service as memory
    from skillshelf.memory.models import NoteList
    from skillshelf.server.app import App

    settings = command_settings()
    notes = App(settings).stores.notes()
    result = memory.get_notes(
        settings.projects(), project, note_type=note_type, query=query, since=since, limit=limit, notes=notes
    )

    def render(r: NoteList) -> None:
        for note in r.notes:
            tags = f"  [{', '.join(note.tags)}]" if note.tags else ""
            click.echo(f"{note.timestamp}  {click.style(note.type, bold=True)}{tags}")
            click.echo(f"    {note.content}")
        click.echo(f"{len(r.notes)} of {plural(r.total, 'note')} in {r.project}")
        if r.skipped_lines:
            click.echo(f"unreadable lines skipped: {', '.join(map(str, r.skipped_lines))}", err=True)

    emit(result, as_json, render)


@cli.command(short_help="A project's past sessions, newest first.")
@setting_flags("projects")
@json_option
@click.argument("project")
@click.option("--query", "-q", default="", help="Only sessions matching these words (ranked).")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 50), help="Most sessions to show.")
def sessions(as_json: bool, project: str, query: str, limit: int) -> None:
    """A project's past sessions (.agent-artifacts), newest first, or ranked by --query."""
    from skillshelf.artifacts import service as artifacts
    from skillshelf.artifacts.models import ArtifactSearchResult
    from skillshelf.server.app import App

    settings = command_settings(watch=False)
    with App(settings) as app:  # the App made the archive, so only its close closes it
        app.archive.sync()
        result = artifacts.search_artifacts(app.archive, query, project=project, limit=limit)

    def render(r: ArtifactSearchResult) -> None:
        if not r.hits:
            click.echo("No sessions found.")
        for hit in r.hits:
            click.echo(f"{shown(hit.date)}  {click.style(shown(hit.session_id), bold=True)}  {shown(hit.title)}")
            if hit.summary:
                say(f"    {hit.summary}")

    emit(result, as_json, render)


@cli.command(short_help="Check library roots and print every finding.")
@json_option
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--library", "-l", "libraries", multiple=True, type=click.Path(path_type=Path), hidden=True)
@click.option(
    "--findability",
    is_flag=True,
    help="Also search each skill's own description: skills it does not find, and colliding pairs (slower).",
)
def check(as_json: bool, paths: tuple[Path, ...], libraries: tuple[Path, ...], findability: bool) -> None:
    """Check library roots (default: the configured ones) and print every finding.

    Exits 1 when any finding is an error.
    """
    from skillshelf.library.skill.checker import SEVERITY_ORDER, check_roots

    roots = list(paths) or command_settings(libraries).roots
    progress = check_progress()
    try:
        report = check_roots([r.expanduser() for r in roots], on_progress=progress)
    finally:
        progress.done()
    if findability:
        if any((p / "SKILL.md").is_file() or p.suffix == ".md" for p in paths):
            raise click.UsageError("--findability searches a whole library: pass library roots, not one skill")
        report.findings.extend(_findability_findings(tuple(paths) or libraries))
        report.findings.sort(key=lambda f: (f.root, f.path, SEVERITY_ORDER[f.severity], f.line or 0))
    if as_json:
        print_json(report.to_dict())
    else:
        for finding in report.findings:
            _echo_finding(finding)
        click.echo(report.summary_line())
    if report.errors:
        sys.exit(1)


def _findability_findings(libraries: tuple[Path, ...]) -> list[Finding]:
    """`check --findability`: one search per skill (about 10 ms each: 1,000 skills take 10 s, so not by default)."""
    from skillshelf.skills.evals import findability_findings, library_findability

    with open_library(libraries) as library:
        return findability_findings(library, library_findability(library))


def _echo_finding(finding: Finding) -> None:
    colour = {"error": "red", "warning": "yellow", "info": "blue"}[finding.severity]
    where, message = shown(finding.location()), shown(finding.message)
    click.echo(f"{where}: {click.style(finding.severity, fg=colour)}: {message} [{finding.code}]")


@cli.command(short_help="Create a library seeded with the example skills.")
@click.argument("directory", required=False, type=click.Path(path_type=Path))
def init(directory: Path | None) -> None:
    """Create a library (default ~/.shared-patterns) seeded with the bundled example skills."""
    from skillshelf.library.index.places import READ_ONLY_MARKER
    from skillshelf.settings import DEFAULT_LIBRARY, bundled_library_path

    target = (directory or DEFAULT_LIBRARY).expanduser()
    source = bundled_library_path()
    if source is None:
        raise click.ClickException("the bundled example library is missing from this installation")
    if target.exists() and any(target.iterdir()):
        raise click.ClickException(f"{display_path(target)} already exists and is not empty; choose another folder")
    skip = shutil.ignore_patterns(".skillshelf", READ_ONLY_MARKER, "__pycache__")  # the copy is the user's to write
    shutil.copytree(source, target, dirs_exist_ok=True, ignore=skip)
    count = sum(1 for _ in target.rglob("*.md"))
    click.echo(f"Created {display_path(target)} with the example skills ({count} markdown files).")
    click.echo(f"Serve it with: skillshelf serve --library {display_path(target)}")
    if target != DEFAULT_LIBRARY.expanduser():
        _say_how_to_make_it_the_default(target)


def _say_how_to_make_it_the_default(target: Path) -> None:
    """Other commands read the configured library, not the one just created: say how to make it theirs."""
    from skillshelf.cli.common import config_flag
    from skillshelf.settings import config_location

    shown = display_path(target)
    config = display_path(config_location(config_flag()).path)
    click.echo(f"Other commands read it with --library {shown}; to make it the default, add")
    click.echo(f'  library = "{shown}"')
    click.echo(f"to {config}, or export SKILLSHELF_LIBRARY={shown}")


def main() -> None:
    try:
        cli(prog_name="skillshelf")
    except SystemExit:
        try:
            sys.stdout.flush()  # what is still buffered meets a reader that left here, not at exit
        except BrokenPipeError:
            _stop_on_broken_pipe()
        raise
