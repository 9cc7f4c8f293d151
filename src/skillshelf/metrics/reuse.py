"""Pattern reuse: recorded uses plus past sessions that mention a skill, per skill."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal, Protocol

from skillshelf.library.access.reader import SkillReader
from skillshelf.library.usage.store import SkillUsage
from skillshelf.metrics.models import PatternReuse, ReuseReport

SortBy = Literal["reuseCount", "recent", "category"]


class Mention(Protocol):
    """A past session that mentions a skill (the artifacts module's SessionRef)."""

    @property
    def project(self) -> str: ...

    @property
    def date(self) -> str | None: ...


# Given skill ids, the sessions that mention each (the artifacts module provides it when configured).
MentionFinder = Callable[[list[str]], Mapping[str, Sequence[Mention]]]


def pattern_reuse(
    library: SkillReader,
    skill_id: str | None = None,
    min_reuse: int = 0,
    sort_by: SortBy = "reuseCount",
    mentions: MentionFinder | None = None,
    limit: int = 50,
) -> ReuseReport:
    if skill_id is not None:
        ids = [library.find(skill_id).id]
    else:
        ids = [s.id for s in library.overview()]
    warnings: list[str] = []
    usage = {u.skill_id: u for u in library.usage(skill_id and ids[0], warnings) or []}
    mentioned = mentions(ids) if mentions is not None else {}
    rows = [_reuse(skill_id, usage.get(skill_id), mentioned.get(skill_id, []), library) for skill_id in ids]
    kept = [r for r in rows if r.reuse_count >= min_reuse and (skill_id or r.reuse_count > 0)]
    ordered = _ordered(kept, sort_by)
    return ReuseReport(patterns=ordered[:limit], total_patterns=len(ordered), warnings=warnings or None)


def _reuse(skill_id: str, usage: SkillUsage | None, mentions: Sequence[Mention], library: SkillReader) -> PatternReuse:
    projects = sorted(set(usage.projects if usage else []) | {m.project for m in mentions})
    dates = [d for d in [usage.first_used if usage else None, usage.last_used if usage else None] if d]
    dates += [m.date for m in mentions if m.date]
    indexed = library.get(skill_id)
    uses = usage.uses if usage else 0
    return PatternReuse(
        skill_id=skill_id,
        category=skill_id.split("/", 1)[0],
        reuse_count=uses + len(mentions),
        uses=uses,
        session_mentions=len(mentions),
        projects=projects,
        first_used=min(dates)[:10] if dates else None,  # UTC days: uses have times, session mentions only dates
        last_used=max(dates)[:10] if dates else None,
        verified=indexed is not None and library.is_verified(indexed),
    )


def _ordered(rows: list[PatternReuse], sort_by: SortBy) -> list[PatternReuse]:
    """Sorted by the chosen key; Python's sort is stable, so the id order breaks every tie."""
    ordered = sorted(rows, key=lambda r: r.skill_id)
    if sort_by == "recent":
        ordered.sort(key=lambda r: r.last_used or "", reverse=True)  # ISO dates sort as text; unused last
    elif sort_by == "category":
        ordered.sort(key=lambda r: (r.category, -r.reuse_count))
    else:
        ordered.sort(key=lambda r: -r.reuse_count)
    return ordered
