"""The library's quality: each skill's index-time score less what the library-wide findability says an agent
will miss (issue 34).

A skill's own score (library/skill/quality.py) is computed when it is indexed, from the skill alone. Whether
an agent finds it is a property of the whole library: a skill its own description does not bring into the
top 5 is one an agent will not load, and two skills that win each other's queries are loaded in place of
each other. Those two costs enter here, where the findability report is (skills/evals.py: remembered per
set of skills, so once per index generation), and only in what the library's figures show (`stats`,
getLibraryStats, the web library page). Search, filters (`minQuality`, `quality>=` views) and the bar
(`meets_bar`) keep the index-time score: findability changes whenever another skill changes, and a skill's standing in a
view must not move because an unrelated skill was added.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from skillshelf.envelope import WireModel
from skillshelf.library.index.store import IndexedSkill
from skillshelf.skills.evals import Findability

UNREACHABLE_COST = 2.0  # its own description leaves it out of the top 5: an agent asking for it gets another
SECOND_COST = 1.0  # in the top 5 for its own description but not first: agents usually load the first hit
COLLISION_COST = 1.0  # it and another skill win each other's queries: an agent gets either
BANDS = [f"{band}-{band + 1}" for band in range(10)]


class QualitySpread(WireModel):
    histogram: dict[str, int]  # "0-1" ... "9-10" -> skills whose score falls in that band
    mean: float
    deciles: list[float]  # the 10th, 20th ... 90th percentile scores (empty for an empty library)
    basis: str  # what the scores used: findability, or the index-time scores alone and why


def quality_band(score: float) -> str:
    """The histogram band a 0-10 score falls in: '0-1' ... '9-10' (10 counts in '9-10')."""
    band = min(9, max(0, math.floor(score)))
    return f"{band}-{band + 1}"


def library_quality(skills: Sequence[IndexedSkill], found: Findability | None) -> dict[str, float]:
    """Each skill's score as the library's figures show it: the index-time score less the findability costs."""
    if found is None:
        return {s.id: s.quality for s in skills}
    return {s.id: round(max(0.0, s.quality - findability_cost(s.id, found)), 1) for s in skills}


def findability_cost(skill_id: str, found: Findability) -> float:
    """What the library's findability takes off a skill's score (the costs above)."""
    if any(u.id == skill_id for u in found.unreachable):
        cost = UNREACHABLE_COST
    else:
        rank = found.own_ranks.get(skill_id, 1)  # not searched (a description without words): no cost
        cost = SECOND_COST if rank is None or rank > 1 else 0.0
    if any(skill_id in pair.skills for pair in found.collisions):
        cost += COLLISION_COST
    return cost


def quality_spread(skills: Sequence[IndexedSkill], found: Findability | None) -> QualitySpread:
    scores = library_quality(skills, found)
    values = sorted(scores.values())
    histogram = dict.fromkeys(BANDS, 0)
    for value in values:
        histogram[quality_band(value)] += 1
    return QualitySpread(
        histogram=histogram,
        mean=round(sum(values) / len(values), 2) if values else 0.0,
        deciles=deciles(values),
        basis=_basis(skills, found, scores),
    )


def deciles(values: Sequence[float]) -> list[float]:
    """The 10th ... 90th percentiles of sorted `values` (nearest rank)."""
    if not values:
        return []
    return [values[min(len(values) - 1, math.ceil(len(values) * tenth / 10) - 1)] for tenth in range(1, 10)]


def _basis(skills: Sequence[IndexedSkill], found: Findability | None, scores: dict[str, float]) -> str:
    if found is None:
        return "index-time scores only: findability not worked out past 200 skills (stats --findability)"
    lowered = sum(1 for s in skills if scores[s.id] < s.quality)
    second = sum(1 for rank in found.own_ranks.values() if rank is not None and 1 < rank <= 5)
    colliding = len({i for pair in found.collisions for i in pair.skills})
    return (
        f"index-time scores less what findability costs: {UNREACHABLE_COST:g} when a skill's own description "
        f"leaves it out of the top 5 ({len(found.unreachable)} skills), {SECOND_COST:g} when it is not first "
        f"({second}), {COLLISION_COST:g} more in a collision ({colliding}); {lowered} of {len(skills)} lowered"
    )
