"""Optional semantic search: a vector per skill (its name and description, a short description completed
with the body's first paragraph), kept beside the index.

Words alone miss a user who describes the problem in other words ("make answers shorter to save
tokens" for a skill called steno-mode). With `semantic_model` set, every skill's name and
description is embedded by a sentence model (`skillshelf.library.semantic.encoder`) and a search fuses the
word ranking with the nearest vectors (reciprocal rank fusion).

Embedding takes far longer than a search (figures: docs/search.md), so it never delays an answer: a background
thread embeds what is new or changed after every sync and stores the vectors in their own SQLite
file (keyed by skill id and a digest of the text, tagged with the model's fingerprint), so a restart
re-embeds nothing. Until a skill has its vector, searches rank it by words alone.

Nothing here imports NumPy until semantic search is configured and started.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from skillshelf.library.db import is_corruption
from skillshelf.library.locks import file_lock
from skillshelf.library.semantic.install import NUMPY_MISSING
from skillshelf.library.skill.paths import display_path

if TYPE_CHECKING:
    from skillshelf.library.semantic.encoder import Matrix, SentenceEncoder

logger = logging.getLogger(__name__)

# Texts per encoder call, shortest first: the encoder batches them by length (SentenceEncoder.encode); between
# calls the pass stores what it made, reports progress and sees a stop.
BATCH = 64
# Vectors stored between refreshes of the in-memory matrix during a long pass: at least this many, and at
# least half as many as it holds, so a first pass over 100,000 skills reloads the matrix ~20 times, not 400.
PUBLISH_EVERY = 256
QUERY_CACHE = 256  # recent query vectors kept (an agent often repeats or refines a query)
# Threads that compute query vectors while the caller ranks by words (start_query): a vector takes longer than a
# word search, so the two overlap; at most this many at once, as the encoder runs one BLAS thread each.
QUERY_WORKERS = 2
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS vectors (skill_id TEXT PRIMARY KEY, digest TEXT NOT NULL, vector BLOB NOT NULL);
"""


# A description of fewer words is a title or a label ("Runbook Generator"), not what the skill does: its vector
# stood for little more than the name, and meaning missed everyday descriptions of the task (issue 25, H17).
SHORT_DESCRIPTION = 12
LEAD_WORDS = 60  # of the body's first paragraph, completing a short description
_NOT_PROSE = ("#", "-", "*", "|", ">", "`", "<")  # headings, lists, bold labels, tables, quotes, code, markup


def skill_text(name: str, description: str, body: str = "") -> str:
    """What a skill's vector stands for: its name in words and its description, completed with the body's
    first paragraph when the description is too short to say what the skill does."""
    if len(description.split()) < SHORT_DESCRIPTION and (lead := first_paragraph(body)):
        description = f"{description}. {lead}" if description.strip() else lead
    return f"{name.replace('-', ' ').replace('_', ' ')}: {description}"


def first_paragraph(body: str, words: int = LEAD_WORDS) -> str:
    """The first `words` words of the body's first line of prose (8 words or more; not a heading, list item,
    bold label such as "**Tier:** POWERFUL", table, quote, code or markup)."""
    for line in body.splitlines():
        text = line.strip()
        if not text.startswith(_NOT_PROSE) and len(text.split()) >= 8:
            return " ".join(text.split()[:words])
    return ""


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Closeness:
    """How close skills are to a query by meaning (cosine similarity of unit vectors, -1 to 1)."""

    nearest: list[tuple[str, float]]  # the closest admitted skills at or above the floor, closest first
    of: dict[str, float]  # the similarity of each skill asked about that has a vector


@dataclass(frozen=True)
class _Vectors:
    ids: list[str]
    digests: list[str]  # of the text each vector was computed from
    matrix: Matrix  # one unit vector a row, in the order of `ids`
    rows: dict[str, int]  # id -> its row


class SemanticIndex:
    """Skill vectors on disk and in memory, filled by a background thread; `nearest` for searches."""

    def __init__(self, model: Path, path: Path, texts: Callable[[], list[tuple[str, str]]]) -> None:
        self.model_folder = model
        self.path = path
        self._texts = texts  # (skill id, text to embed) for every skill in the index now
        self._encoder: SentenceEncoder | None = None
        self._snapshot: _Vectors | None = None  # replaced whole, so a search never sees a half-updated one
        self._queries: OrderedDict[str, Matrix] = OrderedDict()
        self._pending: dict[str, Future[Matrix]] = {}  # query vectors being computed (start_query)
        self._query_lock = threading.Lock()
        self._query_workers: ThreadPoolExecutor | None = None

        self._wanted = threading.Event()
        self._stopping = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        # set once the vectors stored by earlier runs are in memory, or semantic search turned off: what the first
        # search after a restart waits for (briefly), so it does not rank by words alone without saying so
        self._loaded = threading.Event()
        self._waited = False  # only one search waits: another process embedding for minutes must not slow each
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()  # syncs end on several threads (starter, watcher, reads)
        self.error: str | None = None  # why semantic search is off (a bad model folder, an unwritable file)
        self.progress: tuple[int, int] = (0, 0)  # (embedded, to embed) in the pass under way

    # -- lifecycle -------------------------------------------------------------------------
    def request_pass(self) -> None:
        """Embed what changed, soon, on the background thread (started on first request)."""
        if self._stopping.is_set():
            return
        self._idle.clear()
        self._wanted.set()
        with self._thread_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="skillshelf-embed", daemon=True)
                self._thread.start()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no pass is wanted or under way; False on timeout. A server never waits; a one-shot
        CLI search does, briefly (vectors stored by earlier runs load in well under a second)."""
        return self._idle.wait(timeout)

    def wait_loaded(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for the stored vectors to be in memory, asking for the pass that loads
        them if none is under way (a warm start answers before its first sync ends, and that sync's end is
        what asks for a pass). Only the first call waits. True when they are: a search then ranks by meaning."""
        if self._loaded.is_set():
            return self.ready
        if not self._stopping.is_set():
            self.request_pass()
        with self._query_lock:
            waited, self._waited = self._waited, True
        return self._loaded.wait(0 if waited else timeout) and self.ready

    def close(self) -> None:
        self._stopping.set()
        self._loaded.set()
        self._wanted.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._query_lock:
            workers, self._query_workers = self._query_workers, None
        if workers is not None:
            workers.shutdown(wait=True, cancel_futures=True)

    @property
    def ready(self) -> bool:
        return self._snapshot is not None and self.error is None

    def status(self) -> dict[str, object]:
        done, total = self.progress
        state = "off" if self.error else ("embedding" if not self._idle.is_set() else "ready")
        found: dict[str, object] = {"status": state, "vectors": len(self._snapshot.ids) if self._snapshot else 0}
        if state == "embedding":
            found["progress"] = {"embedded": done, "toEmbed": total}
        if self.error:
            found["error"] = self.error
        return found

    def note(self) -> str | None:
        """What a search answer says while it does not rank every skill by meaning: vectors still being
        computed, or semantic search off (with why). None once every skill has its vector."""
        if self.error:
            return f"semantic search is off ({self.error}); these hits rank by words only"
        if self._snapshot is None and self._idle.is_set():
            return "semantic search is loading its stored vectors; these hits rank by words only. Search again."
        if self._idle.is_set():
            return None
        done, total = self.progress
        counted = f" ({done} of {total} skills)" if total else ""
        return (
            f"semantic search is still embedding the library{counted}; skills not yet embedded rank by words "
            "only. Search again in a minute."
        )

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            if self._stopping.is_set():
                self._idle.set()
                return
            self._wanted.clear()
            try:
                self._pass_rebuilding_if_damaged()
                self.error = None
            except Exception as exc:  # semantic search is an extra: words keep answering without it
                self.error = _why_off(exc)
                logger.warning("semantic search is off: %s", self.error)
            self._loaded.set()  # loaded, or off: a first search waits no longer either way
            if not self._wanted.is_set():
                self._idle.set()

    # -- embedding ---------------------------------------------------------------------------
    def _load_encoder(self) -> SentenceEncoder:
        if self._encoder is None:
            from skillshelf.library.semantic.encoder import SentenceEncoder  # NumPy only when configured

            self._encoder = SentenceEncoder(self.model_folder)
        return self._encoder

    def _pass_rebuilding_if_damaged(self) -> None:
        """One pass; a file SQLite proves damaged is moved aside and the pass runs again on a new one.

        One process embeds a library at a time (a lock beside the file); the others wait, then find
        nothing left to do. The damaged file is moved under that lock, so it is never one another
        process has just made.
        """
        encoder = self._load_encoder()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(self.path.with_name(self.path.name + ".lock")):
            try:
                self._pass(encoder)
            except sqlite3.DatabaseError as exc:
                if not is_corruption(exc):
                    raise
                aside = self.path.with_name(f"{self.path.name}.corrupt")  # only the latest: it is a cache
                for suffix in ("", "-wal", "-shm"):
                    source = Path(f"{self.path}{suffix}")
                    if source.exists():
                        source.replace(Path(f"{aside}{suffix}"))
                shown = display_path(self.path)
                logger.warning("%s is damaged (%s); kept it as %s and recomputing the vectors", shown, exc, aside.name)
                self._pass(encoder)

    def _pass(self, encoder: SentenceEncoder) -> None:
        with closing(_connect(self.path)) as conn:
            if _stored_fingerprint(conn) != encoder.fingerprint:
                conn.execute("DELETE FROM vectors")
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('model', ?)", (encoder.fingerprint,))
                conn.commit()
            stored: dict[str, str] = dict(conn.execute("SELECT skill_id, digest FROM vectors").fetchall())
            if self._snapshot is None:
                self._publish(conn, encoder, stored)  # what earlier runs stored answers at once
                self._loaded.set()  # before the texts are read and compared: a first search is waiting
            current = {skill_id: (text, _digest(text)) for skill_id, text in self._texts()}
            gone = [skill_id for skill_id in stored if skill_id not in current]
            todo = [(i, t, d) for i, (t, d) in current.items() if stored.get(i) != d]
            todo.sort(key=lambda item: len(item[1]))  # similar lengths batch with little padding
            conn.executemany("DELETE FROM vectors WHERE skill_id = ?", [(i,) for i in gone])
            conn.commit()
            for skill_id in gone:
                del stored[skill_id]
            self.progress = (0, len(todo))
            since_publish = 0
            for start in range(0, len(todo), BATCH):
                if self._stopping.is_set():
                    return
                batch = todo[start : start + BATCH]
                vectors = encoder.encode([text for _, text, _ in batch])
                conn.executemany(
                    "INSERT OR REPLACE INTO vectors VALUES (?, ?, ?)",
                    [(i, d, v.tobytes()) for (i, _, d), v in zip(batch, vectors, strict=True)],
                )
                conn.commit()
                stored.update({i: d for i, _, d in batch})
                self.progress = (start + len(batch), len(todo))
                since_publish += len(batch)
                held = len(self._snapshot.ids) if self._snapshot else 0
                if since_publish >= max(PUBLISH_EVERY, held // 2):
                    self._publish(conn, encoder, stored)
                    since_publish = 0
            if todo or gone:
                self._publish(conn, encoder, stored)
            if todo:
                logger.info("semantic search: embedded %d skills", len(todo))

    def _publish(self, conn: sqlite3.Connection, encoder: SentenceEncoder, stored: dict[str, str]) -> None:
        """Make the in-memory matrix hold the stored vectors (`stored`: id -> digest). Rows already in
        memory with the same digest are kept; only new or changed ones are read (reading them all again
        after one edit would be 150 MB at 100,000 skills)."""
        import numpy as np

        old = self._snapshot
        old_ids, old_digests = (old.ids, old.digests) if old else ([], [])
        old_matrix = old.matrix if old else np.zeros((0, encoder.dimensions), np.float32)
        keep = [row for row, (i, d) in enumerate(zip(old_ids, old_digests, strict=True)) if stored.get(i) == d]
        kept = {old_ids[row] for row in keep}
        wanted = [i for i in stored if i not in kept]
        rows: list[tuple[str, str, bytes]] = []
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            sql = f"SELECT skill_id, digest, vector FROM vectors WHERE skill_id IN ({','.join('?' * len(chunk))})"
            rows += conn.execute(sql, chunk).fetchall()
        read = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float32).reshape(len(rows), encoder.dimensions)
        ids = [old_ids[row] for row in keep] + [row[0] for row in rows]
        self._snapshot = _Vectors(
            ids,
            [old_digests[row] for row in keep] + [row[1] for row in rows],
            np.vstack([old_matrix[keep], read]),
            {skill_id: row for row, skill_id in enumerate(ids)},
        )

    # -- searching -------------------------------------------------------------------------
    def nearest(
        self, query: str, admits: Callable[[list[str]], set[str]], want: int, floor: float, also: Iterable[str] = ()
    ) -> Closeness:
        """Up to `want` skill ids by cosine similarity to the query, best first, at least `floor`,
        among those `admits` lets through (filters and views apply before ranking); and the similarity
        of each skill in `also` that has a vector (the word ranking's candidates, for the fusion)."""
        snapshot = self._snapshot
        if snapshot is None or self.error is not None or self._encoder is None:
            return Closeness([], {})
        import numpy as np

        ids, matrix, rows = snapshot.ids, snapshot.matrix, snapshot.rows
        if not ids:
            return Closeness([], {})
        similarity = matrix @ self._query_vector(query)
        above = int(np.count_nonzero(similarity >= floor))
        found: list[tuple[str, float]] = []
        step = want * 4
        for start in range(0, above, step):
            # only the best `start + step` are ever sorted (a whole argsort at 100,000 skills: several ms)
            stop = min(above, start + step)
            best = np.argpartition(-similarity, stop - 1)[:stop] if stop < len(ids) else np.arange(len(ids))
            ranked = best[np.argsort(-similarity[best], kind="stable")][start:stop]
            chunk = [int(i) for i in ranked]
            allowed = admits([ids[i] for i in chunk])
            found += [(ids[i], float(similarity[i])) for i in chunk if ids[i] in allowed]
            if len(found) >= want:
                break
        of = {skill_id: float(similarity[rows[skill_id]]) for skill_id in also if skill_id in rows}
        return Closeness(found[:want], of)

    def start_query(self, query: str) -> None:
        """Begin computing `query`'s vector on a worker thread, so the caller can rank by words meanwhile:
        `nearest` for the same query then takes it (waits for it, or computes it itself if no worker has begun).
        A vector takes longer than a word search (docs/search.md), and the encoder's matrix products let the
        caller's thread run beside them. Nothing happens for a query whose vector is cached or under way, or
        before semantic search is ready."""
        if not self.ready or self._encoder is None or self._stopping.is_set():
            return
        with self._query_lock:
            if query in self._queries or query in self._pending:
                return
            if self._query_workers is None:
                self._query_workers = ThreadPoolExecutor(QUERY_WORKERS, thread_name_prefix="skillshelf-query")
            future = self._query_workers.submit(self._encode, query)
            self._pending[query] = future
        future.add_done_callback(lambda done: self._settle(query, done))

    def _settle(self, query: str, future: Future[Matrix]) -> None:
        """A vector computed ahead goes to the cache, whether or not a search is waiting for it."""
        with self._query_lock:
            if self._pending.get(query) is future:
                del self._pending[query]
            if not future.cancelled() and future.exception() is None:
                self._remember(query, future.result())

    def _encode(self, query: str) -> Matrix:
        assert self._encoder is not None
        vector: Matrix = self._encoder.encode([query])[0]
        return vector

    def _query_vector(self, query: str) -> Matrix:
        with self._query_lock:
            cached = self._queries.get(query)
            if cached is not None:
                self._queries.move_to_end(query)
                return cached
            pending = self._pending.get(query)
        # a worker that has not begun (every core busy, or the GIL held by the word search) is not waited for:
        # the vector is computed here instead, saving the hand-off to the worker and back (issue 36)
        if pending is not None and not pending.cancel():
            return pending.result()  # an encoder error raises here, as it would computed in this thread
        vector = self._encode(query)
        with self._query_lock:
            self._remember(query, vector)
        return vector

    def _remember(self, query: str, vector: Matrix) -> None:
        """Keep a query's vector among the recent ones (under _query_lock)."""
        self._queries[query] = vector
        self._queries.move_to_end(query)
        while len(self._queries) > QUERY_CACHE:
            self._queries.popitem(last=False)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.executescript(_SCHEMA)
    except sqlite3.Error:
        conn.close()  # a damaged file: the caller rebuilds it, and no handle may stay open on it
        raise
    return conn


def _stored_fingerprint(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
    return None if row is None else str(row[0])


def _why_off(exc: Exception) -> str:
    """What a search answer and the log say turned semantic search off: the one NumPy hint when the encoder
    could not import it, else the error itself."""
    if isinstance(exc, ImportError) and (exc.name or "").split(".")[0] == "numpy":
        return NUMPY_MISSING
    return f"{type(exc).__name__}: {getattr(exc, 'message', exc)}"
