"""Real .zip and .skill files: their skills installed as packed (modes, links inside a skill), and
hostile ones refused before anything is written, the library left as it was."""

from __future__ import annotations

import os
import shutil
import stat
import zipfile
from pathlib import Path

import pytest

from skillshelf.library.skill.folder import MAX_FILES, MAX_TOTAL_BYTES
from skillshelf.library.sources import archive
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.lock import read_lock
from tests.sources.helpers import add, make_zip, skill_md, staging_left, tree_of

GOOD = skill_md("pdf-fill", "Fill PDF forms from JSON data. Use when a form must be filled.")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    (root / "hand" / "kept").mkdir(parents=True)
    (root / "hand" / "kept" / "SKILL.md").write_text(skill_md("kept", "Written by hand."), encoding="utf-8")
    return root


def test_a_skill_archive_installs_its_skill_with_modes_and_inner_links(root: Path, tmp_path: Path) -> None:
    packed = make_zip(
        tmp_path / "pdf-fill.skill",
        {
            "pdf-fill/SKILL.md": GOOD,
            "pdf-fill/scripts/fill.sh": "#!/bin/sh\necho filled\n",
            "pdf-fill/references/guide.md": "# Guide\n",
            "pdf-fill/references/latest.md": "guide.md",
        },
        modes={
            "pdf-fill/scripts/fill.sh": stat.S_IFREG | 0o755,
            "pdf-fill/references/latest.md": stat.S_IFLNK | 0o777,
        },
    )
    outcome = add(root, str(packed))
    assert outcome.skills == ["pdf-fill/pdf-fill"]
    installed = root / "pdf-fill" / "pdf-fill"
    assert (installed / "scripts" / "fill.sh").stat().st_mode & 0o777 == 0o755
    assert (installed / "references" / "guide.md").stat().st_mode & 0o777 == 0o644
    assert (installed / "references" / "latest.md").readlink() == Path("guide.md")
    entry = read_lock(root / "skillshelf.lock").sources["pdf-fill"]
    assert entry.kind == "archive" and entry.digest and entry.digest.startswith("sha256:") and entry.commit is None


def test_a_zip_with_the_skill_at_its_top_takes_the_archives_name(root: Path, tmp_path: Path) -> None:
    packed = make_zip(tmp_path / "form-filler.zip", {"SKILL.md": GOOD, "LICENSE": "MIT License\n\nPermission is "
                                                     "hereby granted, free of charge, to any person\n"})  # fmt: skip
    outcome = add(root, str(packed), name="vendor")
    assert outcome.skills == ["vendor/form-filler"]
    assert read_lock(root / "skillshelf.lock").sources["vendor"].license == "MIT"
    shutil.rmtree(root / "vendor")
    with open_shelf(root) as shelf:  # synced and checked again under the name it was installed with
        assert [o.action for o in shelf.sync()] == ["installed"]
        assert shelf.prepare_update("vendor") is None
    assert (root / "vendor" / "form-filler" / "SKILL.md").is_file()


def test_a_link_inside_the_source_but_outside_its_skill_is_left_out_with_a_note(root: Path, tmp_path: Path) -> None:
    packed = make_zip(
        tmp_path / "pack.zip",
        {"shared/notes.md": "# Shared\n", "one/SKILL.md": GOOD, "one/notes.md": "../shared/notes.md"},
        modes={"one/notes.md": stat.S_IFLNK | 0o777},
    )
    outcome = add(root, str(packed))
    assert not (root / "pack" / "one" / "notes.md").is_symlink()
    assert any("outside its skill" in note for note in outcome.warnings)


def test_a_chain_of_links_inside_the_source_but_out_of_its_skill_is_left_out(root: Path, tmp_path: Path) -> None:
    links = {"one/u": stat.S_IFLNK | 0o777, "one/notes.md": stat.S_IFLNK | 0o777}
    packed = make_zip(
        tmp_path / "pack.zip",
        {"shared/notes.md": "# Shared\n", "one/SKILL.md": GOOD, "one/u": ".", "one/notes.md": "u/u/../shared/notes.md"},
        modes=links,
    )  # textually `notes.md` stays in `one/` (u/shared/notes.md); through the link `u` it leaves it
    outcome = add(root, str(packed))
    assert not (root / "pack" / "one" / "notes.md").is_symlink() and (root / "pack" / "one" / "u").is_symlink()
    assert any("one/notes.md: a link to" in note and "outside its skill" in note for note in outcome.warnings)


def test_links_through_links_that_stay_in_their_skill_are_installed(root: Path, tmp_path: Path) -> None:
    links = {
        "s/u": ".",
        "s/docs": "refs",
        "s/alias.md": "u/refs/a.md",
        "s/via.md": "docs/a.md",
        "s/refs/up": "../u/SKILL.md",
    }
    packed = make_zip(
        tmp_path / "pack.zip",
        {"s/SKILL.md": GOOD, "s/refs/a.md": "# A\n", **links},
        modes=dict.fromkeys(links, stat.S_IFLNK | 0o777),
    )
    outcome = add(root, str(packed))
    installed = root / "pack" / "s"
    assert outcome.warnings == []
    assert {name: str((installed / name.removeprefix("s/")).readlink()) for name in links} == links
    assert (installed / "alias.md").read_text() == "# A\n" and (installed / "via.md").read_text() == "# A\n"
    assert (installed / "refs" / "up").read_text() == GOOD


HOSTILE = {
    "a name with ..": ({"../evil/SKILL.md": GOOD}, {}, "unsafe name"),
    "a name deep with ..": ({"ok/../../evil.md": "x", "ok/SKILL.md": GOOD}, {}, "unsafe name"),
    "an absolute name": ({"/etc/evil/SKILL.md": GOOD}, {}, "unsafe name"),
    "a backslash name": ({"..\\evil\\SKILL.md": GOOD}, {}, "unsafe name"),
    "a drive name": ({"C:/evil/SKILL.md": GOOD}, {}, "unsafe name"),
    "an absolute link": (
        {"s/SKILL.md": GOOD, "s/passwd": "/etc/passwd"}, {"s/passwd": stat.S_IFLNK | 0o777}, "outside the source"
    ),
    "a link leading up": (
        {"s/SKILL.md": GOOD, "s/up": "../../../home"}, {"s/up": stat.S_IFLNK | 0o777}, "outside the source"
    ),
    "a chain of links leading up": (
        {"SKILL.md": GOOD, "u": ".", "leak": "u/u/../../etc/passwd"},
        {"u": stat.S_IFLNK | 0o777, "leak": stat.S_IFLNK | 0o777},
        "outside the source",
    ),
    "a chain of links leading up in a skill": (
        {"s/SKILL.md": GOOD, "s/u": ".", "s/leak": "u/u/u/../../../etc/passwd"},
        {"s/u": stat.S_IFLNK | 0o777, "s/leak": stat.S_IFLNK | 0o777},
        "outside the source",
    ),
    "two links in a loop": (
        {"s/SKILL.md": GOOD, "s/a": "b", "s/b": "a"},
        {"s/a": stat.S_IFLNK | 0o777, "s/b": stat.S_IFLNK | 0o777},
        "round a loop",
    ),
    "a device": ({"s/SKILL.md": GOOD, "s/tty": ""}, {"s/tty": stat.S_IFCHR | 0o666}, "device, FIFO or socket"),
    "a FIFO": ({"s/SKILL.md": GOOD, "s/pipe": ""}, {"s/pipe": stat.S_IFIFO | 0o666}, "device, FIFO or socket"),
    "one name twice": ({"s/SKILL.md": GOOD, "s/skill.MD": "x", "S/SKILL.md": GOOD}, {}, "twice"),
    "a file that is a folder too": ({"s/SKILL.md": GOOD, "s/x": "file", "s/x/y": "inside"}, {}, "both as a file"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_archive_is_refused_before_anything_is_written(case: str, root: Path, tmp_path: Path) -> None:
    entries, modes, words = HOSTILE[case]
    packed = make_zip(tmp_path / "hostile.zip", dict(entries), modes=dict(modes))
    before = tree_of(root)
    with pytest.raises(SourceError) as refused:
        add(root, str(packed))
    assert words in refused.value.message and "hostile.zip" in refused.value.message
    assert tree_of(root) == before and staging_left(root) == []
    assert not (tmp_path / "evil").exists()


def test_an_encrypted_entry_is_refused(root: Path, tmp_path: Path) -> None:
    packed = make_zip(tmp_path / "locked.zip", {"s/SKILL.md": GOOD})
    data = bytearray(packed.read_bytes())
    for signature in (b"PK\x03\x04", b"PK\x01\x02"):  # set the encrypted bit in both headers
        at = data.find(signature)
        flag_at = at + (6 if signature == b"PK\x03\x04" else 8)
        data[flag_at] |= 0x1
    packed.write_bytes(bytes(data))
    with pytest.raises(SourceError, match="encrypted"):
        add(root, str(packed))


def test_a_zip_bomb_is_refused_by_its_ratio_before_it_is_expanded(root: Path, tmp_path: Path) -> None:
    packed = make_zip(tmp_path / "bomb.zip", {"s/SKILL.md": GOOD, "s/zeros.txt": b"\0" * (8 * 1024 * 1024)})
    assert packed.stat().st_size < 100_000
    with pytest.raises(SourceError, match="zip bomb"):
        add(root, str(packed))


def test_many_small_members_that_expand_too_much_together_are_refused(root: Path, tmp_path: Path) -> None:
    entries: dict[str, bytes | str] = {"s/SKILL.md": GOOD}
    entries.update({f"s/part{i}.txt": b"a" * 300_000 for i in range(8)})  # each under the 1 MiB floor
    packed = make_zip(tmp_path / "spread.zip", entries)
    with pytest.raises(SourceError, match="zip bomb"):
        add(root, str(packed))


def test_a_member_whose_header_lies_about_its_size_is_refused(root: Path, tmp_path: Path) -> None:
    packed = tmp_path / "liar.zip"
    with zipfile.ZipFile(packed, "w", compression=zipfile.ZIP_STORED) as out:
        out.writestr("s/SKILL.md", GOOD)
        out.writestr("s/data.txt", b"0123456789")
    data = bytearray(packed.read_bytes())
    for header, size_at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # both headers say 20 bytes
        at = data.find(header)
        while data[at + (30 if header == b"PK\x03\x04" else 46) :].startswith(b"s/data.txt") is False:
            at = data.find(header, at + 1)
        data[at + size_at : at + size_at + 4] = (20).to_bytes(4, "little")
    packed.write_bytes(bytes(data))
    before = tree_of(root)
    with pytest.raises(SourceError) as refused:
        add(root, str(packed))
    assert "s/data.txt in liar.zip" in refused.value.message and "refusing" in refused.value.message
    assert tree_of(root) == before and staging_left(root) == []


def test_a_skill_over_the_skills_extension_limits_is_refused(root: Path, tmp_path: Path) -> None:
    many: dict[str, bytes | str] = {"big/SKILL.md": GOOD}
    many.update({f"big/refs/{i}.md": "x" for i in range(MAX_FILES + 1)})
    with pytest.raises(SourceError, match=f"{MAX_FILES} files"):
        add(root, str(make_zip(tmp_path / "many.zip", many)))
    large: dict[str, bytes | str] = {"big/SKILL.md": GOOD, "big/blob.bin": os.urandom(MAX_TOTAL_BYTES + 1)}
    with pytest.raises(SourceError, match="--only"):
        add(root, str(make_zip(tmp_path / "large.zip", large)))


def test_an_archive_over_the_total_limit_is_refused(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(archive, "MAX_SOURCE_BYTES", 10_000)  # the real limit, 256 MiB, the same way
    packed = make_zip(tmp_path / "total.zip", {"s/SKILL.md": GOOD, "other/data.bin": bytes(range(256)) * 50})
    with pytest.raises(SourceError, match="more than skillshelf takes from one source"):
        add(root, str(packed))


def test_a_file_that_is_not_a_zip_is_a_clear_error(root: Path, tmp_path: Path) -> None:
    fake = tmp_path / "fake.skill"
    fake.write_text("not a zip", encoding="utf-8")
    with pytest.raises(SourceError, match="not a readable zip archive"):
        add(root, str(fake))
