"""Library health: what the library holds, how good it is, what it costs to load, what is used.

`library_figures` reads the library once; the getLibraryStats tool (`library_stats`) and the web view's
library page (web/stats.py) both summarise those figures, so they count the same way.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

from skillshelf.library.access.reader import SkillReader, StatusReader
from skillshelf.library.index.store import IndexedSkill
from skillshelf.library.skill.discovery import printable
from skillshelf.library.skill.duplicates import Described, DuplicateReport, NearDuplicate, near_duplicates
from skillshelf.library.skill.models import Finding
from skillshelf.library.skill.paths import display_path
from skillshelf.library.usage.store import SkillUsage
from skillshelf.metrics.models import CategoryLayoutCount, LibraryStats, SkillTokens, UsedSkill
from skillshelf.metrics.quality_spread import quality_spread
from skillshelf.skills.evals import Findability, remembered_findability

TOP = 10
NEVER_USED_LISTED = 20


@dataclass(frozen=True)
class LibraryFigures:
    """One reading of the library as a reader sees it: its skills, their uses and the findings (with the
    `near-duplicate` ones `skillshelf check` reports, found among these skills only)."""

    skills: list[IndexedSkill]
    usage: dict[str, SkillUsage]
    verified: frozenset[str]  # ids verified: used from three distinct projects
    findings: list[Finding]
    warnings: list[str]
    near_duplicates: list[NearDuplicate] = field(default_factory=list)

    @property
    def never_used(self) -> list[IndexedSkill]:
        """Skills with no recorded use, the best first."""
        return sorted((s for s in self.skills if s.id not in self.usage), key=lambda s: (-s.quality, s.id))


def library_figures(library: SkillReader) -> LibraryFigures:
    skills = library.overview()
    warnings: list[str] = []
    rows = library.usage(None, warnings)
    by_use = library.verified_ids(warnings) if rows is not None else frozenset()
    verified = frozenset(s.id for s in skills if library.is_verified(s, by_use))
    duplicates = _near_duplicates(tuple(Described(s.id, s.name, s.details.description) for s in skills))
    if duplicates.note:
        warnings.append(duplicates.note)
    findings = library.findings() + duplicate_findings(library, skills, duplicates.pairs)
    usage = {u.skill_id: u for u in rows or []}
    return LibraryFigures(skills, usage, verified, findings, warnings, duplicates.pairs)


@lru_cache(maxsize=2)
def _near_duplicates(skills: tuple[Described, ...]) -> DuplicateReport:
    """The search over these exact skills, remembered: stats and the web page ask again and again of an
    unchanged library, and the search costs far more than reading the index (0.3 s for 3,000 skills)."""
    return near_duplicates(skills)


def duplicate_findings(library: StatusReader, skills: list[IndexedSkill], pairs: list[NearDuplicate]) -> list[Finding]:
    """The `near-duplicate` findings of `skillshelf check`, at each duplicating skill's document."""
    by_id = {s.id: s for s in skills}
    labels = [printable(display_path(root)) for root in library.roots()]
    findings = []
    for pair in pairs:
        details = by_id[pair.other].details
        root = labels[details.root_index] if details.root_index < len(labels) else ""
        findings.append(Finding(details.doc_file, None, "warning", "near-duplicate", pair.message(), root))
    return findings


def library_stats(library: SkillReader, *, findability: bool = False) -> LibraryStats:
    """The library's health; its findability too when it is small enough (or `findability`: however big)."""
    found = remembered_findability(library, force=findability)
    return stats_of(library_figures(library), found).model_copy(update={"findability": found})


def stats_of(figures: LibraryFigures, found: Findability | None) -> LibraryStats:
    """The figures summarised; quality less what `found` (the library's findability, if worked out) costs."""
    skills = figures.skills
    spread = quality_spread(skills, found)
    layouts: dict[str, Counter[str]] = {}
    for skill in skills:
        layouts.setdefault(skill.category, Counter())[skill.layout] += 1
    unused = figures.never_used
    most_used = sorted(figures.usage.values(), key=lambda u: (-u.uses, u.skill_id))[:TOP]
    total_tokens = sum(s.tokens for s in skills)
    return LibraryStats(
        skills=len(skills),
        categories=[
            CategoryLayoutCount(category=c, three_file=n["three-file"], agent_skills=n["agent-skills"])
            for c, n in sorted(layouts.items())
        ],
        quality_histogram=spread.histogram,
        mean_quality=spread.mean,
        quality_deciles=spread.deciles,
        quality_basis=spread.basis,
        verified=len(figures.verified),
        executable=sum(1 for s in skills if s.executable),
        load_tokens_total=total_tokens,
        load_tokens_mean=round(total_tokens / len(skills), 1) if skills else 0.0,
        largest=[SkillTokens(id=s.id, tokens=s.tokens) for s in sorted(skills, key=lambda s: -s.tokens)[:TOP]],
        most_used=[UsedSkill(id=u.skill_id, uses=u.uses, projects=len(u.projects)) for u in most_used],
        never_used_count=len(unused),
        never_used=[s.id for s in unused[:NEVER_USED_LISTED]],
        findings_by_severity=dict(Counter(f.severity for f in figures.findings)),
        findings_by_code=dict(Counter(f.code for f in figures.findings).most_common()),
        near_duplicates=len(figures.near_duplicates),
        warnings=figures.warnings or None,
    )
