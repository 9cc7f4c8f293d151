"""What the library page charts, over the skills a viewer may see."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass, field

from skillshelf.library.access.reader import SkillReader
from skillshelf.library.skill.duplicates import NearDuplicate
from skillshelf.metrics.library_stats import library_figures, stats_of
from skillshelf.skills.evals import Findability, remembered_findability

DAILY_UP_TO = 45  # days spanned before uses are counted per week, then per month past WEEKLY_UP_TO
WEEKLY_UP_TO = 400
AT_LEAST_DAYS = 7  # a chart per day spans a week at least: one day of uses is one column among seven


@dataclass(frozen=True)
class LibraryView:
    skills: int
    mean_quality: float
    verified: int
    executable: int
    total_tokens: int
    quality_histogram: list[tuple[str, int]]  # band '0-1' ... '9-10' -> skills
    categories: list[tuple[str, int]]  # most skills first
    tokens: list[tuple[str, int]]  # skill id -> tokens to load, largest first
    uses_over_time: list[tuple[str, int]]  # period start 'YYYY-MM-DD' -> uses, oldest first, gaps filled
    period: str  # "day", "week" or "month"
    uses: int
    never_used: list[tuple[str, float]]  # skill id, quality: the best unused first
    findings: dict[str, int] = field(default_factory=dict)  # severity -> count
    near_duplicates: list[tuple[str, str, str]] = field(default_factory=list)  # (first id, other id, why)
    findability: Findability | None = None  # None past AUTO_MAX_SKILLS (skills/evals.py)
    quality_deciles: list[float] = field(default_factory=list)  # 10th ... 90th percentile scores
    quality_basis: str = ""  # what the quality figures used (metrics/quality_spread.py)


def library_view(library: SkillReader) -> LibraryView:
    """The library page's figures over the skills `library` (a view's reader) shows: the same reading and
    counts as getLibraryStats (metrics/library_stats.py), plus what only the charts need."""
    figures = library_figures(library)
    found = remembered_findability(library)
    stats = stats_of(figures, found)
    daily = [(day, count) for day, _skill_id, count in library.daily_uses()]  # no usage: the charts show none
    periods, period = uses_by_period(daily)
    categories = [(c.category, c.three_file + c.agent_skills) for c in stats.categories]
    return LibraryView(
        skills=stats.skills,
        mean_quality=stats.mean_quality,
        verified=stats.verified,
        executable=stats.executable,
        total_tokens=stats.load_tokens_total,
        quality_histogram=list(stats.quality_histogram.items()),
        categories=sorted(categories, key=lambda kv: (-kv[1], kv[0])),
        tokens=sorted(((s.id, s.tokens) for s in figures.skills), key=lambda kv: (-kv[1], kv[0])),
        uses_over_time=periods,
        period=period,
        uses=sum(count for _day, count in daily),
        never_used=[(s.id, s.quality) for s in figures.never_used],
        findings=dict(stats.findings_by_severity),
        near_duplicates=[(pair.first, pair.other, _why(pair)) for pair in figures.near_duplicates],
        findability=found,
        quality_deciles=stats.quality_deciles,
        quality_basis=stats.quality_basis,
    )


def _why(pair: NearDuplicate) -> str:
    if pair.same_name and pair.same_description:
        return "same name and description"
    return "same name" if pair.same_name else "same description"


def uses_by_period(daily: list[tuple[str, int]]) -> tuple[list[tuple[str, int]], str]:
    """Uses per day, week (from Monday) or month, whichever keeps the chart readable; no gaps. Days span
    a week at least, ending on the last day with uses (the days before it show as none)."""
    if not daily:
        return [], "day"
    days = [dt.date.fromisoformat(day) for day, _ in daily]
    last = max(days)
    first = min(*days, last - dt.timedelta(days=AT_LEAST_DAYS - 1))
    span = (last - first).days
    period = "day" if span < DAILY_UP_TO else "week" if span < WEEKLY_UP_TO else "month"
    totals: Counter[dt.date] = Counter()
    for day, (_text, count) in zip(days, daily, strict=True):
        totals[_period_start(day, period)] += count
    buckets: list[tuple[str, int]] = []
    current = _period_start(first, period)
    while current <= last:
        buckets.append((current.isoformat(), totals[current]))
        current = _next(current, period)
    return buckets, period


def _period_start(day: dt.date, period: str) -> dt.date:
    if period == "week":
        return day - dt.timedelta(days=day.weekday())
    if period == "month":
        return day.replace(day=1)
    return day


def _next(day: dt.date, period: str) -> dt.date:
    if period == "week":
        return day + dt.timedelta(days=7)
    if period == "month":
        return (day.replace(day=28) + dt.timedelta(days=4)).replace(day=1)
    return day + dt.timedelta(days=1)
