"""Session artifacts on disk: finding a project's sessions and reading their files safely.

Layout under `<project>/.agent-artifacts/` (read-only to skillshelf):

- directory form `<sessionId>/` with `session-summary.md`, `finalization-pack.json`,
  `finalization-pack.md`, `compression-metrics.json` (any subset; other `*.md` are read too);
- flat form `<sessionId>.md` and `<sessionId>.metrics.json`.

Both forms of one id are one session. Every file read must resolve inside the artifacts folder,
which must resolve inside its project: a symlink leading out is skipped when listing and refused
(ACCESS_DENIED) when asked for by name.
"""

from __future__ import annotations

import datetime as dt
import difflib
import json
import logging
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skillshelf.artifacts.parsing import SessionContent, merge, parse_markdown, parse_pack
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.library.skill.discovery import name_not_utf8, printable, undecodable
from skillshelf.library.skill.paths import is_within
from skillshelf.library.skill.reading import Reporter, read_text
from skillshelf.projects import Project, ProjectRoots
from skillshelf.tokens import estimate_json_tokens

logger = logging.getLogger(__name__)

ARTIFACTS_DIR = ".agent-artifacts"
MAX_FILE_BYTES = 2 * 1024 * 1024
SUMMARY_FILE = "session-summary.md"
PACK_JSON = "finalization-pack.json"
PACK_MARKDOWN = "finalization-pack.md"
METRICS_FILE = "compression-metrics.json"
FLAT_METRICS_SUFFIX = ".metrics.json"
MARKDOWN_ORDER = (SUMMARY_FILE, PACK_MARKDOWN)  # then any other markdown, by name
_DATE_PREFIX = re.compile(r"^(\d{4})-(\d{2})-(\d{2})(?!\d)")
_IGNORED_MARKDOWN = frozenset({"readme.md", "index.md"})
MAX_SESSION_ID = 200


def validate_session_id(session_id: str) -> None:
    """A session id names one entry of `.agent-artifacts/`: one path segment, never a path."""
    bad = (
        not session_id.strip()
        or len(session_id) > MAX_SESSION_ID
        or any(c in session_id for c in ("/", "\\", "\x00"))
        or session_id in (".", "..")
        or ".." in session_id
    )
    if bad:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"{session_id[:80]!r} is not a session id; ids are single names such as '2025-11-05-auth-flow' "
            "(see searchArtifacts hits).",
        )


@dataclass(frozen=True)
class SessionFiles:
    """One session as found by listing: its files (label -> path) and what they looked like."""

    project: str
    session_id: str
    files: dict[str, Path]  # label relative to .agent-artifacts ('id/session-summary.md') -> path
    modified: float  # newest mtime of its files
    signature: str

    @property
    def date(self) -> str:
        return session_date(self.session_id, self.modified)

    def file(self, name: str) -> Path | None:
        return self.files.get(f"{self.session_id}/{name}")

    @property
    def flat_metrics(self) -> Path | None:
        return self.files.get(f"{self.session_id}{FLAT_METRICS_SUFFIX}")

    def markdown(self) -> list[tuple[str, Path]]:
        """Markdown files in reading order: the summary, the pack, the flat file, then the rest."""
        preferred = [f"{self.session_id}/{name}" for name in MARKDOWN_ORDER] + [f"{self.session_id}.md"]
        labels = [label for label in self.files if label.endswith(".md")]
        ordered = [label for label in preferred if label in self.files]
        ordered += sorted(label for label in labels if label not in ordered)
        return [(label, self.files[label]) for label in ordered]


def session_date(session_id: str, modified: float) -> str:
    """The date a session id starts with (`2025-11-05-auth`), else the day its files last changed (UTC)."""
    match = _DATE_PREFIX.match(session_id)
    if match:
        try:
            return dt.date(int(match[1]), int(match[2]), int(match[3])).isoformat()
        except ValueError:
            pass
    return dt.datetime.fromtimestamp(modified, tz=dt.UTC).date().isoformat()


@dataclass
class ProjectScan:
    project: Project
    artifacts: Path | None  # resolved `.agent-artifacts`, None when absent or unusable
    sessions: dict[str, SessionFiles] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)


def artifacts_dir(project: Project) -> Path | None:
    """The project's resolved `.agent-artifacts`; None when missing. A link out of the project is refused."""
    candidate = project.path / ARTIFACTS_DIR
    if not candidate.is_dir():
        return None
    if not is_within(candidate, project.path):
        raise SkillshelfError(
            ErrorCode.ACCESS_DENIED,
            f"{project.name}/{ARTIFACTS_DIR} links outside the project; skillshelf only reads artifacts that "
            "live inside it. Replace the link with a folder.",
        )
    return candidate.resolve()


def scan_project(project: Project) -> ProjectScan:
    """Every session of a project, from directory listings and stat calls only."""
    if undecodable(project.name):
        return ProjectScan(
            project, None, findings=[f"{printable(project.name)}: {name_not_utf8(project.name, folder=True)}"]
        )
    try:
        root = artifacts_dir(project)
    except SkillshelfError as exc:
        return ProjectScan(project, None, findings=[exc.message])
    scan = ProjectScan(project, root)
    if root is None:
        return scan
    grouped: dict[str, dict[str, Path]] = {}
    try:
        entries = list(os.scandir(root))
    except OSError as exc:
        scan.findings.append(f"{project.name}/{ARTIFACTS_DIR} cannot be listed ({exc.strerror}); fix its permissions")
        return scan
    for entry in entries:
        for session_id, label, path in _entry_files(entry, root, scan.findings, project.name):
            grouped.setdefault(session_id, {})[label] = path
    for session_id, files in grouped.items():
        found = _session_files(project.name, session_id, files)
        if found is not None:
            scan.sessions[session_id] = found
    return scan


def _entry_files(entry: os.DirEntry[str], root: Path, findings: list[str], project: str) -> list[tuple[str, str, Path]]:
    """(session id, label, path) for one entry of `.agent-artifacts/`: a session folder or a flat file."""
    name = entry.name
    if name.startswith(".") or not _inside(entry, root, findings, project):
        return []
    try:
        is_dir = entry.is_dir()
    except OSError:
        return []
    if is_dir:
        return [
            (name, f"{name}/{file}", path) for file, path in _folder_files(Path(entry.path), root, findings, project)
        ]
    if name.endswith(FLAT_METRICS_SUFFIX) and len(name) > len(FLAT_METRICS_SUFFIX):
        return [(name[: -len(FLAT_METRICS_SUFFIX)], name, Path(entry.path))]
    if name.endswith(".md") and name.lower() not in _IGNORED_MARKDOWN and len(name) > 3:
        return [(name[:-3], name, Path(entry.path))]
    return []


def _folder_files(folder: Path, root: Path, findings: list[str], project: str) -> list[tuple[str, Path]]:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return []
    known = {SUMMARY_FILE, PACK_JSON, PACK_MARKDOWN, METRICS_FILE}
    return [
        (e.name, Path(e.path))
        for e in entries
        if (e.name in known or (e.name.endswith(".md") and not e.name.startswith(".")))
        and _inside(e, root, findings, project)
    ]


def _inside(entry: os.DirEntry[str], root: Path, findings: list[str], project: str) -> bool:
    if undecodable(entry.name):  # SQLite and JSON cannot carry it: one such name failed every sync
        where = f"{printable(project)}/{ARTIFACTS_DIR}/{printable(entry.name)}"
        findings.append(f"{where}: {name_not_utf8(entry.name, folder=entry.is_dir())}")
        return False
    try:
        linked = entry.is_symlink()
    except OSError:
        return False
    if linked and not is_within(Path(entry.path), root):
        label = Path(entry.path).relative_to(root).as_posix() if Path(entry.path).is_relative_to(root) else entry.name
        findings.append(f"{project}/{ARTIFACTS_DIR}/{label} links outside the artifacts folder; it was skipped")
        return False
    return True


def _session_files(project: str, session_id: str, files: dict[str, Path]) -> SessionFiles | None:
    stats: list[tuple[str, int, int]] = []
    usable: dict[str, Path] = {}
    for label, path in sorted(files.items()):
        try:
            info = path.stat()
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        stats.append((label, info.st_mtime_ns, info.st_size))
        usable[label] = path
    if not usable:
        return None
    signature = "|".join(f"{label}:{mtime}:{size}" for label, mtime, size in stats)
    modified = max(mtime for _, mtime, _ in stats) / 1e9
    return SessionFiles(project, session_id, usable, modified, signature)


# -- one session ----------------------------------------------------------------------------


def find_session(projects: ProjectRoots, project: str, session_id: str) -> SessionFiles:
    """One session by project and id, or VALIDATION_ERROR / ACCESS_DENIED / SESSION_NOT_FOUND."""
    validate_session_id(session_id)
    resolved = projects.resolve(project)
    root = artifacts_dir(resolved)
    if root is None:
        raise SkillshelfError(
            ErrorCode.SESSION_NOT_FOUND,
            f"Project {resolved.name!r} has no session artifacts ({ARTIFACTS_DIR}/ is missing). "
            "Call searchArtifacts without a project to see which projects have sessions.",
        )
    findings: list[str] = []
    files: dict[str, Path] = {}
    for name in (session_id, f"{session_id}.md", f"{session_id}{FLAT_METRICS_SUFFIX}"):
        path = root / name
        if not path.exists():  # absent, or a dangling link
            continue
        if not is_within(path, root):
            raise SkillshelfError(
                ErrorCode.ACCESS_DENIED,
                f"Session {session_id!r} of {resolved.name!r} links outside {ARTIFACTS_DIR}/; it is never read.",
            )
        if path.is_dir():
            files.update({f"{name}/{f}": p for f, p in _folder_files(path, root, findings, resolved.name)})
        else:
            files[name] = path
    found = _session_files(resolved.name, session_id, files) if files else None
    if found is None:
        raise _not_found(resolved, root, session_id)
    return found


def _not_found(project: Project, root: Path, session_id: str) -> SkillshelfError:
    known = sorted(scan_project(project).sessions) if root.is_dir() else []
    close = difflib.get_close_matches(session_id, known, n=3, cutoff=0.6)
    close += [k for k in known if session_id.lower() in k.lower() and k not in close]
    close = close[:3]
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return SkillshelfError(
        ErrorCode.SESSION_NOT_FOUND,
        f"No session {session_id!r} in project {project.name!r}.{hint} Call searchArtifacts with "
        f"project={project.name!r} to list its sessions.",
        suggestions=close,
    )


def list_project_sessions(projects: ProjectRoots, project: str) -> tuple[Project, ProjectScan]:
    resolved = projects.resolve(project)
    scan = scan_project(resolved)
    if scan.artifacts is None and scan.findings:
        raise SkillshelfError(ErrorCode.ACCESS_DENIED, scan.findings[0])
    return resolved, scan


# -- reading --------------------------------------------------------------------------------


def read_artifact_text(path: Path, label: str, warnings: list[str], max_bytes: int = MAX_FILE_BYTES) -> str | None:
    """A text artifact, cut at `max_bytes`; None (with a warning) when binary or unreadable."""
    reporter = Reporter(label)
    text = read_text(path, reporter, max_bytes)
    for finding in reporter.findings:
        if finding.code == "file-too-large":
            warnings.append(f"{label} is larger than {max_bytes // 1024} KiB; only the first part was read")
        elif finding.code == "file-binary":
            warnings.append(f"{label} is binary (contains NUL bytes); it was skipped")
        else:
            warnings.append(f"{label}: {finding.message}")
    return text


def read_artifact_json(
    path: Path, label: str, warnings: list[str], max_bytes: int = MAX_FILE_BYTES
) -> tuple[bool, Any]:
    """(True, decoded JSON), or (False, None) with a warning when too large, binary, unreadable or malformed."""
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    if size > max_bytes:
        warnings.append(f"{label} is larger than {max_bytes // 1024} KiB; it was skipped")
        return False, None
    text = read_artifact_text(path, label, warnings, max_bytes)
    if text is None:
        return False, None
    try:
        return True, json.loads(text)
    except json.JSONDecodeError as exc:
        warnings.append(f"{label} is not valid JSON ({exc.msg}, line {exc.lineno}); it was skipped")
        return False, None


def load_content(session: SessionFiles, warnings: list[str], max_bytes: int = MAX_FILE_BYTES) -> SessionContent:
    """Everything a session's files say, merged: the JSON pack first, then the markdown files."""
    parts: list[SessionContent] = []
    pack = session.file(PACK_JSON)
    if pack is not None:
        label = f"{session.session_id}/{PACK_JSON}"
        ok, data = read_artifact_json(pack, label, warnings, max_bytes)
        if ok:
            parts.append(parse_pack(data, label, warnings))
    for label, path in session.markdown():
        text = read_artifact_text(path, label, warnings, max_bytes)
        if text is not None:
            parts.append(parse_markdown(text, label, warnings))
    return merge(parts)


def load_tokens(session: SessionFiles, content: SessionContent) -> int:
    """About what loadSession with default arguments sends for this session."""
    wire = {
        "project": session.project,
        "sessionId": session.session_id,
        "date": session.date,
        "title": content.title,
        "summary": content.summary,
        "decisions": content.decisions,
        "implementations": content.implementations,
        "challenges": content.challenges,
        "nextSteps": content.next_steps,
        "code": [{"language": b.language, "file": b.file, "code": b.code, "source": b.source} for b in content.code],
        "files": list(session.files),
    }
    return estimate_json_tokens(wire)
