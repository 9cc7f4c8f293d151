"""Wire models of the metrics tools."""

from __future__ import annotations

from pydantic import Field

from skillshelf.envelope import WireModel
from skillshelf.skills.evals import Findability


class CategoryLayoutCount(WireModel):
    category: str
    three_file: int
    agent_skills: int


class SkillTokens(WireModel):
    id: str
    tokens: int


class UsedSkill(WireModel):
    id: str
    uses: int
    projects: int


class LibraryStats(WireModel):
    skills: int
    categories: list[CategoryLayoutCount]
    quality_histogram: dict[str, int]  # "0-1" ... "9-10" -> skills whose score falls in that band
    mean_quality: float
    verified: int  # used from three distinct projects (the one meaning of `verified`)
    executable: int
    load_tokens_total: int
    load_tokens_mean: float
    largest: list[SkillTokens]
    most_used: list[UsedSkill]
    never_used_count: int
    never_used: list[str]  # the highest-quality unused skills first, at most 20
    findings_by_severity: dict[str, int]
    findings_by_code: dict[str, int]
    # the 10th ... 90th percentile scores, and what the histogram, mean and deciles used (metrics/quality_spread.py)
    quality_deciles: list[float] = Field(default_factory=list)
    quality_basis: str = ""
    near_duplicates: int = 0  # skills another one duplicates by name or description (`near-duplicate` findings)
    # skills their own description does not find, and colliding pairs (up to 200 skills; `skillshelf eval` past it)
    findability: Findability | None = None
    warnings: list[str] | None = None  # e.g. usage history unavailable


class PatternReuse(WireModel):
    skill_id: str = Field(alias="patternId")  # the public name (getPatternReuse's argument too)
    category: str
    reuse_count: int  # recorded uses plus sessions that mention the skill
    uses: int
    session_mentions: int
    projects: list[str]
    first_used: str | None = None
    last_used: str | None = None
    verified: bool


class ReuseReport(WireModel):
    patterns: list[PatternReuse]
    total_patterns: int
    warnings: list[str] | None = None  # e.g. usage history unavailable: session mentions only
