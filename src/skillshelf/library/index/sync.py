"""Keeping a library's index in line with its roots: syncs, the watcher, and who hears of a change.

Freshness: a full stat-only sync when the library opens (re-parsing only what changed since the
index was written), then a file watcher marks the library dirty on any change and the next read
syncs before answering. No read rescans an unchanged library. The generic part (background sync,
waiting reads, damage, the file's lock) is library/indexing/freshness.py's `IndexSync`; this is what a skill
library adds: discovery over its roots, its findings, the parsed-file cache, the content digest and
the meaning vectors' passes, and listeners for changes and progress.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path

from skillshelf.library.index.digest import LibraryDigest
from skillshelf.library.index.places import LibraryConfig
from skillshelf.library.index.store import SkillIndex
from skillshelf.library.indexing.filecache import FileCache
from skillshelf.library.indexing.freshness import POLL_SECONDS, WRITE_BATCH, IndexSync, SyncReport
from skillshelf.library.indexing.parallel import batches, parse_all
from skillshelf.library.indexing.watcher import DirectoryWatcher
from skillshelf.library.semantic.vectors import SemanticIndex
from skillshelf.library.skill.discovery import Discovery, discover, printable
from skillshelf.library.skill.layouts import ParsedSource, RootFacts, parse_source
from skillshelf.library.skill.models import Finding, SkillSource
from skillshelf.library.skill.paths import display_path

logger = logging.getLogger(__name__)

LOGGED_CODES = frozenset({"name-collision", "name-not-utf8", "root-missing", "symlink-outside-root"})


def parse_sources(sources: list[SkillSource], max_bytes: int) -> Iterator[ParsedSource]:
    roots = {root: RootFacts.of(root) for root in {source.root for source in sources}}  # once per root, not skill
    return parse_all(parse_source, [(source, roots[source.root]) for source in sources], max_bytes)


class LibrarySync(IndexSync[SyncReport, SkillIndex]):
    """A skill library's index kept in line with its roots (see the module's docstring)."""

    LABEL = "skill index"

    def __init__(
        self, config: LibraryConfig, roots: list[Path], index: SkillIndex, semantic: SemanticIndex | None
    ) -> None:
        super().__init__(index)
        self.config = config
        self.roots = roots
        self.index_path = index.path
        self.semantic = semantic
        self.discovery_findings: list[Finding] = []
        self._discovered = threading.Event()  # a sync of this process has listed the roots
        self._watcher: DirectoryWatcher | None = None
        self._change_listeners: list[Callable[[], None]] = []
        self._progress_listeners: list[Callable[[int, int], None]] = []
        self.progress: tuple[int, int] = (0, 0)  # (parsed, to parse) of the sync under way
        self.files = FileCache()  # parsed documents and code for loadSkill, by file signature
        self.digest = LibraryDigest()  # of the files' contents, for /health (replicas compare it)
        self.sources: list[SkillSource] | None = None  # what the last sync listed, for the digest
        self._closed = False
        # whether the next sync's end asks for an embedding pass: the first does (stored vectors load),
        # then only one that changed skills (a pass digests every skill's text: not for a quiet re-check)
        self._embed_after_sync = True

    def _after_sync(self) -> None:
        super()._after_sync()
        if self.sources is not None and not self._closed and self.digest.wanted:
            self.digest.request(self.sources)  # every sync: a file deep in a skill may change no signature
        if self.semantic is not None and self._embed_after_sync:
            self._embed_after_sync = False
            self.semantic.request_pass()

    # -- freshness -----------------------------------------------------------------------
    def _answers_while_checking(self) -> bool:
        """Only from a file that records a finished sync itself. A marker file beside it (as before) vouched
        for whatever file stood there: one another process had just started in place of a damaged or
        outdated one, still empty, was answered from as if it were the complete index it replaced."""
        return self.index.damage is None and self.index.is_complete()

    def _sync_files(self) -> SyncReport:
        started = time.perf_counter()
        found: Discovery = discover(self.roots)
        self._log_new_discovery_findings(found.findings)
        self.discovery_findings = found.findings
        self._discovered.set()
        self.sources = found.sources
        stored = self.index.signatures()
        current = {s.key: s for s in found.sources}
        changed = [s for key, s in current.items() if stored.get(key) != s.signature]
        removed = [key for key in stored if key not in current]
        if changed or removed:
            self.files.clear()  # signatures guard every entry anyway; a change frees the memory early
            self.index.record_complete(False)  # a start meanwhile, or after this sync dies, waits for a sync
        if removed:
            self.index.apply([], removed)
        self.progress = (0, len(changed))
        for batch in batches(parse_sources(changed, self.config.max_file_bytes), WRITE_BATCH):
            self.index.apply(batch, [])
            self.progress = (self.progress[0] + len(batch), len(changed))
            self._progress(*self.progress)
        if not self.index.is_complete():
            self.index.record_complete(True)
            with suppress(OSError):  # the marker file earlier versions kept beside the index
                self.index_path.with_name(self.index_path.name + ".complete").unlink(missing_ok=True)
        if changed or removed:
            self._embed_after_sync = True  # only once the writes are in: the pass it asks for must see them
        report = SyncReport(len(changed), len(removed), time.perf_counter() - started)
        if changed or removed:
            logger.info("index synced: %d parsed, %d removed in %.2fs", report.parsed, report.removed, report.seconds)
        return report

    def add_change_listener(self, listener: Callable[[], None]) -> None:
        """Call `listener` (on the watcher's thread, after re-syncing) whenever files under the roots change.

        Any change counts, even one the index does not store (a file deep in a skill's folder):
        listeners such as the MCP server tell clients to refresh what they hold.
        """
        self._change_listeners.append(listener)

    def add_progress_listener(self, listener: Callable[[int, int], None]) -> None:
        """Call `listener(parsed, to_parse)` after each stored batch of a sync (a first index: thousands).

        For a terminal progress line or MCP progress notifications while a call waits on the index.
        """
        self._progress_listeners.append(listener)

    def _progress(self, done: int, total: int) -> None:
        for listener in list(self._progress_listeners):
            try:
                listener(done, total)
            except Exception:
                logger.exception("a sync progress listener failed")

    def _on_change(self) -> None:
        super()._on_change()
        for listener in list(self._change_listeners):
            try:
                listener()
            except Exception:
                logger.exception("a library change listener failed")

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

    def changes(self) -> str:
        """Whether changes reach the index by themselves: 'watching' (the watcher runs), 'polling' (it
        failed; reads re-check the files) or 'off' (serve --no-watch)."""
        if self._watcher is None:
            return "off"
        return "polling" if self._watcher.failed else "watching"

    def building(self) -> bool:
        """The first sync is under way and reads wait for it."""
        return not self._ready.is_set()

    def generation(self) -> tuple[float, int]:
        """Changes whenever a sync may have changed which skills exist (for caches derived from the index)."""
        return (self._synced_at, self.index.count())

    def close(self) -> None:
        """Stop the meaning vectors' passes and the watcher; the library closes the index after this."""
        self._closed = True
        if self.semantic is not None:
            self.semantic.close()
        self.stop_watching()

    def findings(self) -> list[Finding]:
        """Every finding: discovery's (names, collisions, links; kept in memory) and each parsed file's.

        A warm start answers from the index while its first re-check runs; discovery's findings are
        only known once a sync of this process has listed the roots, so the first call waits for one.
        """
        if not self._discovered.is_set():
            self.mark_dirty()
        self.ensure_fresh()
        labels = [printable(display_path(r)) for r in self.roots]
        parsed = [Finding.from_dict(f, labels[i]) for i, f in self.index.source_findings() if i < len(labels)]
        return self.discovery_findings + parsed
