"""`skillshelf token new NAME`: a bearer token for `serve --http`, its hash written to the config file."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import click

from skillshelf.cli.common import config_flag
from skillshelf.library.atomic import write_atomically
from skillshelf.library.skill.paths import display_path

if TYPE_CHECKING:
    from tomlkit import TOMLDocument


@click.group()
def token() -> None:
    """Bearer tokens for `serve --http` (hashes kept)."""


@token.command("new")
@click.argument("name")
@click.option("--view", "views", multiple=True, help="A view this token may use (repeatable). Default: default.")
def token_new(name: str, views: tuple[str, ...]) -> None:
    """Create a token NAME: print it once and write its hash to the config file."""
    from skillshelf.config.auth import CONFIG_TOKEN_BYTES, TOKEN_NAME, token_digest
    from skillshelf.config.views import builtin_views
    from skillshelf.settings import config_location

    if not TOKEN_NAME.match(name):
        raise click.BadParameter("use letters, digits, '.', '_' or '-' (at most 64)", param_hint="NAME")
    import tomllib

    path = config_location(config_flag()).path
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
    known = set(existing.get("views", {})) | set(builtin_views(execution_enabled=True)) | {"default", "*"}
    unknown = [v for v in view_names if v not in known]
    if unknown:
        raise click.ClickException(
            f"no view {', '.join(map(repr, unknown))}: the built-in views are {', '.join(sorted(builtin_views(True)))} "
            f"and default; {display_path(path)} defines {', '.join(sorted(existing.get('views', {}))) or 'none'}. "
            "Define it there first ([views.NAME]), then give it to a token."
        )
    secret = secrets.token_urlsafe(CONFIG_TOKEN_BYTES)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    comment = f"token {name!r}, created {stamp} by `skillshelf token new`"
    updated = _with_token(text, name, {"sha256": token_digest(secret), "views": view_names}, comment, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, updated, new_mode=0o600)  # a new config file is the user's alone
    click.echo(secret)
    click.echo(
        f"Token {name!r} for view(s) {', '.join(view_names)}: its hash is in {display_path(path)}. "
        "This is the only time the token is shown; send it as `Authorization: Bearer <token>`.",
        err=True,
    )


def _with_token(text: str, name: str, entry: dict[str, object], comment: str, path: Path) -> str:
    """The config file's text with `[auth.tokens.NAME]` added, edited with tomlkit so every comment, key
    order and inline table the user wrote stays byte for byte; an inline `tokens = {...}` gets an inline entry."""
    import tomlkit
    from tomlkit.items import InlineTable, Table

    doc = tomlkit.parse(text)
    table: TOMLDocument | Table | InlineTable = doc
    for key in ("auth", "tokens"):
        inner = table.get(key)
        if inner is None:  # a super table: no bare [auth] header, only [auth.tokens.NAME]
            inner = tomlkit.inline_table() if isinstance(table, InlineTable) else tomlkit.table(is_super_table=True)
            table.append(key, inner)
        if not isinstance(inner, Table | InlineTable):
            raise click.ClickException(f"cannot add a token to {display_path(path)}: its auth.{key} is not a table")
        table = inner
    added = tomlkit.inline_table() if isinstance(table, InlineTable) else tomlkit.table()
    if isinstance(added, Table):
        added.add(tomlkit.comment(comment))
    added.update(entry)
    table.append(name, added)
    return tomlkit.dumps(doc)
