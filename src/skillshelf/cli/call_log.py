"""`skillshelf log`: the local call log summarised per tool."""

from __future__ import annotations

from pathlib import Path

import click

from skillshelf.cli.common import command_settings, json_option
from skillshelf.cli.output import plural, print_json
from skillshelf.cli.setting_flags import setting_flags
from skillshelf.library.skill.paths import display_path


@click.command("log")
@json_option
@click.option(
    "--path",
    "log_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Call log file to read. Default: the database with database_url set, else the log file.",
)
@setting_flags("database_url")
@click.option("--top", default=10, show_default=True, type=click.IntRange(1, 1000), help="Busiest skills shown.")
def call_log(as_json: bool, log_file: Path | None, top: int) -> None:
    """Summarise the call log per tool."""
    from skillshelf.server.calllog import JsonlCallLogStore, call_log_store, summarise

    settings = command_settings()
    store = call_log_store(settings, log_file)
    shown = display_path(Path(store.where)) if isinstance(store, JsonlCallLogStore) else store.where
    summary = summarise(store.records(), store.where, top)
    if as_json:
        print_json(summary.model_dump(mode="json"))
        return
    if not summary.calls and not summary.unknown_tools:
        click.echo(f"No calls logged in {shown} yet (serve --http or stdio writes it).")
        return
    click.echo(f"{plural(summary.calls, 'call')}, {plural(summary.errors, 'error')} ({shown})")
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
        click.echo(f"{plural(summary.unknown_tools, 'call')} to tools the server does not know (not counted above)")
