"""The persistent search index: SQLite with FTS5 (BM25, porter stemming), one file per root set.

Rows are keyed by source; each source's signature (mtimes and sizes) says when to re-parse, so
a warm start re-reads nothing and a change re-reads only what changed. The index is derived
data: a missing, stale-schema or corrupt file is deleted and rebuilt.
"""

from __future__ import annotations

import json
import logging
import math
import re
import sqlite3
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from itertools import islice, takewhile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from skillshelf.library.index import postings
from skillshelf.library.index.postings import Posting, Postings, phrases
from skillshelf.library.index.query import Concept, Vocabulary, concepts, with_alternatives
from skillshelf.library.indexing.fts import BUSY_TIMEOUT_S, FtsIndex, IndexDamaged, recovering
from skillshelf.library.indexing.terms import split_word
from skillshelf.library.semantic.vectors import SHORT_DESCRIPTION
from skillshelf.library.skill.layouts import summary
from skillshelf.library.skill.models import Finding, Skill, SkillSource

logger = logging.getLogger(__name__)

# 7: skills carry the scanner's findings (issue 31); 8: the column `verified` is `meets_bar` (issue 32: one word
# per idea). An index of another version is parsed anew.
SCHEMA_VERSION = 8
# bm25 weights in column order: name, description, tags, headings, body
FIELD_WEIGHTS = (10.0, 5.0, 4.0, 2.0, 1.0)
_WEIGHTS = ", ".join(str(w) for w in FIELD_WEIGHTS)  # as bm25() takes them
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
    key TEXT PRIMARY KEY,
    signature TEXT NOT NULL,
    skill_id TEXT,
    findings TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS skills (
    rowid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    source_key TEXT NOT NULL,
    name TEXT NOT NULL,
    name_key TEXT NOT NULL,
    category TEXT NOT NULL,
    layout TEXT NOT NULL,
    summary TEXT NOT NULL,
    quality REAL NOT NULL,
    quality_source TEXT NOT NULL,
    meets_bar INTEGER NOT NULL, -- the score meets QUALITY_BAR (IndexedSkill.meets_bar), not use's `verified`
    executable INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    payload TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS skills_category ON skills(category);
CREATE INDEX IF NOT EXISTS skills_source ON skills(source_key);
CREATE INDEX IF NOT EXISTS skills_name_key ON skills(name_key);
CREATE INDEX IF NOT EXISTS skills_rank ON skills(quality DESC, id);
CREATE VIRTUAL TABLE IF NOT EXISTS skills_fts USING fts5(
    name, description, tags, headings, body,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"""
_WORD = re.compile(r"\w+", re.UNICODE)
# A camelCase word is a whole word (a run of \w: the boundaries say so) of this shape. Looking for the pair every
# such word holds, then reading the word around it, is several times cheaper than trying the shape at every word.
_CAMEL_WORD = re.compile(r"[A-Za-z][a-z0-9]+[A-Z][A-Za-z0-9]*")
_CAMEL_PAIR = re.compile(r"[a-z0-9][A-Z]")
_WORD_CHARS = re.compile(r"\w*")
VOCABULARY_SQL = "SELECT name, description, tags, headings FROM skills_fts"
# Skills `get` keeps between writes (a skill's row with its details parsed: about 5 KB each), and hit rows a search
# keeps (`_rows`: the row's tuple); the oldest goes first.
KEPT_ROWS = 2048
CANDIDATES = 60  # bm25 candidates re-ranked by coverage, at least (more for larger limits)
COVERAGE_WEIGHT = 1.5  # how much holding all the query's concepts multiplies a BM25 score (1 + weight) ...
COVERAGE_POWER = 1.0  # ... and how steeply that reward falls as concepts (weighted by rarity) go missing
# How much of a concept a skill holds, by where it holds it. BM25 cannot say it: FTS5 weights a field's term
# count before saturating it, so one word in a name (weight 10) scores barely more than in a description (5)
# or three times in a long body; coverage then rewarded a body holding most of the query's everyday words as
# much as a name or description holding them (issue 25).
NAME_CREDIT = 1.0
HEAD_CREDIT = 0.8  # description, tags, headings
BODY_CREDIT = 0.1  # an everyday word, held only in the body ...
RARE_BODY_CREDIT = 0.9  # ... and a specific word: a body holding the query's specific words still counts
COMMON_SHARE = 0.1  # a word in this share of the skills or more is an everyday one ...
SPECIFIC_SHARE = 0.01  # ... and in this share or fewer, a specific one


def body_credit(share: float) -> float:
    """How much a word held only in the body counts, by the share of skills holding it: an everyday word (in
    `COMMON_SHARE` of the skills or more) little, a specific one (in `SPECIFIC_SHARE` or fewer) nearly fully,
    between them by the logarithm of the share. A long body holding a query's everyday words must not beat a
    name or description; a skill holding every specific word of a query in its body must keep beating one
    holding two of them in its name (the independent generator's decoys: with a flat 0.1, 35 of 100 at 10,000
    skills lost their answer)."""
    if share <= 0:
        return RARE_BODY_CREDIT
    specificity = math.log(COMMON_SHARE / share) / math.log(COMMON_SHARE / SPECIFIC_SHARE)
    return BODY_CREDIT + (RARE_BODY_CREDIT - BODY_CREDIT) * min(1.0, max(0.0, specificity))


# A skill whose name and description say the task beats one that holds the same words further down (its tags,
# headings, a long body): agents load the first hit, and the one that says what it is for is the one meant
# (issue 34: "analyze single-cell RNA-seq data" ranked a skill mentioning it among other uses above the one
# described as "Standard single-cell RNA-seq analysis pipeline"). Chosen on the development sets: 0.3 raised
# hit@1 and kept every spent set's hit@5 in both modes; 0.5 lost a spent set's top-5 hit (docs/search.md).
LEAD_WEIGHT = 0.3


def lead_factor(lead: float) -> float:
    """The BM25 multiplier for holding `lead` (0-1, rarity-weighted, `lead_credit`) of the query's concepts
    where the skill says what it is for. Coverage credits a description, tags and a heading alike; this step
    tells them apart."""
    return 1.0 + LEAD_WEIGHT * lead


def lead_credit(in_name_or_description: bool, in_body_only: float) -> float:
    """How much of a concept counts for `lead_factor`: fully in the name or description; elsewhere (tags,
    headings, body) only as far as the word is more specific than an everyday one (`body_credit` above
    `BODY_CREDIT`: 0 for an everyday word, 0.8 for a specific one). A skill holding every specific word of a
    query in its body must keep beating one holding two of them in its name (the independent generator's
    decoys: counting only name and description dropped their hit@1 from 0.95 to 0.81)."""
    return 1.0 if in_name_or_description else in_body_only - BODY_CREDIT


_NAME_ONLY = "1.0, 0.0, 0.0, 0.0, 0.0"  # bm25() weights that score a match in that field alone (0: not there)
_HEAD_ONLY = "0.0, 1.0, 1.0, 1.0, 0.0"
_DESCRIPTION_ONLY = "0.0, 1.0, 0.0, 0.0, 0.0"
VISIBLE_FUNCTION = "skillshelf_visible"  # SQL function a view registers (SearchFilters.visible)
VERIFIED_FUNCTION = "skillshelf_verified"  # verified: used from three projects (the ids given)
AGENT_DOCS = ("SKILL.md", "skill.md")
HEAD_COLUMNS = "{name description tags headings}"  # an FTS5 column filter: every field but the body
SCORED_MATCHES = 2_000  # partial matches (summed over the query's words) past which candidates come from HEAD_COLUMNS
# Where a concept's ranked reads come from (`_readable`): reading a phrase's every match into memory (postings.py)
# costs about 1.7 us a match at 10,000 skills, a statement's ranked read of it half that plus FTS5's set-up. So a
# concept matching at most READ_AT_ONCE skills is read at once (about a statement's cost), one matching at most
# POSTED_MATCHES from the second search that asks for it (a word that recurs repays its read; the first search asking
# for it costs what it did) while the postings have room for it without dropping others (at 100,000 skills the
# frequent words' postings outgrew the bound, and reading them again and again made a search 1.7x slower), and a more
# frequent one keeps its reads in SQL (its memory, and its read, outweigh them). The read is on the search's own
# path: at 5,000 a session of new queries at 10,000 skills paid reads of up to 17 ms (a phrase and its head-column
# variant), its p95 over stdio 11.5-12.1 ms against 7.6 before postings; at 1,000 it is 8.2 ms, and a warm search
# at 10,000 skills is 3.6x the bare FTS5 query instead of 1.6x (docs/performance.md, the lead's last section).
READ_AT_ONCE = 100
POSTED_MATCHES = 1_000
LEAD_CHARS = 4_000  # what `texts_to_embed` reads of a body: its first paragraph lies well within it
RELATIVE_CUT = 0.2  # hits scoring under this fraction of the best one are dropped
# the columns of `skills` an IndexedSkill is built from, in its fields' order (`IndexedSkill.from_row`)
ROW_COLUMNS = "id, name, category, layout, summary, quality, quality_source, meets_bar, executable, tokens, payload"


def name_key(text: str) -> str:
    """Names compared loosely: case, hyphens and underscores do not matter."""
    return " ".join(_WORD.findall(text.lower().replace("_", " ")))


class SkillDetails(BaseModel):
    """Everything about an indexed skill beyond its hit row, stored as JSON (camelCase keys) in the index."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, frozen=True)

    declared_name: str
    description: str
    tags: list[str]
    language: str | None
    frontmatter: dict[str, Any]
    input_schema: dict[str, Any] | None
    resources: list[str]  # relative to the skill's folder
    quality_reasons: list[str]
    root_index: int
    doc_file: str  # relative to the root, POSIX
    code_file: str | None
    meta_file: str | None
    findings: list[dict[str, Any]]


def _vocabulary_of(rows: Iterable[Sequence[object]]) -> Vocabulary:
    """The spelling vocabulary of `VOCABULARY_SQL`'s rows (name, description, tags, headings)."""
    return Vocabulary.from_texts(" ".join(map(str, row)) for row in rows)


def coverage_factor(coverage: float) -> float:
    """The BM25 multiplier for holding `coverage` (0-1, rarity-weighted) of the query's concepts."""
    return 1.0 + COVERAGE_WEIGHT * math.pow(coverage, COVERAGE_POWER)


def camel_parts(*texts: str) -> str:
    """The parts of every camelCase word in the texts ('useTransition' -> 'use transition'), one per line,
    so a query for the separate words finds them (the tokenizer keeps a camelCase word whole)."""
    found = dict.fromkeys(word for text in texts for word in camel_words(text))
    return "\n".join(" ".join(parts) for word in found if (parts := split_word(word)))


def camel_words(text: str) -> Iterator[str]:
    """Every camelCase word of `text`, in order: each whole word around a lower-then-upper pair, if its shape is."""
    backwards: str | None = None
    after = 0  # where the last word looked at ended: a later pair inside it is the same word
    for pair in _CAMEL_PAIR.finditer(text):
        at = pair.start()
        if at < after:
            continue
        backwards = text[::-1] if backwards is None else backwards
        start = at + 1 - _word_chars(backwards, len(text) - 1 - at)
        after = at + _word_chars(text, at)
        if _CAMEL_WORD.fullmatch(text, start, after):
            yield text[start:after]


def _word_chars(text: str, at: int) -> int:
    """How many word characters (\\w) run from `at` on."""
    match = _WORD_CHARS.match(text, at)
    return match.end() - at if match else 0


@dataclass(frozen=True)
class IndexedSkill:
    id: str
    name: str
    category: str
    layout: str
    summary: str
    quality: float
    quality_source: str
    meets_bar: bool  # the score reaches QUALITY_BAR; not `verified`, which is use (SkillLibrary.is_verified)
    executable: bool
    tokens: int
    payload_json: str
    score: float = 0.0  # relevance relative to the best hit of the search (1.0); 0.0 outside a search
    # of what the skill holds of the query's concepts (rarity-weighted), the share held in its body alone:
    # what a vector of its name and description cannot see (issue 25); 0.0 outside a search
    body_share: float = 0.0
    coverage: float = 0.0  # the rarity-weighted share of the query's concepts it holds, credited by field

    @cached_property
    def details(self) -> SkillDetails:
        """Everything else about the skill; decoded only when a caller needs it (hits do not)."""
        return SkillDetails.model_validate_json(self.payload_json)

    @classmethod
    def from_row(
        cls, row: Sequence[Any], score: float = 0.0, body_share: float = 0.0, coverage: float = 0.0
    ) -> IndexedSkill:
        """A skill from a row of `ROW_COLUMNS` (a search gives its hit's score, body share and coverage).

        Its fields are set in one update of the instance's dict: a frozen dataclass's `__init__` sets each of
        the 14 by `object.__setattr__`, twice the cost of the whole (every hit of every search, issue 36)."""
        skill_id, name, category, layout, summary, quality, quality_source, meets_bar, executable, tokens, payload = row
        skill = object.__new__(cls)
        skill.__dict__.update(
            zip(
                _SKILL_FIELDS,
                (
                    skill_id,
                    name,
                    category,
                    layout,
                    summary,
                    quality,
                    quality_source,
                    bool(meets_bar),
                    bool(executable),
                    tokens,
                    payload,
                    score,
                    body_share,
                    coverage,
                ),
                strict=True,
            )
        )
        return skill


_SKILL_FIELDS = tuple(field.name for field in fields(IndexedSkill))  # in `from_row`'s order


@dataclass(frozen=True)
class SearchFilters:
    category: str | None = None
    executable: bool | None = None
    min_quality: float | None = None
    # A view's visibility rule by skill id: hidden skills are left out before ranking, so they
    # neither take a place in the page nor set the relative score of the visible hits.
    visible: Callable[[str], bool] | None = None

    def admits(self, skill: IndexedSkill) -> bool:
        """The filters of `_filter_sql`, for a skill already in hand (semantic hits are found apart)."""
        return (
            (self.category is None or skill.category == self.category)
            and (self.executable is None or skill.executable == self.executable)
            and (self.min_quality is None or skill.quality >= self.min_quality)
            and (self.visible is None or self.visible(skill.id))
        )


@dataclass
class HeldShares:
    """Where a search's candidates hold its concepts (`_with_coverage`'s pattern a candidate) and each pattern's
    shares (`_pattern_shares`): a hit's body share and coverage are read for the page's hits alone, where writing
    them out for every candidate was two dicts a search (issue 36)."""

    pattern: dict[int, int] = field(default_factory=dict)
    shares: dict[int, tuple[float, float, float, float]] = field(default_factory=dict)

    def of(self, rowid: int) -> tuple[float, float]:
        """(the share held in the body alone, the coverage) of a candidate; 0.0 and 0.0 for one never walked."""
        held = self.pattern.get(rowid)
        if held is None:
            return 0.0, 0.0
        shares = self.shares[held]
        return shares[0], shares[1]


@dataclass(frozen=True)
class CategoryStats:
    name: str
    skills: int
    executable: int
    verified: int
    mean_quality: float


class SkillIndex(FtsIndex):
    SCHEMA = _SCHEMA
    SCHEMA_VERSION = SCHEMA_VERSION
    TABLES = ("sources", "skills", "skills_fts")
    COUNT_TABLE = "skills"
    FTS_TABLE = "skills_fts"
    LABEL = "search index"

    # -- lifecycle -----------------------------------------------------------------------
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self._vocabulary: Vocabulary | None = None
        self._writes = 0  # writes seen (this connection's or another process's): a vocabulary is stale after one
        self._vocabulary_writes = 0  # the write count the vocabulary was read at
        self._refreshing: threading.Thread | None = None
        self._kept: dict[str, IndexedSkill | None] = {}  # what `get` read since the last write
        self._hit_rows: dict[int, tuple[Any, ...]] = {}  # the rows `_rows` read since the last write, by rowid
        self._postings = Postings(self._read_posting)  # each phrase's matches (under the lock, as the frequencies)

    def _forget_derived(self) -> None:
        super()._forget_derived()
        self._kept = {}  # a write may have changed, added or removed any row
        self._hit_rows = {}
        self._postings.clear()  # a write changes matches, IDFs and lengths: every posting is stale
        self._writes += 1  # the vocabulary goes stale; `vocabulary` refreshes it in the background

    def copy_to(self, path: Path) -> SkillIndex:
        """A copy of this index at `path`, opened (the update review changes the copy, never this file)."""
        with self._guard() as conn:
            target = sqlite3.connect(path)
            try:
                conn.backup(target)
            finally:
                target.close()
        return SkillIndex(path)

    # -- writes --------------------------------------------------------------------------
    def signatures(self) -> dict[str, str]:
        """Every source's stored signature. Each sync starts here, so a damaged file is replaced first."""
        self.renew_if_needed()
        return {str(key): str(signature) for key, signature in self._read_apart("SELECT key, signature FROM sources")}

    def apply(self, parsed: Iterable[tuple[SkillSource, Skill | None, list[Finding]]], removed: Iterable[str]) -> None:
        with self._transaction() as conn:
            for key in removed:
                self._delete_source(conn, key)
            for source, skill, findings in parsed:
                self._delete_source(conn, source.key)
                self._delete_skill_id(conn, source.skill_id)
                conn.execute(
                    "INSERT INTO sources(key, signature, skill_id, findings) VALUES (?, ?, ?, ?)",
                    (
                        source.key,
                        source.signature,
                        skill.id if skill else None,
                        json.dumps([f.to_dict() for f in findings]),
                    ),
                )
                if skill is not None:
                    self._insert_skill(conn, skill)

    @staticmethod
    def _delete_source(conn: sqlite3.Connection, key: str) -> None:
        for (rowid,) in conn.execute("SELECT rowid FROM skills WHERE source_key = ?", (key,)).fetchall():
            conn.execute("DELETE FROM skills_fts WHERE rowid = ?", (rowid,))
            conn.execute("DELETE FROM skills WHERE rowid = ?", (rowid,))
        conn.execute("DELETE FROM sources WHERE key = ?", (key,))

    @staticmethod
    def _delete_skill_id(conn: sqlite3.Connection, skill_id: str) -> None:
        row = conn.execute("SELECT rowid, source_key FROM skills WHERE id = ?", (skill_id,)).fetchone()
        if row is not None:
            conn.execute("DELETE FROM skills_fts WHERE rowid = ?", (row[0],))
            conn.execute("DELETE FROM skills WHERE rowid = ?", (row[0],))
            conn.execute("DELETE FROM sources WHERE key = ?", (row[1],))

    @staticmethod
    def _insert_skill(conn: sqlite3.Connection, skill: Skill) -> None:
        source = skill.source
        details = SkillDetails(
            declared_name=skill.declared_name,
            description=skill.description,
            tags=skill.tags,
            language=skill.language,
            frontmatter=skill.frontmatter,
            input_schema=skill.input_schema,
            resources=skill.resources,
            quality_reasons=list(skill.quality.reasons),
            root_index=source.root_index,
            doc_file=source.doc_file.relative_to(source.root).as_posix(),
            code_file=source.code_file.relative_to(source.root).as_posix() if source.code_file else None,
            meta_file=source.meta_file.relative_to(source.root).as_posix() if source.meta_file else None,
            findings=[f.to_dict() for f in skill.findings],
        )
        cursor = conn.execute(
            """INSERT INTO skills(id, source_key, name, name_key, category, layout, summary, quality,
                   quality_source, meets_bar, executable, tokens, payload)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            (
                skill.id,
                source.key,
                skill.declared_name,
                name_key(skill.declared_name),
                skill.category,
                source.layout,
                summary(skill.description),
                skill.quality.score,
                skill.quality.source,
                int(skill.quality.meets_bar),
                int(skill.executable),
                skill.load_tokens,
                details.model_dump_json(by_alias=True),
            ),
        )
        names = skill.declared_name if skill.declared_name == skill.name else f"{skill.declared_name} {skill.name}"
        conn.execute(
            "INSERT INTO skills_fts(rowid, name, description, tags, headings, body) VALUES (?, ?, ?, ?, ?, ?)",
            (
                cursor.lastrowid,
                names,
                skill.description,
                " ".join(skill.tags),
                "\n".join(skill.headings),
                f"{skill.body}\n{camel_parts(skill.description, *skill.tags, *skill.headings, skill.body)}",
            ),
        )

    # -- reads ---------------------------------------------------------------------------
    @recovering
    def search(self, query: str, filters: SearchFilters, limit: int, page: int | None = None) -> list[IndexedSkill]:
        """Ranked hits: an exact name first, then relevance, quality breaking (near-)ties.

        Relevance is BM25 (field weights, stemming) scaled by coverage: the share of the query's
        concepts (words, with their synonyms and spelling corrections) a skill holds, each weighted by
        its rarity. So a skill holding every word beats one holding two of them in its name. The best
        BM25 candidates and every skill holding all concepts are re-ranked; hits scoring under
        `RELATIVE_CUT` of the best are dropped. Full rows are fetched for the winners alone.

        `page` (at most `limit`): rank the candidates a search for a page of that many would, and return
        up to `limit` of them: the fusion's word pool, which needs the word ranking's order beyond the
        page but not the four times larger candidate walk a search for `limit` hits makes (issue 36).
        """
        conditions, params = _filter_sql(filters)
        with self._guard():
            self._current_caches()
            if filters.visible is not None:
                self._conn.create_function(VISIBLE_FUNCTION, 1, filters.visible, deterministic=True)
            asked = concepts(query)  # empty exactly when the query has no words (`query_terms`): parsed once
            if not asked:
                sql = f"SELECT s.rowid FROM skills s WHERE {conditions} ORDER BY s.quality DESC, s.id LIMIT ?"
                ranked = {row[0]: 0.0 for row in self._conn.execute(sql, [*params, limit])}
                return self._fetch(ranked, set(), limit)
            wanted = self._matchable(asked)
            exact_sql = f"SELECT s.rowid FROM skills s WHERE (s.name_key = ? OR s.id = ?) AND {conditions}"
            exact = {row[0] for row in self._conn.execute(exact_sql, [name_key(query), query.strip(), *params])}
            held = HeldShares()
            walked = limit if page is None else min(page, limit)
            ranked = self._rank(wanted, conditions, params, walked, held) if wanted else {}
            ranked.update({rowid: max(ranked.values(), default=1.0) for rowid in exact})
            if self._vocabulary is None:
                self._refresh_vocabulary_soon()  # ready before a later search has a typo in it
            return self._fetch(ranked, exact, limit, held)

    def _matchable(self, wanted: list[Concept]) -> list[Concept]:
        """The concepts worth matching: abbreviations the library spells out and spelling corrections of
        unknown words added; concepts that match nothing dropped; concepts in over half the skills dropped
        unless nothing else is left."""
        fixed = []
        for asked in wanted:
            known = self._expression_frequency(asked.expression()) > 0
            # a known word needs no vocabulary: use the one in hand rather than build it inside a search
            vocabulary = self._vocabulary if known else self._current_vocabulary()
            concept = asked if vocabulary is None else with_alternatives(asked, vocabulary.expansions(asked.word))
            if known:
                fixed.append(concept)
                continue
            assert vocabulary is not None
            corrected = with_alternatives(concept, vocabulary.corrections(concept.word))
            if self._expression_frequency(corrected.expression()) > 0:
                fixed.append(corrected)
        if len(fixed) < 2:
            return fixed
        total = self._count_documents()
        informative = [c for c in fixed if self._expression_frequency(c.expression()) <= total / 2]
        return informative or [min(fixed, key=lambda c: self._expression_frequency(c.expression()))]

    def _rank(
        self,
        wanted: list[Concept],
        conditions: str,
        params: list[Any],
        limit: int,
        held: HeldShares | None = None,
    ) -> dict[int, float]:
        """Candidates' scores by rowid; `held`, if given, receives where each holds the concepts and what that
        gives (`HeldShares`: its share held in the body alone, its coverage).

        The ranked reads come from the concepts' postings (`_readable`) where they can, from SQL otherwise: the
        same rows and scores to the last bit either way."""
        expressions = [c.expression() for c in wanted]
        pool = max(CANDIDATES, limit * 5)
        readable = self._readable(expressions)
        posted = [self._phrase_postings(e) for e in expressions] if conditions == "1" and all(readable) else None
        bm25: dict[int, float] = {}
        if len(wanted) > 1:  # every skill holding all concepts is a candidate
            if posted is not None:
                bm25.update(postings.ranked(posted, True, pool))
            else:
                full = " AND ".join(expressions)
                bm25.update({row[0]: -row[1] for row in self._tuples(_ranked_sql(conditions), [full, *params, pool])})
        unscored: list[int] = []
        if len(bm25) < limit:  # fewer than a page hold them all: the best partial matches compete too
            scored, unscored = self._partial_matches(expressions, bm25, conditions, params, pool, posted)
            bm25.update(scored)
        if (len(wanted) == 1 and not unscored) or not (bm25 or unscored):
            return bm25
        return self._with_coverage(
            expressions,
            bm25,
            unscored,
            HeldShares() if held is None else held,
            readable,
        )

    def _readable(self, expressions: list[str]) -> list[bool]:
        """Which concepts' reads in this search come from their postings (by how many skills each matches and
        whether a search asked for it before: `READ_AT_ONCE`, `POSTED_MATCHES`). The ANDed, ORed and head-column
        reads come from postings only if every concept's do, and no filter is set (the postings know no category,
        quality or view); the coverage walk takes each concept from wherever its reads come. Inside a write not
        yet committed (a search on the writing thread) nothing is read into postings: a rollback would leave them
        holding matches that never were."""
        if self._conn.in_transaction:
            return [False] * len(expressions)
        readable = [self._posts(e, self._expression_frequency(e)) for e in expressions]
        self._postings.note(expressions)
        return readable

    def _posts(self, expression: str, df: int) -> bool:
        """Whether a concept matching `df` skills is read from its postings in this search (`_readable`)."""
        if df > POSTED_MATCHES:
            return False
        if df <= READ_AT_ONCE:
            return True
        keys = phrases(expression)
        # at most `df` rows a phrase, twice (the head columns' read has postings of its own)
        held, asked = self._postings.holds(keys), self._postings.asked(expression)
        return held or (asked and self._postings.has_room(2 * df * len(keys)))

    def _phrase_postings(self, expression: str, columns: str = "") -> list[Posting]:
        """The postings of a concept's phrases, in their order (each under the column filter `columns`, if any)."""
        return [self._postings.get(f"{columns} : {p}" if columns else p) for p in phrases(expression)]

    def _read_posting(self, phrase: str) -> Posting:
        return Posting.from_rows(self._tuples(_POSTING_SQL, [phrase]))

    def _with_coverage(
        self,
        expressions: list[str],
        bm25: dict[int, float],
        unscored: list[int],
        held: HeldShares,
        readable: list[bool],
    ) -> dict[int, float]:
        """Each candidate's score times its coverage (the rarity-weighted share of the concepts it holds).

        Which candidates hold each concept, where, and the concept's BM25 part for the `unscored` ones
        (`_concept_members`, from its postings if `readable` says so): FTS5's BM25 of an OR of phrases is the
        sum of each phrase's, to the last bit."""
        candidates = [*bm25, *unscored]
        total = self._count_documents()
        frequencies = [self._expression_frequency(e) for e in expressions]
        rarity = [math.log(1 + (total - df + 0.5) / (df + 0.5)) for df in frequencies]
        # where each candidate holds each concept, 4 bits a concept (0: not held, else where + 1): candidates holding
        # the concepts alike get the same credits, so each pattern's are summed once, in the concepts' order
        pattern = dict.fromkeys(candidates, 0)
        summed = dict.fromkeys(unscored, 0.0)
        credits = []
        for shift, (expression, weight, df, posted) in enumerate(
            zip(expressions, rarity, frequencies, readable, strict=True)
        ):
            credits.append(_credits(weight, body_credit(df / max(total, 1))))
            for rowid, term, where in self._concept_members(expression, pattern, bool(unscored), posted):
                pattern[rowid] += (where + 1) << (4 * shift)
                if rowid in summed:
                    summed[rowid] += term
        whole = sum(rarity)
        shares = {alike: _pattern_shares(alike, credits, rarity, whole) for alike in set(pattern.values())}
        scores = {**bm25, **summed}
        held.pattern, held.shares = pattern, shares
        if len(expressions) == 1:
            return scores
        return {rowid: score * shares[pattern[rowid]][2] * shares[pattern[rowid]][3] for rowid, score in scores.items()}

    def _concept_members(
        self, expression: str, candidates: Collection[int], scored: bool, posted: bool
    ) -> Iterable[tuple[int, float, int]]:
        """(rowid, the concept's bm25() term alone (positive), where: `postings.where_bits`) of every candidate
        holding the concept; its term only if `scored` (else 0). From its postings (`posted`), or one statement
        walking its matches."""
        if posted:
            return postings.held(self._phrase_postings(expression), candidates)
        marks = ",".join("?" * len(candidates))
        # "+rowid": test the candidates while walking the concept's matches, not by a far slower lookup each;
        # the whole BM25 only when some candidate needs it (a tenth of a millisecond at 10,000 skills)
        whole_bm25 = f"bm25(skills_fts, {_WEIGHTS})" if scored else "0"
        member_sql = f"""SELECT rowid, {whole_bm25}, bm25(skills_fts, {_NAME_ONLY}), bm25(skills_fts, {_HEAD_ONLY}),
                                bm25(skills_fts, {_DESCRIPTION_ONLY})
                         FROM skills_fts WHERE skills_fts MATCH ? AND +rowid IN ({marks})"""
        rows = self._tuples(member_sql, [expression, *candidates])
        return ((rowid, -whole, postings.where_bits(*columns)) for rowid, whole, *columns in rows)

    def _partial_matches(
        self,
        expressions: list[str],
        taken: dict[int, float],
        conditions: str,
        params: list[Any],
        pool: int,
        posted: list[list[Posting]] | None = None,
    ) -> tuple[dict[int, float], list[int]]:
        """The best `pool` skills holding some of the query's concepts (not in `taken`): scored by BM25 on
        every field, or (a large library) left for `_with_coverage` to score. From the concepts' postings
        (`posted`) if given, else by SQL.

        Scoring every partial match costs time in proportion to the matches: nothing in a library of a few
        thousand skills, 6-7 ms at 100,000, where a typical query's words are held by 8,500 skills, most
        of them only in their long bodies. Past `SCORED_MATCHES` the candidates are the best matches in
        names, descriptions, tags and headings (the pool is full of those at that size), and only they are
        scored on every field: a body match of a few words would rarely rank above them anyway. A concept
        matching more than `SCORED_MATCHES` skills on its own brings candidates there by the name alone while
        the query holds a rarer one (`_head_candidates`): its descriptions, tags and headings were most of that
        read's rows (3,576 of 10,000 generated skills hold "pipeline"), and a skill holding only such a word,
        and not in its name, rarely reaches a page. Every candidate is still scored on every concept and field."""
        ranked_sql = _ranked_sql(conditions)
        if sum(map(self._expression_frequency, expressions)) > SCORED_MATCHES:
            groups = self._head_candidates(expressions)
            if posted is not None:
                in_head = [p for columns, group in groups for e in group for p in self._phrase_postings(e, columns)]
                rows: Iterable[tuple[int, float]] = postings.ranked([in_head], False, pool)
            else:
                rows = self._tuples(ranked_sql, [_columns_expression(groups), *params, pool])
            head = [row[0] for row in rows if row[0] not in taken]
            if len(head) + len(taken) >= pool:
                return {}, head
        if posted is not None:
            return {rowid: score for rowid, score in postings.ranked(posted, False, pool) if rowid not in taken}, []
        ranked = self._tuples(ranked_sql, [" OR ".join(expressions), *params, pool])
        return {row[0]: -row[1] for row in ranked if row[0] not in taken}, []

    def _head_candidates(self, expressions: list[str]) -> list[tuple[str, list[str]]]:
        """The head-column candidates' expression, as (column filter, concepts' expressions) ORed in order
        (`_columns_expression`): the concepts in the head columns, but one matching more than `SCORED_MATCHES`
        skills on its own in the name alone while the query holds a rarer concept. The bound is the one that
        chose these candidates, so a library of a few thousand skills, where no concept reaches it, ranks as
        before; the real corpora's (972 skills) answers are unchanged."""
        common = [e for e in expressions if self._expression_frequency(e) > SCORED_MATCHES]
        specific = [e for e in expressions if e not in common]
        if not common or not specific:
            return [(HEAD_COLUMNS, expressions)]
        return [(HEAD_COLUMNS, specific), ("{name}", common)]

    def _expression_frequency(self, expression: str) -> int:
        """How many skills match an FTS expression (cached until the next write)."""
        if expression not in self._document_frequency:
            sql = "SELECT count(*) FROM skills_fts WHERE skills_fts MATCH ?"
            self._document_frequency[expression] = int(self._conn.execute(sql, (expression,)).fetchone()[0])
        return self._document_frequency[expression]

    @recovering
    def vocabulary(self) -> Vocabulary:
        """The words of every name, description, tag and heading, for spelling corrections.

        Built in the background after the first search, or in the search that first needs it. After a
        write it is refreshed in the background while searches go on correcting from the one they have
        (a word added a moment ago may not be corrected yet): rebuilding it inside the search cost
        that search a scan of every word, holding the index, after every edit."""
        with self._guard():
            return self._current_vocabulary()

    def _current_vocabulary(self) -> Vocabulary:
        """`vocabulary` for a caller holding the guard (a search correcting a word). With none yet, it waits
        for the one the background thread is building rather than build a second beside it (both at once
        took twice as long, the background one then thrown away); it builds one only if none is under way
        or that one failed."""
        if self._vocabulary is None:
            self._join_helpers()  # the builder never takes the lock, so waiting for it here cannot deadlock
        if self._vocabulary is None:
            self._vocabulary_writes = self._writes
            self._vocabulary = _vocabulary_of(self._conn.execute(VOCABULARY_SQL))
        elif self._vocabulary_writes != self._writes:
            self._refresh_vocabulary_soon()
        return self._vocabulary

    def _refresh_vocabulary_soon(self) -> None:
        """Build the vocabulary on a background thread unless one is at it already (under the lock)."""
        if self._refreshing is None:
            self._refreshing = threading.Thread(
                target=self._refresh_vocabulary, args=(self._writes,), name="skillshelf-vocabulary", daemon=True
            )
            self._refreshing.start()

    def _join_helpers(self) -> None:
        refreshing = self._refreshing
        if refreshing is not None:
            refreshing.join(timeout=BUSY_TIMEOUT_S)

    def _refresh_vocabulary(self, writes: int) -> None:
        """Read the texts on a connection of their own and build without the lock (a search holding it may be
        waiting for this one: `_current_vocabulary`); `writes` is the write count when it was asked for, so a
        write meanwhile leaves the result stale and the next search that needs it refreshes again."""
        try:
            vocabulary = _vocabulary_of(self._read_apart(VOCABULARY_SQL))
            # the count first: a search between the two sees the old vocabulary as current, never the new stale
            self._vocabulary_writes = writes
            self._vocabulary = vocabulary
        except (sqlite3.Error, IndexDamaged):  # closed, busy or damaged: keep the one we have; a later search retries
            logger.debug("could not refresh the spelling vocabulary", exc_info=True)
        finally:
            self._refreshing = None

    def _fetch(
        self,
        ranked: dict[int, float],
        exact: set[int],
        limit: int,
        held: HeldShares | None = None,
    ) -> list[IndexedSkill]:
        """Order candidates (exact name, relative score to 2 decimals, quality, id), cut the tail
        (under `RELATIVE_CUT` of the best), and load full rows for the winners."""
        if not ranked:
            return []
        best = max(ranked.values()) or 1.0

        def relative(rowid: int) -> float:
            return 1.0 if rowid in exact else ranked[rowid] / best

        def kept(rowid: int) -> bool:
            return best == 1.0 or relative(rowid) >= RELATIVE_CUT

        def coarse(rowid: int) -> tuple[bool, float]:
            return (rowid not in exact, -round(relative(rowid), 2))

        # Exact names first, then by relative score: the order of `coarse`, each candidate's sort key (its score
        # rounded to 2 decimals), which is dearer than the rest of the ordering, so it is taken only for the page
        # and what ties with its last hit. Quality and id only break ties, so rows are read for those alone
        # (reading every candidate's keys was a tenth of a search's time at 10,000 skills). Ordered by score, not
        # by its share of the best (the same order, reversed by a negative best), and shares taken only as far as
        # the page and the cut reach: candidates whose shares tie (whatever their scores' order) tie in `coarse`
        # too, so the page and its order are the same (issue 36: a share a candidate was a tenth of `_fetch`).
        ordered = sorted(
            ranked if not exact else (r for r in ranked if r not in exact), key=ranked.__getitem__, reverse=best > 0
        )
        ordered[:0] = [r for r in ranked if r in exact]
        eligible = takewhile(kept, ordered)
        contenders = list(islice(eligible, limit))
        if limit and len(contenders) == limit:
            last = coarse(contenders[-1])
            contenders += takewhile(lambda r: coarse(r) == last, eligible)
        rows = self._rows(contenders)
        if len(rows) < len(contenders):  # a row gone missing: others may fill the page
            everything = list(takewhile(kept, ordered))
            if len(contenders) < len(everything):
                contenders = everything
                rows = self._rows(contenders)
        keys = {r: coarse(r) for r in contenders if r in rows}
        # then quality, best first, and id (a row's 6th and 1st of `ROW_COLUMNS`)
        winners = sorted(keys, key=lambda r: (*keys[r], -rows[r][5], rows[r][0]))
        found = held or HeldShares()
        return [IndexedSkill.from_row(rows[r], round(relative(r), 3), *found.of(r)) for r in winners[:limit]]

    def _rows(self, rowids: list[int]) -> dict[int, tuple[Any, ...]]:
        """The hit rows (`ROW_COLUMNS`, as tuples: a `sqlite3.Row` costs more to build and to read) by rowid.

        Kept until a write (`_forget_derived`), as `get` keeps its rows: a row is what the last write left, so a
        search showing a skill shown before reads nothing (issue 36: the page's read was a tenth of a warm search
        at 1,000 skills). The oldest go first past `KEPT_ROWS`; nothing is kept inside a write not yet committed."""
        kept = self._hit_rows
        found = {rowid: kept[rowid] for rowid in rowids if rowid in kept}
        missing = [rowid for rowid in rowids if rowid not in found]
        if not missing:
            return found
        marks = ",".join("?" * len(missing))
        sql = f"SELECT rowid, {ROW_COLUMNS} FROM skills WHERE rowid IN ({marks})"
        read = {row[0]: row[1:] for row in self._tuples(sql, missing)}
        self._keep(kept, read)
        return found | read

    def _keep(self, kept: dict[Any, Any], read: dict[Any, Any]) -> None:
        """Add `read` to `kept`, a cache of rows until the next write (`get`'s, `_rows`'), the oldest dropped past
        `KEPT_ROWS`; nothing inside a write not yet committed (a rollback would leave rows that never were)."""
        if self._conn.in_transaction:
            return
        for _ in range(min(len(kept), len(kept) + len(read) - KEPT_ROWS)):
            del kept[next(iter(kept))]
        kept.update(read)

    def _tuples(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        """The rows of `sql` as plain tuples: a search's reads, where a `sqlite3.Row` per row costs more to
        build and to read."""
        cursor = self._conn.cursor()
        cursor.row_factory = None
        return cursor.execute(sql, params)

    @recovering
    def get(self, skill_id: str) -> IndexedSkill | None:
        """The skill with this id, as its row stood at the last write: kept until a write, this connection's
        (`_transaction`) or another process's (`_current_caches`' `PRAGMA data_version`), or a new file.

        A load reads its skill here on every call; a row is only what the last sync wrote (the files it
        serves are read and checked apart), so a repeat costs one pragma, not a query and the details'
        parse again (issue 36: 24-35 us of a repeat load's 180)."""
        with self._guard():
            self._current_caches()
            rows = self._kept
            if skill_id in rows:
                return rows[skill_id]
            row = self._conn.execute(f"SELECT {ROW_COLUMNS} FROM skills WHERE id = ?", (skill_id,)).fetchone()
            found = IndexedSkill.from_row(row) if row else None
            self._keep(rows, {skill_id: found})
            return found

    @recovering
    def get_many(self, skill_ids: list[str]) -> list[IndexedSkill]:
        """The skills with these ids that exist, in no particular order."""
        found: list[IndexedSkill] = []
        with self._guard():
            for start in range(0, len(skill_ids), 500):
                chunk = skill_ids[start : start + 500]
                sql = f"SELECT {ROW_COLUMNS} FROM skills WHERE id IN ({','.join('?' * len(chunk))})"
                found += [IndexedSkill.from_row(row) for row in self._conn.execute(sql, chunk)]
        return found

    @recovering
    def texts_to_embed(self) -> list[tuple[str, str, str, str]]:
        """(id, name, description, body) of every skill: what semantic search embeds. The body only where the
        description may be short (`skill_text` counts its words and completes it with the body's first
        paragraph), and only its start: a pass over 100,000 skills reads no body a long description needs not."""
        with self._guard():
            spaces = "length(f.description) - length(replace(f.description, ' ', ''))"
            body = f"CASE WHEN {spaces} < {SHORT_DESCRIPTION} THEN substr(f.body, 1, {LEAD_CHARS}) END"
            sql = f"SELECT s.id, s.name, f.description, {body} FROM skills s JOIN skills_fts f ON f.rowid = s.rowid"
            return [(r[0], r[1], r[2], r[3] or "") for r in self._conn.execute(sql)]

    @recovering
    def ids_and_names(self) -> list[tuple[str, str]]:
        with self._guard():
            return [(r[0], r[1]) for r in self._conn.execute("SELECT id, name FROM skills")]

    @recovering
    def has_category(self, name: str) -> bool:
        with self._guard():
            return self._conn.execute("SELECT 1 FROM skills WHERE category = ? LIMIT 1", (name,)).fetchone() is not None

    @recovering
    def categories(
        self, visible: Callable[[str], bool] | None = None, verified_by_use: frozenset[str] = frozenset()
    ) -> list[CategoryStats]:
        """Per category: skills, executable ones, verified ones (used from three projects: `verified_by_use`)
        and mean quality, over the skills `visible` admits (None: every skill). One query, any view."""
        condition = "1"
        with self._guard():
            if visible is not None:
                self._conn.create_function(VISIBLE_FUNCTION, 1, visible, deterministic=True)
                condition = f"{VISIBLE_FUNCTION}(id)"
            self._conn.create_function(VERIFIED_FUNCTION, 1, verified_by_use.__contains__, deterministic=True)
            rows = self._conn.execute(
                f"""SELECT category, count(*), sum(executable), sum({VERIFIED_FUNCTION}(id)), avg(quality)
                   FROM skills WHERE {condition} GROUP BY category ORDER BY category"""
            ).fetchall()
        return [CategoryStats(r[0], r[1], r[2], r[3], round(r[4], 2)) for r in rows]

    @recovering
    def owners(self, root_index: int, relative: str) -> list[str]:
        """Ids of the skills whose sources hold this file (a folder above it with SKILL.md, or a three-file stem)."""
        parts = relative.split("/")
        keys = [f"{root_index}:{'/'.join(parts[:depth])}/{doc}" for depth in range(1, len(parts)) for doc in AGENT_DOCS]
        stem = parts[-1].rsplit(".", 1)[0].removesuffix("-SKILL")
        keys.append(f"{root_index}:{'/'.join([*parts[:-1], stem + '.md'])}")
        marks = ",".join("?" * len(keys))
        with self._guard():
            rows = self._conn.execute(
                f"SELECT skill_id FROM sources WHERE key IN ({marks}) AND skill_id IS NOT NULL", keys
            ).fetchall()
        return [r[0] for r in rows]

    @recovering
    def overview(self) -> list[IndexedSkill]:
        """Every skill's summary row (payload left encoded): what library statistics need."""
        with self._guard():
            rows = self._conn.execute(f"SELECT {ROW_COLUMNS} FROM skills ORDER BY id").fetchall()
        return [IndexedSkill.from_row(row) for row in rows]

    @recovering
    def count(self) -> int:
        with self._guard():
            self._current_caches()
            return self._count_documents()

    @recovering
    def source_findings(self) -> list[tuple[int, dict[str, Any]]]:
        """Every parse finding with the index of the root it belongs to."""
        with self._guard():
            rows = self._conn.execute("SELECT key, findings FROM sources ORDER BY key").fetchall()
        return [(int(key.split(":", 1)[0]), f) for key, raw in rows for f in json.loads(raw)]


def _pattern_shares(
    pattern: int, credits: list[list[tuple[float, float, float]]], rarity: list[float], whole: float
) -> tuple[float, float, float, float]:
    """For candidates holding the concepts as `pattern` says (`_with_coverage`): (the share held in the body alone,
    the coverage, its `coverage_factor`, the `lead_factor`), each credit added in the concepts' order."""
    held = in_body = anywhere = lead = 0.0
    for shift, (table, weight) in enumerate(zip(credits, rarity, strict=True)):
        where = (pattern >> (4 * shift)) & 15
        if where:
            held_credit, body_weight, lead_part = table[where - 1]
            held += held_credit
            if body_weight:
                in_body += body_weight
            lead += lead_part
            anywhere += weight
    body = in_body / anywhere if anywhere > 0 else 0.0
    return body, held / whole, coverage_factor(held / whole), lead_factor(lead / whole)


def _credits(weight: float, in_body_only: float) -> list[tuple[float, float, float]]:
    """A concept's coverage credits by where a skill holds it (`postings.where_bits`, 0-7): (its `held` credit,
    its weight if held in the body alone (else 0), its `lead` credit). Products, so the same float whichever row;
    written out, as building them in a loop cost a few microseconds a concept."""
    lead_held, lead_elsewhere = weight * lead_credit(True, in_body_only), weight * lead_credit(False, in_body_only)
    body, head = weight * in_body_only, weight * HEAD_CREDIT
    in_name = (weight * NAME_CREDIT, 0.0, lead_held)  # the name counts first, wherever else the skill holds it
    # by index: nowhere named, NAME, HEAD, NAME|HEAD, DESCRIPTION, NAME|DESCRIPTION, HEAD|DESCRIPTION, all three
    return [
        (body, weight, lead_elsewhere),
        in_name,
        (head, 0.0, lead_elsewhere),
        in_name,
        (body, weight, lead_held),
        in_name,
        (head, 0.0, lead_held),
        in_name,
    ]


def _ranked_sql(conditions: str) -> str:
    """Matches of an FTS expression (the first parameter) passing `conditions`, best BM25 first, at most
    the last parameter of them."""
    join = "" if conditions == "1" else "JOIN skills s ON s.rowid = f.rowid"
    return f"""SELECT f.rowid, bm25(skills_fts, {_WEIGHTS}) AS score FROM skills_fts f {join}
               WHERE skills_fts MATCH ? AND {conditions} ORDER BY score LIMIT ?"""


def _columns_expression(groups: list[tuple[str, list[str]]]) -> str:
    """An FTS5 expression ORing each group's expressions under its column filter (`_head_candidates`)."""
    return " OR ".join(f"{columns} : ({' OR '.join(group)})" for columns, group in groups)


# One phrase's matches with its bm25() under the field weights and where it is held (`postings.Posting.from_rows`)
_POSTING_SQL = f"""SELECT rowid, bm25(skills_fts, {_WEIGHTS}), bm25(skills_fts, {_NAME_ONLY}),
                          bm25(skills_fts, {_HEAD_ONLY}), bm25(skills_fts, {_DESCRIPTION_ONLY})
                   FROM skills_fts WHERE skills_fts MATCH ?"""


def _filter_sql(filters: SearchFilters) -> tuple[str, list[Any]]:
    conditions = ["1"]
    params: list[Any] = []
    if filters.category is not None:
        conditions.append("s.category = ?")
        params.append(filters.category)
    if filters.executable is not None:
        conditions.append("s.executable = ?")
        params.append(int(filters.executable))
    if filters.min_quality is not None:
        conditions.append("s.quality >= ?")
        params.append(filters.min_quality)
    if filters.visible is not None:
        conditions.append(f"{VISIBLE_FUNCTION}(s.id)")
    return " AND ".join(conditions), params
