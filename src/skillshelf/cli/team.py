"""Team commands: `skillshelf token new NAME` and `skillshelf log`."""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from skillshelf.cli.main import _announce_roots, _settings, json_option, logger
from skillshelf.cli.output import print_json
from skillshelf.library.skill.paths import display_path

if TYPE_CHECKING:
    from skillshelf.settings import Settings


def prepare_http(
    settings: Settings,
    host: str,
    port: int,
    allowed_hosts: tuple[str, ...],
    allowed_origins: tuple[str, ...],
    insecure_no_auth: bool,
    workers: int,
) -> bool:
    """`serve --http`: tokens from the environment, the refusals, and several workers (True: served)."""
    from skillshelf.server.auth import refuse_unauthenticated
    from skillshelf.server.hooks import check_views
    from skillshelf.server.http import refuse_unsafe_exposure, run_http_workers

    settings.auth = settings.auth.with_env()
    refuse_unauthenticated(host, settings.auth, insecure_no_auth)
    refuse_unsafe_exposure(host, settings.execution.enabled and not settings.auth.tokens)
    _warn_of_unknown_token_views(settings)
    if workers == 1:
        return False
    problems = check_views(settings.views)  # each worker loads them; fail here, once
    if problems:
        raise click.ClickException("; ".join(problems))
    _announce_roots(settings.roots, settings.using_bundled)
    logger.warning("serving MCP on http://%s:%d/mcp with %d stateless workers", host, port, workers)
    run_http_workers(settings.model_dump_json(), host, port, workers, allowed_hosts, allowed_origins)
    return True


def _warn_of_unknown_token_views(settings: Settings) -> None:
    """A token listing a view that does not exist can never use it: often a typo, or a
    `SKILLSHELF_TOKENS` entry whose token text was read as views (write it NAME:VIEWS=TOKEN)."""
    from skillshelf.config.views import all_views

    views = all_views(settings.views, settings.execution.enabled)
    for name, token in settings.auth.tokens.items():
        unknown = [view for view in token.views if view not in views and view != "*"]
        if unknown:
            logger.warning(
                "token %r lists view(s) %s that do not exist (views: %s)",
                name,
                ", ".join(unknown),
                ", ".join(sorted(views)),
            )


def _config_path() -> Path:
    from skillshelf.settings import CONFIG_ENV, default_config_path

    context = click.get_current_context()
    given = (context.find_root().obj or {}).get("config")
    if given:
        return Path(given).expanduser()
    if os.environ.get(CONFIG_ENV, "").strip():
        return Path(os.environ[CONFIG_ENV]).expanduser()
    return default_config_path(os.environ)


@click.group()
def token() -> None:
    """Bearer tokens for `serve --http` (hashes kept)."""


@token.command("new")
@click.argument("name")
@click.option("--view", "views", multiple=True, help="A view this token may use (repeatable). Default: default.")
def token_new(name: str, views: tuple[str, ...]) -> None:
    """Create a token NAME: print it once and write its hash to the config file."""
    from skillshelf.config.team import CONFIG_TOKEN_BYTES, TOKEN_NAME, token_digest

    if not TOKEN_NAME.match(name):
        raise click.BadParameter("use letters, digits, '.', '_' or '-' (at most 64)", param_hint="NAME")
    import tomllib

    path = _config_path()
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    try:
        existing = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise click.ClickException(f"{display_path(path)} is not valid TOML ({exc}); fix it first") from exc
    if name in existing.get("auth", {}).get("tokens", {}):
        raise click.ClickException(
            f"{display_path(path)} already has a token {name!r}; delete its [auth.tokens.{name}] table "
            "to replace it, or choose another name"
        )
    view_names = list(views) or ["default"]
    known = set(existing.get("views", {})) | {"default"}
    unknown = [v for v in view_names if v not in known]
    if unknown:
        raise click.ClickException(
            f"no view {', '.join(map(repr, unknown))} in {display_path(path)}; views: {', '.join(sorted(known))}"
        )
    secret = secrets.token_urlsafe(CONFIG_TOKEN_BYTES)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    block = (
        f"\n# token {name!r}, created {stamp} by `skillshelf token new`\n"
        f"[auth.tokens.{name}]\n"
        f'sha256 = "{token_digest(secret)}"\n'
        f"views = {json.dumps(view_names)}\n"
    )
    updated = (text if not text or text.endswith("\n") else text + "\n") + (block if text else block.lstrip("\n"))
    try:
        tomllib.loads(updated)  # e.g. `tokens = {...}` written inline cannot take a new table
    except tomllib.TOMLDecodeError as exc:
        raise click.ClickException(
            f"cannot add [auth.tokens.{name}] to {display_path(path)} ({exc}); write auth.tokens as tables"
        ) from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp") as out:
        out.write(updated)
    if path.exists():
        Path(out.name).chmod(path.stat().st_mode & 0o777)
    Path(out.name).replace(path)
    click.echo(secret)
    click.echo(
        f"Token {name!r} for view(s) {', '.join(view_names)}: its hash is in {display_path(path)}. "
        "This is the only time the token is shown; send it as `Authorization: Bearer <token>`.",
        err=True,
    )


@click.command("log")
@json_option
@click.option("--path", "log_file", type=click.Path(path_type=Path, dir_okay=False), help="Call log to read.")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1, 1000), help="Busiest skills shown.")
def call_log(as_json: bool, log_file: Path | None, top: int) -> None:
    """Summarise the local call log per tool."""
    from skillshelf.server.calllog import log_path, read_records, summarise

    if log_file is None:
        settings = _settings(())
        log_file = log_path(settings.call_log)
    summary = summarise(read_records(log_file), log_file, top)
    if as_json:
        print_json(summary.model_dump(mode="json"))
        return
    if not summary.calls and not summary.unknown_tools:
        click.echo(f"No calls logged in {display_path(log_file)} yet (serve --http or stdio writes it).")
        return
    click.echo(f"{summary.calls} calls, {summary.errors} errors ({display_path(log_file)})")
    click.echo(f"{'tool':<24} {'calls':>7} {'errors':>7} {'err%':>6} {'p50 ms':>8} {'p95 ms':>8}")
    for tool in summary.tools:
        click.echo(
            f"{tool.tool:<24} {tool.calls:>7} {tool.errors:>7} {tool.error_rate * 100:>5.1f}% "
            f"{tool.p50_ms:>8.1f} {tool.p95_ms:>8.1f}"
        )
    if summary.error_codes:
        click.echo("errors: " + ", ".join(f"{code} {count}" for code, count in summary.error_codes.items()))
    if summary.busiest_skills:
        click.echo("busiest skills: " + ", ".join(f"{skill} ({count})" for skill, count in summary.busiest_skills))
    if summary.unknown_tools:
        click.echo(f"{summary.unknown_tools} calls to tools the server does not know (not counted above)")
