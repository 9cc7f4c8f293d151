"""The 972 real skills in ../shared/corpora: all load, each is found by its name, findings match STATS.md."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from skillshelf.library.checker import CheckReport, check_roots
from skillshelf.library.index import SearchFilters
from skillshelf.library.skill_library import LibraryConfig, SkillLibrary
from tests.conftest import CORPORA

pytestmark = [
    pytest.mark.corpus,
    pytest.mark.skipif(not CORPORA.is_dir(), reason=f"corpora not found at {CORPORA} (read-only shared data)"),
]


@pytest.fixture(scope="module")
def report() -> CheckReport:
    return check_roots([CORPORA])


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SkillLibrary]:
    shelf = SkillLibrary(LibraryConfig(roots=[CORPORA], index_dir=tmp_path_factory.mktemp("corpus-index"), watch=False))
    shelf.sync()
    yield shelf
    shelf.close()


def test_every_corpus_skill_loads(report: CheckReport) -> None:
    assert len(report.skills) == 972
    assert not [f for f in report.findings if f.code in {"file-unreadable", "file-binary", "frontmatter-missing"}]


def test_the_two_over_long_descriptions_are_the_only_errors(report: CheckReport) -> None:
    errors = sorted((f.path, f.code) for f in report.findings if f.severity == "error")
    assert errors == [
        ("K-Dense-AI__claude-scientific-skills/database-lookup/SKILL.md", "description-too-long"),
        ("anthropics__skills/claude-api/SKILL.md", "description-too-long"),
    ]


def test_findings_match_the_measured_facts(report: CheckReport) -> None:
    by_code: dict[str, set[str]] = {}
    for finding in report.findings:
        by_code.setdefault(finding.code, set()).add(finding.path.split("/SKILL.md")[0])
    assert len(by_code["name-mismatch"]) == 27  # STATS.md: name != corpus folder name
    assert by_code["name-reserved-word"] == {"anthropics__skills/claude-api"}
    assert by_code["frontmatter-key-case"] == {"alirezarezvani__claude-skills/code-to-prd"}
    assert by_code["description-xml-tag"] == {"github__awesome-copilot/mvvm-toolkit-messenger"}
    assert len(by_code["description-angle-brackets"]) == 6
    assert len(by_code["body-long"]) >= 70  # 81 files are over 500 lines including frontmatter


def test_crlf_skill_reads_like_any_other(report: CheckReport) -> None:
    skill = next(s for s in report.skills if s.id == "K-Dense-AI__claude-scientific-skills/geomaster")
    assert skill.description and "\r" not in skill.body


def test_every_skill_is_in_the_top_3_when_searching_its_own_name(library: SkillLibrary, report: CheckReport) -> None:
    misses = []
    for skill in report.skills:
        hits = [s.id for s in library.search(skill.declared_name, SearchFilters(), 3)]
        if skill.id not in hits:
            misses.append((skill.declared_name, skill.id, hits))
    assert misses == []
