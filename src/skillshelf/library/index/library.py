"""`SkillLibrary`: the roots, their index kept fresh, and what the readers ask of them.

A composition of parts that each read alone: where its state lives (places.py), keeping the index in
line with the files (sync.py), ranking a search by words and meaning (ranking.py), finding a skill by
id or what was meant (suggestions.py), its usage events (usage/opened.py), and /health's status
(health.py). This class builds them and answers the readers (library/access/reader.py) through them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.index.health import LibraryHealth
from skillshelf.library.index.places import LibraryConfig, Places
from skillshelf.library.index.ranking import Ranking
from skillshelf.library.index.store import CategoryStats, IndexedSkill, SearchFilters, SkillIndex
from skillshelf.library.index.suggestions import Lookup
from skillshelf.library.index.sync import LibrarySync, parse_sources
from skillshelf.library.indexing.freshness import SyncReport, synced_for_block
from skillshelf.library.semantic.vectors import SemanticIndex, skill_text
from skillshelf.library.skill.discovery import discover
from skillshelf.library.skill.models import Finding
from skillshelf.library.skill.paths import display_path
from skillshelf.library.usage.events import UsageEvents
from skillshelf.library.usage.opened import OpenedUsage

T = TypeVar("T")
# LibraryConfig (places.py) is what a SkillLibrary is built from: its callers import the two together.
__all__ = ["LibraryConfig", "SkillLibrary", "is_verified", "overlaid_index"]


class SkillLibrary:
    def __init__(self, config: LibraryConfig) -> None:
        places = Places.of(config)
        self.config = config
        self.roots = places.roots
        self.state_dir = places.state_dir
        self.index = SkillIndex(places.index_file)
        self.index_path = self.index.path  # elsewhere when that folder cannot be written
        self.semantic: SemanticIndex | None = None
        if config.semantic_model is not None:
            vectors = places.vectors_beside(self.index_path)
            self.semantic = SemanticIndex(config.semantic_model.expanduser(), vectors, self._embedding_texts)
        self.syncing = LibrarySync(config, self.roots, self.index, self.semantic)
        self.files = self.syncing.files  # parsed documents and code for loadSkill, by file signature
        self.digest = self.syncing.digest  # of the files' contents, for /health (replicas compare it)
        self.ranking = Ranking(self.index, self.semantic)
        self.lookup = Lookup(self)
        self.health = LibraryHealth(self.syncing, self.index, self.semantic)
        self.usage_events = OpenedUsage(self.state_dir, config.open_usage, config.usage_busy_timeout)

    def _embedding_texts(self) -> list[tuple[str, str]]:
        return [(i, skill_text(name, description, body)) for i, name, description, body in self.index.texts_to_embed()]

    # -- freshness (sync.py) ---------------------------------------------------------------
    def sync(self) -> SyncReport:
        return self.syncing.sync()

    def start(self) -> None:
        self.syncing.start()

    def ensure_fresh(self) -> None:
        self.syncing.ensure_fresh()

    def needs_sync(self) -> bool:
        return self.syncing.needs_sync()

    def mark_dirty(self) -> None:
        self.syncing.mark_dirty()

    @property
    def sync_error(self) -> str | None:
        return self.syncing.sync_error

    @property
    def progress(self) -> tuple[int, int]:
        return self.syncing.progress

    def add_change_listener(self, listener: Callable[[], None]) -> None:
        self.syncing.add_change_listener(listener)

    def add_progress_listener(self, listener: Callable[[int, int], None]) -> None:
        self.syncing.add_progress_listener(listener)

    def start_watching(self) -> None:
        self.syncing.start_watching()

    def stop_watching(self) -> None:
        self.syncing.stop_watching()

    def findings(self) -> list[Finding]:
        return self.syncing.findings()

    def generation(self) -> tuple[float, int]:
        return self.syncing.generation()

    def opened(self) -> AbstractContextManager[SkillLibrary]:
        return synced_for_block(self)

    def close(self) -> None:
        self.syncing.close()
        self.index.close()
        self.usage_events.close()

    # -- status (health.py) and usage (usage/opened.py) -------------------------------------
    def status(self) -> dict[str, object]:
        return self.health.status()

    def index_warning(self) -> str | None:
        return self.health.index_warning()

    @property
    def usage(self) -> UsageEvents:
        return self.usage_events.events

    def read_usage(self, read: Callable[[UsageEvents], T], warnings: list[str]) -> T | None:
        return self.usage_events.read(read, warnings)

    def verified_ids(self, warnings: list[str] | None = None) -> frozenset[str]:
        return self.usage_events.verified_ids(warnings)

    # -- reads (ranking.py, suggestions.py) ----------------------------------------------------
    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]:
        self.ensure_fresh()
        return self.ranking.search(query, filters, limit)

    def get(self, skill_id: str) -> IndexedSkill | None:
        self.ensure_fresh()
        return self.index.get(skill_id)

    def find(self, skill_id: str) -> IndexedSkill:
        return self.lookup.find(skill_id)

    def suggest(self, skill_id: str, limit: int = 3) -> list[str]:
        return self.lookup.suggest(skill_id, limit)

    def has_category(self, name: str) -> bool:
        self.ensure_fresh()
        return self.index.has_category(name)

    def categories(self, visible: Callable[[str], bool] | None = None) -> list[CategoryStats]:
        """Per category counts of the skills `visible` admits (None: all); `verified` counts skills used from
        three distinct projects, as everywhere."""
        self.ensure_fresh()
        by_use = self.verified_ids()
        counted = self.index.categories(visible, by_use)
        return counted

    def overview(self) -> list[IndexedSkill]:
        self.ensure_fresh()
        return self.index.overview()

    def root_of(self, skill: IndexedSkill) -> Path:
        return self.roots[skill.details.root_index]

    def owners_of(self, real: Path) -> list[str]:
        """The ids of the skills whose files hold `real` (a resolved path), by their sources in the index."""
        for index, root in enumerate(self.roots):
            if real.is_relative_to(root):
                return self.index.owners(index, real.relative_to(root).as_posix())
        return []


def overlaid_index(
    library: SkillLibrary, folder: Path, staged: Path, path: Path, changed: Collection[str] | None = None
) -> SkillIndex:
    """The library's index as it would be with `folder` (a source's folder in one of its roots) holding what
    `staged` (a folder of the same name) holds: a copy at `path` with only that folder's skills re-parsed (only
    the `changed` ids, when the caller knows them: the update review), so the review searches the library
    after the update without indexing it all again."""
    library.sync()  # not only "fresh enough": a library opened a moment ago may not have listed its roots yet
    where, relative = _placed(library.roots, folder)
    index = library.index.copy_to(path)
    try:
        prefix = f"{where}:{relative}/"
        removed = [key for key in index.signatures() if key.startswith(prefix)]
        found = [s for s in discover([staged.parent]).sources if s.category == staged.name]
        if changed is not None:  # the others are the same files: their rows in the copy stand
            rows = (index.get(skill_id) for skill_id in changed)
            keys = {f"{s.details.root_index}:{s.details.doc_file}" for s in rows if s is not None}
            removed = [key for key in removed if key in keys]
            found = [source for source in found if source.skill_id in changed]
        placed = []
        for source in found:
            inside = source.key.split(":", 1)[1].removeprefix(f"{staged.name}/")
            held = index.get(source.skill_id)
            if held is not None and held.details.root_index < where:
                continue  # an earlier root holds that id and keeps it (discovery's rule)
            placed.append(replace(source, key=f"{where}:{relative}/{inside}", root_index=where))
        index.apply(parse_sources(placed, library.config.max_file_bytes), removed)
    except BaseException:
        index.close()
        raise
    return index


def _placed(roots: list[Path], folder: Path) -> tuple[int, str]:
    """Which root holds `folder`, and the folder relative to it (as an index key has it)."""
    real = folder.resolve()
    for number, root in enumerate(roots):
        if real.is_relative_to(root.resolve()) and real != root.resolve():
            return number, real.relative_to(root.resolve()).as_posix()
    raise SkillshelfError(ErrorCode.VALIDATION_ERROR, f"{display_path(folder)} is in none of the library's roots")


def is_verified(skill: IndexedSkill, by_use: frozenset[str]) -> bool:
    """The one rule: used from three distinct projects (`by_use`). A skill's own score says how good it looks
    (`quality`); `verified` says it was used, so a high score alone never makes it verified."""
    return skill.id in by_use
