"""One reader of a document's structure (issue 30): the sections paging and `section=` cut by are the
headings the index sees, setext headings included, and no `#` line in a fence or the front matter is one."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from skillshelf.library.access.reader import ViewReader
from skillshelf.library.skill.markdown import outline
from skillshelf.skills import service
from skillshelf.skills.minify import find_section, minify_markdown, section_paths, split_blocks
from skillshelf.skills.models import SkillLoad
from tests.conftest import agent_skill, synced_library

SETEXT = "Usage\n=====\n\nHow to use it.\n\nOptions\n-------\n\n- `--fast`: go fast\n\nAfter options.\n"
FENCES = (
    "# Real\n\n"
    "```sh\n# a shell comment\n## another\n```\n\n"
    "~~~md\n```\n# inside a tilde fence\n```\n~~~\n\n"
    "    # an indented code block\n\n"
    "## Second\n\ntext\n"
)
MIXED = "Intro text\nStill intro\n---\n\n### Deep `code` *title*\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nEnd\r\n===\r\n"
DOCUMENTS = [SETEXT, FENCES, MIXED, "no headings at all\n", "", "```\n# unclosed fence\n"]


def outline_titles(doc: str) -> list[str]:
    """Every heading the index's outline sees (its title is the first h1, wherever it stands), sorted."""
    shape = outline(doc)
    return sorted(([shape.title] if shape.title else []) + shape.headings)


@pytest.mark.parametrize("doc", DOCUMENTS)
def test_the_splitter_sees_exactly_the_headings_the_index_sees(doc: str) -> None:
    blocks = split_blocks(doc)
    assert sorted(b.path[-1] for b in blocks if b.level) == outline_titles(doc)
    if doc:
        assert blocks[0].start == 0 and blocks[-1].end == len(doc)
        assert all(a.end == b.start for a, b in itertools.pairwise(blocks))


def test_setext_headings_are_sections() -> None:
    blocks = split_blocks(SETEXT)
    assert section_paths(blocks) == ["Usage", "Usage > Options"]
    start, end = find_section(blocks, "Options") or (0, 0)
    assert SETEXT[start:end] == "Options\n-------\n\n- `--fast`: go fast\n\nAfter options.\n"


def test_hash_lines_in_fences_and_code_blocks_are_not_headings_and_fences_stay_whole() -> None:
    blocks = split_blocks(FENCES)
    assert section_paths(blocks) == ["Real", "Real > Second"]
    whole = [FENCES[b.start : b.end].strip() for b in blocks if b.whole]
    assert whole[0] == "```sh\n# a shell comment\n## another\n```"
    assert whole[1].startswith("~~~md") and whole[1].endswith("~~~")
    assert whole[2] == "# an indented code block"


def test_markup_in_a_heading_matches_with_or_without_it() -> None:
    blocks = split_blocks(MIXED)
    assert section_paths(blocks) == ["Intro text Still intro", "Intro text Still intro > Deep code title", "End"]
    assert find_section(blocks, "Deep `code` *title*") == find_section(blocks, "deep code title") is not None


def test_load_skill_serves_a_setext_section_of_a_skill_with_front_matter(tmp_path: Path) -> None:
    root = tmp_path / "library"
    frontmatter = "name: setext\ndescription: A skill with setext headings.\n# a YAML comment, not a heading"
    body = "Usage\n=====\n\nRun it.\n\n```sh\n# not a section\n```\n\n" + SETEXT
    agent_skill(root, "docs", "setext", frontmatter, body)
    with synced_library(root, tmp_path / "idx") as library:
        reader = ViewReader(library, [])
        indexed = reader.find("docs/setext")
        loaded = service.load_for_agent(reader, "docs/setext", section="Options")
        assert loaded.documentation.startswith("Options\n-------\n") and "After options." in loaded.documentation
        assert isinstance(loaded, SkillLoad) and loaded.section == "Usage > Options"
        served = minify_markdown(reader.documentation(indexed) or "")
        assert sorted(b.path[-1] for b in split_blocks(served) if b.level) == outline_titles(served)
