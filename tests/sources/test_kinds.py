"""A kind of source is one class in one registry (library/sources/kinds/): nothing else compares a kind's
name, the `Kind` type names exactly the registered kinds, and the network kinds' clients are imported
only when such a source is fetched."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import get_args

import pytest

from skillshelf.library.sources.errors import LOCK_FIX, SourceError
from skillshelf.library.sources.kinds import KINDS
from skillshelf.library.sources.lock import parse_lock
from skillshelf.library.sources.spec import Kind

SOURCES = Path(__file__).resolve().parents[2] / "src" / "skillshelf"


def test_every_kind_is_one_class_in_the_registry_and_the_kind_type_names_exactly_those() -> None:
    assert list(KINDS) == list(get_args(Kind))
    assert all(kind.name == name for name, kind in KINDS.items())


def test_no_module_outside_the_kinds_compares_a_source_kind_by_name() -> None:
    """What a kind does is its class's (kinds/): a `kind == "git"` elsewhere is a rule written twice."""
    names = "|".join(n for n in KINDS if n != "file")  # "file" is also a member's kind (a file, not a link)
    compared = re.compile(rf'kind\s*(==|!=)\s*"({names})"|kind (not )?in \([^)]*"({names})"|REMOTE_KINDS')
    kinds = SOURCES / "library" / "sources" / "kinds"
    found = [
        f"{path.relative_to(SOURCES)}:{number}"
        for path in sorted(SOURCES.rglob("*.py"))
        if not path.is_relative_to(kinds) and not path.is_relative_to(SOURCES / "remote")  # an index's own types
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if compared.search(line)
    ]
    assert found == []


def test_the_command_line_starts_without_the_network_clients() -> None:
    """`import skillshelf.cli` does not import the MCP SDK or httpx: a network kind's client is imported
    when such a source is fetched (skillshelf.remote.sources), not by every command."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import skillshelf.cli"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(SOURCES.parent)},
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    heavy = sorted(m for m in imported if m.split(".")[0] in ("mcp", "httpx"))
    assert imported and heavy == []


ADDRESSES: dict[str, str] = {
    "git": "https://example.com/team/skills.git",
    "archive": "../vendor/pdf-fill.skill",
    "folder": "~/drafts/kit",
    "file": "../drafts/commit-style/SKILL.md",
    "index": "https://example.com/.well-known/agent-skills/index.json",
    "mcp": "mcp+https://example.com/mcp",
}


def _entry(kind: str, url: str, extra: str = "") -> str:
    return f'[source.kit]\nkind = "{kind}"\nurl = "{url}"\ninstalled = "2026-07-02T10:11:12Z"\n{extra}'


@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_reads_its_own_lock_fields_and_refuses_the_ones_it_has_not(kind: Kind) -> None:
    """The lock is input: a field that belongs to another kind is refused by this kind's class."""
    source = parse_lock(_entry(kind, ADDRESSES[kind])).sources["kit"]
    assert (source.kind, source.url) == (kind, ADDRESSES[kind])
    token = _entry(kind, ADDRESSES[kind], 'token_env = "TOKEN"\n')
    signed = _entry(kind, ADDRESSES[kind], 'signed = "ssh"\n')
    for text, takes in ((token, KINDS[kind].remote), (signed, KINDS[kind].signed_commits)):
        if takes:
            parse_lock(text)
        else:
            with pytest.raises(SourceError, match=re.escape(LOCK_FIX)):
                parse_lock(text)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_locked_url_of_the_wrong_form_for_its_kind_is_refused(kind: Kind) -> None:
    wrong = "https://example.com/elsewhere" if not KINDS[kind].networked(ADDRESSES[kind]) else "../a/path"
    if kind == "git":  # a git source is a URL or a local repository: both forms are its own
        assert parse_lock(_entry(kind, wrong)).sources["kit"].url == wrong
        return
    with pytest.raises(SourceError, match=rf"url of an? {kind}"):
        parse_lock(_entry(kind, wrong))


def test_an_unknown_kind_in_the_lock_names_the_known_ones() -> None:
    with pytest.raises(SourceError, match="has kind 'svn'; expected one of git, archive, folder, file, index, mcp"):
        parse_lock(_entry("svn", "../x"))
