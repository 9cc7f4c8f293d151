"""Every malformed shape a real library holds: each one is read as far as possible and reported."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest
from pyfakefs.fake_filesystem import FakeFilesystem
from pyfakefs.helpers import set_uid

from skillshelf.library.skill.checker import check_roots
from skillshelf.library.skill.models import Finding

# Paths are made inside each test: on Python 3.13 a Path built before pyfakefs patches resolves on the real disk.


def root() -> Path:
    return Path("/lib")


def check(fs: FakeFilesystem, files: Mapping[str, str | bytes]) -> tuple[dict[str, object], list[Finding]]:
    for rel, content in files.items():
        if isinstance(content, bytes):
            fs.create_file(root() / rel, contents=content)
        else:
            fs.create_file(root() / rel, contents=content, encoding="utf-8")
    report = check_roots([root()])
    return {s.id: s for s in report.skills}, report.findings


def codes(findings: list[Finding]) -> set[str]:
    return {f.code for f in findings}


def test_a_skill_md_without_frontmatter_is_an_error_but_still_served(fs: FakeFilesystem) -> None:
    skills, findings = check(fs, {"cat/plain/SKILL.md": "# Plain\n\nJust a body paragraph that describes it.\n"})
    assert "cat/plain" in skills
    assert skills["cat/plain"].description == "Just a body paragraph that describes it."  # type: ignore[attr-defined]
    assert "frontmatter-missing" in codes(findings)


def test_an_unquoted_colon_in_a_description_is_recovered_with_a_warning(fs: FakeFilesystem) -> None:
    text = "---\nname: colon\ndescription: Use when needing to: (1) parse, (2) load\n---\n# Body\n"
    skills, findings = check(fs, {"cat/colon/SKILL.md": text})
    assert skills["cat/colon"].description == "Use when needing to: (1) parse, (2) load"  # type: ignore[attr-defined]
    recovered = [f for f in findings if f.code == "frontmatter-recovered"]
    assert recovered and recovered[0].severity == "warning" and recovered[0].line == 3


def test_yaml_that_cannot_be_recovered_is_an_error_with_its_line(fs: FakeFilesystem) -> None:
    text = "---\nname: bad\ndescription: [unclosed\n---\n# Bad\n\nFallback paragraph.\n"
    skills, findings = check(fs, {"cat/bad/SKILL.md": text})
    assert "cat/bad" in skills
    invalid = [f for f in findings if f.code == "frontmatter-invalid-yaml"]
    assert invalid and invalid[0].severity == "error" and invalid[0].line is not None and invalid[0].line >= 3
    assert skills["cat/bad"].description == "Fallback paragraph."  # type: ignore[attr-defined]


def test_an_unclosed_frontmatter_block_is_reported_and_its_keys_still_read(fs: FakeFilesystem) -> None:
    text = "---\nname: open\ndescription: Never closed block\n\n# Title\n\nBody text.\n"
    skills, findings = check(fs, {"cat/open/SKILL.md": text})
    assert skills["cat/open"].description == "Never closed block"  # type: ignore[attr-defined]
    assert "Body text." in skills["cat/open"].body  # type: ignore[attr-defined]
    assert any(f.code == "frontmatter-unclosed" and f.line == 1 for f in findings)


def test_block_scalar_descriptions_are_read_as_text_not_as_a_marker(fs: FakeFilesystem) -> None:
    text = "---\nname: folded\ndescription: >\n  Folded text that\n  spans lines.\n---\n# Body\n"
    skills, _ = check(fs, {"cat/folded/SKILL.md": text})
    assert skills["cat/folded"].description == "Folded text that spans lines."  # type: ignore[attr-defined]


def test_bom_and_crlf_are_normalised(fs: FakeFilesystem) -> None:
    text = "\ufeff---\r\nname: bom\r\ndescription: With a byte order mark\r\n---\r\n# Body\r\n"
    skills, findings = check(fs, {"cat/bom/SKILL.md": text.encode("utf-8")})
    assert skills["cat/bom"].description == "With a byte order mark"  # type: ignore[attr-defined]
    assert "\r" not in skills["cat/bom"].body  # type: ignore[attr-defined]
    assert not [f for f in findings if f.severity == "error"]


def test_non_utf8_bytes_are_replaced_and_reported_with_their_line(fs: FakeFilesystem) -> None:
    raw = b"---\nname: latin\ndescription: caf\xe9 menu\n---\n# Body\n"
    skills, findings = check(fs, {"cat/latin/SKILL.md": raw})
    assert skills["cat/latin"].description == "caf\ufffd menu"  # type: ignore[attr-defined]
    assert any(f.code == "encoding-invalid-utf8" and f.line == 3 for f in findings)


def test_a_binary_file_named_md_is_skipped_as_an_error(fs: FakeFilesystem) -> None:
    skills, findings = check(
        fs, {"cat/blob.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "cat/ok.md": "# Ok\n\nFine.\n"}
    )
    assert "cat/blob" not in skills and "cat/ok" in skills
    assert any(f.code == "file-binary" and f.path == "cat/blob.md" and f.severity == "error" for f in findings)


def test_a_huge_file_is_capped_and_reported(fs: FakeFilesystem) -> None:
    big = "# Huge\n\nA huge skill.\n\n" + ("word " * 200 + "\n") * 50_000  # ~50 MB
    skills, findings = check(fs, {"cat/huge.md": big})
    assert "cat/huge" in skills
    assert len(skills["cat/huge"].body) <= 1024 * 1024  # type: ignore[attr-defined]
    assert any(f.code == "file-too-large" for f in findings)


def test_an_unreadable_file_is_reported_and_does_not_stop_the_scan(fs: FakeFilesystem) -> None:
    set_uid(1000)  # pyfakefs enforces permissions only for a non-root user
    try:
        fs.create_file(root() / "cat/locked.md", contents="# Locked\n", st_mode=0o100000)
        fs.create_file(root() / "cat/open.md", contents="# Open\n\nReadable.\n")
        report = check_roots([root()])
    finally:
        set_uid(0)
    assert [s.id for s in report.skills] == ["cat/open"]
    assert any(f.code == "file-unreadable" and f.path == "cat/locked.md" for f in report.findings)


def test_duplicate_folder_and_file_ids_keep_one_and_report_the_other(fs: FakeFilesystem) -> None:
    files = {
        "cat/twin.md": "# Twin\n\nThree-file twin.\n",
        "cat/twin/SKILL.md": "---\nname: twin\ndescription: Folder twin\n---\n# Twin\n",
    }
    skills, findings = check(fs, files)
    assert list(skills) == ["cat/twin"]
    assert "name-collision" in codes(findings)


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("Bad_Name", "name-invalid"),
        ("-lead", "name-invalid"),
        ("double--hyphen", "name-invalid"),
        ("x" * 65, "name-invalid"),
        ("other-name", "name-mismatch"),
        ("claude-helper", "name-reserved-word"),
    ],
)
def test_names_breaking_the_spec_are_reported(fs: FakeFilesystem, name: str, code: str) -> None:
    folder = name if code != "name-mismatch" else "folder"
    text = f"---\nname: {name}\ndescription: A description that is long enough to count.\n---\n# Body\n"
    skills, findings = check(fs, {f"cat/{folder}/SKILL.md": text})
    assert f"cat/{folder}" in skills
    assert code in codes(findings)


def test_description_rules_of_the_spec_are_enforced(fs: FakeFilesystem) -> None:
    long_text = "---\nname: long\ndescription: " + "x" * 1100 + "\n---\n# Body\n"
    angle = "---\nname: angle\ndescription: Converts a -> b for you\n---\n# Body\n"
    missing = "---\nname: missing\n---\n# Body\n"
    _, findings = check(fs, {"c/long/SKILL.md": long_text, "c/angle/SKILL.md": angle, "c/missing/SKILL.md": missing})
    by_path = {(f.path, f.code): f.severity for f in findings}
    assert by_path[("c/long/SKILL.md", "description-too-long")] == "error"
    assert by_path[("c/angle/SKILL.md", "description-angle-brackets")] == "warning"
    assert by_path[("c/missing/SKILL.md", "description-missing")] == "error"


def test_frontmatter_that_is_not_a_mapping_is_an_error(fs: FakeFilesystem) -> None:
    _, findings = check(fs, {"c/list/SKILL.md": "---\n- a\n- b\n---\n# Body\n"})
    assert "frontmatter-not-mapping" in codes(findings)


def test_yaml_dates_and_numbers_become_json_safe_values(fs: FakeFilesystem) -> None:
    text = "---\nname: dated\ndescription: Has a date\nmetadata:\n  released: 2026-11-20\n  1: one\n---\n# B\n"
    skills, _ = check(fs, {"c/dated/SKILL.md": text})
    assert skills["c/dated"].frontmatter["metadata"] == {"released": "2026-11-20", "1": "one"}  # type: ignore[attr-defined]


def test_a_metadata_file_without_its_document_is_reported(fs: FakeFilesystem) -> None:
    _, findings = check(fs, {"c/lonely-SKILL.md": "---\nquality: 8\n---\n"})
    assert "metadata-orphan" in codes(findings)


def test_repository_documents_are_not_mistaken_for_skills(fs: FakeFilesystem) -> None:
    skills, _ = check(fs, {"c/README.md": "# Readme\n", "c/THIRD_PARTY_NOTICES.md": "# N\n", "c/real.md": "# Real\n"})
    assert list(skills) == ["c/real"]


def test_a_root_holding_patterns_reads_its_categories_there(fs: FakeFilesystem) -> None:
    skills, _ = check(fs, {"patterns/db/migrate.md": "# Migrate\n\nRun migrations safely.\n", "notes.md": "# x\n"})
    assert list(skills) == ["db/migrate"]


def test_a_missing_root_is_one_error_not_a_crash(fs: FakeFilesystem) -> None:
    report = check_roots([Path("/nowhere")])
    assert report.skills == [] and [f.code for f in report.findings] == ["root-missing"]


ALIAS_BOMB = (
    "---\nname: bomb\ndescription: Expands to millions of values.\n"
    'a: &a ["x","x","x","x","x","x","x","x","x","x"]\n'
    "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
    "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
    "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
    "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
    "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
    "g: [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
    "---\n# Bomb\n\nA YAML alias bomb in the frontmatter.\n"
)


def test_a_yaml_alias_bomb_is_refused_with_a_finding_not_expanded(fs: FakeFilesystem) -> None:
    skills, findings = check(fs, {"cat/bomb/SKILL.md": ALIAS_BOMB})
    refused = [f for f in findings if f.code == "frontmatter-alias-bomb"]
    assert refused and refused[0].severity == "error"
    skill = skills["cat/bomb"]
    assert len(json.dumps(skill.frontmatter)) < 1000  # type: ignore[attr-defined]


def test_a_few_honest_aliases_still_load(fs: FakeFilesystem) -> None:
    text = "---\nname: anchors\ndescription: Shares one list.\nx: &tags [a, b]\nmetadata:\n  also: *tags\n---\n# A\n"
    skills, findings = check(fs, {"cat/anchors/SKILL.md": text})
    assert skills["cat/anchors"].frontmatter["metadata"] == {"also": ["a", "b"]}  # type: ignore[attr-defined]
    assert "frontmatter-alias-bomb" not in codes(findings)
