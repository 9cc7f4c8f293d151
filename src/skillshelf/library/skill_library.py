"""`SkillLibrary`: the roots, their index, and keeping the index fresh.

Freshness: a full stat-only sync when the library opens (re-parsing only what changed since the
index was written), then a file watcher marks the library dirty on any change and the next read
syncs before answering. No read rescans an unchanged library.
"""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from skillshelf.library.discovery import Discovery, discover
from skillshelf.library.filecache import FileCache
from skillshelf.library.freshness import POLL_SECONDS, BackgroundSync
from skillshelf.library.index import CategoryStats, IndexedSkill, SearchFilters, SkillIndex
from skillshelf.library.layouts import load_source
from skillshelf.library.models import Finding, Skill, SkillSource
from skillshelf.library.parallel import batches, parse_all
from skillshelf.library.paths import display_path
from skillshelf.library.reading import DEFAULT_MAX_FILE_BYTES
from skillshelf.library.usage import USAGE_FILE, UsageStore
from skillshelf.library.watcher import DirectoryWatcher

logger = logging.getLogger(__name__)
ParsedSource = tuple[SkillSource, Skill | None, list[Finding]]

INDEX_DIR_NAME = ".skillshelf"
WRITE_BATCH = 500  # skills stored per transaction: bounds memory during a first build
LOGGED_CODES = frozenset({"name-collision", "root-missing", "symlink-outside-root"})


@dataclass
class SyncReport:
    parsed: int = 0
    removed: int = 0
    seconds: float = 0.0


@dataclass
class LibraryConfig:
    roots: list[Path]
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    index_dir: Path | None = None  # None: first writable root's .skillshelf/, else the user cache
    read_only_roots: frozenset[Path] = field(default_factory=frozenset)  # never write an index here
    watch: bool = True


def user_cache_dir() -> Path:
    override = os.environ.get("SKILLSHELF_CACHE_DIR")
    if override:
        return Path(override)
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / "skillshelf" / "Cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "skillshelf"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skillshelf"


def _roots_digest(roots: list[Path]) -> str:
    return hashlib.sha256("\n".join(str(r) for r in roots).encode()).hexdigest()[:12]


def choose_index_path(config: LibraryConfig) -> Path:
    return choose_state_dir(config) / f"index-{_roots_digest(config.roots)}.sqlite3"


def choose_state_dir(config: LibraryConfig) -> Path:
    """Where the index and usage events live: the first writable root's .skillshelf/, else the cache."""
    if config.index_dir is not None:
        return config.index_dir
    for root in config.roots:
        if root in config.read_only_roots or not root.is_dir() or not os.access(root, os.W_OK):
            continue
        directory = root / INDEX_DIR_NAME
        try:
            directory.mkdir(exist_ok=True)
            ignore = directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text(
                    "# skillshelf's search index and usage events (local to this machine)\n*\n", encoding="utf-8"
                )
        except OSError:
            continue
        return directory
    return user_cache_dir()


def parse_sources(sources: list[SkillSource], max_bytes: int) -> Iterator[ParsedSource]:
    return parse_all(_parse_one, sources, max_bytes)


def _parse_one(source: SkillSource, max_bytes: int) -> ParsedSource:
    skill, findings = load_source(source, max_bytes)
    return source, skill, findings


class SkillLibrary(BackgroundSync[SyncReport]):
    LABEL = "skill index"

    def __init__(self, config: LibraryConfig) -> None:
        super().__init__()
        self.config = config
        self.roots = [r.expanduser().resolve() if r.exists() else r.expanduser() for r in config.roots]
        resolved = LibraryConfig(**{**config.__dict__, "roots": self.roots})
        self.state_dir = choose_state_dir(resolved)
        self.index_path = choose_index_path(resolved)
        self.index = SkillIndex(self.index_path)
        self.discovery_findings: list[Finding] = []
        self._watcher: DirectoryWatcher | None = None
        self.files = FileCache()  # parsed documents and code for loadSkill, by file signature

    # -- freshness -----------------------------------------------------------------------
    def _sync_now(self) -> SyncReport:
        """Re-parse only sources whose signature changed since the index was written."""
        started = time.perf_counter()
        found: Discovery = discover(self.roots)
        self._log_new_discovery_findings(found.findings)
        self.discovery_findings = found.findings
        stored = self.index.signatures()
        current = {s.key: s for s in found.sources}
        changed = [s for key, s in current.items() if stored.get(key) != s.signature]
        removed = [key for key in stored if key not in current]
        if changed or removed:
            self.files.clear()  # signatures guard every entry anyway; a change frees the memory early
        if removed:
            self.index.apply([], removed)
        for batch in batches(parse_sources(changed, self.config.max_file_bytes), WRITE_BATCH):
            self.index.apply(batch, [])
        report = SyncReport(len(changed), len(removed), time.perf_counter() - started)
        if changed or removed:
            logger.info("index synced: %d parsed, %d removed in %.2fs", report.parsed, report.removed, report.seconds)
        return report

    def _watcher_failed(self) -> bool:
        return self._watcher is not None and self._watcher.failed

    def _log_new_discovery_findings(self, findings: list[Finding]) -> None:
        """Collisions and unusable roots go to the log once each, not on every re-sync."""
        known = set(self.discovery_findings)
        for finding in findings:
            if finding not in known and finding.severity in ("error", "warning") and finding.code in LOGGED_CODES:
                logger.warning("%s: %s [%s]", finding.location(), finding.message, finding.code)

    def start_watching(self) -> None:
        if self.config.watch and self._watcher is None:
            roots = [r for r in self.roots if r.is_dir()]
            self._watcher = DirectoryWatcher(roots, self._on_change, POLL_SECONDS, on_ready=self._on_watch_ready)
            self._watcher.start()

    def _stop_watchers(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None

    @cached_property
    def usage(self) -> UsageStore:
        """Usage events, opened on first use (most CLI commands never need them)."""
        return UsageStore(self.state_dir / USAGE_FILE)

    def close(self) -> None:
        self.stop_watching()
        self.index.close()
        if "usage" in self.__dict__:
            self.usage.close()

    # -- reads ---------------------------------------------------------------------------
    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]:
        self.ensure_fresh()
        return self.index.search(query, filters, limit)

    def get(self, skill_id: str) -> IndexedSkill | None:
        self.ensure_fresh()
        return self.index.get(skill_id)

    def has_category(self, name: str) -> bool:
        self.ensure_fresh()
        return self.index.has_category(name)

    def categories(self) -> list[CategoryStats]:
        self.ensure_fresh()
        return self.index.categories()

    def overview(self) -> list[IndexedSkill]:
        self.ensure_fresh()
        return self.index.overview()

    def root_of(self, skill: IndexedSkill) -> Path:
        return self.roots[int(skill.payload["rootIndex"])]

    def findings(self) -> list[Finding]:
        self.ensure_fresh()
        labels = [display_path(r) for r in self.roots]
        parsed = [Finding.from_dict(f, labels[i]) for i, f in self.index.source_findings() if i < len(labels)]
        return self.discovery_findings + parsed
