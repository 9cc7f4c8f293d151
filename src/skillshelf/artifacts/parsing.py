"""Session artifacts read into one shape: markdown summaries (markdown-it-py) and JSON packs.

Agents write these files by hand-like prompts, so nothing about them is guaranteed: headings
vary ("Decisions", "Key Decisions", "## 2. What was built"), packs mix camelCase and snake_case,
entries are strings or objects. Parsing is forgiving: whatever cannot be used becomes a warning,
never an exception.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token

from skillshelf.library.skill.frontmatter import parse_document
from skillshelf.library.skill.reading import Reporter

SectionKind = Literal["summary", "decisions", "implementations", "challenges", "next_steps"]
LIST_KINDS: tuple[SectionKind, ...] = ("decisions", "implementations", "challenges", "next_steps")

_MD = MarkdownIt("commonmark")

# Checked in this order, so "Next steps for the implementation" is next steps, not implementation.
_HEADING_KINDS: tuple[tuple[SectionKind, re.Pattern[str]], ...] = (
    (
        "next_steps",
        re.compile(r"\bnext\b(?![.\w])|\bfollow[ -]?ups?\b|\btodos?\b|\bto do\b|\bfuture work\b|\bremaining\b"),
    ),
    ("decisions", re.compile(r"\bdecisions?\b|\bdecided\b|\bchoices\b|\btrade[ -]?offs?\b")),
    ("challenges", re.compile(r"\bchallenges?\b|\bproblems?\b|\bblockers?\b|\bissues\b|\bobstacles?\b|\bgotchas?\b")),
    (
        "implementations",
        re.compile(r"\bimplement\w*|\bwhat was built\b|\bbuilt\b|\bchanges\b|\bdeliverables?\b|\bcompleted\b"),
    ),
    ("summary", re.compile(r"\bsummary\b|\boverview\b|\btl;?dr\b|\babstract\b")),
)
_TASK_BOX = re.compile(r"^\[[ xX]\]\s+")
_FENCE_ATTR = re.compile(r"""([\w-]+)=("[^"]*"|'[^']*'|\S+)|(\S+)""")
_FILE_ATTRS = ("title", "file", "filename", "name", "path")
# `category/name` references (skill ids) anywhere in the text; longer paths are not skill ids.
_REFERENCE = re.compile(r"(?<![\w./-])([a-z0-9][\w-]*/[a-z0-9][\w-]*)(?![\w/-])", re.IGNORECASE)
MAX_REFERENCES = 200
MAX_BODY_CHARS = 256 * 1024  # indexed text per session; loading still returns everything

LANGUAGE_ALIASES = {
    "py": "python",
    "python3": "python",
    "ts": "typescript",
    "js": "javascript",
    "sh": "bash",
    "shell": "bash",
    "zsh": "bash",
    "yml": "yaml",
    "golang": "go",
    "rs": "rust",
    "c++": "cpp",
    "rb": "ruby",
    "md": "markdown",
}
_EXTENSION_LANGUAGES = {
    ".py": "python",
    ".ts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript",
    ".jsx": "jsx",
    ".sh": "bash",
    ".sql": "sql",
    ".go": "go",
    ".rs": "rust",
    ".rb": "ruby",
    ".java": "java",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".toml": "toml",
    ".css": "css",
    ".html": "html",
}


def normalise_language(language: str | None) -> str | None:
    if not language:
        return None
    lowered = language.strip().lower()
    return LANGUAGE_ALIASES.get(lowered, lowered) or None


@dataclass(frozen=True)
class CodeBlock:
    language: str | None
    file: str | None
    code: str
    section: str | None = None  # the heading the block sits under
    source: str = ""  # the artifact file it came from, relative to .agent-artifacts


@dataclass
class SessionContent:
    title: str | None = None
    summary: str | None = None
    decisions: list[str] = field(default_factory=list)
    implementations: list[str] = field(default_factory=list)
    challenges: list[str] = field(default_factory=list)
    next_steps: list[str] = field(default_factory=list)
    code: list[CodeBlock] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)  # everything else worth searching
    references: set[str] = field(default_factory=set)

    def entries(self, kind: SectionKind) -> list[str]:
        values: list[str] = getattr(self, kind)
        return values

    def searchable_body(self) -> str:
        parts = [*self.text, *(block.code for block in self.code)]
        return "\n".join(parts)[:MAX_BODY_CHARS]


def merge(contents: Iterable[SessionContent]) -> SessionContent:
    """One view of a session's files: per field, the first file that has it; code and text from all."""
    merged = SessionContent()
    seen_code: set[tuple[str | None, str | None, str]] = set()
    for content in contents:
        merged.title = merged.title or content.title
        merged.summary = merged.summary or content.summary
        for kind in LIST_KINDS:
            if not merged.entries(kind):
                merged.entries(kind).extend(content.entries(kind))
        for block in content.code:
            key = (block.language, block.file, block.code)
            if key not in seen_code:
                seen_code.add(key)
                merged.code.append(block)
        merged.headings.extend(content.headings)
        merged.text.extend(content.text)
        merged.references |= content.references
    return merged


# -- markdown -------------------------------------------------------------------------------


def heading_kind(heading: str) -> SectionKind | None:
    """Which section a heading opens, by keyword ("Key Decisions" -> decisions), or None."""
    text = heading.lower()
    return next((kind for kind, pattern in _HEADING_KINDS if pattern.search(text)), None)


def parse_fence_info(info: str) -> tuple[str | None, str | None]:
    """(language, file) from a fence info string: `python title="auth.py"`, `ts src/auth.ts`, `py:auth.py`."""
    language: str | None = None
    file: str | None = None
    for key, value, bare in _FENCE_ATTR.findall(info.strip()):
        if key:
            if key.lower() in _FILE_ATTRS and file is None:
                file = value.strip("\"'") or None
        elif language is None:
            language, _, after = bare.partition(":")
            file = file or after or None
            if "." in language or "/" in language:  # ```auth.py: a file name where the language goes
                language, file = "", file or language
        elif file is None and ("." in bare or "/" in bare) and not bare.startswith("{"):
            file = bare
    if language is not None and (language.startswith("{") or not language.strip()):
        language = None
    if language is None and file:
        language = language_of_file(file)
    return (language.lower() if language else None), file


def language_of_file(file: str) -> str | None:
    return _EXTENSION_LANGUAGES.get("." + file.rsplit(".", 1)[-1].lower()) if "." in file else None


@dataclass
class _Section:
    kind: SectionKind | None
    level: int
    items: list[str] = field(default_factory=list)
    subheadings: list[str] = field(default_factory=list)
    paragraphs: list[str] = field(default_factory=list)

    def entries(self) -> list[str]:
        return self.items or self.subheadings or self.paragraphs


class _MarkdownWalker:
    """One pass over markdown-it's token stream, filling a SessionContent."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.content = SessionContent()
        self.sections: list[_Section] = []
        self.current = _Section(kind=None, level=0)
        self.heading: str | None = None
        self.intro: str | None = None  # the first paragraph before any section: a fallback summary
        self.list_depth = 0
        self.item_parts: list[str] | None = None
        self.pending_subheading: int | None = None

    def walk(self, tokens: list[Token]) -> SessionContent:
        for index, token in enumerate(tokens):
            if token.type == "heading_open":
                self._heading(token, tokens[index + 1])
            elif token.type in ("bullet_list_open", "ordered_list_open"):
                self.list_depth += 1
            elif token.type in ("bullet_list_close", "ordered_list_close"):
                self.list_depth -= 1
            elif token.type == "list_item_open" and self.list_depth == 1:
                self.item_parts = []
            elif token.type == "list_item_close" and self.list_depth == 1:
                self._end_item()
            elif token.type == "inline" and tokens[index - 1].type == "paragraph_open":
                self._paragraph(inline_text(token))
            elif token.type in ("fence", "code_block"):
                self._code(token)
        self._close_section()
        self._finish()
        return self.content

    def _heading(self, token: Token, inline: Token) -> None:
        text = inline_text(inline)
        level = int(token.tag[1:])
        kind = heading_kind(text)
        if self.content.title is None and level == 1 and kind is None and not self.content.headings:
            self.content.title = text
            return
        self.heading = text
        if text:
            self.content.headings.append(text)
        if kind is not None or level <= self.current.level:
            self._close_section()
            self.current = _Section(kind=kind, level=level if kind else 0)
        elif self.current.kind is not None:
            self.current.subheadings.append(text)
            self.pending_subheading = len(self.current.subheadings) - 1

    def _paragraph(self, text: str) -> None:
        if not text:
            return
        if self.item_parts is not None:
            self.item_parts.append(text)
            return
        self.content.text.append(text)
        if self.current.kind is None:
            if self.intro is None and not self.sections:
                self.intro = text
            return
        if self.pending_subheading is not None:
            index = self.pending_subheading
            self.current.subheadings[index] = f"{self.current.subheadings[index]}: {text}"
            self.pending_subheading = None
        self.current.paragraphs.append(text)

    def _end_item(self) -> None:
        parts, self.item_parts = self.item_parts or [], None
        entry = _TASK_BOX.sub("", "; ".join(parts)).strip()
        if not entry:
            return
        self.content.text.append(entry)
        if self.current.kind is not None:
            self.current.items.append(entry)

    def _code(self, token: Token) -> None:
        language, file = parse_fence_info(token.info) if token.type == "fence" else (None, None)
        code = token.content
        if code.strip():
            self.content.code.append(CodeBlock(language, file, code, self.heading, self.source))

    def _close_section(self) -> None:
        if self.current.kind is not None:
            self.sections.append(self.current)
        self.pending_subheading = None

    def _finish(self) -> None:
        for section in self.sections:
            if section.kind == "summary":
                self.content.summary = self.content.summary or " ".join(section.paragraphs or section.items) or None
            elif section.kind is not None and not self.content.entries(section.kind):
                self.content.entries(section.kind).extend(section.entries())
        self.content.summary = self.content.summary or self.intro


def inline_text(token: Token) -> str:
    """The readable text of an inline token: markup dropped, link text kept, code spans kept with their
    backticks (a decision about `retry_after` must still say which word is code)."""
    if not token.children:
        return token.content.strip()
    parts: list[str] = []
    for child in token.children:
        if child.type == "code_inline":
            fence = child.markup or "`"
            padding = " " if child.content.startswith("`") or child.content.endswith("`") else ""
            parts.append(f"{fence}{padding}{child.content}{padding}{fence}")
        elif child.type in ("text", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return " ".join("".join(parts).split())


def parse_markdown(text: str, source: str, warnings: list[str]) -> SessionContent:
    """A markdown summary: title (first h1), summary, the four list sections, code blocks."""
    reporter = Reporter(source)
    document = parse_document(text, reporter)
    warnings.extend(f"{source}: {f.message}" for f in reporter.findings)
    content = _MarkdownWalker(source).walk(_MD.parse(document.body))
    meta = document.metadata
    content.title = _text(meta.get("title")) or content.title
    content.summary = _text(meta.get("summary")) or _text(meta.get("description")) or content.summary
    content.references = references(document.body)
    return content


def references(text: str) -> set[str]:
    found = {match.lower() for match in _REFERENCE.findall(text)}
    return set(sorted(found)[:MAX_REFERENCES])


def _text(value: Any) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


# -- JSON packs -----------------------------------------------------------------------------

_PACK_FIELDS: dict[str, tuple[str, ...]] = {
    "title": ("title", "session_title", "name", "session_name"),
    "summary": ("summary", "session_summary", "overview", "tldr", "description", "context_summary"),
    "decisions": ("decisions", "key_decisions", "architectural_decisions", "design_decisions"),
    "implementations": (
        "implementations",
        "implementation",
        "what_was_built",
        "implemented",
        "changes",
        "deliverables",
        "completed",
    ),
    "challenges": ("challenges", "problems", "blockers", "issues", "obstacles", "problems_encountered"),
    "next_steps": ("next_steps", "follow_ups", "followups", "follow_up", "todo", "todos", "future_work"),
    "code": ("code_blocks", "code", "code_snippets", "snippets", "key_code"),
    "references": ("patterns_used", "patterns", "skills_used", "skills", "pattern_ids", "reused_patterns"),
}
_NESTED_PACKS = ("finalization_pack", "pack", "session", "content")
_ENTRY_HEAD = ("title", "name", "decision", "what", "summary", "description", "text", "item", "task", "problem")
_ENTRY_TAIL = ("rationale", "reason", "why", "details", "solution", "resolution", "impact", "notes", "file", "path")


def snake_case(key: str) -> str:
    """`compressionMetrics` and `compression-metrics` -> `compression_metrics`."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", key).replace("-", "_").replace(" ", "_").lower()


def snake_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {snake_case(str(k)): snake_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    return value


def parse_pack(data: Any, source: str, warnings: list[str]) -> SessionContent:
    """A finalization pack's JSON (already decoded), in camelCase or snake_case."""
    content = SessionContent()
    if not isinstance(data, dict):
        warnings.append(f"{source}: expected a JSON object, found {_json_kind(data)}; its content was skipped")
        return content
    pack = snake_keys(data)
    for nested in _NESTED_PACKS:
        if isinstance(pack.get(nested), dict):
            pack = {**pack[nested], **{k: v for k, v in pack.items() if k != nested}}
    content.title = _first_text(pack, "title")
    content.summary = _summary_text(_first(pack, "summary"))
    for kind in LIST_KINDS:
        value = _first(pack, kind)
        if value is not None:
            content.entries(kind).extend(_entries(value, f"{source}: {kind}", warnings))
    content.code = _pack_code(_first(pack, "code"), source, warnings)
    mentioned = _first(pack, "references")
    listed = {str(v).lower() for v in mentioned if isinstance(v, str)} if isinstance(mentioned, list) else set()
    content.text = list(_strings(pack))[:2000]
    content.references = listed | references("\n".join(content.text))
    return content


def _first(pack: dict[str, Any], field_name: str) -> Any:
    return next((pack[key] for key in _PACK_FIELDS[field_name] if pack.get(key) not in (None, "", [], {})), None)


def _first_text(pack: dict[str, Any], field_name: str) -> str | None:
    value = _first(pack, field_name)
    return value.strip() or None if isinstance(value, str) else None


def _summary_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, dict | list):
        return " ".join(_strings(value)).strip() or None
    return None


def _entries(value: Any, where: str, warnings: list[str]) -> list[str]:
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, dict):  # {"auth": "JWT in cookies"} -> "auth: JWT in cookies"
        return [f"{k}: {_entry(v)}" for k, v in value.items() if _entry(v)]
    if not isinstance(value, list):
        warnings.append(f"{where} should be a list of strings or objects, found {_json_kind(value)}; ignored")
        return []
    return [text for text in (_entry(item) for item in value) if text]


def _entry(item: Any) -> str:
    """A string entry as is; an object as its headline plus its rationale ("Use RS256 — rotation")."""
    if isinstance(item, str):
        return item.strip()
    if isinstance(item, int | float) and not isinstance(item, bool):
        return str(item)
    if isinstance(item, dict):
        head = next((str(item[k]).strip() for k in _ENTRY_HEAD if isinstance(item.get(k), str | int | float)), "")
        tail = [str(item[k]).strip() for k in _ENTRY_TAIL if isinstance(item.get(k), str) and item[k].strip()]
        if head or tail:
            return " — ".join([p for p in [head, *tail] if p])
        return json.dumps(item, ensure_ascii=False, separators=(", ", ": "))
    if isinstance(item, list):
        return "; ".join(text for text in (_entry(i) for i in item) if text)
    return ""


def _pack_code(value: Any, source: str, warnings: list[str]) -> list[CodeBlock]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    blocks: list[CodeBlock] = []
    for item in items:
        if isinstance(item, str) and item.strip():
            blocks.append(CodeBlock(None, None, item, None, source))
        elif isinstance(item, dict):
            code = next((item[k] for k in ("code", "content", "source", "snippet") if isinstance(item.get(k), str)), "")
            if not code.strip():
                warnings.append(f"{source}: a code entry without code was skipped")
                continue
            file = next(
                (item[k] for k in ("file", "filename", "file_name", "path") if isinstance(item.get(k), str)), None
            )
            language = next((item[k] for k in ("language", "lang") if isinstance(item.get(k), str)), None)
            language = language or (language_of_file(file) if file else None)
            blocks.append(CodeBlock(language.lower() if language else None, file, code, None, source))
        else:
            warnings.append(f"{source}: a code entry of type {_json_kind(item)} was skipped")
    return blocks


def _strings(value: Any) -> Iterable[str]:
    """Every string leaf of a JSON value, for the search index."""
    if isinstance(value, str):
        if value.strip():
            yield value.strip()
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _json_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"
