"""Library health: what the library holds, how good it is, what it costs to load, what is used."""

from __future__ import annotations

import math
from collections import Counter

from skillshelf.library.access.reader import SkillReader
from skillshelf.metrics.models import CategoryLayoutCount, LibraryStats, SkillTokens, UsedSkill

TOP = 10
NEVER_USED_LISTED = 20


def quality_band(score: float) -> str:
    """The histogram band a 0-10 score falls in: '0-1' ... '9-10' (10 counts in '9-10')."""
    band = min(9, max(0, math.floor(score)))
    return f"{band}-{band + 1}"


def library_stats(library: SkillReader) -> LibraryStats:
    skills = library.overview()
    warnings: list[str] = []
    rows = library.usage(None, warnings)
    usage = {u.pattern_id: u for u in rows or []}
    by_use = library.verified_ids(warnings) if rows is not None else frozenset()
    layouts: dict[str, Counter[str]] = {}
    histogram = {f"{band}-{band + 1}": 0 for band in range(10)}
    for skill in skills:
        layouts.setdefault(skill.category, Counter())[skill.layout] += 1
        histogram[quality_band(skill.quality)] += 1
    findings = library.findings()
    unused = sorted((s for s in skills if s.id not in usage), key=lambda s: (-s.quality, s.id))
    most_used = sorted(usage.values(), key=lambda u: (-u.uses, u.pattern_id))[:TOP]
    total_tokens = sum(s.tokens for s in skills)
    return LibraryStats(
        skills=len(skills),
        categories=[
            CategoryLayoutCount(category=c, three_file=n["three-file"], agent_skills=n["agent-skills"])
            for c, n in sorted(layouts.items())
        ],
        quality_histogram=histogram,
        mean_quality=round(sum(s.quality for s in skills) / len(skills), 2) if skills else 0.0,
        verified=sum(1 for s in skills if library.is_verified(s, by_use)),
        executable=sum(1 for s in skills if s.executable),
        load_tokens_total=total_tokens,
        load_tokens_mean=round(total_tokens / len(skills), 1) if skills else 0.0,
        largest=[SkillTokens(id=s.id, tokens=s.tokens) for s in sorted(skills, key=lambda s: -s.tokens)[:TOP]],
        most_used=[UsedSkill(id=u.pattern_id, uses=u.uses, projects=len(u.projects)) for u in most_used],
        never_used_count=len(unused),
        never_used=[s.id for s in unused[:NEVER_USED_LISTED]],
        findings_by_severity=dict(Counter(f.severity for f in findings)),
        findings_by_code=dict(Counter(f.code for f in findings).most_common()),
        warnings=warnings or None,
    )
