"""The skill an id names, or the ids an agent most likely meant: its next step after a miss.

An unknown id is answered with close matches (the same name in another category, a misspelt id or
name), and only when there is none with a search on its words; a bare name with the ids that hold it.
"""

from __future__ import annotations

import difflib
import re
from typing import Protocol

from skillshelf.errors import ErrorCode, PatternNotFoundError, SkillshelfError
from skillshelf.library.index.store import IndexedSkill, SearchFilters, SkillIndex

MAX_SKILL_ID = 300
SKILL_ID = re.compile(r"^[^/\\\x00]+/[^/\\\x00]+$")
NAME_SIMILARITY = 0.6  # difflib's ratio of two whole names ("slugfy", "slugify": 0.92)
WORD_SIMILARITY = 0.8  # of two words ("note", "notes": 0.89), or they share their first four letters


def _alike(wanted: str, name: str) -> bool:
    """Whether a skill name is close enough to the unknown one to be offered for it: alike as a whole, or
    sharing a word give or take its ending ("retries", "retry"). A shared category is not enough."""
    wanted, name = wanted.lower(), name.lower()
    if difflib.SequenceMatcher(None, wanted, name).ratio() >= NAME_SIMILARITY:
        return True
    words = [w for w in re.split(r"[^a-z0-9]+", wanted) if len(w) >= 3]
    others = [w for w in re.split(r"[^a-z0-9]+", name) if len(w) >= 3]
    return any(_same_word(a, b) for a in words for b in others)


def _same_word(a: str, b: str) -> bool:
    return (len(a) >= 4 and a[:4] == b[:4]) or difflib.SequenceMatcher(None, a, b).ratio() >= WORD_SIMILARITY


class Catalog(Protocol):
    """What lookups read: the index, kept fresh, and its search (by meaning too)."""

    index: SkillIndex

    def ensure_fresh(self) -> None: ...

    def get(self, skill_id: str) -> IndexedSkill | None: ...

    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]: ...


class Lookup:
    """`find` and `suggest` over a catalog (the library)."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    def find(self, skill_id: str) -> IndexedSkill:
        """The skill with this id, or an error that names close matches (the agent's next step)."""
        if len(skill_id) > MAX_SKILL_ID or not SKILL_ID.match(skill_id) or ".." in skill_id.split("/"):
            if "/" not in skill_id and len(skill_id) <= MAX_SKILL_ID:
                self.catalog.ensure_fresh()
                same_name = [i for i, _ in self.catalog.index.ids_and_names() if i.rsplit("/", 1)[-1] == skill_id]
                if same_name:  # a bare name: the ids it could mean are the agent's next step
                    raise PatternNotFoundError(skill_id, sorted(same_name)[:3])
            shown = skill_id if len(skill_id) <= 80 else skill_id[:80] + "..."
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR,
                f"{shown!r} is not a skill id; ids look like 'category/name', at most {MAX_SKILL_ID} characters "
                "(see searchPatterns hits).",
            )
        skill = self.catalog.get(skill_id)
        if skill is None:
            raise PatternNotFoundError(skill_id, self.suggest(skill_id))
        return skill

    def suggest(self, skill_id: str, limit: int = 3) -> list[str]:
        """Close matches for an unknown id: same name elsewhere, similar ids or names; only when there is none, a
        search on its words."""
        pairs = self.catalog.index.ids_and_names()
        wanted_name = skill_id.rsplit("/", 1)[-1].lower()
        same_name = [i for i, n in pairs if n.lower() == wanted_name or i.rsplit("/", 1)[-1] == wanted_name]
        similar = [  # a shared category makes any two ids look alike: the names must be alike too
            i
            for i in difflib.get_close_matches(skill_id, [i for i, _ in pairs], n=limit, cutoff=0.6)
            if _alike(wanted_name, i.rsplit("/", 1)[-1])
        ]
        by_name = difflib.get_close_matches(wanted_name, [i.rsplit("/", 1)[-1] for i, _ in pairs], n=limit, cutoff=0.6)
        similar_names = [i for name in by_name for i, _ in pairs if i.rsplit("/", 1)[-1] == name]
        close = list(dict.fromkeys([*same_name, *similar, *similar_names]))
        if close:  # what was meant, misspelt: a search on its words would only add unrelated skills
            return close[:limit]
        found = self.catalog.search(skill_id.replace("/", " "), SearchFilters(), limit)
        return [s.id for s in found if _alike(wanted_name, s.id.rsplit("/", 1)[-1])]
