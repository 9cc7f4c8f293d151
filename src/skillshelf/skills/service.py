"""Search, load and list skills: the functions behind both the MCP tools and the CLI."""

from __future__ import annotations

import difflib
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from skillshelf.envelope import ErrorInfo, WireModel
from skillshelf.errors import CategoryInvalidError, ErrorCode, SkillshelfError
from skillshelf.execution.schema import derive_python_schema
from skillshelf.library.access.files import SkillFileError
from skillshelf.library.access.reader import CatalogReader, FileReader, SkillReader
from skillshelf.library.index.store import IndexedSkill, SearchFilters
from skillshelf.library.indexing.terms import query_terms
from skillshelf.library.skill.layouts import CODE_LANGUAGES
from skillshelf.library.sources.provenance import Provenance
from skillshelf.library.usage.store import SkillUsage
from skillshelf.projects import ProjectRoots
from skillshelf.skills import minify
from skillshelf.skills.models import (
    BriefMetadata,
    BulkLoadResult,
    BulkSearchResult,
    CategoryInfo,
    CategoryList,
    CodeFile,
    CompactHit,
    CompactSearchResult,
    Continuation,
    FindingInfo,
    LoadedSkill,
    LoadItem,
    SearchItem,
    SearchQuery,
    SearchResult,
    SkillFile,
    SkillHit,
    SkillLoad,
    SkillMetadata,
    SourceInfo,
    UsageInfo,
    UsageRecorded,
)
from skillshelf.tokens import CHARS_PER_TOKEN, JSON_OVERHEAD, estimate_text_tokens

T = TypeVar("T")
DEFAULT_LIMIT = 10
MAX_LIMIT = 50
MAX_CODE_BYTES = 256 * 1024
SCRIPT_LANGUAGES = {**CODE_LANGUAGES, ".sh": "sh", ".bash": "bash"}
MAX_BULK = 5  # queries or ids in one bulk call
HIT_DESCRIPTION_CHARS = 90  # a compact hit's one-line description, ellipsis included
MAX_REMAINING_SECTIONS = 10


def search_patterns(
    reader: SkillReader,
    query: str = "",
    *,
    category: str | None = None,
    include_executable: bool | None = None,
    min_quality: float | None = None,
    limit: int = DEFAULT_LIMIT,
) -> SearchResult:
    """Ranked hits for a natural-language query; an empty query lists skills by quality."""
    found, warnings = _searched(reader, query, category, include_executable, min_quality, limit)
    hits = [_hit(skill, verified) for skill, verified in found]
    # the hits validated in one call with their result: a model built per hit cost twice as much (issue 36)
    return SearchResult.model_validate({"query": query, "hits": hits, "warnings": warnings or None})


def search_patterns_compact(
    reader: SkillReader,
    query: str = "",
    *,
    category: str | None = None,
    include_executable: bool | None = None,
    min_quality: float | None = None,
    limit: int = DEFAULT_LIMIT,
) -> CompactSearchResult:
    """`search_patterns` as searchPatterns answers by default (`compact_result` of it, byte for byte), its compact
    hits made from the skills' fields: the long hits' models between cost a tenth of the tool's Python (issue 36)."""
    found, warnings = _searched(reader, query, category, include_executable, min_quality, limit)
    hits = [_compact_hit(_hit(skill, verified)) for skill, verified in found]
    return CompactSearchResult.model_validate({"hits": hits, "warnings": warnings or None})


def _searched(
    reader: SkillReader,
    query: str,
    category: str | None,
    include_executable: bool | None,
    min_quality: float | None,
    limit: int,
) -> tuple[list[tuple[IndexedSkill, bool]], list[str]]:
    """A search's skills, each with whether it is verified, and its warnings."""
    if category is not None and not reader.has_category(category):
        raise CategoryInvalidError(category, [c.name for c in reader.categories()])
    filters = SearchFilters(category=category, executable=include_executable, min_quality=min_quality)
    found = reader.search(query, filters, max(1, min(limit, MAX_LIMIT)))
    semantic_note = reader.semantic_note()  # None without meaning configured: then the query need not be split
    notes = (reader.index_warning(), semantic_note if semantic_note and query_terms(query) else None)
    warnings: list[str] = [note for note in notes if note]
    by_use = reader.verified_ids(warnings)
    return [(s, reader.is_verified(s, by_use)) for s in found], warnings


def _hit(skill: IndexedSkill, verified: bool) -> dict[str, Any]:
    """A `SkillHit`'s fields."""
    return {
        "id": skill.id,
        "name": skill.name,
        "category": skill.category,
        "description": skill.summary,
        "quality": skill.quality,
        "verified": verified,
        "executable": skill.executable,
        "tokens": skill.tokens,
        "layout": skill.layout,
        "score": skill.score,
    }


def load_skill(
    reader: SkillReader, skill_id: str, *, include_code: bool = False, include_metadata: bool = True
) -> LoadedSkill:
    skill = reader.find(skill_id)
    body = _documentation(reader, skill)
    warnings: list[str] = []
    metadata = _usage_metadata(reader, skill, warnings) if include_metadata else None
    code = _code_files(reader, skill) if include_code else None
    return _loaded(skill, body, code, metadata, warnings)


def _loaded(
    skill: IndexedSkill,
    documentation: str,
    code: list[CodeFile] | None,
    metadata: SkillMetadata | None,
    warnings: list[str],
    section: str | None = None,
    continuation: Continuation | None = None,
) -> LoadedSkill:
    """The long form of a load (the CLI, the web view, `detail: true`)."""
    return LoadedSkill(
        id=skill.id,
        name=skill.name,
        category=skill.category,
        layout=skill.layout,
        description=skill.details.description,
        executable=skill.executable,
        documentation=documentation,
        section=section,
        continuation=continuation,
        code=code,
        metadata=metadata,
        warnings=warnings or None,
    )


def _documentation(reader: SkillReader, skill: IndexedSkill) -> str:
    """The document's body without frontmatter (parsed once per version of the file)."""
    body = reader.documentation(skill)
    if body is None:
        raise _vanished(reader, skill)
    return body


def _vanished(reader: SkillReader, skill: IndexedSkill) -> SkillshelfError:
    """A skill whose document is gone or unreadable since the index was written: the index re-checks it."""
    reader.mark_changed()
    return SkillshelfError(
        ErrorCode.FILESYSTEM_ERROR, f"The files of {skill.id!r} changed or vanished on disk; call searchPatterns again."
    )


def read_skill_file(reader: SkillReader, skill_id: str, path: str) -> SkillFile:
    """One of a skill's own files (a reference, script or asset), never anything else."""
    skill = reader.find(skill_id)
    text = reader.read_text(skill, path)
    served = "/".join(p for p in path.replace("\\", "/").split("/") if p not in ("", "."))
    if text is None:
        raise SkillshelfError(
            ErrorCode.FILESYSTEM_ERROR, f"{skill.id}/{served} cannot be read as text (binary, unreadable or gone)."
        )
    truncated = len(text.encode()) >= reader.max_file_bytes
    return SkillFile(skill_id=skill.id, path=served, content=text, truncated=truncated)


def read_documentation(reader: SkillReader, skill: IndexedSkill) -> str:
    """The documentation of a skill its caller has looked up (the resource read found it to say which is missing:
    looking it up again was a second index read a call, issue 36)."""
    return _documentation(reader, skill)


def _code_files(reader: FileReader, skill: IndexedSkill) -> list[CodeFile]:
    """The implementation (three-file) or the scripts/ files, up to MAX_CODE_BYTES in all."""
    if skill.layout == "three-file":
        code_file = skill.details.code_file
        paths = [Path(code_file).name] if code_file else []
    else:
        paths = [r for r in served_resources(reader, skill) if r.startswith("scripts/")]
    files: list[CodeFile] = []
    budget = MAX_CODE_BYTES
    for served in paths:
        limit = max(budget, 1)
        try:
            text = reader.parsed_text(skill, served, f"code:{limit}", _as_read, lambda t: len(t or ""), limit)
        except SkillFileError:
            continue  # gone or refused since the index was written: the next sync drops it
        if text is None:
            continue
        truncated = len(text.encode()) >= budget
        budget -= len(text.encode())
        files.append(
            CodeFile(
                path=served,
                language=SCRIPT_LANGUAGES.get(Path(served).suffix, skill.details.language),
                content=text,
                truncated=truncated,
            )
        )
        if budget <= 0:
            break
    return files


def _as_read(text: str | None) -> str | None:
    """A code file is served as read (None: binary or unreadable)."""
    return text


def input_schema(skill: IndexedSkill, reader: FileReader) -> tuple[dict[str, Any] | None, str | None]:
    """The declared input schema, else one derived from a Python implementation's signature (not run)."""
    declared = skill.details.input_schema
    if declared:
        return declared, "declared"
    code_file = skill.details.code_file
    if skill.layout != "three-file" or not code_file or not code_file.endswith(".py"):
        return None, None
    served = Path(code_file).name

    def derive(text: str | None) -> dict[str, Any] | None:
        derived, _entry = derive_python_schema(text or "", skill.id.split("/", 1)[1])
        return derived

    try:
        derived = reader.parsed_text(skill, served, f"schema:{skill.id}", derive, lambda _schema: 1024)
    except SkillFileError:
        return None, None
    return derived, ("derived" if derived else None)


def _metadata(reader: FileReader, skill: IndexedSkill, usage: list[SkillUsage], verified: bool) -> SkillMetadata:
    details = skill.details
    used = usage[0] if usage else None
    schema, schema_source = input_schema(skill, reader)
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
        resources=served_resources(reader, skill),
        findings=[FindingInfo(**f) for f in details.findings],
        source=_source_info(reader.provenance(skill)),
    )


def served_resources(reader: FileReader, skill: IndexedSkill) -> list[str]:
    """`metadata.resources`: the index's list (the one folder walk, at the last sync) less any file this
    reader does not serve now (a link into a skill the view hides, a file gone since, an index written
    before the walk's ignore list applied), so every path listed is one readSkillFile reads."""
    if not skill.details.resources:
        return []
    served = set(reader.files(skill))
    return [path for path in skill.details.resources if path in served]


def _source_info(found: Provenance | None) -> SourceInfo | None:
    if found is None:
        return None
    return SourceInfo(name=found.source, kind=found.kind, url=found.url, commit=found.commit, license=found.license)


def list_categories(reader: CatalogReader) -> CategoryList:
    stats = reader.categories()
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
    reader: SkillReader, projects: ProjectRoots | None, skill_id: str, project: str | None, note: str | None
) -> UsageRecorded:
    """Record that a skill was used (from a project, with a note); three projects make it verified."""
    skill = reader.find(skill_id)
    label = project_label(projects, project) if project else None
    recorded = reader.record_use(skill.id, label, note, source="tool")
    return UsageRecorded(
        skill_id=skill.id,
        project=label,
        recorded_at=recorded.at,
        uses=recorded.usage.uses,
        projects=recorded.usage.projects,
        verified=reader.is_verified(skill),
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


# --- compact hits and bulk searches ---------------------------------------------------------------


def one_line(text: str, limit: int = HIT_DESCRIPTION_CHARS) -> str:
    """`text` on one line of at most `limit` characters: a whole first sentence, else cut at a word with "…"."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    sentence = line.rfind(". ", 0, limit)
    if sentence >= limit // 2:
        return line[: sentence + 1]
    space = line.rfind(" ", 0, limit)
    stop = space if space >= limit // 2 else limit - 1
    return line[:stop].rstrip(" ,;:-–(") + "…"


def compact_hit(hit: SkillHit) -> CompactHit:
    return CompactHit.model_validate(_compact_hit(dict(hit)))


def _compact_hit(hit: dict[str, Any]) -> dict[str, Any]:
    """A `CompactHit`'s fields, from a `SkillHit`'s."""
    return {
        "id": hit["id"],
        "description": one_line(hit["description"]),
        "quality": hit["quality"],
        "tokens": hit["tokens"],
        "score": round(hit["score"], 2),  # the ranking orders by the score to 2 decimals (store._fetch)
        "executable": True if hit["executable"] else None,
        "verified": True if hit["verified"] else None,
    }


def compact_result(result: SearchResult) -> CompactSearchResult:
    # validated in one call, as `search_patterns` does
    hits = [_compact_hit(dict(h)) for h in result.hits]
    return CompactSearchResult.model_validate({"hits": hits, "warnings": result.warnings})


def search_many(reader: SkillReader, queries: list[SearchQuery], *, detail: bool = False) -> BulkSearchResult:
    """Several searches in one call, each with its own filters; one failing never fails the others."""
    _check_bulk("queries", len(queries))
    items: list[SearchItem] = []
    for q in queries:
        try:
            found = search_patterns(
                reader,
                q.query,
                category=q.category,
                include_executable=q.include_executable,
                min_quality=q.min_quality,
                limit=q.limit,
            )
        except SkillshelfError as exc:
            items.append(SearchItem(query=q.query, success=False, error=_error_info(exc)))
            continue
        hits: list[CompactHit] | list[SkillHit] = found.hits if detail else [compact_hit(h) for h in found.hits]
        items.append(SearchItem(query=q.query, success=True, hits=hits, warnings=found.warnings))
    return BulkSearchResult(results=items)


def _check_bulk(what: str, count: int) -> None:
    if not 1 <= count <= MAX_BULK:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR, f"{what} takes 1 to {MAX_BULK} items, not {count}; split the call."
        )


def _error_info(exc: SkillshelfError) -> ErrorInfo:
    return ErrorInfo(code=exc.code, message=exc.message, suggestions=exc.suggestions or None, details=exc.details)


# --- loads for agents: minified, deduplicated, paged ------------------------------------------------


def load_for_agent(
    reader: SkillReader,
    skill_id: str,
    *,
    include_code: bool = False,
    include_metadata: bool | None = None,
    detail: bool = False,
    max_tokens: int | None = None,
    section: str | None = None,
    cursor: str | None = None,
) -> SkillLoad | LoadedSkill:
    """What loadSkill sends: by default minified, each fact once, brief metadata; `detail` gives the long form.

    include_metadata: None for the brief metadata (quality, verified, tags, input schema, files), True
    for all of it, False for none. `max_tokens` bounds the whole result (the envelope's tokensUsed):
    the documentation is cut between blocks, never inside a fence or table, and `continuation` says
    what was left out and carries the cursor for the next part. `section` serves one heading's
    section ("Usage > Options", or just "Options").
    """
    skill = reader.find(skill_id)
    served = _pages(reader, skill, minified=not detail)
    doc, holds = served.doc, served.holds
    # Only a section or a page cut needs the document's blocks: parsing them was most of a first load.
    blocks = _blocks(reader, skill, doc, served.digest) if section is not None or max_tokens is not None else []
    start, end, label = 0, len(doc), None
    if cursor is not None:
        start, end = _parse_cursor(cursor, served.digest, skill.id, len(doc))
    elif section is not None:
        span = minify.find_section(blocks, section)
        if span is None:
            sections = minify.section_paths(blocks)
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR,
                f"{skill.id!r} has no section {section!r}. Its sections: {'; '.join(sections[:30]) or 'none'}.",
                suggestions=difflib.get_close_matches(section, sections, n=3, cutoff=0.4),
            )
        start, end = span
        label = minify.heading_path(next(b for b in blocks if b.start == start))
    first_part = cursor is None
    want_metadata = include_metadata if include_metadata is not None else (None if first_part else False)
    warnings: list[str] = []
    code = _code_files(reader, skill) if include_code else None
    build: Callable[[str, Continuation | None], WireModel]
    if detail:
        full = _full_metadata(reader, skill, warnings) if want_metadata is not False else None

        def build(text: str, more: Continuation | None) -> WireModel:
            return _loaded(skill, text, code, full, warnings, label, more)

    else:
        metadata: BriefMetadata | SkillMetadata | None = None
        if want_metadata is None:
            metadata = _brief_metadata(reader, skill, warnings)
        elif want_metadata:
            metadata = _full_metadata(reader, skill, warnings)
        description = skill.details.description
        # The agent chose the skill by its description (the hit's); only the full metadata sends it again,
        # and then only when the documentation does not already say it.
        repeated = want_metadata is not True or not first_part or label is not None or _holds(holds, doc, description)

        def build(text: str, more: Continuation | None) -> WireModel:
            return SkillLoad(
                id=skill.id,
                description=None if repeated else description,
                executable=True if skill.executable else None,
                documentation=text,
                section=label,
                continuation=more,
                code=code,
                metadata=metadata,
                warnings=warnings or None,
            )

    stop = end if max_tokens is None else _fit(skill.id, build, doc, blocks, start, end, served.digest, max_tokens)
    result = build(doc[start:stop], _continuation(doc, blocks, stop, end, served.digest) if stop < end else None)
    assert isinstance(result, SkillLoad | LoadedSkill)
    return result


def load_many(
    reader: SkillReader,
    skill_ids: list[str],
    *,
    include_code: bool = False,
    include_metadata: bool | None = None,
    detail: bool = False,
    max_tokens: int | None = None,
) -> BulkLoadResult:
    """Several loads in one call; an unknown id is that item's error, the others still load."""
    _check_bulk("skillIds", len(skill_ids))
    items: list[LoadItem] = []
    for skill_id in skill_ids:
        try:
            skill = load_for_agent(
                reader,
                skill_id,
                include_code=include_code,
                include_metadata=include_metadata,
                detail=detail,
                max_tokens=max_tokens,
            )
        except SkillshelfError as exc:
            items.append(LoadItem(skill_id=skill_id, success=False, error=_error_info(exc)))
            continue
        items.append(LoadItem(skill_id=skill_id, success=True, skill=skill))
    return BulkLoadResult(results=items)


@dataclass
class _Served:
    """The documentation to serve, kept per version of the file: its text, a digest of it (cursors name the
    version they page) and, filled by `_holds`, whether it says a description."""

    doc: str
    holds: dict[str, bool] = field(default_factory=dict)

    @cached_property
    def digest(self) -> str:
        """Only a page needs it: hashing every document a first load served was a tenth of its extra work
        (issue 36)."""
        return hashlib.blake2b(self.doc.encode(), digest_size=4).hexdigest()


def _pages(reader: SkillReader, skill: IndexedSkill, *, minified: bool) -> _Served:
    """The documentation to serve (one lookup of the file a load, not one for each part)."""

    def prepare(body: str | None) -> _Served:
        if body is None:
            raise _vanished(reader, skill)
        return _Served(minify.minify_markdown(body) if minified else body)

    kind = "served:min" if minified else "served:raw"
    try:  # derived from the document in its one lookup (a realpath and a stat), not in a second (issue 36)
        return reader.from_documentation(skill, kind, prepare, lambda p: len(p.doc))
    except SkillFileError:
        raise _vanished(reader, skill) from None


def _blocks(reader: SkillReader, skill: IndexedSkill, doc: str, digest: str) -> list[minify.Block]:
    """The blocks of the documentation `_pages` served (headings, paragraphs, fences), where it may be cut.
    Keyed by the served text's digest too: a file changed between the two reads never pairs old blocks
    with new text."""
    return _cached_doc(reader, skill, f"blocks:{digest}", lambda: minify.split_blocks(doc), lambda _: len(doc))


def _cached_doc(
    reader: SkillReader, skill: IndexedSkill, kind: str, compute: Callable[[], T], size: Callable[[T], int]
) -> T:
    """`compute()` for the skill's document, reused while the file is unchanged; a vanished file says so."""
    try:
        return reader.cached(skill, _doc_path(skill), kind, compute, size)
    except SkillFileError:
        raise _vanished(reader, skill) from None


def _doc_path(skill: IndexedSkill) -> str:
    """The served path of the skill's document (what the documentation is parsed from)."""
    return Path(skill.details.doc_file).name if skill.layout == "three-file" else "SKILL.md"


def _holds(known: dict[str, bool], doc: str, description: str) -> bool:
    """Whether the documentation already says the description (whitespace aside); `known` is the answers
    for this version of the file (`_pages`), so each description is looked for once."""
    flat = " ".join(description.split())
    if not flat:
        return True
    if (found := known.get(flat)) is None:
        found = known[flat] = flat in " ".join(doc.split())
    return found


def _parse_cursor(cursor: str, digest: str, skill_id: str, length: int) -> tuple[int, int]:
    try:
        span, version = cursor.rsplit(".", 1)
        start_text, end_text = span.split("-", 1)
        start, end = int(start_text), int(end_text)
    except ValueError:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"cursor {cursor!r} is not one loadSkill gave; pass continuation.cursor unchanged.",
        ) from None
    if version != digest or not 0 <= start < end <= length:
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"{skill_id!r} changed since this cursor was given; load it again without cursor.",
        )
    return start, end


def _json_chars(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str))


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN * JSON_OVERHEAD)  # as estimate_json_tokens counts


def _continuation(doc: str, blocks: list[minify.Block], stop: int, end: int, digest: str) -> Continuation:
    return Continuation(
        cursor=f"{stop}-{end}.{digest}",
        remaining_tokens=estimate_text_tokens(doc[stop:end]),
        remaining_sections=minify.top_sections(blocks, stop, end, MAX_REMAINING_SECTIONS),
    )


def _fit(
    skill_id: str,
    build: Callable[[str, Continuation | None], WireModel],
    doc: str,
    blocks: list[minify.Block],
    start: int,
    end: int,
    digest: str,
    max_tokens: int,
) -> int:
    """The furthest block boundary whose result, continuation included, is at most `max_tokens`."""
    base = _json_chars(build("", None).model_dump(mode="json", by_alias=True, exclude_none=True))
    key = len(',"continuation":')

    def cost(stop: int) -> int:
        chars = base + _json_chars(doc[start:stop]) - 2  # the empty string's quotes are already in base
        if stop < end:
            more = _continuation(doc, blocks, stop, end, digest)
            chars += key + _json_chars(more.model_dump(mode="json", by_alias=True, exclude_none=True))
        return _tokens(chars)

    if cost(end) <= max_tokens:
        return end
    stop = minify.cut(doc, blocks, start, end, lambda at: cost(at) <= max_tokens)
    if stop == start:
        first = next((min(b.end, end) for b in blocks if b.end > start), end)
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"maxTokens {max_tokens} is too small for the next part of {skill_id!r}: it needs about "
            f"{cost(first)} tokens with the fields sent beside it. Raise maxTokens, or omit metadata and code.",
        )
    return stop


def _brief_metadata(reader: SkillReader, skill: IndexedSkill, warnings: list[str]) -> BriefMetadata:
    details = skill.details
    schema = input_schema(skill, reader)[0] if skill.executable else None
    return BriefMetadata(
        quality=skill.quality,
        verified=True if reader.is_verified(skill, reader.verified_ids(warnings)) else None,
        tags=details.tags or None,
        input_schema=schema,
        resources=served_resources(reader, skill) or None,
        source=found.brief if (found := reader.provenance(skill)) is not None else None,
    )


def _usage_metadata(reader: SkillReader, skill: IndexedSkill, warnings: list[str]) -> SkillMetadata:
    """The skill's metadata with its usage and verified flag (a warning instead when usage is unreadable)."""
    usage = reader.usage(skill.id, warnings) or []
    return _metadata(reader, skill, usage, reader.is_verified(skill, reader.verified_ids(warnings)))


def _full_metadata(reader: SkillReader, skill: IndexedSkill, warnings: list[str]) -> SkillMetadata:
    """Everything known about the skill; the frontmatter without the fields sent beside it."""
    meta = _usage_metadata(reader, skill, warnings)
    sent = {"description", "name"}
    return meta.model_copy(update={"frontmatter": {k: v for k, v in meta.frontmatter.items() if k not in sent}})
