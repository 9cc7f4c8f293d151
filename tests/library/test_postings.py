"""A search's ranked reads from each phrase's postings in memory (library/index/postings.py): the same hits and
scores, to the bit, as the SQL statements they replace; never stale after a write; bounded."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench import generate
from skillshelf.library.index import store
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.postings import DESCRIPTION, HEAD, NAME, Posting, Postings, held, ranked
from skillshelf.library.index.query import concepts
from skillshelf.library.index.store import SearchFilters, SkillIndex
from tests.conftest import agent_skill

SKILLS = 300
EVERY_READ_IN_SQL = -1  # POSTED_MATCHES under which every concept keeps its reads in SQL (the former path)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SkillLibrary, list[str]]]:
    root = tmp_path_factory.mktemp("postings") / "lib"
    generate.generate(root, SKILLS, seed=3, n_queries=40)
    shelf = SkillLibrary(LibraryConfig(roots=[root], index_dir=root.parent / "idx", watch=False))
    shelf.sync()
    yield shelf, [q["query"] for q in generate.load_queries(root)]
    shelf.close()


def ranks(index: SkillIndex, queries: list[str], limit: int) -> list[tuple[object, ...]]:
    """Each query's candidates with their scores (in order), body shares and coverages, as `_rank` gives them."""
    found: list[tuple[object, ...]] = []
    with index._guard():
        for query in queries:
            held = store.HeldShares()
            scores = index._rank(index._matchable(concepts(query)), "1", [], limit, held)
            found.append((list(scores.items()), [(rowid, held.of(rowid)) for rowid in held.pattern]))
    return found


@pytest.mark.parametrize("scored", [store.SCORED_MATCHES, 50])  # 50: the head-column read, past SCORED_MATCHES
@pytest.mark.parametrize("at_once", [10**9, 10])  # 10: some concepts' reads in SQL until a search asked for them
def test_the_postings_rank_every_query_as_the_sql_does_to_the_bit(
    generated: tuple[SkillLibrary, list[str]], monkeypatch: pytest.MonkeyPatch, scored: int, at_once: int
) -> None:
    shelf, queries = generated
    with shelf.index._guard():
        shelf.index._forget_derived()
    for limit in (5, 10, 50):
        monkeypatch.setattr(store, "SCORED_MATCHES", scored)
        monkeypatch.setattr(store, "READ_AT_ONCE", at_once)
        from_postings = ranks(shelf.index, queries, limit)
        monkeypatch.setattr(store, "POSTED_MATCHES", EVERY_READ_IN_SQL)
        from_sql = ranks(shelf.index, queries, limit)
        monkeypatch.undo()
        assert from_postings == from_sql  # floats compared with ==: the same bits, and the same order of ties


@pytest.mark.parametrize(
    "filters",
    [
        SearchFilters(),
        SearchFilters(min_quality=0.5),
        SearchFilters(executable=True),
        SearchFilters(visible=lambda skill_id: len(skill_id) % 2 == 0),
    ],
    ids=["none", "min_quality", "executable", "visible"],
)
def test_a_search_with_or_without_filters_answers_as_the_sql_does(
    generated: tuple[SkillLibrary, list[str]], monkeypatch: pytest.MonkeyPatch, filters: SearchFilters
) -> None:
    shelf, queries = generated
    category = shelf.index.overview()[0].category
    cases = [filters, SearchFilters(category=category, min_quality=filters.min_quality, visible=filters.visible)]
    from_postings = [shelf.index.search(q, f, 10) for q in queries for f in cases]
    monkeypatch.setattr(store, "POSTED_MATCHES", EVERY_READ_IN_SQL)
    from_sql = [shelf.index.search(q, f, 10) for q in queries for f in cases]
    assert any(from_sql) and from_postings == from_sql  # every hit, score, body share and coverage


def bm25_statements(index: SkillIndex, query: str) -> int:
    """The statements calling bm25() one search of `query` runs."""
    run: list[str] = []
    with index._guard() as conn:
        conn.set_trace_callback(run.append)
    try:
        index.search(query, SearchFilters(), 10)
    finally:
        with index._guard() as conn:
            conn.set_trace_callback(None)
    return sum("bm25(" in sql for sql in run)


def test_a_warm_search_runs_no_ranked_statement(
    generated: tuple[SkillLibrary, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    shelf, queries = generated
    monkeypatch.setattr(store, "READ_AT_ONCE", 10**9)  # every concept read at once
    query = next(q for q in queries if len(concepts(q)) > 2)
    with shelf.index._guard():
        shelf.index._forget_derived()  # as after a write: nothing cached
    assert bm25_statements(shelf.index, query) > 0  # cold: each phrase's matches read once
    assert bm25_statements(shelf.index, query) == 0  # the ANDed and ORed reads and the coverage walk from memory
    assert shelf.index._postings.rows > 0


def test_a_frequent_concept_is_read_whole_only_when_a_search_asks_for_it_again(
    generated: tuple[SkillLibrary, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `READ_AT_ONCE` matches (here 0), the first search asking for a concept runs the ranked statements as
    before and reads no posting; the second reads its postings; the third runs no ranked statement."""
    shelf, queries = generated
    monkeypatch.setattr(store, "READ_AT_ONCE", 0)
    query = next(q for q in queries if len(concepts(q)) > 2)
    with shelf.index._guard():
        shelf.index._forget_derived()
    assert bm25_statements(shelf.index, query) > 0
    assert shelf.index._postings.rows == 0
    assert bm25_statements(shelf.index, query) > 0
    assert shelf.index._postings.rows > 0
    assert bm25_statements(shelf.index, query) == 0


def zebra_library(tmp_path: Path) -> SkillLibrary:
    root = tmp_path / "lib"
    agent_skill(root, "billing", "ledger", "name: ledger\ndescription: Balance the zebra ledger.")
    for n in range(6):
        agent_skill(root, "garden", f"plant-{n}", f"name: plant-{n}\ndescription: Grow tomatoes, bed {n}.")
    shelf = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    shelf.sync()
    assert [s.id for s in shelf.search("zebra ledger", SearchFilters(), 10)] == ["billing/ledger"]  # posted
    # a second skill holding both words (not by its name: an exact name is found apart from the postings)
    agent_skill(root, "zoo", "keeper", "name: keeper\ndescription: Feed the zebra, keep a ledger.")
    return shelf


def test_a_write_drops_the_postings_so_a_new_match_is_found(tmp_path: Path) -> None:
    shelf = zebra_library(tmp_path)
    try:
        shelf.sync()
        hits = [s.id for s in shelf.search("zebra ledger", SearchFilters(), 10)]
    finally:
        shelf.close()
    assert sorted(hits) == ["billing/ledger", "zoo/keeper"]


def test_a_frequent_concept_without_room_keeps_its_reads_in_sql(
    generated: tuple[SkillLibrary, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Postings full: a frequent concept is not read (which would drop others, and at 100,000 skills read them
    again and again); its searches run the statements as before, with the same answers."""
    shelf, queries = generated
    monkeypatch.setattr(store, "READ_AT_ONCE", 0)
    query = next(q for q in queries if len(concepts(q)) > 2)
    with shelf.index._guard():
        shelf.index._forget_derived()
    monkeypatch.setattr(shelf.index._postings, "_max_rows", 0)
    first = shelf.index.search(query, SearchFilters(), 10)
    assert bm25_statements(shelf.index, query) > 0 and bm25_statements(shelf.index, query) > 0
    assert shelf.index._postings.rows == 0
    assert shelf.index.search(query, SearchFilters(), 10) == first


def test_a_search_inside_a_write_rolled_back_leaves_no_posting_of_it(tmp_path: Path) -> None:
    """A search on the writing thread sees the write before it commits; were its matches read into postings, a
    rollback would leave them there, served to every later search."""
    shelf = zebra_library(tmp_path)
    index = shelf.index
    try:
        with pytest.raises(RuntimeError), index._transaction() as conn:
            conn.execute("INSERT INTO skills_fts(rowid, name, description) VALUES (999, 'zebra', 'zebra ledger')")
            index.search("zebra ledger", SearchFilters(), 10)
            raise RuntimeError("rolled back")
        from_postings = ranks(index, ["zebra ledger"], 10)
        with index._guard():
            index._postings.clear()
        assert from_postings == ranks(index, ["zebra ledger"], 10)
        assert 999 not in dict(from_postings[0][0])  # type: ignore[call-overload]
    finally:
        shelf.close()


def test_a_search_inside_a_write_rolled_back_leaves_no_count_of_it(tmp_path: Path) -> None:
    """The document frequencies a search inside a write counted include its uncommitted rows: after a rollback
    they are counted again, so a word only the rolled-back row held is not taken as known."""
    shelf = zebra_library(tmp_path)
    index = shelf.index
    try:
        with pytest.raises(RuntimeError), index._transaction() as conn:
            conn.execute("INSERT INTO skills_fts(rowid, name, description) VALUES (999, 'quokka', 'quokka')")
            assert index._expression_frequency('"quokka"') == 1
            raise RuntimeError("rolled back")
        with index._guard():
            assert index._expression_frequency('"quokka"') == 0
    finally:
        shelf.close()


def test_another_processs_write_drops_the_postings(tmp_path: Path) -> None:
    """A write by another process (another worker on the same file) is seen by the data version, as the
    document frequencies are: no posting read before it is served after it."""
    shelf = zebra_library(tmp_path)
    other = SkillLibrary(LibraryConfig(roots=shelf.config.roots, index_dir=tmp_path / "idx", watch=False))
    try:
        other.sync()
        hits = [s.id for s in shelf.search("zebra ledger", SearchFilters(), 10)]
    finally:
        other.close()
        shelf.close()
    assert sorted(hits) == ["billing/ledger", "zoo/keeper"]


def test_the_postings_hold_at_most_their_bound_of_rows_dropping_the_least_recently_used() -> None:
    reads: list[str] = []

    def read(phrase: str) -> Posting:
        reads.append(phrase)
        return Posting(dict.fromkeys(range(len(phrase)), 1.0), {})

    held = Postings(read, max_rows=6)
    held.get("aaa")
    held.get("bb")
    held.get("aaa")  # used again: "bb" is now the least recently used
    held.get("cc")  # 3 + 2 + 2 rows: over the bound, "bb" goes
    assert held.rows == 5 and len(held) == 2
    held.get("aaa")
    held.get("bb")
    assert reads == ["aaa", "bb", "cc", "bb"]
    held.get("x" * 10)  # one posting over the bound on its own is kept (the search needs it), alone
    assert len(held) == 1 and held.rows == 10


def test_equal_scores_past_the_pool_are_chosen_and_ordered_as_the_sql_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Thirty skills of the same length and words score the same: which five fill a pool of five, and in which
    order, is SQLite's choice (its sorter keeps FTS5's rowid order for ties); the postings must make the same."""
    root = tmp_path / "lib"
    for n in range(30):
        agent_skill(root, "billing", f"tie-{n}", f"name: tie-{n}\ndescription: Balance the ledger totals.")
    for n in range(40):
        agent_skill(root, "garden", f"plant-{n}", f"name: plant-{n}\ndescription: Grow tomatoes, bed {n}.")
    shelf = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    monkeypatch.setattr(store, "CANDIDATES", 5)
    try:
        shelf.sync()
        for query in ("ledger totals", "ledger", "ledger tomatoes"):
            from_postings = ranks(shelf.index, [query], 1)
            monkeypatch.setattr(store, "POSTED_MATCHES", EVERY_READ_IN_SQL)
            from_sql = ranks(shelf.index, [query], 1)
            monkeypatch.setattr(store, "POSTED_MATCHES", 10**9)
            assert from_postings == from_sql
            assert len(from_sql[0][0]) >= 5  # type: ignore[arg-type]
    finally:
        shelf.close()


def test_the_coverage_walk_finds_the_same_rows_whichever_side_it_walks() -> None:
    """`held` walks a concept's matches when they are fewer than the candidates, else the candidates: the rows,
    their terms (summed in phrase order) and where they hold it are the same either way."""
    one = Posting({1: 0.5, 3: 1.25, 5: 2.0}, {1: NAME, 5: DESCRIPTION | HEAD})
    other = Posting({2: 0.75, 3: 0.1, 9: 3.0}, {3: HEAD})
    for group in ([one], [one, other]):
        few, many = {3, 5}, set(range(12))
        for candidates in (few, many):
            expected = {
                rowid: (sum((p.terms[rowid] for p in group if rowid in p.terms), 0.0), _where(group, rowid))
                for rowid in candidates
                if any(rowid in p.terms for p in group)
            }
            walked = {rowid: (term, where) for rowid, term, where in held(group, candidates)}
            assert walked == expected


def _where(group: list[Posting], rowid: int) -> int:
    bits = 0
    for posting in group:
        bits |= posting.where.get(rowid, 0)
    return bits


def test_the_ranked_reads_order_equal_scores_by_rowid_under_and_past_the_pool() -> None:
    """Equal scores are ordered by rowid, as SQLite's sorter keeps FTS5's order, whether or not the pool is full."""
    scores = {7: 1.0, 2: 2.0, 5: 1.0, 3: 1.0, 1: 0.5}
    posting = Posting(scores, {})
    assert ranked([[posting]], False, 10) == [(2, 2.0), (3, 1.0), (5, 1.0), (7, 1.0), (1, 0.5)]
    assert ranked([[posting]], False, 3) == [(2, 2.0), (3, 1.0), (5, 1.0)]
    both = Posting({5: 1.0, 7: 1.0, 3: 0.0625}, {})
    assert ranked([[posting], [both]], True, 10) == [(5, 2.0), (7, 2.0), (3, 1.0625)]


@pytest.mark.parametrize("weight, in_body_only", [(2.5, 0.7), (0.3, store.BODY_CREDIT), (7.0, store.RARE_BODY_CREDIT)])
def test_the_coverage_credits_by_where_follow_the_rule(weight: float, in_body_only: float) -> None:
    """The name counts first, then the description, tags or headings, else the body alone; the lead credit is full
    in the name or description (`store.lead_credit`): the table indexed by `where_bits` says the same for every
    place a skill can hold a concept."""
    table = store._credits(weight, in_body_only)
    for where in range(8):
        if where & NAME:
            expected = (weight * store.NAME_CREDIT, 0.0)
        elif where & HEAD:
            expected = (weight * store.HEAD_CREDIT, 0.0)
        else:
            expected = (weight * in_body_only, weight)
        lead = weight * store.lead_credit(bool(where & (NAME | DESCRIPTION)), in_body_only)
        assert table[where] == (*expected, lead), where


def test_a_pattern_of_where_candidates_hold_the_concepts_gives_their_credits_in_the_concepts_order() -> None:
    """A candidate holding the first concept in its name and the third in its body alone (the second not at all):
    its coverage, body share and lead sum those two concepts' credits, first then third."""
    rarity = [1.5, 0.25, 3.0]
    credits = [store._credits(weight, 0.7) for weight in rarity]
    name, body_only = 1 + NAME, 1 + 0  # 4 bits a concept: where + 1, 0 where not held
    pattern = name | body_only << 8
    whole = sum(rarity)
    share, coverage, coverage_factor, lead_factor = store._pattern_shares(pattern, credits, rarity, whole)
    held = 0.0 + 1.5 * store.NAME_CREDIT + 3.0 * 0.7
    lead = 0.0 + 1.5 * store.lead_credit(True, 0.7) + 3.0 * store.lead_credit(False, 0.7)
    assert share == 3.0 / (0.0 + 1.5 + 3.0)
    assert coverage == held / whole and coverage_factor == store.coverage_factor(held / whole)
    assert lead_factor == store.lead_factor(lead / whole)
    assert store._pattern_shares(0, credits, rarity, whole)[1] == 0.0
