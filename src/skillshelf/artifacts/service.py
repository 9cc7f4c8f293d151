"""Search and load past sessions' artifacts: the functions behind both the MCP tools and the CLI.

Search goes through the index (a `SessionArchive`); loading needs only the project roots and reads
the session's files fresh from disk, so what an agent loads is never staler than the files.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from skillshelf.artifacts.archive import SessionArchive
from skillshelf.artifacts.index import IndexedSession, SessionFilters, SessionRef
from skillshelf.artifacts.models import (
    ALL_SECTIONS,
    ArtifactSearchResult,
    CodeBlockInfo,
    LoadedSession,
    SectionName,
    SessionCode,
    SessionHit,
)
from skillshelf.artifacts.parsing import CodeBlock, SessionContent, language_of_file, normalise_language
from skillshelf.artifacts.store import MAX_FILE_BYTES, SessionFiles, find_session, load_content
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.projects import ProjectRoots

DEFAULT_LIMIT = 10
MAX_LIMIT = 50


def search_artifacts(
    archive: SessionArchive,
    query: str = "",
    *,
    project: str | None = None,
    since: dt.date | None = None,
    until: dt.date | None = None,
    limit: int = DEFAULT_LIMIT,
) -> ArtifactSearchResult:
    """Ranked hits over every project's sessions (or one project's); an empty query lists newest first."""
    if since is not None and until is not None and since > until:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"since ({since.isoformat()}) is after until ({until.isoformat()}); swap them or drop one.",
        )
    names: tuple[str, ...] | None = None
    if project is not None:
        resolved = archive.projects.resolve(project)
        archive.track(resolved.name)
        names = (resolved.name,)
    filters = SessionFilters(names, since.isoformat() if since else None, until.isoformat() if until else None)
    found = archive.search(query, filters, max(1, min(limit, MAX_LIMIT)))
    return ArtifactSearchResult(query=query, hits=[_hit(s) for s in found], warnings=archive.warnings(names))


def sessions_mentioning(archive: SessionArchive, skill_ids: Sequence[str]) -> dict[str, list[SessionRef]]:
    """For each skill id, the sessions that mention it, newest first (pattern reuse counts these)."""
    return archive.sessions_mentioning(skill_ids)


def _hit(session: IndexedSession) -> SessionHit:
    return SessionHit(
        project=session.project,
        session_id=session.session_id,
        date=session.date,
        title=session.title,
        summary=session.summary,
        score=session.score,
        tokens=session.tokens,
    )


def load_session(
    projects: ProjectRoots,
    project: str,
    session_id: str,
    sections: Sequence[SectionName] | None = None,
    max_bytes: int = MAX_FILE_BYTES,
) -> LoadedSession:
    """One session's summary, decisions, implementations, challenges, next steps and code, read fresh."""
    files, content, warnings = _read(projects, project, session_id, max_bytes)
    wanted = set(sections or ALL_SECTIONS)

    def pick(name: SectionName, values: list[str]) -> list[str] | None:
        return values if name in wanted else None

    return LoadedSession(
        project=files.project,
        session_id=files.session_id,
        date=files.date,
        title=content.title or files.session_id,
        summary=content.summary if "summary" in wanted else None,
        decisions=pick("decisions", content.decisions),
        implementations=pick("implementations", content.implementations),
        challenges=pick("challenges", content.challenges),
        next_steps=pick("nextSteps", content.next_steps),
        code=[_block(b) for b in content.code] if "code" in wanted else None,
        files=sorted(files.files),
        warnings=warnings,
    )


def get_session_code(
    projects: ProjectRoots, project: str, session_id: str, language: str | None = None, max_bytes: int = MAX_FILE_BYTES
) -> SessionCode:
    """A session's code blocks only, optionally in one language (`ts` and `typescript` are one)."""
    files, content, warnings = _read(projects, project, session_id, max_bytes)
    wanted = normalise_language(language)
    blocks = [b for b in content.code if wanted is None or _language(b) == wanted]
    languages = sorted({lang for lang in (_language(b) for b in content.code) if lang})
    if wanted is not None and not blocks and content.code:
        warnings.append(f"no {language} code in this session; its code is in: {', '.join(languages) or 'unlabelled'}")
    return SessionCode(
        project=files.project,
        session_id=files.session_id,
        language=wanted,
        blocks=[_block(b) for b in blocks],
        languages=languages,
        warnings=warnings,
    )


def _read(
    projects: ProjectRoots, project: str, session_id: str, max_bytes: int
) -> tuple[SessionFiles, SessionContent, list[str]]:
    files = find_session(projects, project, session_id)
    warnings: list[str] = []
    return files, load_content(files, warnings, max_bytes), warnings


def _language(block: CodeBlock) -> str | None:
    return normalise_language(block.language or (language_of_file(block.file) if block.file else None))


def _block(block: CodeBlock) -> CodeBlockInfo:
    """Languages by one name everywhere (`ts` blocks and a `ts` filter both say `typescript`)."""
    return CodeBlockInfo(
        language=_language(block), file=block.file, code=block.code, section=block.section, source=block.source
    )
