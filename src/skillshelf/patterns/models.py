"""Wire models of the patterns tools (camelCase on the wire, snake_case in Python)."""

from __future__ import annotations

from typing import Any

from skillshelf.envelope import WireModel


class SkillHit(WireModel):
    """One search hit: enough to choose a skill (~50-100 tokens), never its body."""

    id: str
    name: str
    category: str
    description: str
    quality: float
    verified: bool
    executable: bool
    tokens: int  # estimated tokens to load this skill with loadSkill's defaults
    layout: str
    score: float = 0.0  # relevance relative to the best hit (1.0); 0.0 when the query is empty


class SearchResult(WireModel):
    query: str
    hits: list[SkillHit]
    warnings: list[str] | None = None  # e.g. usage history unavailable; the hits are still right


class FindingInfo(WireModel):
    path: str
    line: int | None = None
    severity: str
    code: str
    message: str


class CodeFile(WireModel):
    path: str  # relative to the skill's folder (Agent Skills) or category (three-file)
    language: str | None = None
    content: str
    truncated: bool = False


class UsageInfo(WireModel):
    uses: int
    projects: list[str]
    first_used: str | None = None
    last_used: str | None = None


class UsageRecorded(WireModel):
    pattern_id: str
    project: str | None = None
    recorded_at: str
    uses: int
    projects: list[str]
    verified: bool


class SkillMetadata(WireModel):
    quality: float
    quality_source: str
    verified: bool  # quality >= 7.0, or used from three distinct projects
    usage: UsageInfo
    quality_reasons: list[str]
    tags: list[str]
    language: str | None = None
    input_schema: dict[str, Any] | None = None  # what executeSkill's input must match
    input_schema_source: str | None = None  # "declared" (metadata) or "derived" (from the code's signature)
    frontmatter: dict[str, Any]
    resources: list[str]
    findings: list[FindingInfo]


class LoadedSkill(WireModel):
    id: str
    name: str
    category: str
    layout: str
    description: str
    executable: bool
    documentation: str
    code: list[CodeFile] | None = None
    metadata: SkillMetadata | None = None
    warnings: list[str] | None = None


class CategoryInfo(WireModel):
    name: str
    skills: int
    executable: int
    verified: int
    mean_quality: float


class CategoryList(WireModel):
    categories: list[CategoryInfo]
    total_skills: int


class SkillFile(WireModel):
    skill_id: str
    path: str
    content: str
    truncated: bool = False
