"""A view of a skill library: the same library, with the skills a view hides left out of every read.

`ScopedLibrary(library, rules)` is handed to the services (search, load, read a file, record use,
run, categories, statistics, reuse) in place of the library itself, so one visibility rule holds at
one boundary: a hidden skill is absent from every listing and every lookup fails on it exactly as on
an id that does not exist (the error's suggestions never name a hidden skill either).

It shares everything with the library it wraps (index, caches, watcher, usage store) and owns none
of it: start, stop and close the library, not the view. Visibility is decided from the skill's id
alone when the rules are id globs; tag, quality and layout selectors need the index row, so the
visible ids are then computed once per index sync and cached.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

from skillshelf.errors import ErrorCode, PatternNotFoundError, SkillshelfError
from skillshelf.library.access.rules import Rule, SkillFacts, decide_skill, needs_details
from skillshelf.library.index.library import MAX_SKILL_ID, SKILL_ID, SkillLibrary
from skillshelf.library.index.store import CategoryStats, IndexedSkill, SearchFilters
from skillshelf.library.skill.models import Finding
from skillshelf.library.usage.store import UsageStore

T = TypeVar("T")


def facts_of(skill: IndexedSkill) -> SkillFacts:
    return SkillFacts(id=skill.id, tags=tuple(skill.details.tags), quality=skill.quality, layout=skill.layout)


class _ScopedUsage:
    """A usage store whose reads leave hidden skills out (writes go through `find` first anyway)."""

    def __init__(self, store: UsageStore, visible: Callable[[str], bool]) -> None:
        self._store = store
        self._visible = visible

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def usage(self, pattern_id: str | None = None) -> list[Any]:
        return [u for u in self._store.usage(pattern_id) if self._visible(u.pattern_id)]

    def verified_by_use(self) -> frozenset[str]:
        return frozenset(i for i in self._store.verified_by_use() if self._visible(i))

    def daily_uses(self) -> list[tuple[str, str, int]]:
        return [row for row in self._store.daily_uses() if self._visible(row[1])]


class _ScopedIndex:
    """`library.index` as a view sees it (the few reads services make on the index directly)."""

    def __init__(self, scoped: ScopedLibrary) -> None:
        self._scoped = scoped

    def __getattr__(self, name: str) -> Any:
        return getattr(self._scoped.inner.index, name)

    def get(self, skill_id: str) -> IndexedSkill | None:
        return self._scoped.get(skill_id)

    def count(self) -> int:
        if not self._scoped.rules:
            return self._scoped.inner.index.count()
        return len(self._scoped.overview())


class ScopedLibrary(SkillLibrary):
    """The library as one view sees it. Everything not about which skills exist is delegated."""

    def __init__(self, inner: SkillLibrary, rules: Sequence[Rule]) -> None:  # no super().__init__: shares inner
        self.inner = inner
        self.rules = tuple(rules)
        self._by_details = needs_details(self.rules)
        self._cache_lock = threading.Lock()
        self._cached: tuple[object, frozenset[str]] | None = None
        self._by_id: dict[str, bool] = {}  # id-only rules: each id decided once

    def __getattr__(self, name: str) -> Any:  # attributes the library sets on itself (config, roots, files...)
        if name in ("inner", "rules"):
            raise AttributeError(name)
        return getattr(self.inner, name)

    def set_rules(self, rules: Sequence[Rule]) -> bool:
        """Apply new rules (a reloaded config); True when they differ from the old ones."""
        new = tuple(rules)
        if new == self.rules:
            return False
        with self._cache_lock:
            self.rules, self._by_details, self._cached, self._by_id = new, needs_details(new), None, {}
        return True

    # -- visibility ---------------------------------------------------------------------------
    def is_visible(self, skill_id: str) -> bool:
        if not self.rules:
            return True
        if not self._by_details:
            known = self._by_id.get(skill_id)
            if known is None:
                known = self._by_id[skill_id] = decide_skill(self.rules, SkillFacts(id=skill_id)).kept
            return known
        return skill_id in self.visible_ids()

    def visible_ids(self) -> frozenset[str]:
        """The ids this view shows, recomputed after each sync of the index (selectors need its rows)."""
        self.inner.ensure_fresh()
        generation = (self.inner._synced_at, self.inner.index.count())
        with self._cache_lock:
            if self._cached is not None and self._cached[0] == generation:
                return self._cached[1]
        ids = frozenset(s.id for s in self.inner.index.overview() if decide_skill(self.rules, facts_of(s)).kept)
        with self._cache_lock:
            self._cached = (generation, ids)
        return ids

    def _visible_predicate(self) -> Callable[[str], bool]:
        if not self._by_details:
            return self.is_visible
        ids = self.visible_ids()
        return ids.__contains__

    # -- reads, filtered ------------------------------------------------------------------------
    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]:
        if not self.rules:
            return self.inner.search(query, filters, limit)
        return self.inner.search(query, replace(filters, visible=self._visible_predicate()), limit)

    def get(self, skill_id: str) -> IndexedSkill | None:
        skill = self.inner.get(skill_id)
        return skill if skill is not None and self.is_visible(skill.id) else None

    def find(self, skill_id: str) -> IndexedSkill:
        if len(skill_id) > MAX_SKILL_ID or not SKILL_ID.match(skill_id) or ".." in skill_id.split("/"):
            return self.inner.find(skill_id)  # the same VALIDATION_ERROR, whoever asks
        skill = self.get(skill_id)
        if skill is None:
            raise PatternNotFoundError(skill_id, self.suggest(skill_id))
        return skill

    def suggest(self, skill_id: str, limit: int = 3) -> list[str]:
        visible = self._visible_predicate()
        return [s for s in self.inner.suggest(skill_id, limit * 4) if visible(s)][:limit]

    def overview(self) -> list[IndexedSkill]:
        visible = self._visible_predicate()
        return [s for s in self.inner.overview() if visible(s.id)]

    def has_category(self, name: str) -> bool:
        return any(s.category == name for s in self.overview())

    def categories(self) -> list[CategoryStats]:
        skills = self.overview()
        by_use = self.verified_ids()
        groups: dict[str, list[IndexedSkill]] = {}
        for skill in skills:
            groups.setdefault(skill.category, []).append(skill)
        return [
            CategoryStats(
                name,
                len(members),
                sum(1 for s in members if s.executable),
                sum(1 for s in members if self.is_verified(s, by_use)),
                round(sum(s.quality for s in members) / len(members), 2),
            )
            for name, members in sorted(groups.items())
        ]

    def verified_ids(self, warnings: list[str] | None = None) -> frozenset[str]:
        visible = self._visible_predicate()
        return frozenset(i for i in self.inner.verified_ids(warnings) if visible(i))

    def is_verified(self, skill: IndexedSkill, by_use: frozenset[str] | None = None) -> bool:
        return skill.quality_verified or skill.id in (self.verified_ids() if by_use is None else by_use)

    def read_usage(self, read: Callable[[UsageStore], T], warnings: list[str]) -> T | None:
        visible = self._visible_predicate()
        return self.inner.read_usage(lambda store: read(cast(UsageStore, _ScopedUsage(store, visible))), warnings)

    def findings(self) -> list[Finding]:
        """Findings about files of hidden skills are left out (their paths would name them)."""
        if not self.rules:
            return self.inner.findings()
        visible = self._visible_predicate()
        hidden = [s for s in self.inner.overview() if not visible(s.id)]
        prefixes = tuple(_source_prefix(s) for s in hidden)
        return [f for f in self.inner.findings() if not (prefixes and f.path.startswith(prefixes))]

    @property
    def index(self) -> Any:  # services read `library.index.get`; the view answers for hidden ids
        return _ScopedIndex(self)

    @index.setter
    def index(self, value: Any) -> None:
        raise AttributeError("a ScopedLibrary shares its library's index")

    @property
    def usage(self) -> UsageStore:
        return self.inner.usage

    # -- everything else is the library's ----------------------------------------------------
    def ensure_fresh(self) -> None:
        self.inner.ensure_fresh()

    def needs_sync(self) -> bool:
        return self.inner.needs_sync()

    def mark_dirty(self) -> None:
        self.inner.mark_dirty()

    def start_watching(self) -> None:
        self.inner.start_watching()

    def root_of(self, skill: IndexedSkill) -> Any:
        return self.inner.root_of(skill)

    def status(self) -> dict[str, object]:
        return self.inner.status()

    def index_warning(self) -> str | None:
        return self.inner.index_warning()

    def add_change_listener(self, listener: Callable[[], None]) -> None:
        self.inner.add_change_listener(listener)

    def add_progress_listener(self, listener: Callable[[int, int], None]) -> None:
        self.inner.add_progress_listener(listener)

    def start(self) -> None:
        raise SkillshelfError(ErrorCode.INTERNAL_ERROR, "start the library, not a view of it")

    def sync(self) -> Any:
        return self.inner.sync()

    def close(self) -> None:
        """A view owns nothing: closing it leaves the library open."""

    def stop_watching(self) -> None:
        """A view owns no watcher."""


def _source_prefix(skill: IndexedSkill) -> str:
    doc = skill.details.doc_file
    if skill.layout == "three-file":
        return doc[: -len(".md")] if doc.endswith(".md") else doc
    return doc.rsplit("/", 1)[0] + "/" if "/" in doc else doc
