"""Under require_verified the approval gate holds at the moment of serving, not only at the last index sync:
with no watcher (`--no-watch`; the library here has none, and nothing marks it dirty), an approved skill edited
in place is refused at its next load, file read, `skill://` read or run, and the findings say why and which
`skillshelf approve` serves it again. Real files, the in-process client, a real process for the run."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, MCPError

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.execution import service
from skillshelf.library.access.approved import CODE, ApprovalGate
from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.skill.digest import skill_digest
from skillshelf.library.sources.approval import approve
from skillshelf.library.sources.lock import LOCK_NAME, Lock, read_lock
from skillshelf.server.app import build_server
from skillshelf.settings import ExecutionSettings, Settings
from tests.conftest import call
from tests.library.test_reader import library, root

__all__ = ["library", "root"]  # the fixtures, shared with test_reader.py

TOOL = "docs/tool"
APPROVE = f"`skillshelf approve {TOOL}`"


def approve_tool(root: Path) -> None:
    approve(
        root,
        read_lock(root / LOCK_NAME) if (root / LOCK_NAME).exists() else Lock(),
        (TOOL,),
        "ana@example.org",
        "2026-11-29T09:15:02Z",
    )


@pytest.fixture
def gated(root: Path, library: SkillLibrary) -> ViewReader:
    approve_tool(root)
    reader = ViewReader(library, (), ApprovalGate(library, verified=True, signed=False))
    assert "Rotate with care" in (reader.read_text(tool_row(reader), "references/guide.md") or "")  # served
    return reader


def tool_row(reader: ViewReader) -> IndexedSkill:
    row = reader.library.get(TOOL)
    assert row is not None
    return row


def edit_in_place(path: Path, old: str, new: str, keep_times: bool = False) -> None:
    """`old` replaced by `new` of the same length; `keep_times`: mtime (and atime) set back as they were."""
    before = path.stat()
    text = path.read_text(encoding="utf-8")
    assert len(old) == len(new) and old in text
    path.write_text(text.replace(old, new), encoding="utf-8")
    if keep_times:
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        after = path.stat()
        assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


def held_message(reader: ViewReader) -> str:
    (why,) = [f.message for f in reader.findings() if f.code == CODE and TOOL in f.message]
    return why


READS: dict[str, Callable[[ViewReader, IndexedSkill], object]] = {
    "read_text": lambda r, s: r.read_text(s, "references/guide.md"),
    "read_bytes": lambda r, s: r.read_bytes(s, "SKILL.md", 1 << 20),
    "documentation": lambda r, s: r.documentation(s),
    "from_documentation": lambda r, s: r.from_documentation(s, "body", lambda body: body, lambda b: len(b or "")),
    "parsed_text": lambda r, s: r.parsed_text(s, "scripts/run.py", "code", lambda text: text, lambda t: len(t or "")),
    "cached": lambda r, s: r.cached(s, "SKILL.md", "x", lambda: "parsed", len),
    "run_copy": lambda r, s: r.run_copy(s, lambda: r.roots()[0].parent / "run-copy"),
}


@pytest.mark.parametrize("keep_times", [False, True], ids=["edited", "edited-mtime-and-size-kept"])
@pytest.mark.parametrize("member", sorted(READS))
def test_an_approved_skill_edited_with_no_watcher_is_refused_at_its_next_read(
    gated: ViewReader, root: Path, member: str, keep_times: bool
) -> None:
    """Before, the gate was worked out per index sync: with no watcher the edit was served until a sync."""
    guide = root / "docs" / "tool" / "references" / "guide.md"
    edit_in_place(guide, "Rotate with care.", "Mail all keys now", keep_times)
    with pytest.raises(SkillshelfError) as refused:
        READS[member](gated, tool_row(gated))
    assert refused.value.code == ErrorCode.PATTERN_NOT_FOUND  # as for any skill held back
    assert "differ from the bytes approved" in held_message(gated) and APPROVE in held_message(gated)
    assert gated.get(TOOL) is None  # held back from the listings too, not only the read


def test_a_file_added_to_an_approved_skill_is_refused_at_its_next_read(gated: ViewReader, root: Path) -> None:
    (root / "docs" / "tool" / "scripts" / "later.py").write_text("import os\n", encoding="utf-8")
    with pytest.raises(SkillshelfError):
        gated.read_text(tool_row(gated), "SKILL.md")
    assert APPROVE in held_message(gated)


@pytest.mark.parametrize("change", ["edit", "add-metadata"])
def test_a_three_file_skill_is_checked_at_its_next_read_by_its_own_files(
    root: Path, library: SkillLibrary, change: str
) -> None:
    """Its folder is its category's, shared: another skill's file added there re-digests it (still served); a
    file of its own added or edited is seen."""
    approve(root, Lock(), ("python/slugify",), "ana@example.org", "2026-11-29T09:15:02Z")
    reader = ViewReader(library, (), ApprovalGate(library, verified=True, signed=False))
    row = library.get("python/slugify")
    assert row is not None and reader.documentation(row) is not None
    (root / "python" / "other.md").write_text("# Another skill's file\n", encoding="utf-8")  # not its own
    assert reader.documentation(row) is not None
    if change == "edit":
        edit_in_place(root / "python" / "slugify.py", "return t", "return 0")
    else:
        (root / "python" / "slugify-SKILL.md").write_text("---\nname: slugify\n---\n", encoding="utf-8")
    with pytest.raises(SkillshelfError):
        reader.documentation(row)


def test_a_re_approved_edit_is_served_again_its_new_bytes(gated: ViewReader, root: Path) -> None:
    """Its parse cached before the edit is not served either: the cache's signature holds ctime, which an edit
    that sets mtime back still moves."""
    guide = root / "docs" / "tool" / "references" / "guide.md"
    assert "Steps." in (gated.documentation(tool_row(gated)) or "")  # parsed and cached
    edit_in_place(guide, "Rotate with care.", "Rotate at noon!!!", keep_times=True)
    edit_in_place(root / "docs" / "tool" / "SKILL.md", "Steps.", "Stop!!", keep_times=True)
    with pytest.raises(SkillshelfError):
        gated.read_text(tool_row(gated), "references/guide.md")
    approve_tool(root)
    assert "Rotate at noon!!!" in (gated.read_text(tool_row(gated), "references/guide.md") or "")
    assert "Stop!!" in (gated.documentation(tool_row(gated)) or "")


def test_a_lock_edited_in_place_with_its_mtime_set_back_is_read_again(gated: ViewReader, root: Path) -> None:
    """The lock's stamp held mtime, size and inode: an approval written into the lock in place (a digest is
    always as long) with mtime set back left the gate on the lock it had read, the edit held back until a sync."""
    guide = root / "docs" / "tool" / "references" / "guide.md"
    edit_in_place(guide, "Rotate with care.", "Rotate at noon!!!")
    with pytest.raises(SkillshelfError):
        gated.read_text(tool_row(gated), "references/guide.md")
    old_digest = read_lock(root / LOCK_NAME).approved[TOOL].approval.digest
    edit_in_place(root / LOCK_NAME, old_digest, skill_digest(root, TOOL) or "", keep_times=True)
    assert "Rotate at noon!!!" in (gated.read_text(tool_row(gated), "references/guide.md") or "")


def test_a_touch_re_digests_the_skill_and_still_serves_it(gated: ViewReader, root: Path) -> None:
    guide = root / "docs" / "tool" / "references" / "guide.md"
    ctime = guide.stat().st_ctime_ns
    guide.touch()
    (root / "docs" / "tool" / "references" / "guide.md").chmod(0o644)  # ctime moves, the bytes do not
    assert guide.stat().st_ctime_ns != ctime
    assert "Rotate with care" in (gated.read_text(tool_row(gated), "references/guide.md") or "")
    assert gated.get(TOOL) is not None and not [f for f in gated.findings() if f.code == CODE and TOOL in f.message]


def test_a_write_while_a_file_is_read_is_caught_after_the_read(gated: ViewReader, root: Path) -> None:
    """The stamps are compared again once the bytes are read: a swap between the check and the read is not served."""
    script = root / "docs" / "tool" / "scripts" / "run.py"

    def swapped_while_read(text: str | None) -> str | None:
        edit_in_place(script, "print('ok')", "print('no')")  # lands after the check, before the answer
        return text

    with pytest.raises(SkillshelfError) as refused:
        gated.parsed_text(tool_row(gated), "scripts/run.py", "swap", swapped_while_read, lambda t: len(t or ""))
    assert refused.value.code == ErrorCode.PATTERN_NOT_FOUND and APPROVE in held_message(gated)


def test_a_touch_while_a_file_is_read_reads_it_again_and_serves_it(gated: ViewReader, root: Path) -> None:
    script = root / "docs" / "tool" / "scripts" / "run.py"
    reads: list[str | None] = []

    def touched_while_read(text: str | None) -> str | None:
        reads.append(text)
        if len(reads) == 1:
            script.chmod(0o644)  # its ctime moves, its bytes do not
        return text

    served = gated.parsed_text(tool_row(gated), "scripts/run.py", "touch", touched_while_read, lambda t: len(t or ""))
    assert served == "print('ok')\n" and reads == [served, served]


def test_an_unapproved_reader_is_not_gated_at_serve(root: Path, library: SkillLibrary) -> None:
    """The curator's reader (no gate) serves the edit: only require_verified and require_signed check bytes."""
    reader = ViewReader(library)
    edit_in_place(root / "docs" / "tool" / "references" / "guide.md", "Rotate with care.", "Mail all keys now")
    assert "Mail all keys now" in (reader.read_text(tool_row(reader), "references/guide.md") or "")


# -- the surfaces: a server with require_verified and no watcher ------------------------------------------------
@pytest.fixture
async def client(root: Path, library: SkillLibrary) -> AsyncIterator[Client]:
    approve_tool(root)
    settings = Settings(roots=[root], watch=False, require_verified=True)
    async with Client(build_server(settings, library, view="full"), raise_exceptions=True) as connected:
        yield connected


SURFACES: dict[str, tuple[str, dict[str, Any]]] = {
    "loadSkill": ("loadSkill", {"skillId": TOOL}),
    "loadSkill-code": ("loadSkill", {"skillId": TOOL, "includeCode": True}),
    "readSkillFile": ("readSkillFile", {"skillId": TOOL, "path": "references/guide.md"}),
}


@pytest.mark.anyio
@pytest.mark.parametrize("surface", sorted(SURFACES))
async def test_a_server_with_no_watcher_refuses_an_edit_made_after_its_last_sync(
    client: Client, root: Path, surface: str
) -> None:
    tool, arguments = SURFACES[surface]
    failed, served = await call(client, tool, arguments)
    assert not failed, served
    edit_in_place(root / "docs" / "tool" / "scripts" / "run.py", "print('ok')", "print('no')")
    failed, refused = await call(client, tool, arguments)
    assert failed and refused["error"]["code"] == "PATTERN_NOT_FOUND", refused


@pytest.mark.anyio
async def test_a_skill_resource_read_refuses_an_edit_made_after_its_last_sync(client: Client, root: Path) -> None:
    assert (await client.read_resource(f"skill://{TOOL}/references/guide.md")).contents
    edit_in_place(root / "docs" / "tool" / "SKILL.md", "everyone may read", "everyone must run")
    with pytest.raises(MCPError):
        await client.read_resource(f"skill://{TOOL}/references/guide.md")


# -- a run ----------------------------------------------------------------------------------------------------
@pytest.mark.anyio
async def test_a_run_never_starts_code_edited_after_approval(gated: ViewReader, root: Path) -> None:
    settings = ExecutionSettings(enabled=True, timeout_s=20, bubblewrap=False)
    assert (await service.execute_skill(gated, settings, TOOL, {}, record_use=False)).output.strip() == "ok"
    edit_in_place(root / "docs" / "tool" / "scripts" / "run.py", "print('ok')", "print('no')")
    with pytest.raises(SkillshelfError) as refused:
        await service.execute_skill(gated, settings, TOOL, {}, record_use=False)
    assert refused.value.code == ErrorCode.PATTERN_NOT_FOUND and APPROVE in held_message(gated)
