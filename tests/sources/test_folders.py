"""Local folders and single SKILL.md files: both layouts found, nested skills placed beside their
parent, the library's own rules (dot-names, build folders) applied, FIFOs refused; what is installed is
what the library then serves."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.sources import fetch
from skillshelf.library.sources.archive import Member
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.kinds import open_snapshot
from skillshelf.library.sources.lock import read_lock
from skillshelf.library.sources.spec import SourceSpec
from tests.sources.helpers import add, skill_md, staging_left, tree_of


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    root.mkdir()
    return root


def test_a_folder_gives_both_layouts_and_the_library_serves_what_was_installed(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "kit"
    write(source / "agents" / "triage" / "SKILL.md", skill_md("triage", "Triage incoming bug reports by severity."))
    write(source / "agents" / "triage" / ".env", "TOKEN=secret\n")
    write(source / "agents" / "triage" / "node_modules" / "x.js", "junk\n")
    write(source / "python" / "retry.md", "# Retry\n\nRetry flaky calls with exponential backoff.\n")
    write(source / "python" / "retry.py", "def retry() -> None:\n    pass\n")
    write(source / "python" / "notes.md", "# Notes\n\nJust documentation.\n")
    write(source / "README.md", "# Kit\n")
    outcome = add(root, str(source))
    assert outcome.skills == ["kit/retry", "kit/triage"]
    assert sorted(p.name for p in (root / "kit").iterdir()) == ["retry.md", "retry.py", "triage"]
    assert not (root / "kit" / "triage" / ".env").exists() and not (root / "kit" / "triage" / "node_modules").exists()
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    try:
        library.sync()
        assert {s.id for s in library.overview()} == {"kit/retry", "kit/triage"}
    finally:
        library.close()
    entry = read_lock(root / "skillshelf.lock").sources["kit"]
    assert entry.kind == "folder" and entry.url == "../kit" and entry.digest


def test_a_single_skill_md_installs_as_one_skill_named_after_its_folder(root: Path, tmp_path: Path) -> None:
    doc = write(tmp_path / "drafts" / "commit-style" / "SKILL.md", skill_md("commit-style", "Write commit messages."))
    outcome = add(root, str(doc), name="mine")
    assert outcome.skills == ["mine/commit-style"]
    assert (root / "mine" / "commit-style" / "SKILL.md").read_bytes() == doc.read_bytes()
    assert read_lock(root / "skillshelf.lock").sources["mine"].kind == "file"


def test_a_skill_inside_another_is_placed_beside_it_unless_it_is_an_example_the_other_ships(
    root: Path, tmp_path: Path
) -> None:
    source = tmp_path / "suite"
    write(source / "agenthub" / "SKILL.md", skill_md("agenthub", "Coordinate a hub of agents."))
    write(source / "agenthub" / "references" / "guide.md", "# Guide\n")
    write(source / "agenthub" / "skills" / "status" / "SKILL.md", skill_md("status", "Report the hub's status."))
    write(source / "tester" / "SKILL.md", skill_md("tester", "Test other skills."))
    write(source / "tester" / "assets" / "sample-skill" / "SKILL.md", "# An example skill the tester runs on\n")
    outcome = add(root, str(source))
    assert outcome.skills == ["suite/agenthub", "suite/status", "suite/tester"]
    assert not (root / "suite" / "agenthub" / "skills").exists()
    assert (root / "suite" / "status" / "SKILL.md").is_file()
    assert (root / "suite" / "tester" / "assets" / "sample-skill" / "SKILL.md").is_file()  # shipped, not a skill


def test_a_source_that_is_one_skill_takes_the_sources_name(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "webapp-testing"
    write(source / "SKILL.md", skill_md("webapp-testing", "Test web applications with a real browser."))
    write(source / "scripts" / "probe.py", "print('probe')\n")
    outcome = add(root, str(source), name="vendor")
    assert outcome.skills == ["vendor/webapp-testing"]
    assert (root / "vendor" / "webapp-testing" / "scripts" / "probe.py").is_file()


def test_a_fifo_in_a_folder_source_is_refused_without_waiting_on_it(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "odd"
    write(source / "s" / "SKILL.md", skill_md("s", "A skill beside a FIFO."))
    os.mkfifo(source / "s" / "pipe")
    with pytest.raises(SourceError, match="FIFO"):
        add(root, str(source))
    assert staging_left(root) == []


def test_a_link_in_a_folder_source_leading_out_of_it_is_refused(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "linked"
    write(source / "s" / "SKILL.md", skill_md("s", "A skill with a link out."))
    (source / "s" / "secrets").symlink_to(tmp_path)
    before = tree_of(root)
    with pytest.raises(SourceError, match="outside the source"):
        add(root, str(source))
    assert tree_of(root) == before


def test_only_that_matches_nothing_lists_the_skills_there_are(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "kit"
    write(source / "a" / "SKILL.md", skill_md("a", "First."))
    write(source / "b" / "SKILL.md", skill_md("b", "Second."))
    with pytest.raises(SourceError) as refused:
        add(root, str(source), only=("zzz*",))
    assert "none of the 2 skills" in refused.value.message and "a, b" in refused.value.message


def test_a_library_root_holding_patterns_installs_sources_there(root: Path, tmp_path: Path) -> None:
    (root / "patterns").mkdir()
    source = tmp_path / "kit"
    write(source / "a" / "SKILL.md", skill_md("a", "First."))
    add(root, str(source))
    assert (root / "patterns" / "kit" / "a" / "SKILL.md").is_file()
    entry = read_lock(root / "skillshelf.lock").sources["kit"]
    assert [s.path for s in entry.skills] == ["patterns/kit/a"]


# -- a folder changed while it is read (issue 30) ----------------------------------------------------
NOTES = "public notes, as many bytes as the secret\n"
SECRET = "root:secret-hash:19000:0:99999:7:::shadow\n"  # the same size: a size check alone cannot tell


def kit_with_notes(tmp_path: Path) -> tuple[Path, Path]:
    """A folder source whose skill has refs/notes.txt, and a folder outside it holding a secret of the
    same name and size (what root can read and the folder's owner cannot)."""
    assert len(NOTES) == len(SECRET)
    source = tmp_path / "kit"
    write(source / "s" / "SKILL.md", skill_md("s", "A skill with notes."))
    write(source / "s" / "refs" / "notes.txt", NOTES)
    write(tmp_path / "etc" / "notes.txt", SECRET)
    return source, tmp_path / "etc"


def swap_folder_for_link(folder: Path, outside: Path) -> None:
    folder.rename(folder.with_name("moved-away"))
    folder.symlink_to(outside, target_is_directory=True)


def swap_file(path: Path) -> None:
    """The same path, the same size, another file (another inode)."""
    fresh = path.with_name("fresh")
    fresh.write_text(SECRET, encoding="utf-8")
    fresh.replace(path)


def between_listing_and_reading(monkeypatch: pytest.MonkeyPatch, change: Callable[[], None], *, late: bool) -> None:
    """Runs `change` after the folder is listed: before its first read (the digest), or after it and
    before the files are written (`late`). The seam is the digest, which every folder source computes
    between the two; no timing involved."""
    digest = fetch.content_digest

    def changing(members: list[Member], reader: Any) -> str:
        if not late:
            change()
        result = digest(members, reader)
        if late:
            change()
        return result

    monkeypatch.setattr(fetch, "content_digest", changing)


def installed_anywhere(root: Path, text: str) -> list[str]:
    return [path for path, (_, _, data) in tree_of(root).items() if text.encode() in data]


@pytest.mark.parametrize("late", [False, True], ids=["before-the-digest", "before-the-write"])
def test_a_subfolder_swapped_for_a_link_after_listing_is_refused_not_followed(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, late: bool
) -> None:
    source, outside = kit_with_notes(tmp_path)
    before = tree_of(root)
    between_listing_and_reading(monkeypatch, lambda: swap_folder_for_link(source / "s" / "refs", outside), late=late)
    with pytest.raises(SourceError, match="changed while it was read"):
        add(root, str(source))
    assert tree_of(root) == before and staging_left(root) == [] and installed_anywhere(root, "secret-hash") == []


def test_a_file_swapped_for_another_after_listing_is_refused(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, _ = kit_with_notes(tmp_path)
    before = tree_of(root)
    between_listing_and_reading(monkeypatch, lambda: swap_file(source / "s" / "refs" / "notes.txt"), late=False)
    with pytest.raises(SourceError, match=r"refs/notes\.txt in .* changed while it was read"):
        add(root, str(source))
    assert tree_of(root) == before and installed_anywhere(root, "secret-hash") == []


def test_sync_reads_a_folder_source_the_same_way(root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, outside = kit_with_notes(tmp_path)
    add(root, str(source))
    shutil.rmtree(root / "kit")
    between_listing_and_reading(monkeypatch, lambda: swap_folder_for_link(source / "s" / "refs", outside), late=False)
    with open_shelf(root) as shelf:
        failed = {o.source: o for o in shelf.sync()}["kit"]
    assert failed.action == "failed" and "changed while it was read" in failed.warnings[0]
    assert not (root / "kit").exists() and installed_anywhere(root, "secret-hash") == []


def test_a_single_skill_md_swapped_for_another_file_after_listing_is_refused(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = write(tmp_path / "drafts" / "mine" / "SKILL.md", skill_md("mine", "Write commit messages well."))

    def swap() -> None:
        fresh = doc.with_name("fresh")
        fresh.write_bytes(doc.read_bytes().replace(b"well", b"WELL"))
        fresh.replace(doc)

    between_listing_and_reading(monkeypatch, swap, late=False)
    with pytest.raises(SourceError, match="changed while it was read"):
        add(root, str(doc))
    assert tree_of(root) == {}


def test_a_path_through_a_link_in_the_folder_is_not_followed(root: Path, tmp_path: Path) -> None:
    source, outside = kit_with_notes(tmp_path)
    write(outside / "x" / "SKILL.md", skill_md("x", "A skill outside the source."))
    (source / "skills").symlink_to(outside, target_is_directory=True)
    with pytest.raises(SourceError, match=r"has no folder 'skills' \(from --path; links are not followed\)"):
        add(root, str(source), path="skills")
    assert tree_of(root) == {}


def test_sync_of_a_folder_source_that_is_gone_says_the_folder_does_not_exist(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "kit"
    write(source / "a" / "SKILL.md", skill_md("a", "First."))
    add(root, str(source))
    shutil.rmtree(source)
    shutil.rmtree(root / "kit")
    with open_shelf(root) as shelf:
        failed = {o.source: o for o in shelf.sync()}["kit"]
    assert failed.action == "failed"
    assert f"the folder {source} does not exist; check the path" in failed.warnings[0]
    assert "--path" not in failed.warnings[0]


def test_a_chain_of_links_in_a_folder_source_leading_out_is_refused(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "chained"
    write(source / "s" / "SKILL.md", skill_md("s", "A skill with chained links."))
    (source / "s" / "u").symlink_to(".")
    (source / "s" / "leak").symlink_to("u/u/u/../../../etc/passwd")
    with pytest.raises(SourceError, match=r"the link s/leak points to .* leads outside the source"):
        add(root, str(source))
    assert tree_of(root) == {}


def test_a_folder_path_leading_up_is_refused_wherever_it_comes_from(tmp_path: Path) -> None:
    """`add` cleans --path; a path from a hand-edited lock reaches the reader as it is, and is refused there too."""
    source, _ = kit_with_notes(tmp_path)
    spec = SourceSpec("folder", str(source), subpath="../etc", default_name="kit")
    refused = pytest.raises(SourceError, match="must be a folder inside the source")
    with refused, open_snapshot(spec, tmp_path, tmp_path):
        pass


def test_a_name_with_control_characters_is_left_out_with_a_warning(root: Path, tmp_path: Path) -> None:
    source = tmp_path / "kit"
    write(source / "triage" / "SKILL.md", skill_md("triage", "Triage incoming bug reports by severity."))
    write(source / "triage" / "scripts" / "run.sh", "#!/bin/sh\necho run\n")
    write(source / "triage" / "scripts" / "\x1b[2K\rhidden.sh", "#!/bin/sh\necho hidden\n")
    write(source / "flip\u202eped" / "SKILL.md", skill_md("flipped", "A skill whose folder name flips text."))
    outcome = add(root, str(source))
    assert outcome.skills == ["kit/triage"]
    assert sorted(p.name for p in (root / "kit" / "triage" / "scripts").iterdir()) == ["run.sh"]
    warned = "\n".join(outcome.warnings)
    assert "triage/scripts/\x1b[2K\rhidden.sh: a name with a control character" in warned, warned
    assert "the folder name 'flip\\u202eped' cannot be a skill's name here; left out" in warned, warned
    assert "hidden.sh" not in str(read_lock(root / "skillshelf.lock").sources["kit"])
