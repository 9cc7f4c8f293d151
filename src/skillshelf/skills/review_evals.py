"""The update review's trigger evals: what an update makes harder to find (docs/curating.md).

The skills an update changes or adds, and the skills they contest (the first hit of one of their queries,
or the second when they are first), are searched before the update (the library as it is) and after it (a
copy of its index with the source's skills replaced by the staged ones: library/index/library.py
`overlaid_index`), by words only. A should-query that loses its first place or leaves the top 5, and a
should_not one that now picks its skill, is a loss; a skill its own description no longer finds in the top
5 is `unreachable`, which the review flags like a new script.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from skillshelf.library.access.reader import LibraryReader, SkillReader
from skillshelf.library.index.library import SkillLibrary, overlaid_index
from skillshelf.library.index.store import IndexedSkill, SearchFilters, SkillIndex
from skillshelf.library.indexing.terms import query_terms
from skillshelf.library.skill.examples import FRONTMATTER_KEY, parse_frontmatter_examples
from skillshelf.library.sources.review import SOURCE_FILES, FindabilityLoss, Review
from skillshelf.skills.evals import SEARCH_LIMIT, TOP, Search, description_query, examples_of

# Changed skills whose queries are rerun per update (with the skills they contest); more are noted, not run.
# On the real corpora (1,000 skills) the added time was 0.4 s for 1 changed skill, 1.3 s for 20, and 3.5 s
# for 100 without a cap, 2.3 s with it (on a busy 2-core machine); the changed skills are parsed anyway
# (1-1.6 s per 100).
MAX_CHANGED = 25


@dataclass(frozen=True)
class _Query:
    example: str | None  # None: the skill's own description
    before: str | None  # the text searched before the update (None: the skill did not exist)
    after: str
    should: bool


def review_findability(library: SkillLibrary, review: Review, folder: Path, staged: Path) -> None:
    """Fill the review's findability: `library` as it is (opened without meaning) against a copy of its index
    with `folder`'s skills replaced by those of `staged` (the source's new version)."""
    changed = [skill.id for skill in review.skills if skill.change != "removed" and skill.id != SOURCE_FILES]
    if not changed:
        return
    with tempfile.TemporaryDirectory(prefix="skillshelf-review-") as scratch:
        touched = {skill.id for skill in review.skills}  # removed ones too: gone from the copy
        after = overlaid_index(library, folder, staged, Path(scratch) / "index.sqlite3", touched)
        try:
            before = words_search(library.index)
            found = update_losses(LibraryReader(library), before, words_search(after), after.get, changed)
        finally:
            after.close()
    review.findability, review.findability_note = found


def words_search(index: SkillIndex) -> Search:
    """The agent's search by words (what `SkillLibrary.search` does when meaning is off), without filters."""
    return lambda query: [skill.id for skill in index.search(query, SearchFilters(), SEARCH_LIMIT)]


def update_losses(
    reader: SkillReader,
    before: Search,
    after: Search,
    after_skill: Callable[[str], IndexedSkill | None],
    changed: Iterable[str],
) -> tuple[list[FindabilityLoss], str]:
    """The losses of the changed skills and their partners, and how they were searched (for the review)."""
    started = time.perf_counter()
    wanted = list(dict.fromkeys(changed))
    checked = wanted[:MAX_CHANGED]
    losses: list[FindabilityLoss] = []
    partners: list[str] = []
    for skill_id in checked:
        found, near = _compare(skill_id, reader, before, after, after_skill)
        losses += found
        partners += near
    others = [p for p in dict.fromkeys(partners) if p not in set(checked)]
    for skill_id in others:
        losses += _compare(skill_id, reader, before, after, after_skill)[0]
    losses.sort(key=lambda loss: not loss.unreachable)  # the flagged ones first, as in the review
    capped = f" of {len(wanted)} changed" if len(wanted) > len(checked) else ""
    note = (
        f"words only; {len(checked)}{capped} skill(s) and {len(others)} they contest, "
        f"{time.perf_counter() - started:.1f} s"
    )
    return losses, note


def _compare(
    skill_id: str, reader: SkillReader, before: Search, after: Search, after_skill: Callable[[str], IndexedSkill | None]
) -> tuple[list[FindabilityLoss], list[str]]:
    """One skill's queries before and after: its losses, and the skills that came first (or second, when it
    did) on them: the ones it contests."""
    old, new = reader.get(skill_id), after_skill(skill_id)
    if new is None:
        return [], []  # removed by the update: nothing of it to find
    losses: list[FindabilityLoss] = []
    near: list[str] = []
    for query in _queries(reader, old, new):
        hits_after = after(query.after)
        hits_before = before(query.before) if query.before is not None else []
        near += [other for hits in (hits_before, hits_after) if (other := _contender(skill_id, hits))]
        if query.before is None:
            continue
        loss = _loss(skill_id, query, hits_before, hits_after)
        if loss is not None:
            losses.append(loss)
    return losses, near


def _queries(reader: SkillReader, old: IndexedSkill | None, new: IndexedSkill) -> list[_Query]:
    """Its own description (the old one before, the new one after) and its written examples: the installed
    version's (frontmatter and evals file) and the new version's frontmatter ones."""
    queries: list[_Query] = []
    own = description_query(new)
    if query_terms(own):
        queries.append(_Query(None, description_query(old) if old is not None else None, own, True))
    written = examples_of(reader, old)[0] if old is not None else []
    written += parse_frontmatter_examples(new.details.frontmatter.get(FRONTMATTER_KEY))[0]
    seen: set[tuple[str, bool]] = set()
    for example in written:
        if (example.query, example.should) in seen or not query_terms(example.query):
            continue
        seen.add((example.query, example.should))
        queries.append(_Query(example.query, example.query if old is not None else None, example.query, example.should))
    return queries


def _contender(skill_id: str, hits: list[str]) -> str:
    """The skill this query's skill contests on it: the first hit, or the second when the skill is first."""
    if not hits:
        return ""
    if hits[0] != skill_id:
        return hits[0]
    return hits[1] if len(hits) > 1 else ""


def _loss(skill_id: str, query: _Query, hits_before: list[str], hits_after: list[str]) -> FindabilityLoss | None:
    was, now = _rank(skill_id, hits_before), _rank(skill_id, hits_after)
    if query.should:
        lost_first = was == 1 and now != 1
        left_top = _in_top(was) and not _in_top(now)
        if not (lost_first or left_top):
            return None
    elif not (now == 1 and was != 1):
        return None
    return FindabilityLoss(
        skill=skill_id,
        example=query.example,
        should=query.should,
        ranks=(was, now),
        firsts=(hits_before[0] if hits_before else None, hits_after[0] if hits_after else None),
        unreachable=query.example is None and _in_top(was) and not _in_top(now),
    )


def _in_top(rank: int | None) -> bool:
    return rank is not None and rank <= TOP


def _rank(skill_id: str, hits: list[str]) -> int | None:
    return hits.index(skill_id) + 1 if skill_id in hits else None
