"""The one way every surface reads skills: which skills exist for a reader, and what is in their files.

Tools, resources, the Skills extension, the web view, prompts, composites and the CLI read skills
only through a `SkillReader`. `LibraryReader` reads the whole library (the curator's CLI);
`ViewReader` wraps the library for one view: a hidden skill is absent from every listing, every
lookup fails on it exactly as on an id that does not exist (suggestions never name it), and no file
of a visible skill may lead into it through a symlink. The file rules themselves live in
`access.files` (one `locate` for every read); frontmatter is parsed only by `skill.frontmatter`
(the alias-bomb guard). tests/library/test_reader.py calls every member of the interface with a
hidden skill; tests/test_boundary.py proves no other module opens a skill's files.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, TypeVar

from skillshelf.errors import PatternNotFoundError
from skillshelf.library.access import manifest as manifests
from skillshelf.library.access.approved import ApprovalGate
from skillshelf.library.access.files import SkillFiles, never
from skillshelf.library.access.manifest import NotPublishableError, SkillManifest
from skillshelf.library.access.rules import Rule, SkillFacts, decide_skill, needs_details
from skillshelf.library.index.library import SkillLibrary, is_verified
from skillshelf.library.index.store import CategoryStats, IndexedSkill, SearchFilters
from skillshelf.library.skill.folder import TooManyFiles
from skillshelf.library.skill.models import Finding
from skillshelf.library.sources.history import VersionLine, version_lines
from skillshelf.library.sources.provenance import Provenance, provenance_of
from skillshelf.library.usage.store import PatternUsage

T = TypeVar("T")


@dataclass(frozen=True)
class RecordedUse:
    at: str  # ISO time of the use
    usage: PatternUsage  # the skill's usage after it


class SkillReader(Protocol):
    """What a surface may know about skills and read from their files, as one reader (a view) sees them."""

    # -- freshness ------------------------------------------------------------------------------
    def needs_sync(self) -> bool: ...
    def ensure_fresh(self) -> None: ...
    def mark_changed(self) -> None: ...
    def index_warning(self) -> str | None: ...
    def semantic_note(self) -> str | None: ...
    def status(self) -> dict[str, object]: ...
    @property
    def searches_by_meaning(self) -> bool: ...
    @property
    def max_file_bytes(self) -> int: ...
    @property
    def progress(self) -> tuple[int, int]: ...
    def roots(self) -> list[Path]: ...

    # -- which skills ---------------------------------------------------------------------------
    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]: ...
    def get(self, skill_id: str) -> IndexedSkill | None: ...
    def find(self, skill_id: str) -> IndexedSkill: ...
    def suggest(self, skill_id: str, limit: int = 3) -> list[str]: ...
    def overview(self) -> list[IndexedSkill]: ...
    def count(self) -> int: ...
    def has_category(self, name: str) -> bool: ...
    def categories(self) -> list[CategoryStats]: ...
    def findings(self) -> list[Finding]: ...

    # -- usage ----------------------------------------------------------------------------------
    def verified_ids(self, warnings: list[str] | None = None) -> frozenset[str]: ...
    def is_verified(self, skill: IndexedSkill, by_use: frozenset[str] | None = None) -> bool: ...
    def usage(self, skill_id: str | None = None, warnings: list[str] | None = None) -> list[PatternUsage] | None: ...
    def daily_uses(self, warnings: list[str] | None = None) -> list[tuple[str, str, int]]: ...
    def record_use(self, skill_id: str, project: str | None, note: str | None, source: str) -> RecordedUse: ...

    # -- files ----------------------------------------------------------------------------------
    def files(self, skill: IndexedSkill) -> list[str]: ...
    def locate(self, skill: IndexedSkill, path: str) -> Path | None: ...
    def folder_of(self, skill: IndexedSkill) -> Path: ...
    def read_text(self, skill: IndexedSkill, path: str, max_bytes: int | None = None) -> str | None: ...
    def read_bytes(self, skill: IndexedSkill, path: str, limit: int) -> bytes: ...
    def cached(
        self, skill: IndexedSkill, path: str, kind: str, compute: Callable[[], T], size: Callable[[T], int]
    ) -> T: ...
    def documentation(self, skill: IndexedSkill) -> str | None: ...
    def manifest(self, skill: IndexedSkill) -> SkillManifest: ...
    def provenance(self, skill: IndexedSkill) -> Provenance | None: ...
    def versions(self, skill: IndexedSkill) -> list[VersionLine]: ...


class LibraryReader:
    """Every skill of a library (the curator's reader); `files` applies the path rules to every read."""

    def __init__(self, library: SkillLibrary, files: SkillFiles | None = None) -> None:
        self.library = library
        self._files = files or SkillFiles(library, never)

    # -- freshness ------------------------------------------------------------------------------
    def needs_sync(self) -> bool:
        return self.library.needs_sync()

    def ensure_fresh(self) -> None:
        self.library.ensure_fresh()

    def mark_changed(self) -> None:
        self.library.mark_dirty()

    def index_warning(self) -> str | None:
        return self.library.index_warning()

    def semantic_note(self) -> str | None:
        """Said with a search while semantic search is configured but not ranking every skill by meaning."""
        semantic = self.library.semantic
        return semantic.note() if semantic is not None else None

    def status(self) -> dict[str, object]:
        return self.library.status()

    @property
    def searches_by_meaning(self) -> bool:
        semantic = self.library.semantic
        return semantic is not None and semantic.ready

    @property
    def max_file_bytes(self) -> int:
        return self.library.config.max_file_bytes

    @property
    def progress(self) -> tuple[int, int]:
        """(parsed, to parse) of the index sync under way, for progress while a call waits on it."""
        return self.library.progress

    def roots(self) -> list[Path]:
        return list(self.library.roots)

    # -- which skills ---------------------------------------------------------------------------
    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]:
        return self.library.search(query, filters, limit)

    def get(self, skill_id: str) -> IndexedSkill | None:
        return self.library.get(skill_id)

    def find(self, skill_id: str) -> IndexedSkill:
        return self.library.find(skill_id)

    def suggest(self, skill_id: str, limit: int = 3) -> list[str]:
        return self.library.suggest(skill_id, limit)

    def overview(self) -> list[IndexedSkill]:
        return self.library.overview()

    def count(self) -> int:
        """Skills in the index now (not waiting for a sync under way: /health must answer at once)."""
        return self.library.index.count()

    def has_category(self, name: str) -> bool:
        return self.library.has_category(name)

    def categories(self) -> list[CategoryStats]:
        return self.library.categories()

    def findings(self) -> list[Finding]:
        return self.library.findings()

    # -- usage ----------------------------------------------------------------------------------
    def verified_ids(self, warnings: list[str] | None = None) -> frozenset[str]:
        return self.library.verified_ids(warnings)

    def is_verified(self, skill: IndexedSkill, by_use: frozenset[str] | None = None) -> bool:
        return is_verified(skill, self.verified_ids() if by_use is None else by_use)

    def usage(self, skill_id: str | None = None, warnings: list[str] | None = None) -> list[PatternUsage] | None:
        return self.library.read_usage(lambda store: store.usage(skill_id), [] if warnings is None else warnings)

    def daily_uses(self, warnings: list[str] | None = None) -> list[tuple[str, str, int]]:
        found = self.library.read_usage(lambda store: store.daily_uses(), [] if warnings is None else warnings)
        return found or []

    def record_use(self, skill_id: str, project: str | None, note: str | None, source: str) -> RecordedUse:
        skill = self.find(skill_id)
        at = self.library.usage.record(skill.id, project, note, source=source)
        (usage,) = self.library.usage.usage(skill.id)
        return RecordedUse(at, usage)

    # -- files ----------------------------------------------------------------------------------
    def files(self, skill: IndexedSkill) -> list[str]:
        return self._files.listed_paths(skill)

    def locate(self, skill: IndexedSkill, path: str) -> Path | None:
        return self._files.locate(skill, path)

    def folder_of(self, skill: IndexedSkill) -> Path:
        return self._files.folder_of(skill)

    def read_text(self, skill: IndexedSkill, path: str, max_bytes: int | None = None) -> str | None:
        return self._files.read_text(skill, path, max_bytes)

    def read_bytes(self, skill: IndexedSkill, path: str, limit: int) -> bytes:
        return self._files.read_bytes(skill, path, limit)

    def cached(
        self, skill: IndexedSkill, path: str, kind: str, compute: Callable[[], T], size: Callable[[T], int]
    ) -> T:
        return self._files.cached(skill, path, kind, compute, size)

    def documentation(self, skill: IndexedSkill) -> str | None:
        return self._files.documentation(skill)

    def manifest(self, skill: IndexedSkill) -> SkillManifest:
        """The skill's frontmatter and complete file list with digests; NotPublishableError says why not."""
        name = manifests.check_name(skill)
        try:
            files = self._files.listing(skill, manifests.MAX_FILES)
        except TooManyFiles:
            raise NotPublishableError(
                skill.id,
                "over-file-limit",
                f"{skill.id} has more than {manifests.MAX_FILES} files; the MCP skills extension allows "
                f"{manifests.MAX_FILES} per skill. Remove generated or vendored files from its folder.",
            ) from None
        limit = manifests.MAX_TOTAL_BYTES
        doc = self.read_bytes(skill, manifests.SKILL_DOC, limit)
        sizes = {p: len(doc) if p == manifests.SKILL_DOC else _size(f) for p, f in files.items()}
        total = sum(sizes.values())
        if total > limit:
            raise NotPublishableError(
                skill.id,
                "over-size-limit",
                f"{skill.id} has {total} bytes of files; the MCP skills extension allows {limit} per skill. "
                "Move large assets out of the skill.",
            )
        frontmatter = manifests.publishable_frontmatter(skill, doc)
        entries = tuple(
            manifests.ManifestFile(path, sizes[path], self._files.digest(skill, path, limit)) for path in files
        )
        return SkillManifest(skill.id, skill.category, name, frontmatter, entries, self.provenance(skill))

    def provenance(self, skill: IndexedSkill) -> Provenance | None:
        """The source, version and license of a skill `skillshelf add` installed (its root's lock); None for
        a skill written by hand."""
        return provenance_of(self._files.root_of(skill), skill.details.doc_file)

    def versions(self, skill: IndexedSkill) -> list[VersionLine]:
        """The earlier versions of a skill a source installed that its root's history keeps, newest first
        (library/sources/history.py); none for a skill written by hand."""
        if self.provenance(skill) is None:
            return []
        return version_lines(self._files.root_of(skill), skill.id)


def _size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def facts_of(skill: IndexedSkill) -> SkillFacts:
    return SkillFacts(id=skill.id, tags=tuple(skill.details.tags), quality=skill.quality, layout=skill.layout)


class ViewReader:
    """The library as one view sees it: the view's skill rules applied to every read, by composition.

    Visibility is decided from the id alone when the rules are id globs; tag, quality and layout
    selectors need the index row, so the visible ids are then computed once per index sync. Reloading
    the config replaces the rules (`set_rules`). A server that serves only approved bytes (`gate`:
    require_verified, require_signed) hides every skill the gate holds back, on top of the rules.
    """

    def __init__(self, library: SkillLibrary, rules: Sequence[Rule] = (), gate: ApprovalGate | None = None) -> None:
        self.library = library
        self._gate = gate
        self._all = LibraryReader(library, SkillFiles(library, self._crosses_into_hidden))
        self._lock = threading.Lock()
        self._apply(tuple(rules))

    def _apply(self, rules: tuple[Rule, ...]) -> None:
        with self._lock:
            self.rules = rules
            self._by_details = needs_details(rules)
            self._cached: tuple[object, frozenset[str]] | None = None
            self._by_id: dict[str, bool] = {}

    def set_rules(self, rules: Sequence[Rule]) -> bool:
        """Apply new rules (a reloaded config); True when they differ from the old ones."""
        new = tuple(rules)
        if new == self.rules:
            return False
        self._apply(new)
        return True

    # -- visibility -----------------------------------------------------------------------------
    def is_visible(self, skill_id: str) -> bool:
        if self._gate is not None and skill_id in self._gate.hidden():
            return False
        return self._kept_by_rules(skill_id)

    def _kept_by_rules(self, skill_id: str) -> bool:
        if not self.rules:
            return True
        if not self._by_details:
            known = self._by_id.get(skill_id)
            if known is None:
                if len(self._by_id) > 100_000:
                    self._by_id.clear()  # ids asked about are bounded by what callers send: keep it so
                known = self._by_id[skill_id] = decide_skill(self.rules, SkillFacts(id=skill_id)).kept
            return known
        return skill_id in self._visible_ids()

    def _visible_ids(self) -> frozenset[str]:
        """The ids this view shows, recomputed after each sync of the index (selectors need its rows)."""
        self.library.ensure_fresh()
        generation = self.library.generation()
        with self._lock:
            if self._cached is not None and self._cached[0] == generation:
                return self._cached[1]
            rules = self.rules
        ids = frozenset(s.id for s in self.library.overview() if decide_skill(rules, facts_of(s)).kept)
        with self._lock:
            if self.rules == rules:
                self._cached = (generation, ids)
        return ids

    def _visible(self) -> Callable[[str], bool] | None:
        """A visibility predicate for a batch of reads (None: every skill is visible)."""
        if self._gate is not None:
            held = self._gate.hidden()
            return lambda skill_id: skill_id not in held and self._kept_by_rules(skill_id)
        if not self.rules:
            return None
        return self._visible_ids().__contains__ if self._by_details else self.is_visible

    @property
    def _hides(self) -> bool:
        return bool(self.rules) or self._gate is not None

    def _crosses_into_hidden(self, skill: IndexedSkill, real: Path) -> bool:
        """Whether a file of `skill`, reached through a symlink, lies in a skill this view hides."""
        if not self._hides:
            return False
        return any(owner != skill.id and not self.is_visible(owner) for owner in self.library.owners_of(real))

    # -- freshness ------------------------------------------------------------------------------
    def needs_sync(self) -> bool:
        return self._all.needs_sync()

    def ensure_fresh(self) -> None:
        self._all.ensure_fresh()

    def mark_changed(self) -> None:
        self._all.mark_changed()

    def index_warning(self) -> str | None:
        return self._all.index_warning()

    def semantic_note(self) -> str | None:
        return self._all.semantic_note()

    def status(self) -> dict[str, object]:
        return self._all.status()

    @property
    def searches_by_meaning(self) -> bool:
        return self._all.searches_by_meaning

    @property
    def max_file_bytes(self) -> int:
        return self._all.max_file_bytes

    @property
    def progress(self) -> tuple[int, int]:
        return self._all.progress

    def roots(self) -> list[Path]:
        return self._all.roots()

    # -- which skills ---------------------------------------------------------------------------
    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]:
        visible = self._visible()
        return self._all.search(query, filters if visible is None else replace(filters, visible=visible), limit)

    def get(self, skill_id: str) -> IndexedSkill | None:
        skill = self._all.get(skill_id)
        return skill if skill is not None and self.is_visible(skill.id) else None

    def find(self, skill_id: str) -> IndexedSkill:
        try:
            skill = self._all.find(skill_id)
        except PatternNotFoundError as exc:  # a bare name or an unknown id: only visible suggestions
            raise PatternNotFoundError(skill_id, self._only_visible(exc.suggestions)) from None
        if not self.is_visible(skill.id):
            raise PatternNotFoundError(skill_id, self.suggest(skill_id))
        return skill

    def suggest(self, skill_id: str, limit: int = 3) -> list[str]:
        return self._only_visible(self._all.suggest(skill_id, limit * 4))[:limit]

    def _only_visible(self, ids: list[str]) -> list[str]:
        visible = self._visible()
        return ids if visible is None else [i for i in ids if visible(i)]

    def overview(self) -> list[IndexedSkill]:
        visible = self._visible()
        skills = self._all.overview()
        return skills if visible is None else [s for s in skills if visible(s.id)]

    def count(self) -> int:
        return self._all.count() if not self._hides else len(self.overview())

    def has_category(self, name: str) -> bool:
        if not self._hides:
            return self._all.has_category(name)
        return any(s.category == name for s in self.overview())

    def categories(self) -> list[CategoryStats]:
        return self.library.categories(self._visible())

    def findings(self) -> list[Finding]:
        """Findings about files of hidden skills are left out (their paths would name them); a skill held
        back for its approval has one saying why and how to serve it again."""
        visible = self._visible()
        found = self._all.findings()
        gate = self._gate.hidden() if self._gate is not None else {}
        held = [finding for skill_id, finding in gate.items() if self._kept_by_rules(skill_id)]
        if visible is None:
            return found
        hidden = tuple(source_prefix(s) for s in self.library.overview() if not visible(s.id))
        return [f for f in found if not (hidden and f.path.startswith(hidden))] + held

    # -- usage ----------------------------------------------------------------------------------
    def verified_ids(self, warnings: list[str] | None = None) -> frozenset[str]:
        return frozenset(self._only_visible(sorted(self._all.verified_ids(warnings))))

    def is_verified(self, skill: IndexedSkill, by_use: frozenset[str] | None = None) -> bool:
        """False for a skill this view hides (nothing is said about it)."""
        if not self.is_visible(skill.id):
            return False
        return is_verified(skill, self.verified_ids() if by_use is None else by_use)

    def usage(self, skill_id: str | None = None, warnings: list[str] | None = None) -> list[PatternUsage] | None:
        if skill_id is not None and not self.is_visible(skill_id):
            return []
        found = self._all.usage(skill_id, warnings)
        visible = self._visible()
        return found if found is None or visible is None else [u for u in found if visible(u.pattern_id)]

    def daily_uses(self, warnings: list[str] | None = None) -> list[tuple[str, str, int]]:
        visible = self._visible()
        rows = self._all.daily_uses(warnings)
        return rows if visible is None else [row for row in rows if visible(row[1])]

    def record_use(self, skill_id: str, project: str | None, note: str | None, source: str) -> RecordedUse:
        return self._all.record_use(self.find(skill_id).id, project, note, source)

    # -- files: only of skills this view shows ----------------------------------------------------
    def _shown(self, skill: IndexedSkill) -> IndexedSkill:
        if not self.is_visible(skill.id):
            raise PatternNotFoundError(skill.id, [])
        return skill

    def files(self, skill: IndexedSkill) -> list[str]:
        return self._all.files(self._shown(skill))

    def locate(self, skill: IndexedSkill, path: str) -> Path | None:
        return self._all.locate(self._shown(skill), path)

    def folder_of(self, skill: IndexedSkill) -> Path:
        return self._all.folder_of(self._shown(skill))

    def read_text(self, skill: IndexedSkill, path: str, max_bytes: int | None = None) -> str | None:
        return self._all.read_text(self._shown(skill), path, max_bytes)

    def read_bytes(self, skill: IndexedSkill, path: str, limit: int) -> bytes:
        return self._all.read_bytes(self._shown(skill), path, limit)

    def cached(
        self, skill: IndexedSkill, path: str, kind: str, compute: Callable[[], T], size: Callable[[T], int]
    ) -> T:
        return self._all.cached(self._shown(skill), path, kind, compute, size)

    def documentation(self, skill: IndexedSkill) -> str | None:
        return self._all.documentation(self._shown(skill))

    def manifest(self, skill: IndexedSkill) -> SkillManifest:
        return self._all.manifest(self._shown(skill))

    def provenance(self, skill: IndexedSkill) -> Provenance | None:
        return self._all.provenance(self._shown(skill))

    def versions(self, skill: IndexedSkill) -> list[VersionLine]:
        return self._all.versions(self._shown(skill))


def source_prefix(skill: IndexedSkill) -> str:
    """The start of every finding path about this skill's files (its folder, or its three files' stem)."""
    doc = skill.details.doc_file
    if skill.layout == "three-file":
        return doc[: -len(".md")] if doc.endswith(".md") else doc
    return doc.rsplit("/", 1)[0] + "/" if "/" in doc else doc
