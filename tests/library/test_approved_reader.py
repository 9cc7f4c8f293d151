"""A skill `require_verified` holds back is hidden from every member of the reader interface, as a view's
rules hide one (tests/library/test_reader.py's checks, run with the approval gate instead of a rule);
only the findings name it, to say why and how to approve it."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from skillshelf.library.access.approved import CODE, ApprovalGate
from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.sources.approval import approve
from skillshelf.library.sources.lock import Lock
from tests.conftest import write
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


def tool_row(gated: ViewReader) -> IndexedSkill:
    tool = gated.get("docs/tool")
    assert tool is not None
    return tool


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda folder: (folder / "scripts" / "run.py").chmod(0o755), id="exec-bit"),
        pytest.param(lambda folder: write(folder / "scripts" / "later.py", "import os\n"), id="file-added"),
        pytest.param(lambda folder: (folder / "references" / "guide.md").unlink(), id="file-removed"),
        pytest.param(lambda folder: (folder / "references" / "more.md").symlink_to("guide.md"), id="link-added-inside"),
    ],
)
def test_any_change_to_an_approved_skills_files_holds_it_back(
    gated: ViewReader, library: SkillLibrary, root: Path, change: Callable[[Path], object]
) -> None:
    tool_row(gated)
    change(root / "docs" / "tool")
    library.mark_dirty()
    assert gated.get("docs/tool") is None


@pytest.mark.parametrize(
    ("target", "served"),
    [
        ("shared/notes.txt", False),
        ("docs/tool/node_modules/notes.txt", False),
        ("secret/vault-notes/references/keys.md", False),
        ("docs/tool/references/guide.md", True),  # inside the skill: the digest covers what it shows
    ],
)
def test_a_link_out_of_an_approved_skill_is_held_back_its_target_is_not_approved(
    root: Path, library: SkillLibrary, target: str, served: bool
) -> None:
    """The digest pins a link's text, not the bytes it shows: an edit there would be served unapproved."""
    if not (root / target).exists():
        write(root / target, "Rotate with care.\n")
    link = root / "docs" / "tool" / "references" / "shared.md"
    link.symlink_to(os.path.relpath(root / target, link.parent))
    library.mark_dirty()
    approve(root, Lock(), ("docs/tool", "secret/vault-notes"), "ana@example.org", "2026-11-26T09:15:02Z")
    gated = ViewReader(library, (), ApprovalGate(library, verified=True, signed=False))
    assert (gated.get("docs/tool") is not None) == served
    if served:
        return
    (why,) = [f.message for f in gated.findings() if f.code == CODE and "docs/tool" in f.message]
    assert "references/shared.md is a link out of its files" in why and "`skillshelf approve docs/tool`" in why


@pytest.mark.parametrize(
    ("where", "planted"),
    [
        ("node_modules", "left-pad/index.js"),
        ("scripts/node_modules", "left-pad/index.js"),
        ("build", "plugin.py"),  # approved code doing sys.path.insert(0, here / "build") imports it
        ("scripts/build", "lib/plugin.py"),
        ("dist", "tool.js"),
        ("venv", "lib/python3.12/site-packages/evil.pth"),
        ("build", ""),  # an empty folder: the watcher would not see a file added to it later
    ],
)
@pytest.mark.parametrize("language", ["main.js", "main.py"])
def test_a_skill_with_a_build_or_dependency_folder_is_held_back_no_approval_covers_it(
    root: Path, library: SkillLibrary, where: str, planted: str, language: str
) -> None:
    """The digest leaves build and dependency folders out (as the listing does), yet a run can load code from
    them: Node from `node_modules/`, Python from a `build/` or `venv/` its approved code puts on the path."""
    tool = root / "docs" / "tool"
    write(tool / "scripts" / language, "print('approved')\n")
    library.mark_dirty()
    approve(root, Lock(), ("docs/tool",), "ana@example.org", "2026-11-26T09:15:02Z")
    gated = ViewReader(library, (), ApprovalGate(library, verified=True, signed=False))
    assert gated.get("docs/tool") is not None
    if planted:
        write(tool / where / planted, "whatever it wants to run\n")
    else:
        (tool / where).mkdir(parents=True)
    library.mark_dirty()
    assert gated.get("docs/tool") is None
    (why,) = [f.message for f in gated.findings() if f.code == CODE and "docs/tool" in f.message]
    assert f"{where}/ is in its folder" in why and "`skillshelf approve docs/tool`" in why
    (tool / where).rename(tmp := tool.parent / "moved-away")
    shutil.rmtree(tmp)
    library.mark_dirty()
    assert gated.get("docs/tool") is not None  # without it the skill is served again, no new approval needed


def test_a_file_named_like_a_build_folder_is_held_back_too(root: Path, library: SkillLibrary) -> None:
    """`scripts/build` is left out of the digest like a folder of that name, and a script can run it."""
    gated = ViewReader(library, (), ApprovalGate(library, verified=True, signed=False))
    approve(root, Lock(), ("docs/tool",), "ana@example.org", "2026-11-26T09:15:02Z")
    write(root / "docs" / "tool" / "scripts" / "build", "#!/bin/sh\necho unreviewed\n")
    library.mark_dirty()
    assert gated.get("docs/tool") is None
    (why,) = [f.message for f in gated.findings() if f.code == CODE and "docs/tool" in f.message]
    assert "scripts/build is in its folder" in why


def test_a_pycache_folder_keeps_an_approved_skill_served(root: Path, library: SkillLibrary) -> None:
    """A run never reads `__pycache__` (the skill's modules compile from source; PYTHONPYCACHEPREFIX points
    every Python it starts elsewhere), and running a skill's Python outside skillshelf writes one."""
    gated = ViewReader(library, (), ApprovalGate(library, verified=True, signed=False))
    approve(root, Lock(), ("docs/tool",), "ana@example.org", "2026-11-26T09:15:02Z")
    write(root / "docs" / "tool" / "scripts" / "__pycache__" / "run.cpython-312.pyc", "bytes\n")
    library.mark_dirty()
    assert gated.get("docs/tool") is not None
