"""Wire models of the artifacts tools (camelCase on the wire, snake_case in Python)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from skillshelf.envelope import WireModel

SectionName = Literal["summary", "decisions", "implementations", "challenges", "nextSteps", "code"]
ALL_SECTIONS: tuple[SectionName, ...] = ("summary", "decisions", "implementations", "challenges", "nextSteps", "code")


class SessionHit(WireModel):
    """One search hit: enough to choose a session (~60 tokens), never its content."""

    project: str
    session_id: str
    date: str  # ISO date: from the session id, else the day its files last changed
    title: str
    summary: str  # one line, at most 200 characters
    score: float  # relevance, higher is better; 0 when listing without a query
    tokens: int  # estimated tokens to load this session with loadSession's defaults


class ArtifactSearchResult(WireModel):
    query: str
    hits: list[SessionHit]
    warnings: list[str] = Field(default_factory=list)


class CodeBlockInfo(WireModel):
    language: str | None = None
    file: str | None = None  # from the fence info string (`python title="auth.py"`) or the pack
    code: str
    section: str | None = None  # the heading the block sits under
    source: str  # the artifact file it came from, relative to .agent-artifacts/


class LoadedSession(WireModel):
    project: str
    session_id: str
    date: str
    title: str
    summary: str | None = None
    decisions: list[str] | None = None
    implementations: list[str] | None = None
    challenges: list[str] | None = None
    next_steps: list[str] | None = None
    code: list[CodeBlockInfo] | None = None
    files: list[str]  # the session's files, relative to .agent-artifacts/
    warnings: list[str] = Field(default_factory=list)


class SessionCode(WireModel):
    project: str
    session_id: str
    language: str | None = None  # the filter asked for
    blocks: list[CodeBlockInfo]
    languages: list[str]  # every language the session's code is in, to refine the filter
    warnings: list[str] = Field(default_factory=list)
