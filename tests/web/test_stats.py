"""The library page's figures: the same counts as getLibraryStats, over what the viewer may see."""

from __future__ import annotations

import sqlite3
from contextlib import closing

from skillshelf.library.access.reader import LibraryReader, ViewReader
from skillshelf.library.index.library import SkillLibrary
from skillshelf.library.usage.store import USAGE_FILE
from skillshelf.metrics.library_stats import library_stats
from skillshelf.web.stats import library_view, uses_by_period


def set_times(library: SkillLibrary, stamps: list[str]) -> None:
    """Move the recorded events (in insertion order) to the given times."""
    with closing(sqlite3.connect(library.state_dir / USAGE_FILE)) as conn, conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM events ORDER BY id")]
        for event, at in zip(ids, stamps, strict=True):
            conn.execute("UPDATE events SET at = ? WHERE id = ?", (at, event))


def test_the_library_view_counts_match_the_library_stats_tool(sample_library: SkillLibrary) -> None:
    sample_library.usage.record("python/slugify", "app", None, source="tool")
    view = library_view(LibraryReader(sample_library))
    stats = library_stats(LibraryReader(sample_library))
    assert dict(view.quality_histogram) == stats.quality_histogram
    assert view.skills == stats.skills == 4
    assert view.verified == stats.verified
    assert view.total_tokens == stats.load_tokens_total
    assert dict(view.categories) == {c.category: c.three_file + c.agent_skills for c in stats.categories}
    assert len(view.never_used) == stats.never_used_count == 3
    assert view.tokens[0] == (stats.largest[0].id, stats.largest[0].tokens)


def test_hidden_skills_are_left_out_of_every_figure(sample_library: SkillLibrary) -> None:
    sample_library.usage.record("python/slugify", "app", None, source="tool")
    sample_library.usage.record("database/rls-policy", "app", None, source="tool")
    view = library_view(ViewReader(sample_library, [("exclude", "python/*")]))
    assert view.skills == 2
    assert dict(view.categories) == {"database": 1, "git": 1}
    assert {skill_id for skill_id, _ in view.tokens} == {"database/rls-policy", "git/release-notes"}
    assert view.uses == 1
    assert [skill_id for skill_id, _ in view.never_used] == ["git/release-notes"]


def test_uses_are_counted_per_day_with_the_quiet_days_filled_in(sample_library: SkillLibrary) -> None:
    for skill_id in ("python/slugify", "python/slugify", "git/release-notes"):
        sample_library.usage.record(skill_id, "app", None, source="tool")
    set_times(sample_library, ["2026-11-02T09:00:00.000Z", "2026-11-02T17:00:00.000Z", "2026-11-05T08:00:00.000Z"])
    view = library_view(LibraryReader(sample_library))
    assert view.period == "day"
    assert view.uses_over_time[-4:] == [("2026-11-02", 2), ("2026-11-03", 0), ("2026-11-04", 0), ("2026-11-05", 1)]
    assert view.uses_over_time[:3] == [("2026-10-30", 0), ("2026-10-31", 0), ("2026-11-01", 0)]  # a week at least


def test_a_long_history_is_counted_per_week_then_per_month() -> None:
    weekly, period = uses_by_period([("2026-01-01", 1), ("2026-01-06", 2), ("2026-03-01", 4)])
    assert period == "week"
    assert weekly[0] == ("2025-12-29", 1)  # the Monday of that week
    assert weekly[1] == ("2026-01-05", 2)
    assert weekly[-1] == ("2026-02-23", 4)
    assert sum(n for _, n in weekly) == 7
    monthly, period = uses_by_period([("2025-01-15", 1), ("2026-03-02", 5)])
    assert period == "month"
    assert monthly[0] == ("2025-01-01", 1) and monthly[-1] == ("2026-03-01", 5) and len(monthly) == 15
    assert uses_by_period([]) == ([], "day")
