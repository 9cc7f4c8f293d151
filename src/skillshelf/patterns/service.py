"""Search, load and list skills: the functions behind both the MCP tools and the CLI."""

from __future__ import annotations

import difflib
import posixpath
import re
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from skillshelf.errors import CategoryInvalidError, ErrorCode, PatternNotFoundError, SkillshelfError
from skillshelf.execution.schema import derive_python_schema, read_source
from skillshelf.library.frontmatter import parse_document
from skillshelf.library.index import IndexedSkill, SearchFilters
from skillshelf.library.layouts import CODE_LANGUAGES
from skillshelf.library.paths import is_within
from skillshelf.library.reading import Reporter, read_text
from skillshelf.library.skill_library import SkillLibrary
from skillshelf.library.usage import VERIFIED_PROJECTS, PatternUsage
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
SKILL_ID = re.compile(r"^[^/\\\x00]+/[^/\\\x00]+$")
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
    verified_by_use = library.usage.verified_by_use()
    return SearchResult(query=query, hits=[_hit(s, verified_by_use) for s in found])


def _hit(skill: IndexedSkill, verified_by_use: frozenset[str]) -> SkillHit:
    return SkillHit(
        id=skill.id,
        name=skill.name,
        category=skill.category,
        description=skill.summary,
        quality=skill.quality,
        verified=skill.verified or skill.id in verified_by_use,
        executable=skill.executable,
        tokens=skill.tokens,
        layout=skill.layout,
        score=skill.score,
    )


def find_skill(library: SkillLibrary, skill_id: str) -> IndexedSkill:
    if not SKILL_ID.match(skill_id) or ".." in skill_id.split("/"):
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"{skill_id!r} is not a skill id; ids look like 'category/name' (see searchPatterns hits).",
        )
    skill = library.get(skill_id)
    if skill is None:
        raise PatternNotFoundError(skill_id, suggest(library, skill_id))
    return skill


def suggest(library: SkillLibrary, skill_id: str, limit: int = 3) -> list[str]:
    """Close matches for an unknown id: same name elsewhere, similar ids, then a search on its words."""
    pairs = library.index.ids_and_names()
    wanted_name = skill_id.rsplit("/", 1)[-1].lower()
    same_name = [i for i, n in pairs if n.lower() == wanted_name or i.rsplit("/", 1)[-1] == wanted_name]
    similar = difflib.get_close_matches(skill_id, [i for i, _ in pairs], n=limit, cutoff=0.6)
    by_name = difflib.get_close_matches(wanted_name, [i.rsplit("/", 1)[-1] for i, _ in pairs], n=limit, cutoff=0.6)
    similar_names = [i for name in by_name for i, _ in pairs if i.rsplit("/", 1)[-1] == name]
    searched = [s.id for s in library.search(skill_id.replace("/", " "), SearchFilters(), limit)]
    return list(dict.fromkeys([*same_name, *similar, *similar_names, *searched]))[:limit]


def load_skill(
    library: SkillLibrary, skill_id: str, *, include_code: bool = False, include_metadata: bool = True
) -> LoadedSkill:
    skill = find_skill(library, skill_id)
    root = library.root_of(skill)
    body = _documentation(library, skill, root)
    if body is None:
        library.mark_dirty()
        raise SkillshelfError(
            ErrorCode.FILESYSTEM_ERROR,
            f"The files of {skill.id!r} changed or vanished on disk; call searchPatterns again.",
        )
    return LoadedSkill(
        id=skill.id,
        name=skill.name,
        category=skill.category,
        layout=skill.layout,
        description=skill.payload["description"],
        executable=skill.executable,
        documentation=body,
        code=_code_files(library, skill, root) if include_code else None,
        metadata=_metadata(library, skill, library.usage.usage(skill.id), root) if include_metadata else None,
    )


def _documentation(library: SkillLibrary, skill: IndexedSkill, root: Path) -> str | None:
    """The document's body without frontmatter: parsed once per version of the file (see FileCache)."""
    relative = skill.payload["docFile"]

    def parse() -> str | None:
        text = _read_within(root / relative, root, relative, library.config.max_file_bytes)
        return None if text is None else parse_document(text, Reporter(relative)).body

    return library.files.get(root / relative, "documentation", parse, lambda body: len(body or ""))


def skill_files(skill: IndexedSkill) -> dict[str, str]:
    """The files a skill may serve, by the path an agent uses -> path relative to the library root."""
    payload = skill.payload
    if skill.layout == "three-file":
        rels = [payload["docFile"], payload.get("codeFile"), payload.get("metaFile")]
        return {Path(rel).name: rel for rel in rels if rel}
    folder = Path(payload["docFile"]).parent
    files = {Path(payload["docFile"]).name: payload["docFile"]}
    files.update({rel: (folder / rel).as_posix() for rel in payload["resources"]})
    return files


def read_skill_file(library: SkillLibrary, skill_id: str, path: str) -> SkillFile:
    """One of a skill's own files (a reference, script or asset), never anything else."""
    skill = find_skill(library, skill_id)
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
    if not is_within(path, root.resolve()):
        return None
    return read_text(path, Reporter(label), max_bytes)


def _code_files(library: SkillLibrary, skill: IndexedSkill, root: Path) -> list[CodeFile]:
    if skill.layout == "three-file":
        code_file = skill.payload.get("codeFile")
        paths = [code_file] if code_file else []
        base = root
    else:
        base = (root / skill.payload["docFile"]).parent
        prefix = base.relative_to(root).as_posix()
        paths = [f"{prefix}/{r}" for r in skill.payload["resources"] if r.startswith("scripts/")]
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
                language=SCRIPT_LANGUAGES.get(path.suffix, skill.payload.get("language")),
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
    declared = skill.payload.get("inputSchema")
    if declared:
        return declared, "declared"
    code_file = skill.payload.get("codeFile")
    if skill.layout != "three-file" or not code_file or not code_file.endswith(".py"):
        return None, None
    path = root / code_file

    def derive() -> dict[str, Any] | None:
        source = read_source(path) if is_within(path, root.resolve()) else None
        derived, _entry = derive_python_schema(source or "", skill.id.split("/", 1)[1])
        return derived

    derived = library.files.get(path, f"schema:{skill.id}", derive) if library else derive()
    return derived, ("derived" if derived else None)


def _metadata(library: SkillLibrary, skill: IndexedSkill, usage: list[PatternUsage], root: Path) -> SkillMetadata:
    payload = skill.payload
    used = usage[0] if usage else None
    schema, schema_source = input_schema(skill, root, library)
    return SkillMetadata(
        quality=skill.quality,
        quality_source=skill.quality_source,
        verified=skill.verified or (used is not None and len(used.projects) >= VERIFIED_PROJECTS),
        usage=UsageInfo(
            uses=used.uses if used else 0,
            projects=used.projects if used else [],
            first_used=used.first_used if used else None,
            last_used=used.last_used if used else None,
        ),
        quality_reasons=payload["qualityReasons"],
        tags=payload["tags"],
        language=payload["language"],
        input_schema=schema,
        input_schema_source=schema_source,
        frontmatter=payload["frontmatter"],
        resources=payload["resources"],
        findings=[FindingInfo(**f) for f in payload["findings"]],
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
    skill = find_skill(library, pattern_id)
    label = project_label(projects, project) if project else None
    at = library.usage.record(skill.id, label, note, source="tool")
    (usage,) = library.usage.usage(skill.id)
    return UsageRecorded(
        pattern_id=skill.id,
        project=label,
        recorded_at=at,
        uses=usage.uses,
        projects=usage.projects,
        verified=skill.verified or len(usage.projects) >= VERIFIED_PROJECTS,
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
