"""The persistent search index: SQLite with FTS5 (BM25, porter stemming), one file per root set.

Rows are keyed by source; each source's signature (mtimes and sizes) says when to re-parse, so
a warm start re-reads nothing and a change re-reads only what changed. The index is derived
data: a missing, stale-schema or corrupt file is deleted and rebuilt.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from skillshelf.library.fts import FtsIndex
from skillshelf.library.layouts import summary
from skillshelf.library.models import Finding, Skill, SkillSource

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 5
# bm25 weights in column order: name, description, tags, headings, body
FIELD_WEIGHTS = (10.0, 5.0, 4.0, 2.0, 1.0)
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
    verified INTEGER NOT NULL,
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
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "this",
        "to",
        "use",
        "using",
        "want",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "need",
        "needs",
        "should",
        "could",
        "get",
    ]
)
_WORD = re.compile(r"\w+", re.UNICODE)


def name_key(text: str) -> str:
    """Names compared loosely: case, hyphens and underscores do not matter."""
    return " ".join(_WORD.findall(text.lower().replace("_", " ")))


def query_terms(query: str) -> list[str]:
    """The words of a natural-language query worth matching: no stop words, no duplicates."""
    words = [w for w in _WORD.findall(query.lower()) if w != "_"]
    meaningful = [w for w in words if w not in STOPWORDS] or words
    return list(dict.fromkeys(meaningful))[:32]


def match_expression(terms: list[str]) -> str | None:
    """Terms as an FTS5 OR-expression of quoted strings, so no FTS syntax from a query leaks through."""
    return " OR ".join(f'"{w}"' for w in terms) if terms else None


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


@dataclass(frozen=True)
class IndexedSkill:
    id: str
    name: str
    category: str
    layout: str
    summary: str
    quality: float
    quality_source: str
    quality_verified: bool  # quality of at least 7.0; SkillLibrary.is_verified adds verification by use
    executable: bool
    tokens: int
    payload_json: str

    @cached_property
    def details(self) -> SkillDetails:
        """Everything else about the skill; decoded only when a caller needs it (hits do not)."""
        return SkillDetails.model_validate_json(self.payload_json)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> IndexedSkill:
        return cls(
            id=row["id"],
            name=row["name"],
            category=row["category"],
            layout=row["layout"],
            summary=row["summary"],
            quality=row["quality"],
            quality_source=row["quality_source"],
            quality_verified=bool(row["verified"]),
            executable=bool(row["executable"]),
            tokens=row["tokens"],
            payload_json=row["payload"],
        )


@dataclass(frozen=True)
class SearchFilters:
    category: str | None = None
    executable: bool | None = None
    min_quality: float | None = None


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

    # -- writes --------------------------------------------------------------------------
    def signatures(self) -> dict[str, str]:
        with self._lock:
            return {row[0]: row[1] for row in self._conn.execute("SELECT key, signature FROM sources")}

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
                   quality_source, verified, executable, tokens, payload)
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
                int(skill.quality.verified),
                int(skill.executable),
                skill.load_tokens,
                details.model_dump_json(by_alias=True),
            ),
        )
        names = skill.declared_name if skill.declared_name == skill.name else f"{skill.declared_name} {skill.name}"
        conn.execute(
            "INSERT INTO skills_fts(rowid, name, description, tags, headings, body) VALUES (?, ?, ?, ?, ?, ?)",
            (cursor.lastrowid, names, skill.description, " ".join(skill.tags), "\n".join(skill.headings), skill.body),
        )

    # -- reads ---------------------------------------------------------------------------
    def search(self, query: str, filters: SearchFilters, limit: int) -> list[IndexedSkill]:
        """Ranked hits: an exact name first, then BM25, quality breaking (near-)ties.

        Ranking selects only rowids and scores, and full rows are fetched for the winners alone:
        sorting thousands of matches with their payloads attached was the slow part.
        """
        conditions, params = _filter_sql(filters)
        with self._lock:
            expression = match_expression(self._informative(query_terms(query)))
            if expression is None:
                sql = f"SELECT s.rowid FROM skills s WHERE {conditions} ORDER BY s.quality DESC, s.id LIMIT ?"
                ranked = [(row[0], 0.0) for row in self._conn.execute(sql, [*params, limit])]
                return self._fetch(ranked, set(), limit)
            weights = ", ".join(str(w) for w in FIELD_WEIGHTS)
            join = "" if not params else "JOIN skills s ON s.rowid = f.rowid"
            sql = f"""SELECT f.rowid, bm25(skills_fts, {weights}) AS score FROM skills_fts f {join}
                      WHERE skills_fts MATCH ? AND {conditions} ORDER BY score LIMIT ?"""
            ranked = [(row[0], row[1]) for row in self._conn.execute(sql, [expression, *params, limit * 3])]
            exact_sql = f"SELECT s.rowid FROM skills s WHERE (s.name_key = ? OR s.id = ?) AND {conditions}"
            exact = {row[0] for row in self._conn.execute(exact_sql, [name_key(query), query.strip(), *params])}
            known = {rowid for rowid, _ in ranked}
            ranked.extend((rowid, float("-inf")) for rowid in exact - known)
            return self._fetch(ranked, exact, limit)

    def _fetch(self, ranked: list[tuple[int, float]], exact: set[int], limit: int) -> list[IndexedSkill]:
        """Order candidates (exact name, score to 2 decimals, quality, id); load full rows for the winners."""
        if not ranked:
            return []
        marks = ",".join("?" * len(ranked))
        keys = {
            row[0]: (row[1], row[2])
            for row in self._conn.execute(
                f"SELECT rowid, quality, id FROM skills WHERE rowid IN ({marks})", [r for r, _ in ranked]
            )
        }
        order = sorted(
            (item for item in ranked if item[0] in keys),
            key=lambda item: (item[0] not in exact, round(item[1], 2), -keys[item[0]][0], keys[item[0]][1]),
        )
        winners = [rowid for rowid, _ in order[:limit]]
        marks = ",".join("?" * len(winners))
        rows = {row["rowid"]: row for row in self._conn.execute(
            f"SELECT * FROM skills WHERE rowid IN ({marks})", winners
        )}  # fmt: skip
        return [IndexedSkill.from_row(rows[rowid]) for rowid in winners]

    def get(self, skill_id: str) -> IndexedSkill | None:
        with self._lock:
            row = self._conn.execute("SELECT * FROM skills WHERE id = ?", (skill_id,)).fetchone()
        return IndexedSkill.from_row(row) if row else None

    def ids_and_names(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(r[0], r[1]) for r in self._conn.execute("SELECT id, name FROM skills")]

    def has_category(self, name: str) -> bool:
        with self._lock:
            return self._conn.execute("SELECT 1 FROM skills WHERE category = ? LIMIT 1", (name,)).fetchone() is not None

    def categories(self) -> list[CategoryStats]:
        with self._lock:
            rows = self._conn.execute(
                """SELECT category, count(*), sum(executable), sum(verified), avg(quality)
                   FROM skills GROUP BY category ORDER BY category"""
            ).fetchall()
        return [CategoryStats(r[0], r[1], r[2], r[3], round(r[4], 2)) for r in rows]

    def overview(self) -> list[IndexedSkill]:
        """Every skill's summary row (payload left encoded): what library statistics need."""
        with self._lock:
            rows = self._conn.execute("SELECT * FROM skills ORDER BY id").fetchall()
        return [IndexedSkill.from_row(row) for row in rows]

    def count(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT count(*) FROM skills").fetchone()[0])

    def source_findings(self) -> list[tuple[int, dict[str, Any]]]:
        """Every parse finding with the index of the root it belongs to."""
        with self._lock:
            rows = self._conn.execute("SELECT key, findings FROM sources ORDER BY key").fetchall()
        return [(int(key.split(":", 1)[0]), f) for key, raw in rows for f in json.loads(raw)]


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
    return " AND ".join(conditions), params
