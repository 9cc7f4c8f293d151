"""Quality scores, 0-10, one function for the CLI and the server.

Precedence: a score the curator declared, else the mean of the five breakdown criteria, else
a deterministic estimate from static checks. Every point the estimate withholds is named in
`reasons`, so a curator knows exactly what would raise it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from skillshelf.library.skill.models import QUALITY_BAR, Finding, Quality
from skillshelf.library.skill.scan import is_high_risk, scan_risk

CRITERIA = ("correctness", "reusability", "documentation", "test coverage", "performance")
# "Use when ...", "Use this skill when ...", "This skill should be used when ...", "When the user wants to ...":
# the ways published descriptions say when to pick a skill.
_WHEN_TO_USE = re.compile(
    r"\b(use (this( skill)? |it )?(when|whenever|for|if)|when to use|(should be |is )?used (when|whenever)"
    r"|when (the )?(user|you|someone) (asks?|wants?|needs?|mentions?|says?))\b",
    re.IGNORECASE,
)
_TEST_HEADING = re.compile(r"\b(test|tests|testing|verif\w*|validat\w*|checklist)\b", re.IGNORECASE)
_EXAMPLE_HEADING = re.compile(r"\b(example|examples|usage|quick ?start)\b", re.IGNORECASE)


@dataclass(frozen=True)
class QualityFacts:
    """What the static checks look at; gathered once while parsing."""

    description: str
    headings: tuple[str, ...]
    code_blocks: int
    word_count: int
    executable: bool
    has_tags: bool
    has_metadata: bool


def parse_score(raw: object) -> float | None:
    """'8.5/10', '8.5', 8.5, '85%' -> a float on the 0-10 scale; None if unreadable."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        return float(raw)
    if not isinstance(raw, str):
        return None
    match = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(?:/\s*(\d+(?:\.\d+)?)|(%))?", raw)
    if not match:
        return None
    value = float(match.group(1))
    if match.group(2):
        scale = float(match.group(2))
        return value * 10 / scale if scale else None
    if match.group(3):
        return value / 10
    return value


# Calibrated against 966 published skills (../shared/corpora/STATS.md): SKILL.md bodies run from
# ~100 words to ~11,000, p10 ~350, p25 ~600, median ~1,100. A body under the corpus's p10 is short;
# under 150 words it is a stub, which an estimate never rates as verified.
FULL_BODY_WORDS = 600
SHORT_BODY_WORDS = 300
STUB_WORDS = 150
STUB_CAP = 5.5
BODY_TIERS = ((FULL_BODY_WORDS, 2.5), (SHORT_BODY_WORDS, 2.0), (STUB_WORDS, 1.0), (50, 0.5), (0, 0.0))
OVER_BUDGET_COST = 0.5  # a `body-long` finding: an agent loads every line of a body over the spec's budget


def _description_problem(length: int) -> str:
    """What is wrong with a description of this many characters (the reason names the one that applies)."""
    if length == 0:
        return "no description"
    if length < 50:
        return f"description of {length} characters (under 50: say what the skill does and when to use it)"
    return f"description of {length} characters (over 1024: agents see it cut; keep it to what and when)"


def estimate(facts: QualityFacts, findings: list[Finding]) -> tuple[float, list[str]]:
    """A deterministic 0-10 estimate from static checks (docs/library-format.md has the scale)."""
    score = 0.0
    reasons: list[str] = []

    def award(points: float, ok: bool, missing: str, partial: float = 0.0, partial_ok: bool = False) -> None:
        nonlocal score
        if ok:
            score += points
        elif partial_ok:
            score += partial
            reasons.append(f"-{points - partial:g}: {missing}")
        else:
            reasons.append(f"-{points:g}: {missing}")

    length = len(facts.description)
    award(1.0, 50 <= length <= 1024, _description_problem(length), 0.5, length > 0)
    # An agent picks a skill by its description alone: "when to use" there is worth three times a heading's.
    award(
        1.5,
        says_when(facts.description),
        "no 'when to use' guidance in the description (an agent picks by the description alone)",
        0.5,
        says_when(" ".join(facts.headings)),
    )
    words = facts.word_count
    body_points = next(points for least, points in BODY_TIERS if words >= least)
    award(
        2.5,
        body_points == 2.5,
        f"body of {words} words (full marks from {FULL_BODY_WORDS}; published skills' median is ~1,100)",
        body_points,
        body_points > 0,
    )
    award(1.0, len(facts.headings) >= 3, "fewer than three section headings", 0.5, len(facts.headings) == 2)
    award(
        1.0,
        facts.code_blocks > 0 or any(_EXAMPLE_HEADING.search(h) for h in facts.headings),
        "no example (a code block or an 'Example' section)",
    )
    award(0.5, facts.executable, "no implementation or script")
    award(0.5, any(_TEST_HEADING.search(h) for h in facts.headings), "no testing or verification section")
    award(0.5, facts.has_tags or facts.has_metadata, "no tags or metadata")
    score += 1.5 - _findings_cost(findings, reasons)
    if words < STUB_WORDS and score > STUB_CAP:
        reasons.append(
            f"-{score - STUB_CAP:g}: a body under {STUB_WORDS} words is a stub; its estimate stops at {STUB_CAP:g}"
        )
        score = STUB_CAP
    return round(score, 1), reasons


def says_when(text: str) -> bool:
    """Whether a description (or heading text) says when to use the skill."""
    return bool(_WHEN_TO_USE.search(text))


def _findings_cost(findings: list[Finding], reasons: list[str]) -> float:
    """Up to 1.5 points for `skillshelf check`'s findings: 1 per error, 0.25 per warning, and 0.5 for a body
    over the spec's budget (the `body-long` note); each cost named in `reasons`."""
    errors = sum(1 for f in findings if f.severity == "error")
    warnings = sum(1 for f in findings if f.severity == "warning")
    cost = min(1.5, errors * 1.0 + warnings * 0.25)
    if cost:
        reasons.append(f"-{cost:g}: {errors} error(s) and {warnings} warning(s) in `skillshelf check`")
    if any(f.code == "body-long" for f in findings) and cost < 1.5:
        over = min(OVER_BUDGET_COST, 1.5 - cost)
        reasons.append(f"-{over:g}: a body over the spec's budget (`body-long`): an agent loads all of it")
        cost += over
    return cost


def score_quality(
    declared: float | None,
    breakdown: dict[str, float] | None,
    facts: QualityFacts,
    findings: list[Finding],
) -> Quality:
    quality = _score(declared, breakdown, facts, findings)
    risky = [f for f in findings if is_high_risk(f)]
    return _capped(quality, facts, findings, risky[0]) if risky else quality


def _capped(quality: Quality, facts: QualityFacts, findings: list[Finding], risky: Finding) -> Quality:
    """Risk never raises quality: with a high scan finding, the score stops at what the skill's estimate is
    without its scripts and without the scan's findings (what it scored before it had them), and it does
    not meet the bar."""
    before, _ = estimate(replace(facts, executable=False), [f for f in findings if scan_risk(f) is None])
    where = f"{risky.path}:{risky.line}" if risky.line else risky.path
    reason = f"below the bar while {where} has a high-risk scan finding [{risky.code}] (`skillshelf scan`)"
    if quality.score > before:
        lost = round(quality.score - before, 1)
        reason = f"-{lost:g}: {reason}; the score stops at {before:g}, its score without it"
    return Quality(min(quality.score, before), quality.source, False, (*quality.reasons, reason))


def _score(
    declared: float | None,
    breakdown: dict[str, float] | None,
    facts: QualityFacts,
    findings: list[Finding],
) -> Quality:
    if declared is not None:
        value = round(min(10.0, max(0.0, declared)), 1)
        reasons = [f"{name}: {s:g}/10" for name, s in (breakdown or {}).items() if s < QUALITY_BAR]
        return Quality(value, "declared", value >= QUALITY_BAR, tuple(reasons))
    if breakdown:
        value = round(sum(breakdown.values()) / len(breakdown), 1)
        reasons = [f"{name}: {s:g}/10" for name, s in breakdown.items() if s < QUALITY_BAR]
        return Quality(value, "breakdown", value >= QUALITY_BAR, tuple(reasons))
    value, reasons = estimate(facts, findings)
    return Quality(value, "estimated", value >= QUALITY_BAR, tuple(reasons))
