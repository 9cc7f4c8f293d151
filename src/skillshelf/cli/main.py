"""The `skillshelf` command: serve the library over MCP and curate it from a terminal.

Every command calls the same services as the MCP tools; `--json` prints their wire form.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click
from pydantic import BaseModel

from skillshelf import __version__
from skillshelf.errors import SkillshelfError
from skillshelf.library.models import Finding
from skillshelf.library.paths import display_path

if TYPE_CHECKING:
    from skillshelf.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])
logger = logging.getLogger("skillshelf")


def _configure_logging(verbose: int) -> None:
    """Logs go to stderr (stdout is the protocol). -v/-vv raise skillshelf's own verbosity only:
    libraries such as markdown-it log every parsing step at debug level."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(
        level=logging.WARNING, stream=sys.stderr, format="skillshelf %(levelname)s %(name)s: %(message)s", force=True
    )
    logging.getLogger("skillshelf").setLevel(level)


def library_option(fn: F) -> F:
    return click.option(
        "--library",
        "-l",
        "libraries",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Library root (repeatable; first wins a name collision). Default: $SKILLSHELF_LIBRARY, "
        "then ~/.shared-patterns, then the bundled examples.",
    )(fn)


def json_option(fn: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


def _settings(libraries: tuple[Path, ...], **options: Any) -> Settings:
    """Settings from flags, environment and the config file (--config or the default one)."""
    from skillshelf.settings import resolve_settings

    context = click.get_current_context(silent=True)
    config = context.find_root().obj.get("config") if context and context.find_root().obj else None
    try:
        return resolve_settings(libraries, config_path=config, **options)
    except SkillshelfError as exc:
        raise _fail(exc) from exc


@contextmanager
def open_library(libraries: tuple[Path, ...], *, watch: bool = False) -> Iterator[Any]:
    from skillshelf.library.skill_library import SkillLibrary

    settings = _settings(libraries, watch=watch)
    _announce_roots(settings.roots, settings.using_bundled)
    library = SkillLibrary(settings.library_config())
    try:
        library.sync()
        yield library
    finally:
        library.close()


def _announce_roots(roots: list[Path], using_bundled: bool) -> None:
    if using_bundled:
        logger.warning(
            "no library configured and ~/.shared-patterns does not exist: serving the bundled examples "
            "(create one with `skillshelf init`, or pass --library PATH)"
        )
    if not roots:
        raise click.ClickException("no library roots; pass --library PATH")


def _fail(exc: SkillshelfError) -> click.ClickException:
    return click.ClickException(f"{exc.message} [{exc.code}]")


def _print_json(value: Any) -> None:
    click.echo(json.dumps(value, ensure_ascii=False, indent=2))


def _print_model(model: BaseModel) -> None:
    """A tool's data as the tools send it (camelCase, no empty optional fields)."""
    _print_json(model.model_dump(mode="json", by_alias=True, exclude_none=True))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="skillshelf")
@click.option("-v", "--verbose", count=True, help="More log output on stderr (-vv for debug).")
@click.option(
    "--config",
    type=click.Path(path_type=Path, dir_okay=False),
    help="TOML config file (default: $SKILLSHELF_CONFIG, then ~/.config/skillshelf/config.toml if present).",
)
@click.pass_context
def cli(ctx: click.Context, verbose: int, config: Path | None) -> None:
    """Serve a filesystem library of reusable skills to AI agents, and curate it."""
    _configure_logging(verbose)
    ctx.obj = {"config": config}


def _equip(server: Any, settings: Settings) -> None:
    """The default view's composites, hooks and call log (server/hooks.py)."""
    from skillshelf.server.calllog import CallLog
    from skillshelf.server.hooks import equip_view

    try:
        equip_view(server, "default", settings.views.get("default"), CallLog.from_settings(settings.call_log))
    except SkillshelfError as exc:
        raise _fail(exc) from exc


@cli.command()
@library_option
@click.option("--http", is_flag=True, help="Serve streamable HTTP (/mcp, /health) instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="HTTP port.")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="Extra Host header value to accept over HTTP (repeatable), e.g. skills.example.com:8765.",
)
@click.option(
    "--allowed-origin",
    "allowed_origins",
    multiple=True,
    help="Extra Origin to accept over HTTP (repeatable), e.g. https://app.example.com.",
)
@click.option("--no-watch", is_flag=True, help="Do not watch the library for changes.")
@click.option(
    "--projects-root",
    "project_roots",
    multiple=True,
    type=click.Path(path_type=Path),
    help="Folder holding projects for artifacts and memory (repeatable). Default: $SKILLSHELF_PROJECTS, then ~/Dev.",
)
@click.option("--allow-exec", is_flag=True, default=None, help="Let agents run skills with executeSkill.")
@click.option("--exec-allow", "exec_allow", multiple=True, help="Only skill ids matching this pattern may run.")
@click.option("--exec-timeout", type=click.FloatRange(min=0.1), help="Longest a skill may run, in seconds.")
@click.option("--insecure-no-auth", is_flag=True, help="Serve a non-loopback address without tokens (logged).")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64), help="HTTP worker processes.")
def serve(
    libraries: tuple[Path, ...],
    http: bool,
    host: str,
    port: int,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    no_watch: bool,
    project_roots: tuple[Path, ...],
    allow_exec: bool | None,
    exec_allow: tuple[str, ...],
    exec_timeout: float | None,
    insecure_no_auth: bool,
    workers: int,
) -> None:
    """Run the MCP server (stdio by default). Logs go to stderr; stdout is the protocol."""
    from skillshelf.artifacts.archive import SessionArchive
    from skillshelf.library.skill_library import SkillLibrary
    from skillshelf.server import build_server

    settings = _settings(
        libraries,
        cli_project_roots=project_roots,
        execution={"enabled": allow_exec, "allow": list(exec_allow) or None, "timeout_s": exec_timeout},
        watch=not no_watch,
        http_host=host,
        http_port=port,
    )
    if http:
        from skillshelf.cli.team import prepare_http

        if prepare_http(settings, host, port, allowed_hosts, allowed_origins, insecure_no_auth, workers):
            return  # the worker processes served until interrupted
    if settings.execution.enabled:
        scope = ", ".join(settings.execution.allow) or "any skill"
        logger.warning("skill execution is ON (%s); see docs/security.md", scope)
    _announce_roots(settings.roots, settings.using_bundled)
    library = SkillLibrary(settings.library_config())
    archive = SessionArchive(settings.projects(), watch=settings.watch)
    logger.info("library roots: %s; index: %s", [display_path(r) for r in library.roots], library.index_path)
    from skillshelf.server.auth import web_authorize
    from skillshelf.server.http import transport_security
    from skillshelf.server.web import WebAccess

    try:
        security = transport_security(host, allowed_hosts, allowed_origins)
    except SkillshelfError as exc:
        raise _fail(exc) from exc
    access = WebAccess(security=security, authorize=web_authorize(http and bool(settings.auth.tokens)))
    server = build_server(settings, library, archive, access)
    _equip(server, settings)
    try:
        if http:
            logger.warning("serving MCP on http://%s:%d/mcp (web view: /, health: /health)", host, port)
            from skillshelf.server.http import run_http

            run_http(
                server,
                host,
                port,
                allowed_hosts,
                extra_origins=allowed_origins,
                auth=settings.auth,
                views=settings.views,
            )
        else:
            server.run()
    finally:
        library.close()
        archive.close()


@cli.command()
@library_option
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port on 127.0.0.1.")
@click.option("--no-watch", is_flag=True, help="Do not watch the library for changes.")
def web(libraries: tuple[Path, ...], port: int, no_watch: bool) -> None:
    """Browse the library in a web browser: search, skill pages, charts (read-only, on 127.0.0.1)."""
    from skillshelf.server.web import serve_web

    with open_library(libraries, watch=not no_watch) as library:
        serve_web(library, port)


@cli.command()
@library_option
@json_option
@click.argument("query", nargs=-1)
@click.option("--category", "-c", help="Only this category.")
@click.option("--limit", "-n", default=10, show_default=True, type=click.IntRange(1, 50))
@click.option("--min-quality", type=click.FloatRange(0, 10), help="Only skills scoring at least this.")
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
    from skillshelf.patterns import service

    with open_library(libraries) as library:
        try:
            result = service.search_patterns(
                library,
                " ".join(query),
                category=category,
                include_executable=executable,
                min_quality=min_quality,
                limit=limit,
            )
        except SkillshelfError as exc:
            raise _fail(exc) from exc
    if as_json:
        _print_model(result)
        return
    if not result.hits:
        click.echo("No skills found. Try other words, or `skillshelf categories`.")
    for hit in result.hits:
        badge = " [code]" if hit.executable else ""
        tick = " ✓" if hit.verified else ""
        click.echo(f"{click.style(hit.id, bold=True)}  {hit.quality:.1f}{tick}{badge}  ~{hit.tokens} tokens")
        click.echo(f"    {hit.description}")


@cli.command()
@library_option
@json_option
@click.argument("skill_id")
@click.option("--code", is_flag=True, help="Include the implementation or scripts.")
def show(libraries: tuple[Path, ...], as_json: bool, skill_id: str, code: bool) -> None:
    """Show one skill: its metadata, documentation and (with --code) code."""
    from skillshelf.patterns import service

    with open_library(libraries) as library:
        try:
            skill = service.load_skill(library, skill_id, include_code=code, include_metadata=True)
        except SkillshelfError as exc:
            raise _fail(exc) from exc
    if as_json:
        _print_model(skill)
        return
    meta = skill.metadata
    click.echo(click.style(skill.id, bold=True) + f"  ({skill.layout})")
    click.echo(skill.description)
    if meta is not None:
        verified = ", verified" if meta.verified else ""
        click.echo(f"quality {meta.quality:.1f} ({meta.quality_source}{verified})")
        for reason in meta.quality_reasons:
            click.echo(f"  {reason}")
        if meta.tags:
            click.echo("tags: " + ", ".join(meta.tags))
        if meta.resources:
            click.echo("files: " + ", ".join(meta.resources))
    click.echo("")
    click.echo(skill.documentation.rstrip())
    for code_file in skill.code or []:
        click.echo(f"\n--- {code_file.path} ({code_file.language or 'text'})")
        click.echo(code_file.content.rstrip())


@cli.command()
@library_option
@json_option
def categories(libraries: tuple[Path, ...], as_json: bool) -> None:
    """List categories with skill counts and mean quality."""
    from skillshelf.patterns import service

    with open_library(libraries) as library:
        result = service.list_categories(library)
    if as_json:
        _print_model(result)
        return
    width = max((len(c.name) for c in result.categories), default=8)
    click.echo(f"{'category':<{width}}  skills  code  verified  quality")
    for c in result.categories:
        click.echo(f"{c.name:<{width}}  {c.skills:>6}  {c.executable:>4}  {c.verified:>8}  {c.mean_quality:>7.1f}")
    click.echo(f"{result.total_skills} skills in {len(result.categories)} categories")


@cli.command(name="run")
@library_option
@click.argument("skill_id")
@click.option("--input", "input_text", default="{}", help="JSON input, or @FILE to read it from a file.")
@click.option("--script", help="For Agent Skills folders with several scripts, e.g. scripts/check.py.")
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
    """Run a skill in a limited child process, exactly as executeSkill does; print its output as JSON.

    Typing this command is consent to run the skill, so --allow-exec is not needed here; an
    execution allow-list in the config file still applies.
    """
    import anyio

    from skillshelf.execution import service

    payload = _read_input(input_text)
    with open_library(libraries) as library:
        settings = _settings(libraries).execution.model_copy(update={"enabled": True})
        try:
            if dry_run:
                result: Any = service.dry_run(library, settings, skill_id, payload, script, timeout_s, list(args))
            else:
                result = anyio.run(
                    lambda: service.execute_skill(
                        library, settings, skill_id, payload, script, timeout_s, args=list(args)
                    )
                )
        except SkillshelfError as exc:
            if exc.details and exc.details.get("stderrTail"):
                click.echo(exc.details["stderrTail"].rstrip(), err=True)
            raise _fail(exc) from exc
    _print_model(result)


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


@cli.command()
@library_option
@json_option
def stats(libraries: tuple[Path, ...], as_json: bool) -> None:
    """Library health: categories and layouts, quality, tokens to load, usage, findings."""
    from skillshelf.metrics.library_stats import library_stats

    with open_library(libraries) as library:
        report = library_stats(library)
    if as_json:
        _print_model(report)
        return
    click.echo(f"{report.skills} skills, mean quality {report.mean_quality:.1f}, {report.verified} verified, "
               f"{report.executable} with code")  # fmt: skip
    width = max((len(c.category) for c in report.categories), default=8)
    click.echo(f"\n{'category':<{width}}  three-file  agent-skills")
    for c in report.categories:
        click.echo(f"{c.category:<{width}}  {c.three_file:>10}  {c.agent_skills:>12}")
    click.echo("\nquality  " + "  ".join(f"{band}:{n}" for band, n in report.quality_histogram.items() if n))
    click.echo(f"tokens to load: {report.load_tokens_total} in all, {report.load_tokens_mean:.0f} on average")
    for item in report.largest[:3]:
        click.echo(f"  largest: {item.id} ~{item.tokens}")
    for used in report.most_used[:5]:
        click.echo(f"  most used: {used.id} ({used.uses} uses, {used.projects} projects)")
    click.echo(f"never used: {report.never_used_count}")
    findings = ", ".join(f"{n} {sev}s" for sev, n in sorted(report.findings_by_severity.items())) or "none"
    click.echo(f"findings: {findings} (details: skillshelf check)")


@cli.command()
@library_option
@json_option
@click.argument("skill_id", required=False)
@click.option("--sort", "sort_by", type=click.Choice(["reuseCount", "recent", "category"]), default="reuseCount")
def usage(libraries: tuple[Path, ...], as_json: bool, skill_id: str | None, sort_by: str) -> None:
    """Recorded reuse of skills (all reused skills, or SKILL_ID)."""
    from skillshelf.metrics.reuse import SortBy, pattern_reuse

    with open_library(libraries) as library:
        try:
            report = pattern_reuse(library, skill_id, sort_by=cast("SortBy", sort_by))
        except SkillshelfError as exc:
            raise _fail(exc) from exc
    if as_json:
        _print_model(report)
        return
    if not report.patterns:
        click.echo("No recorded use yet. Agents record it with trackPatternUsage.")
    for row in report.patterns:
        projects = ", ".join(row.projects) or "no project"
        click.echo(f"{row.pattern_id}  {row.reuse_count} uses  ({projects})  last {row.last_used or '-'}")


def project_roots_option(fn: F) -> F:
    return click.option(
        "--projects-root",
        "project_roots",
        multiple=True,
        type=click.Path(path_type=Path),
        help="Folder holding projects (repeatable). Default: $SKILLSHELF_PROJECTS, then ~/Dev.",
    )(fn)


@cli.command()
@project_roots_option
@json_option
@click.argument("project")
@click.option("--type", "note_type", help="Only notes of this type (decision, hypothesis, blocker, general).")
@click.option("--query", "-q", help="Only notes containing all these words.")
@click.option("--since", help="Only notes from this ISO date or time on.")
@click.option("--limit", "-n", default=50, show_default=True, type=click.IntRange(1, 500))
def notes(
    project_roots: tuple[Path, ...],
    as_json: bool,
    project: str,
    note_type: str | None,
    query: str | None,
    since: str | None,
    limit: int,
) -> None:
    """A project's memory notes, newest first."""
    from skillshelf.memory import service as memory

    projects = _settings((), cli_project_roots=project_roots).projects()
    try:
        result = memory.get_notes(projects, project, note_type=note_type, query=query, since=since, limit=limit)
    except SkillshelfError as exc:
        raise _fail(exc) from exc
    if as_json:
        _print_model(result)
        return
    for note in result.notes:
        tags = f"  [{', '.join(note.tags)}]" if note.tags else ""
        click.echo(f"{note.timestamp}  {click.style(note.type, bold=True)}{tags}")
        click.echo(f"    {note.content}")
    click.echo(f"{len(result.notes)} of {result.total} notes in {result.project}")
    if result.skipped_lines:
        click.echo(f"unreadable lines skipped: {', '.join(map(str, result.skipped_lines))}", err=True)


@cli.command()
@project_roots_option
@json_option
@click.argument("project")
@click.option("--query", "-q", default="", help="Only sessions matching these words (ranked).")
@click.option("--limit", "-n", default=20, show_default=True, type=click.IntRange(1, 50))
def sessions(project_roots: tuple[Path, ...], as_json: bool, project: str, query: str, limit: int) -> None:
    """A project's past sessions (.agent-artifacts), newest first, or ranked by --query."""
    from skillshelf.artifacts import service as artifacts
    from skillshelf.artifacts.archive import SessionArchive

    projects = _settings((), cli_project_roots=project_roots).projects()
    try:
        with SessionArchive(projects, watch=False).opened() as archive:
            result = artifacts.search_artifacts(archive, query, project=project, limit=limit)
    except SkillshelfError as exc:
        raise _fail(exc) from exc
    if as_json:
        _print_model(result)
        return
    if not result.hits:
        click.echo("No sessions found.")
    for hit in result.hits:
        click.echo(f"{hit.date}  {click.style(hit.session_id, bold=True)}  {hit.title}")
        if hit.summary:
            click.echo(f"    {hit.summary}")


@cli.command()
@json_option
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--library", "-l", "libraries", multiple=True, type=click.Path(path_type=Path), hidden=True)
def check(as_json: bool, paths: tuple[Path, ...], libraries: tuple[Path, ...]) -> None:
    """Check library roots (default: the configured ones) and print every finding.

    Exits 1 when any finding is an error.
    """
    from skillshelf.library.checker import check_roots

    roots = list(paths) or _settings(libraries).roots
    report = check_roots([r.expanduser() for r in roots])
    if as_json:
        _print_json(report.to_dict())
    else:
        for finding in report.findings:
            _echo_finding(finding)
        click.echo(report.summary_line())
    if report.errors:
        sys.exit(1)


def _echo_finding(finding: Finding) -> None:
    colour = {"error": "red", "warning": "yellow", "info": "blue"}[finding.severity]
    click.echo(f"{finding.location()}: {click.style(finding.severity, fg=colour)}: {finding.message} [{finding.code}]")


@cli.command()
@click.argument("directory", required=False, type=click.Path(path_type=Path))
def init(directory: Path | None) -> None:
    """Create a library (default ~/.shared-patterns) seeded with the bundled example skills."""
    from skillshelf.settings import DEFAULT_LIBRARY, bundled_library_path

    target = (directory or DEFAULT_LIBRARY).expanduser()
    source = bundled_library_path()
    if source is None:
        raise click.ClickException("the bundled example library is missing from this installation")
    if target.exists() and any(target.iterdir()):
        raise click.ClickException(f"{display_path(target)} already exists and is not empty; choose another folder")
    shutil.copytree(source, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".skillshelf", "__pycache__"))
    count = sum(1 for _ in target.rglob("*.md"))
    click.echo(f"Created {display_path(target)} with the example skills ({count} markdown files).")
    click.echo(f"Serve it with: skillshelf serve --library {display_path(target)}")


def main() -> None:
    cli(prog_name="skillshelf")
