"""`SkillLibrary`: the roots, their index, and keeping the index fresh.

Freshness: a full stat-only sync when the library opens (re-parsing only what changed since the
index was written), then a file watcher marks the library dirty on any change and the next read
syncs before answering. No read rescans an unchanged library.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

import platformdirs

from skillshelf.errors import ErrorCode, PatternNotFoundError, SkillshelfError
from skillshelf.library.index.digest import LibraryDigest
from skillshelf.library.index.filecache import FileCache
from skillshelf.library.index.freshness import POLL_SECONDS, WRITE_BATCH, BackgroundSync, SyncReport
from skillshelf.library.index.parallel import batches, parse_all
from skillshelf.library.index.query import query_terms
from skillshelf.library.index.store import CategoryStats, IndexedSkill, SearchFilters, SkillIndex, name_key
from skillshelf.library.index.watcher import DirectoryWatcher
from skillshelf.library.semantic.vectors import Closeness, SemanticIndex, skill_text
from skillshelf.library.skill.discovery import Discovery, discover, printable
from skillshelf.library.skill.layouts import load_source
from skillshelf.library.skill.models import Finding, Skill, SkillSource
from skillshelf.library.skill.paths import display_path
from skillshelf.library.skill.reading import DEFAULT_MAX_FILE_BYTES
from skillshelf.library.usage.events import UsageEvents
from skillshelf.library.usage.store import BUSY_TIMEOUT_S, USAGE_FILE, UsageStore, UsageUnavailable

logger = logging.getLogger(__name__)
ParsedSource = tuple[SkillSource, Skill | None, list[Finding]]
T = TypeVar("T")

INDEX_DIR_NAME = ".skillshelf"
# A library root holding this file is never written to: its index and usage go to the user cache
# (the bundled examples carry it, so serving a source checkout leaves the checkout clean).
READ_ONLY_MARKER = ".skillshelf-readonly"
LOGGED_CODES = frozenset({"name-collision", "name-not-utf8", "root-missing", "symlink-outside-root"})
MAX_SKILL_ID = 300
SKILL_ID = re.compile(r"^[^/\\\x00]+/[^/\\\x00]+$")
# Semantic search (optional): how word and meaning scores are fused (see `fused`, docs/search.md).
MEANING_WEIGHT = 0.75  # the rest is the word score's; chosen on 351 labelled development queries
FUSION_POOL = 50  # candidates taken from each ranking
MIN_SIMILARITY = 0.3  # a skill found by meaning alone must be at least this close (cosine) to the query
# A skill's vector stands for its name and description, so meaning cannot judge the words a skill holds in its
# body alone: for those, meaning's weight shrinks by this share of them (a skill holding every word of the query
# in its body only weighs meaning 0.75 x (1 - 0.25)). Otherwise a fixed 0.75 buried such skills (issue 25).
BODY_BLIND = 0.25
UNSHARED_MEANING = 0.8  # what a skill sharing no word with the query keeps when a word hit holds them all
# Similarities are scaled to the closest candidate's, but never to less than this cosine: when even the closest
# one is barely related (all-MiniLM-L6-v2: near MIN_SIMILARITY) the scaling blew noise up to a full meaning score,
# and skills of the same field sharing only the query's everyday words pushed the word hit holding its specific
# words out of the top 5 (issue 25, H17).
MEANING_SURE = 0.33
# A word ranking sure of its top hit (the runner-up scores at most 0.8 of it) keeps that hit in the top 5 when
# meaning is unsure (closest cosine under 0.45) and only neighbours sharing no word with the query push it out:
# such a neighbour is meaning's guess, the top hit words' evidence (issue 25, H19; chosen on the development sets).
CONFIDENT_LEAD = 0.8
UNSURE_MEANING = 0.45
KEPT_RANK = 5
# The first search after a restart waits this long for the vectors stored by earlier runs to load (972 skills:
# 0.4 s, the model included) rather than ranking by words alone; past it, the answer says it ranked by words.
FIRST_SEARCH_WAIT_S = 2.0


@dataclass
class LibraryConfig:
    roots: list[Path]
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    index_dir: Path | None = None  # None: first writable root's .skillshelf/, else the user cache
    read_only_roots: frozenset[Path] = field(default_factory=frozenset)  # never write an index here
    watch: bool = True
    usage_busy_timeout: float = BUSY_TIMEOUT_S  # seconds to wait for another process's lock on usage
    semantic_model: Path | None = None  # a sentence-transformers BERT folder: search by meaning too
    cache_dir: Path | None = None  # the cache_dir setting; None: the platform's user cache folder
    # Opens the usage events (the embedded path, busy timeout) in the store the settings chose (state/
    # open_stores): the library never picks a backend. None: the embedded SQLite file.
    open_usage: Callable[[Path, float], UsageEvents] | None = None


def user_cache_dir(cache_dir: Path | None = None) -> Path:
    """`cache_dir` (the setting), else the platform's user cache folder (platformdirs: XDG on Linux)."""
    return cache_dir or platformdirs.user_cache_path("skillshelf", appauthor=False)


def _roots_digest(roots: list[Path], holder: Path | None = None) -> str:
    names = [b"." if root == holder else os.fsencode(root) for root in roots]  # any bytes a path holds
    return hashlib.sha256(b"\n".join(names)).hexdigest()[:12]


def store_name(kind: str, roots: list[Path], state_dir: Path) -> str:
    """The file name of the `index` or the `vectors` of these roots in `state_dir`, which other root lists
    may share. In a root's own .skillshelf/ that root is named "." (`index-here-…`): the index keeps every
    path relative to its root, so a copied or moved library finds its own index rather than building a
    second one beside the first."""
    holder = state_dir.parent if state_dir.name == INDEX_DIR_NAME and state_dir.parent in roots else None
    if holder is None:
        return f"{kind}-{_roots_digest(roots)}.sqlite3"
    return f"{kind}-here-{_roots_digest(roots, holder)}.sqlite3"


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


def choose_index_path(config: LibraryConfig) -> Path:
    state_dir = choose_state_dir(config)
    return state_dir / store_name("index", config.roots, state_dir)


# How every skillshelf before issue 35 named a root's index and vectors: for the absolute paths of the roots.
_OLD_STORE = re.compile(r"(?:index|vectors)-[0-9a-f]{12}\.sqlite3")


def prune_old_stores(state_dir: Path) -> None:
    """Remove, from a root's own .skillshelf/, the indexes and vectors named for absolute paths (and their
    -wal, -shm and lock files). Nothing opens them any more: each list of roots stored there is now named
    relative to that root, and a copied or moved library carried one for its old path (16 MB for a big one)."""
    if state_dir.name != INDEX_DIR_NAME:
        return
    try:
        entries = list(state_dir.iterdir())
    except OSError:
        return
    for store in [e for e in entries if _OLD_STORE.fullmatch(e.name)]:
        for path in [e for e in entries if e.name.startswith(store.name)]:
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:  # a cache: whatever cannot be removed now is harmless
                logger.debug("could not remove %s: %s", path, exc)
        logger.info("removed %s, an index named for an earlier path of this library", display_path(store))


def choose_state_dir(config: LibraryConfig) -> Path:
    """Where the index and usage events live: the first writable root's .skillshelf/, else the cache."""
    if config.index_dir is not None:
        return config.index_dir
    for root in config.roots:
        if root in config.read_only_roots or not root.is_dir() or not _writable(root):
            continue
        if (root / READ_ONLY_MARKER).exists():
            continue
        directory = root / INDEX_DIR_NAME
        try:
            directory.mkdir(exist_ok=True)
            ignore = directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text(
                    "# skillshelf's search index and usage events (local to this machine)\n*\n", encoding="utf-8"
                )
            with tempfile.TemporaryFile(dir=directory):
                pass  # a read-only .skillshelf/ in a writable root must fall back too
        except OSError:
            _warn_if_usage_moves(directory, user_cache_dir(config.cache_dir))
            continue
        return directory
    return user_cache_dir(config.cache_dir)


def _writable(root: Path) -> bool:
    """Writable by us, and not marked read-only by its mode: root may write anywhere, but a folder
    with no write bit for anyone (a shared, read-only checkout) is left untouched all the same."""
    try:
        return os.access(root, os.W_OK) and bool(root.stat().st_mode & 0o222)
    except OSError:
        return False


def _warn_if_usage_moves(unwritable: Path, cache: Path) -> None:
    """History left in a folder that can no longer be written is not silently split from the new one."""
    if (unwritable / USAGE_FILE).exists():
        logger.warning(
            "%s cannot be written, so usage is recorded in %s from now on; earlier uses stay in %s. "
            "Make the folder writable again to keep one history.",
            display_path(unwritable),
            display_path(cache),
            display_path(unwritable / USAGE_FILE),
        )


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
        self.index = SkillIndex(choose_index_path(resolved))
        if config.index_dir is None:
            prune_old_stores(self.state_dir)
        self.index.on_damage = self._rebuild_after_damage
        self.index_path = self.index.path  # elsewhere when that folder cannot be written
        self._announced: object = None  # the index renewal the answers have told about
        self.discovery_findings: list[Finding] = []
        self._discovered = threading.Event()  # a sync of this process has listed the roots
        self._watcher: DirectoryWatcher | None = None
        self._change_listeners: list[Callable[[], None]] = []
        self._progress_listeners: list[Callable[[int, int], None]] = []
        self.progress: tuple[int, int] = (0, 0)  # (parsed, to parse) of the sync under way
        self.files = FileCache()  # parsed documents and code for loadSkill, by file signature
        self.digest = LibraryDigest()  # of the files' contents, for /health (replicas compare it)
        self._sources: list[SkillSource] | None = None  # what the last sync listed, for the digest
        self._closed = False
        self._usage: UsageEvents | None = None
        self._usage_lock = threading.Lock()
        self.semantic: SemanticIndex | None = None
        # whether the next sync's end asks for an embedding pass: the first does (stored vectors load),
        # then only one that changed skills (a pass digests every skill's text: not for a quiet re-check)
        self._embed_after_sync = True
        if config.semantic_model is not None:
            vectors = self.index_path.parent / store_name("vectors", self.roots, self.index_path.parent)
            self.semantic = SemanticIndex(config.semantic_model.expanduser(), vectors, self._embedding_texts)

    def _embedding_texts(self) -> list[tuple[str, str]]:
        return [(i, skill_text(name, description, body)) for i, name, description, body in self.index.texts_to_embed()]

    def _after_sync(self) -> None:
        super()._after_sync()
        if self._sources is not None and not self._closed and self.digest.wanted:
            self.digest.request(self._sources)  # every sync: a file deep in a skill may change no signature
        if self.semantic is not None and self._embed_after_sync:
            self._embed_after_sync = False
            self.semantic.request_pass()

    # -- freshness -----------------------------------------------------------------------
    def _sync_now(self) -> SyncReport:
        """Re-parse only sources whose signature changed since the index was written.

        One process syncs an index file at a time (a lock beside it): servers started together on
        one library wait for the first build instead of racing it, then find nothing left to parse.
        """
        with self.index.exclusive():
            return self._sync_locked_files()

    def _answers_while_checking(self) -> bool:
        """Only from a file that records a finished sync itself. A marker file beside it (as before) vouched
        for whatever file stood there: one another process had just started in place of a damaged or
        outdated one, still empty, was answered from as if it were the complete index it replaced."""
        return self.index.damage is None and self.index.is_complete()

    def _stale(self) -> bool:
        """Also when another process replaced the index file (a damaged one): the sync reopens it; and while
        this process fills a file it has just put in place: reads wait for that sync."""
        return super()._stale() or self.index.replaced_elsewhere() or self.index.rebuilding

    def _sync_locked_files(self) -> SyncReport:
        started = time.perf_counter()
        found: Discovery = discover(self.roots)
        self._log_new_discovery_findings(found.findings)
        self.discovery_findings = found.findings
        self._discovered.set()
        self._sources = found.sources
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

    @property
    def usage(self) -> UsageEvents:
        """Usage events, opened on first use (most CLI commands never need them).

        Under a lock: since Python 3.12 `cached_property` has none, and two threads' first uses would
        each open a store, one of them never closed.
        """
        with self._usage_lock:
            if self._usage is None:
                opener = self.config.open_usage or (lambda path, timeout: UsageStore(path, busy_timeout=timeout))
                self._usage = opener(self.state_dir / USAGE_FILE, self.config.usage_busy_timeout)
                if self._closed:  # a late call after close: answer "unavailable", keep no connection open
                    self._usage.close()
            return self._usage

    def read_usage(self, read: Callable[[UsageEvents], T], warnings: list[str]) -> T | None:
        """A usage read, or None with a warning when usage cannot be read: usage annotates
        search, load and statistics, so its absence must never take them down."""
        try:
            found = read(self.usage)
        except UsageUnavailable as exc:
            warnings.append(f"{exc.message} Usage counts are left out of this answer; the rest is current.")
            return None
        if self.usage.warning is not None and self.usage.warning not in warnings:
            warnings.append(self.usage.warning)  # a damaged history: what could be read of it
        return found

    def close(self) -> None:
        self._closed = True
        if self.semantic is not None:
            self.semantic.close()
        self.stop_watching()
        self.index.close()
        with self._usage_lock:
            if self._usage is not None:
                self._usage.close()

    def status(self) -> dict[str, object]:
        """For /health: 'indexing' (with progress) during the first build, 'degraded' after a failed sync;
        how fresh the index is; the library's content digest (replicas compare it); a damaged index this
        process rebuilt, and an index kept out of its folder."""
        return {**self._state(), "index": self._freshness(), "library": self._digest_status(), **self._index_notes()}

    def _digest_status(self) -> dict[str, object]:
        """The content digest, worked out from the first time it is asked for (an HTTP server's /health; a
        stdio server never pays for it), then after every sync."""
        if not self.digest.wanted:
            self.digest.wanted = True
            if self._sources is not None:
                self.digest.request(self._sources)
        return self.digest.status()

    def _freshness(self) -> dict[str, object]:
        """When the index last matched the files, and whether changes reach it by themselves: 'watching'
        (the watcher runs), 'polling' (it failed; reads re-check the files) or 'off' (serve --no-watch)."""
        synced = self.synced_wall
        at = dt.datetime.fromtimestamp(synced, dt.UTC).isoformat(timespec="seconds") if synced else None
        if self._watcher is None:
            changes = "off"
        else:
            changes = "polling" if self._watcher.failed else "watching"
        return {"syncedAt": at, "changes": changes}

    def _state(self) -> dict[str, object]:
        if self.sync_error is not None:
            return {"status": "degraded", "indexError": self.sync_error}
        if not self._ready.is_set():
            parsed, total = self.progress
            return {"status": "indexing", "progress": {"parsed": parsed, "toParse": total}}
        if self.semantic is not None:
            return {"status": "healthy", "semantic": self.semantic.status()}
        return {"status": "healthy"}

    def _index_notes(self) -> dict[str, object]:
        notes: dict[str, object] = {}
        renewal = self.index.renewal
        if renewal is not None:
            notes["indexRebuilt"] = {"reason": renewal.reason, "keptAs": renewal.kept_as, "at": renewal.at}
        if self.index.fallback is not None:
            notes["indexLocation"] = self.index.fallback
        return notes

    def index_warning(self) -> str | None:
        """Said with every answer while the index may be missing skills (its last sync failed), and with
        the first answer after a damaged index was rebuilt."""
        if self.sync_error is not None:
            return (
                f"The search index may be incomplete: its last update failed ({self.sync_error}). These results "
                "can miss skills; the update is retried on the next call."
            )
        renewal = self.index.renewal
        if renewal is None or renewal is self._announced:
            return None
        self._announced = renewal
        return renewal.notice(self.index.LABEL)

    # -- reads ---------------------------------------------------------------------------
    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]:
        self.ensure_fresh()
        semantic = self.semantic
        if semantic is not None and not semantic.ready and query_terms(query):
            semantic.wait_loaded(FIRST_SEARCH_WAIT_S)  # the first search after a restart ranks by meaning too
        if semantic is None or not semantic.ready or not query_terms(query):
            return self.index.search(query, filters, limit)
        semantic.start_query(query)  # the query's vector is computed while words rank
        by_words = self.index.search(query, filters, max(FUSION_POOL, limit))
        rows = {skill.id: skill for skill in by_words}

        def admits(ids: list[str]) -> set[str]:
            rows.update({s.id: s for s in self.index.get_many([i for i in ids if i not in rows])})
            return {i for i in ids if i in rows and filters.admits(rows[i])}

        closeness = semantic.nearest(query, admits, max(FUSION_POOL, limit), MIN_SIMILARITY, also=list(rows))
        return fused(query, by_words, closeness, rows, limit)

    def get(self, skill_id: str) -> IndexedSkill | None:
        self.ensure_fresh()
        return self.index.get(skill_id)

    def find(self, skill_id: str) -> IndexedSkill:
        """The skill with this id, or an error that names close matches (the agent's next step)."""
        if len(skill_id) > MAX_SKILL_ID or not SKILL_ID.match(skill_id) or ".." in skill_id.split("/"):
            if "/" not in skill_id and len(skill_id) <= MAX_SKILL_ID:
                self.ensure_fresh()
                same_name = [i for i, _ in self.index.ids_and_names() if i.rsplit("/", 1)[-1] == skill_id]
                if same_name:  # a bare name: the ids it could mean are the agent's next step
                    raise PatternNotFoundError(skill_id, sorted(same_name)[:3])
            shown = skill_id if len(skill_id) <= 80 else skill_id[:80] + "..."
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR,
                f"{shown!r} is not a skill id; ids look like 'category/name', at most {MAX_SKILL_ID} characters "
                "(see searchPatterns hits).",
            )
        skill = self.get(skill_id)
        if skill is None:
            raise PatternNotFoundError(skill_id, self.suggest(skill_id))
        return skill

    def suggest(self, skill_id: str, limit: int = 3) -> list[str]:
        """Close matches for an unknown id: same name elsewhere, similar ids or names; only when there is none, a
        search on its words."""
        pairs = self.index.ids_and_names()
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
        found = self.search(skill_id.replace("/", " "), SearchFilters(), limit)
        return [s.id for s in found if _alike(wanted_name, s.id.rsplit("/", 1)[-1])]

    def verified_ids(self, warnings: list[str] | None = None) -> frozenset[str]:
        """Ids verified: used from three distinct projects (the one meaning of `verified`).

        Empty, with a warning added, when usage cannot be read: usage only annotates.
        """
        found = self.read_usage(lambda usage: usage.verified_by_use(), [] if warnings is None else warnings)
        return found or frozenset()

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

    def generation(self) -> tuple[float, int]:
        """Changes whenever a sync may have changed which skills exist (for caches derived from the index)."""
        return (self._synced_at, self.index.count())

    def owners_of(self, real: Path) -> list[str]:
        """The ids of the skills whose files hold `real` (a resolved path), by their sources in the index."""
        for index, root in enumerate(self.roots):
            if real.is_relative_to(root):
                return self.index.owners(index, real.relative_to(root).as_posix())
        return []

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


def _keep_confident_word_hit(by_words: list[IndexedSkill], order: list[str], closest: float) -> list[str]:
    """The word ranking's top hit, when words are sure of it (it leads the runner-up by `CONFIDENT_LEAD`) and
    meaning is not (even the closest skill is under `UNSURE_MEANING`), takes the place of the lowest skill in
    the top `KEPT_RANK` that shares no word with the query, instead of being pushed below it (issue 25, H19)."""
    if not by_words or closest >= UNSURE_MEANING:
        return order
    top = by_words[0].id
    runner_up = by_words[1].score if len(by_words) > 1 else 0.0
    if runner_up > CONFIDENT_LEAD * by_words[0].score or order.index(top) < KEPT_RANK:
        return order
    matched = {s.id for s in by_words}
    unshared = [at for at, i in enumerate(order[:KEPT_RANK]) if i not in matched]
    if not unshared:  # every skill above it holds some of the query's words: the fusion's order stands
        return order
    rest = [i for i in order if i != top]
    return [*rest[: unshared[-1]], top, *rest[unshared[-1] :]]


def fused(
    query: str, by_words: list[IndexedSkill], closeness: Closeness, rows: dict[str, IndexedSkill], limit: int
) -> list[IndexedSkill]:
    """One ranking from two: a convex combination of each candidate's two scores, each scaled to 0-1
    (Bruch et al. 2023 found it beats reciprocal rank fusion; on our labelled queries it did too, see
    docs/search.md). The word score is already relative to the best word hit; the meaning score is the
    cosine similarity relative to the closest candidate's, or to `MEANING_SURE` when even the closest one is
    barely related (meaning is then unsure, and scores under 1). A skill with no vector yet (the background
    pass has not reached it) is ranked by its words alone. An exact name or id match stays first;
    quality, then id, breaks ties; `score` is relative to the best hit, as always."""
    words = {s.id: s.score for s in by_words}
    similarity = {**closeness.of, **dict(closeness.nearest)}
    candidates = list(dict.fromkeys([*words, *(i for i, _ in closeness.nearest)]))
    closest = max((similarity.get(i, 0.0) for i in candidates), default=0.0)

    def meaning(skill_id: str) -> float:
        if skill_id not in similarity or closest <= 0:
            return words.get(skill_id, 0.0)
        return max(0.0, similarity[skill_id]) / max(closest, MEANING_SURE)

    body_share = {s.id: s.body_share for s in by_words}
    # found by meaning alone: tempered as far as a word hit holds the query's words (a confident word ranking)
    temper = 1 - (1 - UNSHARED_MEANING) * max((s.coverage for s in by_words), default=0.0)

    def fuse(skill_id: str) -> float:
        if skill_id not in words:
            return MEANING_WEIGHT * meaning(skill_id) * temper
        weight = MEANING_WEIGHT * (1 - BODY_BLIND * body_share[skill_id])
        return weight * meaning(skill_id) + (1 - weight) * words[skill_id]

    score = {i: fuse(i) for i in candidates}
    wanted = name_key(query)
    exact = {s.id for s in by_words if s.id == query.strip() or name_key(s.name) == wanted}
    order = sorted(score, key=lambda i: (i not in exact, -score[i], -rows[i].quality, i))
    order = _keep_confident_word_hit(by_words, order, closest)[:limit]
    best = max(score.values(), default=1.0) or 1.0
    return [replace(rows[i], score=1.0 if i in exact else round(score[i] / best, 3)) for i in order]
