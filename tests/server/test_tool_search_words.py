"""Tool search (a view's `{view}_search_tools`) reads words as skill search does: the same stop words, the same
camelCase split and the same Porter stems (library/index/query.py, library/skill/duplicates.py)."""

from __future__ import annotations

from mcp.server.mcpserver.tools.base import Tool

from skillshelf.config.views import ViewSettings
from skillshelf.library.indexing.terms import STOPWORDS, word_parts
from skillshelf.server.views import MIN_SCORE, ViewTool, match_score, present


async def _noop() -> str:
    return ""


def tool(name: str, description: str) -> ViewTool:
    return present(Tool.from_function(_noop, name=name, description=description), ViewSettings())


def test_a_word_matches_another_of_its_porter_stem() -> None:
    """ "statistical" and "statistics" share the stem "statist"; the hand-written suffix list missed it."""
    stats = tool("getLibraryStats", "Library statistics: how many skills, categories and uses.")
    coverage, _ = match_score("statistical overview", stats)
    assert coverage >= MIN_SCORE


def test_the_words_are_the_skill_searchs() -> None:
    assert word_parts("loadSkill the HTTPServer") == ["load", "skill", "the", "http", "server"]
    assert {"the", "a", "how"} <= STOPWORDS
    notes = tool("addNote", "Record a decision in the project's notes.")
    assert match_score("how to record", notes) == match_score("record", notes)  # stop words count for nothing
