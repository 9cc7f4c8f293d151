"""A skill `require_verified` holds back is hidden from every member of the reader interface, as a view's
rules hide one (tests/library/test_reader.py's checks, run with the approval gate instead of a rule);
only the findings name it, to say why and how to approve it."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillshelf.library.access.approved import CODE, ApprovalGate
from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.library.sources.approval import approve
from skillshelf.library.sources.lock import Lock
from tests.library.test_reader import CHECKS, EVERY_MEMBER, HIDDEN, hidden_row, library, root, walk_hides

__all__ = ["library", "root"]  # the fixtures, shared with test_reader.py


@pytest.fixture
def gated(root: Path, library: SkillLibrary) -> ViewReader:
    approve(root, Lock(), ("docs/tool", "python/slugify"), "ana@example.org", "2026-11-26T09:15:02Z")
    return ViewReader(library, (), ApprovalGate(library, verified=True, signed=False))


@pytest.mark.parametrize("member", sorted(set(CHECKS) - {"findings"}))
def test_a_skill_nobody_approved_is_absent_or_unknown_to_every_member(
    gated: ViewReader, library: SkillLibrary, member: str
) -> None:
    CHECKS[member](gated, hidden_row(library))


@pytest.mark.parametrize(("role", "member"), [pair for pair in EVERY_MEMBER if pair[1] != "findings"])
def test_no_member_of_any_role_returns_a_skill_nobody_approved(
    gated: ViewReader, library: SkillLibrary, role: str, member: str
) -> None:
    walk_hides(gated, hidden_row(library), role, member)


def test_the_findings_name_the_held_back_skill_only_to_say_how_to_approve_it(gated: ViewReader) -> None:
    named = [f for f in gated.findings() if HIDDEN in repr(f)]
    assert [f.code for f in named] == [CODE]
    assert f"`skillshelf approve {HIDDEN}`" in named[0].message
