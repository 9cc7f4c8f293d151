"""The normalised skill model both on-disk layouts are read into."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

Severity = Literal["error", "warning", "info"]
Layout = Literal["three-file", "agent-skills"]
QualitySource = Literal["declared", "breakdown", "estimated"]

# The bar a skill's own score is measured against (the seed's extraction threshold): `meets_bar`, and the
# criteria under it listed as reasons. Not `verified`: that is use (three projects), library/usage/store.py.
QUALITY_BAR = 7.0
# How a count of findings of each severity reads everywhere (check, stats, the web view): "1 note".
SEVERITY_WORDS: dict[str, tuple[str, str]] = {
    "error": ("error", "errors"),
    "warning": ("warning", "warnings"),
    "info": ("note", "notes"),
}


def count_of(severity: str, count: int) -> str:
    """'1 error', '2 warnings', '116 notes' (an info finding is a note)."""
    one, many = SEVERITY_WORDS.get(severity, (severity, severity + "s"))
    return f"{count:,} {one if count == 1 else many}"


@dataclass(frozen=True)
class Finding:
    """Something a curator should know about a file: where, how bad, and what to fix."""

    path: str  # relative to the library root, '/'-separated
    line: int | None
    severity: Severity
    code: str
    message: str
    root: str = ""  # display form of the root ('~' for home)

    def location(self) -> str:
        if not self.root:
            where = self.path
        elif self.path in ("", "."):  # a finding about the root itself
            where = self.root
        else:
            where = f"{self.root.rstrip('/')}/{self.path}"
        return f"{where}:{self.line}" if self.line else where

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
        }

    @classmethod
    def from_dict(cls, raw: dict[str, Any], root: str = "") -> Finding:
        return cls(raw["path"], raw["line"], raw["severity"], raw["code"], raw["message"], root)


@dataclass(frozen=True)
class Quality:
    score: float
    source: QualitySource
    meets_bar: bool  # score >= QUALITY_BAR
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class SkillSource:
    """Where a skill lives, found by listing directories only (no file is read).

    `signature` changes whenever any file that feeds the skill changes, so the index can
    tell what to re-parse from stat calls alone.
    """

    key: str  # '<root index>:<path relative to root>' of the main document
    root: Path
    root_index: int
    category: str
    name: str  # from the path: file stem or folder name
    layout: Layout
    doc_file: Path
    code_file: Path | None = None
    meta_file: Path | None = None
    signature: str = ""

    @property
    def skill_id(self) -> str:
        return f"{self.category}/{self.name}"


@dataclass
class Skill:
    source: SkillSource
    declared_name: str  # the frontmatter name for Agent Skills; the file stem otherwise
    description: str
    tags: list[str]
    headings: list[str]
    body: str  # the document body without frontmatter, as indexed and loaded
    language: str | None
    executable: bool
    frontmatter: dict[str, Any]
    input_schema: dict[str, Any] | None
    resources: list[str]  # Agent Skills: files under scripts/, references/, assets/
    quality: Quality
    findings: list[Finding] = field(default_factory=list)
    load_tokens: int = 0

    @property
    def id(self) -> str:
        return self.source.skill_id

    @property
    def category(self) -> str:
        return self.source.category

    @property
    def name(self) -> str:
        return self.source.name
