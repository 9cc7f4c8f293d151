from __future__ import annotations

from pathlib import Path

import pytest

from skillshelf.library.skill.checker import check_roots
from skillshelf.library.skill.models import Finding
from skillshelf.library.skill.quality import QualityFacts, estimate, parse_score, score_quality
from tests.conftest import three_file


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("8.5/10", 8.5), ("8.5", 8.5), (7, 7.0), ("4/5", 8.0), ("85%", 8.5), ("high", None), (True, None)],
)
def test_scores_are_read_in_every_written_form(raw: object, expected: float | None) -> None:
    assert parse_score(raw) == expected


def test_declared_breakdown_and_estimated_sources_take_precedence_in_that_order(sample_root: Path) -> None:
    skills = {s.id: s for s in check_roots([sample_root]).skills}
    assert (skills["database/rls-policy"].quality.score, skills["database/rls-policy"].quality.source) == (
        8.5,
        "declared",
    )
    retry = skills["python/retry-backoff"].quality
    assert (retry.score, retry.source, retry.meets_bar) == (6.5, "declared", False)
    assert "test coverage: 6/10" in retry.reasons
    assert skills["python/slugify"].quality.source == "estimated"


def test_a_breakdown_without_a_declared_score_uses_the_mean(tmp_path: Path) -> None:
    table = "\n".join(f"| {c} | {s}/10 | x |" for c, s in zip(
        ["Correctness", "Reusability", "Documentation", "Test Coverage", "Performance"], [9, 8, 7, 6, 9], strict=True
    ))  # fmt: skip
    meta = f"# Skill\n\n## Quality Breakdown\n\n| Criterion | Score | Notes |\n|---|---|---|\n{table}\n"
    three_file(tmp_path, "c", "mean", "# Mean\n\nA skill.\n", meta=meta)
    (skill,) = check_roots([tmp_path]).skills
    assert (skill.quality.score, skill.quality.source, skill.quality.meets_bar) == (7.8, "breakdown", True)


def test_the_estimate_is_deterministic_and_names_every_missing_point() -> None:
    facts = QualityFacts(
        description="Short.", headings=(), code_blocks=0, word_count=3,
        executable=False, has_tags=False, has_metadata=False,
    )  # fmt: skip
    first = estimate(facts, [])
    assert first == estimate(facts, [])
    score, reasons = first
    assert score == 2.0  # 0.5 for a short description + 1.5 for no findings
    assert len(reasons) == 8


def test_a_well_made_skill_estimates_at_the_bar(tmp_path: Path) -> None:
    body = "word " * 200
    doc = (
        "# Good\n\nUse when you need a good example of a complete skill with real guidance and detail.\n\n"
        f"## Steps\n\n{body}\n\n## Example\n\n```python\nprint(1)\n```\n\n## Testing\n\nRun it.\n"
    )
    three_file(tmp_path, "c", "good", doc, code="def good() -> None: ...\n")
    (skill,) = check_roots([tmp_path]).skills
    assert skill.quality.source == "estimated"
    assert skill.quality.score == 8.0 and skill.quality.meets_bar  # 229 words: 1 of 2.5 body points


def test_a_short_folder_skill_with_every_part_stays_under_the_bar(tmp_path: Path) -> None:
    """Issue 13: an 80-word Agent Skills folder scored 8.8 and was verified."""
    from tests.conftest import agent_skill

    body = (
        "# Tiny\n\n## When to use\n\nUse this when a tiny thing is needed.\n\n## Steps\n\n"
        + "step " * 60
        + "\n\n## Example\n\n```sh\nrun it\n```\n\n## Testing\n\nCheck it.\n"
    )
    folder = agent_skill(
        tmp_path, "c", "tiny", "name: tiny\ndescription: Use when you need a tiny example skill with every part.", body
    ).parent
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.py").write_text("print('ok')\n", encoding="utf-8")
    (skill,) = check_roots([tmp_path]).skills
    assert skill.quality.source == "estimated"
    assert skill.quality.score == 5.5 and not skill.quality.meets_bar
    assert any("stub" in reason for reason in skill.quality.reasons)


def test_the_estimate_follows_the_published_corpus_scale() -> None:
    def facts(words: int) -> QualityFacts:
        return QualityFacts(
            description="Use when you need a skill with a description of a sensible length.",
            headings=("When to use", "Steps", "Example"), code_blocks=1, word_count=words,
            executable=False, has_tags=False, has_metadata=False,
        )  # fmt: skip

    scores = [estimate(facts(words), [])[0] for words in (40, 100, 200, 350, 1100)]
    assert scores[0] <= scores[1]  # two stubs (both stop at the stub cap)
    assert scores[1:] == sorted(set(scores[1:]))  # past a stub, a longer body scores higher at each step
    assert scores[-1] >= 7.0 > scores[1]  # a median-length published skill verifies, a stub never does


def test_an_empty_metadata_file_is_a_finding_and_adds_nothing(tmp_path: Path) -> None:
    doc = "# Plain\n\nUse when you need a plain skill that has nothing beyond its documentation file.\n"
    three_file(tmp_path / "without", "c", "plain", doc)
    three_file(tmp_path / "with", "c", "plain", doc, meta="\n")
    (bare,) = check_roots([tmp_path / "without"]).skills
    report = check_roots([tmp_path / "with"])
    (empty,) = report.skills
    assert [f.code for f in report.findings] == ["metadata-empty"]
    assert str(report.findings[0].path).endswith("plain-SKILL.md")
    assert empty.quality.score < bare.quality.score


def _facts(description: str, headings: tuple[str, ...] = ("Steps", "Example", "Notes")) -> QualityFacts:
    return QualityFacts(
        description=description, headings=headings, code_blocks=1, word_count=1100,
        executable=False, has_tags=True, has_metadata=False,
    )  # fmt: skip


def test_a_description_that_says_when_to_use_scores_higher_than_a_heading_or_nothing() -> None:
    """Issue 34: an agent picks by the description alone, so "when" there counts most."""
    said = estimate(_facts("Merge PDF files into one. Use when the user asks to combine PDFs."), [])[0]
    headings = ("When to use", "Steps", "Ex")
    heading = estimate(_facts("Merge PDF files into one, keeping the page order intact.", headings), [])
    silent = estimate(_facts("Merge PDF files into one, keeping the page order in place."), [])
    assert said > heading[0] > silent[0]
    assert said - silent[0] == 1.5
    assert any("when to use" in reason for reason in silent[1])


@pytest.mark.parametrize(
    "description",
    [
        "This skill should be used when the user asks to merge PDF files.",
        "Use this skill when merging PDF files into one document.",
        "When the user wants to merge PDF files into one document.",
    ],
)
def test_the_ways_published_descriptions_say_when_count(description: str) -> None:
    plain = estimate(_facts("Merges PDF files into one document, keeping bookmarks."), [])[0]
    assert estimate(_facts(description), [])[0] == plain + 1.5


def test_a_body_over_the_budget_costs_half_a_point() -> None:
    facts = _facts("Merge PDF files into one. Use when the user asks to combine PDFs.")
    long = Finding("c/pdf/SKILL.md", None, "info", "body-long", "SKILL.md body has 900 lines")
    within, over = estimate(facts, [])[0], estimate(facts, [long])
    assert within - over[0] == 0.5
    assert any("budget" in reason for reason in over[1])


def test_errors_cost_more_than_before_and_a_high_finding_caps_the_score() -> None:
    facts = _facts("Merge PDF files into one. Use when the user asks to combine PDFs.")
    error = Finding("c/pdf/SKILL.md", None, "error", "name-invalid", "bad name")
    assert estimate(facts, [])[0] - estimate(facts, [error, error])[0] == 1.5
    risky = Finding("c/pdf/scripts/run.sh", 3, "error", "download-exec", "curl | sh")
    clean = score_quality(None, None, facts, [])
    capped = score_quality(None, None, facts, [risky])
    assert clean.meets_bar and not capped.meets_bar
    assert capped.score < clean.score
