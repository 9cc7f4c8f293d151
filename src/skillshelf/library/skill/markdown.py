"""Markdown structure via markdown-it-py: headings, first paragraph, bold fields, tables.

Two module-level parsers: a block-only one for indexing documents (inline parsing is most of
markdown-it's cost and the index needs only block structure), and a full one with tables for
the small metadata files whose bold fields and breakdown table are inline structure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

_BLOCKS = MarkdownIt("commonmark")
_BLOCKS.core.ruler.disable(["inline", "text_join"])
# Lists, quotes, HTML blocks and link definitions only nest what the outline needs; without them a
# heading or fence inside a list is still seen, and parsing is 2-3x faster (measured on the corpora).
_BLOCKS.block.ruler.disable(["list", "blockquote", "html_block", "reference"])
_FULL = MarkdownIt("commonmark").enable("table")

_MARKUP = re.compile(r"[*_`]+|!?\[([^\]]*)\]\([^)]*\)")
_SPACE = re.compile(r"\s+")


def plain(text: str) -> str:
    """Inline markdown reduced to readable text (emphasis and link targets dropped)."""
    return _SPACE.sub(" ", _MARKUP.sub(lambda m: m.group(1) or "", text)).strip()


@dataclass
class DocumentOutline:
    title: str | None = None
    first_paragraph: str | None = None
    headings: list[str] = field(default_factory=list)
    code_languages: list[str] = field(default_factory=list)
    word_count: int = 0


def outline(body: str) -> DocumentOutline:
    result = DocumentOutline(word_count=len(body.split()))
    tokens = _BLOCKS.parse(body)
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            text = plain(tokens[index + 1].content)
            if token.tag == "h1" and result.title is None:
                result.title = text
            elif text:
                result.headings.append(text)
        elif token.type == "paragraph_open" and result.first_paragraph is None and token.level == 0:
            result.first_paragraph = plain(tokens[index + 1].content)
        elif token.type in ("fence", "code_block"):
            result.code_languages.append(token.info.split(maxsplit=1)[0] if token.info.strip() else "")
    return result


def bold_fields(text: str) -> dict[str, tuple[str, int]]:
    """`**Label:** value` lines (the seed's metadata style) -> {label: (value, line)}.

    Also accepts `**Label**: value`. Labels are lower-cased.
    """
    fields: dict[str, tuple[str, int]] = {}
    for token in _FULL.parse(text):
        if token.type != "inline" or not token.children:
            continue
        line = (token.map[0] + 1) if token.map else 0
        label: str | None = None
        value: list[str] = []
        in_bold = False
        for child in token.children:
            if child.type == "strong_open":
                _store(fields, label, value, line)
                label, value, in_bold = "", [], True
            elif child.type == "strong_close":
                in_bold = False
            elif child.type in ("softbreak", "hardbreak"):
                _store(fields, label, value, line)
                label, value = None, []
                line += 1
            elif in_bold and label is not None:
                label += child.content
            elif label is not None:
                value.append(child.content)
        _store(fields, label, value, line)
    return fields


def _store(fields: dict[str, tuple[str, int]], label: str | None, value: list[str], line: int) -> None:
    if label is None:
        return
    joined = "".join(value).strip()
    if label.rstrip().endswith(":"):
        key = label.rstrip()[:-1]
    elif joined.startswith(":"):
        key, joined = label, joined[1:].strip()
    else:
        return
    if key.strip() and joined:
        fields.setdefault(key.strip().lower(), (joined, line))


def section_table(text: str, heading: str) -> tuple[list[list[str]], int] | None:
    """The first table after the heading whose text equals `heading` (case-insensitive)."""
    tokens = _FULL.parse(text)
    seen_heading = False
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            seen_heading = tokens[index + 1].content.strip().lower() == heading.lower()
        elif token.type == "table_open" and seen_heading:
            return _table_rows(tokens, index), (token.map[0] + 1 if token.map else 0)
    return None


def _table_rows(tokens: list[Token], start: int) -> list[list[str]]:
    rows: list[list[str]] = []
    current: list[str] = []
    for token in tokens[start:]:
        if token.type == "table_close":
            break
        if token.type == "tr_open":
            current = []
        elif token.type == "inline":
            current.append(plain(token.content))
        elif token.type == "tr_close":
            rows.append(current)
    return rows[1:]  # drop the header row
