"""`skillshelf history`, `diff` and `rollback`: the earlier versions of a skill a source installed, kept by
each update (library/sources/history.py), compared with what is installed, and put back (rollback.py).
This module reads flags and prints; every name from a skill or a source is printed through `shown`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from skillshelf.cli.output import plural, print_json, say, table
from skillshelf.cli.sources import _say_recovered, _shelf, accept_option, library_root, root_option

if TYPE_CHECKING:
    from skillshelf.library.sources.install import Shelf

REV = click.IntRange(min=1)


def _installed_line(shelf: Shelf, skill_id: str) -> str:
    """What is installed now: its digest, and how it stands against the lock."""
    from skillshelf.library.skill.digest import skill_digest
    from skillshelf.library.sources.history import short

    owner = shelf.lock().owner_of(skill_id)
    skill = owner.skill(skill_id) if owner is not None else None
    if owner is None or skill is None:
        return "installed: not from a source here (no entry in skillshelf.lock)"
    digest = skill_digest(shelf.root, skill.path)
    if digest is None:
        return "installed: missing (deleted here; `skillshelf sync` puts it back)"
    state = "as locked" if digest == skill.digest else "modified here since install"
    if digest == skill.digest and skill.rollback:
        state = skill.rollback
    return f"installed: {short(digest)} from {owner.name} at {short(owner.version)} ({state})"


@click.command(name="history", short_help="Earlier versions of a skill, kept by each update.")
@click.argument("skill_id")
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print the versions as JSON.")
def history(skill_id: str, library: Path | None, as_json: bool) -> None:
    """The versions of SKILL_ID an update, `sync --force` or a rollback replaced, newest first: the
    revision to name to `skillshelf diff` and `skillshelf rollback`, its digest, when it was kept and why,
    and the source version it came from. `history_keep` says how many are kept per skill."""
    from skillshelf.library.sources.history import short, versions
    from skillshelf.library.sources.rollback import installed_skill

    root = library_root(library)
    with _shelf(root, reading=True) as shelf:
        _say_recovered(shelf)
        kept = versions(shelf.root, skill_id)
        if not kept and shelf.lock().owner_of(skill_id) is None:
            installed_skill(shelf, skill_id)  # an id nothing is known of: the error that names the sources
        installed = _installed_line(shelf, skill_id)
    if as_json:
        print_json({"id": skill_id, "installed": installed, "versions": [v.to_dict() for v in reversed(kept)]})
        return
    say(f"{skill_id}: {plural(len(kept), 'earlier version')} kept; {installed}")
    if kept:
        rows = [(v.rev, short(v.digest), v.when, v.why, short(v.source_version)) for v in reversed(kept)]
        table(("rev", "digest", "kept", "why", "source"), rows, numeric=("rev",))


@click.command(name="diff", short_help="What changed in a skill since one of its earlier versions.")
@click.argument("skill_id")
@click.argument("rev", required=False, type=REV)
@root_option
def diff(skill_id: str, rev: int | None, library: Path | None) -> None:
    """A unified diff of every file of SKILL_ID from revision REV (default: the newest kept, the version
    the last update replaced) to what is installed. `skillshelf history SKILL_ID` lists the revisions."""
    from skillshelf.library.sources.history import diff as diff_lines
    from skillshelf.library.sources.history import short, version

    root = library_root(library)
    with _shelf(root, reading=True) as shelf:
        _say_recovered(shelf)
        kept = version(shelf.root, skill_id, rev)
        owner = shelf.lock().owner_of(skill_id)
        skill = owner.skill(skill_id) if owner is not None else None
        lines = diff_lines(shelf.root, kept, skill.path if skill is not None else None)
    if not lines:
        say(f"{skill_id}: no difference; what is installed is revision {kept.rev} ({short(kept.digest)})")
    for line in lines:  # names and lines from a source: escaped, one could rewrite the line above it
        say(line)


@click.command(name="rollback", short_help="Put a skill back to one of its earlier versions.")
@click.argument("skill_id")
@click.argument("rev", required=False, type=REV)
@click.option("--reason", help="Why: recorded in skillshelf.lock with the rollback, and shown by `sources`.")
@root_option
@accept_option
def rollback(
    skill_id: str, rev: int | None, reason: str | None, library: Path | None, accepted: tuple[str, ...]
) -> None:
    """Put SKILL_ID back to revision REV (default: the newest kept) exactly, byte for byte, swapped in
    whole; skillshelf.lock then pins those bytes and records the rollback and its reason. What is
    installed now is kept first, so it can be put back the same way. The bytes are scanned as an
    update's are: a high-risk finding not accepted for them before needs --accept RULE:PATH."""
    from skillshelf.library.sources.history import short
    from skillshelf.library.sources.rollback import rollback as roll_back

    root = library_root(library)
    with _shelf(root) as shelf:
        _say_recovered(shelf)
        done = roll_back(shelf, skill_id, rev, reason, accepted)
    say(f"Rolled back {done.skill_id} to revision {done.rev} ({short(done.digest)}); skillshelf.lock records it:")
    say(f"  {done.note}")


COMMANDS = (history, diff, rollback)
