"""`skillshelf add`, `sync`, `update`, `remove` and `sources`: the library's skills from sources, pinned
in `skillshelf.lock`, updates reviewed before they land (docs/curating.md). The work is in
library/sources/; this module reads flags and prints."""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from skillshelf.cli.common import command_settings
from skillshelf.cli.install import agents_reached
from skillshelf.cli.output import plural, print_json, say, shown, table
from skillshelf.cli.update_findability import Reviewing, findability_reviewer
from skillshelf.errors import SkillshelfError
from skillshelf.library.skill.paths import display_path

if TYPE_CHECKING:
    from skillshelf.library.sources.install import Outcome, Prepared, Shelf, SourceStatus
    from skillshelf.library.sources.lock import LockedSource

F = TypeVar("F", bound=Callable[..., Any])
LISTED_SKILLS = 30  # skills `add` names one by one; a large source is summed up past them


def root_option(fn: F) -> F:
    return click.option(
        "--library",
        "-l",
        "library",
        type=click.Path(file_okay=False, path_type=Path),
        help="The library root whose sources to change. [default: the first configured root]",
    )(fn)


def force_option(help_text: str) -> Callable[[F], F]:
    return click.option("--force", is_flag=True, help=help_text)


def accept_option(fn: F) -> F:
    return click.option(
        "--accept",
        "accepted",
        multiple=True,
        metavar="RULE:PATH",
        help="Take a high-risk scan finding anyway, by rule and path as the refusal names it (repeatable); "
        "recorded in skillshelf.lock for these bytes.",
    )(fn)


def _reviewer(_context: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    from skillshelf.library.sources.lock import reviewer_ok

    if value is not None and not reviewer_ok(value):
        raise click.BadParameter("give one line of printable text, such as an email")
    return value


def reviewer_option(fn: F) -> F:
    return click.option(
        "--reviewer",
        metavar="NAME",
        callback=_reviewer,
        help="Who approves (recorded in skillshelf.lock). [default: git's user.email in the library]",
    )(fn)


def signed_commit_options(fn: F) -> F:
    fn = click.option(
        "--allowed-signers",
        type=click.Path(path_type=Path, dir_okay=False),
        help="With --require-signed-commit: the allowed-signers file. [default: ROOT/.skillshelf/allowed_signers]",
    )(fn)
    return click.option(
        "--require-signed-commit",
        is_flag=True,
        help="git: take only a commit signed (SSH) by a key in the allowed signers; recorded in skillshelf.lock.",
    )(fn)


def library_root(library: Path | None, *, create: bool = False) -> Path:
    """--library, else the first configured root; made when `create` (a first `add`)."""
    if library is None:
        settings = command_settings()
        if settings.using_bundled or not settings.roots:
            raise click.UsageError(
                "no library configured: pass --library ROOT (or set `library` in the config file, or "
                "$SKILLSHELF_LIBRARY)"
            )
        library = settings.roots[0]
    root = library.expanduser()
    if create and not root.exists():
        root.mkdir(parents=True)
    return root


def _shelf(root: Path, *, reading: bool = False) -> Any:
    from skillshelf.library.sources.install import open_shelf

    return open_shelf(root, reading=reading, history_keep=command_settings().history_keep)


def _say_recovered(shelf: Shelf) -> None:
    for line in shelf.recovered:
        say(f"skillshelf: {line}", err=True)


@click.command(short_help="Add skills from a git repository, archive, folder or SKILL.md.")
@click.argument("source")
@click.option("--name", help="The folder (and id prefix) the skills install under. [default: the source's name]")
@click.option("--ref", help="git: the branch, tag or commit to install. [default: the default branch]")
@click.option("--path", "subpath", help="Take skills only from this folder of the source.")
@click.option("--only", multiple=True, metavar="GLOB", help="Only skills whose name or path matches (repeatable).")
@click.option(
    "--token-env", metavar="VAR", help="An MCP server or discovery index: the variable holding its bearer token."
)
@signed_commit_options
@root_option
@force_option("Replace a folder of that name that skillshelf did not install.")
@accept_option
@reviewer_option
def add(
    source: str,
    name: str | None,
    ref: str | None,
    subpath: str | None,
    only: tuple[str, ...],
    token_env: str | None,
    require_signed_commit: bool,
    allowed_signers: Path | None,
    library: Path | None,
    force: bool,
    accepted: tuple[str, ...],
    reviewer: str | None,
) -> None:
    """Install every skill SOURCE holds into ROOT/NAME/ and pin it in ROOT/skillshelf.lock.

    SOURCE is a git URL (https, ssh, git, file), a local repository, GitHub's owner/repo[/subdir][@ref],
    a folder, a .zip or .skill archive, a SKILL.md, an Agent Skills discovery index
    (https://host/.well-known/agent-skills/index.json) or another MCP server's Skills extension
    (mcp+https://host/mcp). Nothing from it is run. What it holds is scanned
    first: a high-risk finding is refused unless accepted with --accept RULE:PATH."""
    from skillshelf.library.sources.parse import parse_source, require_signed

    spec = parse_source(source, ref=ref, path=subpath, token_env=token_env)
    spec = require_signed(spec, require_signed_commit, allowed_signers)
    root = library_root(library, create=True)
    say(f"fetching {spec.public_url}{f' ({spec.ref})' if spec.ref else ''}…", err=True)
    with _shelf(root) as shelf:
        _say_recovered(shelf)
        outcome = shelf.add(spec, name=name, only=only, force=force, accepted=accepted, reviewer=reviewer)
        entry = shelf.lock().sources[outcome.source]
    where = display_path(shelf.folder(outcome.source))
    license_text = f", {entry.license}" if entry.license else ""
    say(
        f"Added {outcome.source}: {plural(len(outcome.skills), 'skill')} in {where} "
        f"({_version(entry.version)}{license_text})"
    )
    for skill_id in outcome.skills[:LISTED_SKILLS]:
        say(f"  {skill_id}")
    if len(outcome.skills) > LISTED_SKILLS:
        click.echo(f"  … and {len(outcome.skills) - LISTED_SKILLS} more (each has a line in skillshelf.lock)")
    for warning in [*outcome.warnings, *_collisions_with_other_roots(root, outcome.skills)]:
        say(f"note: {warning}", err=True)
    for key in sorted({key for skill in entry.skills for key in skill.accepted}):
        say(f"accepted (recorded in skillshelf.lock): {key}")
    _report_check(root, entry, shelf.folder(outcome.source))


def _report_check(root: Path, entry: LockedSource, folder: Path) -> None:
    """What `skillshelf check` finds in what was just added: counted, with the command that shows it."""
    from skillshelf.library.skill.checker import check_roots
    from skillshelf.library.skill.scan import scan_risk

    report = check_roots([root / skill.path for skill in entry.skills]) if entry.skills else None
    mine = report.findings if report else []
    errors = sum(1 for f in mine if f.severity == "error")
    warnings = sum(1 for f in mine if f.severity == "warning")
    if not errors and not warnings:
        click.echo("check: no errors or warnings in the added skills")
        return
    risky = sum(1 for f in mine if scan_risk(f) in ("high", "medium"))
    scanned = f" ({risky} from the scan)" if risky else ""
    click.echo(
        f"check: {plural(errors, 'error')} and {plural(warnings, 'warning')} in the added skills{scanned}; "
        f"see them with `skillshelf check {display_path(folder)}`"
    )


def _collisions_with_other_roots(root: Path, added: list[str]) -> list[str]:
    """What the server will not serve after this add: an added skill whose id another configured root
    holds (the first root wins an id), or that root's skill the added one now hides."""
    from skillshelf.library.skill.discovery import discover

    roots = [r.expanduser() for r in command_settings().roots]
    here = next((i for i, r in enumerate(roots) if _same_folder(r, root)), None)
    if here is None or len(roots) < 2:
        return []
    notes = []
    for index, other in enumerate(roots):
        if index == here:
            continue
        shared = sorted(set(added) & {source.skill_id for source in discover([other]).sources})
        if not shared:
            continue
        named = ", ".join(shared[:5]) + (f" and {len(shared) - 5} more" if len(shared) > 5 else "")
        if index < here:
            notes.append(
                f"{plural(len(shared), 'added skill')} not served: {display_path(other)} comes first and holds the "
                f"same id ({named}); rename the source with `--name` or one of the skills"
            )
        else:
            notes.append(
                f"{plural(len(shared), 'skill')} of {display_path(other)} no longer served: the added one comes "
                f"first with the same id ({named})"
            )
    return notes


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


@click.command(short_help="Make the library hold exactly what skillshelf.lock says.")
@root_option
@force_option("Overwrite local edits with the locked version (and remove what was added by hand).")
@accept_option
@click.option(
    "--frozen",
    is_flag=True,
    help="For CI: install what is missing, but exit 1 (changing nothing) when the library differs from the lock.",
)
def sync(library: Path | None, force: bool, accepted: tuple[str, ...], frozen: bool) -> None:
    """Install every source of ROOT/skillshelf.lock at its locked version, verifying every digest.

    Local edits are reported and kept unless --force; a source no longer in the lock is removed. With
    --frozen, anything here that differs from the lock (an edit not approved, a file added, a source the
    lock dropped) is listed and nothing is changed."""
    if frozen and (force or accepted):
        raise click.UsageError("--frozen changes nothing the lock does not say: it takes no --force or --accept")
    root = library_root(library)
    with _shelf(root) as shelf:
        _say_recovered(shelf)
        outcomes = shelf.sync(force=force, accepted=accepted, frozen=frozen)
    for outcome in outcomes:
        say(_outcome_line(outcome))
        for edit in outcome.local_edits:
            say(f"  local edit: {edit}")
    if not force and any(o.local_edits for o in outcomes):
        click.echo("Local edits were kept; `skillshelf sync --force` replaces them with the locked version.")
    if any(o.action == "failed" for o in outcomes):
        sys.exit(1)


def _outcome_line(outcome: Outcome) -> str:
    words = {
        "installed": f"installed ({plural(len(outcome.skills), 'skill')})",
        "unchanged": "as locked",
        "kept": "kept as it is here (local edits)",
        "removed": "removed (no longer in the lock)",
        "failed": "not synced, left as it was",
    }
    notes = f": {'; '.join(outcome.warnings)}" if outcome.warnings else ""
    return f"{outcome.source}: {words.get(outcome.action, outcome.action)}{notes}"


@click.command(short_help="Review and apply sources' newest versions.")
@click.argument("names", nargs=-1, metavar="[SOURCE]...")
@click.option("--check", is_flag=True, help="Only review; exit 1 when updates are pending (for CI).")
@click.option("--yes", "-y", is_flag=True, help="Apply without asking.")
@click.option("--json", "as_json", is_flag=True, help="Print the reviews as JSON.")
@click.option(
    "--no-findability", "skip_evals", is_flag=True, help="Skip rerunning the changed skills' trigger evals (faster)."
)
@signed_commit_options
@root_option
@force_option("Update sources with local edits too (the edits are replaced).")
@accept_option
@reviewer_option
def update(
    names: tuple[str, ...],
    check: bool,
    yes: bool,
    as_json: bool,
    skip_evals: bool,
    require_signed_commit: bool,
    allowed_signers: Path | None,
    library: Path | None,
    force: bool,
    accepted: tuple[str, ...],
    reviewer: str | None,
) -> None:
    """Fetch each SOURCE's newest version (default: all) and review it before anything changes: files an
    agent may run first, then the scan's findings, what the update makes harder to find (the changed
    skills' trigger evals rerun by words), skills added, removed and changed, descriptions, quality, new
    findings. A high-risk finding is refused unless accepted with --accept RULE:PATH."""
    root = library_root(library)
    with _shelf(root, reading=check) as shelf, findability_reviewer(root, not skip_evals) as reviewing:
        _say_recovered(shelf)
        signed = (require_signed_commit, allowed_signers)
        prepared, failures = _prepare_all(shelf, shelf.names(names), check, as_json, reviewing, signed)
        for item in [] if as_json else prepared:  # which agents the update will reach (docs/agents.md)
            if reach := agents_reached(root / item.entry.name):
                say(f"{item.entry.name}: {reach}")
        if as_json:
            print_json({"updates": [p.review.to_dict() for p in prepared], "errors": failures})
        if check or not prepared or not _confirmed(yes, shelf, prepared):
            for item in prepared:
                shelf.discard(item)
            _finish_check(prepared, failures, check, as_json)
            return
        outcomes = [shelf.apply(item, force=force, accepted=accepted, reviewer=reviewer) for item in prepared]
    for outcome in outcomes:
        _echo_applied(outcome)
        if outcome.action == "updated" and (reach := agents_reached(root / outcome.source)):
            say(f"{outcome.source}: {reach}")
    if failures or any(o.action in ("kept", "refused") for o in outcomes):
        sys.exit(1)


def _prepare_all(
    shelf: Shelf, names: list[str], check: bool, as_json: bool, reviewing: Reviewing, signed: tuple[bool, Path | None]
) -> tuple[list[Prepared], list[dict[str, str]]]:
    prepared: list[Prepared] = []
    failures: list[dict[str, str]] = []
    for name in names:
        say(f"checking {name}…", err=True)
        try:
            item = shelf.prepare_update(name, check_only=check, signed_commit=signed[0], allowed_signers=signed[1])
        except SkillshelfError as exc:
            failures.append({"source": name, "error": exc.message})
            say(f"{name}: {exc.message}", err=True)
            continue
        if item is None:
            if not as_json:
                say(f"{name}: up to date")
            continue
        reviewing(item, shelf.folder(name))  # what it makes harder to find, shown with the rest of the review
        prepared.append(item)
        if not as_json:
            for line in item.review.lines():  # every name in it escaped: one could erase the warning above it
                say(line)
    return prepared, failures


def _finish_check(prepared: list[Prepared], failures: list[dict[str, str]], check: bool, as_json: bool) -> None:
    """After a review that applied nothing: exit 1 when updates are pending (--check) or a source failed."""
    if prepared and check and not as_json:
        click.echo(f"{plural(len(prepared), 'source')} with updates pending; `skillshelf update` applies them.")
    if prepared and not check:
        click.echo("Nothing was changed.", err=True)
    if failures or prepared:
        sys.exit(1)


def _confirmed(yes: bool, shelf: Shelf, prepared: list[Prepared]) -> bool:
    """--yes, or a yes typed on a terminal; without a terminal, refused (the staged updates dropped)."""
    if yes:
        return True
    if not sys.stdin.isatty():
        for item in prepared:
            shelf.discard(item)
        raise click.ClickException(
            "updates are pending (reviewed above) and there is no terminal to confirm on: pass --yes to apply "
            "them, or --check to only review"
        )
    return click.confirm("Apply these updates?", default=False)


def _lines_escaped(text: str) -> str:
    """A refusal is several lines; each line's names escaped, the line breaks kept."""
    return "\n".join(shown(line) for line in text.split("\n"))


def _echo_applied(outcome: Outcome) -> None:
    if outcome.action == "kept":
        edits = ", ".join(str(e) for e in outcome.local_edits)
        say(f"{outcome.source}: not updated, it has local edits: {edits}. Pass --force to replace them.")
    elif outcome.action == "refused":
        click.echo(
            shown(f"{outcome.source}: not updated. ") + "; ".join(map(_lines_escaped, outcome.warnings)), err=True
        )
    else:
        say(f"{outcome.source}: updated ({plural(len(outcome.skills), 'skill')})")


@click.command(short_help="Remove a source, or one skill of a source.")
@click.argument("what", metavar="SOURCE|SKILL_ID")
@root_option
@force_option("Remove even with local edits.")
def remove(what: str, library: Path | None, force: bool) -> None:
    """Remove SOURCE (its folder and its lock entry), or one SKILL_ID of a source (later updates leave it
    out). The skills' usage history is kept."""
    root = library_root(library)
    with _shelf(root) as shelf:
        _say_recovered(shelf)
        outcome = shelf.remove(what, force=force)
    if outcome.action == "kept":
        edits = ", ".join(str(e) for e in outcome.local_edits)
        raise click.ClickException(shown(f"not removed: {edits}. Pass --force to remove it anyway"))
    whole = f"{outcome.source} ({plural(len(outcome.skills), 'skill')})"
    removed = whole if what == outcome.source else outcome.skills[0]
    say(f"Removed {removed}; usage history is kept.")


@click.command(name="sources", short_help="The library's sources: version, age, skills, updates, edits.")
@root_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def sources(library: Path | None, as_json: bool) -> None:
    """Each source of the library: its commit (or digest), when it was installed, its skills, updates
    pending at the last `skillshelf update --check`, and local edits."""
    root = library_root(library)
    with _shelf(root, reading=True) as shelf:
        _say_recovered(shelf)
        found = shelf.status()
    if as_json:
        print_json({"root": display_path(root), "sources": [_status_json(s) for s in found]})
        return
    if not found:
        click.echo(f"No sources in {display_path(root)}; add one with `skillshelf add SOURCE`.")
        return
    rows = [_status_row(s) for s in found]
    table(("source", "kind", "version", "installed", "skills", "license", "updates", "local edits"), rows,
          numeric=("skills",))  # fmt: skip
    for status in found:
        if reach := agents_reached(root / status.entry.name):
            say(f"{status.entry.name}: {reach}")
    _say_rollbacks(found)


def _say_rollbacks(found: list[SourceStatus]) -> None:
    """Each rollback the lock records (a local edit of its own kind), with its reason."""
    for status in found:
        for edit in status.local_edits:
            if edit.recorded:
                say(f"{edit.what}: {edit.how}")


def _status_row(status: SourceStatus) -> tuple[object, ...]:
    entry = status.entry
    version = _version(entry.version) + (f" {entry.ref}" if entry.ref else "")
    updates = str(status.check.get("summary")) if status.check and status.check.get("pending") else "-"
    if status.check and not status.check.get("pending"):
        updates = "none"
    edits = plural(len(status.local_edits), "edit") if status.local_edits else "-"
    return (entry.name, entry.kind, version, _age(entry.installed), len(entry.skills), entry.license or "-",
            updates, edits)  # fmt: skip


def _status_json(status: SourceStatus) -> dict[str, Any]:
    entry = status.entry
    return {
        "name": entry.name,
        "kind": entry.kind,
        "url": entry.url,
        "ref": entry.ref,
        "commit": entry.commit,
        "digest": entry.digest,
        "installed": entry.installed,
        "age": _age(entry.installed),
        "skills": len(entry.skills),
        "license": entry.license,
        "lastCheck": status.check,
        "localEdits": [{"what": e.what, "how": e.how} for e in status.local_edits],
    }


def _version(version: str) -> str:
    return ("digest " if version.startswith("sha256:") else "commit ") + version.removeprefix("sha256:")[:8]


def _age(installed: str, now: datetime | None = None) -> str:
    try:
        then = datetime.strptime(installed, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return installed
    seconds = max(0, int(((now or datetime.now(UTC)) - then).total_seconds()))
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            return f"{plural(seconds // size, unit)} ago"
    return "just now"


@click.command(short_help="Approve the bytes of skills as they are installed now.")
@click.argument("targets", nargs=-1, required=True, metavar="ID|SOURCE...")
@reviewer_option
@root_option
def approve(targets: tuple[str, ...], reviewer: str | None, library: Path | None) -> None:
    """Record in ROOT/skillshelf.lock that each skill (a source: each of its skills) is approved as its bytes
    are now: a local edit, or a skill written here, which `require_verified` serves only once approved."""
    from skillshelf.library.sources import approval
    from skillshelf.library.sources.install import now
    from skillshelf.library.sources.signing import signature_path

    root = library_root(library)
    with _shelf(root) as shelf:
        _say_recovered(shelf)
        by = approval.reviewer(root, reviewer, required=True)
        assert by is not None
        approved = approval.approve(shelf.root, shelf.lock(), targets, by, now())
    for skill_id in approved:
        say(f"approved {skill_id} (by {by})")
    if signature_path(root).exists():
        click.echo("skillshelf.lock changed, so its signature no longer matches: `skillshelf sign` signs it again.")


@click.command(short_help="Check every installed byte against skillshelf.lock (and its signature).")
@root_option
@click.option("--signed", is_flag=True, help="Also require the lock's signature to verify (skillshelf.lock.sig).")
@click.option(
    "--allowed-signers",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The keys trusted to sign. [default: ROOT/.skillshelf/allowed_signers, else git's gpg.ssh.allowedSignersFile]",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def verify(library: Path | None, signed: bool, allowed_signers: Path | None, as_json: bool) -> None:
    """Compare every skill's files with the bytes approved in ROOT/skillshelf.lock and name each file that
    changed, was added or is missing; exit 1 on any difference (or, with --signed, a signature that does not
    verify). Changes nothing."""
    from skillshelf.library.sources import approval, signing
    from skillshelf.library.sources.lock import lock_path, read_lock

    root = library_root(library)
    if not lock_path(root).exists():
        raise click.ClickException(f"no skillshelf.lock in {display_path(root)}: nothing to verify")
    signed_by = signing.verify_signed(root, allowed_signers) if signed else None
    lock = signed_by.lock if signed_by is not None else read_lock(lock_path(root))
    differences = approval.verify(root, lock)
    if as_json:
        print_json(
            {
                "signedBy": list(signed_by.signers) if signed_by else None,
                "differences": [d.to_dict() for d in differences],
            }
        )
    else:
        if signed_by is not None:
            say(f"signature: good, by {', '.join(signed_by.signers)} ({display_path(signed_by.allowed)})")
        for difference in differences:
            for line in difference.lines():
                say(line)
        skills = sum(len(s.skills) for s in lock.sources.values()) + len(lock.approved)
        if differences:
            click.echo(f"{plural(len(differences), 'difference')} from skillshelf.lock.", err=True)
        else:
            click.echo(f"verified: {plural(skills, 'skill')} as approved in skillshelf.lock")
        _say_unapproved(approval.unapproved(root, lock))
    if differences:
        sys.exit(1)


def _say_unapproved(ids: list[str]) -> None:
    """Skills written here that no approval covers: not a difference, but `require_verified` hides them."""
    if not ids:
        return
    named = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
    say(
        f"note: {plural(len(ids), 'skill')} written here with no approval ({named}); a server with "
        "require_verified hides them until `skillshelf approve ID`",
        err=True,
    )


@click.command(short_help="Sign skillshelf.lock with your SSH key.")
@click.option(
    "--key",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("~/.ssh/id_ed25519"),
    show_default=True,
    help="The SSH key to sign with (a private key, or its .pub when ssh-agent holds it).",
)
@root_option
def sign(key: Path, library: Path | None) -> None:
    """Sign ROOT/skillshelf.lock (`ssh-keygen -Y sign`, namespace skillshelf-lock) into skillshelf.lock.sig:
    commit both. `skillshelf verify --signed` checks it against the allowed signers."""
    from skillshelf.library.sources import signing

    root = library_root(library)
    written = signing.sign(root, key)
    say(f"signed skillshelf.lock: {display_path(written)}")
    try:  # said now rather than at the first `verify --signed`: the key is not one the team trusts (yet)
        signing.verify_signed(root)
    except SkillshelfError as exc:
        say(f"note: `skillshelf verify --signed` would refuse it: {exc.message}", err=True)


COMMANDS = (add, sync, update, remove, sources, approve, verify, sign)
