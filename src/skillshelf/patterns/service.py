"""Search, load and list skills: the functions behind both the MCP tools and the CLI."""

from __future__ import annotations

import difflib
import posixpath
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from skillshelf.errors import CategoryInvalidError, ErrorCode, SkillshelfError
from skillshelf.execution.schema import derive_python_schema, read_source
from skillshelf.library.frontmatter import parse_document
from skillshelf.library.index import IndexedSkill, SearchFilters
from skillshelf.library.layouts import CODE_LANGUAGES
from skillshelf.library.paths import is_servable
from skillshelf.library.reading import Reporter, read_text
from skillshelf.library.skill_library import SkillLibrary
from skillshelf.library.usage import PatternUsage
from skillshelf.patterns.models import (
    CategoryInfo,
    CategoryList,
    CodeFile,
    FindingInfo,
    LoadedSkill,
    SearchResult,
    SkillFile,
    SkillHit,
    SkillMetadata,
    UsageInfo,
    UsageRecorded,
)
from skillshelf.projects import ProjectRoots

DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_CODE_BYTES = 256 * 1024
SCRIPT_LANGUAGES = {**CODE_LANGUAGES, ".sh": "sh", ".bash": "bash"}


def search_patterns(
    library: SkillLibrary,
    query: str = "",
    *,
    category: str | None = None,
    include_executable: bool | None = None,
    min_quality: float | None = None,
    limit: int = DEFAULT_LIMIT,
) -> SearchResult:
    """Ranked hits for a natural-language query; an empty query lists skills by quality."""
    if category is not None and not library.has_category(category):
        raise CategoryInvalidError(category, [c.name for c in library.categories()])
    filters = SearchFilters(category=category, executable=include_executable, min_quality=min_quality)
    found = library.search(query, filters, max(1, min(limit, MAX_LIMIT)))
    index_warning = library.index_warning()
    warnings: list[str] = [index_warning] if index_warning else []
    by_use = library.verified_ids(warnings)
    hits = [_hit(s, library.is_verified(s, by_use)) for s in found]
    return SearchResult(query=query, hits=hits, warnings=warnings or None)


def _hit(skill: IndexedSkill, verified: bool) -> SkillHit:
    return SkillHit(
        id=skill.id,
        name=skill.name,
        category=skill.category,
        description=skill.summary,
        quality=skill.quality,
        verified=verified,
        executable=skill.executable,
        tokens=skill.tokens,
        layout=skill.layout,
        score=skill.score,
    )


def load_skill(
    library: SkillLibrary, skill_id: str, *, include_code: bool = False, include_metadata: bool = True
) -> LoadedSkill:
    skill = library.find(skill_id)
    root = library.root_of(skill)
    body = _documentation(library, skill, root)
    if body is None:
        library.mark_dirty()
        raise SkillshelfError(
            ErrorCode.FILESYSTEM_ERROR,
            f"The files of {skill.id!r} changed or vanished on disk; call searchPatterns again.",
        )
    warnings: list[str] = []
    usage = (library.read_usage(lambda store: store.usage(skill.id), warnings) or []) if include_metadata else []
    return LoadedSkill(
        id=skill.id,
        name=skill.name,
        category=skill.category,
        layout=skill.layout,
        description=skill.details.description,
        executable=skill.executable,
        documentation=body,
        code=_code_files(library, skill, root) if include_code else None,
        metadata=_metadata(library, skill, usage, root, library.is_verified(skill, library.verified_ids(warnings)))
        if include_metadata
        else None,
        warnings=warnings or None,
    )


def _documentation(library: SkillLibrary, skill: IndexedSkill, root: Path) -> str | None:
    """The document's body without frontmatter: parsed once per version of the file (see FileCache)."""
    relative = skill.details.doc_file

    def parse() -> str | None:
        text = _read_within(root / relative, root, relative, library.config.max_file_bytes)
        return None if text is None else parse_document(text, Reporter(relative)).body

    return library.files.get(root / relative, "documentation", parse, lambda body: len(body or ""))


def skill_files(skill: IndexedSkill) -> dict[str, str]:
    """The files a skill may serve, by the path an agent uses -> path relative to the library root."""
    details = skill.details
    if skill.layout == "three-file":
        rels = [details.doc_file, details.code_file, details.meta_file]
        return {Path(rel).name: rel for rel in rels if rel}
    folder = Path(details.doc_file).parent
    files = {Path(details.doc_file).name: details.doc_file}
    files.update({rel: (folder / rel).as_posix() for rel in details.resources})
    return files


def read_skill_file(library: SkillLibrary, skill_id: str, path: str) -> SkillFile:
    """One of a skill's own files (a reference, script or asset), never anything else."""
    skill = library.find(skill_id)
    files = skill_files(skill)
    wanted = posixpath.normpath(path.replace("\\", "/"))
    if wanted not in files:
        escaping = wanted.startswith(("/", "..")) or PurePosixPath(wanted).is_absolute()
        raise SkillshelfError(
            ErrorCode.ACCESS_DENIED if escaping else ErrorCode.PATTERN_NOT_FOUND,
            f"{skill.id!r} has no file {path!r}; only its own files can be read: {', '.join(sorted(files)[:30])}.",
            suggestions=difflib.get_close_matches(wanted, list(files), n=3, cutoff=0.5),
        )
    root = library.root_of(skill)
    text = _read_within(root / files[wanted], root, files[wanted], library.config.max_file_bytes)
    if text is None:
        raise SkillshelfError(
            ErrorCode.FILESYSTEM_ERROR, f"{skill.id}/{wanted} cannot be read as text (binary, unreadable or gone)."
        )
    truncated = len(text.encode()) >= library.config.max_file_bytes
    return SkillFile(skill_id=skill.id, path=wanted, content=text, truncated=truncated)


def read_documentation(library: SkillLibrary, skill_id: str) -> str:
    return load_skill(library, skill_id, include_metadata=False).documentation


def _read_within(path: Path, root: Path, label: str, max_bytes: int) -> str | None:
    if not is_servable(path, root.resolve()):
        return None
    return read_text(path, Reporter(label), max_bytes)


def _code_files(library: SkillLibrary, skill: IndexedSkill, root: Path) -> list[CodeFile]:
    if skill.layout == "three-file":
        code_file = skill.details.code_file
        paths = [code_file] if code_file else []
        base = root
    else:
        base = (root / skill.details.doc_file).parent
        prefix = base.relative_to(root).as_posix()
        paths = [f"{prefix}/{r}" for r in skill.details.resources if r.startswith("scripts/")]
    files: list[CodeFile] = []
    budget = MAX_CODE_BYTES
    for relative in paths:
        path = root / relative
        limit = max(budget, 1)
        text = library.files.get(
            path, f"code:{limit}", partial(_read_within, path, root, relative, limit), lambda t: len(t or "")
        )
        if text is None:
            continue
        truncated = len(text.encode()) >= budget
        budget -= len(text.encode())
        files.append(
            CodeFile(
                path=path.relative_to(base).as_posix() if base != root else path.name,
                language=SCRIPT_LANGUAGES.get(path.suffix, skill.details.language),
                content=text,
                truncated=truncated,
            )
        )
        if budget <= 0:
            break
    return files


def input_schema(
    skill: IndexedSkill, root: Path, library: SkillLibrary | None = None
) -> tuple[dict[str, Any] | None, str | None]:
    """The declared input schema, else one derived from a Python implementation's signature (not run)."""
    declared = skill.details.input_schema
    if declared:
        return declared, "declared"
    code_file = skill.details.code_file
    if skill.layout != "three-file" or not code_file or not code_file.endswith(".py"):
        return None, None
    path = root / code_file

    def derive() -> dict[str, Any] | None:
        source = read_source(path) if is_servable(path, root.resolve()) and path.is_file() else None
        derived, _entry = derive_python_schema(source or "", skill.id.split("/", 1)[1])
        return derived

    derived = library.files.get(path, f"schema:{skill.id}", derive) if library else derive()
    return derived, ("derived" if derived else None)


def _metadata(
    library: SkillLibrary, skill: IndexedSkill, usage: list[PatternUsage], root: Path, verified: bool
) -> SkillMetadata:
    details = skill.details
    used = usage[0] if usage else None
    schema, schema_source = input_schema(skill, root, library)
    return SkillMetadata(
        quality=skill.quality,
        quality_source=skill.quality_source,
        verified=verified,
        usage=UsageInfo(
            uses=used.uses if used else 0,
            projects=used.projects if used else [],
            first_used=used.first_used if used else None,
            last_used=used.last_used if used else None,
        ),
        quality_reasons=details.quality_reasons,
        tags=details.tags,
        language=details.language,
        input_schema=schema,
        input_schema_source=schema_source,
        frontmatter=details.frontmatter,
        resources=details.resources,
        findings=[FindingInfo(**f) for f in details.findings],
    )


def list_categories(library: SkillLibrary) -> CategoryList:
    stats = library.categories()
    return CategoryList(
        categories=[
            CategoryInfo(
                name=s.name, skills=s.skills, executable=s.executable, verified=s.verified, mean_quality=s.mean_quality
            )
            for s in stats
        ],
        total_skills=sum(s.skills for s in stats),
    )


def track_usage(
    library: SkillLibrary, projects: ProjectRoots | None, pattern_id: str, project: str | None, note: str | None
) -> UsageRecorded:
    """Record that a skill was used (from a project, with a note); three projects make it verified."""
    skill = library.find(pattern_id)
    label = project_label(projects, project) if project else None
    at = library.usage.record(skill.id, label, note, source="tool")
    (usage,) = library.usage.usage(skill.id)
    return UsageRecorded(
        pattern_id=skill.id,
        project=label,
        recorded_at=at,
        uses=usage.uses,
        projects=usage.projects,
        verified=library.is_verified(skill),
    )


def project_label(projects: ProjectRoots | None, project: str) -> str:
    """A project under the configured roots is counted by its name there; anything else as given.

    Usage only records the label (nothing is read or written in the project), so an outside path is
    not refused; normalising paths under the roots keeps one project from counting twice.
    """
    if projects is not None:
        try:
            return projects.resolve(project, must_exist=False).name
        except SkillshelfError:
            pass
    return project.strip()
