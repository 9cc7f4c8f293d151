"""Near-duplicate skills: `check` reports the same name in two categories and descriptions that say the
same thing, once per duplicating skill, naming both; templated siblings that name their difference are
told apart; the search is exact where it runs and bounded where it cannot be."""

from __future__ import annotations

import itertools
import random
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skillshelf.library.skill import duplicates
from skillshelf.library.skill.checker import CheckReport, check_roots
from skillshelf.library.skill.duplicates import Described, near_duplicates
from skillshelf.library.skill.models import Finding
from tests.conftest import CORPORA, agent_skill, three_file

PLAYWRIGHT = (
    "Toolkit for interacting with and testing local web applications using Playwright. Supports verifying "
    "frontend functionality, debugging UI behavior, capturing browser screenshots, and viewing browser logs."
)


def folder_skill(root: Path, category: str, name: str, description: str) -> None:
    agent_skill(root, category, name, f"name: {name}\ndescription: {description}")


def near(root: Path) -> list[Finding]:
    return [f for f in check_roots([root]).findings if f.code == "near-duplicate"]


def test_the_same_skill_in_two_sources_is_reported_once_naming_both(tmp_path: Path) -> None:
    folder_skill(tmp_path, "anthropics", "webapp-testing", PLAYWRIGHT)
    folder_skill(tmp_path, "copilot", "webapp-testing", PLAYWRIGHT)
    folder_skill(tmp_path, "copilot", "release-notes", "Draft release notes from merged pull requests.")
    (finding,) = near(tmp_path)
    assert finding.severity == "warning"
    assert finding.path == "copilot/webapp-testing/SKILL.md"
    assert "copilot/webapp-testing" in finding.message and "anthropics/webapp-testing" in finding.message
    assert "100%" in finding.message and "Keep one" in finding.message


def test_the_same_name_in_two_categories_is_reported_whatever_the_descriptions(tmp_path: Path) -> None:
    folder_skill(tmp_path, "a", "remember", "Save important knowledge to auto-memory with a timestamp.")
    three_file(tmp_path, "b", "remember", "# Remember\n\nTurn lessons learned into domain memory instructions.\n")
    (finding,) = near(tmp_path)
    assert finding.path == "b/remember.md"
    assert "the same name as a/remember" in finding.message and "'remember'" in finding.message


def test_two_folders_whose_frontmatter_gives_the_same_name_are_reported(tmp_path: Path) -> None:
    # Agents see the frontmatter name in search hits: two skills called "init".
    agent_skill(tmp_path, "tools", "agenthub__init", "name: init\ndescription: Start a new agent hub workspace.")
    agent_skill(tmp_path, "tools", "playwright-pro__init", "name: init\ndescription: Install Playwright browsers.")
    (finding,) = near(tmp_path)
    assert finding.path == "tools/playwright-pro__init/SKILL.md" and "two skills called 'init'" in finding.message


def test_descriptions_that_say_the_same_in_other_words_are_reported(tmp_path: Path) -> None:
    # Different names, inflections and stop words: "Tests" / "testing", "apps" / "applications".
    folder_skill(tmp_path, "one", "browser-checks", "Tests local web apps with Playwright, capturing screenshots.")
    folder_skill(tmp_path, "two", "ui-testing", "Testing a local web app using Playwright and capture a screenshot")
    (finding,) = near(tmp_path)
    assert finding.path == "two/ui-testing/SKILL.md"
    assert "says the same as one/browser-checks's" in finding.message


def test_templated_siblings_that_name_their_difference_are_told_apart(tmp_path: Path) -> None:
    template = (
        "Converts {kind} documents into Markdown so their contents can be analyzed, summarized, searched or "
        "extracted. Use whenever the user shares a {kind} file, even without saying convert. Always run the "
        "bundled conversion script first; do not parse {kind} content directly. Siblings: convert-pdf-to-md, "
        "convert-word-to-md."
    )
    folder_skill(tmp_path, "copilot", "convert-pdf-to-md", template.format(kind="PDF"))
    folder_skill(tmp_path, "copilot", "convert-word-to-md", template.format(kind="Word"))
    assert near(tmp_path) == []


def test_unrelated_skills_and_empty_descriptions_are_never_alike(tmp_path: Path) -> None:
    folder_skill(tmp_path, "db", "rls-policy", "Generate PostgreSQL row level security policies for tenants.")
    folder_skill(tmp_path, "git", "release-notes", "Draft release notes from merged pull requests.")
    folder_skill(tmp_path, "misc", "one", "Use this when you want to.")  # stop words only
    folder_skill(tmp_path, "misc", "two", "Use it when you want it.")
    assert near(tmp_path) == []


def test_each_duplicate_is_reported_once_against_the_first(tmp_path: Path) -> None:
    for category in ("a", "b", "c"):
        folder_skill(tmp_path, category, f"testing-{category}", PLAYWRIGHT)
    findings = near(tmp_path)
    assert [f.path for f in findings] == ["b/testing-b/SKILL.md", "c/testing-c/SKILL.md"]
    assert all("a/testing-a" in f.message for f in findings)


def test_a_skill_checked_alone_reports_no_duplicates(tmp_path: Path) -> None:
    folder_skill(tmp_path, "a", "webapp-testing", PLAYWRIGHT)
    folder_skill(tmp_path, "b", "webapp-testing", PLAYWRIGHT)
    report = check_roots([tmp_path / "b" / "webapp-testing"])
    assert len(report.skills) == 1 and not [f for f in report.findings if f.code == "near-duplicate"]


def test_the_search_stops_with_a_note_past_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(duplicates, "MAX_LOOKED_AT", 50)
    rng = random.Random(3)
    words = [f"word{i}" for i in range(40)]
    skills = [Described(f"c/s{i:03}", f"s{i}", " ".join(rng.sample(words, 12))) for i in range(200)]
    report = near_duplicates(skills)
    assert report.note is not None and "stopped after 50 steps" in report.note


def test_identical_descriptions_cost_no_comparisons(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(duplicates, "MAX_LOOKED_AT", 0)  # any comparison at all would stop the search
    skills = [Described(f"c{i:04}/copy-{i}", f"copy-{i}", PLAYWRIGHT) for i in range(3000)]
    report = near_duplicates(skills)
    assert report.note is None
    assert len(report.pairs) == 2999 and {p.first for p in report.pairs} == {"c0000/copy-0"}


def test_a_large_templated_library_is_searched_in_bounded_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every description shares most of its words with every other: all pairs would be 2 million
    # comparisons. The per-word bucket keeps the search linear: each skill reads at most MAX_BUCKET
    # entries for each of its 12 words, a budget all pairs exceeds twofold at this size (the size is
    # what the test is about: 10,000 skills proved no more and took 10 s).
    skill_count, words_each = 2000, 12
    monkeypatch.setattr(duplicates, "MAX_LOOKED_AT", skill_count * words_each * duplicates.MAX_BUCKET)
    rng = random.Random(5)
    extra = [f"detail{i}" for i in range(500)]
    skills = [
        Described(
            f"c/gen-{i}",
            f"gen-{i}",
            f"Generate a complete server project in lang{i} with tools, resources, prompts and {rng.choice(extra)}",
        )
        for i in range(skill_count)
    ]
    started = time.monotonic()
    report = near_duplicates(skills)
    assert time.monotonic() - started < 60  # "it did not hang": all pairs would take many minutes
    assert report.note is None  # within the linear budget: no step past it
    assert len(report.pairs) > 1000  # the family is still reported


WORDS = st.sampled_from([f"w{i}" for i in range(12)])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(WORDS, min_size=1, max_size=8), min_size=2, max_size=25))
def test_the_pairs_found_are_exactly_those_of_all_pairs(texts: list[list[str]]) -> None:
    sets = [frozenset(text) for text in texts]
    unique = list(dict.fromkeys(sets))
    found, note = duplicates._all_pairs(unique, 0.5)
    expected = {
        (i, j)
        for i, j in itertools.combinations(range(len(unique)), 2)
        if duplicates.jaccard(unique[i], unique[j]) >= 0.5
    }
    assert note is None and set(found) == expected


@pytest.mark.skipif(not CORPORA.is_dir(), reason="../shared/corpora is not present")
def test_the_corpora_duplicates_are_found_and_their_template_families_are_not(corpus_report: CheckReport) -> None:
    found = {
        (f.path.split("/")[1], f.message.split(" ")[0]) for f in corpus_report.findings if f.code == "near-duplicate"
    }
    paths = {path for path, _ in found}
    assert {"webapp-testing", "code-tour", "qdrant-scaling", "qdrant-search-quality"} <= paths
    assert not paths & {"convert-word-to-md", "convert-pdf-to-md", "azure-well-architected-review", "java-junit"}
    assert len(found) == 14  # the measured figure in docs/library-format.md
