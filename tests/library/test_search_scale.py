"""Search at scale: past `SCORED_MATCHES` partial matches, candidates come from the name, description,
tags and headings, and are scored on every field exactly as the full scoring would score them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from skillshelf.library.index import store
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.query import concepts
from skillshelf.library.index.store import SearchFilters
from tests.conftest import agent_skill

INVOICES = 30  # more than the candidate pool the tests set (20): the head-field matches fill it
POOL = 20


@pytest.fixture
def library(tmp_path: Path) -> Iterator[SkillLibrary]:
    root = tmp_path / "lib"
    for n in range(INVOICES):
        words = "invoice totals" if n % 2 else "invoice ledger"
        agent_skill(root, "billing", f"invoice-{n}", f"name: invoice-{n}\ndescription: Check {words}, batch {n}.")
    agent_skill(
        root, "billing", "reconcile", "name: reconcile\ndescription: Reconcile an invoice against the ledger totals."
    )
    for n in range(40):  # unrelated: no query word is in over half the skills
        agent_skill(root, "garden", f"plant-{n}", f"name: plant-{n}\ndescription: Grow tomatoes, bed {n}.")
    for n in range(5):  # two of the words only in a long body: a partial match nowhere else
        body = "# Notes\n\n" + "Some ledger and totals talk. " * 40 + f"Part {n}.\n"
        agent_skill(root, "notes", f"meeting-{n}", f"name: meeting-{n}\ndescription: Minutes of meeting {n}.", body)
    shelf = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    shelf.sync()
    yield shelf
    shelf.close()


def ranked(
    library: SkillLibrary, query: str, monkeypatch: pytest.MonkeyPatch, scored: int, pool: int = POOL
) -> dict[str, float]:
    """Every candidate's score, with `scored` as SCORED_MATCHES and a candidate pool of `pool`."""
    monkeypatch.setattr(store, "SCORED_MATCHES", scored)
    monkeypatch.setattr(store, "CANDIDATES", pool)
    index = library.index
    with index._guard():
        by_rowid = index._rank(index._matchable(concepts(query)), "1", [], 3)
        names = dict(index._conn.execute("SELECT rowid, id FROM skills").fetchall())
    return {names[rowid]: score for rowid, score in by_rowid.items()}


QUERY = "invoice ledger totals"


def test_head_field_candidates_score_exactly_as_when_every_partial_match_is_scored(
    library: SkillLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    everything = ranked(library, QUERY, monkeypatch, scored=10**9)
    from_head = ranked(library, QUERY, monkeypatch, scored=0)
    assert len(from_head) == POOL  # the skill holding every word, and the rest of the pool from the head fields
    shared = set(from_head) & set(everything)
    assert len(shared) >= POOL // 2
    for skill_id in shared:
        assert from_head[skill_id] == pytest.approx(everything[skill_id], rel=1e-12)
    assert max(from_head, key=from_head.__getitem__) == "billing/reconcile"  # every word: coverage still counts
    assert max(everything, key=everything.__getitem__) == "billing/reconcile"


def test_past_the_threshold_a_body_only_match_is_no_candidate_and_below_it_it_competes(
    library: SkillLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    meetings = {f"notes/meeting-{n}" for n in range(5)}
    assert meetings <= set(ranked(library, QUERY, monkeypatch, scored=10**9, pool=100))
    assert not meetings & set(ranked(library, QUERY, monkeypatch, scored=0))


def test_with_too_few_head_field_matches_every_partial_match_competes(
    library: SkillLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'talk' is in the meetings' bodies alone: no head field holds it, and the bodies' matches are found."""
    monkeypatch.setattr(store, "SCORED_MATCHES", 0)
    hits = [s.id for s in library.search("talk minutes", SearchFilters(), 10)]
    assert hits and set(hits) <= {f"notes/meeting-{n}" for n in range(5)}


def test_the_independent_generators_decoys_keep_their_answer_in_the_top_five(tmp_path: Path) -> None:
    """Its decoy queries: the answer holds every (specific) word of the query in its body, another skill two of
    them in its name. Counting every body word at 0.1 of a name's (a first form of issue 25's change) lost 35
    of 100 at 10,000 skills; a body word now counts by how specific it is."""
    from bench import gen_independent

    root = tmp_path / "generated"
    gen_independent.ensure_library(root, 2000, seed=11, n_queries=200)
    shelf = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    try:
        shelf.sync()
        queries = gen_independent.load_queries(root)
        found = {q["query"]: [s.id for s in shelf.search(q["query"], SearchFilters(), 5)] for q in queries}
        missed = [q["query"] for q in queries if q["answer"] not in found[q["query"]]]
    finally:
        shelf.close()
    assert len(queries) == 200 and not missed, missed[:5]


def test_past_the_threshold_a_word_matching_that_many_alone_brings_candidates_by_the_name_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """'release' matches more skills than SCORED_MATCHES (here 10) on its own, 'changelog' fewer. The head-column
    read takes the rarer word in every head column but the frequent one in names alone: skills saying 'release'
    only in their descriptions (most of that read's rows in a large library) bring no candidate, and every
    candidate is still scored on both words."""
    root = tmp_path / "lib"
    agent_skill(root, "docs", "changelog-writer", "name: changelog-writer\ndescription: Write the changelog.")
    for n in range(POOL):
        name = f"release-tooling-for-a-very-large-monorepo-{n}"
        agent_skill(root, "ship", name, f"name: {name}\ndescription: Tag versions of package {n}.")
    for n in range(12):
        agent_skill(root, "ship", f"train-{n}", f"name: train-{n}\ndescription: Release, release, release {n}.")
    for n in range(50):
        agent_skill(root, "garden", f"plant-{n}", f"name: plant-{n}\ndescription: Grow tomatoes, bed {n}.")
    shelf = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    try:
        shelf.sync()
        scores = ranked(shelf, "release changelog", monkeypatch, scored=10)
        everything = ranked(shelf, "release changelog", monkeypatch, scored=10**9, pool=100)
    finally:
        shelf.close()
    assert len(scores) == POOL and "docs/changelog-writer" in scores
    assert all(skill_id.startswith("ship/release-tooling-") for skill_id in scores.keys() - {"docs/changelog-writer"})
    assert set(everything) > set(scores)  # the trains are partial matches when every one is scored
    for skill_id, score in scores.items():
        assert score == pytest.approx(everything[skill_id], rel=1e-12)
