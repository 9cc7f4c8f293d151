"""Markdown structure via markdown-it-py: headings, first paragraph, blocks, bold fields, tables.

Two module-level parsers: a block-only one for a document's structure (inline parsing is most of
markdown-it's cost and only block structure is needed), and a full one with tables for the small
metadata files whose bold fields and breakdown table are inline structure.

The block-only parser is the one reader of a document's structure: the index's outline (headings,
first paragraph, code blocks) and the blocks that paging and `section=` cut between (`blocks`, from
the tokens' line maps) come from the same tokens, so a heading the index sees (setext `Usage\n====`
included) is a section loadSkill serves, and a `#` line in a fence is neither.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import accumulate

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
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # a line as markdown-it counts them
_TABLE_ROW = re.compile(r"^ {0,3}\|")


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


@dataclass(frozen=True)
class MarkdownBlock:
    """One top-level block of a document: a heading, a paragraph (a list, a quote, a table), a fence."""

    start: int  # character offsets into the document
    end: int
    level: int = 0  # 1-6 for a heading, 0 otherwise
    title: str = ""  # a heading's text, as the outline has it
    whole: bool = False  # a code fence, an indented code block or a table: never cut inside


def outline(body: str) -> DocumentOutline:
    result = DocumentOutline(word_count=len(body.split()))
    tokens = _BLOCKS.parse(body)
    for index, token in enumerate(tokens):
        if token.type == "heading_open":
            text = _heading_title(tokens, index)
            if token.tag == "h1" and result.title is None:
                result.title = text
            elif text:
                result.headings.append(text)
        elif token.type == "paragraph_open" and result.first_paragraph is None and token.level == 0:
            result.first_paragraph = plain(tokens[index + 1].content)
        elif token.type in ("fence", "code_block"):
            result.code_languages.append(token.info.split(maxsplit=1)[0] if token.info.strip() else "")
    return result


def blocks(text: str) -> list[MarkdownBlock]:
    """The document's top-level blocks in order, from the same tokens the outline reads (their line maps).

    Blank lines between blocks belong to no block; a caller that tiles the text extends blocks over them.
    """
    lines = [match.group() for match in _LINE.finditer(text)]
    starts = [0, *accumulate(len(line) for line in lines)]
    tokens = _BLOCKS.parse(text)
    found: list[MarkdownBlock] = []
    for index, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        first, last = token.map
        start, end = starts[min(first, len(lines))], starts[min(last, len(lines))]
        if token.type == "heading_open":
            found.append(MarkdownBlock(start, end, int(token.tag[1:]), _heading_title(tokens, index)))
        else:
            opening = lines[first] if first < len(lines) else ""
            whole = token.type in ("fence", "code_block") or bool(_TABLE_ROW.match(opening))
            found.append(MarkdownBlock(start, end, whole=whole))
    return found


def _heading_title(tokens: list[Token], index: int) -> str:
    """A heading's text (the inline token after its heading_open) as readable text."""
    return plain(tokens[index + 1].content)


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
