"""The words of a text or a query, as every full-text index here reads them.

A word is a run of letters and digits; an underscore, a hyphen, a dot or a slash separates words,
and a camelCase word also counts as its parts. A query's stop words are dropped, and what is left
becomes an FTS5 expression of quoted strings, so no query syntax leaks through. The skill index
(library/index/query.py adds synonyms, spellings and abbreviations) and the session index share this.
"""

from __future__ import annotations

import re

WORD = re.compile(r"\w+", re.UNICODE)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

_STOPWORDS_TEXT = """a an and are as at be by can do does for from how i in into is it its me my of on or our so
    that the
    their them then there these this to use using want was we what when where which who why will with would
    you your need needs should could get"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


def split_word(raw: str) -> list[str]:
    """The parts of a camelCase word ('useTransition' -> ['use', 'transition']); [] if it has none."""
    if raw.islower():  # no capital, so no part: most words, told in one call rather than a regex split
        return []
    parts = [p.lower() for p in _CAMEL.split(raw) if p]
    return parts if len(parts) > 1 else []


def words_of(query: str) -> list[tuple[str, list[str]]]:
    """(word, camelCase parts) in query order; hyphens, dots and slashes separate words."""
    pieces = [piece for raw in WORD.findall(query) for piece in raw.split("_") if piece]
    return [(piece.lower(), split_word(piece)) for piece in pieces]


def word_parts(text: str) -> list[str]:
    """Every word of `text`, lower case, a camelCase word as its parts ('loadSkill' -> ['load', 'skill'])."""
    return [part for word, parts in words_of(text) for part in (parts or [word])]


def query_terms(query: str) -> list[str]:
    """The words of a natural-language query worth matching: no stop words, no duplicates."""
    words = [w for w, _ in words_of(query)]
    meaningful = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(meaningful))[:32]


def match_expression(terms: list[str]) -> str | None:
    """Terms as an FTS5 OR-expression of quoted strings, so no FTS syntax from a query leaks through."""
    return " OR ".join(f'"{w}"' for w in terms) if terms else None
