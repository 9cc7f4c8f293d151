"""`skillshelf scan [PATH]`: the scanner's rules (library/skill/scan_rules.py) run over any folder (a
library, one skill, a source's checkout) or file; every finding with its rule, severity and file:line.
Exit 1 on a high finding."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from skillshelf.cli.output import plural, print_json, shown
from skillshelf.library.skill.paths import display_path

SEVERITY_COLOURS = {"high": "red", "medium": "yellow", "low": "blue"}


@click.command(short_help="Scan a folder for risky scripts, hidden text and prompt injection.")
@click.argument("path", required=False, type=click.Path(exists=True, path_type=Path))
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def scan(path: Path | None, as_json: bool) -> None:
    """Run the scan rules over PATH (default: the current folder): a library, one skill, a source's
    checkout or a single file. Prints each finding as file:line, its severity and rule; exits 1 when any
    is high. The rules are listed in docs/curating.md ("Scanning"); a scan is a filter, not a proof."""
    from skillshelf.library.skill.scan import scan_folder

    target = (path or Path()).expanduser()
    report = scan_folder(target)
    high = report.count("high")
    if as_json:
        print_json(
            {
                "path": display_path(target.absolute()),
                "files": report.files,
                "stopped": report.stopped or None,
                "counts": {level: report.count(level) for level in ("high", "medium", "low")},
                "findings": [hit.to_dict() for hit in report.hits],
            }
        )
    else:
        for hit in report.hits:
            level = click.style(hit.severity, fg=SEVERITY_COLOURS[hit.severity])
            click.echo(f"{shown(hit.location)}: {level}: {shown(hit.text)} [{hit.rule.id}]")
        counts = ", ".join(f"{report.count(level)} {level}" for level in ("high", "medium", "low"))
        stopped = f" ({report.stopped})" if report.stopped else ""
        click.echo(f"{plural(report.files, 'file')} scanned{stopped}: {counts}")
    if high:
        sys.exit(1)
