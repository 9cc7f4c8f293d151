"""Minification and paging of skill markdown: fences and tables are never touched or cut."""

from __future__ import annotations

import itertools

import pytest

from skillshelf.skills import minify
from skillshelf.skills.minify import (
    cut,
    find_section,
    heading_path,
    minify_markdown,
    section_paths,
    split_blocks,
)

FENCED = """# Title

Intro paragraph.

```python
x = 1<SP>

<!-- not a comment here -->


y = 2
```

| a  | b |<SP>
|----|---|
| 1  | 2 |<SP>

## Usage

Text.
""".replace("<SP>", "   ")  # trailing spaces, written visibly


def test_comments_badges_trailing_spaces_and_blank_runs_go() -> None:
    text = (
        "# Tool   \n"
        "[![CI](https://github.com/x/y/actions/workflows/ci.yml/badge.svg)](https://github.com/x/y)"
        " ![PyPI](https://img.shields.io/pypi/v/x)\n"
        "\n\n\n"
        "Keep this.<!-- drop this --> And this.  \n"
        "<!--\nmulti\nline\n-->\n"
        "![diagram](docs/flow.png)\n"
        "\n\n"
        "End.\r\n"
    )
    assert minify_markdown(text) == "# Tool\n\nKeep this. And this.\n![diagram](docs/flow.png)\n\nEnd.\n"


def test_fences_and_tables_are_copied_byte_for_byte() -> None:
    out = minify_markdown(FENCED)
    fence = FENCED[FENCED.index("```python") : FENCED.index("```\n\n|") + 3]
    table = FENCED[FENCED.index("| a") : FENCED.index("## Usage") - 1]
    assert fence in out and table in out
    assert "x = 1   \n\n<!-- not a comment here -->\n\n\ny = 2" in out


def test_an_unclosed_fence_protects_the_rest_of_the_document() -> None:
    text = "Intro  \n\n~~~~\ncode  \n\n\n<!-- c -->\n"
    assert minify_markdown(text) == "Intro\n\n~~~~\ncode  \n\n\n<!-- c -->\n"


def test_a_shorter_or_different_marker_does_not_close_a_fence() -> None:
    text = "````md\n```\n<!-- inside -->\n~~~\n````\n<!-- outside -->\nafter\n"
    assert minify_markdown(text) == "````md\n```\n<!-- inside -->\n~~~\n````\nafter\n"


def test_blocks_tile_the_document_and_keep_a_fence_whole() -> None:
    doc = minify_markdown(FENCED)
    blocks = split_blocks(doc)
    assert blocks[0].start == 0 and blocks[-1].end == len(doc)
    assert all(a.end == b.start for a, b in itertools.pairwise(blocks))
    fences = [b for b in blocks if doc[b.start :].startswith("```python")]
    assert len(fences) == 1 and "y = 2\n```" in doc[fences[0].start : fences[0].end]


@pytest.mark.parametrize("budget", range(0, 400, 7))
def test_a_cut_never_lands_inside_a_fence_or_a_table(budget: int) -> None:
    doc = minify_markdown(FENCED * 3)
    blocks = split_blocks(doc)
    stop = cut(doc, blocks, 0, len(doc), lambda at: at <= budget)
    assert stop <= max(budget, 0)
    kept = doc[:stop]
    assert kept.count("```") % 2 == 0  # every fence that starts in the part also ends in it
    assert not kept.rstrip("\n").endswith("| a  | b |")  # a table is not split from its rows
    # a block's end, else (no prose in the part yet) a line, sentence or word end of the next paragraph
    assert stop in {b.end for b in blocks} | {0} or (doc[stop - 1].isspace() and not doc[:stop].endswith("```\n"))


def test_a_long_list_is_cut_between_lines_when_no_block_fits() -> None:
    doc = "".join(f"- item {i} with some words\n" for i in range(20)) + "\n```\n" + "code\n" * 20 + "```\n"
    blocks = split_blocks(doc)
    stop = cut(doc, blocks, 0, len(doc), lambda at: at <= 100)
    assert 0 < stop <= 100 and doc[:stop].endswith("\n") and doc[:stop].count("\n") == 4
    fence = blocks[-1]
    assert fence.whole and cut(doc, blocks, fence.start, len(doc), lambda at: at - fence.start <= 50) == fence.start


def test_heading_paths_and_sections() -> None:
    doc = "# A\n\nintro\n\n## B\n\nb text\n\n### C\n\nc text\n\n## D\n\nd text\n"
    blocks = split_blocks(doc)
    assert section_paths(blocks) == ["A", "A > B", "A > B > C", "A > D"]
    assert [heading_path(b) for b in blocks if b.level] == section_paths(blocks)
    start, end = find_section(blocks, "a > b") or (0, 0)
    assert doc[start:end] == "## B\n\nb text\n\n### C\n\nc text\n\n"
    start, end = find_section(blocks, "C") or (0, 0)  # a path's last part is enough
    assert doc[start:end] == "### C\n\nc text\n\n"
    assert find_section(blocks, "A / D") is not None
    assert find_section(blocks, "Z") is None
    assert section_paths(blocks, start, end) == ["A > B > C"]


def test_a_hash_line_inside_a_fence_is_not_a_heading() -> None:
    doc = "# Real\n\n```sh\n# a shell comment\n```\n"
    assert section_paths(split_blocks(doc)) == ["Real"]


def test_the_patterns_only_skip_lines_that_cannot_match_them() -> None:
    # Each pattern runs only on a line holding its needed character (issue 36, H78); these are the lines
    # where that shortcut could go wrong: whitespace other than spaces, a lone carriage return, a badge
    # or a comment alone on its line, a table after an indent, a fence after a comment.
    text = (
        "# T\r\n\u00a0\u2003\r  |a|b|  \r![x](https://img.shields.io/y) <!-- c -->\n"
        "keep ![pic](a.png)  \n<!-- a\nb --> ```\n\t\n```py\n  code  \n```\n\x0b\nend"
    )

    # the comment's rest opens a fence, so the tab line after it is copied as written
    assert minify_markdown(text) == "# T\n\n  |a|b|  \nkeep ![pic](a.png)\n ```\n\t\n```py\n  code  \n```\n\nend\n"


def test_only_a_line_holding_the_fences_character_is_checked_as_its_close(monkeypatch: pytest.MonkeyPatch) -> None:
    # A close check for each line of a fence was a tenth of minifying a document (issue 36, H93): a line
    # without the fence's character cannot close it. The closes that must still be seen: an indented one,
    # a longer one, one with trailing blanks; the ones that must not: a shorter marker, the other character.
    checked: list[str] = []
    closes = minify._fence_closes

    def counted(line: str, opener: str) -> bool:
        checked.append(line)
        return closes(line, opener)

    monkeypatch.setattr(minify, "_fence_closes", counted)
    text = "```py\nx = 1\n\ny = 2\n``\n~~~\n   `````  \nafter\n~~~~\ncode\n\n~~~ x\n  ~~~~~\nend  \n"
    assert (
        minify.minify_markdown(text)
        == "```py\nx = 1\n\ny = 2\n``\n~~~\n   `````  \nafter\n~~~~\ncode\n\n~~~ x\n  ~~~~~\nend\n"
    )
    assert checked == ["``", "   `````  ", "~~~ x", "  ~~~~~"]  # not "x = 1", "", "~~~" (the other character)
