"""Each phrase's matches, read from FTS5 once and kept in memory: the ranked reads of a search computed from them.

FTS5's bm25() of a query is a sum over the query's phrases, in their order, of each phrase's own term (its IDF,
counted over the whole index, times a saturation of its weighted count in the row); a phrase a row lacks adds
exactly 0.0. So the term of every (phrase, row), read once from a query of that phrase alone, gives the bm25() of
any AND or OR of phrases to the last bit: summed in the query's phrase order from 0.0, as fts5_aux.c sums them.
Each statement that calls bm25() pays FTS5's set-up (each phrase's matches counted over the whole index) however
few rows it returns: that set-up, three or four statements a search, was most of a search's time (issue 36).

The postings are index data a query does not change; they are dropped on every write, as the document
frequencies are (`SkillIndex._forget_derived`), and bounded by rows held (least recently used first out).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter

NAME = 1  # where a phrase is in a row: its name ...
HEAD = 2  # ... its description, tags or headings ...
DESCRIPTION = 4  # ... its description
MAX_ROWS = 400_000  # rows held over every posting (about 100 bytes each), least recently used dropped past it
MAX_ASKED = 100_000  # expressions remembered as asked for (`Postings.asked`), all forgotten past it


@dataclass(frozen=True)
class Posting:
    """One phrase's matches: by rowid (ascending), its bm25() term (positive, under the index's field weights),
    and where the row holds it (`NAME`, `HEAD`, `DESCRIPTION` bits; rows holding it in the body alone absent)."""

    terms: dict[int, float]
    where: dict[int, int]

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, float, float, float, float]]) -> Posting:
        """From rows of (rowid, bm25 whole, bm25 name only, bm25 head only, bm25 description only) of a query
        of the phrase alone: bm25() is minus the sum, so a one-phrase query's is minus the phrase's term."""
        terms: dict[int, float] = {}
        where: dict[int, int] = {}
        for rowid, whole, in_name, in_head, in_description in rows:
            terms[rowid] = -whole
            bits = where_bits(in_name, in_head, in_description)
            if bits:
                where[rowid] = bits
        return cls(terms, where)


class Postings:
    """The postings read so far, by FTS5 expression (one phrase, with or without a column filter), least
    recently used first out past `max_rows` rows. The caller holds the index's lock."""

    def __init__(self, read: Callable[[str], Posting], max_rows: int = MAX_ROWS) -> None:
        self._read = read
        self._max_rows = max_rows
        self._held: OrderedDict[str, Posting] = OrderedDict()
        self._rows = 0
        self._asked: set[str] = set()

    def __len__(self) -> int:
        return len(self._held)

    @property
    def rows(self) -> int:
        return self._rows

    def clear(self) -> None:
        self._held.clear()
        self._rows = 0
        self._asked.clear()

    def holds(self, phrases: Iterable[str]) -> bool:
        return all(phrase in self._held for phrase in phrases)

    def has_room(self, rows: int) -> bool:
        """Whether `rows` more rows fit under the bound without dropping any held."""
        return self._rows + rows <= self._max_rows

    def asked(self, expression: str) -> bool:
        """Whether a search asked for `expression` before (`note`) since the postings were last emptied."""
        return expression in self._asked

    def note(self, expressions: Iterable[str]) -> None:
        """Remember that a search asked for these: which words recur decides which are worth reading whole."""
        if len(self._asked) > MAX_ASKED:
            self._asked.clear()
        self._asked.update(expressions)

    def get(self, phrase: str) -> Posting:
        posting = self._held.get(phrase)
        if posting is not None:
            self._held.move_to_end(phrase)
            return posting
        posting = self._read(phrase)
        self._held[phrase] = posting
        self._rows += len(posting.terms)
        while self._rows > self._max_rows and len(self._held) > 1:
            _, dropped = self._held.popitem(last=False)
            self._rows -= len(dropped.terms)
        return posting


def phrases(expression: str) -> list[str]:
    """The quoted phrases of a concept's expression (`Concept.expression`: one quoted phrase, or an OR of them
    in parentheses; a phrase holds no quote)."""
    if not expression.startswith("("):
        return [expression]
    return [f'"{phrase}"' for phrase in expression[2:-2].split('" OR "')]


def ranked(groups: Sequence[Sequence[Posting]], every: bool, pool: int) -> list[tuple[int, float]]:
    """(rowid, BM25 as a positive sum) of the best `pool` rows holding every group (`every`) or any, as FTS5's
    `MATCH (g1) AND (g2) ... ORDER BY bm25() LIMIT pool` gives them: each group an OR of its phrases, the sum
    taken in phrase order, equal scores by rowid (the order FTS5 reads its matches in, which SQLite's sorter
    keeps for ties)."""
    flat = [posting for group in groups for posting in group]
    if every:
        scores = dict.fromkeys(_holding_every(groups), 0.0)
        for posting in flat:  # each row's sum taken left to right; a phrase it lacks adds 0.0, which leaves it as is
            terms = posting.terms
            scores = {rowid: score + terms.get(rowid, 0.0) for rowid, score in scores.items()}
    else:
        scores = dict(flat[0].terms)  # 0.0 + a term is the term
        for posting in flat[1:]:  # a row's sum taken left to right: a phrase it lacks adds 0.0, skipped alike
            get = scores.get
            scores.update({rowid: get(rowid, 0.0) + term for rowid, term in posting.terms.items()})
    return _best(scores, pool)


def _best(scores: dict[int, float], pool: int) -> list[tuple[int, float]]:
    """The `pool` best (rowid, score) pairs, best first and equal scores by rowid: every row scoring at least
    the pool's last score, then ordered (cheaper than ordering every row when there are many) by rowid and then,
    stably, by score (two sorts on C keys cost less than one on a Python key building a tuple a row)."""
    if len(scores) > pool:
        last = sorted(scores.values(), reverse=True)[pool - 1]
        chosen = [(rowid, score) for rowid, score in scores.items() if score >= last]
    else:
        chosen = list(scores.items())
    chosen.sort(key=itemgetter(0))
    chosen.sort(key=itemgetter(1), reverse=True)  # `reverse` keeps equal scores in their order, by rowid
    return chosen[:pool]


def _holding_every(groups: Sequence[Sequence[Posting]]) -> Iterable[int]:
    """The rows holding some phrase of every group (a one-phrase group's rows are its posting's keys, not copied)."""
    unions = sorted(
        (group[0].terms.keys() if len(group) == 1 else set().union(*(p.terms for p in group)) for group in groups),
        key=len,
    )
    if len(unions) == 1:
        return unions[0]
    rows = unions[0] & unions[1]
    for other in unions[2:]:
        rows &= other
    return rows


def where_bits(in_name: object, in_head: object, in_description: object) -> int:
    """Where a row holds a phrase, as `NAME`, `HEAD` and `DESCRIPTION` bits, from its per-column bm25() (each
    nonzero or not)."""
    return (NAME if in_name else 0) | (HEAD if in_head else 0) | (DESCRIPTION if in_description else 0)


def held(group: Sequence[Posting], candidates: Collection[int]) -> Iterator[tuple[int, float, int]]:
    """(rowid, the group's bm25() term (the sum of its phrases' terms, in their order), where: `where_bits`) of
    each candidate holding a phrase of the group, in no set order. `candidates` is tested with `in` (a set or a
    dict's keys): the walk takes the smaller side, the candidates or the group's matches (at 1,000 skills most
    concepts match fewer skills than a search has candidates)."""
    if len(group) == 1:  # the usual concept: one phrase, its term the whole sum
        terms, where = group[0].terms, group[0].where
        if len(terms) < len(candidates):
            for rowid, term in terms.items():
                if rowid in candidates:
                    yield rowid, term, where.get(rowid, 0)
            return
        for rowid in candidates:
            found = terms.get(rowid)
            if found is not None:
                yield rowid, found, where.get(rowid, 0)
        return
    rows: Iterable[int] = candidates
    if sum(len(posting.terms) for posting in group) < len(candidates):
        rows = {rowid for posting in group for rowid in posting.terms if rowid in candidates}
    for rowid in rows:
        total = 0.0
        bits = 0
        found = False
        for posting in group:
            part = posting.terms.get(rowid)
            if part is not None:
                found = True
                total += part
                bits |= posting.where.get(rowid, 0)
        if found:
            yield rowid, total, bits
