"""Wire models of the patterns tools (camelCase on the wire, snake_case in Python)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PlainSerializer, WithJsonSchema
from pydantic.alias_generators import to_camel

from skillshelf.envelope import ErrorInfo, WireModel


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


def _short_number(value: float) -> float | int:
    """A whole number without its ".0" (9.0 is sent as 9: the same JSON number, two characters fewer)."""
    return int(value) if value.is_integer() else value


# A number in a compact hit: written in the fewest characters that keep its value (still a JSON number).
ShortNumber = Annotated[float, PlainSerializer(_short_number), WithJsonSchema({"type": "number"}, mode="serialization")]


class CompactHit(WireModel):
    """A hit as searchPatterns sends it by default: ~50 tokens; a flag appears only when it is true."""

    id: str
    description: str  # one line, cut at a word with an ellipsis
    quality: ShortNumber
    tokens: int
    score: ShortNumber  # to 2 decimals: the precision the ranking orders by
    executable: Literal[True] | None = None
    verified: Literal[True] | None = None


# searchPatterns' default answer: the hits (the caller knows its query; `detail` echoes it). No docstring:
# it would be sent in the output schema.
class CompactSearchResult(WireModel):
    hits: list[CompactHit]
    warnings: list[str] | None = None


def lean(schema: dict[str, Any]) -> None:
    """A parameter's JSON schema without what every client pays for and no model needs in tools/list.

    Drops the generated title, a `null` default and the `null` branch of an optional value (omitting
    the parameter is how a client says "none"; the server still accepts an explicit null).
    """
    schema.pop("title", None)
    branches = schema.get("anyOf")
    if isinstance(branches, list) and len(branches) == 2 and {"type": "null"} in branches:
        schema.pop("anyOf")
        schema.update(next(b for b in branches if b != {"type": "null"}))
    if "default" in schema and schema["default"] is None:
        schema.pop("default")


def _untitled(schema: dict[str, Any]) -> None:
    schema.pop("title", None)
    schema.pop("description", None)
    for field in schema.get("properties", {}).values():
        lean(field)


class SearchQuery(WireModel):
    # One query of a bulk searchPatterns call; the fields mean what the single call's do (no
    # descriptions or titles here: they would repeat in every client's tools/list).
    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
        json_schema_extra=_untitled,
        extra="forbid",  # a misspelt filter is an error, not silently ignored
    )

    query: str = Field(default="", max_length=500)
    category: str | None = None
    include_executable: bool | None = None
    min_quality: float | None = Field(default=None, ge=0, le=10)
    limit: int = Field(default=10, ge=1, le=50)


class SearchItem(WireModel):
    """One query's outcome in a bulk search: its hits, or its own error."""

    query: str
    success: bool
    hits: list[CompactHit] | list[SkillHit] | None = None
    error: ErrorInfo | None = None
    warnings: list[str] | None = None


class BulkSearchResult(WireModel):
    results: list[SearchItem]  # in the order of the queries


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
    skill_id: str = Field(alias="patternId")  # the public name (trackPatternUsage's argument too)
    project: str | None = None
    recorded_at: str
    uses: int
    projects: list[str]
    verified: bool


class SourceInfo(WireModel):
    """Where a skill came from, when `skillshelf add` installed it (skillshelf.lock)."""

    name: str  # the source's name in the lock
    kind: str  # git, archive, folder or file
    url: str  # without credentials
    commit: str  # the git commit, or 'sha256:...' of an archive, folder or file
    license: str | None = None  # the skill's frontmatter license, else the source's


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
    source: SourceInfo | None = None  # None for a skill written by hand


class Continuation(WireModel):
    """What a paged load left out, and how to get it."""

    cursor: str  # pass back as loadSkill's `cursor` for the next part
    remaining_tokens: int  # estimated tokens of the documentation left out
    remaining_sections: list[str]  # titles of the top-level sections left out (each works as `section`)


class LoadedSkill(WireModel):
    id: str
    name: str
    category: str
    layout: str
    description: str
    executable: bool
    documentation: str
    section: str | None = None  # the heading path served, when a section was asked for
    continuation: Continuation | None = None  # set when maxTokens left part of the documentation out
    code: list[CodeFile] | None = None
    metadata: SkillMetadata | None = None
    warnings: list[str] | None = None


class BriefMetadata(WireModel):
    """What helps the next step: whether to trust it, what to pass to executeSkill, what else to read."""

    quality: float
    verified: Literal[True] | None = None
    tags: list[str] | None = None
    input_schema: dict[str, Any] | None = None
    resources: list[str] | None = None  # files readSkillFile can read
    source: str | None = None  # 'team@9d2f1ae1 (Apache-2.0)': source, version, license; None when written by hand


class SkillLoad(WireModel):
    """A load as loadSkill sends it by default: each fact once, the documentation minified."""

    id: str
    description: str | None = None  # omitted when the documentation already holds it
    executable: Literal[True] | None = None
    documentation: str
    section: str | None = None
    continuation: Continuation | None = None
    code: list[CodeFile] | None = None
    metadata: BriefMetadata | SkillMetadata | None = None
    warnings: list[str] | None = None


class LoadItem(WireModel):
    """One id's outcome in a bulk load: the skill, or its own error."""

    skill_id: str
    success: bool
    skill: SkillLoad | LoadedSkill | None = None
    error: ErrorInfo | None = None


class BulkLoadResult(WireModel):
    results: list[LoadItem]  # in the order of the ids


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
