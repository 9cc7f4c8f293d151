"""Read one skill source (either layout) into the normalised `Skill`, with its findings."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skillshelf.library.skill.discovery import RESOURCE_DIRS, name_refused, printable
from skillshelf.library.skill.folder import MAX_FILES, FolderFile, TooManyFiles, walk_folder
from skillshelf.library.skill.frontmatter import ParsedDocument, parse_document
from skillshelf.library.skill.markdown import DocumentOutline, bold_fields, outline, plain, section_table
from skillshelf.library.skill.models import Finding, Skill, SkillSource
from skillshelf.library.skill.paths import display_path, relative_to_root, servable_or_why
from skillshelf.library.skill.policy import PolicyError, policy_of
from skillshelf.library.skill.quality import CRITERIA, QualityFacts, parse_score, score_quality
from skillshelf.library.skill.reading import DEFAULT_MAX_FILE_BYTES, ReadFile, Reporter, read_reported, text_of
from skillshelf.library.skill.scan import scan_skill
from skillshelf.tokens import estimate_text_tokens

NAME_RULE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
MAX_BODY_LINES = 500
MAX_RESOURCES = 200
SUMMARY_CHARS = 200
RESERVED_WORDS = ("anthropic", "claude")
XML_TAG = re.compile(r"<[A-Za-z/][^>]*>")
SPEC_KEYS = frozenset({"name", "description", "license", "compatibility", "metadata", "allowed-tools"})
KNOWN_EXTRA_KEYS = frozenset(
    {
        # Claude Code runtime extensions
        "model",
        "context",
        "agent",
        "agents",
        "hooks",
        "user-invocable",
        "argument-hint",
        "disable-model-invocation",
        "effort",
        # read by skillshelf
        "tags",
        "quality",
        "quality_score",
        "input_schema",
        "policy",
        "category",
        "version",
        "language",
        "last_verified",
        "author",
        "authors",
        "evals",  # trigger examples: `should:` and `should_not:` lists (skills/evals.py)
    }
)
CODE_LANGUAGES = {".py": "python", ".js": "javascript", ".ts": "typescript"}


ParsedSource = tuple[SkillSource, Skill | None, list[Finding]]


@dataclass(frozen=True)
class RootFacts:
    """What every skill of one root shares: the root with its links followed, and its name in findings (the
    home folder as '~'). Worked out once per root for a sync, not once per skill: resolving the root and
    finding the home folder were about 7 % of parsing a generated skill."""

    real: Path
    label: str

    @classmethod
    def of(cls, root: Path) -> RootFacts:
        return cls(root.resolve(), printable(display_path(root)))


def parse_source(item: tuple[SkillSource, RootFacts], max_bytes: int) -> ParsedSource:
    """`load_source` with its source, as the index stores it. What the parsing workers are handed (pickled by
    name): it lives here, not in library/index/library.py, so a worker imports the parser alone and not
    the index, pydantic and the usage store (about 0.2 s of CPU and most of a worker's start-up)."""
    source, root = item
    skill, findings = load_source(source, max_bytes, root)
    return source, skill, findings


def load_source(
    source: SkillSource, max_bytes: int = DEFAULT_MAX_FILE_BYTES, root: RootFacts | None = None
) -> tuple[Skill | None, list[Finding]]:
    """Parse a source; None (with findings saying why) when its document cannot be used. `root`: its root's
    facts, when the caller has them for every skill it parses (`RootFacts.of(source.root)`)."""
    loader = _ThreeFileLoader if source.layout == "three-file" else _AgentSkillLoader
    return loader(source, max_bytes, root or RootFacts.of(source.root)).load()


class _Loader:
    def __init__(self, source: SkillSource, max_bytes: int, root: RootFacts) -> None:
        self.source = source
        self.max_bytes = max_bytes
        self.root_label = root.label
        self.real_root = root.real
        self.findings: list[Finding] = []
        self.reads: dict[Path, ReadFile] = {}  # what `read` read, by path: the scanner judges the same bytes

    def reporter(self, path: Path) -> Reporter:
        return Reporter(printable(relative_to_root(path, self.source.root)), self.root_label, self.findings)

    def read(self, path: Path) -> str | None:
        report = self.reporter(path)
        servable = servable_or_why(path, self.real_root)
        if servable == "outside":
            report.add("warning", "symlink-outside-root", "resolves outside the library root; not read")
            return None
        if servable == "dot-path":
            report.add("warning", "symlink-to-dot-path", "resolves to a dot-file or dot-folder; not read")
            return None
        read = read_reported(path, report, self.max_bytes)
        if read is None:
            return None
        self.reads[path] = read
        return text_of(read, report, self.max_bytes)

    def load(self) -> tuple[Skill | None, list[Finding]]:
        raise NotImplementedError

    def build(
        self,
        *,
        declared_name: str,
        document: ParsedDocument,
        shape: DocumentOutline,
        frontmatter: dict[str, Any],
        description: str,
        executable: bool,
        language: str | None,
        resources: list[str],
        declared: float | None,
        breakdown: dict[str, float] | None,
        has_metadata: bool,
        scanned: list[FolderFile] | None = None,
    ) -> Skill:
        tags = _tags(frontmatter)
        facts = QualityFacts(
            description=description,
            headings=tuple(shape.headings),
            code_blocks=len(shape.code_languages),
            word_count=shape.word_count,
            executable=executable,
            has_tags=bool(tags),
            has_metadata=has_metadata,
        )
        # before quality: risk caps it
        self.findings.extend(
            scan_skill(self.source, self.root_label, self.max_bytes, self.real_root, scanned, self.reads)
        )
        quality = score_quality(declared, breakdown, facts, self.findings)
        schema = frontmatter.get("input_schema")
        if schema is not None and not (isinstance(schema, dict) and schema.get("type") == "object"):
            self.reporter(self.source.meta_file or self.source.doc_file).add(
                "warning",
                "input-schema-invalid",
                "input_schema must be a JSON Schema object with type: object",
            )
            schema = None
        self._check_policy(frontmatter)
        headings = ([shape.title] if shape.title else []) + shape.headings
        return Skill(
            source=self.source,
            declared_name=declared_name,
            description=description,
            tags=tags,
            headings=headings,
            body=document.body,
            language=language,
            executable=executable,
            frontmatter=frontmatter,
            input_schema=schema,
            resources=resources,
            quality=quality,
            findings=self.findings,
            load_tokens=estimate_text_tokens(document.body) + estimate_text_tokens(description) + 40,
        )

    def _check_policy(self, frontmatter: dict[str, Any]) -> None:
        """A run policy that cannot be read is an error: the skill does not run until it is fixed."""
        try:
            policy_of(frontmatter)
        except PolicyError as exc:
            self.reporter(self.source.meta_file or self.source.doc_file).add(
                "error", "policy-invalid", f"{exc}; executeSkill refuses to run it until this is fixed"
            )


class _ThreeFileLoader(_Loader):
    def load(self) -> tuple[Skill | None, list[Finding]]:
        source = self.source
        text = self.read(source.doc_file)
        if text is None:
            return None, self.findings
        document = parse_document(text, self.reporter(source.doc_file))
        shape = outline(document.body)
        frontmatter = dict(document.metadata)
        declared: float | None = None
        breakdown: dict[str, float] | None = None
        bold: dict[str, tuple[str, int]] = {}
        has_metadata = False
        if source.meta_file is not None:
            meta_text = self.read(source.meta_file)
            if meta_text is not None:
                meta_report = self.reporter(source.meta_file)
                meta = parse_document(meta_text, meta_report)
                frontmatter.update(meta.metadata)
                bold = bold_fields(meta.body)
                breakdown = _breakdown(meta.body, meta_report)
                has_metadata = bool(meta.metadata or bold or breakdown)
                if not has_metadata:  # an empty metadata file must not count as metadata
                    meta_report.add(
                        "warning",
                        "metadata-empty",
                        "no metadata here: add YAML frontmatter (description, tags, quality) or **Quality Score:** "
                        "fields, or delete the file",
                    )
        declared = _declared_score(frontmatter, bold, self.reporter(source.meta_file or source.doc_file))
        if declared is not None and breakdown:
            mean = sum(breakdown.values()) / len(breakdown)
            if abs(mean - declared) > 1.0:
                self.reporter(source.meta_file or source.doc_file).add(
                    "warning",
                    "quality-inconsistent",
                    f"declared score {declared:g} differs from the breakdown mean {mean:.1f} by more than 1",
                )
        description = _text(frontmatter.get("description")) or plain(bold.get("description", ("", 0))[0])
        if not description:
            description = shape.first_paragraph or ""
        if not description:
            self.reporter(source.doc_file).add(
                "warning",
                "description-missing",
                "no description: add a first paragraph under the title or `description:` in "
                f"{source.name}{'-SKILL.md'}",
            )
        if not NAME_RULE.match(source.name) or len(source.name) > MAX_NAME:
            self.reporter(source.doc_file).add(
                "warning",
                "name-invalid",
                "file name should be 1-64 lowercase letters, digits and single hyphens (e.g. rls-policy.md)",
            )
        language = _text(frontmatter.get("language")) or _text(bold.get("language", ("", 0))[0]) or None
        if source.code_file is not None:
            language = CODE_LANGUAGES.get(source.code_file.suffix, language)
        skill = self.build(
            declared_name=source.name,
            document=document,
            shape=shape,
            frontmatter=frontmatter,
            description=_one_paragraph(description),
            executable=source.code_file is not None,
            language=language.lower() if language else None,
            resources=[],
            declared=declared,
            breakdown=breakdown,
            has_metadata=has_metadata,
        )
        return skill, self.findings


class _AgentSkillLoader(_Loader):
    def load(self) -> tuple[Skill | None, list[Finding]]:
        source = self.source
        text = self.read(source.doc_file)
        if text is None:
            return None, self.findings
        report = self.reporter(source.doc_file)
        document = parse_document(text, report)
        if not document.has_frontmatter:
            report.add(
                "error",
                "frontmatter-missing",
                "SKILL.md must start with YAML frontmatter (---) holding name and description",
                1,
            )
        frontmatter = document.metadata
        shape = outline(document.body)
        declared_name = self._check_name(frontmatter, report)
        description = self._check_description(frontmatter, report) or shape.first_paragraph or ""
        self._check_keys(frontmatter, report)
        body_lines = document.body.count("\n") + 1
        if body_lines > MAX_BODY_LINES:
            report.add(
                "info",
                "body-long",
                f"SKILL.md body has {body_lines} lines; the spec recommends under {MAX_BODY_LINES}. "
                "Move detail into references/.",
            )
        files, complete = self._walk()
        resources = self._resources(files)
        raw_metadata = frontmatter.get("metadata")
        metadata: dict[str, Any] = raw_metadata if isinstance(raw_metadata, dict) else {}
        declared = _declared_score({**metadata, **frontmatter}, {}, report)
        skill = self.build(
            declared_name=declared_name,
            document=document,
            shape=shape,
            frontmatter=frontmatter,
            description=_one_paragraph(description),
            executable=any(r.startswith("scripts/") for r in resources),
            language=_text(frontmatter.get("language")) or None,
            resources=resources,
            declared=declared,
            breakdown=None,
            has_metadata=bool(metadata),
            scanned=files if complete else [],  # a skill over the limit is not scanned (`check` says why)
        )
        return skill, self.findings

    def _check_name(self, frontmatter: dict[str, Any], report: Reporter) -> str:
        folder = self.source.name
        name = frontmatter.get("name")
        if name is None:
            if self.source_has_frontmatter(frontmatter):
                report.add("error", "name-missing", f"frontmatter has no `name`; add `name: {folder}`", 2)
            return folder
        if not isinstance(name, str) or not name.strip():
            report.add("error", "name-invalid", "`name` must be a non-empty string", 2)
            return folder
        normalised = unicodedata.normalize("NFKC", name)
        if len(normalised) > MAX_NAME or not _name_chars_ok(normalised):
            report.add(
                "error",
                "name-invalid",
                f"name {name!r} breaks the spec: 1-64 lowercase letters, digits and hyphens, "
                "no leading, trailing or double hyphen",
                2,
            )
        if normalised != unicodedata.normalize("NFKC", folder):
            report.add(
                "warning",
                "name-mismatch",
                f"name {name!r} differs from its folder {folder!r}; the spec requires them to match "
                f"(the skill is served as {self.source.skill_id!r})",
                2,
            )
        if any(word in normalised for word in RESERVED_WORDS):
            report.add(
                "warning",
                "name-reserved-word",
                "names containing 'anthropic' or 'claude' are rejected by Anthropic's platform",
                2,
            )
        return name

    @staticmethod
    def source_has_frontmatter(frontmatter: dict[str, Any]) -> bool:
        return bool(frontmatter)

    def _check_description(self, frontmatter: dict[str, Any], report: Reporter) -> str:
        raw = frontmatter.get("description")
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            if frontmatter:
                report.add(
                    "error",
                    "description-missing",
                    "frontmatter has no `description`; agents find "
                    "skills by it. Say what the skill does and when to use it.",
                    2,
                )
            return ""
        if not isinstance(raw, str):
            report.add("error", "description-invalid", "`description` must be a string", 2)
            return str(raw)
        if len(raw) > MAX_DESCRIPTION:
            report.add(
                "error",
                "description-too-long",
                f"description has {len(raw)} characters; the spec allows {MAX_DESCRIPTION}. Move detail into the body.",
                2,
            )
        if XML_TAG.search(raw):
            report.add("warning", "description-xml-tag", "description contains an XML/HTML tag", 2)
        elif "<" in raw or ">" in raw:
            report.add(
                "warning",
                "description-angle-brackets",
                "description contains '<' or '>'; the spec says to avoid them",
                2,
            )
        return raw

    def _check_keys(self, frontmatter: dict[str, Any], report: Reporter) -> None:
        lowered: dict[str, str] = {}
        for key in frontmatter:
            if key.lower() in lowered:
                report.add(
                    "warning",
                    "frontmatter-key-case",
                    f"keys {lowered[key.lower()]!r} and {key!r} differ only by case; keep one",
                    2,
                )
            lowered[key.lower()] = key
            if key not in SPEC_KEYS and key not in KNOWN_EXTRA_KEYS:
                report.add("info", "frontmatter-unknown-key", f"key {key!r} is not in the Agent Skills spec", 2)
        compatibility = frontmatter.get("compatibility")
        if isinstance(compatibility, str) and len(compatibility) > MAX_COMPATIBILITY:
            report.add("error", "compatibility-too-long", f"compatibility is over {MAX_COMPATIBILITY} characters", 2)
        metadata = frontmatter.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            report.add("warning", "metadata-invalid", "`metadata` must be a mapping of strings to strings", 2)

    def _walk(self) -> tuple[list[FolderFile], bool]:
        """The skill folder's files as the one folder walk lists them, and whether it listed them all (it
        stops at MAX_FILES). The resources and the scan both read them: one walk of the folder, not two. A
        name it refuses (not UTF-8, a control character) is reported once, at the name itself."""
        folder = self.source.doc_file.parent
        refused: list[Path] = []
        files: list[FolderFile] = []
        complete = True
        try:
            files.extend(walk_folder(folder, self.real_root, max_files=MAX_FILES, refused=refused))
        except TooManyFiles:
            complete = False  # what was listed before the limit stands; `skillshelf check` reports the limit
        for path in refused:
            self.reporter(path).add("warning", *name_refused(path.name, folder=path.is_dir()))
        return files, complete

    @staticmethod
    def _resources(files: list[FolderFile]) -> list[str]:
        """The files under scripts/, references/ and assets/ (what readSkillFile serves)."""
        found = [f.served for f in files if "/" in f.served and f.served.split("/", 1)[0] in RESOURCE_DIRS]
        return sorted(found)[:MAX_RESOURCES]


def valid_name(name: str) -> bool:
    """True when `name` follows the Agent Skills naming rules (after NFKC normalisation)."""
    normalised = unicodedata.normalize("NFKC", name)
    return len(normalised) <= MAX_NAME and _name_chars_ok(normalised)


def _name_chars_ok(name: str) -> bool:
    if not name or name != name.lower() or name.startswith("-") or name.endswith("-") or "--" in name:
        return False
    return all(ch.isalnum() or ch == "-" for ch in name)


def _text(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _one_paragraph(text: str) -> str:
    return " ".join(text.split())


def summary(description: str) -> str:
    """The one-line description a search hit carries (about 50 tokens at most)."""
    line = _one_paragraph(description)
    return line if len(line) <= SUMMARY_CHARS else line[: SUMMARY_CHARS - 1].rstrip() + "…"


def _tags(frontmatter: dict[str, Any]) -> list[str]:
    metadata = frontmatter.get("metadata")
    raw_values = [frontmatter.get("tags"), metadata.get("tags") if isinstance(metadata, dict) else None]
    tags: list[str] = []
    for raw in raw_values:
        items = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else []
        for item in items:
            tag = str(item).strip().lower()
            if tag and tag not in tags:
                tags.append(tag)
    return tags


def _declared_score(frontmatter: dict[str, Any], bold: dict[str, tuple[str, int]], report: Reporter) -> float | None:
    for key in ("quality", "quality_score", "quality-score", "quality score", "overall score"):
        raw: object = frontmatter.get(key)
        line = 2
        if raw is None and key in bold:
            raw, line = bold[key]
        if raw is None:
            continue
        score = parse_score(raw)
        if score is None or not 0 <= score <= 10:
            report.add("warning", "quality-invalid", f"quality {raw!r} is not a score between 0 and 10", line)
            return None
        return score
    return None


def _breakdown(meta_body: str, report: Reporter) -> dict[str, float] | None:
    found = section_table(meta_body, "Quality Breakdown")
    if found is None:
        return None
    rows, line = found
    scores: dict[str, float] = {}
    for row in rows:
        if len(row) < 2:
            continue
        criterion = row[0].strip().lower()
        score = parse_score(row[1])
        if criterion in CRITERIA and score is not None and 0 <= score <= 10:
            scores[criterion] = score
    missing = [c for c in CRITERIA if c not in scores]
    if missing:
        report.add("warning", "quality-breakdown-incomplete", f"Quality Breakdown lacks {', '.join(missing)}", line)
    return {c: scores[c] for c in CRITERIA if c in scores} or None
