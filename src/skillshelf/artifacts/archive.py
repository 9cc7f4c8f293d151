"""`SessionArchive`: the session artifacts of every project under the project roots, indexed and kept fresh.

Freshness follows `SkillLibrary`: one stat-only sync when the archive opens (re-parsing only the
sessions whose files changed), then file watchers mark it dirty and sync on their own thread, so
the next search sees a change without rescanning per query. The watchers never cover a whole
project tree (node_modules, build output): each project root and each project still without
artifacts is watched non-recursively (a new project, a new `.agent-artifacts/`), and each
`.agent-artifacts/` recursively. When that set changes the watchers are replaced.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import astuple, dataclass, field
from pathlib import Path

from skillshelf.artifacts.index import (
    ArtifactIndex,
    IndexedSession,
    SessionDocument,
    SessionFilters,
    SessionKey,
    SessionRef,
)
from skillshelf.artifacts.parsing import LIST_KINDS
from skillshelf.artifacts.store import (
    MAX_FILE_BYTES,
    ProjectScan,
    SessionFiles,
    load_content,
    load_tokens,
    scan_project,
)
from skillshelf.errors import SkillshelfError
from skillshelf.library.indexing.folders import user_cache_dir
from skillshelf.library.indexing.freshness import POLL_SECONDS, WRITE_BATCH, IndexSync, SyncReport
from skillshelf.library.indexing.parallel import batches, parse_all
from skillshelf.library.indexing.watcher import DirectoryWatcher
from skillshelf.library.skill.layouts import summary as one_line
from skillshelf.projects import Project, ProjectRoots

logger = logging.getLogger(__name__)

MAX_WARNINGS = 5


@dataclass(frozen=True)
class WatchPlan:
    shallow: tuple[Path, ...] = ()  # watched non-recursively
    deep: tuple[Path, ...] = ()  # watched recursively


@dataclass
class _Scan:
    sessions: dict[SessionKey, SessionFiles] = field(default_factory=dict)
    findings: dict[str, list[str]] = field(default_factory=dict)  # project -> problems found listing it
    plan: WatchPlan = field(default_factory=WatchPlan)
    projects: frozenset[str] = frozenset()


def index_path_for(projects: ProjectRoots, index_dir: Path | None = None) -> Path:
    digest = hashlib.sha256("\n".join(str(r) for r in projects.roots).encode()).hexdigest()[:12]
    return (index_dir or user_cache_dir()) / f"artifacts-{digest}.sqlite3"


def document(session: SessionFiles, max_bytes: int = MAX_FILE_BYTES) -> SessionDocument:
    """Read and parse one session's files into what the index stores."""
    content = load_content(session, [], max_bytes)
    sections = [*content.headings, *(entry for kind in LIST_KINDS for entry in content.entries(kind))]
    sections += [block.file for block in content.code if block.file]
    return SessionDocument(
        project=session.project,
        session_id=session.session_id,
        signature=session.signature,
        date=session.date,
        modified=session.modified,
        title=content.title or session.session_id,
        summary=one_line(content.summary or ""),
        tokens=load_tokens(session, content),
        sections="\n".join(sections),
        body=content.searchable_body(),
        references=frozenset(content.references),
    )


class SessionArchive(IndexSync[SyncReport, ArtifactIndex]):
    LABEL = "session index"

    def __init__(
        self,
        projects: ProjectRoots,
        *,
        index_dir: Path | None = None,
        watch: bool = True,
        max_file_bytes: int = MAX_FILE_BYTES,
    ) -> None:
        self.index_path = index_path_for(projects, index_dir)
        super().__init__(ArtifactIndex(self.index_path))
        self.projects = projects
        self.watch = watch
        self.max_file_bytes = max_file_bytes
        self.findings: dict[str, list[str]] = {}
        self._extra_projects: dict[str, None] = {}  # nested projects asked for by name
        self._known_projects: frozenset[str] = frozenset()
        self._plan = WatchPlan()
        self._watch_lock = threading.Lock()
        self._watching = False
        self._watchers: list[DirectoryWatcher] = []
        self._watched = WatchPlan()

    # -- freshness -----------------------------------------------------------------------
    def _sync_files(self) -> SyncReport:
        started = time.perf_counter()
        scan = self._scan()
        self._log_new_findings(scan.findings)
        self.findings, self._plan, self._known_projects = scan.findings, scan.plan, scan.projects
        stored = self.index.signatures()
        changed = [s for key, s in scan.sessions.items() if stored.get(key) != s.signature]
        removed = [key for key in stored if key not in scan.sessions]
        if removed:
            self.index.apply([], removed)
        for batch in batches(parse_all(document, changed, self.max_file_bytes), WRITE_BATCH):
            self.index.apply(batch, [])
        report = SyncReport(len(changed), len(removed), time.perf_counter() - started)
        if changed or removed:
            logger.info("session index synced: %d parsed, %d removed in %.2fs", *astuple(report))
        return report

    def _after_sync(self) -> None:
        self._rewatch()

    def _watcher_failed(self) -> bool:
        return any(w.failed for w in self._watchers)

    def _scan(self) -> _Scan:
        scan = _Scan()
        shallow = [root for root in self.projects.roots if root.is_dir()]
        deep: list[Path] = []
        listed = self._project_list(scan)
        scan.projects = frozenset(p.name for p in listed)
        for project in listed:
            found: ProjectScan = scan_project(project)
            if found.findings:
                scan.findings[project.name] = found.findings
            if found.artifacts is None:
                shallow.append(project.path)
            else:
                deep.append(found.artifacts)
            scan.sessions.update({(project.name, sid): files for sid, files in found.sessions.items()})
        scan.plan = WatchPlan(tuple(dict.fromkeys(shallow)), tuple(dict.fromkeys(deep)))
        return scan

    def _project_list(self, scan: _Scan) -> list[Project]:
        """The projects under the roots (first root wins a name), plus nested ones asked for by name."""
        found: dict[str, Project] = {}
        for name in dict.fromkeys([*self.projects.names(), *self._extra_projects]):
            try:
                project = self.projects.resolve(name)
            except SkillshelfError as exc:
                scan.findings[name] = [exc.message]
                continue
            found.setdefault(project.name, project)
        return list(found.values())

    def _log_new_findings(self, findings: dict[str, list[str]]) -> None:
        """Problems go to the log once each, not on every re-sync."""
        for project, messages in findings.items():
            for message in messages:
                if message not in self.findings.get(project, []):
                    logger.warning("%s", message)

    def track(self, project: str) -> None:
        """Index a project that is not a direct child of a root (e.g. `team/api`) from now on."""
        if project not in self._known_projects and project not in self._extra_projects:
            self._extra_projects[project] = None
            self._dirty.set()

    # -- watching ------------------------------------------------------------------------
    def start_watching(self) -> None:
        if self.watch:
            self._watching = True
            self._rewatch()

    def _rewatch(self) -> None:
        """Replace the watchers when the folders worth watching changed (a project or artifacts folder came or went)."""
        with self._watch_lock:
            if not self._watching or self._plan == self._watched:
                return
            retired, self._watched = self._watchers, self._plan
            self._watchers = [
                DirectoryWatcher(
                    list(self._plan.shallow),
                    self._on_change,
                    POLL_SECONDS,
                    recursive=False,
                    on_ready=self._on_watch_ready,
                ),
                DirectoryWatcher(list(self._plan.deep), self._on_change, POLL_SECONDS, on_ready=self._on_watch_ready),
            ]
            for watcher in self._watchers:
                watcher.start()
        for watcher in retired:
            watcher.stop()  # from its own thread too: its child exits, and it calls back no more

    def _stop_watchers(self) -> None:
        with self._watch_lock:
            self._watching = False
            retired, self._watchers, self._watched = self._watchers, [], WatchPlan()
        for watcher in retired:
            watcher.stop()

    def close(self) -> None:
        self.stop_watching()
        self.index.close()

    @property
    def watch_plan(self) -> WatchPlan:
        """The folders the watchers cover after the last sync."""
        return self._plan

    # -- reads ---------------------------------------------------------------------------
    def search(self, query: str, filters: SessionFilters, limit: int) -> list[IndexedSession]:
        self.ensure_fresh()
        return self.index.search(query, filters, limit)

    def sessions_mentioning(self, skill_ids: Sequence[str]) -> dict[str, list[SessionRef]]:
        """For each skill id, the sessions whose artifacts mention it (`database/rls-policy`), newest first."""
        self.ensure_fresh()
        return self.index.mentioning(skill_ids)

    def warnings(self, projects: Sequence[str] | None = None) -> list[str]:
        """Problems met listing projects' artifacts (links out, unreadable folders), for these projects or all.

        At most MAX_WARNINGS: every search repeats them, and the log has the full list.
        """
        wanted = self.findings if projects is None else {p: self.findings.get(p, []) for p in projects}
        messages = [message for found in wanted.values() for message in found]
        if len(messages) > MAX_WARNINGS:
            hidden = len(messages) - MAX_WARNINGS + 1
            messages = [*messages[: MAX_WARNINGS - 1], f"{hidden} more problems; the server log lists them"]
        return messages
