"""Safe minification and paging of a skill's markdown: pure functions, no I/O.

Minification drops only what an agent never needs: HTML comments, badge images, trailing spaces and
runs of blank lines. Code fences and tables are copied byte for byte. Paging splits the document
into blocks (a paragraph, a list, a table, a whole code fence, a heading; read by markdown-it in
library/skill/markdown.py, as the index reads it) and cuts only between blocks, so a fence is never
cut; every block knows its heading path ("Usage > Options").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from skillshelf.library.skill import markdown

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
TABLE_LINE = re.compile(r"^\s*\|")
# A badge: an image whose address is a badge service or has "badge" in it, optionally wrapped in a link.
BADGE = re.compile(
    r"\[!\[[^\]]*\]\((?:[^)\s]*(?:shields\.io|badge|badgen\.net)[^)\s]*)[^)]*\)\]\([^)]*\)"
    r"|!\[[^\]]*\]\((?:[^)\s]*(?:shields\.io|badge|badgen\.net)[^)\s]*)[^)]*\)",
    re.IGNORECASE,
)
PATH_SEPARATOR = " > "


def _fence_closes(line: str, opener: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(opener[0] * len(opener)) and set(stripped) <= {opener[0]}


def minify_markdown(text: str) -> str:
    """The document without comments, badges, trailing spaces and repeated blank lines.

    Lines inside code fences and table rows are kept exactly as written. A first load minifies its
    document, so each pattern runs only on a line that holds its one needed character (issue 36: a
    regular expression and a call for every line were a fifth of a first load).
    """
    out: list[str] = []
    opener: str | None = None  # the fence being copied, if any
    in_comment = False
    blank = False
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    for raw in text.split("\n"):
        line = raw
        closed_comment = False
        if opener is not None:
            out.append(line)
            # Only a line holding the fence's character can close it: a call for each line of a fence was
            # a tenth of minifying a document (issue 36, H93).
            if opener[0] in line and _fence_closes(line, opener):
                opener = None
            continue
        if in_comment:
            end = line.find("-->")
            if end < 0:
                continue
            in_comment = False
            closed_comment = True
            line = line[end + 3 :]
        fence = FENCE.match(line) if ("`" in line or "~" in line) else None
        if fence:
            opener = fence.group(1)
            out.append(line)
            blank = False
            continue
        if "|" in line and TABLE_LINE.match(line):
            out.append(line)
            blank = False
            continue
        had_content = closed_comment or (line != "" and not line.isspace())
        line, in_comment = _cleaned(line)
        if not line:
            if had_content:  # a line of comments or badges only: drop it without leaving a blank
                continue
            if blank or not out:
                continue
            blank = True
            out.append("")
            continue
        blank = False
        out.append(line)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out) + ("\n" if out else "")


def _cleaned(line: str) -> tuple[str, bool]:
    """The line without comments, badges and trailing spaces; True when a comment is left open at its end."""
    in_comment = False
    if "<!--" in line:
        line, in_comment = _strip_comments(line)
    if "![" in line:  # every badge is an image
        line = BADGE.sub("", line)
    return line.rstrip(), in_comment


def _strip_comments(line: str) -> tuple[str, bool]:
    """Remove `<!-- ... -->` from a line; True when a comment is left open at its end."""
    while True:
        start = line.find("<!--")
        if start < 0:
            return line, False
        end = line.find("-->", start + 4)
        if end < 0:
            return line[:start], True
        line = line[:start] + line[end + 3 :]


@dataclass(frozen=True)
class Block:
    start: int  # character offsets into the document
    end: int
    path: tuple[str, ...]  # heading path in force at this block (a heading's own path includes it)
    level: int = 0  # 1-6 for a heading block, 0 otherwise
    whole: bool = False  # a code fence or a table: never split


def split_blocks(text: str) -> list[Block]:
    """The document's blocks (library/skill/markdown.py `blocks`: the index's own reading of it), each with
    its heading path, tiling the whole text."""
    found: list[Block] = []
    stack: list[tuple[int, str]] = []
    for block in markdown.blocks(text):
        if block.level:
            while stack and stack[-1][0] >= block.level:
                stack.pop()
            stack.append((block.level, block.title))
        found.append(Block(block.start, block.end, tuple(title for _, title in stack), block.level, block.whole))
    return _absorb_gaps(found, len(text))


def _absorb_gaps(blocks: list[Block], length: int) -> list[Block]:
    """Extend each block over the blank lines after it, so blocks tile the whole document."""
    tiled: list[Block] = []
    for i, block in enumerate(blocks):
        start = 0 if i == 0 else block.start
        end = blocks[i + 1].start if i + 1 < len(blocks) else length
        tiled.append(Block(start, end, block.path, block.level, block.whole))
    return tiled


def heading_path(block: Block) -> str:
    return PATH_SEPARATOR.join(block.path)


def find_section(blocks: list[Block], wanted: str) -> tuple[int, int] | None:
    """The (start, end) of the section whose heading path is `wanted`, or whose path ends with it.

    Matching ignores case and the spaces around separators (`>` or `/`). A full path wins over a
    suffix; among suffix matches the first in the document wins.
    """
    target = _path_key(wanted)
    if not target:
        return None
    headings = [b for b in blocks if b.level]
    chosen = next((b for b in headings if _path_key_of(b.path) == target), None)
    if chosen is None:
        chosen = next((b for b in headings if _path_key_of(b.path)[-len(target) :] == target), None)
    if chosen is None:
        return None
    index = blocks.index(chosen)
    end = next((b.start for b in blocks[index + 1 :] if b.level and b.level <= chosen.level), blocks[-1].end)
    return chosen.start, end


def _path_key(path: str) -> tuple[str, ...]:
    """The wanted path's parts as the outline writes a heading (markup dropped), lower-cased."""
    parts = re.split(r"\s*(?:>|/)\s*", path.strip().lower())
    return tuple(markdown.plain(part.strip(" #")) for part in parts if markdown.plain(part.strip(" #")))


def _path_key_of(path: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(part.lower() for part in path)


def top_sections(blocks: list[Block], start: int, end: int, limit: int) -> list[str]:
    """The titles of the highest-level headings that begin within [start, end), at most `limit`."""
    headings = [b for b in blocks if b.level and start <= b.start < end]
    if not headings:
        return []
    top = min(b.level for b in headings)
    return [b.path[-1] for b in headings if b.level == top][:limit]


def section_paths(blocks: list[Block], start: int = 0, end: int | None = None) -> list[str]:
    """The heading paths of the headings that begin within [start, end)."""
    stop = blocks[-1].end if end is None and blocks else (end or 0)
    return [heading_path(b) for b in blocks if b.level and start <= b.start < stop]


def cut(text: str, blocks: list[Block], start: int, end: int, fits: Callable[[int], bool]) -> int:
    """The furthest block boundary `stop` in (start, end] with `fits(stop)`; `start` when none fits.

    `fits` must be monotone (a longer part never fits when a shorter one does not). Blocks that end
    before `start` are skipped; a section's end may fall between blocks and is a boundary too. When
    the part would hold no prose yet (nothing, or headings alone) and the next block is prose or a list
    (not a fence or a table), that block is cut where the budget ends: at a line or sentence end, else
    between words. A small budget then still carries the first paragraph's opening, not a bare title.
    """
    stop = start
    broken: Block | None = None
    for block in blocks:
        if block.end <= start or block.start >= end:
            continue
        block_end = min(block.end, end)
        if not fits(block_end):
            broken = block
            break
        stop = block_end
    prose_yet = stop > start and any(b.level == 0 and b.start < stop and b.end > start for b in blocks)
    if broken is not None and broken.level == 0 and not broken.whole and not prose_yet:
        stop = _fill(text, max(stop, broken.start), min(broken.end, end), fits)
    return stop


_LINE_OR_SENTENCE_END = re.compile(r"\n|[.!?;:][ \t]+")
_WORD_END = re.compile(r"[ \t\n]+")


def _fill(text: str, start: int, end: int, fits: Callable[[int], bool]) -> int:
    """The furthest line or sentence end in (start, end) with `fits`, else the furthest word end; `start`
    when none fits."""
    for boundary in (_LINE_OR_SENTENCE_END, _WORD_END):
        stop = start
        for match in boundary.finditer(text, start, end):
            if not fits(match.end()):
                break
            stop = match.end()
        if stop > start:
            return stop
    return start
