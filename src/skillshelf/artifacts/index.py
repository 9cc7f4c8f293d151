"""The session search index: SQLite FTS5 (BM25, porter stemming), one file per set of project roots.

The same engine and rules as the skill index (`FtsIndex` and the words of library/indexing/): rows keyed by
(project, session id) with a signature of their files' mtimes and sizes, so a sync re-reads only
what changed; a missing, stale-schema or corrupt file is deleted and rebuilt; query words are
quoted, never FTS syntax. Skill ids mentioned in a session (`database/rls-policy`) are kept in
their own table so pattern reuse can be counted without a text search.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from skillshelf.library.indexing.fts import FtsIndex, recovering
from skillshelf.library.indexing.terms import match_expression, query_terms

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1
# bm25 weights in column order: title (and session id words), summary, sections, body
FIELD_WEIGHTS = (10.0, 5.0, 2.0, 1.0)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    rowid INTEGER PRIMARY KEY,
    project TEXT NOT NULL,
    session_id TEXT NOT NULL,
    signature TEXT NOT NULL,
    date TEXT NOT NULL,
    modified REAL NOT NULL,
    title TEXT NOT NULL,
    summary TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    UNIQUE (project, session_id)
);
CREATE INDEX IF NOT EXISTS sessions_recent ON sessions(date DESC, modified DESC);
CREATE TABLE IF NOT EXISTS mentions (
    ref TEXT NOT NULL,
    session INTEGER NOT NULL,
    PRIMARY KEY (ref, session)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_session ON mentions(session);
CREATE VIRTUAL TABLE IF NOT EXISTS sessions_fts USING fts5(
    title, summary, sections, body,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
"""
_TABLES = ("sessions", "mentions", "sessions_fts")
_COLUMNS = "s.project, s.session_id, s.date, s.modified, s.title, s.summary, s.tokens"
# Newest first among equal scores; ids last so the order is total and stable.
_RECENT = "s.date DESC, s.modified DESC, s.project, s.session_id"

SessionKey = tuple[str, str]  # (project, session id)


@dataclass(frozen=True)
class SessionDocument:
    """What the index stores about one session (built by the archive from its files)."""

    project: str
    session_id: str
    signature: str
    date: str
    modified: float
    title: str
    summary: str
    tokens: int
    sections: str
    body: str
    references: frozenset[str]


@dataclass(frozen=True)
class IndexedSession:
    project: str
    session_id: str
    date: str
    modified: float
    title: str
    summary: str
    tokens: int
    score: float  # relevance (higher is better); 0 when listing without a query


@dataclass(frozen=True)
class SessionRef:
    """A session that mentions something: enough to cite it or load it."""

    project: str
    session_id: str
    date: str | None


@dataclass(frozen=True)
class SessionFilters:
    projects: tuple[str, ...] | None = None  # None: every project
    since: str | None = None  # ISO dates, inclusive
    until: str | None = None


class ArtifactIndex(FtsIndex):
    SCHEMA = _SCHEMA
    SCHEMA_VERSION = SCHEMA_VERSION
    TABLES = _TABLES
    COUNT_TABLE = "sessions"
    FTS_TABLE = "sessions_fts"
    LABEL = "session index"

    # -- writes --------------------------------------------------------------------------
    def signatures(self) -> dict[SessionKey, str]:
        """Every session's stored signature. Each sync starts here, so a damaged file is replaced first."""
        self.renew_if_needed()
        rows = self._read_apart("SELECT project, session_id, signature FROM sessions")
        return {(str(project), str(session_id)): str(signature) for project, session_id, signature in rows}

    def apply(self, documents: Iterable[SessionDocument], removed: Iterable[SessionKey]) -> None:
        with self._transaction() as conn:
            for key in removed:
                self._delete(conn, key)
            for document in documents:
                self._delete(conn, (document.project, document.session_id))
                self._insert(conn, document)

    @staticmethod
    def _delete(conn: sqlite3.Connection, key: SessionKey) -> None:
        row = conn.execute("SELECT rowid FROM sessions WHERE project = ? AND session_id = ?", key).fetchone()
        if row is not None:
            conn.execute("DELETE FROM sessions_fts WHERE rowid = ?", row)
            conn.execute("DELETE FROM mentions WHERE session = ?", row)
            conn.execute("DELETE FROM sessions WHERE rowid = ?", row)

    @staticmethod
    def _insert(conn: sqlite3.Connection, doc: SessionDocument) -> None:
        cursor = conn.execute(
            """INSERT INTO sessions(project, session_id, signature, date, modified, title, summary, tokens)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
            (doc.project, doc.session_id, doc.signature, doc.date, doc.modified, doc.title, doc.summary, doc.tokens),
        )
        rowid = cursor.lastrowid
        # The id's words ("2025-11-05-auth-flow" -> auth flow) are searchable like the title.
        conn.execute(
            "INSERT INTO sessions_fts(rowid, title, summary, sections, body) VALUES (?, ?, ?, ?, ?)",
            (rowid, f"{doc.title}\n{doc.session_id}", doc.summary, doc.sections, doc.body),
        )
        conn.executemany(
            "INSERT OR IGNORE INTO mentions(ref, session) VALUES (?, ?)", [(ref, rowid) for ref in doc.references]
        )

    # -- reads ---------------------------------------------------------------------------
    @recovering
    def search(self, query: str, filters: SessionFilters, limit: int) -> list[IndexedSession]:
        """Ranked by BM25 (rounded, so near-equal scores tie), newest first among equals.

        An empty query (or one of stop words only) lists sessions newest first.
        """
        conditions, params = _filter_sql(filters)
        with self._guard():
            self._current_caches()
            expression = match_expression(self._informative(query_terms(query)))
            if expression is None:
                sql = f"SELECT {_COLUMNS}, 0.0 FROM sessions s WHERE {conditions} ORDER BY {_RECENT} LIMIT ?"
                rows = self._conn.execute(sql, [*params, limit]).fetchall()
            else:
                weights = ", ".join(str(w) for w in FIELD_WEIGHTS)
                sql = f"""SELECT {_COLUMNS}, bm25(sessions_fts, {weights}) AS score
                          FROM sessions_fts f JOIN sessions s ON s.rowid = f.rowid
                          WHERE sessions_fts MATCH ? AND {conditions}
                          ORDER BY s.session_id != ?, round(score, 2), {_RECENT} LIMIT ?"""
                rows = self._conn.execute(sql, [expression, *params, query.strip(), limit]).fetchall()
        best = max((-row[-1] for row in rows), default=0.0)
        return [_session(row, best) for row in rows]

    @recovering
    def mentioning(self, refs: Sequence[str]) -> dict[str, list[SessionRef]]:
        """For each ref (case-insensitive), the sessions that mention it, newest first."""
        wanted = {ref.lower(): ref for ref in refs}
        found: dict[str, list[SessionRef]] = {ref: [] for ref in refs}
        if not wanted:
            return found
        marks = ",".join("?" * len(wanted))
        sql = f"""SELECT m.ref, s.project, s.session_id, s.date FROM mentions m JOIN sessions s ON s.rowid = m.session
                  WHERE m.ref IN ({marks}) ORDER BY {_RECENT}"""
        with self._guard():
            rows = self._conn.execute(sql, list(wanted)).fetchall()
        for ref, project, session_id, date in rows:
            found[wanted[ref]].append(SessionRef(project, session_id, date))
        return found

    @recovering
    def count(self) -> int:
        with self._guard():
            return int(self._conn.execute("SELECT count(*) FROM sessions").fetchone()[0])


def _session(row: Any, best: float) -> IndexedSession:
    """A session hit; its score relative to the best hit (1.0), as skills' are. A match is never 0.0: when
    BM25 cannot tell the hits apart (a word every session holds scores about 0), each match scores 1.0."""
    project, session_id, date, modified, title, summary, tokens, score = row
    if score == 0.0:  # a listing without a query
        relevance = 0.0
    elif best <= 1e-9:
        relevance = 1.0
    else:
        relevance = max(round(-score / best, 3), 0.001)
    return IndexedSession(project, session_id, date, modified, title, summary, tokens, relevance)


def _filter_sql(filters: SessionFilters) -> tuple[str, list[Any]]:
    conditions = ["1"]
    params: list[Any] = []
    if filters.projects is not None:
        conditions.append(f"s.project IN ({','.join('?' * len(filters.projects))})")
        params.extend(filters.projects)
    if filters.since is not None:
        conditions.append("s.date >= ?")
        params.append(filters.since)
    if filters.until is not None:
        conditions.append("s.date <= ?")
        params.append(filters.until)
    return " AND ".join(conditions), params
