"""`stats`, getLibraryStats and the web library page count near-duplicates as `check` does, over the
skills the reader may see (a view never learns of a hidden duplicate)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from skillshelf.library.access.reader import LibraryReader, ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.skill.checker import check_roots
from skillshelf.metrics.library_stats import library_stats
from skillshelf.web.pages import library_page
from skillshelf.web.stats import library_view
from tests.conftest import agent_skill

PLAYWRIGHT = "Toolkit for testing local web applications using Playwright, capturing browser screenshots and logs."


@pytest.fixture
def library(tmp_path: Path) -> Iterator[SkillLibrary]:
    root = tmp_path / "lib"
    for category in ("anthropics", "copilot"):
        agent_skill(root, category, "webapp-testing", f"name: webapp-testing\ndescription: {PLAYWRIGHT}")
    agent_skill(root, "copilot", "qa-browser", f"name: qa-browser\ndescription: {PLAYWRIGHT}")
    agent_skill(root, "git", "release-notes", "name: release-notes\ndescription: Draft release notes from commits.")
    opened = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    opened.sync()
    yield opened
    opened.close()


def test_stats_count_the_near_duplicates_check_reports(library: SkillLibrary) -> None:
    stats = library_stats(LibraryReader(library))
    checked = check_roots(library.roots)
    reported = [f for f in checked.findings if f.code == "near-duplicate"]
    assert stats.near_duplicates == len(reported) == 2
    assert stats.findings_by_code["near-duplicate"] == 2
    assert stats.findings_by_severity.get("warning", 0) == checked.count("warning")


def test_a_view_counts_only_duplicates_among_the_skills_it_shows(library: SkillLibrary) -> None:
    view = ViewReader(library, [("exclude", "copilot/*")])
    stats = library_stats(view)
    assert stats.near_duplicates == 0 and "near-duplicate" not in stats.findings_by_code
    page = library_page("", library_view(view))
    assert "copilot/" not in page


def test_the_library_page_lists_each_near_duplicate_with_links(library: SkillLibrary) -> None:
    view = library_view(LibraryReader(library))
    assert view.near_duplicates == [
        ("anthropics/webapp-testing", "copilot/qa-browser", "same description"),
        ("anthropics/webapp-testing", "copilot/webapp-testing", "same name and description"),
    ]
    page = library_page("/web", view)
    assert 'id="near-duplicates"' in page and "Near-duplicates" in page
    assert 'href="/web/skills/copilot/qa-browser/"' in page and 'href="/web/skills/anthropics/webapp-testing/"' in page


def test_a_library_without_duplicates_says_so(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    agent_skill(root, "git", "release-notes", "name: release-notes\ndescription: Draft release notes from commits.")
    opened = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False))
    try:
        opened.sync()
        assert library_stats(LibraryReader(opened)).near_duplicates == 0
        assert "None: no two skills share a name" in library_page("", library_view(LibraryReader(opened)))
    finally:
        opened.close()


def test_a_rewritten_description_changes_the_count_at_once(library: SkillLibrary) -> None:
    assert library_stats(LibraryReader(library)).near_duplicates == 2
    skill = library.roots[0] / "copilot" / "qa-browser" / "SKILL.md"
    skill.write_text("---\nname: qa-browser\ndescription: Audit colour contrast of a design system.\n---\n# QA\n")
    library.mark_dirty()
    assert library_stats(LibraryReader(library)).near_duplicates == 1
