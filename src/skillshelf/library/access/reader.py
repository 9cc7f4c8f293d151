"""The one way every surface reads skills: which skills exist for a reader, and what is in their files.

Tools, resources, the Skills extension, the web view, prompts, composites and the CLI read skills
only through a reader, by role: `CatalogReader` (search, lookups, categories, findings), `FileReader`
(a skill's files, manifest, provenance, versions), `UsageReader` and `StatusReader` (freshness, no
skill named); `SkillReader` is all four. One class implements them, `ViewReader`, and one
`Visibility` (a view's rules and the approval gate) decides which skills it shows: a hidden skill is
absent from every listing, every lookup fails on it exactly as on an id that does not exist
(suggestions never name it), and no file of a visible skill may lead into it through a symlink.
`LibraryReader` is the same class with nothing hidden (the curator's). The file rules themselves live
in `access.files` (one `locate` for every read); frontmatter is parsed only by `skill.frontmatter`
(the alias-bomb guard). tests/library/test_reader.py calls every member of every role with a hidden
skill; tests/test_boundary.py proves no other module opens a skill's files."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, TypeVar

from skillshelf.errors import ErrorCode, PatternNotFoundError, SkillshelfError
from skillshelf.library.access import manifest as manifests
from skillshelf.library.access.approved import ApprovalGate, Checked
from skillshelf.library.access.files import SkillFiles
from skillshelf.library.access.manifest import NotPublishableError, SkillManifest
from skillshelf.library.access.rules import Rule, SkillFacts, decide_skill, needs_details
from skillshelf.library.index.library import SkillLibrary, is_verified
from skillshelf.library.index.store import CategoryStats, IndexedSkill, SearchFilters
from skillshelf.library.skill.digest import CopyRefused
from skillshelf.library.skill.folder import MAX_FILES, MAX_TOTAL_BYTES, TooManyFiles
from skillshelf.library.skill.models import Finding
from skillshelf.library.sources.history import VersionLine, version_lines
from skillshelf.library.sources.provenance import Provenance, provenance_of
from skillshelf.library.usage.store import SkillUsage

T = TypeVar("T")


@dataclass(frozen=True)
class RecordedUse:
    at: str  # ISO time of the use
    usage: SkillUsage  # the skill's usage after it


class CatalogReader(Protocol):
    """Which skills a reader shows: search, lookups, listings, categories and the library's findings."""

    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]: ...
    def get(self, skill_id: str) -> IndexedSkill | None: ...
    def find(self, skill_id: str) -> IndexedSkill: ...
    def suggest(self, skill_id: str, limit: int = 3) -> list[str]: ...
    def overview(self) -> list[IndexedSkill]: ...
    def count(self) -> int: ...
    def has_category(self, name: str) -> bool: ...
    def categories(self) -> list[CategoryStats]: ...
    def findings(self) -> list[Finding]: ...


class FileReader(Protocol):
    """What is in a shown skill's files, under the path rules (access/files.py), and where it came from."""

    def files(self, skill: IndexedSkill) -> list[str]: ...
    def locate(self, skill: IndexedSkill, path: str) -> Path | None: ...
    def folder_of(self, skill: IndexedSkill) -> Path: ...
    def read_text(self, skill: IndexedSkill, path: str, max_bytes: int | None = None) -> str | None: ...
    def read_bytes(self, skill: IndexedSkill, path: str, limit: int) -> bytes: ...
    def cached(
        self, skill: IndexedSkill, path: str, kind: str, compute: Callable[[], T], size: Callable[[T], int]
    ) -> T: ...
    def parsed_text(
        self,
        skill: IndexedSkill,
        path: str,
        kind: str,
        parse: Callable[[str | None], T],
        size: Callable[[T], int],
        max_bytes: int | None = None,
    ) -> T: ...
    def documentation(self, skill: IndexedSkill) -> str | None: ...
    def from_documentation(
        self, skill: IndexedSkill, kind: str, derive: Callable[[str | None], T], size: Callable[[T], int]
    ) -> T: ...
    def manifest(self, skill: IndexedSkill) -> SkillManifest: ...
    def run_copy(self, skill: IndexedSkill, into: Callable[[], Path]) -> Path | None: ...
    def provenance(self, skill: IndexedSkill) -> Provenance | None: ...
    def versions(self, skill: IndexedSkill) -> list[VersionLine]: ...


class UsageReader(Protocol):
    """The shown skills' usage: what was used, what is verified by use, and recording a use."""

    def verified_ids(self, warnings: list[str] | None = None) -> frozenset[str]: ...
    def is_verified(self, skill: IndexedSkill, by_use: frozenset[str] | None = None) -> bool: ...
    def usage(self, skill_id: str | None = None, warnings: list[str] | None = None) -> list[SkillUsage] | None: ...
    def daily_uses(self, warnings: list[str] | None = None) -> list[tuple[str, str, int]]: ...
    def record_use(self, skill_id: str, project: str | None, note: str | None, source: str) -> RecordedUse: ...


class StatusReader(Protocol):
    """The index's freshness and the library's settings; names no skill."""

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


class SkillReader(CatalogReader, FileReader, UsageReader, StatusReader, Protocol):
    """Every role at once, for a surface that uses most of them (a server's tools, the web view). A function
    that needs one role takes that role's protocol."""


ROLES: tuple[type, ...] = (CatalogReader, FileReader, UsageReader, StatusReader)


def facts_of(skill: IndexedSkill) -> SkillFacts:
    return SkillFacts(id=skill.id, tags=tuple(skill.details.tags), quality=skill.quality, layout=skill.layout)


class Visibility:
    """Which skills one reader shows: a view's skill rules and the approval gate, decided in one place.

    Visibility is decided from the id alone when the rules are id globs; tag, quality and layout
    selectors need the index row, so the visible ids are then computed once per index sync. Reloading
    the config replaces the rules (`set_rules`). A server that serves only approved bytes (`gate`:
    require_verified, require_signed) hides every skill the gate holds back, on top of the rules. No
    rules and no gate: every skill is shown (the curator's reader).
    """

    def __init__(self, library: SkillLibrary, rules: Sequence[Rule] = (), gate: ApprovalGate | None = None) -> None:
        self.library = library
        self._gate = gate
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

    @property
    def hides(self) -> bool:
        return bool(self.rules) or self._gate is not None

    def is_visible(self, skill_id: str) -> bool:
        if self._gate is not None and skill_id in self._gate.hidden():
            return False
        return self.kept_by_rules(skill_id)

    def kept_by_rules(self, skill_id: str) -> bool:
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

    def predicate(self) -> Callable[[str], bool] | None:
        """A visibility predicate for a batch of reads (None: every skill is visible)."""
        if self._gate is not None:
            held = self._gate.hidden()
            return lambda skill_id: skill_id not in held and self.kept_by_rules(skill_id)
        if not self.rules:
            return None
        return self._visible_ids().__contains__ if self._by_details else self.is_visible

    def only(self, ids: list[str]) -> list[str]:
        visible = self.predicate()
        return ids if visible is None else [i for i in ids if visible(i)]

    def shown(self, skill: IndexedSkill) -> IndexedSkill:
        """`skill` when shown; else PATTERN_NOT_FOUND, exactly as for a skill that does not exist."""
        if not self.is_visible(skill.id):
            raise PatternNotFoundError(skill.id, [])
        return skill

    def served(self, skill: IndexedSkill) -> Checked | None:
        """`shown`, checked at this moment: under the gate, the skill's files are still the approved bytes (their
        stamps unchanged, or re-digested now), and the stamps to compare once they are read; else PATTERN_NOT_FOUND,
        as `shown` refuses. No gate: `shown`, and None."""
        if self._gate is None:
            self.shown(skill)
            return None
        checked = self._gate.check(skill)
        if not isinstance(checked, Checked) or not self.kept_by_rules(skill.id):
            raise PatternNotFoundError(skill.id, [])
        return checked

    def run_copy(self, skill: IndexedSkill, into: Callable[[], Path]) -> Path | None:
        """Under the gate, `skill`'s approved files copied for a run under the folder `into()` makes, checked as they
        are copied: the copy's skill folder (PATTERN_NOT_FOUND when its files are not the approved bytes, as `shown`
        refuses); None when it runs from the library (no gate, or no approval binds its bytes)."""
        self.shown(skill)
        if self._gate is None:
            return None
        try:
            copied = self._gate.copy_for_run(skill, into)
        except CopyRefused as exc:
            raise SkillshelfError(
                ErrorCode.NOT_EXECUTABLE,
                f"{skill.id!r} cannot run: a run under require_verified or require_signed executes from a copy of its "
                f"approved files, and {exc}. Keep it within {MAX_FILES} files and {MAX_TOTAL_BYTES // 2**20} MiB with "
                f"relative links, then `skillshelf approve {skill.id}`",
            ) from None
        if isinstance(copied, Finding):
            raise PatternNotFoundError(skill.id, [])
        return copied

    def held_back(self, skill_id: str) -> Finding | None:
        """Why the gate holds `skill_id` back (None: it does not; the rules are not asked)."""
        return self._gate.hidden().get(skill_id) if self._gate is not None else None

    def held_findings(self) -> list[Finding]:
        """A finding per skill the gate holds back (and the rules show), saying why and how to serve it."""
        gate = self._gate.hidden() if self._gate is not None else {}
        return [finding for skill_id, finding in gate.items() if self.kept_by_rules(skill_id)]

    def crosses_into_hidden(self, skill: IndexedSkill, real: Path) -> bool:
        """Whether a file of `skill`, reached through a symlink, lies in a skill this view hides."""
        if not self.hides:
            return False
        return any(owner != skill.id and not self.is_visible(owner) for owner in self.library.owners_of(real))


class ViewReader:
    """The library as one view sees it: every role, written once, with the view's `Visibility` applied where
    skills leave the catalog (listings, lookups, suggestions, counts, findings, usage) and the files (each
    file member takes a skill and answers only for a shown one). No rules and no gate: every skill
    (`LibraryReader`, the curator's)."""

    def __init__(self, library: SkillLibrary, rules: Sequence[Rule] = (), gate: ApprovalGate | None = None) -> None:
        self.library = library
        self.visibility = Visibility(library, rules, gate)
        self._files = SkillFiles(library, self.visibility.crosses_into_hidden)

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self.visibility.rules

    def set_rules(self, rules: Sequence[Rule]) -> bool:
        """Apply new rules (a reloaded config); True when they differ from the old ones."""
        return self.visibility.set_rules(rules)

    def is_visible(self, skill_id: str) -> bool:
        return self.visibility.is_visible(skill_id)

    # -- status ---------------------------------------------------------------------------------
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

    # -- catalog --------------------------------------------------------------------------------
    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]:
        visible = self.visibility.predicate()
        return self.library.search(query, filters if visible is None else replace(filters, visible=visible), limit)

    def get(self, skill_id: str) -> IndexedSkill | None:
        skill = self.library.get(skill_id)
        return skill if skill is not None and self.is_visible(skill.id) else None

    def find(self, skill_id: str) -> IndexedSkill:
        try:
            skill = self.library.find(skill_id)
        except PatternNotFoundError as exc:  # a bare name or an unknown id: only visible suggestions
            raise PatternNotFoundError(skill_id, self.visibility.only(exc.suggestions)) from None
        if not self.is_visible(skill.id):
            raise PatternNotFoundError(skill_id, self.suggest(skill_id))
        return skill

    def suggest(self, skill_id: str, limit: int = 3) -> list[str]:
        wider = limit * 4 if self.visibility.hides else limit  # room for the hidden ones left out
        return self.visibility.only(self.library.suggest(skill_id, wider))[:limit]

    def overview(self) -> list[IndexedSkill]:
        visible = self.visibility.predicate()
        skills = self.library.overview()
        return skills if visible is None else [s for s in skills if visible(s.id)]

    def count(self) -> int:
        """Skills in the index now (unfiltered, not waiting for a sync under way: /health must answer at once)."""
        return self.library.index.count() if not self.visibility.hides else len(self.overview())

    def has_category(self, name: str) -> bool:
        if not self.visibility.hides:
            return self.library.has_category(name)
        return any(s.category == name for s in self.overview())

    def categories(self) -> list[CategoryStats]:
        return self.library.categories(self.visibility.predicate())

    def findings(self) -> list[Finding]:
        """Findings about files of hidden skills are left out (their paths would name them); a skill held
        back for its approval has one saying why and how to serve it again."""
        visible = self.visibility.predicate()
        found = self.library.findings()
        if visible is None:
            return found
        hidden = tuple(source_prefix(s) for s in self.library.overview() if not visible(s.id))
        return [f for f in found if not (hidden and f.path.startswith(hidden))] + self.visibility.held_findings()

    # -- usage ----------------------------------------------------------------------------------
    def verified_ids(self, warnings: list[str] | None = None) -> frozenset[str]:
        found = self.library.verified_ids(warnings)
        return found if not self.visibility.hides else frozenset(self.visibility.only(sorted(found)))

    def is_verified(self, skill: IndexedSkill, by_use: frozenset[str] | None = None) -> bool:
        """False for a skill this view hides (nothing is said about it)."""
        if not self.is_visible(skill.id):
            return False
        return is_verified(skill, self.verified_ids() if by_use is None else by_use)

    def usage(self, skill_id: str | None = None, warnings: list[str] | None = None) -> list[SkillUsage] | None:
        if skill_id is not None and not self.is_visible(skill_id):
            return []
        said = [] if warnings is None else warnings
        found = self.library.read_usage(lambda store: store.usage(skill_id), said)
        visible = self.visibility.predicate()
        return found if found is None or visible is None else [u for u in found if visible(u.skill_id)]

    def daily_uses(self, warnings: list[str] | None = None) -> list[tuple[str, str, int]]:
        rows = self.library.read_usage(lambda store: store.daily_uses(), [] if warnings is None else warnings) or []
        visible = self.visibility.predicate()
        return rows if visible is None else [row for row in rows if visible(row[1])]

    def record_use(self, skill_id: str, project: str | None, note: str | None, source: str) -> RecordedUse:
        skill = self.find(skill_id)
        at = self.library.usage.record(skill.id, project, note, source=source)
        (usage,) = self.library.usage.usage(skill.id)
        return RecordedUse(at, usage)

    # -- files: only of skills this view shows ----------------------------------------------------
    def files(self, skill: IndexedSkill) -> list[str]:
        return self._files.listed_paths(self.visibility.shown(skill))

    def locate(self, skill: IndexedSkill, path: str) -> Path | None:
        return self._files.locate(self.visibility.shown(skill), path)

    def folder_of(self, skill: IndexedSkill) -> Path:
        return self._files.folder_of(self.visibility.shown(skill))

    def _served(self, skill: IndexedSkill, read: Callable[[IndexedSkill], T]) -> T:
        """`read(skill)` of a shown skill's content. Under the approval gate, its files are checked just before
        (`Visibility.served`) and their stamps compared just after: what was read is what was checked. A change
        in between is checked again (held back: PATTERN_NOT_FOUND) and the read done again, once."""
        for _attempt in range(2):
            checked = self.visibility.served(skill)
            value = read(skill)
            if checked is None or checked.unchanged():
                return value
        raise SkillshelfError(
            ErrorCode.FILESYSTEM_ERROR, f"The files of {skill.id!r} changed while they were read; try again."
        )

    def run_copy(self, skill: IndexedSkill, into: Callable[[], Path]) -> Path | None:
        """Where a run finds `skill`'s files, decided as it starts: under require_verified or require_signed, a copy
        of its approved files made under `into()` (a fresh folder of the run's, made only then) and digested as it was
        made (`Visibility.run_copy`); else None, its folder in the library. PATTERN_NOT_FOUND when this reader does
        not serve it at this moment."""
        try:
            return self.visibility.run_copy(skill, into)
        except OSError as exc:
            raise SkillshelfError(
                ErrorCode.FILESYSTEM_ERROR, f"{skill.id!r}: its files could not be copied for the run ({exc.strerror})"
            ) from None

    def read_text(self, skill: IndexedSkill, path: str, max_bytes: int | None = None) -> str | None:
        return self._served(skill, lambda shown: self._files.read_text(shown, path, max_bytes))

    def read_bytes(self, skill: IndexedSkill, path: str, limit: int) -> bytes:
        return self._served(skill, lambda shown: self._files.read_bytes(shown, path, limit))

    def cached(
        self, skill: IndexedSkill, path: str, kind: str, compute: Callable[[], T], size: Callable[[T], int]
    ) -> T:
        return self._served(skill, lambda shown: self._files.cached(shown, path, kind, compute, size))

    def parsed_text(
        self,
        skill: IndexedSkill,
        path: str,
        kind: str,
        parse: Callable[[str | None], T],
        size: Callable[[T], int],
        max_bytes: int | None = None,
    ) -> T:
        return self._served(skill, lambda shown: self._files.parsed_text(shown, path, kind, parse, size, max_bytes))

    def documentation(self, skill: IndexedSkill) -> str | None:
        return self._served(skill, self._files.documentation)

    def from_documentation(
        self, skill: IndexedSkill, kind: str, derive: Callable[[str | None], T], size: Callable[[T], int]
    ) -> T:
        return self._served(skill, lambda shown: self._files.from_documentation(shown, kind, derive, size))

    def manifest(self, skill: IndexedSkill) -> SkillManifest:
        """The skill's frontmatter and complete file list with digests; NotPublishableError says why not."""
        skill = self.visibility.shown(skill)
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
        skill = self.visibility.shown(skill)
        return provenance_of(self._files.root_of(skill), skill.details.doc_file)

    def versions(self, skill: IndexedSkill) -> list[VersionLine]:
        """The earlier versions of a skill a source installed that its root's history keeps, newest first
        (library/sources/history.py); none for a skill written by hand."""
        if self.provenance(skill) is None:
            return []
        return version_lines(self._files.root_of(skill), skill.id)


class LibraryReader(ViewReader):
    """Every skill of a library (the curator's reader): a view with no rules and no gate. Only the
    constructor differs; every member is `ViewReader`'s."""

    def __init__(self, library: SkillLibrary) -> None:
        super().__init__(library)


def _size(path: Path | None) -> int:
    try:
        return path.stat().st_size if path is not None else 0
    except OSError:
        return 0


def source_prefix(skill: IndexedSkill) -> str:
    """The start of every finding path about this skill's files (its folder, or its three files' stem)."""
    doc = skill.details.doc_file
    if skill.layout == "three-file":
        return doc[: -len(".md")] if doc.endswith(".md") else doc
    return doc.rsplit("/", 1)[0] + "/" if "/" in doc else doc
