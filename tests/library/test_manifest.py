"""A skill as files with digests (the MCP skills extension's manifest), for both layouts."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from skillshelf.library.access.files import SkillFileError
from skillshelf.library.access.manifest import MAX_FILES, MAX_TOTAL_BYTES, NotPublishableError, SkillManifest
from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import IndexedSkill
from tests.conftest import agent_skill, three_file, write


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "library"


@pytest.fixture
def opened(root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    root.mkdir(parents=True, exist_ok=True)
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    yield library
    library.close()


class Manifests:
    """The reader's manifest and byte reads, under the names these tests were written with."""

    def __init__(self, library: SkillLibrary) -> None:
        self.reader = LibraryReader(library)

    def build(self, skill: IndexedSkill | None) -> SkillManifest:
        assert skill is not None
        return self.reader.manifest(skill)

    def read(self, skill: IndexedSkill | None, path: str) -> bytes:
        assert skill is not None
        return self.reader.read_bytes(skill, path, MAX_TOTAL_BYTES)


def manifests_of(library: SkillLibrary) -> Manifests:
    library.sync()
    return Manifests(library)


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_an_agent_skill_lists_every_file_in_its_folder_with_digests_of_the_raw_bytes(
    root: Path, opened: SkillLibrary
) -> None:
    doc = agent_skill(
        root,
        "docs",
        "pdf-tools",
        """
        name: pdf-tools
        description: Fill PDF forms. Use when a form must be completed.
        license: MIT
        metadata:
          version: "2.1"
        released: 2024-05-01
        """,
    )
    (doc.parent / "forms.md").write_bytes(b"# Forms\r\nCRLF kept as is\r\n")  # top level, outside resource dirs
    write(doc.parent / "templates" / "eu" / "invoice.md", "invoice\n")
    write(doc.parent / "scripts" / "fill.py", "print('x')\n")
    write(doc.parent / ".git" / "config", "hidden\n")
    write(doc.parent / "node_modules" / "x" / "index.js", "vendored\n")
    manifests = manifests_of(opened)

    manifest = manifests.build(opened.get("docs/pdf-tools"))

    paths = [f.path for f in manifest.files]
    assert paths == ["SKILL.md", "forms.md", "scripts/fill.py", "templates/eu/invoice.md"]
    for entry in manifest.files:
        raw = (doc.parent / entry.path).read_bytes()
        assert (entry.digest, entry.size) == (digest(raw), len(raw))
    assert manifest.frontmatter == {
        "name": "pdf-tools",
        "description": "Fill PDF forms. Use when a form must be completed.",
        "license": "MIT",
        "metadata": {"version": "2.1"},
        "released": "2024-05-01",
    }


def test_a_three_file_skill_maps_onto_skill_md_scripts_and_references(root: Path, opened: SkillLibrary) -> None:
    three_file(
        root,
        "python",
        "slugify",
        "# Slugify\n\nTurn a title into a URL slug.\n",
        code="def slugify(text: str) -> str:\n    return text\n",
        meta="---\ntags: [text, url]\nquality: 8\n---\n",
    )
    manifests = manifests_of(opened)
    skill = opened.get("python/slugify")
    assert skill is not None

    manifest = manifests.build(skill)

    assert [f.path for f in manifest.files] == ["SKILL.md", "references/slugify-SKILL.md", "scripts/slugify.py"]
    assert manifests.read(skill, "scripts/slugify.py") == (root / "python" / "slugify.py").read_bytes()
    assert manifests.read(skill, "references/slugify-SKILL.md") == (root / "python" / "slugify-SKILL.md").read_bytes()
    written = manifests.read(skill, "SKILL.md").decode()
    _, head, body = written.split("---\n", 2)
    assert yaml.safe_load(head) == manifest.frontmatter  # a host's frontmatter check passes
    assert manifest.frontmatter == {
        "name": "slugify",
        "description": "Turn a title into a URL slug.",
        "metadata": {"category": "python", "layout": "three-file", "quality": "8", "tags": "text, url"},
    }
    assert body.strip() == "# Slugify\n\nTurn a title into a URL slug."
    assert manifest.files[0].digest == digest(written.encode())


def test_a_skill_over_the_file_limit_is_refused_with_the_reason_not_truncated(root: Path, opened: SkillLibrary) -> None:
    doc = agent_skill(root, "data", "big", "name: big\ndescription: Many files.")
    for number in range(MAX_FILES):  # with SKILL.md: one more than the limit
        (doc.parent / "assets").mkdir(exist_ok=True)
        (doc.parent / "assets" / f"{number}.txt").write_text("x", encoding="utf-8")
    manifests = manifests_of(opened)

    with pytest.raises(NotPublishableError) as refused:
        manifests.build(opened.get("data/big"))

    assert refused.value.reason == "over-file-limit"
    assert "512" in refused.value.message


def test_a_skill_over_16_mib_is_refused_with_the_reason(root: Path, opened: SkillLibrary) -> None:
    doc = agent_skill(root, "data", "huge", "name: huge\ndescription: One large asset.")
    (doc.parent / "assets").mkdir()
    with (doc.parent / "assets" / "blob.bin").open("wb") as handle:
        handle.truncate(MAX_TOTAL_BYTES)  # sparse: cheap to make, and SKILL.md tips it over
    manifests = manifests_of(opened)

    with pytest.raises(NotPublishableError) as refused:
        manifests.build(opened.get("data/huge"))

    assert refused.value.reason == "over-size-limit"


@pytest.mark.parametrize(
    ("frontmatter", "reason"),
    [
        ("name: other-name\ndescription: Mismatched.", "name-mismatch"),
        ("name: wrong\ndescription: [unclosed", "frontmatter-invalid"),
    ],
)
def test_a_skill_breaking_the_extension_rules_says_which_rule(
    root: Path, opened: SkillLibrary, frontmatter: str, reason: str
) -> None:
    write(root / "misc" / "wrong" / "SKILL.md", f"---\n{frontmatter}\n---\n# Body\n")
    manifests = manifests_of(opened)

    with pytest.raises(NotPublishableError) as refused:
        manifests.build(opened.get("misc/wrong"))

    assert refused.value.reason == reason


@pytest.mark.parametrize("path", ["../other/SKILL.md", "/etc/passwd", ".git/config", "missing.md", ""])
def test_reading_anything_but_the_skills_own_files_is_refused(root: Path, opened: SkillLibrary, path: str) -> None:
    doc = agent_skill(root, "docs", "tool", "name: tool\ndescription: A tool.")
    write(doc.parent / ".git" / "config", "secret\n")
    agent_skill(root, "docs", "other", "name: other\ndescription: Another.")
    manifests = manifests_of(opened)

    with pytest.raises(SkillFileError):
        manifests.read(opened.get("docs/tool"), path)


def test_check_reports_a_skill_over_the_extensions_file_limit(tmp_path: Path) -> None:
    from skillshelf.library.access.manifest import MAX_FILES
    from skillshelf.library.skill.checker import check_roots

    root = tmp_path / "lib"
    agent_skill(root, "data", "fixtures", "name: fixtures\ndescription: Many generated files.")
    assets = root / "data" / "fixtures" / "assets"
    assets.mkdir()
    for i in range(MAX_FILES):  # with SKILL.md: one past the limit
        (assets / f"f{i}.txt").write_text("x", encoding="utf-8")
    agent_skill(root, "data", "small", "name: small\ndescription: A skill well inside the limits.")
    report = check_roots([root])
    over = [f for f in report.findings if f.code == "over-file-limit"]
    assert [f.path for f in over] == ["data/fixtures"]
    assert over[0].severity == "warning" and "Remove generated" in over[0].message
    assert report.errors == 0  # still a good tool skill: served, just not as an MCP skill
